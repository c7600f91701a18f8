# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Goal sending when a goal response is lost (waymark_ros.ros.action_goal, which task_node
and the test harness use): the goal is sent again under its id, runs once, and is
adopted; one never answered is canceled by its id (rclpy's real ActionServer)."""

from __future__ import annotations

import threading

import pytest
from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup

from waymark_interfaces.action import GoTo
from waymark_ros.ros.action_goal import send_goal
from waymark_testing import actions
from waymark_testing.actions import connect, go_to, result_of, send
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds


class Server:
    """A GoTo server that runs each goal until released or canceled (cancels accepted, as
    navigator_node accepts them), counting what it was sent."""

    def __init__(self, ros, accept: bool = True) -> None:
        self.requests = 0
        self.canceled = threading.Event()
        self.release = threading.Event()
        with ros.paused():
            self.server = ActionServer(
                ros.node,
                GoTo,
                'resend_go_to',
                execute_callback=self._execute,
                goal_callback=self._goal,
                cancel_callback=lambda _handle: CancelResponse.ACCEPT,
                callback_group=ReentrantCallbackGroup(),
            )
        self.accept = accept

    def _goal(self, _goal) -> GoalResponse:
        self.requests += 1
        return GoalResponse.ACCEPT if self.accept else GoalResponse.REJECT

    def _execute(self, handle) -> GoTo.Result:
        wait_until(lambda: self.release.is_set() or handle.is_cancel_requested, 30, 'no end')
        if handle.is_cancel_requested:
            handle.canceled()
            self.canceled.set()
            return GoTo.Result(outcome=GoTo.Result.OUTCOME_CANCELED)
        handle.succeed()
        return GoTo.Result(outcome=GoTo.Result.OUTCOME_REACHED)


class LosingFirstResponse:
    """Wraps the client so the first `lost` goal responses never arrive, as when the server
    had not matched the client back: the request reaches the server, the reply is dropped."""

    def __init__(self, client: ActionClient, lost: int = 1) -> None:
        self.client = client
        self.lost = lost
        self.sent = 0

    def send_goal_async(self, goal, **kwargs):
        self.sent += 1
        future = self.client.send_goal_async(goal, **kwargs)
        if self.sent <= self.lost:
            lost = type(future)()
            future.add_done_callback(lambda _done: None)
            return lost
        return future

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_a_goal_whose_response_was_lost_is_adopted_and_runs_once(ros, monkeypatch):
    monkeypatch.setattr(actions, 'RESEND_S', 1.0)
    server = Server(ros)
    with ros.paused() as node:
        client = ActionClient(node, GoTo, 'resend_go_to')
    connect(client)
    handle = send(LosingFirstResponse(client), go_to(1.0, 0.0))
    assert handle.accepted and server.requests == 1  # the resend was the known id: not run
    server.release.set()
    assert result_of(handle).outcome == GoTo.Result.OUTCOME_REACHED


def test_a_goal_rejected_with_its_response_lost_yields_no_result(ros, monkeypatch):
    monkeypatch.setattr(actions, 'RESEND_S', 1.0)
    server = Server(ros, accept=False)
    with ros.paused() as node:
        client = ActionClient(node, GoTo, 'resend_go_to')
    connect(client)
    handle = send(LosingFirstResponse(client), go_to(1.0, 0.0))
    assert server.requests == 2  # the resend ran the server's check again, and it refused
    answer = handle.get_result_async()
    wait_until(answer.done, 30, 'no answer to the result request')
    assert answer.result().status == GoalStatus.STATUS_UNKNOWN


def test_a_goal_never_answered_is_canceled_by_its_id_and_stops(ros):
    server = Server(ros)
    with ros.paused() as node:
        client = ActionClient(node, GoTo, 'resend_go_to')
    connect(client)
    lossy = LosingFirstResponse(client, lost=100)
    assert send_goal(lossy, go_to(1.0, 0.0), wait_s=3.0, resend_after_s=1.0) is None
    assert lossy.sent >= 2 and server.requests == 1  # sent again, run once
    # It ran with nobody following it: canceled by its id, it stops.
    assert server.canceled.wait(30.0), 'the unanswered goal was not canceled'
