# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Bounded waits on rclpy futures: they see an answer whether or not an executor thread is
free to run the future's done callbacks, and end at their timeout otherwise."""

from __future__ import annotations

import threading
import time

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.task import Future

from waymark_ros.ros.service_call import NO_ANSWER, NO_SERVICE, call_within, wait_done


def test_an_answer_is_seen_while_no_executor_thread_is_free():
    context = Context()
    rclpy.init(context=context)
    executor = SingleThreadedExecutor(context=context)  # never spun: every thread is busy
    try:
        future = Future()
        future._set_executor(executor)  # as the executor does when a response comes in
        callbacks = []
        future.add_done_callback(callbacks.append)
        threading.Timer(0.05, future.set_result, args=('answer',)).start()
        assert wait_done(future, 10.0) and future.result() == 'answer'
        assert callbacks == []  # the done callback still waits for an executor thread
    finally:
        executor.shutdown()
        rclpy.shutdown(context=context)


def test_a_wait_ends_at_its_timeout_with_no_answer():
    started = time.monotonic()
    assert not wait_done(Future(), 0.05)
    assert time.monotonic() - started >= 0.05


class _Client:
    """A service client whose service is up or not and answers or not."""

    def __init__(self, up: bool, answer: object | None) -> None:
        self.up, self.answer, self.dropped = up, answer, []

    def wait_for_service(self, timeout_sec: float) -> bool:
        return self.up

    def call_async(self, request) -> Future:
        future = Future()
        if self.answer is not None:
            future.set_result(self.answer)
        return future

    def remove_pending_request(self, future: Future) -> None:
        self.dropped.append(future)


def test_a_call_says_whether_the_service_was_missing_or_silent_and_drops_its_request():
    assert call_within(_Client(up=False, answer=None), 'request', 0.05) == (None, NO_SERVICE)
    silent = _Client(up=True, answer=None)
    assert call_within(silent, 'request', 0.05) == (None, NO_ANSWER)
    assert len(silent.dropped) == 1
    answering = _Client(up=True, answer='response')
    assert call_within(answering, 'request', 5.0) == ('response', '')
    assert answering.dropped == []
