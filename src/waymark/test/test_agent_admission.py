# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Admission of questions: slots, a first-come first-served queue, busy and timeout."""

from __future__ import annotations

import threading
import time

import pytest

from waymark.agent.admission import ADMITTED, BUSY, CANCELLED, TIMED_OUT, Admission, Ticket


def far() -> float:
    return time.monotonic() + 60.0


def wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + 10.0
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def test_slots_then_the_queue_then_busy_with_the_queue_length():
    admission = Admission(slots=2, queue_length=1)
    assert [admission.enter(far()).outcome for _ in range(2)] == [ADMITTED, ADMITTED]
    waiting: list = []
    waiter = threading.Thread(target=lambda: waiting.append(admission.enter(far())))
    waiter.start()
    wait_for(lambda: admission.load() == (2, 1), 'the third did not queue')
    refused = admission.enter(far())
    assert (refused.outcome, refused.queue_length) == (BUSY, 1)
    admission.release()
    waiter.join(10.0)
    [ticket] = waiting
    assert (ticket.outcome, ticket.queue_length) == (ADMITTED, 1)
    assert admission.load() == (2, 0)


def test_a_waiting_question_gives_up_at_its_deadline_and_leaves_the_queue():
    admission = Admission(slots=1, queue_length=2)
    assert admission.enter(far()).outcome == ADMITTED
    ticket = admission.enter(time.monotonic() + 0.05)
    assert ticket.outcome == TIMED_OUT and ticket.queue_length == 1 and ticket.waited_s > 0
    assert admission.load() == (1, 0)
    past = admission.enter(time.monotonic() - 1.0)  # a deadline already gone: no wait
    assert past.outcome == TIMED_OUT


def test_a_waiting_question_that_is_cancelled_leaves_the_queue():
    admission = Admission(slots=1, queue_length=1)
    assert admission.enter(far()).outcome == ADMITTED
    cancel = threading.Event()
    waiting: list = []
    waiter = threading.Thread(target=lambda: waiting.append(admission.enter(far(), cancel.is_set)))
    waiter.start()
    wait_for(lambda: admission.load() == (1, 1), 'not queued')
    cancel.set()
    waiter.join(10.0)
    [ticket] = waiting
    assert (ticket.outcome, ticket.queue_length) == (CANCELLED, 1)
    assert admission.load() == (1, 0)


def test_the_queue_is_first_come_first_served():
    admission = Admission(slots=1, queue_length=3)
    assert admission.enter(far()).outcome == ADMITTED
    order: list[int] = []

    def wait(number: int) -> None:
        assert admission.enter(far()).outcome == ADMITTED
        order.append(number)
        admission.release()

    threads = []
    for number in range(3):
        threads.append(threading.Thread(target=wait, args=(number,)))
        threads[-1].start()
        wait_for(lambda n=number: admission.load()[1] == n + 1, 'not queued')
    admission.release()
    for thread in threads:
        thread.join(10.0)
    assert order == [0, 1, 2]
    assert admission.load() == (0, 0)


def test_without_a_queue_a_question_beyond_the_slots_is_busy_at_once():
    admission = Admission(slots=1, queue_length=0)
    assert admission.enter(far()).outcome == ADMITTED
    assert admission.enter(far()).outcome == BUSY
    admission.release()
    assert admission.enter(far()).outcome == ADMITTED


def test_bad_sizes_and_a_release_without_a_slot_are_errors():
    with pytest.raises(ValueError, match='slots >= 1'):
        Admission(0, 1)
    with pytest.raises(ValueError, match='queue_length >= 0'):
        Admission(1, -1)
    with pytest.raises(RuntimeError, match='not taken'):
        Admission(1, 0).release()


def test_a_slot_is_released_when_its_block_ends_however_it_ends():
    admission = Admission(slots=1, queue_length=0)
    with pytest.raises(KeyError), admission.slot(far()) as ticket:
        assert ticket.outcome == ADMITTED and admission.load() == (1, 0)
        raise KeyError('a bug in the answer')
    assert admission.load() == (0, 0)
    with admission.slot(far()), admission.slot(far()) as refused:
        assert refused.outcome == BUSY
    assert admission.load() == (0, 0)  # released once: the refused ticket had no slot


def test_each_refusal_says_why_with_the_queue_and_the_deadline():
    admission = Admission(slots=2, queue_length=0)
    assert [admission.enter(far()).outcome for _ in range(2)] == [ADMITTED, ADMITTED]
    busy = admission.enter(far())
    assert busy.outcome == BUSY
    assert admission.refusal(busy, 30.0) == (
        'busy: 2 questions are being answered and 0 wait; ask again later'
    )
    late = Ticket(TIMED_OUT, 3, waited_s=29.96)
    assert admission.refusal(late, 30.0) == (
        'timeout: waited 30.0 s for a free agent loop, 3 in the queue, until the deadline '
        'of 30 s passed'
    )
    gone = Ticket(CANCELLED, 1, waited_s=0.42)
    assert admission.refusal(gone, 30.0) == 'cancelled after 0.4 s in the queue'
