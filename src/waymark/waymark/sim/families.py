# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Layout families beyond the corridor-and-rooms bands, so a benchmark does not only
test the one layout its questions were tuned on.

- `corridor`: a main corridor with dead-end branches off both sides, rooms along each
  branch (the first may also open onto the main corridor), some rooms joined in between.
- `open`: an open plan, a grid of zones separated by partitions with wide openings, so
  much of the floor is seen from the next zone.
- `lookalike`: several floors' worth of identical wings (same rooms, colours, doors and
  objects) joined by a stair hall; only the sign texts tell the floors apart.

Every family furnishes its rooms as the `rooms` family does (`furnish`), with one
class-and-colour pair in many rooms. Rooms are axis-aligned rectangles joined by doorways
on their shared boundary lines, as the renderer, the occupancy grid and the tour expect.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy.cluster.hierarchy import DisjointSet

from waymark.sim.furnish import MIN_SIGN_GAP, furnish, room_color, room_row, sign_texts
from waymark.sim.world import (
    HALL_COLOR,
    SIGN_WIDTH,
    Doorway,
    Room,
    World,
    jambs,
    make_doorway,
    place_sign,
    room_faces,
)

SIZE_ORDER = ('large', 'medium', 'small')  # sorted, as the rooms family numbers its streams
FLOOR_GAP = 4.0  # between look-alike floors, so back walls never carry two close signs
OPENING_WIDTH = (2.0, 3.0)  # metres; open-plan partitions leave at least PARTITION_STUB
PARTITION_STUB = 0.8
EXTRA_LINK = 0.3  # chance of a second route (a door or opening beyond the spanning ones)
SIGN_SPOT_STEP = 0.25


@dataclass(frozen=True)
class CorridorSpec:
    branches: int  # dead-end branches, alternating north and south of the main corridor
    rows: int  # rooms on each side of a branch
    repeats: int
    objects_per_room: tuple[int, int]


@dataclass(frozen=True)
class OpenSpec:
    columns: int
    rows: int
    repeats: int
    objects_per_room: tuple[int, int]


@dataclass(frozen=True)
class LookalikeSpec:
    floors: int
    north: int  # rooms north of each floor's corridor
    south: int
    objects_per_room: tuple[int, int]


CORRIDOR_SIZES = {
    'small': CorridorSpec(branches=2, rows=1, repeats=3, objects_per_room=(1, 2)),
    'medium': CorridorSpec(branches=3, rows=2, repeats=5, objects_per_room=(1, 3)),
    'large': CorridorSpec(branches=5, rows=3, repeats=8, objects_per_room=(1, 3)),
}
OPEN_SIZES = {
    'small': OpenSpec(columns=3, rows=2, repeats=3, objects_per_room=(1, 2)),
    'medium': OpenSpec(columns=4, rows=3, repeats=5, objects_per_room=(1, 3)),
    'large': OpenSpec(columns=5, rows=4, repeats=7, objects_per_room=(1, 3)),
}
LOOKALIKE_SIZES = {
    'small': LookalikeSpec(floors=3, north=1, south=1, objects_per_room=(1, 2)),
    'medium': LookalikeSpec(floors=3, north=3, south=2, objects_per_room=(1, 3)),
    'large': LookalikeSpec(floors=4, north=5, south=4, objects_per_room=(1, 3)),
}


def _rng(seed: int, size: str, family: str) -> np.random.Generator:
    return np.random.default_rng([seed, SIZE_ORDER.index(size), 1 + list(BUILDERS).index(family)])


def _metres(rng: np.random.Generator, lo: float, hi: float) -> float:
    return round(float(rng.uniform(lo, hi)), 1)


def corridor_world(seed: int, size: str) -> World:
    """A main corridor with dead-end branches and rooms off them."""
    spec, rng = CORRIDOR_SIZES[size], _rng(seed, size, 'corridor')
    hall_w = _metres(rng, 2.4, 3.0)
    branches: list[Room] = []
    rooms: list[Room] = []
    doorways: list[Doorway] = []
    x = 0.0
    for b in range(spec.branches):
        north = b % 2 == 0
        west_w, branch_w, east_w = (
            _metres(rng, 4.5, 5.5),
            _metres(rng, 2.2, 2.6),
            _metres(rng, 4.5, 5.5),
        )
        depths = [_metres(rng, 4.5, 5.5) for _ in range(spec.rows)]
        reach = sum(depths)
        bx = x + west_w
        y0, y1 = (hall_w, hall_w + reach) if north else (-reach, 0.0)
        branch = Room(f'branch_{b + 1}', bx, y0, bx + branch_w, y1)
        branches.append(branch)
        mouth = hall_w if north else 0.0
        doorways.append(
            make_doorway(('corridor', branch.name), (branch.centre[0], mouth), horizontal=True)
        )
        for side, (cx0, cx1) in (('w', (x, bx)), ('e', (bx + branch_w, bx + branch_w + east_w))):
            column: list[Room] = []
            along = 0.0
            for r, depth in enumerate(depths):
                ya, yb = (
                    (mouth + along, mouth + along + depth) if north else (-along - depth, -along)
                )
                along += depth
                room = Room(f'room_{b + 1}{side}{r + 1}', cx0, ya, cx1, yb)
                line = bx if side == 'w' else bx + branch_w
                door_y = round(float(rng.uniform(ya + 1.0, yb - 1.0)), 2)
                doorways.append(
                    make_doorway((branch.name, room.name), (line, door_y), horizontal=False)
                )
                if r == 0 and rng.random() < EXTRA_LINK:  # a second way in, from the main corridor
                    door_x = round(float(rng.uniform(cx0 + 1.0, cx1 - 1.0)), 2)
                    doorways.append(
                        make_doorway(('corridor', room.name), (door_x, mouth), horizontal=True)
                    )
                if column and rng.random() < EXTRA_LINK:
                    shared = column[-1].y_max if north else column[-1].y_min
                    door_x = round(float(rng.uniform(cx0 + 1.0, cx1 - 1.0)), 2)
                    doorways.append(
                        make_doorway(
                            (column[-1].name, room.name), (door_x, shared), horizontal=True
                        )
                    )
                column.append(room)
            rooms += column
        x = bx + branch_w + east_w
    dead_end = _metres(rng, 3.0, 5.0)  # the main corridor runs on past the last branch
    corridor = Room('corridor', 0.0, 0.0, x + dead_end, hall_w)
    return _finish(
        rng,
        f'corridor-{size}-{seed}',
        seed,
        size,
        'corridor',
        [corridor, *branches],
        rooms,
        doorways,
        spec.repeats,
        spec.objects_per_room,
    )


def open_world(seed: int, size: str) -> World:
    """Zones of one open floor, separated by partitions with wide openings."""
    spec, rng = OPEN_SIZES[size], _rng(seed, size, 'open')
    xs = np.round(np.concatenate([[0.0], np.cumsum(rng.uniform(6.0, 7.5, spec.columns))]), 1)
    ys = np.round(np.concatenate([[0.0], np.cumsum(rng.uniform(6.0, 7.5, spec.rows))]), 1)
    zones = {
        (r, c): Room(
            f'zone_{chr(ord("a") + r)}{c + 1}',
            float(xs[c]),
            float(ys[r]),
            float(xs[c + 1]),
            float(ys[r + 1]),
        )
        for r in range(spec.rows)
        for c in range(spec.columns)
    }
    pairs = [((r, c), (r, c + 1)) for r in range(spec.rows) for c in range(spec.columns - 1)]
    pairs += [((r, c), (r + 1, c)) for r in range(spec.rows - 1) for c in range(spec.columns)]
    joined = DisjointSet(zones)
    doorways: list[Doorway] = []
    for i in rng.permutation(len(pairs)):  # a random spanning tree, then some extra openings
        a, b = pairs[i]
        if joined.merge(a, b) or rng.random() < EXTRA_LINK:
            doorways.append(_opening(rng, zones[a], zones[b]))
    rooms = list(zones.values())
    return _finish(
        rng,
        f'open-{size}-{seed}',
        seed,
        size,
        'open',
        [],
        rooms,
        doorways,
        spec.repeats,
        spec.objects_per_room,
    )


def _opening(rng: np.random.Generator, a: Room, b: Room) -> Doorway:
    """A wide gap in the partition between two neighbouring zones."""
    width = float(rng.uniform(*OPENING_WIDTH))
    if math.isclose(a.x_max, b.x_min):  # side by side: a vertical partition
        lo, hi = a.y_min + PARTITION_STUB + width / 2, a.y_max - PARTITION_STUB - width / 2
        y = round(float(rng.uniform(lo, hi)), 2)
        return Doorway((a.name, b.name), (a.x_max, y - width / 2), (a.x_max, y + width / 2))
    lo, hi = a.x_min + PARTITION_STUB + width / 2, a.x_max - PARTITION_STUB - width / 2
    x = round(float(rng.uniform(lo, hi)), 2)
    return Doorway((a.name, b.name), (x - width / 2, a.y_max), (x + width / 2, a.y_max))


def lookalike_world(seed: int, size: str) -> World:
    """Identical floors (geometry, colours, doors, objects), told apart by their signs."""
    spec, rng = LOOKALIKE_SIZES[size], _rng(seed, size, 'lookalike')
    length = round(float(rng.uniform(4.5, 5.5, max(spec.north, spec.south)).sum()), 1)
    hall_w, south_d, north_d = (
        _metres(rng, 2.4, 3.0),
        _metres(rng, 4.5, 6.0),
        _metres(rng, 4.5, 6.0),
    )
    corridor = Room('corridor_f1', 0.0, 0.0, length, hall_w)
    side = room_row(rng, spec.south, length, -south_d, 0.0, 'f1s')
    side += room_row(rng, spec.north, length, hall_w, hall_w + north_d, 'f1n')
    doorways = [
        make_doorway(
            (corridor.name, room.name),
            (
                round(float(rng.uniform(room.x_min + 1.0, room.x_max - 1.0)), 2),
                0.0 if room.y_max <= 0 else hall_w,
            ),
            horizontal=True,
        )
        for room in side
    ]
    colors = {r.name: room_color(rng) for r in side} | {corridor.name: HALL_COLOR}
    # The stair hall's door on the corridor's west end is there on every floor: keep the
    # corridor's sign off it.
    stair_door = make_doorway(
        ('stairs', corridor.name), (0.0, corridor.centre[1]), horizontal=False
    )
    spots = _sign_spots_for(rng, [corridor, *side], [*doorways, stair_door])
    template_signs = [place_sign(rng, '', room, line, yaw) for room, (line, yaw) in spots.items()]
    template_objects = furnish(rng, 1, spec.objects_per_room, side, doorways, template_signs)
    texts = iter(sign_texts(rng, spec.floors * (1 + len(side)) + 1))
    pitch = south_d + hall_w + north_d + FLOOR_GAP
    rooms, all_doors, signs, objects = [], [], [], []
    floor_colors = {}
    for floor in range(spec.floors):
        dy = floor * pitch

        def moved(name: str, floor=floor) -> str:
            return name.replace('_f1', f'_f{floor + 1}', 1)

        for room in [corridor, *side]:
            rooms.append(
                replace(room, name=moved(room.name), y_min=room.y_min + dy, y_max=room.y_max + dy)
            )
            floor_colors[moved(room.name)] = colors[room.name]
        all_doors += [
            Doorway(
                (moved(d.rooms[0]), moved(d.rooms[1])), (d.a[0], d.a[1] + dy), (d.b[0], d.b[1] + dy)
            )
            for d in doorways
        ]
        signs += [
            replace(
                s,
                text=next(texts),
                room=moved(s.room),
                position=(s.position[0], s.position[1] + dy, s.position[2]),
            )
            for s in template_signs
        ]
        objects += [
            replace(o, room=moved(o.room), position=(o.position[0], round(o.position[1] + dy, 3)))
            for o in template_objects
        ]
    stairs = Room('stairs', -_metres(rng, 2.4, 3.0), 0.0, 0.0, (spec.floors - 1) * pitch + hall_w)
    floor_colors[stairs.name] = HALL_COLOR
    halls = [r for r in rooms if r.name.startswith('corridor')]
    all_doors += [
        make_doorway((stairs.name, h.name), (0.0, h.centre[1]), horizontal=False) for h in halls
    ]
    signs.append(
        place_sign(rng, next(texts), stairs.name, (stairs.centre[0], stairs.y_max), -math.pi / 2)
    )
    ordered = [*halls, stairs, *(r for r in rooms if r not in halls)]
    walls = [w for room in ordered for w in room_faces(room, all_doors, floor_colors[room.name])]
    walls += [w for d in all_doors for w in jambs(d)]
    return World(
        f'lookalike-{size}-{seed}',
        seed,
        tuple(ordered),
        tuple(all_doors),
        tuple(walls),
        tuple(signs),
        tuple(objects),
        size,
        'lookalike',
    )


def _finish(
    rng: np.random.Generator,
    name: str,
    seed: int,
    size: str,
    family: str,
    corridors: list[Room],
    rooms: list[Room],
    doorways: list[Doorway],
    repeats: int,
    objects_per_room: tuple[int, int],
) -> World:
    """Colours, walls, one sign per room and corridor, and objects in the rooms."""
    colors = {r.name: room_color(rng) for r in rooms} | {r.name: HALL_COLOR for r in corridors}
    everything = [*corridors, *rooms]
    walls = [w for room in everything for w in room_faces(room, doorways, colors[room.name])]
    walls += [w for d in doorways for w in jambs(d)]
    spots = _sign_spots_for(rng, everything, doorways)
    texts = iter(sign_texts(rng, len(spots)))
    signs = [place_sign(rng, next(texts), room, line, yaw) for room, (line, yaw) in spots.items()]
    objects = furnish(rng, repeats, objects_per_room, rooms, doorways, signs)
    return World(
        name,
        seed,
        tuple(everything),
        tuple(doorways),
        tuple(walls),
        tuple(signs),
        tuple(objects),
        size,
        family,
    )


def _sign_spots_for(
    rng: np.random.Generator, rooms: list[Room], doorways: list[Doorway]
) -> dict[str, tuple[tuple[float, float], float]]:
    """Per room, a wall spot (on the wall line) and facing yaw for its sign, at least
    MIN_SIGN_GAP from every other; a long, narrow room (a corridor) hangs it on an end wall,
    so it is read down the corridor's length. The room with the fewest spots left goes
    next, so a zone walled in by its neighbours' signs is not left without one."""
    spots = {room.name: _wall_spots(room, doorways) for room in rooms}
    chosen: dict[str, tuple[tuple[float, float], float]] = {}
    while len(chosen) < len(rooms):
        tiers = {}
        for room in rooms:
            if room.name in chosen:
                continue
            gaps = [
                min((math.dist(p, q) for q, _ in chosen.values()), default=math.inf)
                for p, _ in spots[room.name]
            ]
            tiers[room.name] = [
                [s for s, g in zip(spots[room.name], gaps, strict=True) if g >= need]
                for need in (MIN_SIGN_GAP + 0.5, MIN_SIGN_GAP)
            ]
        name = min(tiers, key=lambda n: len(tiers[n][1]))
        pool = next((tier for tier in tiers[name] if tier), None)
        if pool is None:
            raise ValueError(f'no wall in {name} is {MIN_SIGN_GAP} m from the other signs')
        chosen[name] = pool[int(rng.integers(len(pool)))]
    return {room.name: chosen[room.name] for room in rooms}


def _wall_spots(room: Room, doorways: list[Doorway]) -> list[tuple[tuple[float, float], float]]:
    """(point on the wall line, facing yaw) every SIGN_SPOT_STEP, clear of the room's doors;
    only the short walls of a room more than twice as long as it is wide."""
    width, depth = room.x_max - room.x_min, room.y_max - room.y_min
    edges = (
        ('y', room.y_min, math.pi / 2, (room.x_min, room.x_max)),
        ('y', room.y_max, -math.pi / 2, (room.x_min, room.x_max)),
        ('x', room.x_min, 0.0, (room.y_min, room.y_max)),
        ('x', room.x_max, math.pi, (room.y_min, room.y_max)),
    )
    if width > 2 * depth:
        edges = edges[2:]
    elif depth > 2 * width:
        edges = edges[:2]
    margin = 0.5 * SIGN_WIDTH + 0.25
    spots = []
    for axis, line, yaw, (lo, hi) in edges:
        along = 0 if axis == 'y' else 1
        doors = [
            (min(d.a[along], d.b[along]), max(d.a[along], d.b[along]))
            for d in doorways
            if room.name in d.rooms and math.isclose(d.centre[1 - along], line)
        ]
        for s in np.arange(lo + margin, hi - margin + 1e-9, SIGN_SPOT_STEP):
            if all(s + margin <= a or s - margin >= b for a, b in doors):
                spots.append(((float(s), line) if axis == 'y' else (line, float(s)), yaw))
    return spots


BUILDERS: dict[str, Callable[[int, str], World]] = {
    'corridor': corridor_world,
    'open': open_world,
    'lookalike': lookalike_world,
}
