# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The Explore action's loop: the nearest frontier by path, then the next, until none is
reachable or the time budget or `explore.max_goals` is spent.

Frontiers are found on the map inflated with unknown space counted as free (else none
would border it), but each frontier goal is driven as a GoTo target by the node's backend,
with unknown space as `unknown_is_obstacle` says. Every goal ended, reached or not, is not
tried again.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped

from waymark.navigation.frontiers import (
    Explorer,
    ExplorerStep,
    FinishReason,
    Frontier,
    frontier_near,
)
from waymark.navigation.grid import TraversabilityGrid, inflate
from waymark.navigation.planner import GridPlanner
from waymark.parameters.navigator import NavigatorParameters
from waymark_interfaces.action import Explore, GoTo
from waymark_ros.nodes.navigator.backend import MapState, Outcome, RefusedError, RobotPose

_ENDS = {
    FinishReason.NO_FRONTIERS: Explore.Result.OUTCOME_COMPLETE,
    FinishReason.NO_REACHABLE_FRONTIERS: Explore.Result.OUTCOME_COMPLETE,
    FinishReason.TIME_BUDGET: Explore.Result.OUTCOME_BUDGET_SPENT,
    FinishReason.MAX_GOALS: Explore.Result.OUTCOME_BUDGET_SPENT,
}


class ExploreHost(Protocol):
    """What exploration asks of the navigator."""

    def inputs(self) -> tuple[MapState, RobotPose]:
        """The newest map and pose, waiting input_wait_s for the first; else RefusedError."""

    def latest(self) -> tuple[RobotPose | None, MapState | None]: ...

    def hand_over(self, holder, successor) -> bool:
        """Give the drive from `holder` to `successor`; False when a newer goal has it."""

    def run_goal(self, handle, heading: bool) -> Outcome:
        """Check a GoTo goal and drive it with the backend, to its end."""

    def halted(self) -> str:
        """Why no goal may be driven now; empty while one may."""

    def show_frontiers(self, frontiers: tuple[Frontier, ...], chosen: Frontier | None) -> None:
        """Frontiers shown for RViz along with the goals."""

    def now_s(self) -> float: ...


@dataclass(frozen=True)
class _FrontierMap:
    """A map as exploration sees it: unknown space is not an obstacle, so frontiers exist."""

    version: int
    grid: TraversabilityGrid
    planner: GridPlanner
    unknown: np.ndarray


class _Leg:
    """One frontier goal of an exploration, driven exactly as a GoTo goal would be.

    It quacks like the GoTo goal handle that the backends read: the request's target, a
    cancel when the exploration is cancelled or its time budget `expired`, and distance
    feedback passed up to the exploration's feedback.
    """

    def __init__(self, explore_handle, target: PoseStamped, expired, on_distance) -> None:
        self.request = GoTo.Goal(target=target)
        self._explore_handle = explore_handle
        self._expired = expired
        self._on_distance = on_distance

    @property
    def is_cancel_requested(self) -> bool:
        return self._explore_handle.is_cancel_requested or self._expired()

    def publish_feedback(self, feedback: GoTo.Feedback) -> None:
        self._on_distance(feedback.distance_remaining)


class ExploreRunner:
    def __init__(self, host: ExploreHost, settings: NavigatorParameters, logger) -> None:
        self._host = host
        self._settings = settings
        self._logger = logger
        self._seen_check: tuple[int, tuple[float, float], bool] | None = None
        self._frontier_map: _FrontierMap | None = None  # cached per map version

    def use(self, settings: NavigatorParameters) -> None:
        """Changed live settings: the next exploration runs with them."""
        self._settings = settings

    def run(self, handle, result, feedback, started: float) -> Outcome:
        """Frontier after frontier, nearest by path first; fills in result's counts."""
        params = self._settings.explorer_params()
        budget = handle.request.time_budget_s or params.time_budget_s
        if not (math.isfinite(budget) and budget > 0):
            return Explore.Result.OUTCOME_FAILED, f'time_budget_s must be >= 0, got {budget}'
        explorer = Explorer(replace(params, time_budget_s=budget), self._host.now_s())

        def on_distance(distance: float) -> None:
            feedback.distance_remaining = float(distance)
            feedback.elapsed_s = time.monotonic() - started
            handle.publish_feedback(feedback)

        while rclpy.ok():
            if handle.is_cancel_requested:
                return Explore.Result.OUTCOME_CANCELED, 'canceled'
            if halted := self._host.halted():
                return Explore.Result.OUTCOME_CANCELED, f'canceled: {halted}'
            try:
                state, robot = self._host.inputs()
            except RefusedError as why:
                return Explore.Result.OUTCOME_FAILED, str(why)
            frontier_map = self._frontier_map_of(state)
            step = explorer.next_goal(
                frontier_map.grid,
                frontier_map.unknown,
                frontier_map.planner,
                (robot.x, robot.y),
                self._host.now_s(),
            )
            result.frontiers_left = len(step.frontiers)
            if step.finished is not None:
                return _ENDS[step.finished], _summary(step, explorer)
            self._host.show_frontiers(step.frontiers, step.goal)
            target = PoseStamped()
            target.header.frame_id = self._settings.map_frame
            target.pose.position.x, target.pose.position.y = step.goal.goal
            target.pose.orientation.w = 1.0
            feedback.current_goal = target
            feedback.frontiers = len(step.frontiers)
            goal_xy = step.goal.goal
            leg = _Leg(
                handle,
                target,
                lambda xy=goal_xy: (
                    explorer.budget_spent(self._host.now_s()) or self._frontier_seen(xy)
                ),
                on_distance,
            )
            if not self._host.hand_over(handle, leg):
                return Explore.Result.OUTCOME_FAILED, 'preempted by a newer goal'
            outcome, message = self._host.run_goal(leg, heading=False)
            if not self._host.hand_over(leg, handle):
                return Explore.Result.OUTCOME_FAILED, 'preempted by a newer goal'
            if outcome == GoTo.Result.OUTCOME_CANCELED:
                if handle.is_cancel_requested:
                    return Explore.Result.OUTCOME_CANCELED, 'canceled'
                if not self._frontier_seen(goal_xy):
                    continue  # the budget ran out mid-leg: next_goal says so
                outcome, message = GoTo.Result.OUTCOME_REACHED, 'seen before arrival'
            reached = outcome == GoTo.Result.OUTCOME_REACHED
            explorer.report(goal_xy, reached)
            result.goals_reached, result.goals_failed = (
                explorer.goals_reached,
                explorer.goals_failed,
            )
            feedback.goals_reached, feedback.goals_failed = (
                result.goals_reached,
                result.goals_failed,
            )
            if not reached:
                self._logger.warning(
                    f'frontier at ({goal_xy[0]:.2f}, {goal_xy[1]:.2f}) given up: {message}'
                )
        return Explore.Result.OUTCOME_FAILED, 'shutting down'

    def _frontier_seen(self, goal_xy: tuple[float, float]) -> bool:
        """Whether the unknown a frontier leg was sent to look at is now known.

        Asked at every control step of a leg, so it is worked out once per map version.
        """
        radius = self._settings.explore.seen_radius_m
        _, state = self._host.latest()
        if radius <= 0 or state is None:
            return False
        if self._seen_check is None or self._seen_check[:2] != (state.version, goal_xy):
            seen = not frontier_near(state.occupancy, goal_xy, radius)
            self._seen_check = (state.version, goal_xy, seen)
        return self._seen_check[2]

    def _frontier_map_of(self, state: MapState) -> _FrontierMap:
        cached = self._frontier_map
        if cached is None or cached.version != state.version:
            settings = self._settings
            grid = inflate(state.occupancy, settings.robot_radius_m, unknown_is_obstacle=False)
            cached = _FrontierMap(
                state.version,
                grid,
                GridPlanner(grid, settings.planner.config()),
                state.occupancy.unknown_mask(),
            )
            self._frontier_map = cached
        return cached


def _summary(step: ExplorerStep, explorer: Explorer) -> str:
    done = f'{explorer.goals_reached} frontier goals reached, {explorer.goals_failed} failed'
    left = len(step.frontiers)
    why = {
        FinishReason.NO_FRONTIERS: 'no frontier left',
        FinishReason.NO_REACHABLE_FRONTIERS: f'{left} frontiers left, none reachable',
        FinishReason.TIME_BUDGET: f'time budget spent, {left} frontiers left',
        FinishReason.MAX_GOALS: f'explore.max_goals spent, {left} frontiers left',
    }[step.finished]
    return f'{why}; {done}'
