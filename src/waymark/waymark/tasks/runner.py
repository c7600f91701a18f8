# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The task runner: the one owner of a task's life, from the ledger's marker to its record.

A task is a chain of attempts that share one budget. Each attempt recalls a candidate from
memory, drives to it, and at the stop turns for views and claims: COMPLETE when the drive
arrived, INCOMPLETE when it did not. Each arrival is checked before the robot stops (a
judge that is sure it is the wrong place sends the task on, and nothing within the
exclusion radius of that stop is tried again in this task); a failed attempt goes to the
recovery controller, whose note the next attempt reads. Only the drive of an attempt that
did not end at a refused stop counts as progress: the stop views, and the way to a place
the judge ruled out, show nothing new about where the goal is. The task closes with the last
claim and the judge's certificate, or stops (budget, cancel, a refused drive, no goal, an
error) without a claim. Every path ends in a record in the ledger.

Memory's candidates carry the map epoch they were seen in. One from another epoch than the
body's is carried over only through an alignment: the first time, the robot turns in place
and relocalises against memory (a FLOOR or HOUSE recovery relocalises too, and says where
it believes the robot is); without an alignment the task stops rather than drive to a
pose from another map. Every relocation is written in the record's notes.

The agent and the drive only report; whether a task is done is the judge's to say.
Steps are the agent's recall steps plus one for each drive, so every stop is judged at a
step count of its own and a certificate is only reused for the very stop it judged.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from waymark.agent.exclusions import MAX_EXCLUDED, Exclusions
from waymark.geometry import Pose
from waymark.memory.storage.image_codec import ImageLimits
from waymark.navigation.epochs import MapEpoch
from waymark.tasks.attempts import (
    Body,
    BodyPose,
    Candidate,
    Clock,
    Drive,
    DriveOutcome,
    DriveResult,
    Explore,
    Recall,
    RecallQuery,
    RunGoal,
    SystemClock,
)
from waymark.tasks.briefing import BriefingLimits, briefing
from waymark.tasks.checks import CheckSwitches, StopChecks
from waymark.tasks.goal_photo import check_goal_photo
from waymark.tasks.house_notes import HouseNotesReader
from waymark.tasks.judge import MAX_PLACE_NAMES, Judge, JudgeInput, MechanicalRecord
from waymark.tasks.ledger import TaskLedger
from waymark.tasks.outcomes import (
    Budget,
    Claim,
    JudgeVerdict,
    Phase,
    Scope,
    Spent,
    TerminationReason,
)
from waymark.tasks.places import PlaceBook, PlacePose, UnknownPlaceError
from waymark.tasks.records import GoalModality, OpenTask, StopPose, TaskRecord
from waymark.tasks.recovery import (
    PlanParams,
    Proposal,
    RecoveryParams,
    RecoveryPlan,
    RecoverySignals,
    Searched,
    decide,
    plan_for,
)
from waymark.tasks.recovery_note import MAX_ITEM_CHARS, RecoveryNote, Stop, mechanical_note
from waymark.tasks.relocation import Alignment, Relocation, ViewMatch, goal_allowed
from waymark.tasks.stop_views import (
    FRAME_LIMIT_CAP,
    HEADING_BUCKETS,
    MAX_JUDGE_FRAMES,
    StopView,
    latest_per_bucket,
    select_frames,
)
from waymark.tasks.view_relocation import RelocationUnavailableError, Relocator

MAX_ATTEMPTS_CAP = 20
MAX_CANDIDATES_CAP = 50
MAX_DEADLINE_S = 3_600.0
_MAX_MESSAGE_CHARS = 500
_MAX_PLACES = 16
_MAX_LESSONS = 64  # lesson ids one record keeps
_RELOCATION = 'relocation'  # how a relocation's note line begins
_MAX_ALIGNMENTS = 32
_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunnerParams:
    """How a task is run. Deadlines are per call and never reach past the task's time
    budget; `stop_view_count` views are taken at each stop, and the judge sees at most
    `judge_frames` pictures in all."""

    max_attempts: int = 4
    max_candidates: int = 5
    recall_deadline_s: float = 60.0
    drive_deadline_s: float = 180.0
    view_deadline_s: float = 30.0
    judge_deadline_s: float = 60.0
    stop_view_count: int = HEADING_BUCKETS
    judge_frames: int = MAX_JUDGE_FRAMES
    max_relocations: int = 3
    relocation_step_m: float = 2.0
    explore_deadline_s: float = 60.0
    checks: CheckSwitches = field(default_factory=CheckSwitches)
    recovery: RecoveryParams = field(default_factory=RecoveryParams)
    plan: PlanParams = field(default_factory=PlanParams)
    image_limits: ImageLimits = field(default_factory=ImageLimits)
    briefing: BriefingLimits = field(default_factory=BriefingLimits)

    def __post_init__(self) -> None:
        if not 1 <= self.max_attempts <= MAX_ATTEMPTS_CAP:
            raise ValueError(f'max_attempts must be in [1, {MAX_ATTEMPTS_CAP}]: {self}')
        if not 1 <= self.max_candidates <= MAX_CANDIDATES_CAP:
            raise ValueError(f'max_candidates must be in [1, {MAX_CANDIDATES_CAP}]: {self}')
        for name in (
            'recall_deadline_s',
            'drive_deadline_s',
            'view_deadline_s',
            'explore_deadline_s',
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 < value <= MAX_DEADLINE_S):
                raise ValueError(f'{name} must be in (0, {MAX_DEADLINE_S}] s, got {value}')
        if not (math.isfinite(self.judge_deadline_s) and 0 < self.judge_deadline_s <= 3600):
            raise ValueError(f'judge_deadline_s must be in (0, 3600] s: {self.judge_deadline_s}')
        if type(self.max_relocations) is not int or not 0 <= self.max_relocations <= 10:
            raise ValueError(f'max_relocations must be in [0, 10]: {self.max_relocations}')
        if not (math.isfinite(self.relocation_step_m) and 0.0 < self.relocation_step_m <= 20):
            raise ValueError(f'relocation_step_m must be in (0, 20] m: {self.relocation_step_m}')
        if not 1 <= self.stop_view_count <= HEADING_BUCKETS:
            raise ValueError(f'stop_view_count must be in [1, {HEADING_BUCKETS}]: {self}')
        if not self.stop_view_count <= self.judge_frames <= FRAME_LIMIT_CAP:
            raise ValueError(
                f'judge_frames must be in [stop_view_count, {FRAME_LIMIT_CAP}], '
                f'got {self.judge_frames}'
            )


@dataclass(frozen=True)
class BudgetLeft:
    time_s: float
    distance_m: float
    agent_steps: int


@dataclass(frozen=True)
class Feedback:
    """What a running task reports at each phase boundary."""

    phase: Phase
    attempt: int
    left: BudgetLeft
    message: str = ''


FeedbackCallback = Callable[[Feedback], None]


class _TaskStoppedError(Exception):
    """A task ends without a claim; carried out of the attempt loop."""

    def __init__(self, reason: TerminationReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class _Ending:
    claim: Claim | None
    message: str
    stop_reason: TerminationReason | None = None
    certificate: JudgeVerdict | None = None


@dataclass
class _Attempt:
    """The failed attempt the task would close with if it gave up now."""

    candidate: Candidate
    evidence: JudgeInput
    failure: str


@dataclass
class _TaskState:
    goal: RunGoal
    budget: Budget
    opened: OpenTask
    cancel: threading.Event
    feedback: FeedbackCallback | None
    started: float
    checks: StopChecks
    spent: Spent = field(default_factory=Spent)
    queue: list[Candidate] = field(default_factory=list)
    searched: list[Searched] = field(default_factory=list)
    stops: list[Stop] = field(default_factory=list)
    notes: list[RecoveryNote] = field(default_factory=list)
    note_lines: list[str] = field(default_factory=list)
    places: list[str] = field(default_factory=list)
    plan: RecoveryPlan | None = None
    last_scope: Scope | None = None
    last_failed: _Attempt | None = None
    anchor: str = ''
    pre_stop: JudgeVerdict | None = None
    stop_pose: BodyPose | None = None
    refused: list[Searched] = field(default_factory=list)  # stops the judge ruled out
    steps_in_attempt: int = 0
    attempt_started_ns: int = 0
    area_at_attempt: float = 0.0
    drive_ended_ns: int = 0
    area_after_drive: float = 0.0
    recallable: bool = True
    briefing: str = ''
    lesson_ids: dict[str, None] = field(default_factory=dict)  # insertion-ordered set
    relocations: int = 0
    last_relocation: tuple[Relocation, Sequence[StopView]] | None = None  # one that failed
    relocation_frames: int = 0  # frames of this attempt's relocation turns
    relocation_matches: dict[MapEpoch, tuple[ViewMatch, ...]] = field(default_factory=dict)

    @property
    def started_ns(self) -> int:
        return self.opened.started_ns


class TaskRunner:
    """Runs tasks one at a time over the robot's parts and writes each one's record."""

    def __init__(
        self,
        ledger: TaskLedger,
        recall: Recall,
        drive: Drive,
        body: Body,
        judge: Judge,
        places: PlaceBook | None = None,
        notes: HouseNotesReader | None = None,
        params: RunnerParams | None = None,
        clock: Clock | None = None,
        run_id: str = '',
        on_closed: Callable[[TaskRecord], None] | None = None,
        relocator: Relocator | None = None,
        explorer: Explore | None = None,
    ) -> None:
        """`on_closed` hears every record once it is in the ledger (task_node calibrates the
        lessons of a verified one); what it raises never changes the task's record.
        `relocator`: how the robot finds itself in an earlier map epoch (None: it cannot,
        and candidates from another epoch are refused). `explorer`: how it looks at unseen
        ground around it before a ROOM-wide (or wider) re-query (None: it does not)."""
        self.ledger = ledger
        self.recall = recall
        self.drive = drive
        self.body = body
        self.judge = judge
        self.places = places
        self.notes = notes
        self.params = params or RunnerParams()
        self.clock = clock or SystemClock()
        self.run_id = run_id
        self.on_closed = on_closed
        self.relocator = relocator
        self.explorer = explorer
        # Epoch alignments hold for the robot's life, not one task's; the newest are kept.
        self.alignments: deque[Alignment] = deque(maxlen=_MAX_ALIGNMENTS)

    def run(
        self,
        goal: RunGoal,
        budget: Budget,
        feedback_cb: FeedbackCallback | None = None,
        cancel_event: threading.Event | None = None,
    ) -> TaskRecord:
        """Run one task to its record; the record is in the ledger when this returns."""
        task_id = self.ledger.begin(goal.goal, self.run_id, now_ns=self.clock.time_ns())
        state = _TaskState(
            goal=goal,
            budget=budget,
            opened=self.ledger.open_task(task_id),
            cancel=cancel_event or threading.Event(),
            feedback=feedback_cb,
            started=self.clock.monotonic(),
            checks=StopChecks(self.judge, self.params.checks),
        )
        try:
            ending = self._attempts(state)
        except _TaskStoppedError as stop:
            ending = _Ending(None, stop.message, stop_reason=stop.reason)
        except Exception as error:  # a task is recorded whatever fails
            ending = _Ending(None, _message(error), stop_reason=TerminationReason.ERROR)
        return self._record(state, ending)

    # -- the attempt loop ----------------------------------------------------------------

    def _attempts(self, state: _TaskState) -> _Ending:
        state.stop_pose = self.body.pose()  # the task starts where the last one ended
        state.briefing = briefing(self.ledger.reader(), self.notes, self.params.briefing)
        self._resolve_goal(state)
        while True:
            if state.spent.attempts >= self.params.max_attempts:
                return self._give_up(state, f'all {self.params.max_attempts} attempts used')
            self._boundary(state, Phase.RECALL)
            self._start_attempt(state)
            candidate = self._next_candidate(state)
            if candidate is None:
                return self._give_up(state, 'memory has no candidate left to try')
            state.spent.attempts += 1
            state.lesson_ids.update(dict.fromkeys(candidate.lesson_ids))
            goal_pose = self._in_current_epoch(state, candidate)
            self._boundary(state, Phase.DRIVE, f'to {candidate.label}')
            deadline = self._deadline(state, 'drive')
            epoch_before = self.body.pose().epoch
            result = self._moved(state, self.drive.drive(goal_pose, deadline, state.cancel))
            state.drive_ended_ns = self.clock.time_ns()
            state.area_after_drive = self.body.signals().explored_area_m2
            state.spent.agent_steps += 1  # a drive is a step, so no two stops share a count
            state.steps_in_attempt += 1
            if self._map_reset(state, candidate, result, epoch_before):
                continue
            state.searched.append(Searched(candidate.entry_id, *candidate.target))
            if result.outcome is DriveOutcome.REFUSED:
                why = result.message or 'no reason given'
                raise _TaskStoppedError(
                    TerminationReason.DRIVE_REFUSED,
                    f'the base refused the goal at {candidate.label}: {why}',
                )
            reached = result.outcome is DriveOutcome.REACHED
            self._boundary(state, Phase.VERIFY, f'at {candidate.label}', spend=False)
            evidence = self._evidence(state, candidate.target)
            self._check_cancel(state, Phase.VERIFY)
            if reached:
                state.anchor = candidate.label
                decision = state.checks.request_stop(
                    Claim.COMPLETE, evidence, self._deadline(state, 'judge')
                )
                if decision.verdict is not None:
                    state.pre_stop = decision.verdict
                    state.places.extend(decision.verdict.places_searched)
                if decision.granted:
                    return self._close(state, Claim.COMPLETE, evidence, _arrived(candidate))
                failure = f'the judge refused the stop at {candidate.label}: {decision.evidence}'
                state.stops.append(Stop(candidate.label, decision.verdict))
                state.refused.append(state.searched[-1])
            else:
                failure = f'the drive to {candidate.label} failed: {result.message or "no reason"}'
                state.stops.append(Stop(candidate.label))
            state.last_failed = _Attempt(candidate, evidence, failure)
            if state.spent.attempts >= self.params.max_attempts:
                continue
            self._boundary(state, Phase.RECOVER, failure, spend=False)
            self._recover(state, refused_stop=reached)
            self._check_cancel(state, Phase.RECOVER)

    def _resolve_goal(self, state: _TaskState) -> None:
        """Check the goal before any move: a place goal becomes its one candidate, a photo
        must decode."""
        goal = state.goal
        if goal.goal.modality is GoalModality.PHOTO:
            try:
                check_goal_photo(goal.photo, self.params.image_limits)
            except ValueError as error:
                raise _TaskStoppedError(
                    TerminationReason.NO_GOAL, f'the goal photo does not decode: {error}'
                ) from None
        if goal.goal.modality is not GoalModality.PLACE:
            return
        if self.places is None:
            raise _TaskStoppedError(TerminationReason.NO_GOAL, 'no named places are kept here')
        try:
            place = self.places.get(goal.goal.text)
        except (UnknownPlaceError, ValueError) as error:
            raise _TaskStoppedError(TerminationReason.NO_GOAL, str(error)) from None
        pose = Pose.from_xyz_yaw(place.pose.x, place.pose.y, 0.0, place.pose.yaw)
        target = (place.pose.x, place.pose.y)
        state.queue = [Candidate(target, pose, f'place:{place.key}', place.name, epoch=place.epoch)]
        state.places.append(place.name)
        state.recallable = False  # a named place is where it was marked; nothing to recall

    def _in_current_epoch(self, state: _TaskState, candidate: Candidate) -> Pose:
        """The candidate's goal pose in the body's map epoch. One from another epoch is
        carried over through an alignment, relocalising first when none is known (after a
        failed try, from a step away); without one the task stops: a pose from another map
        can lead anywhere."""
        current = self.body.pose().epoch
        if candidate.epoch is None or current is None or candidate.epoch == current:
            return candidate.goal_pose
        decision = goal_allowed(candidate.epoch, current, self.alignments)
        while not decision.allowed and self._relocations_left(state):
            if state.last_relocation is not None:
                self._step_away(state, state.last_relocation)
            self._relocalise(state, current)
            decision = goal_allowed(candidate.epoch, current, self.alignments)
        if not decision.allowed or decision.transform is None:
            raise _TaskStoppedError(
                TerminationReason.DRIVE_REFUSED,
                f'not driving to {candidate.label}: {decision.reason}'[:_MAX_MESSAGE_CHARS],
            )
        goal = candidate.goal_pose
        moved = decision.transform.apply(PlacePose(goal.position[0], goal.position[1], goal.yaw))
        return Pose.from_xyz_yaw(moved.x, moved.y, goal.position[2], moved.yaw)

    def _map_reset(
        self,
        state: _TaskState,
        candidate: Candidate,
        result: DriveResult,
        before: MapEpoch | None,
    ) -> bool:
        """Whether a failed drive ended in another map epoch than it began (the robot was
        carried, or SLAM restarted). It then says nothing about the candidate, which is
        tried again first, once the new map is aligned."""
        after = self.body.pose().epoch
        if result.outcome is not DriveOutcome.FAILED or before is None or after == before:
            return False
        state.queue.insert(0, candidate)
        line = (
            f'the map epoch changed from {before} to {after} during the drive to '
            f'{candidate.label}; it is tried again once the new map is aligned'
        )
        state.note_lines.append(line[:MAX_ITEM_CHARS])
        return True

    def _relocations_left(self, state: _TaskState) -> bool:
        return self.relocator is not None and state.relocations < self.params.max_relocations

    def _relocalise(self, state: _TaskState, current: MapEpoch) -> None:
        """Turn in place for views and relocalise against memory; the outcome goes to the
        feedback and the notes, an alignment to every later task too."""
        state.relocations += 1
        self._boundary(state, Phase.RECOVER, f'relocalising in map epoch {current}', spend=False)
        views = self.body.stop_views(self.params.stop_view_count, self._deadline(state, 'view'))
        state.relocation_frames += len(views)
        earlier = state.relocation_matches.get(current, ())
        try:
            relocation = self.relocator.relocalise(views, current, earlier)
        except RelocationUnavailableError as error:
            state.relocations = self.params.max_relocations  # turning again will not help
            line = f'{_RELOCATION} impossible in epoch {current}: {error}'
            state.note_lines.append(line[:MAX_ITEM_CHARS])
            self._boundary(state, Phase.RECOVER, line[:_MAX_MESSAGE_CHARS], spend=False)
            return
        state.relocation_matches = {current: relocation.matches}
        self.alignments.append(relocation.alignment)
        state.last_relocation = None if relocation.alignment.aligned else (relocation, views)
        line = f'{_RELOCATION} {_describe_relocation(relocation, self.body.pose())}'
        state.note_lines.append(line[:MAX_ITEM_CHARS])
        self._boundary(state, Phase.RECOVER, line[:_MAX_MESSAGE_CHARS], spend=False)
        self._check_cancel(state, Phase.RECOVER)

    def _step_away(self, state: _TaskState, failed: tuple[Relocation, Sequence[StopView]]) -> None:
        """Move `relocation_step_m` in the current map to look again from there: towards
        the view that matched most, then the others; a heading the base refuses is skipped."""
        relocation, views = failed
        counts = Counter(m.view_index for m in relocation.matches if m.view_index >= 0)
        order = sorted(range(len(views)), key=lambda i: -counts[i])
        here = self.body.pose().pose
        x, y, _ = here.position
        step = self.params.relocation_step_m
        for index in order:
            heading = views[index].heading
            goal = Pose.from_xyz_yaw(
                x + step * math.cos(heading), y + step * math.sin(heading), 0.0, heading
            )
            self._boundary(state, Phase.DRIVE, 'a step away, to relocalise from there')
            deadline = self._deadline(state, 'drive')
            result = self._moved(state, self.drive.drive(goal, deadline, state.cancel))
            if result.outcome is not DriveOutcome.REFUSED:
                return

    def _start_attempt(self, state: _TaskState) -> None:
        state.relocation_frames = 0
        state.steps_in_attempt = 0
        state.attempt_started_ns = self.clock.time_ns()
        state.area_at_attempt = self.body.signals().explored_area_m2

    def _next_candidate(self, state: _TaskState) -> Candidate | None:
        """The next queued candidate that breaks no exclusion, or a fresh recall when none
        is left; an entry driven to once in this task never comes back, nor anything near
        a stop the judge refused."""
        plan = state.plan
        exclusions = self._exclusions(state)
        state.queue = [c for c in state.queue if not _excluded(c, exclusions)]
        if state.queue:
            return state.queue.pop(0)
        if not state.recallable:
            return None
        query = RecallQuery(
            goal=state.goal,
            origin=self.body.pose().pose,
            max_candidates=self.params.max_candidates,
            exclusions=exclusions,
            search_radius_m=plan.search_radius_m if plan else None,
            frontier_radius_m=plan.frontier_radius_m if plan else None,
            relocalise=plan.relocalise if plan else False,
            note=state.notes[-1] if state.notes else None,
            briefing=state.briefing,
        )
        result = self.recall.recall(query, self._deadline(state, 'recall'))
        state.spent.agent_steps += result.steps
        state.steps_in_attempt += result.steps
        self._check_cancel(state, Phase.RECALL)
        fresh = [c for c in result.candidates if not _excluded(c, exclusions)]
        state.queue = fresh[: self.params.max_candidates]
        if not state.queue and not state.searched:
            raise _TaskStoppedError(TerminationReason.NO_GOAL, 'memory has no candidate')
        return state.queue.pop(0) if state.queue else None

    def _exclusions(self, state: _TaskState) -> Exclusions:
        """What no candidate of this task may be: every entry driven to, the last plan's
        places, and the surroundings of every refused stop (at every scope)."""
        planned = state.plan.exclusions if state.plan else Exclusions()
        ids = (*(place.entry_id for place in state.searched), *planned.entry_ids)
        positions = (*planned.positions, *((place.x, place.y) for place in state.refused))
        radius = self.params.plan.exclusion_radius_m
        return Exclusions(
            entry_ids=tuple(dict.fromkeys(ids))[-MAX_EXCLUDED:],
            positions=tuple(dict.fromkeys(positions))[-MAX_EXCLUDED:],
            radius_m=radius if positions else 0.0,
        )

    def _evidence(self, state: _TaskState, target: tuple[float, float]) -> JudgeInput:
        """Turn at the stop for views, the first facing the candidate's target, and gather
        what the judge may see."""
        params = self.params
        deadline = self._deadline(state, 'view')
        views = self.body.stop_views(params.stop_view_count, deadline, facing=target)
        views = latest_per_bucket(views)[-params.stop_view_count :]
        earlier = self.body.recent_frames(state.started_ns, params.judge_frames)
        frames = select_frames(views, earlier, params.judge_frames)
        state.stop_pose = self.body.pose()
        record = MechanicalRecord(
            task_number=state.opened.sequence,
            steps_used=state.spent.agent_steps,
            step_budget=state.budget.agent_steps,
            frame_count=self.body.frames_since(state.started_ns),
            place_names=tuple(dict.fromkeys(state.places))[:MAX_PLACE_NAMES],
        )
        return JudgeInput(
            record=record,
            frames=tuple(frames),
            goal_text=state.goal.goal.text,
            goal_photo=state.goal.photo,
            stop_pose=state.stop_pose.pose,
        )

    def _recover(self, state: _TaskState, refused_stop: bool) -> None:
        """Ask the recovery controller, with what was measured, how far to go back, and
        write the note the next attempt reads."""
        failed = state.last_failed
        measured = self.body.signals()
        if refused_stop:  # the way to a place ruled out, and its views: nothing new
            new_area, new_frames = 0.0, 0
        else:  # the drive's ground and frames; the stop views after it are not progress
            new_area = max(0.0, state.area_after_drive - state.area_at_attempt)
            since_attempt = self.body.frames_since(state.attempt_started_ns)
            after_drive = self.body.frames_since(state.drive_ended_ns)
            new_frames = max(0, since_attempt - after_drive - state.relocation_frames)
        signals = RecoverySignals(
            steps_in_attempt=state.steps_in_attempt,
            new_area_m2=new_area,
            new_frames=new_frames,
            tracking_lost=measured.tracking_lost,
            first_visit=measured.first_visit,
            last_scope=state.last_scope,
            recoveries_used=state.spent.recoveries,
        )
        # A stop the judge refused points at the wrong place; a failed drive only at the
        # way there. The proposal is the runner's own, from what it measured.
        proposal = Proposal(
            Scope.PLACE if refused_stop else Scope.ATTEMPT,
            reason=failed.failure[:_MAX_MESSAGE_CHARS] if failed else '',
        )
        decision = decide(self.params.recovery, signals, proposal)
        note = mechanical_note(
            state.stops,
            untried=[candidate.label for candidate in state.queue],
            anchor='' if measured.tracking_lost else state.anchor,
            tracking_lost=measured.tracking_lost,
            suggested_scope=decision.scope,
        )
        state.notes.append(note)
        line = f'after attempt {state.spent.attempts}: {decision.describe()}'
        state.note_lines.append(line[:MAX_ITEM_CHARS])
        if not decision.recover:
            return
        plan = plan_for(decision.scope, state.searched, self.params.plan, state.refused)
        state.plan = plan
        state.last_scope = decision.scope
        state.spent.recoveries += 1
        state.spent.scopes.append(decision.scope)
        if plan.requery:
            state.queue.clear()
        current = self.body.pose().epoch
        if plan.relocalise and current is not None and self._relocations_left(state):
            self._relocalise(state, current)
        if plan.frontier_radius_m is not None and self.explorer is not None:
            self._explore(state, plan.frontier_radius_m)

    def _explore(self, state: _TaskState, radius_m: float) -> None:
        """Look at unseen ground near the robot before the next recall: what it sees there
        reaches memory, and the re-query can find it. The way counts in the budget."""
        self._boundary(state, Phase.DRIVE, f'exploring unseen ground within {radius_m:.1f} m')
        deadline = self._deadline(state, 'explore')
        result = self._moved(state, self.explorer.explore(radius_m, deadline, state.cancel))
        said = f': {result.message}' if result.message else ''
        line = (
            f'explored within {radius_m:.1f} m: {result.outcome}, '
            f'{result.distance_m:.1f} m driven{said}'
        )
        state.note_lines.append(line[:MAX_ITEM_CHARS])

    def _moved(self, state: _TaskState, result: DriveResult) -> DriveResult:
        """The way a drive or an exploration took counts in the budget, whatever its
        outcome; a cancel during it stops the task."""
        state.spent.distance_m += result.distance_m
        if result.outcome is DriveOutcome.CANCELED or state.cancel.is_set():
            raise _TaskStoppedError(TerminationReason.CANCELED, 'canceled while moving')
        return result

    def _give_up(self, state: _TaskState, why: str) -> _Ending:
        failed = state.last_failed
        if failed is None:
            raise _TaskStoppedError(TerminationReason.NO_GOAL, why)
        return self._close(state, Claim.INCOMPLETE, failed.evidence, f'{why}; {failed.failure}')

    def _close(
        self, state: _TaskState, claim: Claim, evidence: JudgeInput, message: str
    ) -> _Ending:
        self._boundary(state, Phase.CLOSE, message, spend=False)
        certificate = state.checks.certify(evidence, self._deadline(state, 'judge'))
        if certificate is not None:
            state.places.extend(certificate.places_searched)
        return _Ending(claim, message, certificate=certificate)

    # -- boundaries, budget and the record -----------------------------------------------

    def _boundary(self, state: _TaskState, phase: Phase, message: str = '', spend=True) -> None:
        """Cancel is honoured at every boundary; the budget only before something is spent
        (an arrival is still verified and closed when the drive used the last of it)."""
        self._check_cancel(state, phase)
        if spend and (reason := state.spent.exhausted(state.budget)):
            raise _TaskStoppedError(reason, f'the {reason} ran out before {phase}')
        if state.feedback is not None:
            left = BudgetLeft(
                max(0.0, state.budget.time_s - state.spent.time_s),
                max(0.0, state.budget.distance_m - state.spent.distance_m),
                max(0, state.budget.agent_steps - state.spent.agent_steps),
            )
            state.feedback(Feedback(phase, state.spent.attempts, left, message))

    def _check_cancel(self, state: _TaskState, phase: Phase) -> None:
        state.spent.time_s = self.clock.monotonic() - state.started
        if state.cancel.is_set():
            raise _TaskStoppedError(TerminationReason.CANCELED, f'canceled during {phase}')

    def _deadline(self, state: _TaskState, call: str) -> float:
        per_call = getattr(self.params, f'{call}_deadline_s')
        now = self.clock.monotonic()
        return min(now + per_call, state.started + state.budget.time_s)

    def _record(self, state: _TaskState, ending: _Ending) -> TaskRecord:
        state.spent.time_s = max(0.0, self.clock.monotonic() - state.started)
        record = TaskRecord.for_task(
            state.opened,
            max(self.clock.time_ns(), state.started_ns),
            claim=ending.claim,
            stop_reason=ending.stop_reason,
            claim_evidence=ending.message if ending.claim is not None else '',
            pre_stop=state.pre_stop,
            certificate=ending.certificate,
            handover=_handover(state, ending),
            places=tuple(dict.fromkeys(name for name in state.places if name))[:_MAX_PLACES],
            spent=state.spent,
            recovery_notes=tuple(state.note_lines),
            stop_pose=_stop_pose(state.stop_pose),
            lesson_ids=tuple(state.lesson_ids)[:_MAX_LESSONS],
        )
        try:
            self.ledger.close(record)
        except ValueError as error:
            # A record the ledger refuses (too large) still leaves a trace of the task.
            record = TaskRecord.for_task(
                state.opened,
                record.ended_ns,
                stop_reason=TerminationReason.ERROR,
                handover=f'the record could not be written: {_message(error)}',
                spent=state.spent,
            )
            self.ledger.close(record)
        closed = self.ledger.record(record.task_id)
        if self.on_closed is not None:
            try:
                self.on_closed(closed)
            except Exception:  # the task is recorded; what follows it cannot change that
                _LOG.exception('the closed-task hook failed for %s', closed.task_id)
        return closed


def _describe_relocation(relocation: Relocation, here: BodyPose) -> str:
    """One line: what matched, whether it aligned, and where that puts the robot."""
    alignment = relocation.alignment
    parts = [f'in epoch {alignment.source_epoch}: {relocation.belief_reason}']
    if relocation.belief is not None:
        parts.append(f'believed at {relocation.belief.place!r}')
    parts.append(alignment.reason)
    if alignment.aligned and alignment.transform is not None:
        x, y, _ = here.pose.position
        there = alignment.transform.apply(PlacePose(x, y, here.pose.yaw))
        parts.append(f'the robot is at ({there.x:.1f}, {there.y:.1f}) in that epoch')
    return '; '.join(parts)


def _excluded(candidate: Candidate, exclusions: Exclusions) -> bool:
    """Whether a candidate breaks the exclusions: a recall that ignores them, or a queued
    sighting of a thing already ruled out, would send the robot back where it has been."""
    return exclusions.excludes(candidate.entry_id, *candidate.target)


def _arrived(candidate: Candidate) -> str:
    return f'the drive reached {candidate.label}'


def _message(error: BaseException) -> str:
    return f'{type(error).__name__}: {error}'[:_MAX_MESSAGE_CHARS]


def _stop_pose(body: BodyPose | None) -> StopPose | None:
    if body is None:
        return None
    x, y, _ = body.pose.position
    return StopPose(x, y, body.pose.yaw, body.frame, body.map_epoch)


def _handover(state: _TaskState, ending: _Ending) -> str:
    """The runner's own account for the next task, from what it recorded (the ledger
    cleans it and keeps at most its first words)."""
    goal = state.goal.goal
    lines = [f'Goal ({goal.modality}): {goal.text or "a photo"}.']
    if ending.claim is None:
        lines.append(f'Stopped ({ending.stop_reason}): {ending.message}.')
    else:
        lines.append(f'Claimed {ending.claim}: {ending.message}.')
        if ending.certificate is not None:
            verdict = ending.certificate
            said = verdict.evidence or verdict.error or 'no evidence given'
            lines.append(f'Judge ({verdict.source}) said {verdict.verdict}: {said}.')
    searched = list(dict.fromkeys(stop.place for stop in state.stops))
    if searched:
        lines.append(f'Searched without success: {", ".join(searched)}.')
    if state.notes and state.notes[-1].exclusions:
        ruled_out = ', '.join(item.place for item in state.notes[-1].exclusions)
        lines.append(f'Ruled out by what was seen: {ruled_out}.')
    return ' '.join(lines)
