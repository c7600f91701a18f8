# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Backend `goal_topic`: the checked target goes out on `goal_pose` for a planner that
listens there (Nav2's bt_navigator does); arrival is judged from the pose.

Nothing is asked back of that planner, so the goal ends reached once the robot is within
goal_tolerance_m of the checked target, failed after goal_timeout_s, and canceled on a
GoTo cancel (the planner is not told: it has no cancel on this topic).
"""

from __future__ import annotations

import math
import time

import rclpy
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node

from waymark.parameters.navigator import NavigatorParameters
from waymark_interfaces.action import GoTo
from waymark_ros.nodes.navigator.backend import Backend, CheckedGoal, Host, Outcome


class GoalTopicBackend(Backend):
    def __init__(self, node: Node, host: Host, settings: NavigatorParameters) -> None:
        super().__init__(node, host, settings)
        self._goal_publisher = node.create_publisher(PoseStamped, 'goal_pose', 10)

    def release(self) -> None:
        self._node.destroy_publisher(self._goal_publisher)

    def drive(self, handle, goal: CheckedGoal) -> Outcome:
        tolerance = self._settings.goal_tolerance_m
        timeout_s = self._settings.goal_timeout_s
        self._host.show(goal, None)
        self._goal_publisher.publish(self.stamped(goal))
        deadline = time.monotonic() + timeout_s
        feedback = GoTo.Feedback()
        while rclpy.ok():
            if (ended := self.interrupted(handle)) is not None:
                return ended
            robot, _ = self._host.latest()
            if robot is not None:
                distance = math.hypot(robot.x - goal.check.x, robot.y - goal.check.y)
                feedback.distance_remaining = float(distance)
                handle.publish_feedback(feedback)
                if distance <= tolerance:
                    return GoTo.Result.OUTCOME_REACHED, 'reached'
            if time.monotonic() > deadline:
                return GoTo.Result.OUTCOME_FAILED, (
                    f'not within {tolerance} m after {timeout_s:.0f} s'
                )
            time.sleep(0.1)
        return GoTo.Result.OUTCOME_FAILED, 'shutting down'
