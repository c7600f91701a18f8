# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Chained tasks driven closed loop in a synthetic world, in simulated time.

The task runner's protocols get sim implementations here: `SimClock` moves only when the
simulated base drives, turns or thinks, so no run waits on the wall clock; `SimBase` plans
on the world's free space and moves the base (`Drive`), renders the views at a stop and the
frames on the way (`Body`); `MemoryRecall` turns the ranked memory hits of the goal into
candidates, located as the embedder-only answerer locates its answer. Memory is the
world's tour, rendered and read once per world.

Two flows run the same sequences on equal terms: `task-layer` (the TaskRunner with its
judge and recovery) and `single-shot` (Ask then GoTo: the best candidate once, drive,
stop). Both recall as deep (the runner's `max_candidates` per query, so the same memory
hits are read and the same candidate comes first) and both turn in place for the runner's
stop views. Ground truth only scores.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from waymark.evaluation.task_geometry import CAMERA_HEIGHT_M, HFOV_DEG, FreeSpace
from waymark.evaluation.task_scoring import TaskOutcome
from waymark.evaluation.task_sequences import SequenceStep, StepKind, TaskSequence
from waymark.geometry import Pose
from waymark.localisation.params import LocalisationParams
from waymark.localisation.place import place
from waymark.memory.entries import FRAME, CameraModel, Keyframe
from waymark.memory.factory import MemoryConfig, load_models, open_memory
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_codec import ImageLimits, decode_image
from waymark.memory.views.ocr import TextReader
from waymark.memory.views.registry import ViewSettings
from waymark.navigation.epochs import MapEpoch
from waymark.navigation.planner import PlanError
from waymark.sim.bag import DEFAULT_EXTRINSIC
from waymark.sim.render import render
from waymark.sim.trajectory import plan_tour
from waymark.sim.world import World
from waymark.tasks.attempts import (
    BodyPose,
    BodySignals,
    Candidate,
    DriveOutcome,
    DriveResult,
    Recall,
    RecallQuery,
    RecallResult,
    RunGoal,
)
from waymark.tasks.judge import Judge, JudgeInput, photo_words
from waymark.tasks.ledger import TaskLedger
from waymark.tasks.outcomes import Budget, JudgeVerdict
from waymark.tasks.places import PlaceBook, PlacePose, UnknownPlaceError
from waymark.tasks.records import GoalModality, StopPose, TaskGoal, TaskRecord
from waymark.tasks.relocation import SE2
from waymark.tasks.runner import RunnerParams, TaskRunner
from waymark.tasks.stop_views import StopView
from waymark.tasks.view_relocation import MemoryRelocator, Relocator, ViewRelocationParams

TOUR_SESSION = 'tour'
TASK_SESSION = 'tasks'
NS_PER_S = 1_000_000_000
MAX_LOGGED_FRAMES = 10_000


@dataclass(frozen=True)
class SimParams:
    """The simulated robot: how fast it drives and turns, how long a recall takes, how
    big its pictures are, how far from a goal its planner looks for a free cell, how often
    it keeps a frame on the way and how far around it counts as explored. Memory's tour
    frames are `width` x `height`; the views at a stop and on the way are taken at the
    robot camera's `view_width` x `view_height`, which the judge reads."""

    speed_mps: float = 0.5
    turn_s_per_view: float = 2.0
    recall_s: float = 2.0
    goal_tolerance_m: float = 0.5
    frame_spacing_m: float = 1.0
    seen_radius_m: float = 2.0
    width: int = 320
    height: int = 240
    view_width: int = 640
    view_height: int = 480
    hfov_deg: float = HFOV_DEG

    def __post_init__(self) -> None:
        for name in ('speed_mps', 'frame_spacing_m', 'seen_radius_m', 'hfov_deg'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'{name} must be > 0, got {value}')
        for name in ('turn_s_per_view', 'recall_s', 'goal_tolerance_m'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f'{name} must be >= 0, got {value}')
        for name in ('width', 'height', 'view_width', 'view_height'):
            if not 16 <= getattr(self, name) <= 4096:
                raise ValueError(f'{name} must be in [16, 4096], got {getattr(self, name)}')


class SimClock:
    """Simulated time: seconds since the run began, advanced by the simulated robot."""

    def __init__(self, origin_ns: int = 0) -> None:
        if origin_ns < 0:
            raise ValueError(f'origin_ns must be >= 0, got {origin_ns}')
        self.origin_ns = origin_ns
        self._now_s = 0.0

    def monotonic(self) -> float:
        return self._now_s

    def time_ns(self) -> int:
        return self.origin_ns + round(self._now_s * NS_PER_S)

    def advance(self, seconds: float) -> None:
        if not (math.isfinite(seconds) and seconds >= 0.0):
            raise ValueError(f'time only moves forward: {seconds}')
        self._now_s += seconds


@dataclass(frozen=True)
class _Frame:
    stamp_ns: int
    x: float
    y: float
    yaw: float


class SimBase:
    """The sim robot as the runner's `Drive` and `Body`: one pose, moved along planned
    paths on the world's free space; `explored` starts with the ground the tour covered.

    The base keeps the tour's map (epoch 0 of the tour session, whose frame is the
    world's) until it is kidnapped: picked up mid-drive and set down elsewhere. Then, as a
    LIO restarted on the spot does, it starts a new map epoch whose origin is where it was
    set down, and reports its pose, views and goals in that frame; the world pose stays
    inside, for scoring only. `old_epoch_goals` counts goals it was sent that are a
    remembered candidate's pose from another epoch, taken as if it were in this one."""

    def __init__(
        self,
        world: World,
        space: FreeSpace,
        clock: SimClock,
        start: tuple[float, float, float],
        params: SimParams | None = None,
        explored_from: Sequence[tuple[float, float]] = (),
    ) -> None:
        self.world = world
        self.space = space
        self.clock = clock
        self.params = params or SimParams()
        self.x, self.y, self.yaw = start
        self.epoch: MapEpoch = (TOUR_SESSION, 0)
        self.to_world = SE2()  # the current epoch's frame in the world's
        self.pending_kidnap: tuple[float, float, float] | None = None
        self.kidnaps = 0
        self.old_epoch_goals = 0
        self.stale_goals: set[tuple[float, float]] = set()  # remembered, old-epoch targets
        self._frames_of: dict[MapEpoch, SE2] = {self.epoch: self.to_world}
        self._frames: list[_Frame] = []
        self._explored = np.zeros(space.geometry.shape, dtype=bool)
        self._first_visit = False
        self.stops: list[tuple[float, float, float]] = []  # where stop views were taken
        self._mark_seen(explored_from)

    # -- Drive ---------------------------------------------------------------------------

    def drive(self, goal: Pose, deadline: float, cancel: threading.Event) -> DriveResult:
        """Plan to the free cell nearest the goal and follow the plan at `speed_mps`; a
        goal off the map, in no free space near it or cut off from the base is refused."""
        if cancel.is_set():
            return DriveResult(DriveOutcome.CANCELED, message='canceled before moving')
        local = (round(float(goal.position[0]), 6), round(float(goal.position[1]), 6))
        if local in self.stale_goals:
            self.old_epoch_goals += 1
        world = self.to_world.apply(PlacePose(goal.position[0], goal.position[1], goal.yaw))
        gx, gy = world.x, world.y
        free = self._free_near(gx, gy, self.params.goal_tolerance_m)
        if free is None:
            return DriveResult(
                DriveOutcome.REFUSED, message=f'no free ground near ({gx:.2f}, {gy:.2f})'
            )
        start = self._free_near(self.x, self.y, self.params.goal_tolerance_m)
        if start is None:
            return DriveResult(DriveOutcome.REFUSED, message='the base is not on free ground')
        try:
            plan = self.space.planner.plan(start, free)
        except PlanError as error:
            return DriveResult(DriveOutcome.REFUSED, message=f'no path: {error}')
        reach_m = max(0.0, deadline - self.clock.monotonic()) * self.params.speed_mps
        if self.pending_kidnap is not None:
            reach_m = min(reach_m, plan.smoothed_length_m / 2.0)
        points, length = _prefix(plan.smoothed, reach_m)
        self._first_visit = not self._was_explored(*points[-1])
        self._follow(points)
        if self.pending_kidnap is not None:
            self._kidnap(self.pending_kidnap)
            return DriveResult(
                DriveOutcome.FAILED, length, 'the robot was picked up and set down elsewhere'
            )
        if length >= plan.smoothed_length_m - 1e-9:
            self.yaw = world.yaw
            return DriveResult(DriveOutcome.REACHED, length)
        return DriveResult(DriveOutcome.FAILED, length, 'the deadline came before the goal')

    def explore(self, radius_m: float, deadline: float, cancel: threading.Event) -> DriveResult:
        """Drive to the nearest free ground within `radius_m` the base has not seen (by
        path length, as a frontier explorer picks); REFUSED when all of it is seen."""
        if cancel.is_set():
            return DriveResult(DriveOutcome.CANCELED, message='canceled before moving')
        self._mark_seen([(self.x, self.y)])  # where it stands it sees
        distances = self.space.distances_from(self.x, self.y)
        unseen = self.space.grid.traversable & ~self._explored & (distances <= radius_m)
        if not unseen.any():
            return DriveResult(
                DriveOutcome.REFUSED, message=f'no unseen ground within {radius_m:.1f} m'
            )
        row, col = np.unravel_index(np.argmin(np.where(unseen, distances, np.inf)), unseen.shape)
        x, y = self.space.geometry.cells_to_world(np.array([[row, col]]))[0]
        here = self.local(float(x), float(y), self.yaw)
        return self.drive(Pose.from_xyz_yaw(here.x, here.y, 0.0, here.yaw), deadline, cancel)

    def teleport(self, pose: tuple[float, float, float]) -> None:
        """Put the base at `pose` (the robot was brought there, as for a MARK)."""
        self.x, self.y, self.yaw = pose
        self._mark_seen([(self.x, self.y)])

    def _kidnap(self, pose: tuple[float, float, float]) -> None:
        """Set the base down at the world pose `pose` and start a new map epoch there."""
        self.pending_kidnap = None
        self.kidnaps += 1
        self.teleport(pose)
        self.epoch = (self.epoch[0], self.epoch[1] + 1)
        self.to_world = SE2(*pose)
        self._frames_of[self.epoch] = self.to_world

    def local(self, x: float, y: float, yaw: float) -> PlacePose:
        """A world pose in the current epoch's frame."""
        return self.to_world.inverse().apply(PlacePose(x, y, yaw))

    def world_pose(self, stop: StopPose) -> tuple[float, float, float]:
        """A pose the base reported, in the world (ground truth, for scoring)."""
        frame = self._frames_of.get((self.epoch[0], stop.map_epoch), SE2())
        world = frame.apply(PlacePose(stop.x, stop.y, stop.yaw))
        return (world.x, world.y, world.yaw)

    # -- Body ----------------------------------------------------------------------------

    def pose(self) -> BodyPose:
        here = self.local(self.x, self.y, self.yaw)
        session, epoch = self.epoch
        return BodyPose(Pose.from_xyz_yaw(here.x, here.y, 0.0, here.yaw), 'map', epoch, session)

    def stop_views(
        self, count: int, deadline: float, facing: tuple[float, float] | None = None
    ) -> list[StopView]:
        """Turn a full circle, one view every 2 pi / count from the heading towards
        `facing` (the current yaw without it), until the deadline."""
        self.stops.append((self.x, self.y, self.yaw))
        start = self.yaw
        if facing is not None:
            facing_world = self.to_world.apply(PlacePose(facing[0], facing[1], 0.0))
            facing = (facing_world.x, facing_world.y)
        if facing is not None and math.dist(facing, (self.x, self.y)) > 1e-6:
            start = math.atan2(facing[1] - self.y, facing[0] - self.x)
        views = []
        for k in range(count):
            if k and self.clock.monotonic() + self.params.turn_s_per_view > deadline:
                break
            heading = start + 2.0 * math.pi * k / count
            self.clock.advance(self.params.turn_s_per_view)
            frame = _Frame(self.clock.time_ns(), self.x, self.y, heading)
            self._log(frame)
            views.append(self._view(frame))
        return views

    def recent_frames(self, since_ns: int, limit: int) -> list[StopView]:
        """Up to `limit` frames kept since `since_ns`, evenly spread, rendered now."""
        frames = [frame for frame in self._frames if frame.stamp_ns >= since_ns]
        if limit <= 0 or not frames:
            return []
        picks = np.unique(np.linspace(0, len(frames) - 1, min(limit, len(frames))).round())
        return [self._view(frames[int(i)]) for i in picks]

    def frames_since(self, since_ns: int) -> int:
        return sum(frame.stamp_ns >= since_ns for frame in self._frames)

    def signals(self) -> BodySignals:
        area = float(self._explored.sum()) * self.space.geometry.resolution**2
        return BodySignals(explored_area_m2=area, first_visit=self._first_visit)

    # -- inside --------------------------------------------------------------------------

    def _free_near(self, x: float, y: float, within_m: float) -> tuple[float, float] | None:
        if not self.space.geometry.contains(x, y):
            return None
        return (x, y) if self.space.free(x, y) else self.space.nearest_free(x, y, within_m)

    def _follow(self, points: np.ndarray) -> None:
        """Move along `points`, keeping a frame every `frame_spacing_m` stamped when the
        base passed it, and advance the clock by the time the whole way took."""
        spacing, speed = self.params.frame_spacing_m, self.params.speed_mps
        started_ns = self.clock.time_ns()
        travelled = 0.0
        for (x0, y0), (x1, y1) in itertools.pairwise(points):
            step = math.hypot(x1 - x0, y1 - y0)
            if step <= 0.0:
                continue
            heading = math.atan2(y1 - y0, x1 - x0)
            first = math.ceil(travelled / spacing) * spacing - travelled
            for s in np.arange(first, step, spacing):
                stamp = started_ns + round((travelled + s) / speed * NS_PER_S)
                fx, fy = x0 + (x1 - x0) * s / step, y0 + (y1 - y0) * s / step
                self._log(_Frame(stamp, float(fx), float(fy), heading))
            travelled += step
            self.x, self.y, self.yaw = float(x1), float(y1), heading
            self._mark_seen(_samples(x0, y0, x1, y1, self.params.seen_radius_m / 2))
        self.clock.advance(travelled / speed)

    def _log(self, frame: _Frame) -> None:
        if len(self._frames) >= MAX_LOGGED_FRAMES:
            del self._frames[0]
        self._frames.append(frame)

    def _view(self, frame: _Frame) -> StopView:
        params = self.params
        eye = Pose.from_xyz_yaw(frame.x, frame.y, CAMERA_HEIGHT_M, frame.yaw)
        pixels = render(self.world, eye, params.view_width, params.view_height, params.hfov_deg)
        here = self.local(frame.x, frame.y, frame.yaw)
        heading = frame.yaw - self.to_world.yaw  # unwrapped, as the base turned
        pose = Pose.from_xyz_yaw(here.x, here.y, 0.0, heading)
        return StopView(encode_jpeg(pixels), heading, frame.stamp_ns, pose)

    def _was_explored(self, x: float, y: float) -> bool:
        row, col = self.space.geometry.world_to_cell(x, y)
        height, width = self._explored.shape
        return 0 <= row < height and 0 <= col < width and bool(self._explored[row, col])

    def _mark_seen(self, points: Sequence[tuple[float, float]]) -> None:
        geometry = self.space.geometry
        radius = max(1, round(self.params.seen_radius_m / geometry.resolution))
        offsets = np.arange(-radius, radius + 1)
        disc = offsets[:, None] ** 2 + offsets[None, :] ** 2 <= radius**2
        height, width = self._explored.shape
        for x, y in points:
            row, col = geometry.world_to_cell(x, y)
            r0, r1 = max(0, row - radius), min(height, row + radius + 1)
            c0, c1 = max(0, col - radius), min(width, col + radius + 1)
            if r0 >= r1 or c0 >= c1:
                continue
            patch = disc[
                r0 - row + radius : r1 - row + radius, c0 - col + radius : c1 - col + radius
            ]
            self._explored[r0:r1, c0:c1] |= patch


def _prefix(points: np.ndarray, reach_m: float) -> tuple[np.ndarray, float]:
    """The first `reach_m` metres of a polyline, and their length."""
    kept = [points[0]]
    length = 0.0
    for a, b in itertools.pairwise(points):
        step = float(np.hypot(*(b - a)))
        if length + step > reach_m:
            if step > 0.0 and reach_m > length:
                kept.append(a + (b - a) * (reach_m - length) / step)
                length = reach_m
            break
        kept.append(b)
        length += step
    return np.asarray(kept, dtype=float), length


def _samples(
    x0: float, y0: float, x1: float, y1: float, spacing: float
) -> list[tuple[float, float]]:
    count = max(1, math.ceil(math.hypot(x1 - x0, y1 - y0) / spacing))
    return [(x0 + (x1 - x0) * t, y0 + (y1 - y0) * t) for t in np.linspace(0.0, 1.0, count + 1)]


def encode_jpeg(pixels: np.ndarray, quality: int = 90) -> bytes:
    ok, jpeg = cv2.imencode(
        '.jpg', np.ascontiguousarray(pixels[..., ::-1]), [cv2.IMWRITE_JPEG_QUALITY, quality]
    )
    if not ok:
        raise ValueError('the frame could not be encoded')
    return jpeg.tobytes()


@dataclass(frozen=True)
class RecallParams:
    """How many memory hits are read per candidate wanted, at most how many, and how close
    two located targets are to count as one place."""

    hits_per_candidate: int = 4
    max_hits: int = 50
    merge_radius_m: float = 1.0


class MemoryRecall:
    """The embedder-only answerer's ranked hits as candidates: each hit located as the
    answerer locates its best one (with the map's free space for the standoff pose),
    near-duplicate places merged, the query's exclusions honoured. It reads no briefing or
    note: an embedding search has no use for them. A photo goal is searched by image when
    memory has an image view, else by the writing `reader` reads in the photo."""

    def __init__(
        self,
        memory: MemoryService,
        space: FreeSpace,
        clock: SimClock,
        sim: SimParams | None = None,
        params: RecallParams | None = None,
        localisation: LocalisationParams | None = None,
        reader: TextReader | None = None,
    ) -> None:
        self.memory = memory
        self.reader = reader
        self.space = space
        self.clock = clock
        self.sim = sim or SimParams()
        self.params = params or RecallParams()
        self.localisation = localisation or LocalisationParams()

    def recall(self, query: RecallQuery, deadline: float) -> RecallResult:
        self.clock.advance(min(self.sim.recall_s, max(0.0, deadline - self.clock.monotonic())))
        wanted = query.max_candidates * self.params.hits_per_candidate
        excluded = query.exclusions
        k = min(self.params.max_hits, wanted + len(excluded.entry_ids))
        goal = query.goal
        text = goal.goal.text if goal.goal.modality is not GoalModality.PHOTO else ''
        if goal.goal.modality is GoalModality.PHOTO:
            image = decode_image(goal.photo, ImageLimits())
            if self.memory.image_views(FRAME):
                hits = self.memory.search(SearchQuery(Mode.IMAGE, k, image=image))
            else:
                text = self._photo_text(image)
                hits = self.memory.search(SearchQuery(Mode.TEXT, k, text=text)) if text else []
        else:
            hits = self.memory.search(SearchQuery(Mode.TEXT, k, text=text))
        others = [hit.record for hit in hits]
        candidates: list[Candidate] = []
        for hit in hits:
            record = hit.record
            if not record.pose_valid or excluded.excludes_entry(record.id):
                continue
            target, standoff = place(
                record, text, others, self.localisation, self.space.free, hit.region
            )
            spot = (target.x, target.y)
            if excluded.excludes_point(*spot):
                continue
            if _near_any(spot, [c.target for c in candidates], self.params.merge_radius_m):
                continue
            pose = Pose.from_xyz_yaw(standoff.x, standoff.y, 0.0, standoff.yaw)
            epoch = (record.session, record.map_epoch)
            candidates.append(Candidate(spot, pose, record.id, _describe(record.text), epoch=epoch))
        if query.search_radius_m is not None:  # a widened search looks near the robot first
            ox, oy = query.origin.position[0], query.origin.position[1]
            near = [c for c in candidates if math.dist(c.target, (ox, oy)) <= query.search_radius_m]
            candidates = near + [c for c in candidates if c not in near]
        return RecallResult(tuple(candidates[: query.max_candidates]))

    def _photo_text(self, image: np.ndarray) -> str:
        if self.reader is None:
            return ''
        return ' '.join(sorted(photo_words(self.reader, image)))


def _near_any(
    point: tuple[float, float], others: Sequence[tuple[float, float]], radius: float
) -> bool:
    return any(math.dist(point, other) <= radius for other in others)


def _describe(text: str) -> str:
    return f'memory reads "{text[:200]}"' if text else ''


def build_tour_memory(
    world: World,
    folder: Path,
    settings: ViewSettings,
    rate_hz: float = 0.5,
    tour_seed: int = 0,
    sim: SimParams | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> MemoryService:
    """Memory of the world's tour: frames rendered at `rate_hz` from the camera on the
    base, each with its pose and camera model, through the memory service as the robot
    stores them (no segments). Close it with `memory.store.close()`."""
    sim = sim or SimParams()
    memory = open_memory(MemoryConfig(Path(folder), segment_window_s=0), load_models(settings))
    tour = plan_tour(world, seed=tour_seed)
    camera = CameraModel.from_hfov(sim.width, sim.height, sim.hfov_deg)
    stamps = tour.stamps(rate_hz)
    for index, stamp in enumerate(stamps):
        pose = tour.pose_at(int(stamp)).compose(DEFAULT_EXTRINSIC)
        pixels = render(world, pose, sim.width, sim.height, sim.hfov_deg)
        memory.ingest(
            Keyframe(
                TOUR_SESSION, index, int(stamp), pose, True, 0, encode_jpeg(pixels), camera=camera
            )
        )
        if progress is not None:
            progress(index + 1, len(stamps))
    return memory


def tour_positions(
    world: World, tour_seed: int = 0, rate_hz: float = 1.0
) -> list[tuple[float, float]]:
    """Where the tour went: the ground the robot has seen before its first task."""
    tour = plan_tour(world, seed=tour_seed)
    return [tuple(tour.pose_at(int(s)).position[:2]) for s in tour.stamps(rate_hz)]


@dataclass
class Setting:
    """One world's shared parts: its free space, its tour memory, the judge and the
    parameters each flow runs with."""

    world: World
    space: FreeSpace
    memory: MemoryService
    judge: Judge
    photos: dict[str, bytes]  # a photo step's image name -> PNG bytes
    explored: list[tuple[float, float]]
    sim: SimParams = dataclasses.field(default_factory=SimParams)
    runner: RunnerParams = dataclasses.field(default_factory=RunnerParams)
    budget: Budget = dataclasses.field(default_factory=Budget)
    localisation: LocalisationParams = dataclasses.field(default_factory=LocalisationParams)
    origin_ns: int = 0
    photo_reader: TextReader | None = None  # reads photo goals when memory has no image view


@dataclass
class FlowRun:
    """One flow over one sequence: outcomes in task order, the ledger's records, and for
    a kidnapped run each searched task's kidnap outcome (None for the others)."""

    outcomes: list[TaskOutcome]
    records: list[TaskRecord]
    kidnaps: list[KidnapOutcome | None] = dataclasses.field(default_factory=list)


def _goal(step: SequenceStep, photos: dict[str, bytes]) -> RunGoal:
    if step.kind is StepKind.PHOTO:
        return RunGoal(TaskGoal(GoalModality.PHOTO, photo_ref=step.image), photos[step.image])
    if step.kind is StepKind.PLACE:
        return RunGoal(TaskGoal(GoalModality.PLACE, step.place))
    return RunGoal(TaskGoal(GoalModality.TEXT, step.goal))


def _mark(book: PlaceBook, step: SequenceStep, base: SimBase) -> None:
    """Mark the step's place where the base stands, in the base's map epoch."""
    here = base.local(*step.pose)
    book.mark(step.place, here, floor=0, epoch=base.epoch, stamp_ns=base.clock.time_ns())


class _WatchedRecall:
    """The recall, with every candidate from another epoch than the base's noted on the
    base: a goal sent to it at such a candidate's own pose was not carried over."""

    def __init__(self, recall: Recall, base: SimBase) -> None:
        self.recall_of, self.base = recall, base

    def recall(self, query: RecallQuery, deadline: float) -> RecallResult:
        result = self.recall_of.recall(query, deadline)
        for candidate in result.candidates:
            if candidate.epoch is not None and candidate.epoch != self.base.epoch:
                x, y = candidate.goal_pose.position[0], candidate.goal_pose.position[1]
                self.base.stale_goals.add((round(float(x), 6), round(float(y), 6)))
        return result


class SimTimeJudge:
    """A judge whose deadlines come in simulated seconds: the runner's clock is the sim's,
    while a judge measures its own work on the wall clock (time.monotonic), so each
    deadline becomes the same number of seconds from now on the wall."""

    def __init__(self, judge: Judge, clock: SimClock) -> None:
        self.judge_of, self.clock = judge, clock

    def judge(self, task: JudgeInput, deadline: float | None = None) -> JudgeVerdict:
        if deadline is not None:
            deadline = time.monotonic() + max(0.0, deadline - self.clock.monotonic())
        return self.judge_of.judge(task, deadline)


def memory_relocator(memory: MemoryService, hfov_deg: float = HFOV_DEG) -> Relocator | None:
    """Relocation against the tour memory, when memory has a view that embeds photos;
    `hfov_deg` is the robot camera's."""
    if not memory.image_views(FRAME):
        return None

    def similar(image: np.ndarray, k: int) -> list:
        return [hit.record for hit in memory.search(SearchQuery(Mode.IMAGE, k, image=image))]

    params = ViewRelocationParams(hfov_deg=hfov_deg)
    return MemoryRelocator(similar, memory.image_store.image_of, params)


@dataclass(frozen=True)
class KidnapOutcome:
    """One kidnapped task: whether the robot relocalised, whether the task still
    succeeded, and the goals it was sent at an old epoch's pose (never wanted)."""

    relocalised: bool
    old_epoch_goals: int


def _robot(setting: Setting, sequence: TaskSequence) -> tuple[SimClock, SimBase, MemoryRecall]:
    """A fresh simulated clock, base at the sequence's start, and recall over the memory."""
    clock = SimClock(setting.origin_ns)
    base = SimBase(
        setting.world, setting.space, clock, sequence.start, setting.sim, setting.explored
    )
    recall = MemoryRecall(
        setting.memory,
        setting.space,
        clock,
        setting.sim,
        localisation=setting.localisation,
        reader=setting.photo_reader,
    )
    return clock, base, recall


def run_task_layer(
    setting: Setting, sequence: TaskSequence, folder: Path, kidnap: bool = False
) -> FlowRun:
    """The sequence through the task runner; `folder` holds its ledger and places. With
    `kidnap`, each searched task's first drive is cut off halfway and the robot set down
    in another room, in a new map epoch (seeded by the sequence)."""
    clock, base, recall = _robot(setting, sequence)
    ledger = TaskLedger(folder / 'ledger', fsync=False)
    places = PlaceBook(folder / 'places.json', fsync=False)
    runner = TaskRunner(
        ledger,
        _WatchedRecall(recall, base),
        base,
        base,
        SimTimeJudge(setting.judge, clock),
        places,
        None,  # no house notes: the embedding recall reads no text evidence
        setting.runner,
        clock,
        sequence.id[:64],
        relocator=memory_relocator(setting.memory, setting.sim.hfov_deg),
        explorer=base,
    )
    rng = np.random.default_rng(zlib.crc32(sequence.id.encode()))
    outcomes, records, kidnaps = [], [], []
    for step in sequence.steps:
        if step.kind is StepKind.MARK:
            base.teleport(step.pose)
            _mark(places, step, base)
            continue
        base.stops.clear()
        searched = step.kind is not StepKind.PLACE
        if kidnap and searched:
            base.pending_kidnap = _elsewhere(setting, base, rng)
        kidnaps_before, stale_before = base.kidnaps, base.old_epoch_goals
        record = runner.run(_goal(step, setting.photos), setting.budget)
        base.pending_kidnap = None
        if base.kidnaps > kidnaps_before:
            relocalised = any('aligned to epoch' in line for line in record.recovery_notes)
            kidnaps.append(KidnapOutcome(relocalised, base.old_epoch_goals - stale_before))
        else:
            kidnaps.append(None)
        first = base.stops[0] if base.stops else None
        outcome = TaskOutcome.from_record(record, setting.runner.stop_view_count)
        if record.stop_pose is not None:  # scored in the world, not the epoch's frame
            outcome = dataclasses.replace(outcome, stop=base.world_pose(record.stop_pose))
        # A task that never stopped looked at nothing: where the robot happened to stand is
        # no answer (single-shot scores a task without a candidate the same way).
        headings = outcome.stop_headings if first is not None else ()
        outcomes.append(dataclasses.replace(outcome, first_stop=first, stop_headings=headings))
        records.append(record)
    return FlowRun(outcomes, records, kidnaps)


def _elsewhere(setting: Setting, base: SimBase, rng: np.random.Generator) -> tuple:
    """A free pose in another room than the base's, facing a random way."""
    world, space = setting.world, setting.space
    here = world.room_at(base.x, base.y)
    rooms = [room for room in world.rooms if room is not here] or list(world.rooms)
    for _ in range(1000):
        room = rooms[int(rng.integers(len(rooms)))]
        x = float(rng.uniform(room.x_min + 0.7, room.x_max - 0.7))
        y = float(rng.uniform(room.y_min + 0.7, room.y_max - 0.7))
        if space.free(x, y):
            return (x, y, float(rng.uniform(-math.pi, math.pi)))
    raise ValueError(f'no free ground found outside {here.name if here else "the map"}')


def run_single_shot(setting: Setting, sequence: TaskSequence, folder: Path) -> FlowRun:
    """Ask then GoTo: the best candidate (a named place from the same PlaceBook), one
    drive, stop, and the runner's turn in place; no judge, no recovery, no ledger."""
    clock, base, recall = _robot(setting, sequence)
    places = PlaceBook(folder / 'places.json', fsync=False)
    outcomes = []
    for step in sequence.steps:
        if step.kind is StepKind.MARK:
            base.teleport(step.pose)
            _mark(places, step, base)
            continue
        goal = _goal(step, setting.photos)
        pose = _single_target(goal, recall, places, base, setting)
        if pose is None:
            outcomes.append(TaskOutcome.single_shot(None, 0.0))
            continue
        deadline = clock.monotonic() + setting.runner.drive_deadline_s
        result = base.drive(pose, deadline, threading.Event())
        if result.outcome is DriveOutcome.REFUSED:
            outcomes.append(TaskOutcome.single_shot(None, 0.0))
            continue
        views = setting.runner.stop_view_count
        base.clock.advance(views * setting.sim.turn_s_per_view)
        stop = (base.x, base.y, base.yaw)
        outcomes.append(TaskOutcome.single_shot(stop, result.distance_m, views))
    return FlowRun(outcomes, [])


def _single_target(
    goal: RunGoal, recall: Recall, places: PlaceBook, base: SimBase, setting: Setting
) -> Pose | None:
    if goal.goal.modality is GoalModality.PLACE:
        try:
            marked = places.get(goal.goal.text).pose
        except UnknownPlaceError:
            return None
        return Pose.from_xyz_yaw(marked.x, marked.y, 0.0, marked.yaw)
    # As deep as the runner's first recall, so the same hits are read and ranked alike.
    query = RecallQuery(goal, base.pose().pose, max_candidates=setting.runner.max_candidates)
    deadline = base.clock.monotonic() + setting.runner.recall_deadline_s
    found = recall.recall(query, deadline).candidates
    return found[0].goal_pose if found else None
