# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The client API against in-test servers (support.fake_stack): answers, drives, cancels,
timeouts and missing servers, with the node spun by the client or by the caller."""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import rclpy
from rclpy.executors import MultiThreadedExecutor

from waymark_interfaces.msg import Answer
from waymark_ros.client import NO_REPLY, SERVER_MISSING, Waymark
from waymark_testing.fake_stack import ANSWER_GOAL, SESSION, SESSION_FRAMES, FakeStack

pytestmark = pytest.mark.dds

_namespaces = itertools.count()


@pytest.fixture
def namespace() -> str:
    """Each test's own names, so no server of an earlier test is found."""
    return f'/client_test_{next(_namespaces)}'


@pytest.fixture
def user(namespace):
    """The caller's node, in no executor."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('user', namespace=namespace, context=context)
    yield node
    node.destroy_node()
    context.try_shutdown()


@pytest.fixture
def servers(namespace):
    made: list[FakeStack] = []

    def make(**options) -> FakeStack:
        made.append(FakeStack(namespace, **options))
        return made[-1]

    yield make
    for stack in made:
        stack.close()


def test_query_answers_with_the_goal_and_without_driving(user, servers):
    stack = servers()
    waymark = Waymark(user)
    assert waymark.wait_until_ready(timeout_s=30.0).ready

    result = waymark.query('Where is the pharmacy?')

    assert result.ok and result.status == 'answered', result.message
    assert result.answer.kind == Answer.KIND_POSITION and result.trace_id
    assert result.goal == pytest.approx(ANSWER_GOAL)
    assert 'goal sent' not in result.message and result.drive is None
    assert stack.questions == ['Where is the pharmacy?']


def test_ask_with_go_reports_the_steps_and_how_the_drive_ended(user, servers):
    servers()
    waymark = Waymark(user)
    seen = []

    result = waymark.ask('Take me to the bakery.', go=True, timeout_s=30.0, on_step=seen.append)

    assert result.ok, result.message
    assert [step.tool for step in result.steps] == ['search_text'] and len(seen) == 1
    assert result.drive is not None and result.drive.reached, result.drive
    assert result.drive.final == pytest.approx(ANSWER_GOAL) and result.drive.seconds == 0.5


def test_go_to_reaches_the_target_or_is_refused(user, servers):
    servers()
    waymark = Waymark(user)
    distances = []

    drive = waymark.go_to(3.0, -1.0, yaw=1.0, timeout_s=30.0, on_feedback=distances.append)
    refused = waymark.go_to(3.0, -1.0, frame_id='odom', timeout_s=30.0)

    assert drive.reached, drive.message
    assert drive.final == pytest.approx((3.0, -1.0, 1.0)) and drive.seconds >= 0.0
    assert [f.distance_remaining for f in distances] == [1.0]
    assert refused.outcome == 'refused' and 'odom' in refused.message
    assert not refused.reached


def test_a_late_reply_ends_no_reply_at_the_timeout(user, servers):
    stack = servers(delay_s=5.0)
    waymark = Waymark(user)
    assert waymark.wait_until_ready(timeout_s=30.0, servers=['reasoner']).ready

    started = time.monotonic()
    answer = waymark.query('Where is the library?', timeout_s=1.5)
    asked = waymark.ask('Where is the library?', timeout_s=1.5)
    took = time.monotonic() - started

    assert answer.status == NO_REPLY and not answer.ok and answer.answer == Answer()
    assert asked.status == NO_REPLY and 'canceled' in asked.message
    assert took < 6.0, f'{took:.1f} s for two calls of 1.5 s'
    assert stack.cancelled.wait(5.0), 'the timed-out Ask goal was left running'


def test_a_missing_server_ends_server_missing_after_the_server_wait(user, servers):
    servers(serve=['query', 'ask'])
    waymark = Waymark(user, server_wait_s=0.5)

    started = time.monotonic()
    drive = waymark.go_to(1.0, 1.0, timeout_s=30.0)
    listed = waymark.sessions(timeout_s=30.0)
    ready = waymark.wait_until_ready(timeout_s=2.0)

    assert drive.outcome == SERVER_MISSING and not drive.reached
    assert listed.status == SERVER_MISSING and listed.sessions == ()
    assert time.monotonic() - started < 10.0
    assert not ready.ready and set(ready.missing) == {'memory', 'navigator'}, ready.message


def test_cancel_stops_a_drive_from_another_thread(user, servers):
    stack = servers()
    stack.hold = True
    waymark = Waymark(user)
    started = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        drive = pool.submit(
            waymark.go_to, 5.0, 0.0, timeout_s=30.0, on_feedback=lambda _f: started.set()
        )
        assert started.wait(20.0), 'the drive did not start'
        assert waymark.cancel()
        result = drive.result(timeout=20.0)
    assert result.outcome == 'canceled', result.message
    assert stack.cancelled.is_set()
    assert not waymark.cancel()  # nothing left in flight


def test_cancel_stops_an_ask_being_answered(user, servers):
    servers(delay_s=30.0)
    waymark = Waymark(user)
    started = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        asked = pool.submit(waymark.ask, 'Where?', timeout_s=30.0, on_step=lambda _s: started.set())
        assert started.wait(20.0), 'no step came'
        assert waymark.cancel()
        result = asked.result(timeout=20.0)
    assert result.status == 'cancelled' and not result.ok


def test_calls_from_several_threads_share_the_node(user, servers):
    servers(delay_s=0.3)
    waymark = Waymark(user)
    questions = [f'Where is room {n}?' for n in range(6)]
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda q: waymark.query(q, timeout_s=30.0), questions))
    assert all(r.ok for r in results), [r.message for r in results]
    assert len({r.trace_id for r in results}) == len(questions)


def test_a_node_spun_by_the_caller_works_the_same(user, servers):
    servers()
    waymark = Waymark(user)  # before the executor spins the node
    executor = MultiThreadedExecutor(num_threads=2, context=user.context)
    executor.add_node(user)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        answer = waymark.ask('Where is the bakery?', go=True, timeout_s=30.0)
        drive = waymark.go_to(1.0, 2.0, timeout_s=30.0)
    finally:
        executor.shutdown()
        spinner.join(timeout=5.0)
    assert answer.ok and answer.drive is not None and answer.drive.reached, answer.message
    assert drive.reached, drive.message


def test_sessions_are_listed_and_deleted_only_when_confirmed(user, servers):
    servers()
    waymark = Waymark(user)

    listed = waymark.sessions(timeout_s=30.0)
    unconfirmed = waymark.delete_session(SESSION)
    deleted = waymark.delete_session(SESSION, confirm=True, timeout_s=30.0)

    assert listed.ok and [s.name for s in listed.sessions] == [SESSION]
    assert listed.sessions[0].frames == SESSION_FRAMES
    assert listed.sessions[0].end_ns == 10_000_000_000
    assert not unconfirmed.ok and 'confirm=True' in unconfirmed.message
    assert deleted.ok and deleted.frames_deleted == SESSION_FRAMES, deleted.message
