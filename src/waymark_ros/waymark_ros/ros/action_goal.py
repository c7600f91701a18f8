# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Sending an action goal whose response may be lost.

Discovery is not symmetric: a server can take a goal from a client it has not yet
matched back, and the goal response is then dropped (Fast DDS logs "failed to send
response"), while the goal runs. A client that gave up on it would leave the robot
driving a goal that nobody follows. So an unanswered goal is sent again under the same
id, and one never answered is canceled by its id before giving up.

An action server never runs an id twice: rclpy's ActionServer (every server this is used
with is one) answers a goal whose id it already holds with a rejection
(`_execute_goal_request`, `goal_exists`). A rejected resend is therefore the first send's
acceptance, and the goal is adopted under its id; had the first been rejected too, the
server answers the adopted goal's result request with STATUS_UNKNOWN
(`_execute_get_result_request`: no such goal), which `result_status_known` tells apart
from a result.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Time
from rclpy.action import ActionClient
from rclpy.action.client import ClientGoalHandle
from unique_identifier_msgs.msg import UUID

from waymark_ros.ros.service_call import wait_done


@dataclass(frozen=True)
class _Accepted:
    """The goal response an adopted goal's handle holds (what it reads of one)."""

    accepted: bool = True
    stamp: Time = field(default_factory=Time)


def send_goal(
    client: ActionClient,
    goal: Any,
    wait_s: float,
    resend_after_s: float,
    feedback: Callable[[Any], None] | None = None,
) -> ClientGoalHandle | None:
    """Send `goal`, again under the same id every `resend_after_s`
    while it is unanswered, for at most `wait_s`. Returns its handle, accepted or not, or
    None when no send was answered; that goal has then been canceled by its id."""
    goal_id = UUID(uuid=list(uuid.uuid4().bytes))
    deadline = time.monotonic() + wait_s
    resent = False
    while True:
        sent = client.send_goal_async(goal, feedback_callback=feedback, goal_uuid=goal_id)
        if wait_done(sent, max(0.0, min(resend_after_s, deadline - time.monotonic()))):
            handle = sent.result()
            if handle.accepted or not resent:
                return handle
            return ClientGoalHandle(client, goal_id, _Accepted())
        sent.cancel()  # its request is forgotten: a late response to it is ignored
        if time.monotonic() >= deadline:
            # It may run all the same, its answer lost: nothing must move for it.
            ClientGoalHandle(client, goal_id, None).cancel_goal_async()
            return None
        resent = True


def result_status_known(status: int) -> bool:
    """Whether a result response is the goal's (not STATUS_UNKNOWN: no such goal)."""
    return status != GoalStatus.STATUS_UNKNOWN
