# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The task runner over doubles of memory, the base and the body, with the project's judges:
every path ends in a ledger record, and only a judge's verdict certifies."""

from __future__ import annotations

import math
import threading
from dataclasses import replace

import cv2
import numpy as np
import pytest

from waymark.geometry import Pose
from waymark.navigation.epochs import MapEpoch
from waymark.tasks.attempts import (
    BodyPose,
    BodySignals,
    Candidate,
    DriveOutcome,
    DriveResult,
    RecallQuery,
    RecallResult,
    RunGoal,
)
from waymark.tasks.house_notes import HouseNotes, HouseNotesStore
from waymark.tasks.judge import JudgeInput, OcrJudge
from waymark.tasks.ledger import TaskLedger
from waymark.tasks.outcomes import (
    Budget,
    JudgeVerdict,
    LedgerStatus,
    Phase,
    TerminationReason,
    VerdictKind,
)
from waymark.tasks.places import PlaceBook, PlacePose
from waymark.tasks.records import GoalModality, TaskGoal
from waymark.tasks.recovery import PlanParams, RecoveryParams
from waymark.tasks.relocation import SE2, Alignment, Belief, Relocation
from waymark.tasks.runner import RunnerParams, TaskRunner
from waymark.tasks.stop_views import StopView


def jpeg(rgb: np.ndarray) -> bytes:
    return cv2.imencode('.jpg', cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))[1].tobytes()


BLANK = jpeg(np.full((48, 64, 3), 128, np.uint8))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now

    def time_ns(self) -> int:
        return int(self.now * 1e9)


class World:
    """Where the robot is and what it would see there: the body, the drive and memory."""

    def __init__(self, clock: Clock, scenes: dict[str, bytes] | None = None) -> None:
        self.clock = clock
        self.scenes = scenes or {}
        self.at = 'start'
        self.position = (0.0, 0.0)
        self.candidates: list[Candidate] = []
        self.recall_steps = 1
        self.queries: list[RecallQuery] = []
        self.outcomes: list[DriveOutcome] = []
        self.drive_s = 5.0
        self.drive_m = 3.0
        self.drives: list[Pose] = []
        self.hooks: dict[str, object] = {}
        # Every camera frame's stamp, as a real body logs them: some on each drive, and
        # the stop views (four by default, never fewer than the controller's group).
        self.frame_stamps: list[int] = []
        self.facing: list[tuple[float, float] | None] = []  # what each stop turned to first
        self.frames_per_drive = 6

    def candidate(self, entry_id: str, x: float) -> Candidate:
        made = Candidate((x, 0.0), Pose.from_xyz_yaw(x - 1.0, 0.0, 0.0, 0.0), entry_id, entry_id)
        self.candidates.append(made)
        return made

    def _hook(self, name: str) -> None:
        if name in self.hooks:
            self.hooks[name]()

    # Recall
    def recall(self, query: RecallQuery, deadline: float) -> RecallResult:
        self.queries.append(query)
        self._hook('recall')
        kept = [c for c in self.candidates if not query.exclusions.excludes_entry(c.entry_id)]
        return RecallResult(tuple(kept[: query.max_candidates]), self.recall_steps)

    # Drive
    def drive(self, goal: Pose, deadline: float, cancel: threading.Event) -> DriveResult:
        self.drives.append(goal)
        self._hook('drive')
        start = self.clock.time_ns()
        self.clock.now += self.drive_s
        step = (self.clock.time_ns() - start) // (self.frames_per_drive + 1)
        self.frame_stamps += [start + step * (i + 1) for i in range(self.frames_per_drive)]
        if cancel.is_set():
            return DriveResult(DriveOutcome.CANCELED, 0.5)
        outcome = self.outcomes.pop(0) if self.outcomes else DriveOutcome.REACHED
        if outcome is DriveOutcome.REACHED:
            self.position = (goal.position[0] + 1.0, goal.position[1])
            self.at = next(
                (c.entry_id for c in self.candidates if c.target == self.position), 'elsewhere'
            )
        return DriveResult(outcome, self.drive_m, f'nav2 said {outcome}')

    # Body
    def pose(self) -> BodyPose:
        return BodyPose(Pose.from_xyz_yaw(*self.position, 0.0, 0.0), 'map', 2)

    def stop_views(self, count: int, deadline: float, facing=None) -> list[StopView]:
        self.facing.append(facing)
        self._hook('views')
        image = self.scenes.get(self.at, BLANK)
        stamp = self.clock.time_ns()
        self.frame_stamps += [stamp + i for i in range(count)]
        return [StopView(image, i * math.pi / 2, stamp + i) for i in range(count)]

    def recent_frames(self, since_ns: int, limit: int) -> list[StopView]:
        stamps = [stamp for stamp in self.frame_stamps if stamp >= since_ns]
        return [StopView(BLANK, 0.0, stamp) for stamp in stamps[:limit]]

    def frames_since(self, since_ns: int) -> int:
        return sum(1 for stamp in self.frame_stamps if stamp >= since_ns)

    def signals(self) -> BodySignals:
        return BodySignals()


class ScriptedJudge:
    """Answers from a script (the last answer repeats), recording what it was shown."""

    source = 'scripted'

    def __init__(self, *verdicts: VerdictKind | None) -> None:
        self.verdicts = list(verdicts)
        self.seen: list[JudgeInput] = []

    def judge(self, task: JudgeInput, deadline: float | None = None) -> JudgeVerdict:
        self.seen.append(task)
        kind = self.verdicts.pop(0) if len(self.verdicts) > 1 else self.verdicts[0]
        if kind is None:
            return JudgeVerdict.failed(
                self.source, 'the judge server is down', task.record.steps_used
            )
        return JudgeVerdict(kind, f'saw {kind}', source=self.source, steps=task.record.steps_used)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def world(clock):
    return World(clock)


@pytest.fixture
def ledger(tmp_path):
    return TaskLedger(tmp_path / 'ledger', fsync=False)


def runner_for(world, ledger, judge, **kwargs) -> TaskRunner:
    params = kwargs.pop('params', RunnerParams())
    return TaskRunner(
        ledger, world, world, world, judge, params=params, clock=world.clock, **kwargs
    )


def text_goal(text: str = 'the pharmacy') -> RunGoal:
    return RunGoal(TaskGoal(GoalModality.TEXT, text))


def assert_recorded(ledger: TaskLedger, record) -> None:
    assert ledger.record(record.task_id) == record
    assert ledger.open_tasks() == ()
    assert record.task_id in ledger.index_text().text


def test_an_arrival_the_judge_confirms_is_certified(world, ledger):
    world.candidate('pharmacy', 4.0)
    judge = ScriptedJudge(VerdictKind.COMPLETE)
    seen = []
    record = runner_for(world, ledger, judge).run(text_goal(), Budget(), seen.append)
    assert record.status is LedgerStatus.CERTIFIED
    assert record.claim_evidence == 'the drive reached pharmacy'
    assert len(judge.seen) == 1  # the post-stop check reuses the pre-stop verdict
    assert [f.phase for f in seen] == [Phase.RECALL, Phase.DRIVE, Phase.VERIFY, Phase.CLOSE]
    assert seen[-1].left.distance_m == pytest.approx(200.0 - 3.0)
    assert (record.stop_pose.x, record.stop_pose.map_epoch) == (4.0, 2)
    assert record.spent.attempts == 1 and record.spent.agent_steps == 2
    frames = judge.seen[0].frames
    # The four stop views first, then earlier frames up to the judge's limit.
    assert sum(f.at_stop for f in frames) == 4 and len(frames) == RunnerParams().judge_frames
    assert_recorded(ledger, record)


def test_each_task_starts_where_the_last_ended(world, ledger):
    world.candidate('pharmacy', 4.0)
    runner = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE))
    runner.run(text_goal(), Budget())
    runner.run(text_goal(), Budget())
    assert world.queries[1].origin.position[0] == 4.0


def test_each_task_is_briefed_with_the_newest_ledger_lines_and_the_house_notes(
    world, ledger, tmp_path
):
    world.candidate('pharmacy', 4.0)
    notes = HouseNotesStore(tmp_path / 'notes', fsync=False)
    notes.write(HouseNotes('index', 'The pharmacy is off the east corridor.', '', ''), 'llm')
    runner = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE), notes=notes)
    first = runner.run(text_goal(), Budget())
    runner.run(text_goal('the bakery'), Budget())
    assert 'east corridor' in world.queries[0].briefing
    assert first.task_id not in world.queries[0].briefing  # nothing before the first task
    assert f'{first.task_id} | CERTIFIED' in world.queries[1].briefing
    (tmp_path / 'notes' / 'CURRENT').write_text('v999999\n')  # damaged notes
    runner.run(text_goal(), Budget())
    assert 'could not be read' in world.queries[2].briefing
    assert len(world.queries[2].briefing) <= RunnerParams().briefing.max_chars


def test_ocr_judge_refuses_the_wrong_sign_and_the_second_candidate_is_certified(
    clock, ledger, draw_sign, text_reader
):
    scenes = {name: jpeg(draw_sign(name.upper())) for name in ('bakery', 'pharmacy')}
    world = World(clock, scenes)
    world.candidate('bakery', 2.0)
    world.candidate('pharmacy', 6.0)
    record = runner_for(world, ledger, OcrJudge(text_reader)).run(
        text_goal('the sign that says "PHARMACY"'), Budget()
    )
    assert record.status is LedgerStatus.CERTIFIED, record
    # Both arrivals were checked; the record keeps the check of the stop it closed on,
    # which certifies it, and the refused one lives on in the handover and the note.
    assert record.pre_stop.verdict is VerdictKind.COMPLETE
    assert record.certificate == record.pre_stop
    assert record.spent.attempts == 2
    assert 'bakery' in record.handover
    assert 'BAKERY' in record.recovery_notes[0].upper() or 'bakery' in record.recovery_notes[0]
    assert_recorded(ledger, record)


def test_a_refused_stop_with_steps_to_spare_recovers_by_requerying_without_it(world, ledger):
    world.recall_steps = 2
    world.candidate('bakery', 2.0)
    world.candidate('pharmacy', 6.0)
    judge = ScriptedJudge(VerdictKind.INCOMPLETE, VerdictKind.COMPLETE)
    record = runner_for(world, ledger, judge).run(text_goal(), Budget())
    assert record.status is LedgerStatus.CERTIFIED
    assert record.spent.recoveries == 1 and record.spent.scopes[0].name == 'PLACE'
    requery = world.queries[1]
    assert requery.exclusions.entry_ids == ('bakery',) and requery.exclusions.positions
    assert requery.note is not None and requery.note.searched == ('bakery',)
    assert requery.note.exclusions[0].place == 'bakery'  # a definite verdict with evidence
    assert len(record.recovery_notes) == 1


def test_a_later_arrival_at_a_wrong_sign_is_refused_too(clock, ledger, draw_sign, text_reader):
    scenes = {name: jpeg(draw_sign(name.upper())) for name in ('bakery', 'cafe', 'pharmacy')}
    world = World(clock, scenes)
    for name, x in (('bakery', 2.0), ('cafe', 6.0), ('pharmacy', 10.0)):
        world.candidate(name, x)
    params = RunnerParams(recovery=RecoveryParams(max_recoveries=0))  # the queue in order
    record = runner_for(world, ledger, OcrJudge(text_reader), params=params).run(
        text_goal('the sign that says "PHARMACY"'), Budget()
    )
    assert record.status is LedgerStatus.CERTIFIED, record
    assert record.spent.attempts == 3  # the cafe, the second claim, was checked and refused
    assert 'cafe' in record.handover and 'bakery' in record.handover


def test_a_queued_sighting_near_a_refused_stop_is_never_driven_to(world, ledger):
    world.candidate('bakery', 2.0)
    world.candidate('bakery-again', 2.8)  # the same wrong sign, seen from elsewhere
    world.candidate('pharmacy', 8.0)
    params = RunnerParams(recovery=RecoveryParams(max_recoveries=0))
    judge = ScriptedJudge(VerdictKind.INCOMPLETE, VerdictKind.COMPLETE)
    record = runner_for(world, ledger, judge, params=params).run(text_goal(), Budget())
    assert record.status is LedgerStatus.CERTIFIED
    assert [goal.position[0] + 1.0 for goal in world.drives] == [2.0, 8.0]
    assert record.spent.attempts == 2


def test_stop_views_and_the_way_to_a_refused_stop_are_not_progress(world, ledger):
    """A real body logs frames all the way: six on the drive and four at the stop are
    three observations, which read as progress would keep a refused stop from recovering."""
    world.recall_steps = 2
    world.frames_per_drive = 12
    world.candidate('bakery', 2.0)
    world.candidate('pharmacy', 6.0)
    judge = ScriptedJudge(VerdictKind.INCOMPLETE, VerdictKind.COMPLETE)
    record = runner_for(world, ledger, judge).run(text_goal(), Budget())
    assert record.spent.recoveries == 1, record.recovery_notes
    assert 'recover at place' in record.recovery_notes[0]


def test_a_failed_drive_that_covered_ground_is_progress_and_goes_on(world, ledger):
    world.recall_steps = 2
    world.frames_per_drive = 8  # two observations on the way
    world.candidate('spot-a', 2.0)
    world.candidate('spot-b', 4.0)
    world.outcomes = [DriveOutcome.FAILED, DriveOutcome.REACHED]
    record = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE)).run(
        text_goal(), Budget()
    )
    assert record.status is LedgerStatus.CERTIFIED
    assert record.spent.recoveries == 0 and 'rules 3' in record.recovery_notes[0]


def test_every_drive_refused_is_stopped_never_certified(world, ledger):
    world.candidate('pharmacy', 4.0)
    world.outcomes = [DriveOutcome.REFUSED] * 5
    record = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE)).run(
        text_goal(), Budget()
    )
    assert record.status is LedgerStatus.STOPPED
    assert record.termination is TerminationReason.DRIVE_REFUSED
    assert 'refused' in record.handover
    assert_recorded(ledger, record)


def test_failed_drives_close_as_incomplete_and_the_judge_decides(world, ledger):
    for n in range(3):
        world.candidate(f'spot{n}', 2.0 + n)
    world.outcomes = [DriveOutcome.FAILED] * 5
    params = RunnerParams(max_attempts=3)
    record = runner_for(world, ledger, ScriptedJudge(VerdictKind.INCOMPLETE), params=params).run(
        text_goal(), Budget()
    )
    assert record.status is LedgerStatus.NOT_DONE
    assert record.claim.value == 'incomplete' and record.spent.attempts == 3
    assert record.pre_stop is None  # a failed drive claims nothing to refuse
    assert_recorded(ledger, record)


def test_a_judge_that_is_down_leaves_the_task_unresolved(world, ledger):
    world.candidate('pharmacy', 4.0)
    record = runner_for(world, ledger, ScriptedJudge(None)).run(text_goal(), Budget())
    assert record.status is LedgerStatus.UNRESOLVED
    assert record.certificate.error == 'the judge server is down'
    assert_recorded(ledger, record)


@pytest.mark.parametrize(
    ('budget', 'reason'),
    [
        (Budget(time_s=8.0), TerminationReason.TIME_BUDGET),
        (Budget(distance_m=5.0), TerminationReason.DISTANCE_BUDGET),
        (Budget(agent_steps=3), TerminationReason.STEP_BUDGET),
    ],
)
def test_each_kind_of_budget_running_out_stops_the_task(world, ledger, budget, reason):
    for n in range(4):
        world.candidate(f'spot{n}', 2.0 + n)
    world.outcomes = [DriveOutcome.FAILED] * 5
    record = runner_for(world, ledger, ScriptedJudge(VerdictKind.INCOMPLETE)).run(
        text_goal(), budget
    )
    assert record.status is LedgerStatus.STOPPED and record.termination is reason
    assert record.spent.attempts == 2
    assert_recorded(ledger, record)


@pytest.mark.parametrize('phase', [Phase.RECALL, Phase.DRIVE, Phase.VERIFY, Phase.RECOVER])
def test_a_cancel_in_each_phase_stops_the_task_as_canceled(world, ledger, phase):
    world.candidate('bakery', 2.0)
    world.candidate('pharmacy', 6.0)
    cancel = threading.Event()

    def on_feedback(feedback):
        if feedback.phase is phase:
            cancel.set()

    judge = ScriptedJudge(VerdictKind.INCOMPLETE, VerdictKind.COMPLETE)
    record = runner_for(world, ledger, judge).run(text_goal(), Budget(), on_feedback, cancel)
    assert record.status is LedgerStatus.STOPPED
    assert record.termination is TerminationReason.CANCELED
    assert f'canceled during {phase}' in record.handover or phase is Phase.DRIVE
    assert_recorded(ledger, record)


def test_a_cancel_once_closing_began_still_closes_with_the_claim(world, ledger):
    world.candidate('pharmacy', 4.0)
    cancel = threading.Event()

    def on_feedback(feedback):
        if feedback.phase is Phase.CLOSE:
            cancel.set()

    record = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE)).run(
        text_goal(), Budget(), on_feedback, cancel
    )
    assert record.status is LedgerStatus.CERTIFIED
    assert_recorded(ledger, record)


@pytest.fixture
def places(tmp_path):
    book = PlaceBook(tmp_path / 'places.json', fsync=False)
    book.mark('charging spot', PlacePose(7.0, 1.0, 0.5), floor=0, epoch=('run1', 0), stamp_ns=1)
    return book


def test_an_unknown_place_name_ends_with_no_goal_naming_close_names(world, ledger, places):
    goal = RunGoal(TaskGoal(GoalModality.PLACE, 'charging spto'))
    record = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE), places=places).run(
        goal, Budget()
    )
    assert record.termination is TerminationReason.NO_GOAL
    assert "'charging spot'" in record.handover and world.drives == []
    assert_recorded(ledger, record)


def test_a_named_place_is_driven_to_without_a_recall(world, ledger, places):
    goal = RunGoal(TaskGoal(GoalModality.PLACE, 'Charging Spot'))
    record = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE), places=places).run(
        goal, Budget()
    )
    assert record.status is LedgerStatus.CERTIFIED and world.queries == []
    assert world.drives[0].position[:2] == (7.0, 1.0)
    assert record.places == ('charging spot',)


def test_a_photo_that_does_not_decode_ends_with_no_goal(world, ledger):
    goal = RunGoal(TaskGoal(GoalModality.PHOTO, photo_ref='img/1'), photo=b'not an image')
    record = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE)).run(goal, Budget())
    assert record.termination is TerminationReason.NO_GOAL
    assert 'does not decode' in record.handover and world.queries == []
    assert_recorded(ledger, record)


def test_memory_without_a_candidate_ends_with_no_goal(world, ledger):
    record = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE)).run(
        text_goal(), Budget()
    )
    assert record.termination is TerminationReason.NO_GOAL
    assert_recorded(ledger, record)


def test_an_exception_in_recall_is_recorded_as_an_error(world, ledger):
    def broken():
        raise RuntimeError('memory is unreachable')

    world.hooks['recall'] = broken
    record = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE)).run(
        text_goal(), Budget()
    )
    assert record.termination is TerminationReason.ERROR
    assert 'RuntimeError: memory is unreachable' in record.handover
    assert_recorded(ledger, record)


@pytest.mark.parametrize(
    'bad',
    [
        {'max_attempts': 0},
        {'max_candidates': 51},
        {'drive_deadline_s': math.inf},
        {'stop_view_count': 5},
        {'judge_frames': 2},
    ],
)
def test_bad_parameters_are_refused(bad):
    with pytest.raises(ValueError):
        RunnerParams(**bad)


def test_the_lessons_of_every_candidate_tried_are_recorded_and_handed_on_once_closed(world, ledger):
    world.candidates = [
        replace(world.candidate('bakery', 2.0), lesson_ids=('sort-by-time', 'route-first')),
        replace(world.candidate('pharmacy', 6.0), lesson_ids=('route-first', 'read-the-sign')),
    ]
    world.outcomes = [DriveOutcome.FAILED, DriveOutcome.REACHED]
    closed = []
    runner = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE), on_closed=closed.append)
    record = runner.run(text_goal(), Budget())
    assert record.status is LedgerStatus.CERTIFIED and record.spent.attempts == 2
    assert record.lesson_ids == ('sort-by-time', 'route-first', 'read-the-sign')
    assert closed == [record] and ledger.record(record.task_id).lesson_ids == record.lesson_ids


def test_a_failing_closed_hook_leaves_the_record_as_it_was(world, ledger):
    world.candidate('pharmacy', 4.0)

    def broken(record) -> None:
        raise RuntimeError('memory_node is away')

    runner = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE), on_closed=broken)
    record = runner.run(text_goal(), Budget())
    assert record.status is LedgerStatus.CERTIFIED
    assert_recorded(ledger, record)


# -- map epochs and relocation -----------------------------------------------------------

NOW, BEFORE = ('run', 2), ('run', 1)


class EpochWorld(World):
    """The world double with a known session: its poses are in map epoch NOW."""

    def pose(self) -> BodyPose:
        return BodyPose(Pose.from_xyz_yaw(*self.position, 0.0, 0.0), 'map', NOW[1], NOW[0])


class ScriptedRelocator:
    """Answers every relocation with `transform` (None: not aligned); the matching itself
    is tested over rendered views in test_task_loop."""

    def __init__(self, transform: SE2 | None) -> None:
        self.transform = transform
        self.calls: list[tuple[int, MapEpoch]] = []

    def relocalise(self, views, current, earlier=()) -> Relocation:
        self.calls.append((len(views), current))
        if self.transform is None:
            alignment = Alignment(False, 'not aligned: 1 heading', current)
        else:
            alignment = Alignment(True, 'aligned', current, BEFORE, self.transform, 4, 4, 2)
        belief = Belief('kitchen', 3, 0.75, 0.9)
        return Relocation((), (), belief, '3 of 4 views match', alignment, len(views))


def old_candidate(world: World, entry_id: str, x: float) -> Candidate:
    made = replace(world.candidate(entry_id, x), epoch=BEFORE)
    world.candidates[-1] = made
    return made


def test_a_candidate_from_another_epoch_is_driven_through_the_alignment(clock, ledger):
    world = EpochWorld(clock)
    candidate = old_candidate(world, 'pharmacy', 4.0)
    relocator = ScriptedRelocator(SE2(1.0, -2.0, 0.0))  # BEFORE -> NOW: ...
    seen = []
    runner = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE), relocator=relocator)
    record = runner.run(text_goal(), Budget(), seen.append)
    # The alignment maps NOW onto BEFORE; the goal travels back by its inverse.
    goal = candidate.goal_pose.position
    assert world.drives[0].position[:2] == pytest.approx((goal[0] - 1.0, goal[1] + 2.0))
    assert relocator.calls == [(RunnerParams().stop_view_count, NOW)]
    assert record.status is LedgerStatus.CERTIFIED
    line = next(n for n in record.recovery_notes if n.startswith('relocation'))
    assert "believed at 'kitchen'" in line and 'in that epoch' in line
    assert any('relocalising' in f.message for f in seen)
    assert any("believed at 'kitchen'" in f.message for f in seen)
    # The alignment holds for the robot, not one task: the next task does not turn again.
    runner.run(text_goal(), Budget())
    assert len(relocator.calls) == 1 and len(world.drives) == 2


@pytest.mark.parametrize('relocator', [None, ScriptedRelocator(None)])
def test_without_an_alignment_no_pose_from_another_epoch_is_driven(clock, ledger, relocator):
    world = EpochWorld(clock)
    candidate = old_candidate(world, 'pharmacy', 4.0)
    runner = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE), relocator=relocator)
    record = runner.run(text_goal(), Budget())
    assert record.status is LedgerStatus.STOPPED
    assert record.termination is TerminationReason.DRIVE_REFUSED
    assert 'not driving to pharmacy' in record.handover
    assert candidate.goal_pose not in world.drives
    if relocator is None:
        assert world.drives == []
    else:
        # Each try after the first looks again from a step away, in the current map.
        tries = RunnerParams().max_relocations
        assert len(relocator.calls) == tries and len(world.drives) == tries - 1
        step = RunnerParams().relocation_step_m
        assert math.hypot(*world.drives[0].position[:2]) == pytest.approx(step)  # from (0, 0)


def test_a_floor_recovery_relocalises_in_the_current_map(clock, ledger):
    world = EpochWorld(clock)
    world.recall_steps = 2
    for index, x in enumerate((2.0, 6.0, 10.0, 14.0)):
        replace_epoch = world.candidate(f'spot-{index}', x)
        world.candidates[-1] = replace(replace_epoch, epoch=NOW)
    relocator = ScriptedRelocator(None)
    explored = []

    class Explorer:
        def explore(self, radius_m, deadline, cancel):
            explored.append(radius_m)
            return DriveResult(DriveOutcome.REACHED, 2.5, '1 frontier reached')

    judge = ScriptedJudge(*[VerdictKind.INCOMPLETE] * 3, VerdictKind.COMPLETE)
    params = RunnerParams(recovery=RecoveryParams(max_recoveries=3))
    runner = runner_for(
        world, ledger, judge, params=params, relocator=relocator, explorer=Explorer()
    )
    record = runner.run(text_goal(), Budget())
    assert [scope.name for scope in record.spent.scopes] == ['PLACE', 'ROOM', 'FLOOR']
    assert relocator.calls == [(RunnerParams().stop_view_count, NOW)]  # at FLOOR only
    # ROOM and FLOOR explore unseen ground near the robot before they re-query.
    assert explored == [PlanParams().frontier_radius_m] * 2
    assert sum('explored within' in n for n in record.recovery_notes) == 2
    assert record.spent.distance_m == pytest.approx(4 * world.drive_m + 2 * 2.5)
    assert record.status is LedgerStatus.CERTIFIED
    assert any(n.startswith('relocation') for n in record.recovery_notes)


def test_a_drive_cut_off_by_a_map_reset_tries_its_candidate_again_in_the_new_map(clock, ledger):
    world = EpochWorld(clock)
    candidate = old_candidate(world, 'pharmacy', 4.0)
    world.outcomes = [DriveOutcome.FAILED]
    relocator = ScriptedRelocator(SE2(0.5, 0.0, 0.0))
    runner = runner_for(world, ledger, ScriptedJudge(VerdictKind.COMPLETE), relocator=relocator)
    # The first drive goes out in BEFORE itself (the body still reports it), then the map
    # resets: from then on the body is in NOW.
    world.pose = lambda: BodyPose(
        Pose.from_xyz_yaw(*world.position, 0.0, 0.0),
        'map',
        *reversed(BEFORE if not world.drives else NOW),
    )
    record = runner.run(text_goal(), Budget())
    assert 'map epoch changed' in record.recovery_notes[0]
    assert world.drives[0] == candidate.goal_pose  # in its own epoch, as it is
    # Tried again, once aligned: the same candidate, carried over.
    assert world.drives[1].position[0] == pytest.approx(candidate.goal_pose.position[0] - 0.5)
    assert record.status is LedgerStatus.CERTIFIED
