# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The pre-stop rule and post-stop certification, over every claim, verdict and switch."""

from __future__ import annotations

import itertools

import pytest

from waymark.tasks.checks import CheckSwitches, StopChecks
from waymark.tasks.judge import JudgeInput, MechanicalRecord
from waymark.tasks.outcomes import Claim, JudgeVerdict, VerdictKind


class ScriptedJudge:
    """A judge double answering from a list of verdicts, recording what it was shown."""

    source = 'scripted'

    def __init__(self, *verdicts: VerdictKind) -> None:
        self.verdicts = list(verdicts)
        self.seen: list[JudgeInput] = []

    def judge(self, task: JudgeInput, deadline: float | None = None) -> JudgeVerdict:
        self.seen.append(task)
        kind = self.verdicts.pop(0)
        return JudgeVerdict(
            kind, evidence=f'saw {kind.value}', source=self.source, steps=task.record.steps_used
        )


def evidence(steps: int) -> JudgeInput:
    record = MechanicalRecord(task_number=1, steps_used=steps, step_budget=16, frame_count=4)
    return JudgeInput(record=record, frames=(), goal_text='the pharmacy')


@pytest.mark.parametrize(('claim', 'verdict'), list(itertools.product(Claim, VerdictKind)))
def test_the_first_claim_is_refused_iff_a_definite_verdict_differs_from_it(claim, verdict):
    checks = StopChecks(ScriptedJudge(verdict))
    decision = checks.request_stop(claim, evidence(3))
    refused = verdict is not VerdictKind.UNKNOWN and verdict.value != claim.value
    assert decision.granted is not refused
    assert decision.verdict is not None and decision.verdict.verdict is verdict
    assert decision.evidence == f'saw {verdict.value}'


@pytest.mark.parametrize('claim', list(Claim))
@pytest.mark.parametrize('first', list(VerdictKind))
def test_with_the_digest_limit_later_claims_are_granted_without_a_check(claim, first):
    judge = ScriptedJudge(first)  # a second check would find the script used up
    checks = StopChecks(judge, CheckSwitches(precheck_limit=1))
    checks.request_stop(Claim.COMPLETE, evidence(3))
    # A recovery runs more steps in the same task; the task's one check is spent.
    later = checks.request_stop(claim, evidence(9))
    assert later.granted and later.verdict is None and later.evidence == ''
    assert len(judge.seen) == 1 and checks.prechecked


def test_by_default_a_later_claim_is_checked_and_refused_when_the_judge_is_sure():
    judge = ScriptedJudge(VerdictKind.INCOMPLETE, VerdictKind.INCOMPLETE, VerdictKind.COMPLETE)
    checks = StopChecks(judge)
    assert not checks.request_stop(Claim.COMPLETE, evidence(3)).granted
    second = checks.request_stop(Claim.COMPLETE, evidence(6))
    assert not second.granted and second.evidence == 'saw incomplete'
    assert checks.request_stop(Claim.COMPLETE, evidence(9)).granted
    assert checks.certify(evidence(9)).verdict is VerdictKind.COMPLETE  # the latest, reused
    assert len(judge.seen) == 3


def test_claims_past_the_limit_are_granted_so_a_wrong_judge_cannot_hold_the_robot():
    judge = ScriptedJudge(*[VerdictKind.INCOMPLETE] * 2)
    checks = StopChecks(judge, CheckSwitches(precheck_limit=2))
    decisions = [checks.request_stop(Claim.COMPLETE, evidence(n)) for n in (2, 4, 6)]
    assert [d.granted for d in decisions] == [False, False, True]
    assert decisions[2].verdict is None and checks.prechecked


@pytest.mark.parametrize('limit', [0, 21, 1.0, True])
def test_a_precheck_limit_out_of_range_is_refused(limit):
    with pytest.raises(ValueError, match='precheck_limit'):
        CheckSwitches(precheck_limit=limit)


def test_a_new_task_gets_its_own_first_check():
    judge = ScriptedJudge(VerdictKind.INCOMPLETE, VerdictKind.INCOMPLETE)
    assert not StopChecks(judge).request_stop(Claim.COMPLETE, evidence(2)).granted
    assert not StopChecks(judge).request_stop(Claim.COMPLETE, evidence(2)).granted


@pytest.mark.parametrize('claim', list(Claim))
def test_with_the_precheck_off_every_claim_is_granted_unchecked(claim):
    judge = ScriptedJudge()
    checks = StopChecks(judge, CheckSwitches(precheck=False))
    for steps in (1, 2):
        decision = checks.request_stop(claim, evidence(steps))
        assert decision.granted and decision.verdict is None
    assert judge.seen == [] and not checks.prechecked


@pytest.mark.parametrize('verdict', list(VerdictKind))
def test_certification_reuses_the_precheck_when_no_step_was_taken_since(verdict):
    judge = ScriptedJudge(verdict)
    checks = StopChecks(judge)
    decision = checks.request_stop(Claim.COMPLETE, evidence(5))
    assert checks.certify(evidence(5)) is decision.verdict
    assert len(judge.seen) == 1


def test_certification_judges_afresh_after_more_steps():
    judge = ScriptedJudge(VerdictKind.INCOMPLETE, VerdictKind.COMPLETE)
    checks = StopChecks(judge)
    assert not checks.request_stop(Claim.COMPLETE, evidence(5)).granted
    final = evidence(8)
    certificate = checks.certify(final)
    assert certificate is not None and certificate.verdict is VerdictKind.COMPLETE
    assert certificate.steps == 8 and judge.seen[-1] is final


@pytest.mark.parametrize('verdict', list(VerdictKind))
def test_certification_without_a_precheck_judges_the_final_evidence(verdict):
    judge = ScriptedJudge(verdict)
    checks = StopChecks(judge, CheckSwitches(precheck=False))
    checks.request_stop(Claim.COMPLETE, evidence(5))
    certificate = checks.certify(evidence(5))
    assert certificate is not None and certificate.verdict is verdict
    assert len(judge.seen) == 1


@pytest.mark.parametrize('precheck', [True, False])
def test_with_certification_off_there_is_no_certificate(precheck):
    judge = ScriptedJudge(VerdictKind.COMPLETE)
    checks = StopChecks(judge, CheckSwitches(precheck=precheck, certify=False))
    checks.request_stop(Claim.COMPLETE, evidence(5))
    assert checks.certify(evidence(6)) is None
    assert len(judge.seen) == (1 if precheck else 0)
