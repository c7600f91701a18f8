# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""reasoner_node's robot pose: the latest planar pose in the map frame, which the model is
told as where the robot stands. A pose in another frame or not finite is left out (the
last good one stays), and the stream is watched for silence on /diagnostics."""

from __future__ import annotations

import math

from geometry_msgs.msg import Pose as PoseMsg
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from std_msgs.msg import Header

from waymark.geometry import yaw_from_quaternion
from waymark.parameters.reasoner import RobotParameters
from waymark_ros.ros import qos
from waymark_ros.ros.input_monitor import InputMonitor
from waymark_ros.ros.pose_input import subscribe_pose


class RobotPose:
    def __init__(
        self, node: Node, params: RobotParameters, map_frame: str, monitor: InputMonitor
    ) -> None:
        self._logger = node.get_logger()
        self._map_frame = map_frame
        self.planar: tuple[float, float, float, float] | None = None  # x, y, z, yaw
        poses = subscribe_pose(
            node,
            params.pose_type,
            params.odom_topic,
            self._on_pose,
            qos.state_input(reliable=False, depth=5),
            callback_group=MutuallyExclusiveCallbackGroup(),
            tf=params.tf_pose,
        )
        self._seen = monitor.watch('pose', poses.source, detail=lambda: poses.last_error)

    def _on_pose(self, header: Header, pose: PoseMsg, _covariance) -> None:
        self._seen()
        if header.frame_id and header.frame_id != self._map_frame:
            self._logger.warning(
                f'robot pose ignored: in {header.frame_id!r}, not {self._map_frame!r}',
                throttle_duration_sec=60.0,
            )
            return
        p, q = pose.position, pose.orientation
        planar = (p.x, p.y, p.z, yaw_from_quaternion((q.x, q.y, q.z, q.w)))
        if all(map(math.isfinite, planar)):
            self.planar = planar
