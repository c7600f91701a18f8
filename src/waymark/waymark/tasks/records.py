# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the ledger keeps about one task, and its versioned JSON form.

A record's status is never stored on its own authority: it is derived from the claim and
the post-stop certificate by `ledger_status`, and a file whose stored status disagrees is
rejected as malformed. So a hand-edited or half-written file cannot turn a claim into a
success. Goal photos are kept as image-store references, never as bytes, so a record
stays small.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from waymark.model_text import validation_problems
from waymark.tasks.outcomes import (
    Claim,
    JudgeVerdict,
    LedgerStatus,
    Scope,
    Spent,
    TerminationReason,
    VerdictKind,
    Word,
    ledger_status,
)

RECORD_VERSION = 1
# Field caps when a file is read: a record is one task's summary, not a transcript.
_MAX_TEXT = 8_000
_MAX_ITEMS = 64


class RecordFormatError(ValueError):
    """A record or marker file that is not a valid record of a known version."""


class GoalModality(Word):
    TEXT = 'text'
    PHOTO = 'photo'
    PLACE = 'place'


@dataclass(frozen=True)
class TaskGoal:
    """What was asked. `text` is the description (text goals), the place name (place
    goals) or an optional caption (photo goals); `photo_ref` is an image-store reference."""

    modality: GoalModality
    text: str = ''
    photo_ref: str = ''

    def __post_init__(self) -> None:
        if self.modality is GoalModality.PHOTO and not self.photo_ref:
            raise ValueError('a photo goal needs a photo reference')
        if self.modality is not GoalModality.PHOTO and not self.text.strip():
            raise ValueError(f'a {self.modality} goal needs text')


@dataclass(frozen=True)
class StopPose:
    """Where the base stopped, in the map epoch it was measured in: a pose from another
    epoch means nothing without that epoch's alignment."""

    x: float
    y: float
    yaw: float
    frame: str
    map_epoch: int


@dataclass(frozen=True)
class OpenTask:
    """What the ledger knows of a task before it ends: enough to record it as stopped if
    the runner dies."""

    task_id: str
    run_id: str
    sequence: int
    goal: TaskGoal
    started_ns: int


@dataclass
class TaskRecord:
    """One closed task. `stop_reason` is set exactly when there is no claim; a claimed
    task's termination is CLOSED."""

    task_id: str
    run_id: str
    sequence: int
    goal: TaskGoal
    claim: Claim | None
    claim_evidence: str = ''
    pre_stop: JudgeVerdict | None = None
    certificate: JudgeVerdict | None = None
    stop_reason: TerminationReason | None = None
    handover: str = ''
    places: tuple[str, ...] = ()
    spent: Spent = field(default_factory=Spent)
    recovery_notes: tuple[str, ...] = ()
    stop_pose: StopPose | None = None
    started_ns: int = 0
    ended_ns: int = 0
    # The lessons the task's answers were given: its verified outcome calibrates them.
    lesson_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.claim is None:
            if self.stop_reason in (None, TerminationReason.CLOSED):
                raise ValueError('a task without a claim needs the reason it stopped')
        elif self.stop_reason is not None:
            raise ValueError(f'a claimed task is closed, not stopped ({self.stop_reason})')
        if self.sequence < 1:
            raise ValueError(f'sequence must be >= 1, got {self.sequence}')
        if self.ended_ns < self.started_ns:
            raise ValueError('a task cannot end before it started')

    @classmethod
    def for_task(
        cls,
        task: OpenTask,
        ended_ns: int,
        claim: Claim | None = None,
        stop_reason: TerminationReason | None = None,
        **details: Any,
    ) -> TaskRecord:
        """The record that closes `task`: its identity and start come from the marker."""
        return cls(
            task.task_id,
            task.run_id,
            task.sequence,
            task.goal,
            claim=claim,
            stop_reason=stop_reason,
            started_ns=task.started_ns,
            ended_ns=ended_ns,
            **details,
        )

    @property
    def status(self) -> LedgerStatus:
        return ledger_status(self.claim, self.certificate)[0]

    @property
    def termination(self) -> TerminationReason:
        return ledger_status(self.claim, self.certificate)[1] or self.stop_reason

    def to_json(self) -> str:
        return json.dumps(
            {
                'version': RECORD_VERSION,
                'kind': 'record',
                'task_id': self.task_id,
                'run_id': self.run_id,
                'sequence': self.sequence,
                'goal': _goal_dict(self.goal),
                'claim': self.claim,
                'claim_evidence': self.claim_evidence,
                'pre_stop': _verdict_dict(self.pre_stop),
                'certificate': _verdict_dict(self.certificate),
                'status': self.status,
                'termination': self.termination,
                'handover': self.handover,
                'places': list(self.places),
                'spent': {
                    'time_s': self.spent.time_s,
                    'distance_m': self.spent.distance_m,
                    'agent_steps': self.spent.agent_steps,
                    'attempts': self.spent.attempts,
                    'recoveries': self.spent.recoveries,
                    'scopes': [scope.name.lower() for scope in self.spent.scopes],
                },
                'recovery_notes': list(self.recovery_notes),
                'stop_pose': None if self.stop_pose is None else vars(self.stop_pose),
                'started_ns': self.started_ns,
                'ended_ns': self.ended_ns,
                'lesson_ids': list(self.lesson_ids),
            },
            ensure_ascii=False,
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> TaskRecord:
        """Parse a record; RecordFormatError names what is wrong."""
        data = _parse(text, _RecordFile, 'record')
        goal = _goal(data.goal)
        try:
            record = cls(
                data.task_id,
                data.run_id,
                data.sequence,
                goal,
                claim=data.claim,
                claim_evidence=data.claim_evidence,
                pre_stop=_verdict(data.pre_stop),
                certificate=_verdict(data.certificate),
                stop_reason=None if data.claim is not None else data.termination,
                handover=data.handover,
                places=tuple(data.places),
                spent=Spent(
                    data.spent.time_s,
                    data.spent.distance_m,
                    data.spent.agent_steps,
                    data.spent.attempts,
                    data.spent.recoveries,
                    [Scope[name.upper()] for name in data.spent.scopes],
                ),
                recovery_notes=tuple(data.recovery_notes),
                stop_pose=None
                if data.stop_pose is None
                else StopPose(**data.stop_pose.model_dump()),
                started_ns=data.started_ns,
                ended_ns=data.ended_ns,
                lesson_ids=tuple(data.lesson_ids),
            )
        except ValueError as error:
            raise RecordFormatError(f'inconsistent record: {error}') from error
        if (record.status, record.termination) != (data.status, data.termination):
            raise RecordFormatError(
                f'stored status {data.status} ({data.termination}) disagrees with the claim '
                f'and certificate, which give {record.status} ({record.termination})'
            )
        return record


def open_task_to_json(task: OpenTask) -> str:
    return json.dumps(
        {
            'version': RECORD_VERSION,
            'kind': 'open',
            'task_id': task.task_id,
            'run_id': task.run_id,
            'sequence': task.sequence,
            'goal': _goal_dict(task.goal),
            'started_ns': task.started_ns,
        },
        ensure_ascii=False,
    )


def open_task_from_json(text: str) -> OpenTask:
    data = _parse(text, _OpenFile, 'open-task marker')
    return OpenTask(data.task_id, data.run_id, data.sequence, _goal(data.goal), data.started_ns)


# The file schema: strict, so a file from a newer writer or a damaged one is refused whole.
class _Strict(BaseModel):
    model_config = ConfigDict(extra='forbid', frozen=True, allow_inf_nan=False)


_Text = Annotated[str, Field(max_length=_MAX_TEXT)]
_LessonId = Annotated[str, Field(min_length=1, max_length=128)]


class _GoalFile(_Strict):
    modality: GoalModality
    text: _Text = ''
    photo_ref: str = Field(default='', max_length=512)


class _VerdictFile(_Strict):
    verdict: VerdictKind
    evidence: _Text = ''
    places_searched: list[str] = Field(default=[], max_length=_MAX_ITEMS)
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    source: str = Field(default='', max_length=64)
    error: _Text = ''
    steps: int = Field(default=0, ge=0)


class _SpentFile(_Strict):
    time_s: float = Field(ge=0.0)
    distance_m: float = Field(ge=0.0)
    agent_steps: int = Field(ge=0)
    attempts: int = Field(ge=0)
    recoveries: int = Field(ge=0)
    scopes: list[Literal['attempt', 'place', 'room', 'floor', 'house']] = Field(
        max_length=_MAX_ITEMS
    )


class _PoseFile(_Strict):
    x: float
    y: float
    yaw: float
    frame: str = Field(min_length=1, max_length=128)
    map_epoch: int = Field(ge=0)


class _OpenFile(_Strict):
    version: Literal[1]
    kind: Literal['open']
    task_id: str = Field(min_length=1, max_length=64)
    run_id: str = Field(max_length=64)
    sequence: int = Field(ge=1)
    goal: _GoalFile
    started_ns: int = Field(ge=0)


class _RecordFile(_Strict):
    version: Literal[1]
    kind: Literal['record']
    task_id: str = Field(min_length=1, max_length=64)
    run_id: str = Field(max_length=64)
    sequence: int = Field(ge=1)
    goal: _GoalFile
    claim: Claim | None
    claim_evidence: _Text = ''
    pre_stop: _VerdictFile | None
    certificate: _VerdictFile | None
    status: LedgerStatus
    termination: TerminationReason
    handover: _Text = ''
    places: list[str] = Field(max_length=_MAX_ITEMS)
    spent: _SpentFile
    recovery_notes: list[str] = Field(max_length=_MAX_ITEMS)
    stop_pose: _PoseFile | None
    started_ns: int = Field(ge=0)
    ended_ns: int = Field(ge=0)
    # Absent from records written before lessons existed.
    lesson_ids: list[_LessonId] = Field(default=[], max_length=_MAX_ITEMS)


def _parse(text: str, schema: type[_Strict], what: str) -> Any:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise RecordFormatError(f'{what} is not JSON: {error}') from error
    if not isinstance(raw, dict):
        raise RecordFormatError(f'{what} must be a JSON object')
    if raw.get('version') != RECORD_VERSION:
        raise RecordFormatError(
            f'{what} has version {raw.get("version")!r}; this build reads version '
            f'{RECORD_VERSION} only'
        )
    try:
        return schema.model_validate(raw)
    except ValidationError as error:
        problems = validation_problems(error, '(root)', 5)
        raise RecordFormatError(f'malformed {what}: {problems}') from None


def _goal(data: _GoalFile) -> TaskGoal:
    try:
        return TaskGoal(data.modality, data.text, data.photo_ref)
    except ValueError as error:
        raise RecordFormatError(f'malformed goal: {error}') from error


def _goal_dict(goal: TaskGoal) -> dict[str, str]:
    return {'modality': goal.modality, 'text': goal.text, 'photo_ref': goal.photo_ref}


def _verdict(data: _VerdictFile | None) -> JudgeVerdict | None:
    if data is None:
        return None
    return JudgeVerdict(
        data.verdict,
        data.evidence,
        tuple(data.places_searched),
        data.confidence,
        data.source,
        data.error,
        data.steps,
    )


def _verdict_dict(verdict: JudgeVerdict | None) -> dict[str, Any] | None:
    if verdict is None:
        return None
    return {
        'verdict': verdict.verdict,
        'evidence': verdict.evidence,
        'places_searched': list(verdict.places_searched),
        'confidence': verdict.confidence,
        'source': verdict.source,
        'error': verdict.error,
        'steps': verdict.steps,
    }
