# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Rewards: only a verified outcome pays."""

from __future__ import annotations

import pytest

from waymark.lessons.cards import check_outcome_key
from waymark.lessons.rewards import (
    feedback_reward,
    person_task_outcome_key,
    task_outcome_key,
    task_reward,
)
from waymark.tasks.outcomes import LedgerStatus


@pytest.mark.parametrize(
    ('status', 'reward'),
    [
        (LedgerStatus.CERTIFIED, 1.0),
        (LedgerStatus.NOT_DONE, 0.0),
        (LedgerStatus.UNRESOLVED, None),
        (LedgerStatus.CLAIMED, None),
        (LedgerStatus.STOPPED, None),
    ],
)
def test_only_a_judged_task_pays(status, reward):
    assert task_reward(status) == reward


def test_every_ledger_status_has_a_decided_reward():
    decided = {status for status in LedgerStatus if task_reward(status) is not None}
    assert decided == {LedgerStatus.CERTIFIED, LedgerStatus.NOT_DONE}


def test_a_confirmation_pays_one_and_a_correction_zero():
    assert (feedback_reward(True), feedback_reward(False)) == (1.0, 0.0)


def test_a_persons_word_on_a_task_has_a_key_of_its_own():
    judge, person = task_outcome_key('t1'), person_task_outcome_key('t1')
    assert judge != person and check_outcome_key(judge) and check_outcome_key(person)
