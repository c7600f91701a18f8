# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Reflections: the reply's shape, and the anti-leakage check for each class it rejects."""

from __future__ import annotations

import json

import pytest

from waymark.lessons.leakage import LeakContext, LeakKind, find_leaks
from waymark.lessons.reflection import Reflection, Rejected, RejectReason, read_reflection

CLEAN_SUMMARY = 'A last-seen question; the first hit was taken instead of the newest sighting.'
CLEAN_LESSON = (
    'When a question asks where something was last seen, order the sightings by time and '
    'check that the chosen one is the newest before answering.'
)
CONTEXT = LeakContext.of(
    known_names=['Coffee Shop', 'charging spot', 'EXIT', 'on'], answers=['the blue door']
)


def reply(summary=CLEAN_SUMMARY, lesson=CLEAN_LESSON, **extra) -> str:
    return json.dumps({'summary': summary, 'transferable_lesson': lesson, **extra})


def test_a_clean_reflection_is_read_even_inside_prose():
    found = read_reflection(f'Here it is:\n```json\n{reply()}\n```', CONTEXT)
    assert found == Reflection(CLEAN_SUMMARY, CLEAN_LESSON)


@pytest.mark.parametrize(
    ('text', 'reason'),
    [
        ('I think the lesson is to sort by time.', RejectReason.NOT_JSON),
        ('{"summary": "unfinished', RejectReason.NOT_JSON),
        (json.dumps({'summary': CLEAN_SUMMARY}), RejectReason.BAD_SHAPE),
        (reply(extra_key='x'), RejectReason.BAD_SHAPE),
        (reply(lesson=''), RejectReason.BAD_SHAPE),
        (reply(lesson='   '), RejectReason.BAD_SHAPE),
        (reply(lesson='x' * 401), RejectReason.BAD_SHAPE),
        (json.dumps({'summary': 3, 'transferable_lesson': CLEAN_LESSON}), RejectReason.BAD_SHAPE),
    ],
)
def test_a_reply_of_the_wrong_shape_is_rejected_with_the_reason(text, reason):
    found = read_reflection(text, CONTEXT)
    assert isinstance(found, Rejected) and found.reason is reason and found.detail


@pytest.mark.parametrize(
    ('lesson', 'kind', 'found'),
    [
        ('Drive to (3.2, -1.5) when asked about the kitchen.', LeakKind.NUMBER, '3'),
        ('The answer is near x 12 metres from the dock.', LeakKind.NUMBER, '12'),
        ('There were 4 chairs, so count them all.', LeakKind.NUMBER, '4'),
        ('It was seen at 14:05, check that time first.', LeakKind.NUMBER, '14'),
        ('Recordings from Tuesday hold the answer.', LeakKind.TIME, 'Tuesday'),
        ('Look at frame_0042.jpg for the sign.', LeakKind.FILE_NAME, 'frame_0042.jpg'),
        ('Memory entry place/charging holds it.', LeakKind.MEMORY_ID, 'place/charging'),
        ('Questions about the coffee shop need the hall.', LeakKind.KNOWN_NAME, 'coffee shop'),
        ('Check the EXIT sign first.', LeakKind.KNOWN_NAME, 'exit'),
        ('It is always the blue door, check it first.', LeakKind.ANSWER, 'the blue door'),
    ],
)
def test_each_class_of_leak_is_rejected(lesson, kind, found):
    rejected = read_reflection(reply(lesson=lesson), CONTEXT)
    assert isinstance(rejected, Rejected) and rejected.reason is RejectReason.LEAK
    assert any(leak.kind is kind and leak.text.startswith(found) for leak in rejected.leaks)
    assert kind.value in rejected.detail


def test_a_leak_in_the_summary_counts_too():
    rejected = read_reflection(reply(summary='The target was at 3.5 m.'), CONTEXT)
    assert isinstance(rejected, Rejected) and rejected.reason is RejectReason.LEAK


def test_generic_habits_are_not_leaks():
    generic = (
        'Compare 2D image positions with 3D world positions and/or check the map frame; '
        'short known names such as "on" are not telling, and neither is the word exit-ramp.'
    )
    assert find_leaks(generic, LeakContext.of(known_names=['on'])) == []
    assert find_leaks(CLEAN_LESSON, CONTEXT) == []


def test_a_very_long_reply_is_read_only_up_to_its_bound():
    found = read_reflection(' ' * 9_000 + reply(), CONTEXT)
    assert isinstance(found, Rejected) and found.reason is RejectReason.NOT_JSON
