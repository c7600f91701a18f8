# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""One bounded service call, waited on a `threading.Event` rather than by spinning, so any
thread may make it (an executor thread included, when the client has a callback group the
executor can serve meanwhile)."""

from __future__ import annotations

import threading

NO_SERVICE = 'no service'
NO_ANSWER = 'no answer'


def call_within(client, request, timeout_s: float):
    """(response, '') or (None, NO_SERVICE or NO_ANSWER): the service must appear within
    `timeout_s`, then answer within `timeout_s`; a request left unanswered is dropped."""
    if not client.wait_for_service(timeout_sec=timeout_s):
        return None, NO_SERVICE
    done = threading.Event()
    future = client.call_async(request)
    future.add_done_callback(lambda _future: done.set())
    if not done.wait(timeout_s) and not future.done():
        client.remove_pending_request(future)
        return None, NO_ANSWER
    response = future.result()
    return (response, '') if response is not None else (None, NO_ANSWER)
