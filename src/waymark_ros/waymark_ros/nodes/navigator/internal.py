# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Backend `internal`: A* on the inflated grid and a PD follower on `cmd_vel_topic`.

The path is smoothed and published on `plan`, replanned when the map changes (the goal
checked again on the new map), and followed as RAVEN drove its Go1. The robot stops on
cancel, preemption, an e-stop, a new map epoch, a stale pose, no progress or timeout, and
on deactivation and shutdown.
"""

from __future__ import annotations

import math
import time

import numpy as np
import rclpy
from geometry_msgs.msg import Twist
from rclpy.duration import Duration
from rclpy.node import Node

from waymark.geometry import yaw_from_quaternion
from waymark.navigation.follower import FollowerStatus, PathFollower
from waymark.navigation.planner import PlanError
from waymark.parameters.navigator import NavigatorParameters
from waymark_interfaces.action import GoTo
from waymark_ros.nodes.navigator.backend import Backend, CheckedGoal, Host, Outcome, RefusedError
from waymark_ros.ros import qos
from waymark_ros.ros.navigation_msgs import twist_msg

_LAST_STOP_WAIT_S = 0.5  # on release: how long the last zero twist may wait for the base

_FAILURES = {
    FollowerStatus.STUCK: 'no progress',
    FollowerStatus.TIMED_OUT: 'timed out',
    FollowerStatus.CANCELED: 'canceled',
}


class InternalBackend(Backend):
    def __init__(self, node: Node, host: Host, settings: NavigatorParameters) -> None:
        super().__init__(node, host, settings)
        self._cmd_vel = node.create_publisher(Twist, settings.cmd_vel_topic, qos.commands())

    def stop(self) -> None:
        self._cmd_vel.publish(twist_msg(0.0, 0.0))

    def release(self) -> None:
        """A last zero twist, acknowledged by the base if it is there, then go."""
        self.stop()
        self._cmd_vel.wait_for_all_acked(Duration(seconds=_LAST_STOP_WAIT_S))
        self._node.destroy_publisher(self._cmd_vel)

    def drive(self, handle, goal: CheckedGoal) -> Outcome:
        settings = self._settings  # as they are when the goal starts
        waypoints = _plan(goal)
        self._host.show(goal, waypoints)
        follower = PathFollower(settings.follower_params())
        yaw = yaw_from_quaternion(goal.orientation) if settings.align_yaw and goal.heading else None
        follower.start([tuple(p) for p in waypoints], yaw, self.now_s())
        feedback = GoTo.Feedback()
        period = 1.0 / settings.control_rate_hz
        while rclpy.ok():
            if (ended := self.interrupted(handle)) is not None:
                return ended
            robot, current = self._host.latest()
            if current is not None and current.version != goal.map.version:
                try:  # the goal is checked again: the new map may have closed it off
                    goal = self._host.check(goal.target, goal.heading)
                    waypoints = _plan(goal)
                except RefusedError as why:
                    return GoTo.Result.OUTCOME_FAILED, f'map changed: {why}'
                follower.replace_path([tuple(p) for p in waypoints])
                self._host.show(goal, waypoints)
            if robot is None:
                output = follower.update(math.nan, math.nan, math.nan, math.nan, self.now_s())
            else:
                output = follower.update(robot.x, robot.y, robot.yaw, robot.stamp_s, self.now_s())
            self._cmd_vel.publish(twist_msg(output.command.linear, output.command.angular))
            if output.status == FollowerStatus.ARRIVED:
                return GoTo.Result.OUTCOME_REACHED, goal.reached()
            if output.status in _FAILURES:
                return GoTo.Result.OUTCOME_FAILED, (
                    f'{_FAILURES[output.status]}, {output.distance_remaining_m:.2f} m from the goal'
                )
            feedback.distance_remaining = float(output.distance_remaining_m)
            handle.publish_feedback(feedback)
            time.sleep(period)
        return GoTo.Result.OUTCOME_FAILED, 'shutting down'


def _plan(goal: CheckedGoal) -> np.ndarray:
    """The smoothed path to the goal, ending exactly on it; RefusedError when none."""
    try:
        plan = goal.map.planner.plan_cells(goal.check.start_cell, goal.check.goal_cell)
    except PlanError as error:
        raise RefusedError(str(error)) from None
    waypoints = np.array(plan.smoothed, dtype=float)
    waypoints[-1] = (goal.check.x, goal.check.y)
    return waypoints
