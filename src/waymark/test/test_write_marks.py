# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Write stamps and read marks, without Milvus: the clock never stamps behind itself, a
mark leaves room for rows that land late, and saved marks are checked when read back."""

from __future__ import annotations

import pytest

from waymark.memory.storage import write_marks
from waymark.memory.storage.write_marks import (
    MarkReader,
    WriteClock,
    WriteMark,
    changed_filter,
    marks_from_json,
    marks_to_json,
    read_rows_filter,
)

S = 10**9


def test_the_clock_stamps_after_its_last_stamp_when_the_wall_clock_steps_back(monkeypatch):
    wall = iter([100 * S, 40 * S, 40 * S, 200 * S])
    monkeypatch.setattr(write_marks.time, 'time_ns', lambda: next(wall))
    clock = WriteClock()
    assert [clock.stamp(), clock.stamp(), clock.stamp()] == [100 * S, 100 * S + 1, 100 * S + 2]
    clock.advance_past(500 * S)  # a stamp read back from this robot's rows
    assert clock.stamp() == 500 * S + 1


def test_a_mark_reads_again_the_time_the_read_took_and_the_margin(monkeypatch):
    now = iter([10.0, 13.0])  # the read took 3 s
    monkeypatch.setattr(write_marks.time, 'monotonic', lambda: next(now))
    reader = MarkReader({'s1': 'r1', 's2': 'r2', 'old': 'r3'}, margin_s=120.0)
    for session, stamp in [('s1', 1000 * S), ('s1', 900 * S), ('s2', 50 * S), ('old', 0)]:
        reader.see({'session': session, 'written_ns': stamp})
    reader.see({'session': 'unowned', 'written_ns': 5000 * S})  # nobody's: no mark
    reader.see({'session': 'old', 'written_ns': None})  # a field added in place
    previous = {'r2': WriteMark(60 * S, 55 * S), 'r4': WriteMark(7, 7)}
    assert reader.marks(previous) == {
        'r1': WriteMark(1000 * S, (1000 - 123) * S),
        'r2': WriteMark(60 * S, 55 * S),  # never moved back
        'r3': WriteMark(0, 0),  # rows from before stamps
        'r4': WriteMark(7, 7),  # nothing read of it: kept
    }


def test_marks_survive_json_and_malformed_ones_are_refused():
    marks = {'frame': {'r1': WriteMark(5, 3)}, 'segment': {}}
    assert marks_from_json(marks_to_json(marks)) == marks
    for bad in [[], {'frame': []}, {'frame': {'r1': [1]}}, {'frame': {'r1': [1, '2']}}]:
        assert marks_from_json(bad) is None
    assert marks_from_json({'frame': {'r1': [True, 1]}}) is None


@pytest.mark.parametrize(
    ('owners', 'marks', 'sessions', 'expected'),
    [
        (
            {'a': 'r1', 'b': 'r1', 'c': 'r2'},
            {'r1': WriteMark(9, 5)},
            ['a', 'legacy'],
            '(session in ["a", "b"] and written_ns <= 9) or session in ["legacy"]',
        ),
        ({}, {}, [], 'session == ""'),
    ],
)
def test_the_read_rows_filter_keeps_each_robot_up_to_its_newest_read(
    owners, marks, sessions, expected
):
    assert read_rows_filter(owners, marks, sessions) == expected


def test_the_changed_filter_reads_each_robot_after_its_mark_and_a_new_robot_whole():
    owners = {'a': 'r1', 'b': 'r1', 'c': 'r2'}
    assert changed_filter(owners, {'r1': WriteMark(9, 5)}) == (
        '(session in ["a", "b"] and written_ns > 5) or session in ["c"]'
    )
    assert changed_filter({}, {'r1': WriteMark(9, 5)}) == ''
