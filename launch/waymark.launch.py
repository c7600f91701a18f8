# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Launch the four waymark nodes with a parameter file (needs a ROS 2 install with launch_ros).

    ros2 launch launch/waymark.launch.py                             # on the robot
    ros2 launch launch/waymark.launch.py params:=config/replay.yaml  # bag replay

Without launch_ros (the PyPI wheels), `make demo` and the tests start the same executables
with waymark_ros.processes.
"""

from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

CONFIG = Path(__file__).resolve().parent.parent / 'config'
NODES = ('memory_node', 'capture_node', 'reasoner_node', 'navigator_node')


def generate_launch_description() -> LaunchDescription:
    params = LaunchConfiguration('params')
    memory_uri = LaunchConfiguration('memory_uri')
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                'params', default_value=str(CONFIG / 'waymark.yaml'), description='parameter file'
            ),
            DeclareLaunchArgument(
                'memory_uri',
                default_value='',
                description='Milvus server URI; empty keeps the embedded Milvus Lite file',
            ),
            *[
                Node(
                    package='waymark_ros',
                    executable=name,
                    name=name,
                    parameters=[params, {'uri': memory_uri}] if name == 'memory_node' else [params],
                    output='screen',
                    emulate_tty=True,
                )
                for name in NODES
            ],
        ]
    )
