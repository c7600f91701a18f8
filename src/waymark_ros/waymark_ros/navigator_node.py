# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node: accepts GoTo goals, checks them, hands them to the robot's planner.

For now the planner is whatever listens on `goal_pose` (Nav2's bt_navigator does);
this node validates the target, forwards it, and reports arrival from odometry. The
occupancy-grid check, A* and the path follower come with the navigation work.
"""

from __future__ import annotations

import math
import threading
import time

import rclpy
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from waymark.geometry import InvalidPoseError
from waymark_interfaces.action import GoTo
from waymark_ros import qos
from waymark_ros.conversions import pose_from_msg
from waymark_ros.params import declare
from waymark_ros.spin import run_node


class NavigatorNode(Node):
    def __init__(self) -> None:
        super().__init__('navigator_node')
        self._map_frame = declare(self, 'map_frame', 'map', 'Frame goals must be given in.')
        self._tolerance = declare(
            self, 'goal_tolerance_m', 0.5, 'Arrival radius.', low=0.01, high=100.0
        )
        self._timeout = declare(
            self,
            'goal_timeout_s',
            300.0,
            'Give up on a goal after this long.',
            low=1.0,
            high=86400.0,
        )
        odom_topic = declare(self, 'odom_topic', '/odom', 'Robot pose in the map frame.')
        reliable = declare(self, 'reliable_input', False, 'Subscribe to odometry reliably.')
        self._robot: PoseStamped | None = None
        self._robot_lock = threading.Lock()
        self._goal_publisher = self.create_publisher(PoseStamped, 'goal_pose', 10)
        self.create_subscription(
            Odometry, odom_topic, self._on_odometry, qos.sensor_input(reliable, 10)
        )
        self._server = ActionServer(
            self,
            GoTo,
            'go_to',
            execute_callback=self._execute,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=ReentrantCallbackGroup(),
        )

    def _on_odometry(self, msg: Odometry) -> None:
        pose = PoseStamped(header=msg.header, pose=msg.pose.pose)
        with self._robot_lock:
            self._robot = pose

    def refusal(self, target: PoseStamped) -> str | None:
        """Why a target must not be sent, or None when it may.

        Every goal is accepted and a refused one is then aborted with this reason, so the
        caller learns why rather than seeing a bare rejection.
        """
        if target.header.frame_id != self._map_frame:
            return (
                f'target frame {target.header.frame_id!r} is not the map frame {self._map_frame!r}'
            )
        try:
            pose_from_msg(target.pose)
        except InvalidPoseError as error:
            return str(error)
        return None

    def _execute(self, handle) -> GoTo.Result:
        target: PoseStamped = handle.request.target
        result = GoTo.Result()
        reason = self.refusal(target)
        if reason is not None:
            result.outcome, result.message = GoTo.Result.OUTCOME_REFUSED, reason
            handle.abort()
            return result
        self._goal_publisher.publish(target)
        deadline = time.monotonic() + self._timeout
        feedback = GoTo.Feedback()
        while rclpy.ok():
            if handle.is_cancel_requested:
                handle.canceled()
                result.outcome, result.message = GoTo.Result.OUTCOME_CANCELED, 'canceled'
                return self._with_final_pose(result)
            distance = self._distance_to(target)
            if distance is not None:
                feedback.distance_remaining = float(distance)
                handle.publish_feedback(feedback)
                if distance <= self._tolerance:
                    handle.succeed()
                    result.outcome, result.message = GoTo.Result.OUTCOME_REACHED, 'reached'
                    return self._with_final_pose(result)
            if time.monotonic() > deadline:
                handle.abort()
                result.outcome = GoTo.Result.OUTCOME_FAILED
                result.message = f'not within {self._tolerance} m after {self._timeout:.0f} s'
                return self._with_final_pose(result)
            time.sleep(0.1)
        handle.abort()
        result.outcome, result.message = GoTo.Result.OUTCOME_FAILED, 'shutting down'
        return result

    def _distance_to(self, target: PoseStamped) -> float | None:
        with self._robot_lock:
            robot = self._robot
        if robot is None:
            return None
        a, b = robot.pose.position, target.pose.position
        return math.hypot(a.x - b.x, a.y - b.y)

    def _with_final_pose(self, result: GoTo.Result) -> GoTo.Result:
        with self._robot_lock:
            if self._robot is not None:
                result.final_pose = self._robot
        return result


def main(args=None) -> None:
    run_node(NavigatorNode, 'navigator_node', args, threads=3)


if __name__ == '__main__':
    main()
