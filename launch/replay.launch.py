# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A bag recorded on the robot, replayed through the stack on simulated time.

    ros2 launch waymark_ros replay.launch.py bag:=$HOME/bags/office_tour rate:=2.0

The nodes take the same arguments as robot.launch.py (presets, memory URI, LLM server),
use the bag's clock, and write to replay_memory, not the robot's memory (config/replay.yaml).
`ros2 bag play` starts after `play_delay_s`, once the nodes subscribe. For scoring answers
against a question file, use the evaluation tool instead (README, "Offline evaluation").
"""

from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, OpaqueFunction, TimerAction
from launch.substitutions import LaunchConfiguration

from waymark_ros.launching import stack_arguments, stack_nodes

SHARE = Path(__file__).resolve().parent.parent  # the source tree or share/waymark_ros
CONFIG = SHARE / 'config'


def generate_launch_description() -> LaunchDescription:
    play = ExecuteProcess(
        cmd=[
            'ros2',
            'bag',
            'play',
            LaunchConfiguration('bag'),
            '--clock',
            '--rate',
            LaunchConfiguration('rate'),
        ],
        output='screen',
    )
    return LaunchDescription(
        [
            DeclareLaunchArgument('bag', description='rosbag2 folder to play (required)'),
            DeclareLaunchArgument('rate', default_value='1.0', description='playback speed'),
            DeclareLaunchArgument(
                'play_delay_s', default_value='5.0', description='wait for the nodes this long'
            ),
            *stack_arguments(CONFIG / 'replay.yaml'),
            OpaqueFunction(
                function=stack_nodes,
                kwargs={
                    'config': CONFIG,
                    'rviz_config': SHARE / 'rviz' / 'waymark.rviz',
                    'use_sim_time': True,
                },
            ),
            TimerAction(period=LaunchConfiguration('play_delay_s'), actions=[play]),
        ]
    )
