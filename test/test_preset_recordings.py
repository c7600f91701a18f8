# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The `ros2 bag record` command of each preset in docs/deployment.md records exactly what
the evaluation and the replay read with those presets: capture_node's image and pose
topics (as the evaluation resolves them from --preset), the CameraInfo beside the image,
the depth image where the preset has one, and the navigator's map cloud. A topic renamed
in a preset and not in the docs fails."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from waymark.evaluation.sensors import camera_info_beside, preset_path, read_presets
from waymark.parameters.capture import CaptureParameters
from waymark_ros.ros.launch_plan import NO_ODOMETRY, expected_parameters
from waymark_ros.ros.rviz_layout import PRESET_LAUNCHES, launch_arguments

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / 'docs' / 'deployment.md'
SECTION = '### Recording a bag for each preset'
LABEL = re.compile(r'#\s*camera:=(\S+)\s+odometry:=(\S+)')
# Options of ros2 bag record that take a value (the rest are topics).
VALUE_OPTIONS = {'-s', '--storage', '-o', '--output'}


def recordings() -> dict[tuple[str, str], list[str]]:
    """(camera, odometry) -> the topics of its documented command."""
    text = GUIDE.read_text()
    assert SECTION in text, f'{GUIDE.name} has no "{SECTION}" section'
    body = text.split(SECTION, 1)[1].split('\n## ', 1)[0].split('\n### ', 1)[0]
    found = {}
    for block in re.findall(r'```bash\n(.*?)```', body, flags=re.S):
        label = LABEL.search(block)
        assert label, f'a record command without its "# camera:=... odometry:=..." line:\n{block}'
        command = ' '.join(
            line for line in block.replace('\\\n', ' ').splitlines() if not line.startswith('#')
        )
        words = shlex.split(command)
        assert words[:3] == ['ros2', 'bag', 'record'], command
        topics, options = [], iter(words[3:])
        for word in options:
            if word in VALUE_OPTIONS:
                next(options)
            elif word.startswith('-'):
                pytest.fail(f'unexpected option {word} in {command}')
            else:
                topics.append(word)
        found[label.group(1), label.group(2)] = topics
    return found


def read_by_evaluation(camera: str, odometry: str) -> set[str]:
    """The image and pose topics `evaluate --preset camera [--preset odometry]` reads."""
    names = [camera] if odometry == NO_ODOMETRY else [camera, odometry]
    parameters = read_presets([preset_path(n, ROOT / 'config' / 'sensors') for n in names])
    defaults = CaptureParameters()
    return {
        parameters.get('image_topic', defaults.image_topic),
        parameters.get('pose_topic', defaults.pose_topic),
    }


def test_the_guide_records_each_preset_as_the_launch_takes_it():
    assert set(recordings()) == set(PRESET_LAUNCHES.values())


@pytest.mark.parametrize(
    ('camera', 'odometry'), sorted(PRESET_LAUNCHES.values()), ids=lambda name: name
)
def test_a_recording_holds_what_evaluation_and_replay_read(camera, odometry):
    topics = recordings()[camera, odometry]
    assert len(topics) == len(set(topics)), f'a topic recorded twice: {topics}'
    config = ROOT / 'config'
    nodes = expected_parameters(config, launch_arguments(config, camera, odometry), False)
    capture, navigator = nodes['capture_node'], nodes['navigator_node']
    image, pose = capture['image_topic'], capture['pose_topic']
    assert {image, pose} == read_by_evaluation(camera, odometry)  # launch and evaluation agree
    assert navigator['odom_topic'] == pose  # the navigator drives by the poses recorded
    map_topic = navigator['cloud_topic'] if navigator['map_source'] != 'grid' else '/map'
    infos = [t for t in topics if t.endswith('/camera_info')]
    assert len(infos) == 1 and camera_info_beside(image, infos[0]), topics
    assert capture.get('camera_info_topic', 'auto') in ('auto', infos[0])
    depth = capture.get('depth_topic', '')
    assert set(topics) == {image, pose, map_topic, infos[0]} | ({depth} if depth else set())


def test_the_camera_info_beside_an_image_is_the_one_in_its_namespace():
    image = '/zed/zed_node/rgb/image_rect_color/compressed'
    assert camera_info_beside(image, '/zed/zed_node/rgb/camera_info')
    assert not camera_info_beside(image, '/zed/zed_node/depth/camera_info')
