# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What other writers stored since a snapshot, found by the stamps on their rows.

Every records row carries its writer's clock at the write (`written_ns`, kept increasing
per writer by WriteClock even when the wall clock steps back). Clocks of different robots
are never compared with each other: a store remembers, per level and per robot, the
newest stamp it has read of that robot (`seen_ns`) and the stamp after which that robot's
rows may still be unread (`from_ns`); the next open reads only the rows stamped after
`from_ns`, so a robot restarted on a shared server reads what changed, not everything.

`from_ns` lies before `seen_ns` because a read is not an instant: a row its writer stamped
before or during the read may land after the part of the read that would have found it.
Such a row is stamped no earlier than the newest stamp read less the read's duration (the
writer's clock runs at the reader's rate, whatever its offset), less the time a write
takes to land, which `margin_s` bounds. Rows read twice are upserted twice, harmlessly.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from waymark.memory.storage.schema import WRITTEN_FIELD

# How long a write may take from its stamp to being readable; catch-up reads that much
# before the newest stamp read as well.
DEFAULT_MARGIN_S = 120.0


@dataclass(frozen=True)
class WriteMark:
    """How far a store has read one robot's rows of one level, on that robot's clock."""

    seen_ns: int  # the newest stamp read
    from_ns: int  # rows stamped after this may be unread

    def as_json(self) -> list[int]:
        return [self.seen_ns, self.from_ns]


# A level's marks, by robot ('' for sessions no robot claimed).
Marks = dict[str, WriteMark]


def marks_from_json(data: object) -> dict[str, Marks] | None:
    """Marks by level as saved (`{level: {robot: [seen, from]}}`); None when malformed."""
    if not isinstance(data, dict):
        return None
    levels: dict[str, Marks] = {}
    for level, robots in data.items():
        if not isinstance(robots, dict):
            return None
        marks: Marks = {}
        for robot, pair in robots.items():
            if not (isinstance(pair, list) and len(pair) == 2):
                return None
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in pair):
                return None
            marks[str(robot)] = WriteMark(*pair)
        levels[str(level)] = marks
    return levels


def marks_to_json(levels: Mapping[str, Marks]) -> dict:
    return {
        level: {robot: mark.as_json() for robot, mark in marks.items()}
        for level, marks in levels.items()
    }


class WriteClock:
    """This writer's stamps: the wall clock in nanoseconds, but always after the last
    stamp given or read back for this robot, so a clock stepped back by NTP or a restart
    never stamps a row where another store's catch-up would not look."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    @property
    def last(self) -> int:
        return self._last

    def advance_past(self, stamp_ns: int) -> None:
        with self._lock:
            self._last = max(self._last, int(stamp_ns))

    def stamp(self) -> int:
        with self._lock:
            self._last = max(time.time_ns(), self._last + 1)
            return self._last


@dataclass
class MarkReader:
    """Notes the newest stamp of each robot among the rows one read returns, and turns
    them into marks once the read is over."""

    owners: Mapping[str, str]  # session -> robot
    margin_s: float = DEFAULT_MARGIN_S
    started: float = field(default_factory=lambda: time.monotonic())  # read when made
    newest: dict[str, int] = field(default_factory=dict)

    def see(self, row: Mapping) -> None:
        robot = self.owners.get(row['session'])
        if robot is None:  # an unclaimed session: written before owners, never stamped
            return
        stamp = row.get(WRITTEN_FIELD) or 0  # None: a field added in place to old rows
        if stamp > self.newest.get(robot, -1):
            self.newest[robot] = int(stamp)

    def marks(self, previous: Marks | None = None) -> Marks:
        """`previous` moved on by what this read found; robots it found nothing of keep
        their marks."""
        overlap = int((time.monotonic() - self.started + self.margin_s) * 1e9)
        marks = dict(previous or {})
        for robot, newest in self.newest.items():
            old = marks.get(robot, WriteMark(0, 0))
            start = max(0, newest - overlap) if newest > 0 else 0
            marks[robot] = WriteMark(max(old.seen_ns, newest), max(old.from_ns, start))
        return marks


def changed_filter(owners: Mapping[str, str], marks: Marks) -> str:
    """A filter keeping the rows each robot stamped after its mark (all rows of a robot
    with none); '' when no robot owns a session (nothing to read)."""
    clauses = []
    for robot, sessions in _sessions_by_robot(owners):
        clause = f'session in {json.dumps(sessions)}'
        if robot in marks:
            clause = f'({clause} and {WRITTEN_FIELD} > {marks[robot].from_ns})'
        clauses.append(clause)
    return ' or '.join(clauses)


def read_rows_filter(owners: Mapping[str, str], marks: Marks, sessions: Sequence[str]) -> str:
    """A filter keeping the rows a table read with `marks` must hold: each robot's rows
    stamped up to the newest it read, and the rows of `sessions` (the table's) no robot
    owns. Rows landed since are left out, so counting it races no writer; a row it keeps
    that the table lacks was missed, and a row the table holds that it drops was deleted
    (or replaced since: read again for nothing, but never wrongly)."""
    clauses = [
        f'(session in {json.dumps(names)} and {WRITTEN_FIELD} <= {marks[robot].seen_ns})'
        for robot, names in _sessions_by_robot(owners)
        if robot in marks
    ]
    unowned = sorted(session for session in sessions if session not in owners)
    if unowned:
        clauses.append(f'session in {json.dumps(unowned)}')
    return ' or '.join(clauses) or 'session == ""'


def _sessions_by_robot(owners: Mapping[str, str]) -> list[tuple[str, list[str]]]:
    """Each robot and its sessions, both sorted (a filter reads the same every time)."""
    by_robot: dict[str, list[str]] = {}
    for session, robot in owners.items():
        by_robot.setdefault(robot, []).append(session)
    return [(robot, sorted(sessions)) for robot, sessions in sorted(by_robot.items())]
