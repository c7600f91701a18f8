# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Sends answers' goals to navigator_node (GoTo) and reports how each ended.

The reasoner must not wait for the robot to walk there: a goal is sent and the question
answered at once. When the navigator's verdict comes (reached, refused, failed, canceled,
with its reason), it is logged and published as JSON on `navigation/outcome`, tagged with
the question and its trace id, so what the robot did can be joined with what it was told.
Only the navigator decides whether a goal is safe; nothing here publishes a goal directly.
"""

from __future__ import annotations

import json
import math
import threading
import time
from typing import Any

from geometry_msgs.msg import PoseStamped
from rclpy.action import ActionClient
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from std_msgs.msg import String

from waymark.geometry import yaw_from_quaternion
from waymark_interfaces.action import GoTo
from waymark_ros import qos

OUTCOMES = {
    GoTo.Result.OUTCOME_REACHED: 'reached',
    GoTo.Result.OUTCOME_REFUSED: 'refused',
    GoTo.Result.OUTCOME_FAILED: 'failed',
    GoTo.Result.OUTCOME_CANCELED: 'canceled',
}


class NavigationClient:
    def __init__(self, node: Node, action_name: str, server_wait_s: float) -> None:
        self._node = node
        self._action_name = action_name
        self._server_wait_s = server_wait_s
        self._client = ActionClient(
            node, GoTo, action_name, callback_group=MutuallyExclusiveCallbackGroup()
        )
        self._outcomes = node.create_publisher(String, 'navigation/outcome', qos.latched(10))
        self._lock = threading.Lock()

    def send(self, goal: PoseStamped, tag: dict[str, Any]) -> str:
        """Send `goal`; returns what to tell the asker. `tag` goes into the outcome."""
        if not self._client.wait_for_server(timeout_sec=self._server_wait_s):
            message = f'navigator not available on {self._action_name}: goal not sent'
            self._publish({**tag, 'outcome': 'not_sent', 'message': message}, goal, None)
            return message
        request = GoTo.Goal(target=goal)
        sent = time.monotonic()
        future = self._client.send_goal_async(request)
        future.add_done_callback(lambda done: self._accepted(done, goal, tag, sent))
        return 'goal sent to the navigator'

    def _accepted(self, future, goal: PoseStamped, tag: dict[str, Any], sent: float) -> None:
        handle = future.result()
        if handle is None or not handle.accepted:
            message = 'the navigator did not accept the goal'
            self._publish({**tag, 'outcome': 'refused', 'message': message}, goal, None)
            return
        handle.get_result_async().add_done_callback(
            lambda done: self._finished(done, goal, tag, sent)
        )

    def _finished(self, future, goal: PoseStamped, tag: dict[str, Any], sent: float) -> None:
        result = future.result().result
        outcome = OUTCOMES.get(result.outcome, f'unknown ({result.outcome})')
        record = {
            **tag,
            'outcome': outcome,
            'message': result.message,
            'seconds': round(time.monotonic() - sent, 2),
        }
        self._publish(record, goal, result.final_pose)

    def _publish(
        self, record: dict[str, Any], goal: PoseStamped, final: PoseStamped | None
    ) -> None:
        record['goal'] = _planar(goal)
        record['final'] = _planar(final) if final is not None else None
        log = self._node.get_logger()
        (log.info if record['outcome'] == 'reached' else log.warn)(
            f'navigation {record["outcome"]}: {record["message"]}'
        )
        with self._lock:
            self._outcomes.publish(String(data=json.dumps(record)))


def _planar(pose: PoseStamped) -> list[float] | None:
    """[x, y, yaw] of a pose, or None when it is not a usable one."""
    p, q = pose.pose.position, pose.pose.orientation
    values = [p.x, p.y, q.x, q.y, q.z, q.w]
    if not all(math.isfinite(v) for v in values) or not any(values[2:]):
        return None
    return [round(p.x, 3), round(p.y, 3), round(yaw_from_quaternion((q.x, q.y, q.z, q.w)), 4)]
