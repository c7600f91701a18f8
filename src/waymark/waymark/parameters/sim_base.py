# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""sim_base_node's parameters. The limits a real base would let an operator change while
it runs (speed limits, command timeout) are live."""

from __future__ import annotations

import math
from dataclasses import dataclass

from waymark.settings import setting

# How the base behaves when commands stop coming (sim_base_node's docstring cites the driver).
SIM = 'sim'  # stops command_timeout_s after the last command, always
UNITREE_ROS = 'unitree_ros'  # the Go1 driver as released: keeps the last command
UNITREE_ROS_PATCHED = 'unitree_ros_patched'  # the driver with waymark's timeout patch
DRIVER_MODELS = (SIM, UNITREE_ROS, UNITREE_ROS_PATCHED)


@dataclass(frozen=True)
class SimBaseParameters:
    initial_pose: tuple[float, ...] = setting(
        (0.0, 0.0, 0.0), 'Start pose [x, y, yaw] in frame_id.'
    )
    frame_id: str = setting('map', 'Frame of the pose: the map frame.')
    child_frame_id: str = setting('base_link', 'Frame of the body.')
    odom_topic: str = setting('/odom', 'nav_msgs/Odometry out.')
    cmd_vel_topic: str = setting('cmd_vel', 'geometry_msgs/Twist in.')
    rate_hz: float = setting(50.0, 'Update and odometry rate.', low=1.0, high=1000.0)
    max_linear: float = setting(
        2.0, 'Speed limit (m/s); commands are clamped.', low=0.0, high=20.0, live=True
    )
    max_angular: float = setting(
        3.0, 'Yaw rate limit (rad/s); commands are clamped.', low=0.0, high=50.0, live=True
    )
    command_timeout_s: float = setting(
        0.5, 'Stop when no command came for this long.', low=0.01, high=60.0, live=True
    )
    driver_model: str = setting(
        SIM,
        f'What stops the base when commands stop: {SIM}, after command_timeout_s; '
        f'{UNITREE_ROS}, the Go1 driver as released (the last command is kept; a 1 ms check '
        'zeroes it only when it runs between command_timeout_s and 2 ms later); '
        f'{UNITREE_ROS_PATCHED}, that driver with docker/patches (zero at the first check '
        'after command_timeout_s). The unitree_ros models also stop on shutdown (the driver '
        'lies the robot down).',
        choices=DRIVER_MODELS,
    )
    reset_check_period_s: float = setting(
        0.001,
        "The unitree_ros models: period of the driver's zeroing check (1 ms in its source).",
        low=0.0005,
        high=1.0,
    )
    miss_reset_window: bool = setting(
        False,
        f'{UNITREE_ROS}: the zeroing check never lands in its 2 ms window, as on a busy '
        'executor, so the last command is kept until another one comes.',
    )
    publish_while_idle: bool = setting(
        True, 'Publish odometry while standing still too.', live=True
    )
    publish_tf: bool = setting(
        True,
        'Also broadcast the pose on /tf (frame_id -> child_frame_id), for nodes with pose_type '
        'tf; needs tf2_msgs (without it the node says so once and publishes odometry only).',
    )
    collision_map: bool = setting(False, 'Stop at the occupied cells of the map.')
    map_topic: str = setting('/map', 'nav_msgs/OccupancyGrid (latched), for collision_map.')

    def __post_init__(self) -> None:
        pose = self.initial_pose
        if len(pose) != 3 or not all(math.isfinite(value) for value in pose):
            raise ValueError(f'initial_pose must be 3 finite numbers [x, y, yaw], got {list(pose)}')
        if not (self.frame_id and self.child_frame_id):
            raise ValueError('frame_id and child_frame_id must not be empty')
