# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`Drive` over navigator_node's GoTo action.

Only the navigator moves the base, so its planner, its map-epoch check and the safety
node between it and the motors stay in the loop for every drive of a task. The distance
is the odometry path length the body measured while the goal ran.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from rclpy.action import ActionClient
from rclpy.node import Node

from waymark.geometry import Pose
from waymark.tasks.attempts import DriveOutcome, DriveResult
from waymark_interfaces.action import GoTo
from waymark_ros.nodes.task.action_call import ActionOutcome, ActionWaits, call_action
from waymark_ros.ros.conversions import pose_stamped

_OUTCOMES = {
    GoTo.Result.OUTCOME_REACHED: DriveOutcome.REACHED,
    GoTo.Result.OUTCOME_REFUSED: DriveOutcome.REFUSED,
    GoTo.Result.OUTCOME_STALE_EPOCH: DriveOutcome.REFUSED,
    GoTo.Result.OUTCOME_FAILED: DriveOutcome.FAILED,
    GoTo.Result.OUTCOME_CANCELED: DriveOutcome.CANCELED,
}
_MAX_MESSAGE_CHARS = 300


class GoToDrive:
    def __init__(
        self,
        node: Node,
        action: str,
        waits: ActionWaits,
        odometer: Callable[[], float],
        map_frame: str,
        callback_group=None,
    ) -> None:
        self._action = action
        self._client = ActionClient(node, GoTo, action, callback_group=callback_group)
        self._node = node
        self._waits = waits
        self._odometer = odometer
        self._map_frame = map_frame

    def drive(self, goal: Pose, deadline: float, cancel: threading.Event) -> DriveResult:
        request = GoTo.Goal()
        request.target = pose_stamped(
            goal, self._map_frame, self._node.get_clock().now().nanoseconds
        )
        start = self._odometer()
        outcome = call_action(self._client, self._action, request, deadline, self._waits, cancel)
        distance = max(0.0, self._odometer() - start)
        unfinished = unfinished_drive(outcome, distance, 'drive')
        if unfinished is not None:
            return unfinished
        result = outcome.result
        kind = _OUTCOMES.get(result.outcome, DriveOutcome.FAILED)
        return DriveResult(kind, distance, result.message[:_MAX_MESSAGE_CHARS])


def unfinished_drive(outcome: ActionOutcome, distance: float, what: str) -> DriveResult | None:
    """How a navigator goal that brought no result ended, as a drive (`what`: the goal's
    name in the message); None when its result came."""
    if not outcome.accepted:
        return DriveResult(DriveOutcome.REFUSED, distance, f'the navigator rejected the {what}')
    if outcome.stopped == 'cancel':
        return DriveResult(DriveOutcome.CANCELED, distance, 'the task was canceled')
    if outcome.stopped == 'deadline':
        return DriveResult(DriveOutcome.FAILED, distance, f'the {what} ran past its deadline')
    if outcome.stopped == 'server lost':
        return DriveResult(DriveOutcome.FAILED, distance, f'the navigator went away mid-{what}')
    if outcome.result is None:
        return DriveResult(DriveOutcome.FAILED, distance, 'the navigator sent no result')
    return None
