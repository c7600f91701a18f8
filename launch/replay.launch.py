# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A bag recorded on the robot, replayed through the stack on simulated time.

    ros2 launch waymark_ros replay.launch.py bag:=$HOME/bags/office_tour rate:=2.0

The nodes take the same arguments as robot.launch.py (presets, memory URI, LLM server),
use the bag's clock (`use_sim_time`, true here: the player publishes /clock), and write
to replay_memory, not the robot's memory (config/replay.yaml).
waymark's `replay` plays the bag (no ros2 CLI needed): it waits up to `wait_subscribers_s`
for memory_node to open its memory and the nodes to subscribe, publishes /clock, and
waits for every message to be acknowledged; with `exit_when_done:=true` the launch ends
when the bag does. For scoring answers against a question file, use the evaluation tool
instead (README, "Offline evaluation").
"""

from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, RegisterEventHandler, Shutdown
from launch.conditions import IfCondition
from launch.event_handlers import OnProcessExit
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from waymark_ros.launch_support.launching import stack_arguments, stack_nodes

SHARE = Path(__file__).resolve().parent.parent  # the source tree or share/waymark_ros
CONFIG = SHARE / 'config'


def generate_launch_description() -> LaunchDescription:
    # In the stack's namespace, so that it waits for this memory_node to be open before
    # playing; the bag's own topics are absolute and stay as recorded.
    play = Node(
        package='waymark_ros',
        executable='replay',
        namespace=LaunchConfiguration('namespace'),
        arguments=[
            LaunchConfiguration('bag'),
            '--clock',
            '--rate',
            LaunchConfiguration('rate'),
            '--wait-subscribers',
            LaunchConfiguration('wait_subscribers_s'),
            '--wait-ready',
            'memory/stats',
        ],
        output='screen',
    )
    return LaunchDescription(
        [
            DeclareLaunchArgument('bag', description='rosbag2 folder to play (required)'),
            DeclareLaunchArgument(
                'rate', default_value='1.0', description='playback speed; 0: as fast as taken'
            ),
            DeclareLaunchArgument(
                'wait_subscribers_s',
                default_value='60.0',
                description='longest wait for memory to open and the nodes to subscribe to the bag',
            ),
            DeclareLaunchArgument(
                'exit_when_done',
                default_value='false',
                choices=['true', 'false'],
                description='end the launch when the whole bag has been played',
            ),
            *stack_arguments(CONFIG / 'replay.yaml', use_sim_time=True),
            OpaqueFunction(
                function=stack_nodes,
                kwargs={
                    'config': CONFIG,
                    'rviz_config': SHARE / 'rviz' / 'waymark.rviz',
                },
            ),
            play,
            RegisterEventHandler(
                OnProcessExit(target_action=play, on_exit=[Shutdown(reason='the bag ended')]),
                condition=IfCondition(LaunchConfiguration('exit_when_done')),
            ),
        ]
    )
