# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The words every part of the task layer shares: claims, verdicts, ledger statuses,
recovery scopes and phases. A claim is what the robot says; a verdict is what a judge
saw; only the verdict may turn a claim into a success."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, IntEnum


class Word(str, Enum):
    """A word that is its own value in text and JSON (enum.StrEnum needs Python 3.11; ROS 2
    Humble runs 3.10)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Claim(Word):
    """What the runner claims when it closes a task."""

    COMPLETE = 'complete'
    INCOMPLETE = 'incomplete'


class VerdictKind(Word):
    """A judge's reading of the stop evidence; UNKNOWN stands for every failure to judge."""

    COMPLETE = 'complete'
    INCOMPLETE = 'incomplete'
    UNKNOWN = 'unknown'

    @property
    def definite(self) -> bool:
        return self is not VerdictKind.UNKNOWN


@dataclass(frozen=True)
class JudgeVerdict:
    """One judge check. `source` names the backend ('vlm', 'ocr'); `error` says why a
    check failed (a failed check is always UNKNOWN); `steps` is the runner's action count
    when the check ran, so a post-stop check can reuse a pre-stop one."""

    verdict: VerdictKind
    evidence: str = ''
    places_searched: tuple[str, ...] = ()
    confidence: float = 0.0
    source: str = ''
    error: str = ''
    steps: int = 0

    @classmethod
    def failed(cls, source: str, error: str, steps: int = 0) -> JudgeVerdict:
        return cls(VerdictKind.UNKNOWN, source=source, error=error, steps=steps)


class LedgerStatus(Word):
    """How a task is recorded. CLAIMED is unchecked and never counts as a success; STOPPED
    is a task that ended without a closing claim (budget, cancel, a node died)."""

    CERTIFIED = 'CERTIFIED'
    NOT_DONE = 'NOT DONE'
    UNRESOLVED = 'UNRESOLVED'
    CLAIMED = 'CLAIMED'
    STOPPED = 'STOPPED'


class TerminationReason(Word):
    """Why a task ended."""

    CLOSED = 'closed'  # the runner closed it with a claim
    TIME_BUDGET = 'time_budget'
    DISTANCE_BUDGET = 'distance_budget'
    STEP_BUDGET = 'step_budget'
    CANCELED = 'canceled'
    NO_GOAL = 'no_goal'  # nothing to drive to: unknown place, empty photo, no memory hit
    DRIVE_REFUSED = 'drive_refused'
    INTERRUPTED = 'interrupted'  # the runner died mid-task; found at the next start
    ERROR = 'error'


def ledger_status(
    claim: Claim | None, certificate: JudgeVerdict | None
) -> tuple[LedgerStatus, TerminationReason | None]:
    """The ledger status of a task from its claim and its post-stop certificate (None: no
    certification ran). Without a claim the status is STOPPED whatever a judge said: a
    completion is never invented."""
    if claim is None:
        return LedgerStatus.STOPPED, None
    if certificate is None:
        return LedgerStatus.CLAIMED, TerminationReason.CLOSED
    status = {
        VerdictKind.COMPLETE: LedgerStatus.CERTIFIED,
        VerdictKind.INCOMPLETE: LedgerStatus.NOT_DONE,
        VerdictKind.UNKNOWN: LedgerStatus.UNRESOLVED,
    }[certificate.verdict]
    return status, TerminationReason.CLOSED


class Scope(IntEnum):
    """How much a recovery re-examines, narrowest first; the order is the rule table's."""

    ATTEMPT = 0  # the next memory candidate
    PLACE = 1  # re-query with the searched places excluded
    ROOM = 2  # widen the search, explore nearby frontiers
    FLOOR = 3  # relocalise against named places and map epochs
    HOUSE = 4  # as FLOOR, with the whole place graph


class Phase(Word):
    """Where a running task is, as its feedback says."""

    RECALL = 'recall'
    DRIVE = 'drive'
    VERIFY = 'verify'
    RECOVER = 'recover'
    CLOSE = 'close'


@dataclass(frozen=True)
class Budget:
    """What one task may spend over all its attempts; recovery never refills it."""

    time_s: float = 600.0
    distance_m: float = 200.0
    agent_steps: int = 16

    def __post_init__(self) -> None:
        if not (0.0 < self.time_s <= 86_400.0 and 0.0 < self.distance_m <= 100_000.0):
            raise ValueError(f'time_s and distance_m must be positive and bounded: {self}')
        if not 1 <= self.agent_steps <= 1000:
            raise ValueError(f'agent_steps must be in [1, 1000], got {self.agent_steps}')


@dataclass
class Spent:
    """What a task has spent so far."""

    time_s: float = 0.0
    distance_m: float = 0.0
    agent_steps: int = 0
    attempts: int = 0
    recoveries: int = 0
    scopes: list[Scope] = field(default_factory=list)

    def exhausted(self, budget: Budget) -> TerminationReason | None:
        if self.time_s >= budget.time_s:
            return TerminationReason.TIME_BUDGET
        if self.distance_m >= budget.distance_m:
            return TerminationReason.DISTANCE_BUDGET
        if self.agent_steps >= budget.agent_steps:
            return TerminationReason.STEP_BUDGET
        return None
