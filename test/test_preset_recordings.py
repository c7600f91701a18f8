# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What `python -m waymark_ros.tools.record_topics` records for each preset pair: every
topic the evaluation and the replay read with those presets (capture_node's image and pose
as the evaluation resolves them from --preset, the CameraInfo beside the image, the depth
image where the preset has one, the navigator's pose and map), the frames, the raw lidar
where the robot carries one, and the base's topics. docs/deployment.md records with the
tool for every preset pair the launch takes, so a topic renamed in a preset follows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from waymark.evaluation.sensors import camera_info_beside, preset_path, read_presets
from waymark.parameters.capture import CaptureParameters
from waymark_ros.launch_support.launch_plan import NO_ODOMETRY, expected_parameters
from waymark_ros.launch_support.rviz_layout import PRESET_LAUNCHES, launch_arguments
from waymark_ros.tools import record_topics as tool

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / 'config'
GUIDE = ROOT / 'docs' / 'deployment.md'
SECTION = '### Recording a bag for each preset'
COMMAND = re.compile(r'record_topics --camera (\w+) --odometry (\w+)')
COMBINATIONS = sorted(PRESET_LAUNCHES.values())


def read_by_evaluation(camera: str, odometry: str) -> set[str]:
    """The image and pose topics `evaluate --preset camera [--preset odometry]` reads."""
    names = [camera] if odometry == NO_ODOMETRY else [camera, odometry]
    parameters = read_presets([preset_path(n, CONFIG / 'sensors') for n in names])
    defaults = CaptureParameters()
    return {
        parameters.get('image_topic', defaults.image_topic),
        parameters.get('pose_topic', defaults.pose_topic),
    }


@pytest.mark.parametrize(('camera', 'odometry'), COMBINATIONS, ids=str)
def test_a_recording_holds_what_evaluation_and_replay_read(camera, odometry):
    topics = tool.record_topics(camera, odometry, config=CONFIG)
    assert len(topics) == len(set(topics)) and all(t.startswith('/') for t in topics)
    nodes = expected_parameters(CONFIG, launch_arguments(CONFIG, camera, odometry), False)
    capture, navigator = nodes['capture_node'], nodes['navigator_node']
    image, pose = capture['image_topic'], capture['pose_topic']
    assert {image, pose} == read_by_evaluation(camera, odometry)  # launch and evaluation agree
    assert navigator['odom_topic'] == pose  # the navigator drives by the poses recorded
    map_topic = navigator['cloud_topic'] if navigator['map_source'] != 'grid' else '/map'
    infos = [t for t in topics if t.endswith('/camera_info')]
    assert len(infos) == 1 and camera_info_beside(image, infos[0]), topics
    depth = capture.get('depth_topic', '')
    read = {image, pose, map_topic, infos[0]} | ({depth} if depth else set())
    assert read <= set(topics)
    assert {'/tf', '/tf_static', '/go1/odom', '/go1/imu', '/go1/bms_state'} <= set(topics)
    assert {'/cmd_vel', '/e_stop', '/safety/state'} <= set(topics)
    lidar = {'/livox/lidar', '/livox/imu'} if odometry != NO_ODOMETRY else set()
    base = {f'/{name}' for name in tool.BASE}
    assert set(topics) == read | lidar | set(tool.FRAMES) | base


def test_the_namespace_moves_the_base_topics_only():
    topics = tool.record_topics('zed2i', 'fast_lio_mid360', namespace='go1_a', config=CONFIG)
    assert '/go1_a/cmd_vel' in topics and '/go1_a/go1/odom' in topics
    assert '/cmd_vel' not in topics and '/Odometry' in topics and '/tf' in topics


def test_the_command_line_prints_the_topics_or_the_whole_command_and_refuses_bad_presets():
    run = [sys.executable, '-m', 'waymark_ros.tools.record_topics', '--camera', 'zed2i']
    done = subprocess.run([*run, '--odometry', 'none'], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == tool.record_topics('zed2i', 'none', config=CONFIG)
    done = subprocess.run([*run, '--command', 'go1_run'], capture_output=True, text=True)
    words = done.stdout.split()
    assert words[:7] == ['ros2', 'bag', 'record', '-s', 'mcap', '-o', 'go1_run']
    assert words[7:] == tool.record_topics('zed2i', 'fast_lio_mid360', config=CONFIG)
    done = subprocess.run([*run[:-1], 'zed3'], capture_output=True, text=True)
    assert done.returncode == 2 and "no preset 'zed3'" in done.stderr and not done.stdout


def test_the_guide_records_each_preset_pair_with_the_tool():
    text = GUIDE.read_text()
    assert SECTION in text, f'{GUIDE.name} has no "{SECTION}" section'
    body = text.split(SECTION, 1)[1].split('\n## ', 1)[0].split('\n### ', 1)[0]
    assert set(COMMAND.findall(body)) >= set(COMBINATIONS)
    assert 'ros2 bag record' in body and '/zed/zed_node' not in body  # no list by hand


def test_the_camera_info_beside_an_image_is_the_one_in_its_namespace():
    image = '/zed/zed_node/rgb/color/rect/image/compressed'
    assert camera_info_beside(image, '/zed/zed_node/rgb/color/rect/camera_info')
    assert not camera_info_beside(image, '/zed/zed_node/depth/camera_info')
