# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""One action goal sent and waited for from a worker thread, every wait bounded.

The runner calls its parts synchronously from the RunTask goal's thread; the action
client's futures are completed by the node's other executor threads. A goal still
running when its deadline passes or the task is canceled is canceled here, so nothing
keeps moving on behalf of a task that has ended. A server that vanishes while its goal
runs (its node died) ends the wait once it has been gone for the server wait: the result
it owed will never come, and the task should not sit out its whole deadline. A goal whose
answer is lost is sent again under its id, and canceled by it when none comes
(`waymark_ros.ros.action_goal`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rclpy.action import ActionClient

from waymark_ros.ros.action_goal import result_status_known, send_goal
from waymark_ros.ros.service_call import wait_done

_POLL_S = 0.05  # how often a running goal looks at the cancel event and its deadline


class ActionCallError(RuntimeError):
    """The action could not be used at all: no server, or no answer to the goal."""


@dataclass(frozen=True)
class ActionWaits:
    server_wait_s: float
    accept_wait_s: float
    cancel_wait_s: float
    resend_after_s: float  # an unanswered goal is sent again (action_goal.send_goal)


@dataclass(frozen=True)
class ActionOutcome:
    """How a goal ended: `result` is None when it was rejected or its result never came;
    `stopped` says whether it was cut short ('cancel', 'deadline', 'server lost' or '')."""

    accepted: bool
    result: Any = None
    stopped: str = ''


def call_action(
    client: ActionClient,
    name: str,
    goal: Any,
    deadline: float,
    waits: ActionWaits,
    cancel: threading.Event | None = None,
    feedback: Callable[[Any], None] | None = None,
) -> ActionOutcome:
    """Send `goal` to the `name` action and wait for its result until `deadline`
    (monotonic seconds)."""
    if not client.wait_for_server(timeout_sec=_left(deadline, waits.server_wait_s)):
        raise ActionCallError(f'no {name} action server within {waits.server_wait_s:.1f} s')
    handle = send_goal(
        client,
        goal,
        _left(deadline, waits.accept_wait_s),
        waits.resend_after_s,
        (lambda msg: feedback(msg.feedback)) if feedback else None,
    )
    if handle is None:
        raise ActionCallError(
            f'{name} did not answer the goal within {waits.accept_wait_s:.1f} s; it was '
            'canceled in case it runs'
        )
    if not handle.accepted:
        return ActionOutcome(accepted=False)
    result = handle.get_result_async()
    stopped = ''
    lost_since: float | None = None
    while not result.done():
        now = time.monotonic()
        if client.server_is_ready():
            lost_since = None
        elif lost_since is None:
            lost_since = now
        if cancel is not None and cancel.is_set():
            stopped = 'cancel'
        elif now >= deadline:
            stopped = 'deadline'
        elif lost_since is not None and now - lost_since >= waits.server_wait_s:
            stopped = 'server lost'
        if stopped:
            canceling = handle.cancel_goal_async()
            wait_done(canceling, waits.cancel_wait_s)
            wait_done(result, waits.cancel_wait_s)
            break
        time.sleep(_POLL_S)
    if not result.done():
        return ActionOutcome(accepted=True, stopped=stopped)
    response = result.result()
    if not result_status_known(response.status):  # an adopted goal the server never held
        return ActionOutcome(accepted=False)
    return ActionOutcome(accepted=True, result=response.result, stopped=stopped)


def _left(deadline: float, wait_s: float) -> float:
    return max(0.0, min(wait_s, deadline - time.monotonic()))
