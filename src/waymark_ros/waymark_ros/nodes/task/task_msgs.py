# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Task-layer messages <-> the ledger's records, as pure functions tested without DDS.

Every reply is built by `_filled`, which takes every field of the message by name and
refuses a missing or unknown one: no result goes out with a field left at its default by
oversight, and a field added to a message fails here until it is filled on every path.
Enumerations map to the messages' constants by member name (`STATUS_NOT_DONE` for
`LedgerStatus.NOT_DONE`), so the mapping has no table of its own to drift.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from geometry_msgs.msg import PoseStamped

from waymark.geometry import Pose, quaternion_from_yaw
from waymark.tasks.ledger import RecordPage
from waymark.tasks.outcomes import (
    Budget,
    Claim,
    LedgerStatus,
    Phase,
    Spent,
    TerminationReason,
    VerdictKind,
)
from waymark.tasks.places import clean_name
from waymark.tasks.records import GoalModality, StopPose, TaskRecord
from waymark_interfaces.action import RunTask
from waymark_interfaces.msg import TaskSummary
from waymark_interfaces.srv import GetTask, ListTasks
from waymark_ros.ros.conversions import ns_to_stamp, pose_stamped

DEFAULT_MAX_TEXT_CHARS = 2_000
DEFAULT_MAX_PHOTO_BYTES = 10_000_000
_UINT32_MAX = 2**32 - 1
_Message = TypeVar('_Message')
_Member = TypeVar('_Member', bound=Enum)
_Result = RunTask.Result
_Feedback = RunTask.Feedback


def status_constant(status: LedgerStatus, message: type = TaskSummary) -> int:
    """The STATUS_* constant of `status` in `message` (TaskSummary or RunTask.Result)."""
    return _constant(message, 'STATUS', status)


def termination_constant(reason: TerminationReason, message: type = TaskSummary) -> int:
    return _constant(message, 'TERMINATION', reason)


def claim_constant(claim: Claim | None, message: type = TaskSummary) -> int:
    return _constant(message, 'CLAIM', claim)


def verdict_constant(verdict: VerdictKind | None, message: type = TaskSummary) -> int:
    return _constant(message, 'VERDICT', verdict)


def phase_constant(phase: Phase) -> int:
    return _constant(_Feedback, 'PHASE', phase)


def status_from_constant(value: int, message: type = TaskSummary) -> LedgerStatus:
    """The ledger status a STATUS_* constant stands for; ValueError for any other value
    (STATUS_REFUSED included: a refused goal has no ledger status)."""
    return _member(message, 'STATUS', LedgerStatus, value)


def termination_from_constant(value: int, message: type = TaskSummary) -> TerminationReason:
    return _member(message, 'TERMINATION', TerminationReason, value)


def task_summary(record: TaskRecord) -> TaskSummary:
    spent = record.spent
    return _filled(
        TaskSummary,
        task_id=record.task_id,
        run_id=record.run_id,
        sequence=_uint32(record.sequence),
        modality=str(record.goal.modality),
        goal_text=record.goal.text,
        status=status_constant(record.status),
        termination=termination_constant(record.termination),
        claim=claim_constant(record.claim),
        verdict=verdict_constant(_verdict(record)),
        places=list(record.places),
        attempts=_uint32(spent.attempts),
        recoveries=_uint32(spent.recoveries),
        agent_steps=_uint32(spent.agent_steps),
        elapsed_s=float(spent.time_s),
        distance_m=float(spent.distance_m),
        started=ns_to_stamp(record.started_ns),
        ended=ns_to_stamp(record.ended_ns),
    )


def run_task_result(record: TaskRecord, message: str) -> RunTask.Result:
    """The result of a task the ledger has recorded."""
    certificate, spent = record.certificate, record.spent
    return _filled(
        _Result,
        status=status_constant(record.status, _Result),
        termination=termination_constant(record.termination, _Result),
        task_id=record.task_id,
        message=message,
        claim=claim_constant(record.claim, _Result),
        claim_evidence=record.claim_evidence,
        verdict=verdict_constant(_verdict(record), _Result),
        evidence='' if certificate is None else certificate.evidence,
        verdict_source='' if certificate is None else certificate.source,
        verdict_error='' if certificate is None else certificate.error,
        **_stop_fields(record),
        places=list(record.places),
        handover=record.handover,
        attempts=_uint32(spent.attempts),
        recoveries=_uint32(spent.recoveries),
        agent_steps=_uint32(spent.agent_steps),
        elapsed_s=float(spent.time_s),
        distance_m=float(spent.distance_m),
    )


def refused_result(message: str) -> RunTask.Result:
    """The result of a goal refused before a task began: nothing is in the ledger."""
    if not message:
        raise ValueError('a refusal must say why')
    return _filled(
        _Result,
        status=_Result.STATUS_REFUSED,
        termination=_Result.TERMINATION_NONE,
        task_id='',
        message=message,
        claim=_Result.CLAIM_NONE,
        claim_evidence='',
        verdict=_Result.VERDICT_NONE,
        evidence='',
        verdict_source='',
        verdict_error='',
        stop_pose=PoseStamped(),
        map_epoch=0,
        has_stop=False,
        places=[],
        handover='',
        attempts=0,
        recoveries=0,
        agent_steps=0,
        elapsed_s=0.0,
        distance_m=0.0,
    )


def run_task_feedback(
    task_id: str, phase: Phase, budget: Budget, spent: Spent, message: str
) -> RunTask.Feedback:
    """Where a task is and what it has left; nothing left is 0, never negative."""
    return _filled(
        _Feedback,
        phase=phase_constant(phase),
        task_id=task_id,
        attempt=_uint32(spent.attempts),
        time_left_s=max(0.0, float(budget.time_s - spent.time_s)),
        distance_left_m=max(0.0, float(budget.distance_m - spent.distance_m)),
        steps_left=_uint32(max(0, budget.agent_steps - spent.agent_steps)),
        message=message,
    )


def get_task_response(record: TaskRecord) -> GetTask.Response:
    certificate = record.certificate
    return _filled(
        GetTask.Response,
        found=True,
        message='',
        record_json=record.to_json(),
        summary=task_summary(record),
        claim_evidence=record.claim_evidence,
        evidence='' if certificate is None else certificate.evidence,
        handover=record.handover,
        **_stop_fields(record),
    )


def get_task_missing(message: str) -> GetTask.Response:
    """No such task, or its record cannot be read; `message` says which."""
    if not message:
        raise ValueError('a missing task needs the reason')
    return _filled(
        GetTask.Response,
        found=False,
        message=message,
        record_json='',
        summary=TaskSummary(),
        claim_evidence='',
        evidence='',
        handover='',
        stop_pose=PoseStamped(),
        map_epoch=0,
        has_stop=False,
    )


def list_tasks_response(page: RecordPage, truncated: bool) -> ListTasks.Response:
    return _filled(
        ListTasks.Response,
        success=True,
        message='',
        tasks=[task_summary(record) for record in page.records],
        truncated=truncated,
        unreadable=[f'{file.name}: {file.reason}' for file in page.unreadable],
    )


def list_tasks_failed(message: str) -> ListTasks.Response:
    if not message:
        raise ValueError('a failed listing must say why')
    return _filled(
        ListTasks.Response, success=False, message=message, tasks=[], truncated=False, unreadable=[]
    )


@dataclass(frozen=True)
class TaskRequest:
    """A RunTask goal checked field by field. The photo is still undecoded bytes: whether
    it decodes is checked next (`tasks.goal_photo`), before anything is stored."""

    modality: GoalModality
    text: str
    place_name: str
    photo: bytes
    photo_format: str
    budget: Budget


def task_request(
    goal: RunTask.Goal,
    default_budget: Budget,
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
    max_photo_bytes: int = DEFAULT_MAX_PHOTO_BYTES,
) -> TaskRequest:
    """ValueError naming the first thing wrong with `goal`: an unknown modality, a field
    the modality does not use (a goal means one thing), text or a photo over its limit, a
    bad place name, or a budget override that is negative, not finite or out of bounds."""
    try:
        modality = GoalModality(goal.modality)
    except ValueError:
        choices = ', '.join(repr(str(m)) for m in GoalModality)
        raise ValueError(f'modality must be one of {choices}, not {goal.modality!r}') from None
    photo = bytes(goal.photo.data)
    if len(goal.text) > max_text_chars:
        raise ValueError(f'text has {len(goal.text)} characters, at most {max_text_chars}')
    if len(photo) > max_photo_bytes:
        raise ValueError(f'photo has {len(photo)} bytes, at most {max_photo_bytes}')
    unused = {
        'text': bool(goal.text.strip()) and modality is GoalModality.PLACE,
        'photo': bool(photo) and modality is not GoalModality.PHOTO,
        'place_name': bool(goal.place_name) and modality is not GoalModality.PLACE,
    }
    for name, given in unused.items():
        if given:
            raise ValueError(f'a {modality} goal does not use {name}: leave it empty')
    if modality is GoalModality.TEXT and not goal.text.strip():
        raise ValueError('a text goal needs text')
    if modality is GoalModality.PHOTO and not photo:
        raise ValueError('a photo goal needs photo data')
    place_name = clean_name(goal.place_name) if modality is GoalModality.PLACE else ''
    return TaskRequest(
        modality,
        goal.text.strip(),
        place_name,
        photo,
        goal.photo.format if photo else '',
        _budget(goal, default_budget),
    )


def _budget(goal: RunTask.Goal, default: Budget) -> Budget:
    overrides = {
        'time_budget_s': goal.time_budget_s,
        'distance_budget_m': goal.distance_budget_m,
    }
    for name, value in overrides.items():
        if not (math.isfinite(value) and value >= 0.0):
            raise ValueError(f'{name} must be finite and >= 0 (0: the default), not {value}')
    return Budget(
        time_s=float(goal.time_budget_s) or default.time_s,
        distance_m=float(goal.distance_budget_m) or default.distance_m,
        agent_steps=int(goal.agent_step_budget) or default.agent_steps,
    )


def _verdict(record: TaskRecord) -> VerdictKind | None:
    return None if record.certificate is None else record.certificate.verdict


def _stop_fields(record: TaskRecord) -> dict[str, Any]:
    stop: StopPose | None = record.stop_pose
    if stop is None:
        return {'stop_pose': PoseStamped(), 'map_epoch': 0, 'has_stop': False}
    pose = Pose((float(stop.x), float(stop.y), 0.0), quaternion_from_yaw(stop.yaw))
    return {
        'stop_pose': pose_stamped(pose, stop.frame, record.ended_ns),
        'map_epoch': _uint32(stop.map_epoch),
        'has_stop': True,
    }


def _filled(message_type: type[_Message], /, **fields: Any) -> _Message:
    """`message_type` with every one of its fields given here, none left to its default."""
    names = set(message_type.get_fields_and_field_types())
    if set(fields) != names:
        missing, unknown = sorted(names - set(fields)), sorted(set(fields) - names)
        raise TypeError(f'{message_type.__name__}: fields missing {missing}, unknown {unknown}')
    return message_type(**fields)


def _constant(message: type, prefix: str, member: Enum | None) -> int:
    """NONE stands for an absent claim or verdict."""
    name = 'NONE' if member is None else member.name
    try:
        return getattr(message, f'{prefix}_{name}')
    except AttributeError:
        raise ValueError(f'{message.__name__} has no constant {prefix}_{name}') from None


def _member(message: type, prefix: str, kind: type[_Member], value: int) -> _Member:
    for member in kind:
        if getattr(message, f'{prefix}_{member.name}', None) == value:
            return member
    raise ValueError(f'{value} is not a {prefix}_* constant of a {kind.__name__}')


def _uint32(value: int) -> int:
    if not 0 <= value <= _UINT32_MAX:
        raise ValueError(f'{value} does not fit a uint32 field')
    return int(value)
