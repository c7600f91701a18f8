# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The anti-leakage check: a lesson must carry a habit, never the answer it came from.

A lesson is shown to later tasks in other places and times. Anything that ties it to its
own task would be copied rather than applied: numbers (coordinates, counts, times, dates),
named times (weekdays, months), memory ids and file names, names this memory knows (sign
texts read, named places), and the rollout's own answer. The check is deliberately
conservative: a rejected lesson is only a card not written, and is counted; a leaked one
misleads every later task that retrieves it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from waymark.tasks.outcomes import Word

# "2D" and "3D" are kinds of reasoning, not numbers from a scene.
_DIMENSIONS = frozenset(('2d', '3d'))
_NUMBER = re.compile(r'[^\W_]*\d[^\W_]*')
_TIME_WORDS = re.compile(
    r'\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|'
    r'april|june|july|august|september|october|november|december|yesterday|tonight|'
    r"o'clock)\b",
    re.IGNORECASE,
)
_FILE_NAME = re.compile(
    r'\b[\w-]+\.(?:png|jpe?g|json|ya?ml|mcap|db3?|md|txt|csv|py|npy|bag)\b', re.IGNORECASE
)
# A memory id ("tour/12", "place/charging spot") or a path: word characters around a '/'.
_ID_OR_PATH = re.compile(r'\w[\w.-]*/[\w.-]+')
_PROSE_SLASHES = frozenset(('and/or', 'either/or'))
# Known names and answers shorter than this are too common to be telling ("on", "A").
MIN_NAME_CHARS = 3


class LeakKind(Word):
    NUMBER = 'number'  # coordinates, counts, times, dates, ids with digits
    TIME = 'time'
    FILE_NAME = 'file_name'
    MEMORY_ID = 'memory_id'
    KNOWN_NAME = 'known_name'
    ANSWER = 'answer'


@dataclass(frozen=True)
class Leak:
    kind: LeakKind
    text: str  # what was found

    def __str__(self) -> str:
        return f'{self.kind}: {self.text!r}'


@dataclass(frozen=True)
class LeakContext:
    """What this task and this memory could leak: the names memory knows (sign texts,
    place names, room labels) and the rollout's answer, in any words."""

    known_names: frozenset[str] = frozenset()
    answers: tuple[str, ...] = ()

    @classmethod
    def of(cls, known_names: Iterable[str] = (), answers: Iterable[str] = ()) -> LeakContext:
        return cls(frozenset(_normal(n) for n in known_names), tuple(_normal(a) for a in answers))


def find_leaks(text: str, context: LeakContext | None = None) -> list[Leak]:
    """Every leak in `text`, in the order the rules are listed; empty when it is clean."""
    context = context or LeakContext()
    leaks = [
        Leak(LeakKind.NUMBER, match)
        for match in _NUMBER.findall(text)
        if match.lower() not in _DIMENSIONS
    ]
    leaks += [Leak(LeakKind.TIME, m.group(0)) for m in _TIME_WORDS.finditer(text)]
    leaks += [Leak(LeakKind.FILE_NAME, m.group(0)) for m in _FILE_NAME.finditer(text)]
    leaks += [
        Leak(LeakKind.MEMORY_ID, m.group(0))
        for m in _ID_OR_PATH.finditer(text)
        if m.group(0).lower() not in _PROSE_SLASHES
    ]
    normal = f' {_normal(text)} '
    leaks += [
        Leak(LeakKind.KNOWN_NAME, name)
        for name in sorted(context.known_names)
        if len(name) >= MIN_NAME_CHARS and f' {name} ' in normal
    ]
    leaks += [
        Leak(LeakKind.ANSWER, answer)
        for answer in context.answers
        if len(answer) >= MIN_NAME_CHARS and f' {answer} ' in normal
    ]
    return leaks


def _normal(text: str) -> str:
    """Lower case words separated by single spaces: "the  Coffee-Shop!" -> "the coffee shop"."""
    return ' '.join(re.findall(r'[^\W_]+', text.lower()))
