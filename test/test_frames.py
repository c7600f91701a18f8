# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The robot description (waymark.frames) from the presets' mounts: one tree per launch's
presets, every frame a preset names present in it (or in what the camera's driver adds),
and the presets' parameter paths (camera_extrinsic, the floor height, the local stop's
height) equal to what TF gives from the same description."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from waymark import frames
from waymark_ros.launch_support.launch_plan import NO_ODOMETRY, expected_parameters
from waymark_ros.launch_support.rviz_layout import PRESET_LAUNCHES, launch_arguments

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / 'config'
SENSORS = CONFIG / 'sensors'
COMBINATIONS = sorted(PRESET_LAUNCHES.values())


def files(camera: str, odometry: str) -> list[Path]:
    names = [camera] if odometry == NO_ODOMETRY else [camera, odometry]
    return [SENSORS / f'{name}.yaml' for name in names]


def nodes(camera: str, odometry: str) -> dict:
    return expected_parameters(CONFIG, launch_arguments(CONFIG, camera, odometry), False)


def pose_of(tree, parent: str, child: str) -> np.ndarray:
    """x y z qx qy qz qw of child in parent, through the description and the camera's own
    fixed frames (CAMERA_FRAMES)."""
    mount = next((m for m, below in frames.CAMERA_FRAMES.items() if child in below), None)
    offset = np.eye(4)
    if mount is not None:
        offset[:3, 3] = frames.CAMERA_FRAMES[mount][child]
        child = mount
    m = frames.transform(tree, parent, child) @ offset
    return np.concatenate([m[:3, 3], Rotation.from_matrix(m[:3, :3]).as_quat()])


@pytest.mark.parametrize(('camera', 'odometry'), COMBINATIONS, ids=str)
def test_each_launch_has_one_tree_with_the_frames_its_presets_name(camera, odometry):
    tree = frames.description(files(camera, odometry))
    params = nodes(camera, odometry)
    capture, safety = params['capture_node'], params['safety_node']
    known = frames.published_frames(tree)
    slam = odometry != NO_ODOMETRY
    # With a SLAM the tree hangs below its body frame (the SLAM's TF parents that frame).
    assert frames.root_of(tree) == (capture['base_frame'] if slam else frames.BASE_LINK)
    assert {capture['base_frame'], capture['camera_frame'], frames.BASE_FOOTPRINT} <= known
    assert 'livox_frame' in known if slam else 'livox_frame' not in known
    if safety.get('local_stop.frame_id'):
        assert safety['local_stop.frame_id'] in known
    urdf = ET.fromstring(frames.urdf(tree))
    links = {link.get('name') for link in urdf.iter('link')}
    assert links == frames.frames(tree) and len(urdf.findall('joint')) == len(links) - 1


@pytest.mark.parametrize(('camera', 'odometry'), COMBINATIONS, ids=str)
def test_the_presets_parameter_paths_are_what_tf_gives(camera, odometry):
    tree = frames.description(files(camera, odometry))
    params = nodes(camera, odometry)
    capture, navigator = params['capture_node'], params['navigator_node']
    safety = params['safety_node']
    extrinsic = pose_of(tree, capture['base_frame'], capture['camera_frame'])
    np.testing.assert_allclose(extrinsic, capture['camera_extrinsic'], atol=1e-3)
    if navigator.get('cloud.floor_source') == 'parameter' and odometry != NO_ODOMETRY:
        floor = frames.transform(tree, frames.BASE_FOOTPRINT, capture['base_frame'])
        assert navigator['cloud.map_origin_height_m'] == pytest.approx(floor[2, 3], abs=1e-3)
    if odometry == NO_ODOMETRY and camera == 'zed2i':  # the map starts at zed_camera_link
        floor = frames.transform(tree, frames.BASE_FOOTPRINT, 'zed_camera_link')
        assert navigator['cloud.map_origin_height_m'] == pytest.approx(floor[2, 3], abs=1e-3)
    if safety.get('local_stop.frame_id'):
        height = pose_of(tree, frames.BASE_FOOTPRINT, safety['local_stop.frame_id'])[2]
        assert safety['local_stop.body_height_m'] == pytest.approx(height, abs=1e-3)


def test_rooting_at_another_frame_keeps_every_transform():
    mounts = {
        'lidar': {'frame': 'lidar', 'xyz': [0.1, 0.2, 0.3], 'rpy': [0.1, -0.2, 0.3]},
        'slam_body': {'frame': 'imu', 'xyz': [0.01, 0.02, -0.04], 'rpy': [0.0, 0.0, 1.0]},
        'camera': {'frame': 'cam', 'xyz': [0.3, 0.0, 0.1], 'rpy': [0.0, 0.2, 0.0]},
    }
    built = frames.joints(mounts)
    turned = frames.rooted(built, 'imu')
    assert frames.root_of(turned) == 'imu' and frames.root_of(built) == frames.BASE_LINK
    for parent, child in [('imu', 'cam'), ('base_footprint', 'imu'), ('cam', 'lidar')]:
        np.testing.assert_allclose(
            frames.transform(turned, parent, child),
            frames.transform(built, parent, child),
            atol=1e-9,
        )


@pytest.mark.parametrize(
    ('mounts', 'message'),
    [
        ({'camera': {'frame': 'cam', 'xyz': [0, 0]}}, 'needs frame, xyz and rpy'),
        ({'camera': {'frame': 'cam', 'xyz': [0, 0, 'x'], 'rpy': [0, 0, 0]}}, 'three finite'),
        ({'camera': {'frame': 'base_link', 'xyz': [0, 0, 0], 'rpy': [0, 0, 0]}}, 'not a sensor'),
        ({'slam_body': {'frame': 'body', 'xyz': [0, 0, 0], 'rpy': [0, 0, 0]}}, 'mount.lidar'),
        (
            {
                'lidar': {'frame': 'x', 'xyz': [0, 0, 0], 'rpy': [0, 0, 0]},
                'camera': {'frame': 'x', 'xyz': [0, 0, 0], 'rpy': [0, 0, 0]},
            },
            'named twice',
        ),
    ],
)
def test_a_bad_mount_is_refused_with_the_reason(mounts, message):
    with pytest.raises(frames.DescriptionError, match=message):
        frames.joints(mounts)


def test_an_unknown_mount_or_frame_is_refused(tmp_path):
    preset = tmp_path / 'p.yaml'
    preset.write_text('/**/robot_state_publisher:\n  ros__parameters:\n    mount:\n      gps: {}\n')
    with pytest.raises(frames.DescriptionError, match="unknown mount \\['gps'\\]"):
        frames.read_mounts([preset])
    with pytest.raises(frames.DescriptionError, match="no frame 'nowhere'"):
        frames.transform(frames.joints({}), 'base_link', 'nowhere')
