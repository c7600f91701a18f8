# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A scripted tour of the synthetic world: through every room, stopping to look at each sign
and, in generated worlds, at each object, then revisiting some rooms (RAVEN's exploration).

The robot only turns in place or drives straight, so the whole tour is a list of
(time, x, y, yaw) knots with linear motion between them, and the pose at any instant is
exact; images can be rendered at stamps that fall between odometry samples.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from dataclasses import dataclass

import numpy as np
from scipy.sparse.csgraph import shortest_path

from waymark.geometry import Pose
from waymark.sim.objects import SceneObject
from waymark.sim.world import WALL_HALF_THICKNESS, Doorway, Room, Sign, World

START_NS = 1_768_471_200 * 1_000_000_000  # 2026-01-15T10:00:00Z
CLEARANCE = 0.3  # required distance from the base to any wall face
WAYPOINT_MARGIN = WALL_HALF_THICKNESS + CLEARANCE + 0.15  # room inset for free waypoints
DOOR_APPROACH = 0.8  # waypoints this far on either side of a doorway's centre
VIEW_DISTANCE = (2.4, 3.2)  # base to sign; the camera, 0.25 m ahead, stays within 2-3.5 m
OBJECT_VIEW_GAP = 0.9  # base stops this far from an object's footprint to look at it
OBJECT_MARGIN = CLEARANCE + 0.05  # planned clearance from footprints, a little over the minimum
GRID_STEP = 0.5  # spacing of detour waypoints inside a furnished room
# Revisits by layout family: (fraction of signs revisited, in a seeded shuffled order rather
# than nearest first). Families other than `rooms` walk back and forth across the building.
REVISITS = {'rooms': (0.25, False)}
LONG_REVISITS = (0.5, True)


@dataclass(frozen=True)
class SignView:
    """An interval during which the robot stood still facing a sign."""

    text: str
    start_ns: int
    end_ns: int
    x: float
    y: float
    yaw: float


@dataclass(frozen=True)
class Tour:
    """Knots of a piecewise-linear motion; yaw is unwrapped so it interpolates linearly."""

    start_ns: int
    times_s: np.ndarray  # (K,) seconds from start, non-decreasing
    states: np.ndarray  # (K, 3) x, y, unwrapped yaw
    views: tuple[SignView, ...]

    @property
    def end_ns(self) -> int:
        return self.start_ns + round(float(self.times_s[-1]) * 1e9)

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def states_at(self, stamps_ns: np.ndarray) -> np.ndarray:
        """(N, 3) x, y, yaw in (-pi, pi] at the given stamps (clamped to the tour)."""
        t = (np.asarray(stamps_ns, dtype=np.int64) - self.start_ns) / 1e9
        out = np.stack([np.interp(t, self.times_s, self.states[:, i]) for i in range(3)], axis=-1)
        out[:, 2] = np.arctan2(np.sin(out[:, 2]), np.cos(out[:, 2]))
        return out

    def pose_at(self, stamp_ns: int) -> Pose:
        x, y, yaw = self.states_at(np.array([stamp_ns]))[0]
        return Pose.from_xyz_yaw(x, y, 0.0, yaw)

    def stamps(self, rate_hz: float, offset_ns: int = 0) -> np.ndarray:
        """A regular grid of stamps from start + offset to the end of the tour."""
        period = 1e9 / rate_hz
        count = int((self.duration_ns - offset_ns) // period) + 1
        return self.start_ns + offset_ns + np.round(np.arange(count) * period).astype(np.int64)

    def sample(self, rate_hz: float) -> list[tuple[int, Pose]]:
        stamps = self.stamps(rate_hz)
        return [
            (int(s), Pose.from_xyz_yaw(x, y, 0.0, yaw))
            for s, (x, y, yaw) in zip(stamps, self.states_at(stamps), strict=True)
        ]


def scripted_tour(
    world: World,
    rate_hz: float = 20.0,
    speed: float = 0.5,
    seed: int = 0,
    angular_speed: float = 0.8,
    dwell_s: float = 2.0,
    start_ns: int = START_NS,
) -> list[tuple[int, Pose]]:
    """Base poses (z = 0) of `plan_tour`, sampled at `rate_hz`."""
    tour = plan_tour(
        world,
        speed=speed,
        angular_speed=angular_speed,
        dwell_s=dwell_s,
        seed=seed,
        start_ns=start_ns,
    )
    return tour.sample(rate_hz)


def plan_tour(
    world: World,
    *,
    speed: float = 0.5,
    angular_speed: float = 0.8,
    dwell_s: float = 2.0,
    object_dwell_s: float = 1.0,
    revisit_fraction: float | None = None,
    shuffled_revisits: bool | None = None,
    seed: int = 0,
    start_ns: int = START_NS,
) -> Tour:
    """Start at the west end of the first room, look at every sign, then revisit some.

    The demo world keeps its fixed order (west to east, then back to the first sign outside
    the start room). Generated worlds go next to the sign fewest doorways away (then
    nearest), stop to look at each object of a room after its sign, and end by revisiting
    `revisit_fraction` of the signs, picked by the seed, nearest first or, with
    `shuffled_revisits`, in an order the seed shuffles (long return trips); both default to
    the world's family (REVISITS).

    Within a room every waypoint lies inside the room inset by `WAYPOINT_MARGIN`, so straight
    legs keep clear of the walls (rooms are convex); legs that would pass an object detour
    over a grid of free waypoints. Rooms are changed only through doorways, square to the
    doorway. The seed picks the viewing spots.
    """
    rng = np.random.default_rng(seed)
    first = world.rooms[0]
    motion = _Motion(first.x_min + 1.0, first.centre[1], 0.0, speed, angular_speed)
    furniture: dict[str, list[SceneObject]] = {}
    for obj in world.objects:
        furniture.setdefault(obj.room, []).append(obj)
    room = first.name
    views: list[SignView] = []

    def visit(sign: Sign, look_around: bool) -> None:
        nonlocal room
        for doorway in _room_route(world, room, sign.room):
            nxt = doorway.rooms[1] if doorway.rooms[0] == room else doorway.rooms[0]
            _travel(
                motion, world.room(room), furniture.get(room, []), _approach(world, doorway, room)
            )
            motion.drive_to(*_approach(world, doorway, nxt))
            room = nxt
        box, objects = world.room(room), furniture.get(room, [])
        x, y = _view_point(box, sign, rng, objects)
        _travel(motion, box, objects, (x, y))
        yaw = math.atan2(sign.position[1] - y, sign.position[0] - x)
        motion.turn_to(yaw)
        start = motion.time
        motion.dwell(dwell_s)
        views.append(SignView(sign.text, *_span(start_ns, start, motion.time), x, y, yaw))
        if look_around:
            for obj in objects:
                stop = _object_stop(box, obj, objects)
                if stop is not None:
                    _travel(motion, box, objects, stop)
                    motion.turn_to(math.atan2(obj.position[1] - stop[1], obj.position[0] - stop[0]))
                    motion.dwell(object_dwell_s)

    if world.size == 'demo':
        signs = sorted(world.signs, key=lambda s: (s.position[0], s.position[1]))
        revisit = next((s for s in signs if s.room != first.name), None)
        for sign in [*signs, *([revisit] if revisit else [])]:
            visit(sign, look_around=True)
        return Tour(start_ns, np.array(motion.times), np.array(motion.states), tuple(views))

    pending = list(world.signs)
    while pending:
        sign = _nearest(world, room, motion.states[-1][:2], pending)
        pending.remove(sign)
        visit(sign, look_around=True)
    fraction, shuffled = REVISITS.get(world.family, LONG_REVISITS)
    fraction = fraction if revisit_fraction is None else revisit_fraction
    shuffled = shuffled if shuffled_revisits is None else shuffled_revisits
    others = [s for s in world.signs if s.room != first.name]
    count = min(len(others), max(1, round(fraction * len(world.signs))))
    pending = [others[i] for i in sorted(rng.choice(len(others), size=count, replace=False))]
    if shuffled:
        pending = [pending[i] for i in rng.permutation(len(pending))]
    while pending:
        sign = pending[0] if shuffled else _nearest(world, room, motion.states[-1][:2], pending)
        pending.remove(sign)
        visit(sign, look_around=False)
    return Tour(start_ns, np.array(motion.times), np.array(motion.states), tuple(views))


def _span(start_ns: int, start_s: float, end_s: float) -> tuple[int, int]:
    return start_ns + round(start_s * 1e9), start_ns + round(end_s * 1e9)


def _nearest(world: World, room: str, xy: tuple[float, float], signs: list[Sign]) -> Sign:
    """The sign fewest doorways away, then nearest in a straight line, then first listed."""
    hops = _hops(world, room)
    return min(
        signs,
        key=lambda s: (hops[s.room], math.dist(xy, s.position[:2])),
    )


def _hops(world: World, start: str) -> dict[str, int]:
    graph = _neighbours(world)
    hops = {start: 0}
    queue = deque([start])
    while queue:
        room = queue.popleft()
        for other in graph.get(room, ()):
            if other not in hops:
                hops[other] = hops[room] + 1
                queue.append(other)
    return hops


@functools.lru_cache(maxsize=8)
def _neighbours(world: World) -> dict[str, list[str]]:
    graph: dict[str, list[str]] = {}
    for d in world.doorways:
        graph.setdefault(d.rooms[0], []).append(d.rooms[1])
        graph.setdefault(d.rooms[1], []).append(d.rooms[0])
    return graph


def _travel(
    motion: _Motion, room: Room, objects: list[SceneObject], target: tuple[float, float]
) -> None:
    for point in _room_path(room, objects, motion.states[-1][:2], target):
        motion.drive_to(*point)


def _room_path(
    room: Room,
    objects: list[SceneObject],
    start: tuple[float, float],
    goal: tuple[float, float],
) -> list[tuple[float, float]]:
    """Waypoints from start to goal inside a convex room, keeping clear of its objects.

    Straight when nothing is in the way; otherwise the shortest route over a visibility
    graph of grid points inset by `WAYPOINT_MARGIN`.
    """
    if not objects:
        return [goal]
    centres = np.array([o.position for o in objects])
    reach = np.array([o.radius + OBJECT_MARGIN for o in objects])
    p, q = np.asarray(start, dtype=float)[None], np.asarray(goal, dtype=float)[None]
    if _segments_clear(p, q, centres, reach)[0]:
        return [goal]
    m = WAYPOINT_MARGIN
    xs = np.arange(room.x_min + m, room.x_max - m + 1e-9, GRID_STEP)
    ys = np.arange(room.y_min + m, room.y_max - m + 1e-9, GRID_STEP)
    grid = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2)
    free = (np.linalg.norm(grid[:, None] - centres[None], axis=2) >= reach).all(axis=1)
    nodes = np.concatenate([p, q, grid[free]])
    i, j = np.triu_indices(len(nodes), k=1)
    clear = _segments_clear(nodes[i], nodes[j], centres, reach)
    weights = np.zeros((len(nodes), len(nodes)))
    weights[i[clear], j[clear]] = np.linalg.norm(nodes[i[clear]] - nodes[j[clear]], axis=1)
    _, previous = shortest_path(weights, directed=False, indices=0, return_predecessors=True)
    if previous[1] < 0:
        raise ValueError(f'no clear path in room {room.name!r} from {start} to {goal}')
    path, node = [], 1
    while node != 0:
        path.append((float(nodes[node][0]), float(nodes[node][1])))
        node = previous[node]
    return path[::-1]


def _segments_clear(
    p: np.ndarray, q: np.ndarray, centres: np.ndarray, reach: np.ndarray
) -> np.ndarray:
    """(M,) whether each segment p[k]→q[k] keeps at least `reach` from every centre."""
    e = q - p
    length2 = np.maximum((e * e).sum(axis=1), 1e-12)
    u = ((centres[None] - p[:, None]) * e[:, None]).sum(axis=2) / length2[:, None]
    closest = p[:, None] + np.clip(u, 0.0, 1.0)[..., None] * e[:, None]
    return (np.linalg.norm(closest - centres[None], axis=2) >= reach).all(axis=1)


def _object_stop(
    room: Room, obj: SceneObject, objects: list[SceneObject]
) -> tuple[float, float] | None:
    """A free spot `OBJECT_VIEW_GAP` from the object, preferring the side facing the room centre."""
    ox, oy = obj.position
    toward = math.atan2(room.centre[1] - oy, room.centre[0] - ox)
    distance = obj.radius + OBJECT_VIEW_GAP
    m = WAYPOINT_MARGIN
    for turn in (0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5):
        x = ox + distance * math.cos(toward + turn)
        y = oy + distance * math.sin(toward + turn)
        if room.contains(x, y, m) and all(
            math.dist((x, y), o.position) >= o.radius + OBJECT_MARGIN for o in objects
        ):
            return (x, y)
    return None


class _Motion:
    """Accumulates knots for turn-in-place, straight-drive and dwell primitives."""

    def __init__(self, x: float, y: float, yaw: float, speed: float, angular_speed: float):
        self.times = [0.0]
        self.states = [(x, y, yaw)]
        self.speed = speed
        self.angular_speed = angular_speed

    @property
    def time(self) -> float:
        return self.times[-1]

    def _add(self, duration: float, state: tuple[float, float, float]) -> None:
        self.times.append(self.time + duration)
        self.states.append(state)

    def turn_to(self, yaw: float) -> None:
        x, y, current = self.states[-1]
        delta = math.remainder(yaw - current, math.tau)
        if abs(delta) > 1e-9:
            self._add(abs(delta) / self.angular_speed, (x, y, current + delta))

    def drive_to(self, x: float, y: float) -> None:
        x0, y0, _ = self.states[-1]
        distance = math.hypot(x - x0, y - y0)
        if distance > 1e-9:
            self.turn_to(math.atan2(y - y0, x - x0))
            self._add(distance / self.speed, (x, y, self.states[-1][2]))

    def dwell(self, seconds: float) -> None:
        self._add(seconds, self.states[-1])


def _room_route(world: World, start: str, goal: str) -> list[Doorway]:
    """Doorways to pass, fewest first (breadth-first over the room graph)."""
    previous: dict[str, tuple[str, Doorway] | None] = {start: None}
    queue = deque([start])
    while queue:
        room = queue.popleft()
        if room == goal:
            break
        for doorway in world.doorways:
            if room in doorway.rooms:
                other = doorway.rooms[1] if doorway.rooms[0] == room else doorway.rooms[0]
                if other not in previous:
                    previous[other] = (room, doorway)
                    queue.append(other)
    if goal not in previous:
        raise ValueError(f'room {goal!r} cannot be reached from {start!r}')
    route = []
    while (step := previous[goal]) is not None:
        goal, doorway = step
        route.append(doorway)
    return route[::-1]


def _approach(world: World, doorway: Doorway, room: str) -> tuple[float, float]:
    """The waypoint square in front of the doorway, on `room`'s side."""
    (ax, ay), (bx, by) = doorway.a, doorway.b
    length = math.hypot(bx - ax, by - ay)
    nx, ny = -(by - ay) / length, (bx - ax) / length
    cx, cy = doorway.centre
    box = world.room(room)
    for side in (1.0, -1.0):
        x, y = cx + side * DOOR_APPROACH * nx, cy + side * DOOR_APPROACH * ny
        if box.contains(x, y):
            return x, y
    raise ValueError(f'doorway {doorway} does not open into room {room!r}')


def _view_point(
    room: Room, sign: Sign, rng: np.random.Generator, objects: list[SceneObject] = ()
) -> tuple[float, float]:
    """A spot in front of the sign, a little off its axis, inside the room's free area."""
    m = WAYPOINT_MARGIN
    for _ in range(50):
        distance = rng.uniform(*VIEW_DISTANCE)
        lateral = rng.uniform(-0.4, 0.4)
        normal = sign.normal
        x = sign.position[0] + distance * normal[0] - lateral * normal[1]
        y = sign.position[1] + distance * normal[1] + lateral * normal[0]
        spot = (
            float(np.clip(x, room.x_min + m, room.x_max - m)),
            float(np.clip(y, room.y_min + m, room.y_max - m)),
        )
        if all(math.dist(spot, o.position) >= o.radius + OBJECT_MARGIN for o in objects):
            return spot
    raise ValueError(f'no free spot to view sign {sign.text!r} from')
