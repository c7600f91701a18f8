# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`Explore` over navigator_node's explore action, for ROOM-wide recoveries.

The action takes a time budget, not a radius: it drives to the nearest reachable frontier,
then the next, so a short budget keeps it near the robot. Exploring is a help to the next
recall, never a condition of the task: an explorer that is away or refuses is reported,
and the task goes on to its re-query.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from rclpy.action import ActionClient
from rclpy.node import Node

from waymark.tasks.attempts import DriveOutcome, DriveResult
from waymark_interfaces.action import Explore
from waymark_ros.nodes.task.action_call import ActionCallError, ActionWaits, call_action
from waymark_ros.nodes.task.drive import unfinished_drive

_MAX_MESSAGE_CHARS = 300


class FrontierExplore:
    def __init__(
        self,
        node: Node,
        action: str,
        waits: ActionWaits,
        odometer: Callable[[], float],
        callback_group=None,
    ) -> None:
        self._action = action
        self._client = ActionClient(node, Explore, action, callback_group=callback_group)
        self._waits = waits
        self._odometer = odometer

    def explore(self, radius_m: float, deadline: float, cancel: threading.Event) -> DriveResult:
        budget = deadline - time.monotonic()
        if budget <= 1.0:
            return DriveResult(DriveOutcome.REFUSED, message='no time left to explore')
        goal = Explore.Goal(time_budget_s=float(budget))
        start = self._odometer()
        try:
            outcome = call_action(self._client, self._action, goal, deadline, self._waits, cancel)
        except ActionCallError as error:
            return DriveResult(DriveOutcome.REFUSED, message=str(error)[:_MAX_MESSAGE_CHARS])
        distance = max(0.0, self._odometer() - start)
        unfinished = unfinished_drive(outcome, distance, 'exploration')
        if unfinished is not None:
            return unfinished
        result = outcome.result
        said = (
            f'{result.goals_reached} frontiers reached, {result.goals_failed} failed, '
            f'{result.frontiers_left} left: {result.message}'
        )[:_MAX_MESSAGE_CHARS]
        if result.outcome == Explore.Result.OUTCOME_CANCELED:
            return DriveResult(DriveOutcome.CANCELED, distance, said)
        kind = DriveOutcome.REACHED if result.goals_reached else DriveOutcome.FAILED
        return DriveResult(kind, distance, said)
