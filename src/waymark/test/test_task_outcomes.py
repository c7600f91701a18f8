# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import pytest

from waymark.tasks.outcomes import (
    Budget,
    Claim,
    JudgeVerdict,
    LedgerStatus,
    Scope,
    Spent,
    TerminationReason,
    VerdictKind,
    ledger_status,
)


@pytest.mark.parametrize(
    ('claim', 'verdict', 'status'),
    [
        (Claim.COMPLETE, VerdictKind.COMPLETE, LedgerStatus.CERTIFIED),
        (Claim.INCOMPLETE, VerdictKind.COMPLETE, LedgerStatus.CERTIFIED),
        (Claim.COMPLETE, VerdictKind.INCOMPLETE, LedgerStatus.NOT_DONE),
        (Claim.COMPLETE, VerdictKind.UNKNOWN, LedgerStatus.UNRESOLVED),
    ],
)
def test_the_certificate_sets_the_status_of_a_claimed_task(claim, verdict, status):
    assert ledger_status(claim, JudgeVerdict(verdict)) == (status, TerminationReason.CLOSED)


def test_an_unchecked_claim_is_claimed_and_no_claim_is_a_stop_whatever_the_judge_said():
    assert ledger_status(Claim.COMPLETE, None)[0] is LedgerStatus.CLAIMED
    assert ledger_status(None, JudgeVerdict(VerdictKind.COMPLETE))[0] is LedgerStatus.STOPPED


def test_a_failed_check_is_unknown():
    failed = JudgeVerdict.failed('vlm', 'server down', steps=3)
    assert failed.verdict is VerdictKind.UNKNOWN and not failed.verdict.definite
    assert failed.error == 'server down' and failed.steps == 3


def test_scopes_are_ordered_narrowest_first():
    assert Scope.ATTEMPT < Scope.PLACE < Scope.ROOM < Scope.FLOOR < Scope.HOUSE


def test_the_first_exhausted_budget_ends_the_task():
    budget = Budget(time_s=10.0, distance_m=5.0, agent_steps=3)
    assert Spent().exhausted(budget) is None
    assert Spent(distance_m=5.0).exhausted(budget) is TerminationReason.DISTANCE_BUDGET
    assert Spent(agent_steps=3).exhausted(budget) is TerminationReason.STEP_BUDGET
    assert Spent(time_s=11.0, agent_steps=3).exhausted(budget) is TerminationReason.TIME_BUDGET
    with pytest.raises(ValueError):
        Budget(time_s=0.0)
    with pytest.raises(ValueError):
        Budget(agent_steps=0)


def test_words_read_as_their_values_in_text():
    assert str(LedgerStatus.NOT_DONE) == 'NOT DONE' and f'{Claim.COMPLETE:>9}' == ' complete'
    assert LedgerStatus('CERTIFIED') is LedgerStatus.CERTIFIED
