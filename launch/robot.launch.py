# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""waymark on the robot: capture, memory, reasoner, navigator, safety and tasks, with presets
as arguments.

    ros2 launch waymark_ros robot.launch.py camera:=zed2i odometry:=fast_lio_mid360 \\
        models:=orin_nx llm_base_url:=http://192.168.123.20:8000/v1 backend:=nav2

`base:=go1` also starts the Go1's driver and twist_mux in front of safety_node (docs/go1.md);
the default, `base:=none`, starts nothing that moves a robot. The launch ends when
safety_node, the driver or twist_mux exits.

`ros2 launch waymark_ros robot.launch.py --show-args` lists every argument. Without a ROS 2
install (the PyPI wheels have no `launch`), start the node executables directly with the
same parameter files (README, "Using the nodes").
"""

from pathlib import Path

from launch import LaunchDescription
from launch.actions import OpaqueFunction

from waymark_ros.launch_support.launch_frames import frame_nodes
from waymark_ros.launch_support.launching import (
    base_arguments,
    base_nodes,
    stack_arguments,
    stack_nodes,
)

SHARE = Path(__file__).resolve().parent.parent  # the source tree or share/waymark_ros
CONFIG = SHARE / 'config'


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            *stack_arguments(CONFIG / 'robot.yaml', use_sim_time=False),
            *base_arguments(CONFIG),
            # first: a missing driver stops the launch before any node starts
            OpaqueFunction(function=base_nodes, kwargs={'config': CONFIG}),
            OpaqueFunction(function=frame_nodes, kwargs={'config': CONFIG}),
            OpaqueFunction(
                function=stack_nodes,
                kwargs={
                    'config': CONFIG,
                    'rviz_config': SHARE / 'rviz' / 'waymark.rviz',
                },
            ),
        ]
    )
