# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Admission of questions: a bounded number run, a bounded number wait, the rest are told.

An agent loop holds a thread and an LLM slot for up to its deadline, so questions are
let in through `Admission`: at most `slots` run at once, at most `queue_length` more wait
for a slot in arrival order, and any other is refused at once as busy, with the queue's
length. A waiting question gives up when its deadline passes, so every question learns
its fate by its deadline, and none waits on a lock without a bound. A waiting question
that is cancelled (an Ask goal) leaves the queue within `CANCEL_POLL_S`.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

ADMITTED, BUSY, TIMED_OUT, CANCELLED = 'admitted', 'busy', 'timed_out', 'cancelled'
# How often a waiting question checks whether it was cancelled.
CANCEL_POLL_S = 0.1


@dataclass(frozen=True)
class Ticket:
    """The outcome of `Admission.enter`. Release an admitted ticket exactly once."""

    outcome: str  # ADMITTED, BUSY, TIMED_OUT or CANCELLED
    queue_length: int  # questions waiting when this one was let in or turned away
    waited_s: float = 0.0


class Admission:
    """Slots for running questions and a first-come first-served queue for waiting ones;
    safe to share between threads."""

    def __init__(self, slots: int, queue_length: int) -> None:
        if slots < 1 or queue_length < 0:
            raise ValueError(f'need slots >= 1 and queue_length >= 0, got {slots}, {queue_length}')
        self.slots = slots
        self.queue_length = queue_length
        self._running = 0
        self._waiting: deque[int] = deque()
        self._numbers = itertools.count()
        self._changed = threading.Condition()

    def enter(self, deadline: float, cancelled: Callable[[], bool] = lambda: False) -> Ticket:
        """Run now, wait in the queue until a slot frees, `deadline` (a
        `time.monotonic()` instant) passes or `cancelled()` turns true, or be refused when
        the queue is full."""
        started = time.monotonic()
        with self._changed:
            if self._running < self.slots and not self._waiting:
                self._running += 1
                return Ticket(ADMITTED, 0)
            if len(self._waiting) >= self.queue_length:
                return Ticket(BUSY, len(self._waiting))
            number = next(self._numbers)
            self._waiting.append(number)
            queued = len(self._waiting)
            try:
                while not (self._waiting[0] == number and self._running < self.slots):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return Ticket(TIMED_OUT, queued, time.monotonic() - started)
                    if cancelled():
                        return Ticket(CANCELLED, queued, time.monotonic() - started)
                    self._changed.wait(min(left, CANCEL_POLL_S))
                self._running += 1
                return Ticket(ADMITTED, queued, time.monotonic() - started)
            finally:
                self._waiting.remove(number)
                self._changed.notify_all()  # the next in line may be at the head now

    @contextmanager
    def slot(
        self, deadline: float, cancelled: Callable[[], bool] = lambda: False
    ) -> Iterator[Ticket]:
        """`enter` for the length of a block: an admitted ticket's slot is released when
        the block ends, however it ends."""
        ticket = self.enter(deadline, cancelled)
        try:
            yield ticket
        finally:
            if ticket.outcome == ADMITTED:
                self.release()

    def refusal(self, ticket: Ticket, deadline_s: float) -> str:
        """Why a question that was not admitted gets no answer, in one line for its
        asker; `deadline_s` is the time it was given from its arrival."""
        if ticket.outcome == BUSY:
            running, _ = self.load()
            return (
                f'busy: {running} questions are being answered and {ticket.queue_length} '
                'wait; ask again later'
            )
        if ticket.outcome == CANCELLED:
            return f'cancelled after {ticket.waited_s:.1f} s in the queue'
        return (
            f'timeout: waited {ticket.waited_s:.1f} s for a free agent loop, '
            f'{ticket.queue_length} in the queue, until the deadline of {deadline_s:g} s passed'
        )

    def release(self) -> None:
        with self._changed:
            if self._running <= 0:
                raise RuntimeError('released a slot that was not taken')
            self._running -= 1
            self._changed.notify_all()

    def load(self) -> tuple[int, int]:
        """(running, waiting) now."""
        with self._changed:
            return self._running, len(self._waiting)
