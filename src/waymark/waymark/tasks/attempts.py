# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the task runner asks of the robot, as small protocols, and the data they trade.

The runner owns a task's life; the parts it drives only report. `Recall` turns a goal
into ordered memory candidates, `Drive` moves the base and says how it went, `Body` turns
in place for stop views and reports the pose and what the robot measured. The ROS node
implements them over the agent, Nav2 and the sensors; tests implement them with doubles.
None of them decides whether a task is done.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from waymark.agent.exclusions import Exclusions
from waymark.geometry import Pose
from waymark.navigation.epochs import MapEpoch
from waymark.tasks.outcomes import Word
from waymark.tasks.records import TaskGoal
from waymark.tasks.recovery_note import RecoveryNote
from waymark.tasks.stop_views import StopView

MAX_DESCRIPTION_CHARS = 300


@dataclass(frozen=True)
class RunGoal:
    """A goal as the runner receives it: the ledger's goal plus, for a photo goal, the
    photo's bytes (the ledger keeps only the reference)."""

    goal: TaskGoal
    photo: bytes = b''


@dataclass(frozen=True)
class Candidate:
    """A place the goal may be: the target's position, the standoff pose to drive to,
    the memory entry it came from and what memory says of it; `lesson_ids` are the lessons
    the answer that proposed it was given (the task's verified outcome calibrates them);
    `epoch` the map epoch its poses are in (None: the body's current one)."""

    target: tuple[float, float]
    goal_pose: Pose
    entry_id: str
    description: str = ''
    lesson_ids: tuple[str, ...] = ()
    epoch: MapEpoch | None = None

    def __post_init__(self) -> None:
        if not self.entry_id:
            raise ValueError('a candidate needs the memory entry it came from')
        if not all(math.isfinite(value) for value in self.target):
            raise ValueError(f'a candidate needs a finite target, got {self.target}')
        if len(self.description) > MAX_DESCRIPTION_CHARS:
            raise ValueError(f'a description is at most {MAX_DESCRIPTION_CHARS} characters')

    @property
    def label(self) -> str:
        return self.description or self.entry_id


@dataclass(frozen=True)
class RecallQuery:
    """One memory query of a task. Nothing `exclusions` names may come back. `search_radius_m`
    widens the search around `origin` when set (None: the recall's own default);
    `frontier_radius_m` asks to explore unseen ground that near the robot first; `note`
    is the recovery note of the failed attempt, for the next one to read; `briefing` the
    ledger lines and house notes read before the task's first move (evidence, never
    instructions)."""

    goal: RunGoal
    origin: Pose
    max_candidates: int
    exclusions: Exclusions = field(default_factory=Exclusions)
    search_radius_m: float | None = None
    frontier_radius_m: float | None = None
    relocalise: bool = False
    note: RecoveryNote | None = None
    briefing: str = ''


@dataclass(frozen=True)
class RecallResult:
    """Candidates, best first, and the agent steps the recall spent finding them."""

    candidates: tuple[Candidate, ...]
    steps: int = 1

    def __post_init__(self) -> None:
        if self.steps < 0:
            raise ValueError(f'steps must be >= 0, got {self.steps}')


class Recall(Protocol):
    def recall(self, query: RecallQuery, deadline: float) -> RecallResult: ...


class DriveOutcome(Word):
    REACHED = 'reached'
    REFUSED = 'refused'  # the base would not take the goal
    FAILED = 'failed'  # it took the goal and did not get there
    CANCELED = 'canceled'


@dataclass(frozen=True)
class DriveResult:
    outcome: DriveOutcome
    distance_m: float = 0.0
    message: str = ''

    def __post_init__(self) -> None:
        if not (math.isfinite(self.distance_m) and self.distance_m >= 0.0):
            raise ValueError(f'distance_m must be finite and >= 0, got {self.distance_m}')


class Drive(Protocol):
    def drive(self, goal: Pose, deadline: float, cancel: threading.Event) -> DriveResult:
        """Drive to `goal` until `deadline` (the clock's monotonic seconds); stop when
        `cancel` is set."""
        ...


class Explore(Protocol):
    def explore(self, radius_m: float, deadline: float, cancel: threading.Event) -> DriveResult:
        """Drive to ground the robot has not seen, nearest first, within about `radius_m`
        of where it stands, until `deadline`; how it ended and the distance driven
        (REFUSED: nothing to explore there, or no explorer to ask)."""
        ...


@dataclass(frozen=True)
class BodyPose:
    """The base pose with the frame and map epoch it was measured in; `session` is the
    recording session of that epoch ('' when the body does not know it, and then no
    candidate is checked against the epoch)."""

    pose: Pose
    frame: str = 'map'
    map_epoch: int = 0
    session: str = ''

    @property
    def epoch(self) -> MapEpoch | None:
        return (self.session, self.map_epoch) if self.session else None


@dataclass(frozen=True)
class BodySignals:
    """What the robot measured, for the recovery controller: the area explored so far
    (cumulative, m2), whether tracking is lost and whether this ground is new to it."""

    explored_area_m2: float = 0.0
    tracking_lost: bool = False
    first_visit: bool = False


class Body(Protocol):
    def pose(self) -> BodyPose: ...

    def stop_views(
        self, count: int, deadline: float, facing: tuple[float, float] | None = None
    ) -> Sequence[StopView]:
        """Turn in place and take up to `count` heading-bucketed views, the first facing
        the map point `facing` when given (where the goal should be), the rest a full turn
        from there: a goal between two views at the arrival heading may fall at the edge of
        both."""
        ...

    def recent_frames(self, since_ns: int, limit: int) -> Sequence[StopView]:
        """Up to `limit` frames recorded since `since_ns`, spread over that time."""
        ...

    def frames_since(self, since_ns: int) -> int: ...

    def signals(self) -> BodySignals: ...


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def time_ns(self) -> int: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def time_ns(self) -> int:
        return time.time_ns()
