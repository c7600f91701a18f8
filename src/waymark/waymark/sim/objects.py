# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Everyday objects standing on the floor, and the sprites the renderer draws them with.

Each object is a vertical billboard (always turned to the camera) with a footprint circle
for collision checks. Sprites are drawn procedurally so a class keeps one silhouette in
every colour, which is what makes "the red barrel" versus "the blue barrel" a question.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

Rgb = tuple[int, int, int]

COLORS: dict[str, Rgb] = {
    'red': (200, 36, 36),
    'green': (40, 150, 60),
    'blue': (40, 80, 200),
    'yellow': (236, 200, 30),
    'orange': (240, 120, 20),
    'purple': (130, 50, 160),
    'white': (236, 236, 236),
    'black': (34, 34, 38),
    'brown': (130, 84, 46),
    'grey': (128, 128, 134),
}


@dataclass(frozen=True)
class ObjectClass:
    """Physical size of a class (metres) and the colours it comes in."""

    width: float
    height: float
    colors: tuple[str, ...]


CLASSES: dict[str, ObjectClass] = {
    'barrel': ObjectClass(0.6, 0.9, ('red', 'blue', 'green', 'yellow')),
    'box': ObjectClass(0.6, 0.55, ('brown', 'red', 'blue')),
    'cone': ObjectClass(0.4, 0.7, ('orange', 'yellow')),
    'office chair': ObjectClass(0.6, 1.05, ('black', 'blue', 'red')),
    'desk': ObjectClass(1.2, 0.75, ('brown', 'white', 'grey')),
    'medkit': ObjectClass(0.5, 0.35, ('red', 'white')),
    'ball': ObjectClass(0.45, 0.45, ('red', 'blue', 'green', 'yellow', 'orange')),
    'potion': ObjectClass(0.3, 0.5, ('purple', 'green', 'red', 'blue')),
    'keys': ObjectClass(0.35, 0.3, ('yellow', 'grey')),
    'duckie': ObjectClass(0.4, 0.4, ('yellow', 'white')),
}

SPRITE_PX_PER_M = 160  # sprite texture density, finest level


@dataclass(frozen=True)
class SceneObject:
    """One object: class, colour name and where its footprint centre stands."""

    category: str
    color: str
    position: tuple[float, float]
    room: str

    @property
    def width(self) -> float:
        return CLASSES[self.category].width

    @property
    def height(self) -> float:
        return CLASSES[self.category].height

    @property
    def radius(self) -> float:
        """Footprint radius for collision and placement checks."""
        return 0.5 * self.width

    @property
    def label(self) -> str:
        return f'{self.color} {self.category}'


def _shade(rgb: Rgb, factor: float) -> Rgb:
    return tuple(int(np.clip(c * factor, 0, 255)) for c in rgb)


@functools.lru_cache(maxsize=64)
def sprite(category: str, color: str) -> np.ndarray:
    """RGBA uint8 texture (rows, cols, 4) of the class in the colour; alpha 0 is see-through."""
    spec = CLASSES[category]
    w = max(8, round(spec.width * SPRITE_PX_PER_M))
    h = max(8, round(spec.height * SPRITE_PX_PER_M))
    image = Image.new('RGBA', (w, h), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    base = COLORS[color]
    _PAINTERS[category](draw, w, h, base)
    return np.asarray(image)


def _barrel(draw: ImageDraw.ImageDraw, w: int, h: int, c: Rgb) -> None:
    lid = h // 10
    for i in range(w):  # cylinder shading: bright in the middle, dark at the rims
        f = 0.55 + 0.6 * (1.0 - abs(2.0 * i / (w - 1) - 1.0) ** 2)
        draw.line((i, lid // 2, i, h - 1 - lid // 2), fill=_shade(c, f))
    draw.ellipse((0, 0, w - 1, lid), fill=_shade(c, 1.25))
    for y in (h // 4, h // 2, 3 * h // 4):
        draw.rectangle((0, y - h // 40, w - 1, y + h // 40), fill=_shade(c, 0.45))


def _box(draw: ImageDraw.ImageDraw, w: int, h: int, c: Rgb) -> None:
    edge = max(2, w // 30)
    draw.rectangle((0, 0, w - 1, h - 1), fill=c, outline=_shade(c, 0.5), width=edge)
    draw.rectangle((0, 0, w - 1, h // 5), fill=_shade(c, 1.2), outline=_shade(c, 0.5), width=edge)
    draw.rectangle((w // 2 - w // 14, 0, w // 2 + w // 14, h - 1), fill=(214, 196, 150))


def _cone(draw: ImageDraw.ImageDraw, w: int, h: int, c: Rgb) -> None:
    base = h // 10
    draw.rectangle((0, h - base, w - 1, h - 1), fill=_shade(c, 0.7))
    draw.polygon(((w // 2, 0), (w - w // 8, h - base), (w // 8, h - base)), fill=c)
    for top, bottom in ((0.35, 0.45), (0.6, 0.7)):
        y0, y1 = int(top * h), int(bottom * h)
        x0, x1 = w // 2 - int(0.38 * w * top), w // 2 + int(0.38 * w * top)
        x2, x3 = w // 2 - int(0.38 * w * bottom), w // 2 + int(0.38 * w * bottom)
        draw.polygon(((x0, y0), (x1, y0), (x3, y1), (x2, y1)), fill=(246, 246, 246))


def _office_chair(draw: ImageDraw.ImageDraw, w: int, h: int, c: Rgb) -> None:
    metal = (70, 70, 76)
    draw.rounded_rectangle(
        (w // 6, 0, 5 * w // 6, int(0.5 * h)), radius=w // 8, fill=c, outline=_shade(c, 0.6)
    )
    draw.rounded_rectangle((0, int(0.52 * h), w - 1, int(0.64 * h)), radius=w // 16, fill=c)
    draw.rectangle((w // 2 - w // 20, int(0.64 * h), w // 2 + w // 20, int(0.88 * h)), fill=metal)
    draw.polygon(((w // 2, int(0.86 * h)), (0, int(0.94 * h)), (w - 1, int(0.94 * h))), fill=metal)
    for x in (w // 16, w // 2, w - 1 - w // 16):
        draw.ellipse((x - w // 16, h - w // 8, x + w // 16, h - 1), fill=(20, 20, 20))


def _desk(draw: ImageDraw.ImageDraw, w: int, h: int, c: Rgb) -> None:
    top = h // 8
    dark = _shade(c, 0.6)
    draw.rectangle((0, 0, w - 1, top), fill=_shade(c, 1.1), outline=dark, width=2)
    draw.rectangle((w // 20, top, w // 20 + w // 16, h - 1), fill=dark)
    draw.rectangle((w - 1 - w // 20 - w // 16, top, w - 1 - w // 20, h - 1), fill=dark)
    draw.rectangle((int(0.6 * w), top, int(0.88 * w), int(0.75 * h)), fill=c, outline=dark, width=2)
    for y in (0.35, 0.6):
        draw.rectangle((int(0.7 * w), int(y * h), int(0.78 * w), int(y * h) + 4), fill=dark)


def _medkit(draw: ImageDraw.ImageDraw, w: int, h: int, c: Rgb) -> None:
    cross = (250, 250, 250) if c != COLORS['white'] else COLORS['red']
    draw.rounded_rectangle(
        (w // 3, 0, 2 * w // 3, h // 5), radius=4, outline=_shade(c, 0.6), width=4
    )
    draw.rounded_rectangle(
        (0, h // 6, w - 1, h - 1), radius=w // 12, fill=c, outline=_shade(c, 0.6)
    )
    cx, cy, arm, bar = w // 2, (h // 6 + h) // 2, int(0.3 * h), int(0.1 * h)
    draw.rectangle((cx - arm, cy - bar, cx + arm, cy + bar), fill=cross)
    draw.rectangle((cx - bar, cy - arm, cx + bar, cy + arm), fill=cross)


def _ball(draw: ImageDraw.ImageDraw, w: int, h: int, c: Rgb) -> None:
    draw.ellipse((0, 0, w - 1, h - 1), fill=_shade(c, 0.7))
    draw.ellipse((w // 10, h // 12, w - 1 - w // 6, h - 1 - h // 6), fill=c)
    draw.ellipse((w // 4, h // 5, w // 4 + w // 6, h // 5 + h // 8), fill=_shade(c, 1.5))


def _potion(draw: ImageDraw.ImageDraw, w: int, h: int, c: Rgb) -> None:
    glass = (200, 220, 230)
    draw.rectangle((w // 3, 0, 2 * w // 3, h // 10), fill=(150, 100, 60))  # cork
    draw.rectangle((w // 3, h // 10, 2 * w // 3, int(0.4 * h)), fill=glass)
    draw.ellipse((0, int(0.3 * h), w - 1, h - 1), fill=glass)
    draw.chord((w // 16, int(0.34 * h), w - 1 - w // 16, h - 1 - h // 30), 200, 340, fill=c)
    draw.rectangle((w // 16, int(0.62 * h), w - 1 - w // 16, int(0.7 * h)), fill=c)
    draw.chord((w // 16, int(0.34 * h), w - 1 - w // 16, h - 1 - h // 30), 0, 180, fill=c)


def _keys(draw: ImageDraw.ImageDraw, w: int, h: int, c: Rgb) -> None:
    ring = max(3, w // 18)
    draw.ellipse((w // 4, 0, 3 * w // 4, h // 2), outline=_shade(c, 0.8), width=ring)
    for x0, x1 in ((w // 8, w // 3), (2 * w // 3, 7 * w // 8)):
        draw.ellipse((x0 - w // 10, int(0.4 * h), x1 + w // 10, int(0.62 * h)), fill=c)
        xm = (x0 + x1) // 2
        draw.rectangle((xm - w // 20, int(0.55 * h), xm + w // 20, h - 1), fill=c)
        draw.rectangle((xm, int(0.75 * h), xm + w // 10, int(0.8 * h)), fill=c)
        draw.rectangle((xm, int(0.88 * h), xm + w // 12, int(0.93 * h)), fill=c)


def _duckie(draw: ImageDraw.ImageDraw, w: int, h: int, c: Rgb) -> None:
    draw.ellipse((0, int(0.42 * h), w - 1, h - 1), fill=c)
    draw.ellipse((int(0.25 * w), 0, int(0.75 * w), int(0.55 * h)), fill=c)
    draw.polygon(
        ((int(0.7 * w), int(0.25 * h)), (w - 1, int(0.32 * h)), (int(0.7 * w), int(0.4 * h))),
        fill=(240, 130, 20),
    )
    draw.ellipse((int(0.55 * w), int(0.15 * h), int(0.63 * w), int(0.23 * h)), fill=(10, 10, 10))


_PAINTERS = {
    'barrel': _barrel,
    'box': _box,
    'cone': _cone,
    'office chair': _office_chair,
    'desk': _desk,
    'medkit': _medkit,
    'ball': _ball,
    'potion': _potion,
    'keys': _keys,
    'duckie': _duckie,
}
