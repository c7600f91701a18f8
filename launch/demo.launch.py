# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The synthetic demo end to end, as `make demo` runs it, optionally watched in RViz.

    ros2 launch waymark_ros demo.launch.py seed:=3 rviz:=true

The demo renders a building, records a tour as a rosbag2, starts the four nodes with
config/demo.yaml, replays the tour, asks a question per sign (or about the first
`questions` signs), and drives sim_base_node to each answer; its report goes to `out`.
"""

from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.substitutions import ExecutableInPackage

SHARE = Path(__file__).resolve().parent.parent  # the source tree or share/waymark_ros
CONFIG = SHARE / 'config'


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            DeclareLaunchArgument('seed', default_value='0', description='world seed'),
            DeclareLaunchArgument(
                'rate', default_value='0', description='replay speed; 0: as fast as taken'
            ),
            DeclareLaunchArgument('out', default_value='demo_output', description='report folder'),
            DeclareLaunchArgument(
                'questions',
                default_value='0',
                description='ask about the first N signs; 0: every sign',
            ),
            DeclareLaunchArgument(
                'rviz', default_value='false', choices=['true', 'false'], description='start RViz'
            ),
            # A plain process: the demo starts the nodes itself and takes no --ros-args,
            # which launch_ros's Node always appends.
            ExecuteProcess(
                cmd=[
                    ExecutableInPackage(executable='demo', package='waymark_ros'),
                    '--seed',
                    LaunchConfiguration('seed'),
                    '--rate',
                    LaunchConfiguration('rate'),
                    '--out',
                    LaunchConfiguration('out'),
                    '--params',
                    str(CONFIG / 'demo.yaml'),
                    '--questions',
                    LaunchConfiguration('questions'),
                ],
                output='screen',
            ),
            Node(
                package='rviz2',
                executable='rviz2',
                arguments=['-d', str(SHARE / 'rviz' / 'waymark.rviz')],
                condition=IfCondition(LaunchConfiguration('rviz')),
            ),
        ]
    )
