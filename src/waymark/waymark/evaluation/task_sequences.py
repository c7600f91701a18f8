# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Chained task sequences for the task-layer evaluation, drawn from a world and its tour.

A sequence is what one run is asked, in order: 5-10 goals of four kinds (a sign by its
text, one of several look-alike objects told apart by a neighbour or its room, a photo of
a target, a named place), with MARK steps that name a place before a later goal asks for
it. Each task starts where the last one stopped. Only targets the tour saw are asked for
(the robot finds them from memory), each must be seen from some free position the base
can reach, and some targets come back later in the sequence so that revisits can be
scored apart from first visits. The same world, tour and seed give the same sequence.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from waymark.evaluation.question_gen import TruthIndex, by_neighbour, by_room, viewpoint_near
from waymark.evaluation.task_geometry import Camera, FreeSpace, path_to_nearest, viewpoints
from waymark.geometry import Pose
from waymark.model_text import validation_problems
from waymark.sim.generate import generate_world
from waymark.sim.landmarks import landmarks, visible_landmarks
from waymark.sim.render import render
from waymark.sim.trajectory import plan_tour
from waymark.sim.world import World, build_demo_world

SEQUENCE_VERSION = 1
MIN_TASKS = 5
MAX_TASKS = 10
MAX_STEPS = 64  # a file with more steps than this is not a sequence this evaluation makes
REPEAT_FRACTION = 0.3
TOUR_CAMERA_RATE_HZ = 2.0
TOUR_CAMERA_OFFSET = Pose((0.25, 0.0, 0.45))  # the simulated camera on the base
PLACE_NAMES = (
    'charging spot',
    'drop-off point',
    'parking bay',
    'meeting corner',
    'waiting spot',
    'delivery desk',
)
# A sign goal writes the sign's text as the sign does (capitals), as a person reading it would.
SIGN_GOALS = ('go to the {} sign', 'take me to the {} sign', 'find the sign that says "{}"')
PLACE_MARGIN_M = 1.0  # a marked place keeps this far inside its room

Pose2 = tuple[float, float, float]


class SequenceFormatError(ValueError):
    """A sequence file that is not a valid sequence of a known version."""


class StepKind(str, Enum):
    SIGN = 'sign'  # a sign named by its text
    INSTANCE = 'instance'  # one of several look-alike objects, told apart in words
    PHOTO = 'photo'  # a photo of the target
    PLACE = 'place'  # a place named by an earlier MARK
    MARK = 'mark'  # not a task: the robot is brought to `pose` and names it `place`

    @property
    def is_task(self) -> bool:
        return self is not StepKind.MARK


class SequenceStep(BaseModel):
    """One step. `goal` is the request as the runner gets it (empty for a bare photo);
    `target` the landmark id scored against; `pose` the mark's pose or the photo's camera;
    `image` the photo's path relative to the sequence file."""

    model_config = ConfigDict(extra='forbid', frozen=True, allow_inf_nan=False)

    kind: StepKind
    goal: str = Field(default='', max_length=500)
    target: str | None = Field(default=None, max_length=64)
    place: str | None = Field(default=None, min_length=1, max_length=64)
    pose: Pose2 | None = None
    image: str | None = Field(default=None, max_length=256)

    @model_validator(mode='after')
    def _fields_of_kind(self) -> SequenceStep:
        needs = {
            StepKind.SIGN: ('goal', 'target'),
            StepKind.INSTANCE: ('goal', 'target'),
            StepKind.PHOTO: ('target', 'pose', 'image'),
            StepKind.PLACE: ('goal', 'place'),
            StepKind.MARK: ('place', 'pose'),
        }[self.kind]
        missing = [name for name in needs if not getattr(self, name)]
        if missing:
            raise ValueError(f'a {self.kind.value} step needs {", ".join(missing)}')
        return self

    @property
    def target_key(self) -> str:
        """What the step is about: a landmark id, or 'place:<name>'."""
        return f'place:{self.place}' if self.target is None else self.target


class TaskSequence(BaseModel):
    """A run's chained tasks in one world; `start` is where the first task starts."""

    model_config = ConfigDict(extra='forbid', frozen=True, allow_inf_nan=False)

    version: Literal[1] = SEQUENCE_VERSION
    id: str = Field(min_length=1, max_length=128)
    world: str
    world_seed: int
    size: str
    family: str = 'rooms'
    seed: int
    start: Pose2
    steps: list[SequenceStep] = Field(max_length=MAX_STEPS)

    @model_validator(mode='after')
    def _places_marked_before_use(self) -> TaskSequence:
        marked: set[str] = set()
        for index, step in enumerate(self.steps):
            if step.kind is StepKind.MARK:
                marked.add(step.place)
            elif step.kind is StepKind.PLACE and step.place not in marked:
                raise ValueError(f'step {index} asks for place {step.place!r} before any MARK')
        if not self.tasks:
            raise ValueError('a sequence needs at least one task')
        return self

    @property
    def tasks(self) -> list[SequenceStep]:
        """The goal steps, in order (MARK steps left out)."""
        return [step for step in self.steps if step.kind.is_task]

    def revisits(self) -> list[bool]:
        """Per task: whether an earlier task of the sequence had the same target."""
        seen: set[str] = set()
        flags = []
        for task in self.tasks:
            flags.append(task.target_key in seen)
            seen.add(task.target_key)
        return flags

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode='json'), indent=1, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> TaskSequence:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as error:
            raise SequenceFormatError(f'not JSON: {error}') from error
        if not isinstance(raw, dict):
            raise SequenceFormatError('a sequence must be a JSON object')
        if raw.get('version') != SEQUENCE_VERSION:
            raise SequenceFormatError(
                f'version {raw.get("version")!r}; this build reads version {SEQUENCE_VERSION}'
            )
        try:
            return cls.model_validate(raw)
        except ValidationError as error:
            problems = validation_problems(error, '(root)', 5)
            raise SequenceFormatError(f'malformed sequence: {problems}') from None


def save_sequence(sequence: TaskSequence, path: Path) -> None:
    Path(path).write_text(sequence.to_json() + '\n', encoding='utf-8')


def load_sequence(path: Path) -> TaskSequence:
    """The sequence at `path`; SequenceFormatError names the file and what is wrong."""
    try:
        return TaskSequence.from_json(Path(path).read_text(encoding='utf-8'))
    except (OSError, UnicodeDecodeError) as error:
        raise SequenceFormatError(f'{path}: cannot read: {error}') from error
    except SequenceFormatError as error:
        raise SequenceFormatError(f'{path}: {error}') from error


def world_of(sequence: TaskSequence) -> World:
    """The world a sequence was drawn in, rebuilt from its seed."""
    if sequence.size == 'demo':
        world = build_demo_world(sequence.world_seed)
    else:
        world = generate_world(sequence.world_seed, sequence.size, sequence.family)
    if world.name != sequence.world:
        raise SequenceFormatError(f'sequence names world {sequence.world}, seed gives {world.name}')
    return world


def tour_ground_truth(
    world: World,
    tour_seed: int = 0,
    camera_rate_hz: float = TOUR_CAMERA_RATE_HZ,
    camera: Camera | None = None,
) -> dict:
    """What a bag's ground truth says the tour saw, without rendering a picture: the
    fields the question generator reads (landmarks, images with what each shows, the
    trajectory, rooms). A recorded bag's ground_truth.json serves equally."""
    camera = camera or Camera()
    tour = plan_tour(world, seed=tour_seed)
    images = []
    for stamp, base in tour.sample(camera_rate_hz):
        eye = base.compose(TOUR_CAMERA_OFFSET)
        visible = visible_landmarks(world, eye, camera.hfov_deg, vfov_deg=camera.vfov_deg)
        x, y, z = eye.position
        images.append({'stamp_ns': stamp, 'x': x, 'y': y, 'z': z, 'yaw': eye.yaw})
        images[-1]['visible'] = visible
    trajectory = [
        {'stamp_ns': stamp, 'x': pose.position[0], 'y': pose.position[1], 'yaw': pose.yaw}
        for stamp, pose in tour.sample(camera_rate_hz)
    ]
    return {
        'world_name': world.name,
        'landmarks': [m.to_dict() for m in landmarks(world)],
        'rooms': [{'name': r.name, 'polygon': [list(p) for p in r.polygon]} for r in world.rooms],
        'images': images,
        'trajectory': trajectory,
        'start_ns': tour.start_ns,
        'end_ns': tour.end_ns,
    }


class _Targets:
    """Candidate goals of each kind, checked lazily for a reachable viewpoint."""

    def __init__(self, world: World, truth: dict, space: FreeSpace, camera: Camera, start: Pose2):
        self.world = TruthIndex(truth)
        self.space = space
        self.camera = camera
        self.reach = space.distances_from(start[0], start[1])
        self._reachable: dict[str, bool] = {}
        self.rooms = {room.name: room for room in world.rooms}

    def reachable(self, landmark_id: str) -> bool:
        if landmark_id not in self._reachable:
            lm = self.world.by_id[landmark_id]
            views = viewpoints(self.space, lm.id, lm.position[:2], self.camera)
            self._reachable[landmark_id] = math.isfinite(
                path_to_nearest(self.space, self.reach, views)
            )
        return self._reachable[landmark_id]

    def signs(self, rng: random.Random) -> list[SequenceStep]:
        return [
            SequenceStep(
                kind=StepKind.SIGN, goal=rng.choice(SIGN_GOALS).format(lm.label), target=lm.id
            )
            for lm in self.world.unique_seen
            if lm.kind == 'sign'
        ]

    def instances(self, rng: random.Random) -> list[SequenceStep]:
        """Look-alike objects told apart by the question generator's own descriptions."""
        steps = []
        for lm in self.world.seen:
            others = [o for o in self.world.instances[lm.key] if o.id != lm.id]
            if not others:
                continue
            described = by_neighbour(self.world, lm, others) or by_room(self.world, lm, others)
            if described:
                relation, ref = described
                goal = f'go to {lm.ref} {relation} {ref}'
                steps.append(SequenceStep(kind=StepKind.INSTANCE, goal=goal, target=lm.id))
        return steps

    def photos(self) -> list[SequenceStep]:
        """Unique targets photographed from a free pose the tour never took that sees them."""
        steps = []
        for lm in self.world.unique_seen:
            view = viewpoint_near(self.world, lm)
            if view is None or not self.space.free(view[0], view[1]):
                continue
            if not self.camera.sees(self.space.world, *view, lm.id):
                continue
            pose = tuple(round(v, 4) for v in view)
            image = f'images/{self.space.world.name}-{lm.id}.png'
            steps.append(SequenceStep(kind=StepKind.PHOTO, target=lm.id, pose=pose, image=image))
        return steps

    def places(self, rng: random.Random) -> list[tuple[float, float, float]]:
        """Reachable poses well inside a room, one per room, facing a random way."""
        poses = []
        for room in self.rooms.values():
            if room.x_max - room.x_min < 2 * PLACE_MARGIN_M:
                continue
            if room.y_max - room.y_min < 2 * PLACE_MARGIN_M:
                continue
            for _ in range(8):
                x = rng.uniform(room.x_min + PLACE_MARGIN_M, room.x_max - PLACE_MARGIN_M)
                y = rng.uniform(room.y_min + PLACE_MARGIN_M, room.y_max - PLACE_MARGIN_M)
                cell = self.space.geometry.world_to_cell(x, y)
                if self.space.free(x, y) and math.isfinite(self.reach[cell]):
                    yaw = rng.uniform(-math.pi, math.pi)
                    poses.append((round(x, 3), round(y, 3), round(yaw, 4)))
                    break
        return poses


def generate_sequence(
    world: World,
    truth: dict,
    seed: int,
    *,
    min_tasks: int = MIN_TASKS,
    max_tasks: int = MAX_TASKS,
    repeat_fraction: float = REPEAT_FRACTION,
    space: FreeSpace | None = None,
    camera: Camera | None = None,
) -> TaskSequence:
    """A sequence of `min_tasks`..`max_tasks` tasks drawn from `seed`.

    The run starts where the tour ended. Kinds take turns (each kind the world supports
    before any twice); about `repeat_fraction` of the tasks, at least one, ask again for
    the target of a task at least two tasks back.
    """
    if not 2 <= min_tasks <= max_tasks <= MAX_STEPS // 2:
        raise ValueError(f'need 2 <= min_tasks <= max_tasks <= {MAX_STEPS // 2}')
    if not 0.0 <= repeat_fraction <= 0.5:
        raise ValueError(f'repeat_fraction must be in [0, 0.5], got {repeat_fraction}')
    camera = camera or Camera()
    space = space or FreeSpace(world)
    start = _start(truth, space)
    targets = _Targets(world, truth, space, camera, start)
    rng = random.Random(f'{seed}:sequence')
    pools = {
        StepKind.SIGN: targets.signs(rng),
        StepKind.INSTANCE: targets.instances(rng),
        StepKind.PHOTO: targets.photos(),
    }
    for pool in pools.values():
        rng.shuffle(pool)
    places = targets.places(rng)
    rng.shuffle(places)
    names = rng.sample(PLACE_NAMES, len(PLACE_NAMES))

    count = rng.randint(min_tasks, max_tasks)
    repeats = set(rng.sample(range(2, count), max(1, round(repeat_fraction * count))))
    kinds = [*pools, StepKind.PLACE]
    rng.shuffle(kinds)
    turns = itertools.cycle(kinds)
    steps: list[SequenceStep] = []
    tasks: list[SequenceStep] = []
    for number in range(count):
        step = None
        if number not in repeats:
            step = _fresh(next(turns), number, pools, places, names, targets, kinds, steps, rng)
        if step is None:  # a repeat, or every pool ran dry
            if number < 2:
                raise ValueError(f'world {world.name} offers too few reachable targets')
            step = tasks[rng.randrange(number - 1)]
        steps.append(step)
        tasks.append(step)
    return TaskSequence(
        id=f'{world.name}-s{seed}',
        world=world.name,
        world_seed=world.seed,
        size=world.size,
        family=world.family,
        seed=seed,
        start=start,
        steps=steps,
    )


def _fresh(
    kind: StepKind,
    number: int,
    pools: dict[StepKind, list[SequenceStep]],
    places: list[Pose2],
    names: list[str],
    targets: _Targets,
    kinds: list[StepKind],
    steps: list[SequenceStep],
    rng: random.Random,
) -> SequenceStep | None:
    """A new target, of `kind` if it has one left, else of the next kind that does."""
    order = kinds[kinds.index(kind) :] + kinds[: kinds.index(kind)]
    for candidate in order:
        if candidate is StepKind.PLACE:
            if number == 0 or not places or not names:
                continue  # a place must be marked before the task that asks for it
            name, pose = names.pop(), places.pop()
            # Marked before the latest task, so at least one task lies between mark and goal.
            latest = max(i for i, step in enumerate(steps) if step.kind.is_task)
            steps.insert(rng.randint(0, latest), _mark(name, pose))
            return SequenceStep(kind=StepKind.PLACE, goal=f'go to the {name}', place=name)
        pool = pools[candidate]
        while pool:
            step = pool.pop()
            if targets.reachable(step.target):
                return step
    return None


def _mark(name: str, pose: Pose2) -> SequenceStep:
    return SequenceStep(
        kind=StepKind.MARK, goal=f'mark this place as the {name}', place=name, pose=pose
    )


def _start(truth: dict, space: FreeSpace) -> Pose2:
    """Where the tour ended, moved onto the nearest free cell if it ended against a wall."""
    trajectory = truth.get('trajectory') or []
    if not trajectory:
        raise ValueError('the ground truth has no trajectory to start the run from')
    last = max(trajectory, key=lambda state: state['stamp_ns'])
    x, y = float(last['x']), float(last['y'])
    free = (x, y) if space.free(x, y) else space.nearest_free(x, y)
    if free is None:
        raise ValueError(f'the tour ended at ({x:.2f}, {y:.2f}), far from free space')
    return (round(free[0], 3), round(free[1], 3), round(float(last['yaw']), 4))


def render_photos(
    sequence: TaskSequence,
    world: World,
    folder: Path,
    width: int = 640,
    height: int = 480,
    camera: Camera | None = None,
) -> list[Path]:
    """Render every photo step's picture under `folder` (the sequence file's folder)."""
    camera = camera or Camera()
    written = []
    for step in sequence.steps:
        if step.kind is not StepKind.PHOTO:
            continue
        path = Path(folder) / step.image
        if path in written:
            continue
        x, y, yaw = step.pose
        pixels = render(
            world, Pose.from_xyz_yaw(x, y, camera.height_m, yaw), width, height, camera.hfov_deg
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.asarray(pixels)).save(path)
        written.append(path)
    return written


def generate_suite(
    world: World, truth: dict, seeds: Sequence[int], **options: object
) -> list[TaskSequence]:
    """One sequence per seed in the same world, sharing one free-space grid."""
    space = FreeSpace(world)
    return [generate_sequence(world, truth, seed, space=space, **options) for seed in seeds]
