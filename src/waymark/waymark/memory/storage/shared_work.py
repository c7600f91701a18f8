# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Running a few jobs of one search on several threads without ever waiting for a thread
to be scheduled.

An exact scan of a large session is bound by one core's memory bandwidth, and faiss's
kernels release the GIL, so two threads halve it. But a helper thread on a busy machine
may not run for a scheduler tick (the reason scans do not use BLAS's threads), so the
searching thread takes every job no helper has started, and waits only for jobs already
running.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor


@functools.cache
def _helpers(count: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(count, thread_name_prefix='waymark-scan')


def run_shared(jobs: Sequence[Callable[[], None]], helpers: int) -> None:
    """Run every job, on this thread and up to `helpers` pool threads; re-raises the first
    error any job raised, once all started jobs have ended."""
    if helpers < 1 or len(jobs) < 2:
        for job in jobs:
            job()
        return
    claim_lock = threading.Lock()
    next_job = iter(range(len(jobs)))
    done = [threading.Event() for _ in jobs]
    errors: list[BaseException] = []

    def work() -> None:
        while True:
            with claim_lock:
                position = next(next_job, None)
            if position is None:
                return
            try:
                jobs[position]()
            except BaseException as error:  # handed to the searching thread
                errors.append(error)
            finally:
                done[position].set()

    pool = _helpers(int(helpers))
    for _ in range(min(int(helpers), len(jobs) - 1)):
        pool.submit(work)
    work()
    for event in done:
        event.wait()
    if errors:
        raise errors[0]
