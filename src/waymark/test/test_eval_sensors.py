# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Sensor presets read for an evaluation: capture_node's section, layered as the launch
layers them, into the CaptureConfig capture_node makes; the map frame's and the depth
topic's origin."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from waymark.evaluation.sensors import (
    DEFAULT_MAP_FRAME,
    DEPTH_TYPE,
    Intrinsics,
    SensorError,
    capture_config,
    choose_depth_topic,
    choose_map_frame,
    preset_path,
    read_presets,
)
from waymark.geometry import Pose
from waymark.memory.entries import CameraModel

PRESETS = Path(__file__).resolve().parents[3] / 'config' / 'sensors'


def test_a_later_preset_wins_as_on_the_robot():
    zed = read_presets([preset_path('zed2i', PRESETS)])
    assert (zed['map_frame'], zed['pose_type']) == ('map', 'pose_with_covariance')
    layered = read_presets([preset_path(n, PRESETS) for n in ('zed2i', 'fast_lio_mid360')])
    assert layered['image_topic'] == zed['image_topic']  # FAST-LIO names no camera
    assert (layered['pose_topic'], layered['map_frame']) == ('/Odometry', 'camera_init')
    assert layered['tracking.status_topic'] == ''  # nested keys flattened as ROS does
    # Other nodes' sections do not leak in (navigator_node's odom_topic, cloud_topic).
    assert 'cloud_topic' not in layered and 'odom_topic' not in layered


def test_sections_for_all_nodes_apply_and_other_nodes_do_not(tmp_path):
    path = tmp_path / 'mine.yaml'
    path.write_text(
        '/**:\n  ros__parameters:\n    max_pose_gap_s: 0.3\n'
        'capture_node:\n  ros__parameters:\n    keyframe:\n      min_distance_m: 2.0\n'
        '/**/memory_node:\n  ros__parameters:\n    map_frame: other\n'
    )
    parameters = read_presets([preset_path(str(path), PRESETS)])
    assert parameters == {'max_pose_gap_s': 0.3, 'keyframe.min_distance_m': 2.0}
    config = capture_config(parameters, 'eval', 'odom', Pose())
    assert config.max_pose_gap_s == 0.3 and config.policy.min_distance_m == 2.0
    assert config.map_frame == 'odom' and config.session == 'eval'


def test_capture_config_takes_the_presets_limits():
    parameters = read_presets([preset_path('point_lio_mid360', PRESETS)])
    config = capture_config(parameters, 'eval', 'camera_init', Pose())
    assert config.pose_buffer_size == 50000
    assert (config.max_position_variance, config.max_speed_mps) == (1.0, 5.0)
    with pytest.raises(SensorError, match='max_pose_gap_s'):
        capture_config({'max_pose_gap_s': -1.0}, 'eval', 'map', Pose())


def test_bad_presets_are_one_line_errors(tmp_path):
    with pytest.raises(SensorError, match=r"no sensor preset 'zed3' .*available: .*zed2i"):
        preset_path('zed3', PRESETS)
    broken = tmp_path / 'broken.yaml'
    broken.write_text('capture_node: [\n')
    with pytest.raises(SensorError, match=r'broken\.yaml'):
        read_presets([broken])
    listed = tmp_path / 'list.yaml'
    listed.write_text('- 1\n')
    with pytest.raises(SensorError, match='not a ROS 2 parameter file'):
        read_presets([listed])


def test_the_map_frame_comes_from_the_flag_the_preset_or_the_poses():
    frames = Counter({'camera_init': 40})
    assert choose_map_frame('odom', 'map', frames, '/Odometry') == ('odom', 'flag --map-frame')
    assert choose_map_frame(None, 'map', frames, '/Odometry') == ('map', 'preset')
    frame, source = choose_map_frame(None, None, frames, '/Odometry')
    assert frame == 'camera_init' and source.startswith('bag')
    assert choose_map_frame(None, None, Counter({'': 3}), '/p')[0] == DEFAULT_MAP_FRAME
    with pytest.raises(
        SensorError, match=r"several frames: 'a' \(2\), 'b' \(1\); pass --map-frame"
    ):
        choose_map_frame(None, None, Counter({'a': 2, 'b': 1}), '/p')


def test_camera_presets_state_their_field_of_view_and_pose_presets_none():
    assert read_presets([preset_path('zed2i', PRESETS)])['camera_hfov_deg'] == 110.0
    assert read_presets([preset_path('realsense_d455', PRESETS)])['camera_hfov_deg'] == 90.0
    assert 'camera_hfov_deg' not in read_presets([preset_path('fast_lio_mid360', PRESETS)])


def test_the_camera_model_uses_camera_info_scaled_to_the_image_else_the_field_of_view():
    info = Intrinsics('camera_info /cam/camera_info', 0.0, 1280, 720, 700.0, 710.0, 650.0, 350.0)

    assert info.camera_model(1280, 720) == CameraModel(1280, 720, 700.0, 710.0, 650.0, 350.0)
    assert info.camera_model(640, 360) == CameraModel(640, 360, 350.0, 355.0, 325.0, 175.0)
    by_fov = Intrinsics('preset zed2i', 90.0).camera_model(640, 480)
    assert (by_fov.fx, by_fov.cx, by_fov.cy) == pytest.approx((320.0, 320.0, 240.0))


def test_the_depth_topic_comes_from_the_flag_the_preset_or_the_ground_truth():
    zed = '/zed/zed_node/depth/depth_registered'
    bag = {zed: DEPTH_TYPE, '/sim/depth': DEPTH_TYPE, '/img': 'sensor_msgs/msg/CompressedImage'}
    assert choose_depth_topic(None, zed, '/sim/depth', bag) == (zed, 'preset')
    assert choose_depth_topic(None, '', '/sim/depth', bag) == (
        '/sim/depth',
        "the bag's ground truth",
    )
    assert choose_depth_topic('/sim/depth', zed, None, bag) == ('/sim/depth', 'flag --depth-topic')
    assert choose_depth_topic('', zed, None, bag) == ('', 'flag --no-depth')
    assert choose_depth_topic(None, None, None, bag)[0] == ''
    # A preset's topic the recording lacks: no depth, and the reason is kept.
    topic, source = choose_depth_topic(None, zed, None, {'/img': bag['/img']})
    assert topic == '' and zed in source and 'not in the bag' in source
    # A flag's topic must be there, as a depth image.
    for wrong in ('/nowhere', '/img'):
        with pytest.raises(SensorError, match=f'depth topic {wrong} is not in the bag'):
            choose_depth_topic(wrong, zed, None, bag)
