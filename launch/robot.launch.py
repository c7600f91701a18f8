# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""waymark on the robot: capture, memory, reasoner and navigator, with presets as arguments.

    ros2 launch waymark_ros robot.launch.py camera:=zed2i odometry:=fast_lio_mid360 \\
        models:=orin_nx llm_base_url:=http://192.168.123.20:8000/v1 backend:=nav2

`ros2 launch waymark_ros robot.launch.py --show-args` lists every argument. Without a ROS 2
install (the PyPI wheels have no `launch`), start the node executables directly with the
same parameter files (README, "Using the nodes").
"""

from pathlib import Path

from launch import LaunchDescription
from launch.actions import OpaqueFunction

from waymark_ros.ros.launching import stack_arguments, stack_nodes

SHARE = Path(__file__).resolve().parent.parent  # the source tree or share/waymark_ros
CONFIG = SHARE / 'config'


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            *stack_arguments(CONFIG / 'robot.yaml', use_sim_time=False),
            OpaqueFunction(
                function=stack_nodes,
                kwargs={
                    'config': CONFIG,
                    'rviz_config': SHARE / 'rviz' / 'waymark.rviz',
                },
            ),
        ]
    )
