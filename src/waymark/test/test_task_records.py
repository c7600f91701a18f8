# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import json

import pytest

from waymark.tasks.outcomes import (
    Claim,
    JudgeVerdict,
    LedgerStatus,
    Scope,
    Spent,
    TerminationReason,
    VerdictKind,
)
from waymark.tasks.records import (
    GoalModality,
    OpenTask,
    RecordFormatError,
    StopPose,
    TaskGoal,
    TaskRecord,
    open_task_from_json,
    open_task_to_json,
)

TASK = OpenTask('t000003-0a1b2c3d', 'run-7', 3, TaskGoal(GoalModality.TEXT, 'the red mug'), 100)


def _full_record() -> TaskRecord:
    return TaskRecord.for_task(
        TASK,
        ended_ns=900,
        claim=Claim.COMPLETE,
        claim_evidence='mug on the counter in view 2',
        pre_stop=JudgeVerdict(VerdictKind.COMPLETE, 'a red mug', ('kitchen',), 0.8, 'ocr', '', 5),
        certificate=JudgeVerdict(VerdictKind.COMPLETE, 'red mug, view 1', source='vlm', steps=7),
        handover='Kitchen searched; the mug is on the counter.',
        places=('kitchen', 'hall'),
        spent=Spent(41.5, 12.25, 7, 2, 1, [Scope.ATTEMPT, Scope.ROOM]),
        recovery_notes=('recovery-1.json',),
        stop_pose=StopPose(1.5, -2.0, 0.25, 'map', 3),
    )


def test_a_full_record_survives_the_round_trip_unchanged():
    record = _full_record()
    assert TaskRecord.from_json(record.to_json()) == record
    stored = json.loads(record.to_json())
    assert stored['status'] == 'CERTIFIED' and stored['termination'] == 'closed'
    assert stored['spent']['scopes'] == ['attempt', 'room']


def test_an_open_task_marker_survives_the_round_trip():
    photo = OpenTask('t000001-00000000', '', 1, TaskGoal(GoalModality.PHOTO, photo_ref='a.jpg'), 5)
    assert open_task_from_json(open_task_to_json(photo)) == photo


@pytest.mark.parametrize(
    ('claim', 'certificate', 'stop_reason', 'status', 'termination'),
    [
        (Claim.COMPLETE, VerdictKind.COMPLETE, None, LedgerStatus.CERTIFIED, 'closed'),
        (Claim.COMPLETE, VerdictKind.INCOMPLETE, None, LedgerStatus.NOT_DONE, 'closed'),
        (Claim.INCOMPLETE, VerdictKind.UNKNOWN, None, LedgerStatus.UNRESOLVED, 'closed'),
        (Claim.COMPLETE, None, None, LedgerStatus.CLAIMED, 'closed'),
        (None, None, TerminationReason.STEP_BUDGET, LedgerStatus.STOPPED, 'step_budget'),
        (None, VerdictKind.COMPLETE, TerminationReason.CANCELED, LedgerStatus.STOPPED, 'canceled'),
    ],
)
def test_every_status_path_is_derived_and_kept(
    claim, certificate, stop_reason, status, termination
):
    verdict = None if certificate is None else JudgeVerdict(certificate)
    record = TaskRecord.for_task(
        TASK, 200, claim=claim, stop_reason=stop_reason, certificate=verdict
    )
    assert (record.status, record.termination) == (status, termination)
    assert TaskRecord.from_json(record.to_json()) == record


def test_a_claim_and_a_stop_reason_exclude_each_other():
    with pytest.raises(ValueError, match='needs the reason'):
        TaskRecord.for_task(TASK, 200)
    with pytest.raises(ValueError, match='needs the reason'):
        TaskRecord.for_task(TASK, 200, stop_reason=TerminationReason.CLOSED)
    with pytest.raises(ValueError, match='closed, not stopped'):
        TaskRecord.for_task(TASK, 200, Claim.COMPLETE, TerminationReason.CANCELED)


def test_goals_need_their_content():
    with pytest.raises(ValueError, match='photo reference'):
        TaskGoal(GoalModality.PHOTO, 'a caption')
    with pytest.raises(ValueError, match='place goal needs text'):
        TaskGoal(GoalModality.PLACE, '  ')


def _edited(**changes) -> str:
    stored = json.loads(_full_record().to_json())
    stored.update(changes)
    return json.dumps(stored)


@pytest.mark.parametrize(
    ('text', 'message'),
    [
        (_edited(version=2), 'version 2; this build reads version 1'),
        (_edited(version=None), 'version None'),
        (_edited(status='NOT DONE'), 'disagrees'),
        (_edited(certificate=None), 'disagrees'),  # a CERTIFIED status with no certificate
        (_edited(surprise=1), 'surprise'),
        (_edited(claim='maybe'), 'claim'),
        (_edited(places='kitchen'), 'places'),
        (_edited(goal={'modality': 'photo', 'text': '', 'photo_ref': ''}), 'photo reference'),
        (_edited(ended_ns=1), 'end before'),
        (_edited(kind='open'), 'kind'),
        ('{"version": 1, "kind": "rec', 'not JSON'),
        ('[1]', 'JSON object'),
    ],
)
def test_unknown_versions_and_malformed_content_are_refused_with_a_clear_error(text, message):
    with pytest.raises(RecordFormatError, match=message):
        TaskRecord.from_json(text)
