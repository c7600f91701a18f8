# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Task-layer message conversions, built without DDS: every enumeration has its constant,
and every reply has every field set from the record, on every path."""

from __future__ import annotations

import json
import math

import pytest
from sensor_msgs.msg import CompressedImage

from waymark.geometry import yaw_from_quaternion
from waymark.tasks.ledger import RecordPage, UnreadableFile
from waymark.tasks.outcomes import (
    Budget,
    Claim,
    JudgeVerdict,
    LedgerStatus,
    Phase,
    Spent,
    TerminationReason,
    VerdictKind,
)
from waymark.tasks.records import GoalModality, StopPose, TaskGoal, TaskRecord
from waymark_interfaces.action import RunTask
from waymark_interfaces.msg import TaskSummary
from waymark_interfaces.srv import GetTask
from waymark_ros.nodes.task import task_msgs

RESULT = RunTask.Result
ENUMS = [
    ('STATUS', LedgerStatus),
    ('TERMINATION', TerminationReason),
    ('CLAIM', Claim),
    ('VERDICT', VerdictKind),
]


def _record(**details) -> TaskRecord:
    details.setdefault('claim', Claim.COMPLETE)
    return TaskRecord(
        't000007-0123abcd',
        'run-1',
        7,
        TaskGoal(GoalModality.TEXT, 'the sign that says EXIT'),
        started_ns=1_000_000_000,
        ended_ns=61_500_000_000,
        **details,
    )


CERTIFIED = _record(
    claim_evidence='EXIT in view 2',
    certificate=JudgeVerdict(VerdictKind.COMPLETE, 'EXIT read in view 2', source='ocr'),
    places=('hall', 'stairs'),
    handover='Found the exit sign past the stairs.',
    spent=Spent(58.5, 12.25, 6, attempts=2, recoveries=1),
    stop_pose=StopPose(3.0, -1.5, math.pi / 2, 'map', 4),
)


@pytest.mark.parametrize(('prefix', 'kind'), ENUMS)
@pytest.mark.parametrize('message', [TaskSummary, RESULT])
def test_every_member_has_its_own_constant_with_the_same_value_in_both_messages(
    prefix, kind, message
):
    values = [getattr(message, f'{prefix}_{member.name}') for member in kind]
    assert len(set(values)) == len(values) and 0 not in values
    for member in kind:
        assert getattr(message, f'{prefix}_{member.name}') == getattr(
            TaskSummary, f'{prefix}_{member.name}'
        )
    if prefix in ('STATUS', 'TERMINATION'):
        for member, value in zip(kind, values, strict=True):
            assert task_msgs._member(message, prefix, kind, value) is member


def test_status_and_termination_map_both_ways_and_refuse_other_values():
    for status in LedgerStatus:
        constant = task_msgs.status_constant(status)
        assert task_msgs.status_from_constant(constant) is status
        assert task_msgs.status_from_constant(task_msgs.status_constant(status, RESULT), RESULT)
    for reason in TerminationReason:
        assert task_msgs.termination_from_constant(task_msgs.termination_constant(reason)) is reason
    with pytest.raises(ValueError, match='not a STATUS'):
        task_msgs.status_from_constant(RESULT.STATUS_REFUSED, RESULT)
    with pytest.raises(ValueError, match='not a TERMINATION'):
        task_msgs.termination_from_constant(0)
    assert task_msgs.claim_constant(None) == TaskSummary.CLAIM_NONE
    assert task_msgs.verdict_constant(None, RESULT) == RESULT.VERDICT_NONE


def _xyzw(q) -> tuple[float, float, float, float]:
    return (q.x, q.y, q.z, q.w)


def test_every_phase_has_its_feedback_constant():
    values = {task_msgs.phase_constant(phase) for phase in Phase}
    assert len(values) == len(Phase) and 0 not in values


def test_a_certified_record_becomes_a_result_with_every_field_from_it():
    result = task_msgs.run_task_result(CERTIFIED, 'certified')
    assert result.status == RESULT.STATUS_CERTIFIED
    assert result.termination == RESULT.TERMINATION_CLOSED
    assert (result.task_id, result.message) == ('t000007-0123abcd', 'certified')
    assert result.claim == RESULT.CLAIM_COMPLETE and result.claim_evidence == 'EXIT in view 2'
    assert result.verdict == RESULT.VERDICT_COMPLETE
    assert (result.evidence, result.verdict_source, result.verdict_error) == (
        'EXIT read in view 2',
        'ocr',
        '',
    )
    assert result.has_stop and result.map_epoch == 4
    pose = result.stop_pose
    assert pose.header.frame_id == 'map' and pose.header.stamp.sec == 61
    assert (pose.pose.position.x, pose.pose.position.y) == (3.0, -1.5)
    assert yaw_from_quaternion(_xyzw(pose.pose.orientation)) == pytest.approx(math.pi / 2)
    assert list(result.places) == ['hall', 'stairs']
    assert result.handover == 'Found the exit sign past the stairs.'
    assert (result.attempts, result.recoveries, result.agent_steps) == (2, 1, 6)
    assert (result.elapsed_s, result.distance_m) == (58.5, 12.25)


@pytest.mark.parametrize(
    ('details', 'status', 'termination', 'claim', 'verdict'),
    [
        ({}, 'STATUS_CLAIMED', 'TERMINATION_CLOSED', 'CLAIM_COMPLETE', 'VERDICT_NONE'),
        (
            {'claim': Claim.INCOMPLETE, 'certificate': JudgeVerdict(VerdictKind.INCOMPLETE)},
            'STATUS_NOT_DONE',
            'TERMINATION_CLOSED',
            'CLAIM_INCOMPLETE',
            'VERDICT_INCOMPLETE',
        ),
        (
            {'certificate': JudgeVerdict.failed('vlm', 'server down')},
            'STATUS_UNRESOLVED',
            'TERMINATION_CLOSED',
            'CLAIM_COMPLETE',
            'VERDICT_UNKNOWN',
        ),
        (
            {'claim': None, 'stop_reason': TerminationReason.INTERRUPTED},
            'STATUS_STOPPED',
            'TERMINATION_INTERRUPTED',
            'CLAIM_NONE',
            'VERDICT_NONE',
        ),
    ],
)
def test_each_ledger_outcome_reaches_the_result_and_the_summary(
    details, status, termination, claim, verdict
):
    record = _record(**details)
    result = task_msgs.run_task_result(record, 'done')
    summary = task_msgs.task_summary(record)
    for message in (result, summary):
        kind = type(message)
        assert message.status == getattr(kind, status)
        assert message.termination == getattr(kind, termination)
        assert message.claim == getattr(kind, claim)
        assert message.verdict == getattr(kind, verdict)
    assert not result.has_stop and result.stop_pose.header.frame_id == ''
    if 'certificate' in details and details['certificate'].error:
        assert result.verdict_error == 'server down' and result.verdict_source == 'vlm'


def test_a_refusal_has_no_task_and_says_why():
    result = task_msgs.refused_result('unknown place "attic"')
    assert result.status == RESULT.STATUS_REFUSED and result.task_id == ''
    assert result.termination == RESULT.TERMINATION_NONE
    assert result.message == 'unknown place "attic"' and not result.has_stop
    with pytest.raises(ValueError, match='why'):
        task_msgs.refused_result('')


def test_a_reply_missing_a_field_is_refused_not_sent_with_a_default():
    with pytest.raises(TypeError, match=r"missing \['verdict'\]"):
        task_msgs._filled(
            TaskSummary,
            **{
                name: getattr(TaskSummary(), name)
                for name in TaskSummary.get_fields_and_field_types()
                if name != 'verdict'
            },
        )
    with pytest.raises(TypeError, match=r"unknown \['colour'\]"):
        task_msgs._filled(GetTask.Response, colour='red')


def test_the_summary_carries_the_goal_spending_and_times():
    summary = task_msgs.task_summary(CERTIFIED)
    assert (summary.task_id, summary.run_id, summary.sequence) == ('t000007-0123abcd', 'run-1', 7)
    assert (summary.modality, summary.goal_text) == ('text', 'the sign that says EXIT')
    assert list(summary.places) == ['hall', 'stairs']
    assert (summary.attempts, summary.recoveries, summary.agent_steps) == (2, 1, 6)
    assert (summary.started.sec, summary.ended.sec, summary.ended.nanosec) == (1, 61, 500_000_000)


def test_get_task_returns_the_stored_json_and_its_main_fields():
    response = task_msgs.get_task_response(CERTIFIED)
    assert response.found and response.message == ''
    assert TaskRecord.from_json(response.record_json) == CERTIFIED
    assert json.loads(response.record_json)['status'] == 'CERTIFIED'
    assert response.summary.status == TaskSummary.STATUS_CERTIFIED
    assert response.evidence == 'EXIT read in view 2' and response.has_stop
    missing = task_msgs.get_task_missing('no task t000009-0123abcd')
    assert not missing.found and missing.record_json == '' and not missing.has_stop


def test_a_listing_keeps_unreadable_files_apart_with_their_reason():
    page = RecordPage((CERTIFIED,), (UnreadableFile('t000006-00000000.json', 'not JSON'),))
    response = task_msgs.list_tasks_response(page, truncated=True)
    assert response.success and response.truncated
    assert [task.task_id for task in response.tasks] == ['t000007-0123abcd']
    assert list(response.unreadable) == ['t000006-00000000.json: not JSON']
    failed = task_msgs.list_tasks_failed('ledger folder missing')
    assert not failed.success and list(failed.tasks) == [] and failed.message


def test_feedback_reports_the_budget_left_never_below_zero():
    spent = Spent(time_s=700.0, distance_m=50.0, agent_steps=20, attempts=3)
    feedback = task_msgs.run_task_feedback('t1', Phase.RECOVER, Budget(), spent, 'next candidate')
    assert feedback.phase == RunTask.Feedback.PHASE_RECOVER and feedback.attempt == 3
    assert (feedback.time_left_s, feedback.distance_left_m) == (0.0, 150.0)
    assert feedback.steps_left == 0 and feedback.message == 'next candidate'


def _goal(**fields) -> RunTask.Goal:
    return RunTask.Goal(**fields)


def test_goals_of_each_modality_are_accepted_with_budget_defaults_and_overrides():
    default = Budget(600.0, 200.0, 16)
    text = task_msgs.task_request(_goal(modality='text', text='  the red mug '), default)
    assert (text.modality, text.text, text.budget) == (GoalModality.TEXT, 'the red mug', default)
    photo = CompressedImage(format='jpeg', data=b'\xff\xd8 jpeg bytes')
    request = task_msgs.task_request(
        _goal(modality='photo', photo=photo, time_budget_s=60.0, agent_step_budget=4), default
    )
    assert request.photo == b'\xff\xd8 jpeg bytes' and request.photo_format == 'jpeg'
    assert request.budget == Budget(60.0, 200.0, 4)
    place = task_msgs.task_request(_goal(modality='place', place_name=' Charging  spot'), default)
    assert place.place_name == 'Charging spot' and place.text == ''


@pytest.mark.parametrize(
    ('fields', 'message'),
    [
        ({'modality': ''}, "modality must be one of 'text', 'photo', 'place'"),
        ({'modality': 'TEXT', 'text': 'mug'}, 'modality must be one of'),
        ({'modality': 'text', 'text': '   '}, 'a text goal needs text'),
        ({'modality': 'photo'}, 'a photo goal needs photo data'),
        ({'modality': 'place', 'place_name': ''}, 'must not be empty'),
        ({'modality': 'place', 'place_name': 'a/b'}, 'must not contain'),
        ({'modality': 'place', 'place_name': 'hall', 'text': 'x'}, 'does not use text'),
        ({'modality': 'text', 'text': 'mug', 'place_name': 'hall'}, 'does not use place_name'),
        ({'modality': 'text', 'text': 'x' * 2001}, 'at most 2000'),
        ({'modality': 'text', 'text': 'mug', 'time_budget_s': -1.0}, 'time_budget_s must be'),
        ({'modality': 'text', 'text': 'mug', 'distance_budget_m': math.nan}, 'distance_budget'),
        ({'modality': 'text', 'text': 'mug', 'time_budget_s': 1e9}, 'bounded'),
        ({'modality': 'text', 'text': 'mug', 'agent_step_budget': 5000}, 'agent_steps'),
    ],
)
def test_a_malformed_goal_is_refused_with_the_reason(fields, message):
    with pytest.raises(ValueError, match=message.replace('(', r'\(')):
        task_msgs.task_request(_goal(**fields), Budget())


def test_a_photo_on_a_text_goal_or_over_the_limit_is_refused():
    photo = CompressedImage(format='png', data=b'x' * 11)
    with pytest.raises(ValueError, match='does not use photo'):
        task_msgs.task_request(_goal(modality='text', text='mug', photo=photo), Budget())
    with pytest.raises(ValueError, match='11 bytes, at most 10'):
        task_msgs.task_request(_goal(modality='photo', photo=photo), Budget(), max_photo_bytes=10)
