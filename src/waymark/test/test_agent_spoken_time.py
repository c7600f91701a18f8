# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Spoken times against a session clock: relative to now and to the start, clock times in
the session's zone, parts of the day, and a day that changes to summer time."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from waymark.agent.spoken_time import (
    duration_s,
    find,
    parse,
    resolve,
    resolve_text,
    time_zone,
)

NS = 1_000_000_000
BERLIN = 'Europe/Berlin'
# 2026-03-29 is the day Berlin moves its clocks from 02:00 CET to 03:00 CEST.
NOW_LOCAL = datetime(2026, 3, 29, 16, 0, 0, tzinfo=ZoneInfo(BERLIN))
NOW = int(NOW_LOCAL.timestamp()) * NS
START = NOW - 20 * 60 * NS  # the session started 20 minutes ago


def _local(text: str, zone: str = BERLIN) -> datetime:
    moment = resolve_text(text, NOW, START, zone)
    assert moment is not None, text
    return datetime.fromtimestamp(moment.start_ns / NS, ZoneInfo(zone))


@pytest.mark.parametrize(
    ('text', 'seconds'),
    [
        ('90 seconds', 90),
        ('a minute and a half', 90),
        ('one and a half minutes', 90),
        ('half an hour', 1800),
        ('an hour', 3600),
        ('a couple of minutes', 120),
        ('twenty-five minutes', 1500),
        ('sixty seconds', 60),
        ('2 minutes 30 seconds', 150),
        ('two minutes and thirty seconds', 150),
        ('1.5 minutes', 90),
        ('five mins', 300),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert duration_s(text) == seconds


@pytest.mark.parametrize('text', ['', 'minutes', 'a while', 'sixty-five minutes', 'five'])
def test_not_durations(text: str) -> None:
    assert duration_s(text) is None


@pytest.mark.parametrize(
    ('text', 'offset_s'),
    [
        ('five minutes ago', -300),
        ('an hour ago', -3600),
        ('90 seconds ago', -90),
        ('a minute and a half ago', -90),
        ('A couple of minutes ago?', -120),
        ('just now', 0),
    ],
)
def test_relative_to_now(text: str, offset_s: int) -> None:
    moment = resolve_text(text, NOW, START, BERLIN)
    assert moment is not None and moment.is_instant
    assert moment.start_ns == NOW + offset_s * NS


@pytest.mark.parametrize(
    ('text', 'offset_s'),
    [
        ('a minute and a half after I started', 90),
        ('2 minutes into the run', 120),
        ('ten seconds after the start', 10),
        ('three minutes in', 180),
        ('at the start', 0),
        ('at the beginning of the tour', 0),
        ('when I started', 0),
    ],
)
def test_relative_to_start(text: str, offset_s: int) -> None:
    moment = resolve_text(text, NOW, START, BERLIN)
    assert moment is not None and moment.start_ns == START + offset_s * NS


def test_the_start_is_needed_and_the_end_defaults_to_now() -> None:
    spoken = parse('a minute after I started')
    assert spoken is not None and spoken.needs_start
    assert resolve(spoken, NOW, None, BERLIN) is None  # unknown start: the caller looks it up
    assert resolve_text('at the end', NOW, START).start_ns == NOW
    end = NOW - 5 * NS
    assert (
        resolve_text('ten seconds before the end', NOW, START, end_ns=end).start_ns == end - 10 * NS
    )


@pytest.mark.parametrize(
    ('text', 'hour', 'minute'),
    [
        ('at 10:15', 10, 15),
        ('10:15:30', 10, 15),
        ('at 15:05', 15, 5),
        ('at ten', 10, 0),  # 22:00 would be in the future: the morning's
        ('half past ten', 10, 30),
        ('quarter to eleven', 10, 45),
        ('twenty past three', 15, 20),  # 15:20 is before now, 03:20 earlier still
        ("three o'clock", 15, 0),
        ('10 am', 10, 0),
        ('3 pm', 15, 0),
        ('at 3:30 pm', 15, 30),
        ('ten fifteen', 10, 15),
        ('noon', 12, 0),
        ('this morning at ten', 10, 0),
        ('ten this morning', 10, 0),
        ('this afternoon at three', 15, 0),
        ('today at 9 am', 9, 0),
        ('at ten in the morning', 10, 0),
    ],
)
def test_clock_times_in_the_sessions_zone(text: str, hour: int, minute: int) -> None:
    local = _local(text)
    assert (local.date(), local.hour, local.minute) == (NOW_LOCAL.date(), hour, minute)


def test_a_clock_time_later_than_now_is_yesterdays() -> None:
    local = _local('at 17:30')
    assert (local.day, local.hour, local.minute) == (28, 17, 30)


def test_yesterday_across_the_change_to_summer_time() -> None:
    today, yesterday = _local('today at 6 pm'), _local('yesterday at 6 pm')
    assert (yesterday.day, yesterday.hour) == (28, 18)
    # One calendar day apart on the wall clock, 23 hours apart in fact.
    assert today.timestamp() - yesterday.timestamp() == 23 * 3600
    assert str(yesterday.utcoffset()) == '1:00:00' and str(today.utcoffset()) == '2:00:00'


def test_the_zone_changes_the_instant() -> None:
    utc = resolve_text('at 10:15', NOW, START, 'UTC')
    berlin = resolve_text('at 10:15', NOW, START, BERLIN)
    assert utc.start_ns - berlin.start_ns == 2 * 3600 * NS  # CEST is UTC+2


@pytest.mark.parametrize(
    ('text', 'first', 'last'),
    [('this morning', 5, 12), ('this afternoon', 12, 17), ('today', 0, 24)],
)
def test_parts_of_the_day_are_windows(text: str, first: int, last: int) -> None:
    moment = resolve_text(text, NOW, START, BERLIN)
    assert moment is not None and not moment.is_instant
    day = NOW_LOCAL.replace(hour=0, minute=0)
    assert moment.start_ns == int((day + timedelta(hours=first)).timestamp()) * NS
    assert moment.end_ns == int((day + timedelta(hours=last)).timestamp()) * NS - 1


def test_last_night_is_yesterday_evening_to_this_morning() -> None:
    moment = resolve_text('last night', NOW, START, BERLIN)
    start = datetime.fromtimestamp(moment.start_ns / NS, ZoneInfo(BERLIN))
    end = datetime.fromtimestamp((moment.end_ns + 1) / NS, ZoneInfo(BERLIN))
    assert (start.day, start.hour, end.day, end.hour) == (28, 21, 29, 5)


@pytest.mark.parametrize(
    'text',
    [
        '',
        'the kitchen',
        'when did I last pass the kitchen',
        'room 10',
        'at 25:00',
        '10:75',
        'thirteen pm',
        'half to ten',
        'ago',
        'ten days after I started',  # more than the week read
        'this morning at 3 pm',
        'x' * 10_000,
        'a ' * 100 + 'minute ago',
    ],
)
def test_what_is_not_a_time_is_none(text: str) -> None:
    assert resolve_text(text, NOW, START, BERLIN) is None


def test_a_bad_zone_is_refused_by_name_and_resolves_nothing() -> None:
    with pytest.raises(ValueError, match='Mars/Olympus'):
        time_zone('Mars/Olympus')
    with pytest.raises(ValueError):
        time_zone('')
    assert time_zone(' UTC ').key == 'UTC'
    assert resolve_text('five minutes ago', NOW, START, 'Mars/Olympus') is None


@pytest.mark.parametrize(
    ('question', 'span'),
    [
        ('Where was I a minute and a half after I started?', 'a minute and a half after i started'),
        ('Where was I five minutes ago?', 'five minutes ago'),
        ('Where was I this morning at ten?', 'this morning at ten'),
        ('Where was I at ten?', 'ten'),
        ('Where was I at 10:15?', 'at 10:15'),
        ('Where is room 10?', None),
        ('When did I last pass the kitchen?', None),
        ('Where is the 3 pm sign?', None),
    ],
)
def test_find_the_time_that_ends_a_question(question: str, span: str | None) -> None:
    found = find(question)
    assert (found[0] if found else None) == span
