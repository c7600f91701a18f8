# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A scripted tour of the synthetic world: through every room, stopping to look at each sign.

The robot only turns in place or drives straight, so the whole tour is a list of
(time, x, y, yaw) knots with linear motion between them, and the pose at any instant is
exact; images can be rendered at stamps that fall between odometry samples.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from waymark.geometry import Pose
from waymark.sim.world import WALL_HALF_THICKNESS, Doorway, Room, Sign, World

START_NS = 1_768_471_200 * 1_000_000_000  # 2026-01-15T10:00:00Z
CLEARANCE = 0.3  # required distance from the base to any wall face
WAYPOINT_MARGIN = WALL_HALF_THICKNESS + CLEARANCE + 0.15  # room inset for free waypoints
DOOR_APPROACH = 0.8  # waypoints this far on either side of a doorway's centre
VIEW_DISTANCE = (2.4, 3.2)  # base to sign; the camera, 0.25 m ahead, stays within 2-3.5 m


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
    seed: int = 0,
    start_ns: int = START_NS,
) -> Tour:
    """Start at the west end of the first room, visit every sign from west to east, then go
    back to the first sign outside the start room and look at it again.

    Within a room every waypoint lies inside the room inset by `WAYPOINT_MARGIN`, so straight
    legs between them keep clear of the walls (rooms are convex); rooms are changed only
    through doorways, square to the doorway. The seed picks the viewing spots.
    """
    rng = np.random.default_rng(seed)
    first = world.rooms[0]
    motion = _Motion(first.x_min + 1.0, first.centre[1], 0.0, speed, angular_speed)
    room = first.name
    signs = sorted(world.signs, key=lambda s: (s.position[0], s.position[1]))
    revisit = next((s for s in signs if s.room != first.name), None)
    views = []
    for sign in [*signs, *([revisit] if revisit else [])]:
        for doorway in _room_route(world, room, sign.room):
            nxt = doorway.rooms[1] if doorway.rooms[0] == room else doorway.rooms[0]
            motion.drive_to(*_approach(world, doorway, room))
            motion.drive_to(*_approach(world, doorway, nxt))
            room = nxt
        x, y = _view_point(world.room(room), sign, rng)
        motion.drive_to(x, y)
        yaw = math.atan2(sign.position[1] - y, sign.position[0] - x)
        motion.turn_to(yaw)
        start = motion.time
        motion.dwell(dwell_s)
        views.append(
            SignView(
                sign.text,
                start_ns + round(start * 1e9),
                start_ns + round(motion.time * 1e9),
                x,
                y,
                yaw,
            )
        )
    return Tour(start_ns, np.array(motion.times), np.array(motion.states), tuple(views))


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


def _view_point(room: Room, sign: Sign, rng: np.random.Generator) -> tuple[float, float]:
    """A spot in front of the sign, a little off its axis, inside the room's free area."""
    distance = rng.uniform(*VIEW_DISTANCE)
    lateral = rng.uniform(-0.4, 0.4)
    normal = sign.normal
    x = sign.position[0] + distance * normal[0] - lateral * normal[1]
    y = sign.position[1] + distance * normal[1] + lateral * normal[0]
    m = WAYPOINT_MARGIN
    return (
        float(np.clip(x, room.x_min + m, room.x_max - m)),
        float(np.clip(y, room.y_min + m, room.y_max - m)),
    )
