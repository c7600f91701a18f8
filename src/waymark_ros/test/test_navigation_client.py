# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""NavigationClient against GoTo servers that answer late, never finish, or refuse.

Each goal must end in exactly one `navigation/outcome` record, and a goal reported as
failed must not be left running on the navigator.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from std_msgs.msg import String

from waymark_interfaces.action import GoTo
from waymark_ros.ros import qos
from waymark_ros.ros.navigation_client import NavigationClient
from waymark_testing.actions import connect, go_to
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds

DRIVE_LIMIT_S = 30.0  # how long SlowNavigator drives a goal nobody cancels


class SlowNavigator:
    """A GoTo server that accepts after `accept_delay_s` and drives until canceled."""

    def __init__(self, ros, action: str, accept_delay_s: float = 0.0, accept: bool = True):
        self.accept_delay_s, self.accept = accept_delay_s, accept
        self.started = threading.Event()
        self.canceled = threading.Event()
        with ros.paused() as node:
            self.server = ActionServer(
                node,
                GoTo,
                action,
                execute_callback=self._execute,
                goal_callback=self._decide,
                cancel_callback=lambda _request: CancelResponse.ACCEPT,
                callback_group=ReentrantCallbackGroup(),
            )

    def _decide(self, _goal) -> GoalResponse:
        time.sleep(self.accept_delay_s)  # the behaviour played: a navigator slow to answer
        return GoalResponse.ACCEPT if self.accept else GoalResponse.REJECT

    def _execute(self, handle) -> GoTo.Result:
        self.started.set()
        give_up = time.monotonic() + DRIVE_LIMIT_S
        while not handle.is_cancel_requested:
            if time.monotonic() > give_up:  # a failed test ends, it does not hang teardown
                handle.abort()
                return GoTo.Result(outcome=GoTo.Result.OUTCOME_FAILED, message='never canceled')
            time.sleep(0.02)
        self.canceled.set()
        handle.canceled()
        return GoTo.Result(outcome=GoTo.Result.OUTCOME_CANCELED, message='canceled')


def navigation(ros, action: str, accept_wait_s: float = 5.0, result_wait_s: float = 60.0):
    """A NavigationClient on the harness node, matched with the server before use."""
    with ros.paused() as node:
        client = NavigationClient(node, action, 5.0, accept_wait_s, result_wait_s)
        probe = ActionClient(node, GoTo, action)
    connect(probe)  # discovery done, responses will arrive
    return client


def calls(client: NavigationClient, method: str) -> list:
    """The calls of `client`'s `method` that have returned (one entry each), for a method
    the client calls through the instance: a test waits on a handler having run, then
    counts the records published in this process (the subscriber sees them later)."""
    returned, original = [], getattr(client, method)

    def wrapped(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        finally:
            returned.append(method)

    setattr(client, method, wrapped)
    return returned


def records(outcomes) -> list[dict]:
    return [json.loads(msg.data) for msg in outcomes]


def test_a_drive_without_a_verdict_is_canceled_and_reported_failed(ros):
    navigator = SlowNavigator(ros, 'go_to_forever')
    outcomes = ros.collect(String, 'navigation/outcome', qos.latched(10))
    client = navigation(ros, 'go_to_forever', result_wait_s=1.0)
    finished, published = calls(client, '_finished'), calls(client, '_publish')

    assert client.send(go_to(1.0, 2.0).target, {'question': 'q1'}) == 'goal sent to the navigator'

    assert navigator.started.wait(10), 'goal never reached the navigator'
    wait_until(lambda: outcomes, 10, 'no navigation outcome')
    assert navigator.canceled.wait(10), 'the overdue goal was left running'
    # The canceled result arrives and must not add a second record.
    wait_until(lambda: finished, 10, 'the canceled result never reached the client')
    assert len(published) == 1
    [record] = records(outcomes)
    assert record['question'] == 'q1'
    assert record['outcome'] == 'failed'
    assert record['message'] == 'no result within 1 s; goal canceled'
    assert record['goal'] == [1.0, 2.0, 0.0] and record['final'] is None
    assert 1.0 <= record['seconds'] < 5.0


def test_an_unanswered_goal_is_reported_failed_and_canceled_when_accepted_late(ros):
    navigator = SlowNavigator(ros, 'go_to_late', accept_delay_s=2.0)
    outcomes = ros.collect(String, 'navigation/outcome', qos.latched(10))
    client = navigation(ros, 'go_to_late', accept_wait_s=0.5)
    accepted, published = calls(client, '_accepted'), calls(client, '_publish')

    client.send(go_to(3.0, 0.0).target, {'question': 'q2'})

    wait_until(lambda: outcomes, 10, 'no navigation outcome')
    [record] = records(outcomes)
    assert (record['outcome'], record['message']) == (
        'failed',
        'the navigator did not answer the goal within 0.5 s; goal canceled',
    )
    assert record['seconds'] < 2.0  # reported before the acceptance came
    assert navigator.canceled.wait(10), 'the late-accepted goal was not canceled'
    wait_until(lambda: accepted, 10, 'the late acceptance never reached the client')
    assert len(published) == 1 and len(outcomes) == 1


def test_a_rejected_goal_is_reported_refused_once(ros):
    SlowNavigator(ros, 'go_to_never', accept=False)
    outcomes = ros.collect(String, 'navigation/outcome', qos.latched(10))
    client = navigation(ros, 'go_to_never', accept_wait_s=0.5)

    client.send(go_to(0.0, 0.0).target, {'question': 'q3'})

    wait_until(lambda: outcomes, 10, 'no navigation outcome')
    # The behaviour under test is a deadline passing: hold past accept_wait_s (0.5 s) and
    # a few 0.25 s watch periods; no second, "failed" record may come.
    time.sleep(1.0)
    [record] = records(outcomes)
    assert (record['outcome'], record['message']) == (
        'refused',
        'the navigator did not accept the goal',
    )
