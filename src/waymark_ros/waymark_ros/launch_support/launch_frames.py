# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The robot description a launch publishes: robot_state_publisher with the URDF of the
presets' mounts (waymark.frames), for an OpaqueFunction in robot.launch.py.

robot_state_publisher is not part of this workspace: where it is not installed the launch
says so once and goes on, since the nodes' own defaults (camera_extrinsic,
cloud.map_origin_height_m) need no TF; what needs the frames then is named in the line.
With `base:=go1` and a SLAM preset, the Go1 driver's leg-odometry TF must not parent
base_link too (TF allows one parent per frame, and the description hangs base_link below the
SLAM's body frame): with a driver parameter file that does, the description is rooted at
base_link instead, the SLAM's frames stay apart, and the launch says how to join them.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from ament_index_python.packages import PackageNotFoundError, get_package_prefix
from launch.actions import GroupAction, LogInfo
from launch.launch_context import LaunchContext
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node, PushRosNamespace

from waymark.frames import BASE_LINK, description, joints, read_mounts, root_of, urdf
from waymark_ros.launch_support.base_plan import GO1, GO1_NODE
from waymark_ros.launch_support.launch_plan import NO_ODOMETRY, dds_environment, preset

PACKAGE = 'robot_state_publisher'
READ = (
    'namespace',
    'camera',
    'odometry',
    'base',
    'go1_params_file',
    'ros_domain_id',
    'discovery_range',
)


def preset_files(config: Path, arguments: dict[str, str]) -> list[Path]:
    files = [preset(config / 'sensors', arguments['camera'])]
    if arguments['odometry'] != NO_ODOMETRY:
        files.append(preset(config / 'sensors', arguments['odometry']))
    return files


def driver_child_frame(arguments: dict[str, str]) -> str | None:
    """The child frame of the Go1 driver's odometry TF with `base:=go1`, else None."""
    if arguments['base'].strip() != GO1:
        return None
    sections = yaml.safe_load(Path(arguments['go1_params_file']).expanduser().read_text())
    return sections[f'/**/{GO1_NODE}']['ros__parameters'].get('odom_child_frame_id')


def installed(package: str) -> bool:
    try:
        get_package_prefix(package)
    except PackageNotFoundError:
        return False
    return True


def frame_nodes(context: LaunchContext, config: Path) -> list:
    """robot_state_publisher with the presets' description, in `namespace`."""
    arguments = {name: LaunchConfiguration(name).perform(context) for name in READ}
    files = preset_files(config, arguments)
    tree = description(files)
    notes = []
    if root_of(tree) != BASE_LINK and driver_child_frame(arguments) == BASE_LINK:
        tree = joints(read_mounts(files))
        notes.append(
            LogInfo(
                msg='[frames] the Go1 driver parents base_link (odom_child_frame_id in '
                'go1_params_file), so the SLAM body frame is not joined to the description: '
                'give the driver another odom_child_frame_id to join them (docs/go1.md, '
                'Frames)'
            )
        )
    if not installed(PACKAGE):
        return [
            *notes,
            LogInfo(
                msg=f'[frames] {PACKAGE} is not installed: no robot description on TF '
                '(extrinsic_source: tf and cloud.floor_source: tf need it; apt install '
                f'ros-$ROS_DISTRO-{PACKAGE.replace("_", "-")})'
            ),
        ]
    node = Node(
        package=PACKAGE,
        executable=PACKAGE,
        name=PACKAGE,
        parameters=[{'robot_description': urdf(tree)}],
        output='screen',
        additional_env=dds_environment(arguments),
    )
    return [*notes, GroupAction([PushRosNamespace(arguments['namespace']), node])]
