# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The robot's frames from one description: the Go1's base, the lidar and the camera, with
the mounts the sensor presets give, as a URDF for robot_state_publisher.

The URDF is generated here in Python only, not from a .urdf.xacro: xacro is not installable
where the tests run, and a xacro file beside this generator would be a second copy of the
same numbers that no test could check. The mounts live in the presets
(`/**/robot_state_publisher: ros__parameters: mount: {lidar, slam_body, camera}`, each a
`frame`, `xyz` in metres and `rpy` in radians, parent frame first), so a preset's topics and
its sensor's place on the robot are edited in one file.

The tree:

- `base_link`: the Go1's trunk, as the driver (unitree_ros) names it, with `base_footprint`
  below it on the floor (the trunk's standing height, `base_height_m`).
- the lidar (`mount.lidar`, in `base_link`): `livox_frame`, where livox_ros_driver2 stamps
  the MID-360's points (its launch files' `frame_id`); and the SLAM's body frame
  (`mount.slam_body`, in the lidar frame): FAST-LIO's and Point-LIO's pose is of the
  MID-360's built-in IMU (`body`, `aft_mapped`), which sits at the inverse of FAST-LIO's
  `extrinsic_T` (the lidar in the IMU frame, config/mid360.yaml) from the lidar origin.
- the camera's mount frame (`mount.camera`, in `base_link`): `zed_camera_link` (the ZED
  wrapper's root, urdf/zed_macro.urdf.xacro) or `camera_link` (realsense-ros's root,
  src/tfs.cpp). The camera drivers publish the frames below it themselves (the ZED's from
  its xacro, the RealSense's from its factory calibration), so the description stops at
  the mount and adds nothing they publish; CAMERA_FRAMES lists what they add, for checks.

With a SLAM preset the URDF is rooted at the SLAM's body frame, so that one tree holds
`camera_init -> body` (the SLAM's TF) and everything on the robot below it: TF allows one
parent per frame, and the SLAM already parents `body`. Then nothing else may parent
`base_link`: the Go1 driver's leg-odometry TF must use another child frame (check_tree).

Optical frames (REP 103): a camera's `*_optical_frame` (ZED: `*_frame_optical`) has z
forward, x right, y down; its body frame x forward, y left, z up. Images, CameraInfo and the
RealSense's point cloud are stamped in the optical frame; the ZED's point cloud in its left
camera's body frame.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from scipy.spatial.transform import Rotation

SECTION = '/**/robot_state_publisher'
BASE_LINK = 'base_link'
BASE_FOOTPRINT = 'base_footprint'
# The Go1's trunk above the floor when it stands (an estimate: measure yours).
GO1_STANDING_HEIGHT_M = 0.30
MOUNTS = ('lidar', 'slam_body', 'camera')

# Frames a camera driver publishes below its mount frame, with their pose in it where the
# driver fixes it (None: from the device's own calibration). ZED 2i: zed-ros2-wrapper's
# urdf/zed_macro.urdf.xacro (camera_center at height/2 = 0.015 m; the left camera at
# optical_offset_x = -0.01 m, baseline/2 = 0.06 m to the left). RealSense: realsense-ros
# src/tfs.cpp (camera_link is the depth frame; the optical frames rotate it).
CAMERA_FRAMES: dict[str, dict[str, tuple[float, ...] | None]] = {
    'zed_camera_link': {
        'zed_camera_center': (0.0, 0.0, 0.015),
        'zed_left_camera_frame': (-0.01, 0.06, 0.015),
        'zed_left_camera_frame_optical': (-0.01, 0.06, 0.015),
    },
    'camera_link': {
        'camera_depth_frame': (0.0, 0.0, 0.0),
        'camera_depth_optical_frame': (0.0, 0.0, 0.0),
        'camera_color_frame': None,
        'camera_color_optical_frame': None,
    },
}


class DescriptionError(ValueError):
    """A mount block that cannot describe the robot (missing, malformed, a frame twice)."""


@dataclass(frozen=True)
class Mount:
    """A fixed joint: `frame` at `xyz` (m), turned by `rpy` (rad), in `parent`."""

    parent: str
    frame: str
    xyz: tuple[float, float, float]
    rpy: tuple[float, float, float]

    def matrix(self) -> np.ndarray:
        m = np.eye(4)
        m[:3, :3] = Rotation.from_euler('xyz', self.rpy).as_matrix()
        m[:3, 3] = self.xyz
        return m


def read_mounts(paths: Sequence[Path]) -> dict[str, dict]:
    """The `mount` blocks of preset files, later files winning per sensor."""
    mounts: dict[str, dict] = {}
    for path in paths:
        sections = yaml.safe_load(Path(path).read_text()) or {}
        block = (sections.get(SECTION) or {}).get('ros__parameters', {}).get('mount', {})
        unknown = set(block) - set(MOUNTS)
        if unknown:
            raise DescriptionError(f'{path}: unknown mount {sorted(unknown)}; known: {MOUNTS}')
        mounts |= block
    return mounts


def _mount(name: str, block: Mapping, parent: str) -> Mount:
    try:
        frame, xyz, rpy = str(block['frame']), block['xyz'], block['rpy']
    except (KeyError, TypeError):
        raise DescriptionError(f'mount.{name} needs frame, xyz and rpy, got {block!r}') from None
    values = [xyz, rpy]
    if not all(isinstance(v, list) and len(v) == 3 for v in values) or not all(
        isinstance(x, (int, float)) and math.isfinite(x) for v in values for x in v
    ):
        raise DescriptionError(f'mount.{name}: xyz and rpy are three finite numbers each')
    if not frame or frame in (BASE_LINK, BASE_FOOTPRINT):
        raise DescriptionError(f'mount.{name}: frame {frame!r} is not a sensor frame')
    return Mount(parent, frame, tuple(map(float, xyz)), tuple(map(float, rpy)))


def joints(
    mounts: Mapping[str, Mapping], base_height_m: float = GO1_STANDING_HEIGHT_M
) -> list[Mount]:
    """The fixed joints of the robot as built: every mount in its physical parent."""
    if not 0.0 < base_height_m < 2.0:
        raise DescriptionError(f'base_height_m must be in (0, 2) m, got {base_height_m}')
    found = [Mount(BASE_LINK, BASE_FOOTPRINT, (0.0, 0.0, -base_height_m), (0.0, 0.0, 0.0))]
    if 'lidar' in mounts:
        found.append(_mount('lidar', mounts['lidar'], BASE_LINK))
    if 'slam_body' in mounts:
        if 'lidar' not in mounts:
            raise DescriptionError('mount.slam_body is in the lidar frame: mount.lidar is missing')
        found.append(_mount('slam_body', mounts['slam_body'], found[-1].frame))
    if 'camera' in mounts:
        found.append(_mount('camera', mounts['camera'], BASE_LINK))
    frames = [BASE_LINK] + [j.frame for j in found]
    if len(frames) != len(set(frames)):
        raise DescriptionError(f'a frame named twice in the mounts: {frames}')
    return found


def rooted(tree: list[Mount], root: str) -> list[Mount]:
    """The same rigid tree with `root` as its root: the joints on the way up are inverted."""
    parents = {j.frame: j for j in tree}
    if root != BASE_LINK and root not in parents:
        raise DescriptionError(f'no frame {root!r} in the description')
    flipped: dict[str, Mount] = {}
    frame = root
    while frame in parents:  # walk up to base_link, turning each joint round
        joint = parents[frame]
        inverse = np.linalg.inv(joint.matrix())
        xyz = tuple(float(v) for v in inverse[:3, 3])
        rpy = tuple(float(v) for v in Rotation.from_matrix(inverse[:3, :3]).as_euler('xyz'))
        flipped[joint.frame] = Mount(joint.frame, joint.parent, xyz, rpy)
        frame = joint.parent
    return [flipped.get(j.frame, j) for j in tree]


def description(paths: Sequence[Path], base_height_m: float = GO1_STANDING_HEIGHT_M) -> list:
    """The joints of the presets' robot, rooted at the SLAM's body frame when a preset has
    one (its TF parents that frame), else at base_link."""
    mounts = read_mounts(paths)
    tree = joints(mounts, base_height_m)
    if 'slam_body' in mounts:
        return rooted(tree, str(mounts['slam_body']['frame']))
    return tree


def root_of(tree: Sequence[Mount]) -> str:
    children = {j.frame for j in tree}
    roots = {j.parent for j in tree} - children
    if len(roots) != 1:
        raise DescriptionError(f'the description has {len(roots)} roots: {sorted(roots)}')
    return roots.pop()


def frames(tree: Sequence[Mount]) -> set[str]:
    return {j.frame for j in tree} | {j.parent for j in tree}


def transform(tree: Sequence[Mount], parent: str, child: str) -> np.ndarray:
    """The 4x4 pose of `child` in `parent`, as TF would compose it through the tree."""

    def from_root(frame: str) -> np.ndarray:
        by_child = {j.frame: j for j in tree}
        m = np.eye(4)
        while frame in by_child:
            joint = by_child[frame]
            m = joint.matrix() @ m
            frame = joint.parent
        return m

    known = frames(tree)
    for name in (parent, child):
        if name not in known:
            raise DescriptionError(f'no frame {name!r} in the description')
    return np.linalg.inv(from_root(parent)) @ from_root(child)


def urdf(tree: Sequence[Mount], name: str = 'go1_waymark') -> str:
    """The URDF of the tree: a link per frame, a fixed joint per mount."""
    robot = ET.Element('robot', name=name)
    root = root_of(tree)
    for link in [root] + [j.frame for j in tree]:
        ET.SubElement(robot, 'link', name=link)
    for j in tree:
        joint = ET.SubElement(robot, 'joint', name=f'{j.parent}_to_{j.frame}', type='fixed')
        ET.SubElement(joint, 'parent', link=j.parent)
        ET.SubElement(joint, 'child', link=j.frame)
        ET.SubElement(
            joint,
            'origin',
            xyz=' '.join(f'{v:.6g}' for v in j.xyz),
            rpy=' '.join(f'{v:.6g}' for v in j.rpy),
        )
    ET.indent(robot)
    return ET.tostring(robot, encoding='unicode')


def published_frames(tree: Sequence[Mount]) -> set[str]:
    """The description's frames and those the mounted camera's driver adds below it."""
    found = frames(tree)
    for mount, below in CAMERA_FRAMES.items():
        if mount in found:
            found |= set(below)
    return found
