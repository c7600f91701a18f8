# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""PreparePool: concurrent preparation, results in arrival order, failures handed back."""

from __future__ import annotations

import threading
import time

import pytest

from waymark.memory.ingest.prepare_pool import PreparePool


def test_results_come_back_in_arrival_order_even_when_later_jobs_finish_first():
    def prepare(job: int) -> int:
        time.sleep(0.05 if job % 2 == 0 else 0.0)  # even jobs are slower
        return job * 10

    pool = PreparePool(prepare, workers=3)
    taken = []
    pending = list(range(10))
    while pending or pool:
        while pending and not pool.full:
            pool.submit(pending.pop(0))
        taken.append(pool.take())
    pool.close()
    assert taken == [(job, job * 10) for job in range(10)]


def test_jobs_run_concurrently_up_to_the_worker_count():
    running, peak, lock = 0, 0, threading.Lock()
    release = threading.Event()

    def prepare(job: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        release.wait(30.0)  # bounded: a failed test ends
        with lock:
            running -= 1
        return job

    pool = PreparePool(prepare, workers=2)
    pool.submit(1)
    pool.submit(2)
    assert pool.full
    with pytest.raises(RuntimeError):
        pool.submit(3)
    deadline = time.monotonic() + 10.0  # until both run at once, or they never will
    while peak < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    release.set()
    assert [pool.take(), pool.take()] == [(1, 1), (2, 2)]
    assert peak == 2
    pool.close()


def test_a_failing_job_returns_its_exception_and_the_next_still_completes():
    def prepare(job: str) -> str:
        if job == 'bad':
            raise ValueError('does not decode')
        return job.upper()

    pool = PreparePool(prepare, workers=2)
    pool.submit('bad')
    pool.submit('ok')
    job, result = pool.take()
    assert job == 'bad' and isinstance(result, ValueError)
    assert pool.take() == ('ok', 'OK')
    with pytest.raises(IndexError):
        pool.take()
    pool.close()


def test_close_hands_back_the_jobs_not_taken():
    release = threading.Event()
    pool = PreparePool(lambda job: release.wait(1.0) and job, workers=2)
    pool.submit('a')
    pool.submit('b')
    assert pool.close() == ['a', 'b']
    assert len(pool) == 0
    release.set()


@pytest.mark.parametrize('workers', [0, 65, 1.5, True])
def test_worker_count_is_checked(workers):
    with pytest.raises(ValueError):
        PreparePool(lambda job: job, workers=workers)
