# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The synthetic world: rooms, walls with doorways, and signs to be remembered.

Map frame follows REP-103 (x forward, y left, z up, metres; yaw about +z, 0 faces +x).
Every room draws its own wall faces, set back half a wall thickness from the room's
boundary line, so each side of a partition shows the colour of the room it faces.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

import numpy as np

from waymark.sim.objects import SceneObject

Point2 = tuple[float, float]
Rgb = tuple[int, int, int]

WALL_HEIGHT = 2.5
WALL_HALF_THICKNESS = 0.05
DOOR_WIDTH = 1.2
SIGN_WIDTH = 1.6
SIGN_HEIGHT = 0.4
SIGN_CENTRE_Z = 1.4
SIGN_STANDOFF = 0.02  # a sign's face sits this far in front of its wall face
JAMB_COLOR: Rgb = (92, 64, 44)

HALL_SIGN = 'FIRE EXIT'
ROOM_SIGNS = ('COFFEE SHOP', 'PHARMACY', 'LIBRARY', 'SUITE 204', 'BAKERY')
HALL_COLOR: Rgb = (182, 180, 172)
ROOM_PALETTE: tuple[Rgb, ...] = (
    (192, 112, 82),
    (120, 162, 110),
    (108, 148, 200),
    (212, 182, 84),
    (160, 128, 190),
    (82, 160, 160),
)
SIGN_BACKGROUNDS: tuple[Rgb, ...] = ((246, 241, 226), (250, 250, 250), (236, 236, 202))
SIGN_FOREGROUNDS: tuple[Rgb, ...] = ((18, 18, 18), (20, 30, 92), (92, 16, 16), (16, 62, 28))


@dataclass(frozen=True)
class Wall:
    """One visible face of a wall: a vertical quad over the 2-D segment a→b."""

    a: Point2
    b: Point2
    height: float
    color: Rgb
    room: str = ''  # the room this face looks into; '' for door jambs


@dataclass(frozen=True)
class Sign:
    """A flat text panel on a wall; `yaw` is the direction its face points (into the room)."""

    text: str
    position: tuple[float, float, float]
    yaw: float
    room: str
    width: float = SIGN_WIDTH
    height: float = SIGN_HEIGHT
    background: Rgb = (250, 250, 250)
    foreground: Rgb = (18, 18, 18)

    @property
    def normal(self) -> np.ndarray:
        return np.array([math.cos(self.yaw), math.sin(self.yaw)])

    @property
    def endpoints(self) -> tuple[np.ndarray, np.ndarray]:
        """Left and right ends as seen by someone facing the sign."""
        centre = np.asarray(self.position[:2], dtype=float)
        right = np.array([-math.sin(self.yaw), math.cos(self.yaw)])
        return centre - 0.5 * self.width * right, centre + 0.5 * self.width * right


@dataclass(frozen=True)
class Room:
    """An axis-aligned rectangle bounded by wall centre lines."""

    name: str
    x_min: float
    y_min: float
    x_max: float
    y_max: float

    @property
    def centre(self) -> Point2:
        return (0.5 * (self.x_min + self.x_max), 0.5 * (self.y_min + self.y_max))

    @property
    def polygon(self) -> tuple[Point2, ...]:
        """Counter-clockwise corners."""
        return (
            (self.x_min, self.y_min),
            (self.x_max, self.y_min),
            (self.x_max, self.y_max),
            (self.x_min, self.y_max),
        )

    def contains(self, x: float, y: float, margin: float = 0.0) -> bool:
        return (
            self.x_min + margin <= x <= self.x_max - margin
            and self.y_min + margin <= y <= self.y_max - margin
        )


@dataclass(frozen=True)
class Doorway:
    """A gap in the wall line between two rooms, from a to b along the wall centre line."""

    rooms: tuple[str, str]
    a: Point2
    b: Point2

    @property
    def centre(self) -> Point2:
        return (0.5 * (self.a[0] + self.b[0]), 0.5 * (self.a[1] + self.b[1]))

    @property
    def width(self) -> float:
        return math.dist(self.a, self.b)


@dataclass(frozen=True)
class World:
    """Everything the renderer draws and the ground truth a benchmark scores against."""

    name: str
    seed: int
    rooms: tuple[Room, ...]
    doorways: tuple[Doorway, ...]
    walls: tuple[Wall, ...]
    signs: tuple[Sign, ...]
    objects: tuple[SceneObject, ...] = ()
    size: str = 'demo'  # demo, or the size a generated world was asked for
    family: str = 'rooms'  # the layout family of a generated world (sim.generate.FAMILIES)

    def room(self, name: str) -> Room:
        return next(r for r in self.rooms if r.name == name)

    def room_at(self, x: float, y: float) -> Room | None:
        return next((r for r in self.rooms if r.contains(x, y)), None)

    def to_dict(self) -> dict:
        """Ground truth as plain JSON types; rooms also carry their polygon. The family is
        left out for `rooms`, so the worlds made before families existed read the same."""
        data = asdict(self)
        if self.family == 'rooms':
            del data['family']
        for room, entry in zip(self.rooms, data['rooms'], strict=True):
            entry['polygon'] = [list(p) for p in room.polygon]
        return data

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)


def build_demo_world(seed: int = 0) -> World:
    """A hallway with five rooms off it (two of them also joined directly), one sign each.

    The seed moves partitions, doorways and signs by up to about a metre and shuffles
    colours and which room holds which sign, so several worlds share one structure.
    """
    rng = np.random.default_rng(seed)
    length, hall_w, depth = 20.0, 3.0, 6.0
    north_cuts = (7.0 + rng.uniform(-0.5, 0.5), 14.0 + rng.uniform(-0.5, 0.5))
    south_cut = 10.0 + rng.uniform(-0.8, 0.8)
    hall = Room('hall', 0.0, 0.0, length, hall_w)
    side_rooms = (
        Room('north_west', 0.0, hall_w, north_cuts[0], hall_w + depth),
        Room('north', north_cuts[0], hall_w, north_cuts[1], hall_w + depth),
        Room('north_east', north_cuts[1], hall_w, length, hall_w + depth),
        Room('south_west', 0.0, -depth, south_cut, 0.0),
        Room('south_east', south_cut, -depth, length, 0.0),
    )
    rooms = (hall, *side_rooms)

    doorways = []
    for room in side_rooms:
        x = float(
            np.clip(room.centre[0] + rng.uniform(-1.0, 1.0), room.x_min + 1.2, room.x_max - 1.2)
        )
        y = room.y_min if room.y_min >= hall_w else room.y_max
        doorways.append(make_doorway(('hall', room.name), (x, y), horizontal=True))
    partition_y = hall_w + 0.5 * depth + rng.uniform(-1.0, 1.0)
    doorways.append(
        make_doorway(('north_west', 'north'), (north_cuts[0], partition_y), horizontal=False)
    )

    colors = [ROOM_PALETTE[i] for i in rng.permutation(len(ROOM_PALETTE))]
    room_colors = {hall.name: HALL_COLOR}
    for room, base in zip(side_rooms, colors[: len(side_rooms)], strict=True):
        room_colors[room.name] = tuple(
            int(c) for c in np.clip(np.add(base, rng.integers(-12, 13, 3)), 0, 255)
        )
    walls = [w for room in rooms for w in room_faces(room, doorways, room_colors[room.name])]
    walls += [w for d in doorways for w in jambs(d)]

    signs = []
    texts = [ROOM_SIGNS[i] for i in rng.permutation(len(ROOM_SIGNS))]
    for room, text in zip(side_rooms, texts, strict=True):
        x = room.centre[0] + rng.uniform(-0.8, 0.8)
        if room.y_min >= hall_w:  # north room: sign on the far (north) wall, facing south
            signs.append(place_sign(rng, text, room.name, (x, room.y_max), -math.pi / 2))
        else:
            signs.append(place_sign(rng, text, room.name, (x, room.y_min), math.pi / 2))
    if rng.random() < 0.5:
        signs.append(place_sign(rng, HALL_SIGN, 'hall', (0.0, 0.5 * hall_w), 0.0))
    else:
        signs.append(place_sign(rng, HALL_SIGN, 'hall', (length, 0.5 * hall_w), math.pi))
    return World(f'demo-{seed}', seed, rooms, tuple(doorways), tuple(walls), tuple(signs))


def make_doorway(rooms: tuple[str, str], centre: Point2, *, horizontal: bool) -> Doorway:
    half = 0.5 * DOOR_WIDTH
    x, y = centre
    if horizontal:
        return Doorway(rooms, (x - half, y), (x + half, y))
    return Doorway(rooms, (x, y - half), (x, y + half))


def room_faces(room: Room, doorways: list[Doorway], color: Rgb) -> list[Wall]:
    """The room's four wall faces, inset by half a wall thickness, with doorway gaps cut out."""
    t = WALL_HALF_THICKNESS
    x0, y0, x1, y1 = room.x_min + t, room.y_min + t, room.x_max - t, room.y_max - t
    # Each edge: (fixed coordinate on the boundary line, axis it runs along, span on the face).
    edges = (
        ('y', room.y_min, y0, (x0, x1)),
        ('y', room.y_max, y1, (x0, x1)),
        ('x', room.x_min, x0, (y0, y1)),
        ('x', room.x_max, x1, (y0, y1)),
    )
    faces = []
    for fixed_axis, line, face, (lo, hi) in edges:
        along = 0 if fixed_axis == 'y' else 1
        gaps = sorted(
            (min(d.a[along], d.b[along]), max(d.a[along], d.b[along]))
            for d in doorways
            if room.name in d.rooms
            and math.isclose(d.a[1 - along], line)
            and d.a[1 - along] == d.b[1 - along]
        )
        start = lo
        for gap_lo, gap_hi in [*gaps, (hi, hi)]:
            if gap_lo - start > 1e-9:
                a, b = (start, face), (gap_lo, face)
                if fixed_axis == 'x':
                    a, b = (face, start), (face, gap_lo)
                faces.append(Wall(a, b, WALL_HEIGHT, color, room.name))
            start = gap_hi
    return faces


def jambs(doorway: Doorway) -> list[Wall]:
    """Short faces closing the wall thickness at both sides of a doorway."""
    t = WALL_HALF_THICKNESS
    horizontal = doorway.a[1] == doorway.b[1]
    faces = []
    for x, y in (doorway.a, doorway.b):
        if horizontal:
            faces.append(Wall((x, y - t), (x, y + t), WALL_HEIGHT, JAMB_COLOR))
        else:
            faces.append(Wall((x - t, y), (x + t, y), WALL_HEIGHT, JAMB_COLOR))
    return faces


def place_sign(rng: np.random.Generator, text: str, room: str, on_line: Point2, yaw: float) -> Sign:
    """A sign on the wall whose centre line passes through `on_line`, facing `yaw`."""
    offset = WALL_HALF_THICKNESS + SIGN_STANDOFF
    x = on_line[0] + offset * math.cos(yaw)
    y = on_line[1] + offset * math.sin(yaw)
    background = SIGN_BACKGROUNDS[int(rng.integers(len(SIGN_BACKGROUNDS)))]
    foreground = SIGN_FOREGROUNDS[int(rng.integers(len(SIGN_FOREGROUNDS)))]
    return Sign(
        text, (x, y, SIGN_CENTRE_Z), yaw, room, background=background, foreground=foreground
    )


def occupancy_grid(
    world: World, resolution: float = 0.05, padding: float = 0.5
) -> tuple[tuple[float, float], np.ndarray]:
    """The world as a map: (x, y) of the grid's lower-left corner, and int8 cells [row=y, col=x].

    Values follow nav_msgs/OccupancyGrid: 100 for walls and object footprints, 0 for floor
    inside rooms and doorways, -1 (unknown) outside the building. Every wall face marks the
    cells within half a cell diagonal, so a wall is a closed line at any resolution.
    """
    x0 = min(r.x_min for r in world.rooms) - padding
    y0 = min(r.y_min for r in world.rooms) - padding
    cols = math.ceil((max(r.x_max for r in world.rooms) + padding - x0) / resolution)
    rows = math.ceil((max(r.y_max for r in world.rooms) + padding - y0) / resolution)
    xs = x0 + (np.arange(cols) + 0.5) * resolution
    ys = y0 + (np.arange(rows) + 0.5) * resolution
    grid = np.full((rows, cols), -1, dtype=np.int8)
    for room in world.rooms:
        inside_y = (ys >= room.y_min) & (ys <= room.y_max)
        inside_x = (xs >= room.x_min) & (xs <= room.x_max)
        grid[np.ix_(inside_y, inside_x)] = 0
    reach = 0.5 * math.sqrt(2.0) * resolution + 1e-9
    for wall in world.walls:
        a, b = np.asarray(wall.a), np.asarray(wall.b)
        rows, cols = _window(xs, ys, np.minimum(a, b) - reach, np.maximum(a, b) + reach)
        px, py = xs[cols][None, :], ys[rows][:, None]
        e = b - a
        u = np.clip(((px - a[0]) * e[0] + (py - a[1]) * e[1]) / max(float(e @ e), 1e-12), 0, 1)
        near = np.hypot(px - (a[0] + u * e[0]), py - (a[1] + u * e[1])) <= reach
        _occupy(grid, rows, cols, near)
    for obj in world.objects:
        centre = np.asarray(obj.position)
        rows, cols = _window(xs, ys, centre - obj.radius, centre + obj.radius)
        near = np.hypot(xs[cols][None, :] - centre[0], ys[rows][:, None] - centre[1])
        _occupy(grid, rows, cols, near <= obj.radius)
    return (x0, y0), grid


def _window(
    xs: np.ndarray, ys: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the cells whose centres lie in the box lo..hi."""
    rows = np.nonzero((ys >= lo[1]) & (ys <= hi[1]))[0]
    cols = np.nonzero((xs >= lo[0]) & (xs <= hi[0]))[0]
    return rows, cols


def _occupy(grid: np.ndarray, rows: np.ndarray, cols: np.ndarray, mask: np.ndarray) -> None:
    block = grid[np.ix_(rows, cols)]
    block[mask] = 100
    grid[np.ix_(rows, cols)] = block
