# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""One memory search, the same for every part that passes it on: the agent's tools, its
memory API, MemoryService, the ROS client and memory_node's request handler.

A `SearchQuery` is checked when it is made, so one that exists is well formed: a known
mode and level, a positive k, valid session and robot names, and the arguments its mode
needs. `SearchRules` adds the bounds a server sets on what it answers (lengths, counts,
distances, image sizes). Every refusal is a RefusedError (a ValueError) naming its
reason, which memory_node counts.

A new mode is a member of `Mode`, its checks in `_check_arguments`, its store search and
one line in MemoryService.search; the ROS adapters copy every field whatever the mode.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from waymark.memory.entries import FRAME, LEVELS, PLACE, ROBOT_NAME
from waymark.memory.refusal import RefusedError, check_image, check_position, check_session, shown
from waymark.memory.storage.image_codec import ImageLimits, decode_image


class Mode(str, Enum):
    """What a search looks for; the values are SearchMemory's MODE_* constants."""

    TEXT = 'text'  # entries matching a description (the text's embedding)
    IMAGE = 'image'  # entries that look like a photo
    TIME = 'time'  # entries from a moment on, in recording order
    INTERVAL = 'interval'  # entries between two moments, in recording order
    POSITION = 'position'  # entries nearest a point, nearest first
    RANGE = 'range'  # entries within a radius of a point on the floor plan
    INDEX_RANGE = 'index_range'  # entries first..last of one session, ranked by text if given

    def __str__(self) -> str:  # the value, on every Python version
        return self.value


SEARCH_LEVELS = (*LEVELS, PLACE)
# Stamps and entry indices are int64 in the store: larger ones cannot exist.
MAX_INT64 = 2**63 - 1
# A store's hits per query unless it is given its own max_k, and the most sessions one
# query may name.
DEFAULT_MAX_K = 1000


@dataclass(frozen=True)
class SearchQuery:
    """What to search for and where; the fields a mode does not use keep their defaults.

    Sequences are kept as tuples; a check that fails raises RefusedError.
    """

    mode: Mode  # or its value
    k: int  # most hits wanted
    sessions: Sequence[str] = ()  # empty: every session
    robots: Sequence[str] = ()  # only the sessions these robots recorded; empty: every robot
    level: str = FRAME
    views: Sequence[str] = ()  # TEXT, INDEX_RANGE: the views to rank by; empty: all enabled
    text: str = ''  # TEXT; INDEX_RANGE ranks by it when given
    image: np.ndarray | None = field(default=None, compare=False, repr=False)  # IMAGE: RGB uint8
    stamp_ns: int = 0  # TIME: from; INTERVAL: start (UTC nanoseconds)
    end_ns: int = 0  # INTERVAL: end, inclusive
    position: Sequence[float] = (0.0, 0.0, 0.0)  # POSITION: (x, y, z); RANGE: (x, y, _)
    radius: float = 0.0  # RANGE: metres
    first_index: int = 0  # INDEX_RANGE: first..last (inclusive) of the one session named
    last_index: int = 0

    def __post_init__(self) -> None:
        for name in ('sessions', 'robots', 'views', 'position'):
            object.__setattr__(self, name, tuple(getattr(self, name) or ()))
        try:
            object.__setattr__(self, 'mode', Mode(self.mode))
        except ValueError:
            raise RefusedError(
                'mode', f'unknown search mode {shown(str(self.mode))}; use {", ".join(Mode)}'
            ) from None
        if self.level not in SEARCH_LEVELS:
            raise RefusedError(
                'level',
                f'unknown level {shown(str(self.level))}; use {", ".join(SEARCH_LEVELS)}',
            )
        try:
            k = operator.index(self.k)
        except TypeError:
            k = 0
        if k < 1:
            raise RefusedError('k', f'k must be a positive number of hits, got {self.k!r}')
        object.__setattr__(self, 'k', k)
        for session in self.sessions:
            check_session('sessions', session)
        for robot in self.robots:
            if not isinstance(robot, str) or not ROBOT_NAME.fullmatch(robot):
                raise RefusedError('robots', f'invalid robot id {shown(str(robot))}')
        if len(self.position) != 3:
            raise RefusedError('position', f'a position is (x, y, z), got {self.position}')
        _check_arguments(self)


def _check_arguments(query: SearchQuery) -> None:
    """What the query's mode needs of its own arguments."""
    mode = query.mode
    if mode == Mode.TEXT and not query.text.strip():
        raise RefusedError('text', 'a text search needs a non-empty text')
    if mode == Mode.IMAGE:
        image = query.image
        if not (
            isinstance(image, np.ndarray)
            and image.dtype == np.uint8
            and image.ndim == 3
            and image.shape[2] == 3
            and image.size
        ):
            got = 'none' if image is None else f'{getattr(image, "dtype", type(image))}'
            got += f' {getattr(image, "shape", "")}'.rstrip()
            raise RefusedError('image', f'an image search needs an RGB uint8 photo, got {got}')
    if mode in (Mode.TIME, Mode.INTERVAL) and not 0 <= query.stamp_ns <= MAX_INT64:
        raise RefusedError(
            'stamp', f'a {mode} search needs a time from 1970 on, got {query.stamp_ns}'
        )
    if mode == Mode.INTERVAL and not query.stamp_ns <= query.end_ns <= MAX_INT64:
        raise RefusedError(
            'interval', f'the interval ends ({query.end_ns}) before it starts ({query.stamp_ns})'
        )
    if mode in (Mode.POSITION, Mode.RANGE):
        check_position(query.position, math.inf, f'{mode} search position')
    if mode == Mode.RANGE and not (math.isfinite(query.radius) and query.radius > 0):
        raise RefusedError(
            'radius', f'a range search needs a positive radius in metres, got {query.radius}'
        )
    if mode == Mode.INDEX_RANGE:
        if len(set(query.sessions)) != 1:
            raise RefusedError(
                'sessions',
                f'an index range search needs exactly one session, got {len(query.sessions)}',
            )
        if not 0 <= query.first_index <= query.last_index <= MAX_INT64:
            raise RefusedError(
                'index_range',
                f'index range {query.first_index}..{query.last_index} must be ordered and '
                f'within 0..{MAX_INT64}',
            )


@dataclass(frozen=True)
class SearchRules:
    """Bounds a server sets on one search (memory_node's parameters)."""

    max_coordinate_m: float = 100_000.0
    max_radius_m: float = 1_000.0
    max_query_chars: int = 1_000
    max_sessions: int = 100
    image: ImageLimits = field(default_factory=ImageLimits)

    def check(self, query: SearchQuery) -> None:
        """Refuses a query over these bounds."""
        if len(query.text) > self.max_query_chars:
            raise RefusedError(
                'text',
                f'query text of {len(query.text)} characters is over '
                f'max_query_chars={self.max_query_chars}',
            )
        for reason, named in (('sessions', query.sessions), ('robots', query.robots)):
            if len(named) > self.max_sessions:
                raise RefusedError(
                    reason, f'{len(named)} {reason} named, at most max_sessions={self.max_sessions}'
                )
        if query.mode in (Mode.POSITION, Mode.RANGE):
            check_position(query.position, self.max_coordinate_m, f'{query.mode} search position')
        if query.mode == Mode.RANGE and query.radius > self.max_radius_m:
            raise RefusedError(
                'radius',
                f'range search radius {query.radius:g} m is over '
                f'max_radius_m={self.max_radius_m:g}',
            )

    def decode_image(self, data: bytes) -> np.ndarray:
        """The RGB photo of an image search from its JPEG or PNG bytes; refused on the
        header alone when it is not an image or is over `image`, before any decoding."""
        check_image('query image', data, self.image)
        try:
            return decode_image(data)  # its limits were checked just above
        except ValueError as error:
            raise RefusedError('image', f'image search needs a decodable image: {error}') from error
