# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What every generated layout is furnished with: room colours, sign texts, and objects
along the walls, with one class-and-colour pair repeated in several rooms.

Shared by the layout families so that each draws from its seed in the same way.
"""

from __future__ import annotations

import colorsys
import math

import numpy as np

from waymark.sim.objects import CLASSES, SceneObject
from waymark.sim.world import WALL_HALF_THICKNESS, Doorway, Room, Sign

# Texts rapidocr read at 3 m (640x480) and 2.5 m (320x240) in a sweep over candidates.
SIGN_WORDS = (
    'COFFEE SHOP', 'PHARMACY', 'LIBRARY', 'BAKERY', 'GARAGE', 'KITCHEN', 'OFFICE', 'STUDIO',
    'CLINIC', 'MARKET', 'THEATER', 'MUSEUM', 'BANK', 'POST OFFICE', 'BOOK STORE',
    'FLOWER SHOP', 'TOY STORE', 'GYM', 'LAB', 'ARCHIVE', 'LOUNGE', 'STORAGE', 'WORKSHOP',
    'CAFE', 'DINER', 'BARBER', 'FLORIST', 'PIZZA', 'BISTRO', 'PET SHOP', 'SHOE STORE',
    'TAILOR', 'JEWELER', 'OPTICIAN', 'BUTCHER', 'DENTIST', 'LAUNDRY', 'BIKE SHOP',
    'MUSIC SHOP',
)  # fmt: skip
SUITE_NUMBERS = (204, 215, 236, 248, 257, 263, 284, 295, 326, 347, 358, 372, 385, 396)
MIN_SIGN_GAP = 4.0  # metres between any two signs
OBJECT_WALL_GAP = 0.35  # free space between an object's footprint and its walls
DOOR_KEEP_OUT = 1.6  # objects stay this far (plus their radius) from doorway centres


def room_row(
    rng: np.random.Generator, count: int, length: float, y0: float, y1: float, tag: str
) -> list[Room]:
    """`count` rooms side by side filling [0, length], widths drawn then scaled to fit."""
    widths = rng.uniform(4.5, 5.5, count)
    cuts = np.round(np.concatenate([[0.0], np.cumsum(widths) * length / widths.sum()]), 1)
    cuts[-1] = length
    return [
        Room(f'room_{tag}{i + 1}', float(cuts[i]), y0, float(cuts[i + 1]), y1) for i in range(count)
    ]


def room_color(rng: np.random.Generator) -> tuple[int, int, int]:
    """A muted colour, so light signs and bright objects stand out against the walls."""
    r, g, b = colorsys.hsv_to_rgb(rng.uniform(), rng.uniform(0.25, 0.5), rng.uniform(0.6, 0.8))
    return (round(r * 255), round(g * 255), round(b * 255))


def sign_texts(rng: np.random.Generator, count: int) -> list[str]:
    words = [SIGN_WORDS[i] for i in rng.permutation(len(SIGN_WORDS))]
    suites = [f'SUITE {SUITE_NUMBERS[i]}' for i in rng.permutation(len(SUITE_NUMBERS))]
    # A few suites among the words, as in an office building; the rest are shop names.
    pool = suites[: max(1, count // 8)] + words + suites[max(1, count // 8) :]
    if count > len(pool):
        raise ValueError(f'only {len(pool)} sign texts for {count} signs')
    return [pool[i] for i in rng.permutation(count)]


def furnish(
    rng: np.random.Generator,
    repeats: int,
    objects_per_room: tuple[int, int],
    rooms: list[Room],
    doorways: list[Doorway],
    signs: list[Sign],
) -> list[SceneObject]:
    """Objects along the walls of rooms, clear of doors and of the space in front of signs.

    One class-and-colour pair goes into `repeats` different rooms first; the rest are
    drawn at random, so more repeats happen by chance in bigger worlds.
    """
    categories = sorted(CLASSES)
    repeated = categories[int(rng.integers(len(categories)))]
    repeated_color = CLASSES[repeated].colors[int(rng.integers(len(CLASSES[repeated].colors)))]
    counts = rng.integers(objects_per_room[0], objects_per_room[1] + 1, len(rooms))
    repeat_rooms = set(rng.choice(len(rooms), size=min(repeats, len(rooms)), replace=False))
    objects: list[SceneObject] = []
    for i, room in enumerate(rooms):
        wanted = []
        if i in repeat_rooms:
            wanted.append((repeated, repeated_color))
        while len(wanted) < counts[i]:
            category = categories[int(rng.integers(len(categories)))]
            colors = CLASSES[category].colors
            wanted.append((category, colors[int(rng.integers(len(colors)))]))
        sign = next(s for s in signs if s.room == room.name)
        doors = [np.asarray(d.centre) for d in doorways if room.name in d.rooms]
        for category, color in wanted:
            spot = free_spot(rng, room, category, doors, sign, objects)
            if spot is not None:
                objects.append(SceneObject(category, color, spot, room.name))
    return objects


def free_spot(
    rng: np.random.Generator,
    room: Room,
    category: str,
    doors: list[np.ndarray],
    sign: Sign,
    placed: list[SceneObject],
) -> tuple[float, float] | None:
    """A spot near a wall of `room` where an object of `category` keeps every clearance."""
    radius = 0.5 * CLASSES[category].width
    inset = WALL_HALF_THICKNESS + OBJECT_WALL_GAP + radius
    band = 1.0  # objects stand within this much of the nearest wall, leaving the middle open
    for _ in range(200):
        x = float(rng.uniform(room.x_min + inset, room.x_max - inset))
        y = float(rng.uniform(room.y_min + inset, room.y_max - inset))
        to_wall = min(x - room.x_min, room.x_max - x, y - room.y_min, room.y_max - y)
        if to_wall > inset + band:
            continue
        p = np.array([x, y])
        if any(np.linalg.norm(p - d) < DOOR_KEEP_OUT + radius for d in doors):
            continue
        offset = p - np.asarray(sign.position[:2])
        depth = float(offset @ sign.normal)
        lateral = abs(float(offset @ np.array([-sign.normal[1], sign.normal[0]])))
        if depth < 3.9 + radius and lateral < 1.4 + radius:
            continue  # the sign's viewing area
        if any(math.dist((x, y), o.position) < radius + o.radius + 0.6 for o in placed):
            continue
        return (round(x, 3), round(y, 3))
    return None
