# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The place graph: named places linked when they were marked one after the other.

Two places marked in a row were reached from each other, so the pair is an edge. When
their floors differ the edge is flagged as a candidate floor connection: the robot got
from one floor to the other between the marks, which suggests stairs or a lift but is not
an observation of one. The graph holds labels and relations only; where things are stays
in the map, whose coordinates a later re-anchoring may change.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from waymark.tasks.places import REMOVED, NamedPlace, UnknownPlaceError, name_key

DEFAULT_RENDER_MAX_CHARS = 6000
_CLIP_NOTE_CHARS = 40  # room kept for the note on what was cut


@dataclass(frozen=True)
class PlaceNode:
    name: str
    room: str
    floor: int


@dataclass(frozen=True)
class PlaceEdge:
    """Two places marked one after the other (names as kept, in the order first marked)."""

    first: str
    second: str
    floor_change: bool


@dataclass(frozen=True)
class PlaceGraph:
    nodes: tuple[PlaceNode, ...]
    edges: tuple[PlaceEdge, ...]

    @classmethod
    def build(cls, places: Iterable[NamedPlace], marks: Sequence[str]) -> PlaceGraph:
        """The graph of `places` from the marking record `marks` (names, oldest first, as
        PlaceBook.marks gives them).

        A mark of a name not among the places (REMOVED, or a name since forgotten) breaks
        the chain: the two places around it were not marked one after the other. A name
        marked twice in a row is no edge, and each pair is one edge however often it recurs.
        """
        by_key = {place.key: place for place in sorted(places, key=lambda p: p.sequence)}
        nodes = tuple(PlaceNode(p.name, p.room, p.floor) for p in by_key.values())
        keys = [REMOVED if mark == REMOVED else name_key(mark) for mark in marks]
        edges: dict[frozenset[str], PlaceEdge] = {}
        for before, after in itertools.pairwise(keys):
            if before == after or before not in by_key or after not in by_key:
                continue
            pair = frozenset((before, after))
            if pair not in edges:
                first, second = by_key[before], by_key[after]
                edges[pair] = PlaceEdge(first.name, second.name, first.floor != second.floor)
        return cls(nodes, tuple(edges.values()))

    def node(self, name: str) -> PlaceNode:
        key = name_key(name)
        for node in self.nodes:
            if name_key(node.name) == key:
                return node
        raise UnknownPlaceError(f'no place named {name!r} in the place graph')

    def neighbours(self, name: str) -> tuple[str, ...]:
        """Names of the places marked right before or after this one."""
        own = self.node(name).name
        found = []
        for edge in self.edges:
            if edge.first == own:
                found.append(edge.second)
            elif edge.second == own:
                found.append(edge.first)
        return tuple(found)

    def floor_connections(self) -> tuple[PlaceEdge, ...]:
        return tuple(edge for edge in self.edges if edge.floor_change)

    def rooms(self) -> dict[str, tuple[str, ...]]:
        """Room label -> the names of its places, in marking order."""
        rooms: dict[str, list[str]] = {}
        for node in self.nodes:
            rooms.setdefault(node.room, []).append(node.name)
        return {room: tuple(names) for room, names in rooms.items()}

    def render(self, max_chars: int = DEFAULT_RENDER_MAX_CHARS) -> str:
        """The graph as plain text for a model: names, rooms, floors and links, no
        coordinates. Names are quoted: they are what someone called a place, not
        instructions. Cut at whole lines to `max_chars`, saying how much was left out."""
        if max_chars < 200:
            raise ValueError(f'max_chars must be >= 200, got {max_chars}')
        if not self.nodes:
            return 'No places are named yet.'
        lines = ['Named places (names are claims; check them against what you see):']
        lines += [
            f'- {_quoted(node.name)}: room {_quoted(node.room)}, floor {node.floor}'
            for node in self.nodes
        ]
        if self.edges:
            lines.append('Marked one after the other (reached from each other):')
            for edge in self.edges:
                note = (
                    ' [floors differ: a candidate floor connection, not an observed stair]'
                    if edge.floor_change
                    else ''
                )
                lines.append(f'- {_quoted(edge.first)} -- {_quoted(edge.second)}{note}')
        return _clip_lines(lines, max_chars)


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _clip_lines(lines: list[str], max_chars: int) -> str:
    text = '\n'.join(lines)
    if len(text) <= max_chars:
        return text
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > max_chars - _CLIP_NOTE_CHARS:
            break
        kept.append(line)
        used += len(line) + 1
    kept.append(f'({len(lines) - len(kept)} more lines not shown)')
    return '\n'.join(kept)
