# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Scoring chained task runs against the world's ground truth, which nothing else sees.

A task succeeds when the base stopped within `success_radius_m` of a free position that
sees the target and one of the stop views has the target in its field of view; a named
place succeeds when the stop is within the radius of where it was marked. SPL weighs each
success by the shortest free path from the task's start to the nearest successful
position over the path driven. A ledger status is the robot's own word, so it is scored
too: CERTIFIED against true success gives the judge's precision and recall.

Every task is reported under its goal kind (`GoalKind`): a photo counts as one with writing
only when a sign is in its field of view, since without an image view writing is all a
photo can be searched by. A named place succeeds by construction in every flow (its pose
was marked), so the headline rates leave places out and report them apart.

Tasks are chained: the first starts at the sequence's start, a MARK moves the robot to the
marked pose, and every other task starts where the one before it stopped.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from waymark.evaluation.task_geometry import (
    Camera,
    FreeSpace,
    nearest_distance,
    path_to_nearest,
    viewpoints,
)
from waymark.evaluation.task_sequences import SequenceStep, StepKind, TaskSequence
from waymark.geometry import Pose
from waymark.sim.landmarks import landmarks, visible_landmarks
from waymark.sim.world import World
from waymark.tasks.outcomes import LedgerStatus
from waymark.tasks.records import GoalModality, TaskRecord
from waymark.tasks.stop_views import HEADING_BUCKETS

SUCCESS_RADIUS_M = 1.0
NO_JUDGE = '\u2013'  # what a flow without a ledger shows for the judge's rates

Pose2 = tuple[float, float, float]


class GoalKind(str, Enum):
    """What a task is scored under: the step's kind, with photos split by whether they
    show writing."""

    SIGN = 'sign'
    INSTANCE = 'instance'
    PHOTO_WRITING = 'photo with writing'
    PHOTO_PLAIN = 'photo without writing'
    PLACE = 'place'


SEARCHED_KINDS = tuple(kind for kind in GoalKind if kind is not GoalKind.PLACE)
# Kinds the judges that need no model decide: OCR reads a sign goal's text and a photo's
# writing, the photo matcher any photo. An instance goal names an object; OCR decides it
# only when it names a sign nearby, and then it checks the sign, not the object.
CPU_JUDGED_KINDS = (GoalKind.SIGN, GoalKind.PHOTO_WRITING, GoalKind.PHOTO_PLAIN)

_MODALITY = {
    StepKind.SIGN: GoalModality.TEXT,
    StepKind.INSTANCE: GoalModality.TEXT,
    StepKind.PHOTO: GoalModality.PHOTO,
    StepKind.PLACE: GoalModality.PLACE,
}


@dataclass(frozen=True)
class TaskOutcome:
    """How one task ended, in any flow. `stop` is None when the base never stopped
    anywhere meaningful; `stop_headings` are the headings (radians, map frame) the stop
    views faced; `status` is None for a flow without a ledger; `first_stop` is where the
    first stop views were taken, when the flow recorded it; `attempts` counts the runner's
    attempts (a flow without a runner makes one)."""

    stop: Pose2 | None
    stop_headings: tuple[float, ...]
    path_m: float
    status: LedgerStatus | None = None
    recoveries: int = 0
    first_stop: Pose2 | None = None
    modality: GoalModality | None = None
    attempts: int = 1

    def __post_init__(self) -> None:
        if not (math.isfinite(self.path_m) and self.path_m >= 0.0):
            raise ValueError(f'path_m must be finite and >= 0, got {self.path_m}')
        if min(self.recoveries, self.attempts) < 0:
            raise ValueError(f'recoveries and attempts must be >= 0: {self}')

    @classmethod
    def from_record(cls, record: TaskRecord, views: int = HEADING_BUCKETS) -> TaskOutcome:
        """A ledger record's outcome: the runner turns in place at a stop, so its views
        face `views` headings evenly spaced from the stop yaw."""
        pose = record.stop_pose
        stop = None if pose is None else (pose.x, pose.y, pose.yaw)
        headings = () if pose is None else _turn(pose.yaw, views)
        return cls(
            stop,
            headings,
            record.spent.distance_m,
            record.status,
            record.spent.recoveries,
            modality=record.goal.modality,
            attempts=record.spent.attempts,
        )

    @classmethod
    def single_shot(
        cls, stop: Pose2 | None, path_m: float, views: int = HEADING_BUCKETS
    ) -> TaskOutcome:
        """Ask then GoTo: one drive, no ledger; at the stop it turns in place for `views`
        headings as the runner does, so both flows are scored on the same views."""
        return cls(stop, () if stop is None else _turn(stop[2], views), path_m)


def outcomes_from_records(
    records: Sequence[TaskRecord], views: int = HEADING_BUCKETS
) -> list[TaskOutcome]:
    """One run's records in task order (ledger sequence numbers grow over a run)."""
    ordered = sorted(records, key=lambda record: record.sequence)
    return [TaskOutcome.from_record(record, views) for record in ordered]


@dataclass(frozen=True)
class TaskScore:
    """One task scored. `shortest_m` is inf when no successful position is reachable;
    `first_success` is None when the first stop was not recorded."""

    number: int  # 1-based, within the sequence
    kind: GoalKind
    revisit: bool
    success: bool
    near_view: bool
    in_view: bool
    shortest_m: float
    path_m: float
    spl: float
    status: LedgerStatus | None
    recoveries: int
    first_success: bool | None
    attempts: int = 1
    stopped: bool = True  # the base stopped somewhere: recall gave it a place to go

    @property
    def first_attempt_failed(self) -> bool:
        """The first stop was not a success. Going on to the next memory candidate is
        recovery too (its narrowest scope), whether or not the controller was asked, so the
        first stop is what counts; with none recorded, the task's end is its first stop."""
        if self.first_success is None:
            return not self.success
        return not self.first_success

    @property
    def converted(self) -> bool:
        """A failed first attempt that the task went on to turn into a success."""
        return self.first_attempt_failed and self.success


@dataclass(frozen=True)
class RunScore:
    sequence_id: str
    tasks: tuple[TaskScore, ...]


class TaskScorer:
    """Scores runs in one world; viewpoints of each target are found once and kept."""

    def __init__(
        self,
        world: World,
        camera: Camera | None = None,
        success_radius_m: float = SUCCESS_RADIUS_M,
        space: FreeSpace | None = None,
    ) -> None:
        if not (math.isfinite(success_radius_m) and success_radius_m > 0.0):
            raise ValueError(f'success_radius_m must be > 0, got {success_radius_m}')
        self.world = world
        self.camera = camera or Camera()
        self.success_radius_m = success_radius_m
        self.space = space or FreeSpace(world)
        marks = landmarks(world)
        self._positions = {m.id: m.position[:2] for m in marks}
        self._signs = {m.id for m in marks if m.kind == 'sign'}
        self._views: dict[str, np.ndarray] = {}

    def goal_kind(self, step: SequenceStep) -> GoalKind:
        """The step's kind; a photo shows writing when a sign is in its field of view."""
        if step.kind is StepKind.PHOTO:
            x, y, yaw = step.pose
            eye = Pose.from_xyz_yaw(x, y, self.camera.height_m, yaw)
            seen = visible_landmarks(
                self.world, eye, self.camera.hfov_deg, vfov_deg=self.camera.vfov_deg
            )
            writing = any(landmark in self._signs for landmark in seen)
            return GoalKind.PHOTO_WRITING if writing else GoalKind.PHOTO_PLAIN
        return GoalKind(step.kind.value)

    def views_of(self, landmark_id: str) -> np.ndarray:
        if landmark_id not in self._positions:
            raise ValueError(f'no landmark {landmark_id!r} in world {self.world.name}')
        if landmark_id not in self._views:
            position = self._positions[landmark_id]
            self._views[landmark_id] = viewpoints(self.space, landmark_id, position, self.camera)
        return self._views[landmark_id]

    def stop_succeeds(
        self, target: str, stop: Pose2 | None, headings: Sequence[float]
    ) -> tuple[bool, bool]:
        """(near a viewpoint, target in a stop view) for a landmark target."""
        if stop is None:
            return False, False
        x, y, _ = stop
        near = nearest_distance(self.views_of(target), x, y) <= self.success_radius_m
        seen = any(self.camera.sees(self.world, x, y, h, target) for h in headings)
        return near, seen

    def score_run(self, sequence: TaskSequence, outcomes: Sequence[TaskOutcome]) -> RunScore:
        """Score one run; ValueError when the outcomes do not match the sequence's tasks."""
        if sequence.world != self.world.name:
            raise ValueError(f'sequence {sequence.id} is of world {sequence.world}')
        tasks = sequence.tasks
        if len(outcomes) != len(tasks):
            raise ValueError(
                f'sequence {sequence.id} has {len(tasks)} tasks, got {len(outcomes)} outcomes'
            )
        revisits = sequence.revisits()
        here: Pose2 = sequence.start
        marks: dict[str, Pose2] = {}
        scores = []
        outcome_of = iter(outcomes)
        for step in sequence.steps:
            if step.kind is StepKind.MARK:
                marks[step.place] = step.pose
                here = step.pose
                continue
            outcome = next(outcome_of)
            number = len(scores) + 1
            if outcome.modality is not None and outcome.modality is not _MODALITY[step.kind]:
                raise ValueError(
                    f'task {number} of {sequence.id} is a {step.kind.value} goal, the outcome '
                    f'is of a {outcome.modality} goal'
                )
            scores.append(self._score(step, outcome, here, marks, number, revisits[number - 1]))
            if outcome.stop is not None:
                here = outcome.stop
        return RunScore(sequence.id, tuple(scores))

    def _score(
        self,
        step: SequenceStep,
        outcome: TaskOutcome,
        start: Pose2,
        marks: Mapping[str, Pose2],
        number: int,
        revisit: bool,
    ) -> TaskScore:
        if step.kind is StepKind.PLACE:
            mark = marks[step.place]
            goals = np.array([mark[:2]])

            def judge(stop: Pose2 | None, _headings: Sequence[float]) -> tuple[bool, bool]:
                near = stop is not None and math.dist(stop[:2], mark[:2]) <= self.success_radius_m
                return near, near

        else:
            goals = self.views_of(step.target)

            def judge(stop: Pose2 | None, headings: Sequence[float]) -> tuple[bool, bool]:
                return self.stop_succeeds(step.target, stop, headings)

        near, seen = judge(outcome.stop, outcome.stop_headings)
        success = near and seen
        first_success = None
        if outcome.first_stop is not None:
            first = outcome.first_stop
            first_success = all(judge(first, _turn(first[2], HEADING_BUCKETS)))
        shortest = path_to_nearest(self.space, self.space.distances_from(*start[:2]), goals)
        return TaskScore(
            number=number,
            kind=self.goal_kind(step),
            revisit=revisit,
            success=success,
            near_view=near,
            in_view=seen,
            shortest_m=shortest,
            path_m=outcome.path_m,
            spl=spl(success, shortest, outcome.path_m),
            status=outcome.status,
            recoveries=outcome.recoveries,
            first_success=first_success,
            attempts=outcome.attempts,
            stopped=_stopped(outcome),
        )


def spl(success: bool, shortest_m: float, path_m: float) -> float:
    """Success weighted by path length: shortest / max(driven, shortest); a success that
    needed no driving counts 1, a target nobody can reach counts 0."""
    if not success or not math.isfinite(shortest_m):
        return 0.0
    longest = max(path_m, shortest_m)
    return 1.0 if longest <= 0.0 else shortest_m / longest


def _stopped(outcome: TaskOutcome) -> bool:
    """A flow with a ledger records where its first stop views were taken (none: recall gave
    it nowhere to go, and its end pose is only where it stood); one without records only
    the stop it drove to."""
    if outcome.status is not None:
        return outcome.first_stop is not None
    return outcome.stop is not None


@dataclass(frozen=True)
class Rate:
    """`hits` of `total`; `value` is None when there is nothing to divide by."""

    hits: int
    total: int

    @property
    def value(self) -> float | None:
        return self.hits / self.total if self.total else None

    def __str__(self) -> str:
        if not self.total:
            return '-'
        return f'{100.0 * self.hits / self.total:.1f} % ({self.hits}/{self.total})'


@dataclass(frozen=True)
class Summary:
    """Aggregates over one or more runs, every task weighing the same."""

    runs: int
    tasks: int
    success: Rate
    spl: float | None
    chain_success: Rate  # runs in which every task succeeded
    statuses: dict[str, int]
    judge_precision: Rate  # CERTIFIED tasks that truly succeeded
    judge_recall: Rate  # true successes that were CERTIFIED
    recoveries: int  # asked of the recovery controller
    extra_attempts: int  # attempts beyond each task's first
    conversion: Rate  # failed first attempts that the task turned into a success
    stopless: int  # failed first attempts that never stopped anywhere (nothing recalled)
    revisit_success: Rate
    first_visit_success: Rate


def summarise(runs: Sequence[RunScore], kinds: Sequence[GoalKind] = tuple(GoalKind)) -> Summary:
    """The runs' aggregates over the tasks of `kinds` (a run counts toward chain success
    by those tasks alone)."""
    kept = [
        RunScore(run.sequence_id, tuple(t for t in run.tasks if t.kind in kinds)) for run in runs
    ]
    runs = [run for run in kept if run.tasks]
    tasks = [task for run in runs for task in run.tasks]
    successes = [task for task in tasks if task.success]
    certified = [task for task in tasks if task.status is LedgerStatus.CERTIFIED]
    statuses = Counter(str(task.status) for task in tasks if task.status is not None)
    failed_first = [task for task in tasks if task.first_attempt_failed]
    revisits = [task for task in tasks if task.revisit]
    firsts = [task for task in tasks if not task.revisit]
    return Summary(
        runs=len(runs),
        tasks=len(tasks),
        success=Rate(len(successes), len(tasks)),
        spl=sum(task.spl for task in tasks) / len(tasks) if tasks else None,
        chain_success=Rate(sum(all(t.success for t in run.tasks) for run in runs), len(runs)),
        statuses=dict(sorted(statuses.items())),
        judge_precision=Rate(sum(task.success for task in certified), len(certified)),
        judge_recall=Rate(
            sum(task.status is LedgerStatus.CERTIFIED for task in successes), len(successes)
        ),
        recoveries=sum(task.recoveries for task in tasks),
        extra_attempts=sum(max(0, task.attempts - 1) for task in tasks),
        conversion=Rate(sum(task.converted for task in failed_first), len(failed_first)),
        stopless=sum(not task.stopped for task in failed_first),
        revisit_success=Rate(sum(task.success for task in revisits), len(revisits)),
        first_visit_success=Rate(sum(task.success for task in firsts), len(firsts)),
    )


def comparison_table(flows: Mapping[str, Summary]) -> str:
    """A markdown table with one column per flow, in the order given."""
    if not flows:
        raise ValueError('no flows to compare')
    statuses = [status.value for status in LedgerStatus]
    rows: list[tuple[str, list[str]]] = [
        ('runs', [str(s.runs) for s in flows.values()]),
        ('tasks', [str(s.tasks) for s in flows.values()]),
        ('success', [str(s.success) for s in flows.values()]),
        ('SPL', ['-' if s.spl is None else f'{s.spl:.3f}' for s in flows.values()]),
        ('chain success', [str(s.chain_success) for s in flows.values()]),
        *(
            (
                status,
                [str(s.statuses.get(status, 0)) if s.statuses else '-' for s in flows.values()],
            )
            for status in statuses
        ),
        (
            'judge precision (CERTIFIED and true)',
            [_judged(s, s.judge_precision) for s in flows.values()],
        ),
        ('judge recall (true and CERTIFIED)', [_judged(s, s.judge_recall) for s in flows.values()]),
        ('recoveries (controller)', [str(s.recoveries) for s in flows.values()]),
        ('attempts beyond the first', [str(s.extra_attempts) for s in flows.values()]),
        ('failed first attempts converted', [str(s.conversion) for s in flows.values()]),
        ('of which never stopped (nothing recalled)', [str(s.stopless) for s in flows.values()]),
        ('success on revisited targets', [str(s.revisit_success) for s in flows.values()]),
        ('success on first visits', [str(s.first_visit_success) for s in flows.values()]),
    ]
    header = ['metric', *flows]
    lines = [_row(header), _row(['---'] * len(header))]
    lines += [_row([name, *cells]) for name, cells in rows]
    return '\n'.join(lines) + '\n'


def kind_table(flows: Mapping[str, Sequence[RunScore]]) -> str:
    """A markdown table with a row per goal kind and flow (kinds no task had are left
    out): how many tasks, how many truly succeeded, how many CERTIFIED ones were true, how
    many true ones were CERTIFIED, how many failed first attempts were turned into a
    success, and how many of those never stopped anywhere."""
    if not flows:
        raise ValueError('no flows to compare')
    header = [
        'kind', 'flow', 'n', 'success', 'CERTIFIED and true', 'judge recall',
        'failed first attempts converted', 'never stopped',
    ]  # fmt: skip
    lines = [_row(header), _row(['---'] * len(header))]
    for kind in GoalKind:
        for flow, runs in flows.items():
            s = summarise(runs, (kind,))
            if not s.tasks:
                continue
            cells = [str(s.tasks), str(s.success), _judged(s, s.judge_precision)]
            cells += [_judged(s, s.judge_recall), str(s.conversion), str(s.stopless)]
            lines.append(_row([kind.value, flow, *cells]))
    return '\n'.join(lines) + '\n'


def task_table(sequence: TaskSequence, flows: Mapping[str, RunScore]) -> str:
    """A markdown table with a row per task of one sequence: its kind and goal, then per
    flow whether it truly succeeded, whether its first stop did (`-` when none was
    recorded), its ledger status and its attempts, so a task one flow lost can be found."""
    if not flows:
        raise ValueError('no flows to compare')
    header = ['task', 'kind', 'goal']
    for flow in flows:
        header += [f'{flow} success', 'first stop', 'status', 'attempts']
    lines = [_row(header), _row(['---'] * len(header))]
    for index, step in enumerate(sequence.tasks):
        tasks = [run.tasks[index] for run in flows.values()]
        cells = [str(index + 1), tasks[0].kind.value, step.goal[:60] or step.image or '']
        for task in tasks:
            first = '-' if task.first_success is None else _yes(task.first_success)
            status = '-' if task.status is None else str(task.status)
            cells += [_yes(task.success), first, status, str(task.attempts)]
        lines.append(_row(cells))
    return '\n'.join(lines) + '\n'


def _yes(flag: bool) -> str:
    return 'yes' if flag else 'no'


def _judged(summary: Summary, rate: Rate) -> str:
    """A judge's rate, or a dash for a flow with no ledger and so no judge."""
    return str(rate) if summary.statuses else NO_JUDGE


def _row(cells: Sequence[str]) -> str:
    return '| ' + ' | '.join(cell.replace('|', '/') for cell in cells) + ' |'


def _turn(yaw: float, views: int) -> tuple[float, ...]:
    if views < 1:
        raise ValueError(f'views must be >= 1, got {views}')
    return tuple(yaw + 2.0 * math.pi * k / views for k in range(views))
