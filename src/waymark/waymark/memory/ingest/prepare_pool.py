# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Keyframe preparation on several threads, handed back in arrival order.

Preparing a keyframe (decode, OCR, embeddings) is most of ingest's cost, and OCR does not
get faster with more ONNX Runtime threads per call on this kind of CPU (measured: 4.0
frames/s with one thread or two), while two calls side by side on one thread each do
twice as many. So keyframes are prepared concurrently, and committed one by one in the
order they arrived: memory numbers entries densely in arrival order, and segments need
their frames in time order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

Job = TypeVar('Job')
Result = TypeVar('Result')


class PreparePool(Generic[Job, Result]):
    """At most `workers` jobs in preparation; `take` returns the oldest when it is ready.

    A job whose preparation raised comes back with the exception instead of a result,
    so the caller decides what a failure means.
    """

    def __init__(self, prepare: Callable[[Job], Result], workers: int = 2) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 64:
            raise ValueError(f'workers must be an integer in [1, 64], got {workers!r}')
        self.workers = workers
        self._prepare = prepare
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix='prepare')
        self._pending: deque[tuple[Job, Future]] = deque()

    def __len__(self) -> int:
        return len(self._pending)

    @property
    def full(self) -> bool:
        return len(self._pending) >= self.workers

    def submit(self, job: Job) -> None:
        if self.full:
            raise RuntimeError(f'{self.workers} jobs already in preparation')
        self._pending.append((job, self._executor.submit(self._prepare, job)))

    def take(self) -> tuple[Job, Result | Exception]:
        """The oldest job and its result (or exception), waiting for it if needed."""
        if not self._pending:
            raise IndexError('no job in preparation')
        job, future = self._pending.popleft()
        try:
            return job, future.result()
        except Exception as error:
            return job, error

    def close(self) -> list[Job]:
        """Stop; jobs not yet taken are returned (their preparation is abandoned)."""
        left = [job for job, _ in self._pending]
        for _, future in self._pending:
            future.cancel()
        self._pending.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)
        return left
