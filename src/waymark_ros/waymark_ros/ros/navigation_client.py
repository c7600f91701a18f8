# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Sends answers' goals to navigator_node (GoTo) and reports how each ended.

The reasoner must not wait for the robot to walk there: a goal is sent and the question
answered at once. When the navigator's verdict comes (reached, refused, stale_epoch, failed,
canceled, with its reason), it is logged and published as JSON on `navigation/outcome`, tagged with
the question and its trace id, so what the robot did can be joined with what it was told.
Only the navigator decides whether a goal is safe; nothing here publishes a goal directly.
"""

from __future__ import annotations

import json
import math
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from geometry_msgs.msg import PoseStamped
from rclpy.action import ActionClient
from rclpy.action.client import ClientGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from std_msgs.msg import String
from unique_identifier_msgs.msg import UUID

from waymark.geometry import yaw_from_quaternion
from waymark_interfaces.action import GoTo
from waymark_ros.ros import qos

OUTCOMES = {
    GoTo.Result.OUTCOME_REACHED: 'reached',
    GoTo.Result.OUTCOME_REFUSED: 'refused',
    GoTo.Result.OUTCOME_FAILED: 'failed',
    GoTo.Result.OUTCOME_CANCELED: 'canceled',
    GoTo.Result.OUTCOME_STALE_EPOCH: 'stale_epoch',
}
_WATCH_PERIOD_S = 0.25  # how often overdue goals are looked for


@dataclass
class _Drive:
    """One goal sent to the navigator and not yet reported."""

    goal: PoseStamped
    tag: dict[str, Any]
    sent: float  # monotonic seconds
    deadline: float  # monotonic seconds: for the acceptance, then for the result
    goal_id: UUID
    handle: ClientGoalHandle | None = None
    reported: bool = False


class NavigationClient:
    """Every goal sent gets exactly one outcome record, even when the navigator goes quiet.

    A goal the navigator neither accepts within `accept_wait_s` nor finishes within
    `result_wait_s` is reported `failed` and canceled, so the robot does not act on a goal
    that the record says ended (a late acceptance is canceled at once).
    """

    def __init__(
        self,
        node: Node,
        action_name: str,
        server_wait_s: float,
        accept_wait_s: float,
        result_wait_s: float,
    ) -> None:
        self._node = node
        self._action_name = action_name
        self._server_wait_s = server_wait_s
        self._accept_wait_s = accept_wait_s
        self._result_wait_s = result_wait_s
        group = MutuallyExclusiveCallbackGroup()
        self._client = ActionClient(node, GoTo, action_name, callback_group=group)
        self._outcomes = node.create_publisher(String, 'navigation/outcome', qos.latched(10))
        self._lock = threading.Lock()
        self._drives: list[_Drive] = []
        node.create_timer(_WATCH_PERIOD_S, self._expire, callback_group=group)

    def send(
        self, goal: PoseStamped, tag: dict[str, Any], session: str = '', map_epoch: int = 0
    ) -> str:
        """Send `goal`; returns what to tell the asker. `tag` goes into the outcome.

        A goal that is a remembered pose names the `session` and `map_epoch` of its memory,
        so that the navigator can refuse it when the map has moved on since."""
        tag = {**tag, 'session': session, 'map_epoch': map_epoch} if session else tag
        if not self._client.wait_for_server(timeout_sec=self._server_wait_s):
            message = f'navigator not available on {self._action_name}: goal not sent'
            self._publish({**tag, 'outcome': 'not_sent', 'message': message}, goal, None)
            return message
        sent = time.monotonic()
        goal_id = UUID(uuid=list(uuid.uuid4().bytes))  # ours, so it can be canceled unanswered
        drive = _Drive(goal, tag, sent, deadline=sent + self._accept_wait_s, goal_id=goal_id)
        with self._lock:
            self._drives.append(drive)
        request = GoTo.Goal(target=goal, evidence_session=session, evidence_map_epoch=map_epoch)
        future = self._client.send_goal_async(request, goal_uuid=goal_id)
        future.add_done_callback(lambda done: self._accepted(done, drive))
        return 'goal sent to the navigator'

    def _accepted(self, future, drive: _Drive) -> None:
        handle = None if future.exception() is not None else future.result()
        with self._lock:
            late = drive.reported
            if not late and handle is not None and handle.accepted:
                drive.handle = handle
                drive.deadline = time.monotonic() + self._result_wait_s
        if handle is None or not handle.accepted:
            self._report(drive, 'refused', 'the navigator did not accept the goal')
        elif late:
            handle.cancel_goal_async()  # already reported failed: the robot must not go
        else:
            handle.get_result_async().add_done_callback(lambda done: self._finished(done, drive))

    def _finished(self, future, drive: _Drive) -> None:
        response = None if future.exception() is not None else future.result()
        if response is None:
            self._report(drive, 'failed', f'no result from the navigator: {future.exception()!r}')
            return
        result = response.result
        outcome = OUTCOMES.get(result.outcome, f'unknown ({result.outcome})')
        self._report(drive, outcome, result.message, result.final_pose)

    def _expire(self) -> None:
        now = time.monotonic()
        with self._lock:
            overdue = [d for d in self._drives if not d.reported and now > d.deadline]
        for drive in overdue:
            if drive.handle is None:
                # The navigator may have accepted it and its answer been lost: cancel by id.
                ClientGoalHandle(self._client, drive.goal_id, None).cancel_goal_async()
                message = f'the navigator did not answer the goal within {self._accept_wait_s:g} s'
            else:
                drive.handle.cancel_goal_async()
                message = f'no result within {self._result_wait_s:g} s'
            self._report(drive, 'failed', message + '; goal canceled')

    def _report(
        self, drive: _Drive, outcome: str, message: str, final: PoseStamped | None = None
    ) -> None:
        """Publish the drive's one outcome record; later verdicts on it are dropped."""
        with self._lock:
            if drive.reported:
                return
            drive.reported = True
            self._drives.remove(drive)
        record = {
            **drive.tag,
            'outcome': outcome,
            'message': message,
            'seconds': round(time.monotonic() - drive.sent, 2),
        }
        self._publish(record, drive.goal, final)

    def _publish(
        self, record: dict[str, Any], goal: PoseStamped, final: PoseStamped | None
    ) -> None:
        record['goal'] = _planar(goal)
        record['final'] = _planar(final) if final is not None else None
        with self._lock:  # the record first: nothing after it can lose it
            self._outcomes.publish(String(data=json.dumps(record)))
        line = f'navigation {record["outcome"]}: {record["message"]}'
        if record['outcome'] == 'reached':
            self._node.get_logger().info(line)
        else:
            self._node.get_logger().warning(line)


def _planar(pose: PoseStamped) -> list[float] | None:
    """[x, y, yaw] of a pose, or None when it is not a usable one."""
    p, q = pose.pose.position, pose.pose.orientation
    values = [p.x, p.y, q.x, q.y, q.z, q.w]
    if not all(math.isfinite(v) for v in values) or not any(values[2:]):
        return None
    return [round(p.x, 3), round(p.y, 3), round(yaw_from_quaternion((q.x, q.y, q.z, q.w)), 4)]
