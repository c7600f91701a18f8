# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Seeded worlds of many rooms: corridors lined with rooms, signs, and objects to find.

Layout: one or more east-west corridors ("bands"), each with a row of rooms on both sides;
bands are stacked with a gap between them, and a north-south spine corridor along the west
end joins the corridors. Every room opens onto its corridor; some side-by-side neighbours
are also joined directly, so there are several routes between rooms. Every room and
corridor carries one sign with a distinct, OCR-friendly text, and rooms hold objects, with
some class-and-colour pairs repeated in different rooms so that a question has to say
which one it means.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from waymark.sim import families
from waymark.sim.furnish import MIN_SIGN_GAP, furnish, room_color, room_row, sign_texts
from waymark.sim.world import (
    DOOR_WIDTH,
    HALL_COLOR,
    SIGN_WIDTH,
    Doorway,
    Room,
    Sign,
    World,
    jambs,
    make_doorway,
    place_sign,
    room_faces,
)

BAND_GAP = 4.0  # open space between stacked bands, so back walls never carry two close signs


@dataclass(frozen=True)
class SizeSpec:
    """How many bands and rooms a size has, and how densely rooms are furnished."""

    bands: int
    north: int  # rooms north of each corridor
    south: int  # rooms south of each corridor
    repeats: int  # rooms that hold the same repeated class-and-colour pair
    objects_per_room: tuple[int, int]  # inclusive range


SIZES: dict[str, SizeSpec] = {
    'small': SizeSpec(bands=1, north=3, south=2, repeats=2, objects_per_room=(1, 2)),
    'medium': SizeSpec(bands=1, north=7, south=6, repeats=3, objects_per_room=(1, 3)),
    'large': SizeSpec(bands=3, north=6, south=6, repeats=4, objects_per_room=(1, 3)),
}


FAMILIES = ('rooms', *families.BUILDERS)


def generate_world(seed: int, size: str = 'small', family: str = 'rooms') -> World:
    """A world drawn from `seed`; same seed, size and family give an equal world.

    `rooms` is the corridor-and-rooms layout below; the other families are in
    `waymark.sim.families` and draw from their own streams, so adding one changes no world.
    """
    if size not in SIZES:
        raise ValueError(f'size must be one of {sorted(SIZES)}, not {size!r}')
    if family not in FAMILIES:
        raise ValueError(f'family must be one of {list(FAMILIES)}, not {family!r}')
    if family != 'rooms':
        return families.BUILDERS[family](seed, size)
    spec = SIZES[size]
    rng = np.random.default_rng([seed, sorted(SIZES).index(size)])
    corridors, side_rooms, doorways = _layout(rng, spec)
    rooms = (*corridors, *side_rooms)
    colors = {r.name: room_color(rng) for r in side_rooms} | {r.name: HALL_COLOR for r in corridors}
    walls = [w for room in rooms for w in room_faces(room, doorways, colors[room.name])]
    walls += [w for d in doorways for w in jambs(d)]
    signs = _signs(rng, corridors, side_rooms, doorways)
    objects = furnish(rng, spec.repeats, spec.objects_per_room, side_rooms, doorways, signs)
    return World(
        f'{size}-{seed}',
        seed,
        rooms,
        tuple(doorways),
        tuple(walls),
        tuple(signs),
        tuple(objects),
        size,
    )


def _layout(
    rng: np.random.Generator, spec: SizeSpec
) -> tuple[list[Room], list[Room], list[Doorway]]:
    length = round(float(rng.uniform(4.5, 5.5, max(spec.north, spec.south)).sum()), 1)
    corridors: list[Room] = []
    rooms: list[Room] = []
    doorways: list[Doorway] = []
    y = 0.0
    for band in range(spec.bands):
        south_depth = round(float(rng.uniform(4.5, 6.5)), 1)
        north_depth = round(float(rng.uniform(4.5, 6.5)), 1)
        hall_w = round(float(rng.uniform(2.4, 3.0)), 1)
        if band:
            y += BAND_GAP + south_depth
        corridor = Room(f'corridor_{band + 1}', 0.0, y, length, y + hall_w)
        corridors.append(corridor)
        south = room_row(rng, spec.south, length, y - south_depth, y, f'{band + 1}s')
        north = room_row(
            rng, spec.north, length, y + hall_w, y + hall_w + north_depth, f'{band + 1}n'
        )
        for room in south:
            doorways.append(_door_on_line(rng, (corridor.name, room.name), room, y))
        for room in north:
            doorways.append(_door_on_line(rng, (corridor.name, room.name), room, y + hall_w))
        for row in (south, north):
            for a, b in itertools.pairwise(row):
                if rng.random() < 0.3:
                    lo, hi = max(a.y_min, b.y_min) + 1.0, min(a.y_max, b.y_max) - 1.0
                    doorways.append(
                        make_doorway(
                            (a.name, b.name),
                            (a.x_max, float(rng.uniform(lo, hi))),
                            horizontal=False,
                        )
                    )
        rooms += south + north
        y += hall_w + north_depth
    if spec.bands > 1:
        top = corridors[-1].y_max
        spine = Room('spine', -round(float(rng.uniform(2.4, 3.0)), 1), 0.0, 0.0, top)
        for corridor in corridors:
            doorways.append(
                make_doorway(
                    (spine.name, corridor.name), (0.0, corridor.centre[1]), horizontal=False
                )
            )
        corridors.append(spine)
    return corridors, rooms, doorways


def _door_on_line(
    rng: np.random.Generator, rooms: tuple[str, str], room: Room, y: float
) -> Doorway:
    x = float(rng.uniform(room.x_min + 1.0, room.x_max - 1.0))
    return make_doorway(rooms, (round(x, 2), y), horizontal=True)


def _signs(
    rng: np.random.Generator,
    corridors: list[Room],
    rooms: list[Room],
    doorways: list[Doorway],
) -> list[Sign]:
    """One sign per corridor (on its far end wall) and per room (back wall if it can)."""
    texts = iter(sign_texts(rng, len(corridors) + len(rooms)))
    signs: list[Sign] = []
    for corridor in corridors:
        if corridor.name == 'spine':
            line, yaw = (corridor.centre[0], corridor.y_max), -math.pi / 2
        else:
            line, yaw = (corridor.x_max, corridor.centre[1]), math.pi
        signs.append(place_sign(rng, next(texts), corridor.name, line, yaw))
    for room in rooms:
        candidates = _sign_spots(room, corridors, doorways)
        first_corridor_spot = len(candidates)
        candidates += [
            c for c in _sign_spots(room, corridors, doorways, True) if c not in candidates
        ]
        placed = [np.asarray(s.position[:2]) for s in signs]
        gaps = [min((math.dist(c[0], p) for p in placed), default=math.inf) for c in candidates]
        tiers = [
            [
                c
                for i, (c, gap) in enumerate(zip(candidates, gaps, strict=True))
                if gap >= need and c[2] >= back and (i < first_corridor_spot) != last_resort
            ]
            for last_resort in (False, True)
            for need in (MIN_SIGN_GAP + 0.5, MIN_SIGN_GAP)
            for back in (True, False)
        ]
        pool = next((tier for tier in tiers if tier), None)
        if pool is None:
            raise ValueError(f'no wall in {room.name} is {MIN_SIGN_GAP} m from the other signs')
        spot, yaw, _ = pool[int(rng.integers(len(pool)))]
        signs.append(place_sign(rng, next(texts), room.name, spot, yaw))
    return signs


def _sign_spots(
    room: Room, corridors: list[Room], doorways: list[Doorway], corridor_wall: bool = False
) -> list[tuple[tuple[float, float], float, bool]]:
    """(point on the wall line, facing yaw, on the back wall) every 0.25 m, clear of doors.

    The wall onto the corridor is left out unless `corridor_wall`: a sign there hangs beside
    the door the robot comes in by, so it is the last resort.
    """
    north_of_corridor = any(math.isclose(room.y_min, c.y_max) for c in corridors)
    corridor_line = room.y_min if north_of_corridor else room.y_max
    edges = (
        ('y', room.y_min, math.pi / 2, (room.x_min, room.x_max)),
        ('y', room.y_max, -math.pi / 2, (room.x_min, room.x_max)),
        ('x', room.x_min, 0.0, (room.y_min, room.y_max)),
        ('x', room.x_max, math.pi, (room.y_min, room.y_max)),
    )
    margin = 0.5 * SIGN_WIDTH + 0.25
    spots = []
    for axis, line, yaw, (lo, hi) in edges:
        if axis == 'y' and line == corridor_line and not corridor_wall:
            continue
        back = axis == 'y'
        along = 0 if axis == 'y' else 1
        doors = [
            d.centre[along]
            for d in doorways
            if room.name in d.rooms and math.isclose(d.centre[1 - along], line)
        ]
        for s in np.arange(lo + margin, hi - margin + 1e-9, 0.25):
            if all(abs(s - c) >= margin + 0.5 * DOOR_WIDTH for c in doors):
                point = (float(s), line) if axis == 'y' else (line, float(s))
                spots.append((point, yaw, back))
    return spots
