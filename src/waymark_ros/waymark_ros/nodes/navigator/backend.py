# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What a navigator backend is given, and what it answers.

navigator_node checks every goal the same way whatever drives it (finite, within
max_abs_coordinate_m, a unit quaternion, on the map and reachable, from the current map
epoch); a backend gets only goals that passed, takes each to its end and answers
(outcome, message) with a GoTo outcome. A new backend is a subclass in a module of its
own and one line in the registry.
"""

from __future__ import annotations

import copy
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import rclpy
from geometry_msgs.msg import Pose as PoseMsg
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node

from waymark.geometry import quaternion_from_yaw
from waymark.navigation.goals import GoalCheck
from waymark.navigation.grid import OccupancyMap, TraversabilityGrid
from waymark.navigation.planner import GridPlanner
from waymark.parameters.navigator import NavigatorParameters
from waymark_interfaces.action import GoTo
from waymark_ros.ros.conversions import NS_PER_S

Outcome = tuple[int, str]  # a GoTo.Result outcome and its message


@dataclass(frozen=True)
class MapState:
    """One map as received, with what navigation derives from it."""

    version: int
    occupancy: OccupancyMap
    grid: TraversabilityGrid
    planner: GridPlanner
    traversable_cells: int  # of `grid`, counted once when the map came


@dataclass(frozen=True)
class RobotPose:
    x: float
    y: float
    yaw: float
    stamp_s: float

    def to_msg(self, frame_id: str) -> PoseStamped:
        msg = PoseStamped()
        msg.header.frame_id = frame_id
        msg.pose.position.x, msg.pose.position.y = self.x, self.y
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = quaternion_from_yaw(self.yaw)
        return msg


class RefusedError(Exception):
    """A target that must not be driven to; the message says why."""


class StaleEpochError(RefusedError):
    """A remembered target from another map epoch than the current one."""


@dataclass(frozen=True)
class CheckedGoal:
    """A target that passed every check, and where exactly to take the robot."""

    target: PoseStamped  # as requested
    map: MapState  # the map it was checked on
    check: GoalCheck
    orientation: tuple[float, float, float, float]  # unit quaternion
    heading: bool  # turn to the target's heading at the end (a frontier has none)

    def pose(self) -> PoseMsg:
        """The target as it is to be driven: its checked (maybe snapped) position and its
        normalised orientation."""
        pose = copy.deepcopy(self.target.pose)
        pose.position.x, pose.position.y = self.check.x, self.check.y
        o = pose.orientation
        o.x, o.y, o.z, o.w = self.orientation
        return pose

    def reached(self) -> str:
        if not self.check.snapped:
            return 'reached'
        return f'reached (target moved {self.check.snap_distance_m:.2f} m to free space)'


class Host(Protocol):
    """What a backend may ask of the navigator about the goal it is driving."""

    def latest(self) -> tuple[RobotPose | None, MapState | None]:
        """The newest pose and map, either None before the first came."""

    def preempted(self, handle) -> bool:
        """Whether a newer goal has taken the drive from this one."""

    def stale(self, request: GoTo.Goal) -> str:
        """Why a remembered target is no longer from the current map epoch; empty if it is."""

    def halted(self) -> str:
        """Why no goal may be driven now (the navigator is not active); empty while one may."""

    def check(self, target: PoseStamped, heading: bool) -> CheckedGoal:
        """The target checked on the newest map, or RefusedError."""

    def show(self, goal: CheckedGoal, waypoints: np.ndarray | None) -> None:
        """Publish the goal (and the path, when there is one) for RViz."""


class Backend(ABC):
    """Takes checked goals to their end. `node` is for the backend's publishers and
    clients, `host` for the state of the goal being driven."""

    def __init__(self, node: Node, host: Host, settings: NavigatorParameters) -> None:
        self._node = node
        self._host = host
        self._settings = settings

    def use(self, settings: NavigatorParameters) -> None:
        """Changed live settings: the next goal is driven with them."""
        self._settings = settings

    @abstractmethod
    def drive(self, handle, goal: CheckedGoal) -> Outcome:
        """Take `goal` to its end. `handle` is the GoTo goal handle (or an exploration's
        leg): its request, cancel request and feedback. May raise RefusedError."""

    def stop(self) -> None:  # noqa: B027 - most backends leave nothing running
        """Called once every goal has ended, however it ended."""

    @abstractmethod
    def release(self) -> None:
        """Destroy the publishers and clients made for driving; the backend is not used
        again (the navigator is cleaned up)."""

    def interrupted(self, handle) -> Outcome | None:
        """How a goal still running must end now: cancelled, preempted by a newer one or
        stale after a change of map epoch; None while it may go on. A halt (the navigator
        deactivated) cancels it too."""
        if halted := self._host.halted():
            return GoTo.Result.OUTCOME_CANCELED, f'canceled: {halted}'
        if handle.is_cancel_requested:
            return GoTo.Result.OUTCOME_CANCELED, 'canceled'
        if self._host.preempted(handle):
            return GoTo.Result.OUTCOME_FAILED, 'preempted by a newer goal'
        if stale := self._host.stale(handle.request):
            return GoTo.Result.OUTCOME_STALE_EPOCH, stale
        return None

    def now_s(self) -> float:
        return self._node.get_clock().now().nanoseconds / NS_PER_S

    def stamped(self, goal: CheckedGoal) -> PoseStamped:
        """The checked goal in the map frame, stamped now."""
        msg = PoseStamped()
        msg.header.frame_id = self._settings.map_frame
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.pose = goal.pose()
        return msg


def wait(condition, timeout_s: float) -> bool:
    """Poll `condition` until it holds, `timeout_s` passes or ROS shuts down."""
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline and rclpy.ok():
        time.sleep(0.02)
    return condition()
