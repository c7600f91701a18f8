# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Bounded waits for rclpy futures that any thread may make, an executor thread included.

A wait polls its future instead of waiting for a done callback: rclpy runs done callbacks
as executor tasks, so callers waiting for them in executor threads, every thread doing
so at once (a burst of questions), would sit out their timeouts with the answers in.
"""

from __future__ import annotations

import time

NO_SERVICE = 'no service'
NO_ANSWER = 'no answer'
# How often a waiting caller looks at its future: the most latency a wait adds.
POLL_S = 0.005


def wait_done(future, timeout_s: float) -> bool:
    """Whether `future` is done within `timeout_s` (returns at once when it is)."""
    deadline = time.monotonic() + timeout_s
    while not future.done():
        left = deadline - time.monotonic()
        if left <= 0.0:
            return False
        time.sleep(min(POLL_S, left))
    return True


def call_within(client, request, timeout_s: float):
    """(response, '') or (None, NO_SERVICE or NO_ANSWER): the service must appear within
    `timeout_s`, then answer within `timeout_s`; a request left unanswered is dropped."""
    if not client.wait_for_service(timeout_sec=timeout_s):
        return None, NO_SERVICE
    future = client.call_async(request)
    if not wait_done(future, timeout_s):
        client.remove_pending_request(future)
        return None, NO_ANSWER
    response = future.result()
    return (response, '') if response is not None else (None, NO_ANSWER)
