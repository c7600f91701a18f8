# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Spoken times ("five minutes ago", "a minute and a half after I started", "this morning
at ten") read against the session's own clock.

People ask about moments the way they lived them, not in UTC: relative to now, relative
to when the recording started, or as a wall-clock time in their own time zone. `parse`
turns the words into a `Spoken` (what the time is anchored to, and the offset), and
`resolve` turns that into nanoseconds given now, the session's start and its time zone
(an IANA name, read with zoneinfo, so daylight saving changes fall where they do).
Anything that is not a time gives None, never an exception: the caller falls back to
its own reading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

NS_PER_S = 1_000_000_000
DEFAULT_ZONE = 'UTC'
MAX_WORDS = 16  # nothing longer is a time expression; a longer text is not searched
MAX_OFFSET_S = 7 * 86400  # "ago" and "after I started" further than a week are not read

NOW, START, END, CLOCK, DAY = 'now', 'start', 'end', 'clock', 'day'

_SMALL = [
    'zero',
    'one',
    'two',
    'three',
    'four',
    'five',
    'six',
    'seven',
    'eight',
    'nine',
    'ten',
    'eleven',
    'twelve',
    'thirteen',
    'fourteen',
    'fifteen',
    'sixteen',
    'seventeen',
    'eighteen',
    'nineteen',
]
_TENS = {'twenty': 20, 'thirty': 30, 'forty': 40, 'fifty': 50, 'sixty': 60}
_NUMBERS: dict[str, float] = {word: n for n, word in enumerate(_SMALL)}
for _word, _tens in _TENS.items():
    _NUMBERS[_word] = _tens
    if _tens < 60:
        for _unit in range(1, 10):
            _NUMBERS[f'{_word} {_SMALL[_unit]}'] = _tens + _unit
            _NUMBERS[f'{_word}-{_SMALL[_unit]}'] = _tens + _unit
_NUMBERS |= {'a': 1, 'an': 1, 'one': 1, 'half': 0.5, 'a half': 0.5, 'a couple of': 2}
_NUMBERS |= {'a couple': 2, 'couple of': 2}
_NUMBER = (
    r'(?:\d+(?:\.\d+)?|'
    + '|'.join(re.escape(w) for w in sorted(_NUMBERS, key=len, reverse=True))
    + ')'
)
_UNITS = {
    'second': 1,
    'sec': 1,
    's': 1,
    'minute': 60,
    'min': 60,
    'hour': 3600,
    'h': 3600,
    'hr': 3600,
    'day': 86400,
}
_UNIT = r'(?:seconds?|secs?|s|minutes?|mins?|hours?|hrs?|h|days?)'
# "a minute and a half", "one and a half minutes", "half an hour", "2 minutes 30 seconds".
_AND_A_HALF = r'\s+and\s+a\s+half'
_PART = (
    rf'(?P<n{{i}}>{_NUMBER})(?P<half{{i}}a>{_AND_A_HALF})?\s+'
    rf'(?P<u{{i}}>{_UNIT})(?P<half{{i}}b>{_AND_A_HALF})?'
)
_DURATION = re.compile(
    r'^(?:'
    + r'half\s+an?\s+(?P<halfunit>hour|minute)|'
    + _PART.format(i=0)
    + r'(?:(?:\s*,\s*|\s+and\s+|\s+)'
    + _PART.format(i=1)
    + r')?'
    + r')$'
)
_AGO = re.compile(r'^(?P<d>.+?)\s+(?:ago|back|earlier)$')
_AFTER_START = re.compile(
    r'^(?P<d>.+?)\s+(?:after\s+(?:i|we|the\s+robot)\s+(?:started|began|set\s+off|left)|'
    r'after\s+the\s+(?:start|beginning)|into\s+the\s+(?:run|tour|recording|session|walk|trip)|'
    r'in)$'
)
_BEFORE_END = re.compile(r'^(?P<d>.+?)\s+before\s+(?:the\s+end|i\s+(?:stopped|finished))$')
_START = re.compile(
    r'^(?:(?:at|in)\s+the\s+(?:very\s+)?(?:start|beginning)(?:\s+of\s+the\s+\w+)?|'
    r'when\s+(?:i|we)\s+(?:started|began|set\s+off)|first\s+thing)$'
)
_END = re.compile(
    r'^(?:(?:at|in)\s+the\s+(?:very\s+)?end(?:\s+of\s+the\s+\w+)?|when\s+(?:i|we)\s+'
    r'(?:stopped|finished))$'
)
_NOW = re.compile(r'^(?:now|right\s+now|just\s+now)$')
# Parts of the day, as local hours [from, to).
PARTS = {
    'morning': (5, 12),
    'afternoon': (12, 17),
    'evening': (17, 21),
    'night': (21, 29),  # to 5 the next morning
}
_DAY = re.compile(
    r'^(?:(?P<day>today|yesterday)(?:\s+(?:in\s+the\s+)?(?P<part1>morning|afternoon|evening|night))?'
    r'|(?:this|in\s+the)\s+(?P<part2>morning|afternoon|evening)|(?P<tonight>tonight)'
    r'|last\s+night)'
    r'(?:\s*,?\s*(?:at|around|about)\s+(?P<clock>.+))?$'
)
_CLOCK_FIRST = re.compile(
    r'^(?P<clock>.+?)\s+(?P<day>today|yesterday|this\s+(?:morning|afternoon|evening)|tonight)$'
)
_DIGITS = re.compile(r'^(?P<h>\d{1,2})(?::(?P<m>\d{2})(?::(?P<s>\d{2}))?)?$')
_MERIDIEM = re.compile(r'^(?P<c>.+?)\s*(?P<ap>a\.?m\.?|p\.?m\.?)$')
_IN_THE = re.compile(r'^(?P<c>.+?)\s+in\s+the\s+(?P<part>morning|afternoon|evening)$')
_PAST_TO = re.compile(r'^(?P<m>.+?)\s+(?:minutes?\s+)?(?P<rel>past|after|to|before)\s+(?P<h>.+)$')
_FILLER = re.compile(r'^(?:at|around|about|approximately|roughly|at\s+about|at\s+around)\s+')


@dataclass(frozen=True)
class Spoken:
    """A time as said: `anchor` (now, start, end, clock, day) and what it needs.

    now/start/end: `offset_s` after the anchor (negative: before).
    clock: `seconds` into a local day; `day_offset` None means its latest occurrence at
    or before now, else that many days from today (0 today, -1 yesterday); `ambiguous`
    means a 12-hour time without am/pm (either half of the day may be meant).
    day: a window of local hours [`window`) on the day `day_offset` from today.
    """

    anchor: str
    offset_s: float = 0.0
    seconds: int = 0
    day_offset: int | None = None
    ambiguous: bool = False
    window: tuple[int, int] | None = None

    @property
    def needs_start(self) -> bool:
        return self.anchor == START


@dataclass(frozen=True)
class Moment:
    """A resolved time: an instant when `start_ns == end_ns`, else a window."""

    start_ns: int
    end_ns: int

    @property
    def is_instant(self) -> bool:
        return self.start_ns == self.end_ns


def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone `name`; ValueError naming it when there is no such zone."""
    try:
        return _zone(name.strip())
    except (ZoneInfoNotFoundError, ValueError, TypeError) as error:
        raise ValueError(f'{name!r} is not an IANA time zone (e.g. UTC, Europe/Berlin)') from error


@cache
def _zone(name: str) -> ZoneInfo:
    if not name:
        raise ValueError('empty')
    return ZoneInfo(name)


def parse(text: str) -> Spoken | None:
    """What `text` says about a time, or None when it is not one of the forms read."""
    words = _normalise(text)
    if not words or len(words.split()) > MAX_WORDS:
        return None
    if _NOW.match(words):
        return Spoken(NOW)
    if _START.match(words):
        return Spoken(START)
    if _END.match(words):
        return Spoken(END)
    for pattern, anchor, sign in (
        (_AGO, NOW, -1),
        (_AFTER_START, START, 1),
        (_BEFORE_END, END, -1),
    ):
        if match := pattern.match(words):
            seconds = duration_s(match['d'])
            if seconds is None or seconds > MAX_OFFSET_S:
                return None
            return Spoken(anchor, offset_s=sign * seconds)
    if match := _CLOCK_FIRST.match(words):  # "ten this morning" as "this morning at ten"
        words = f'{match["day"]} at {match["clock"]}'
    if match := _DAY.match(words):
        return _day(match)
    return _clock(words, part=None, day_offset=None)


def resolve(
    spoken: Spoken,
    now_ns: int,
    start_ns: int | None = None,
    zone: str = DEFAULT_ZONE,
    end_ns: int | None = None,
) -> Moment | None:
    """The moment `spoken` means at `now_ns`, in the session started at `start_ns`
    (None: unknown) and ending at `end_ns` (None: now), with clock times in `zone`.
    None when it needs the start and none is given, or the zone is not one."""
    try:
        tz = time_zone(zone)
    except ValueError:
        return None
    if spoken.anchor in (NOW, START, END):
        base = {NOW: now_ns, START: start_ns, END: now_ns if end_ns is None else end_ns}
        anchor_ns = base[spoken.anchor]
        if anchor_ns is None:
            return None
        stamp = anchor_ns + round(spoken.offset_s * NS_PER_S)
        return Moment(stamp, stamp)
    today = datetime.fromtimestamp(now_ns // NS_PER_S, tz).date()
    if spoken.anchor == DAY:
        assert spoken.window is not None and spoken.day_offset is not None
        day = today + timedelta(days=spoken.day_offset)
        first, last = spoken.window
        return Moment(_local_ns(day, first * 3600, tz), _local_ns(day, last * 3600, tz) - 1)
    if spoken.day_offset is not None:
        stamp = _local_ns(today + timedelta(days=spoken.day_offset), spoken.seconds, tz)
        return Moment(stamp, stamp)
    halves = (spoken.seconds, spoken.seconds + 12 * 3600) if spoken.ambiguous else (spoken.seconds,)
    latest = max(_latest_before(seconds, today, now_ns, tz) for seconds in halves)
    return Moment(latest, latest)


def resolve_text(
    text: str,
    now_ns: int,
    start_ns: int | None = None,
    zone: str = DEFAULT_ZONE,
    end_ns: int | None = None,
) -> Moment | None:
    """`parse` then `resolve`; None when either cannot."""
    spoken = parse(text)
    return None if spoken is None else resolve(spoken, now_ns, start_ns, zone, end_ns)


def find(text: str) -> tuple[str, Spoken] | None:
    """The time expression that ends a question ("Where was I five minutes ago?"), with
    what it says; None when the question does not end in one. A bare number counts only
    after "at" ("at ten"), so "room 10" is no time."""
    words = _normalise(text).split()
    for i in range(max(0, len(words) - MAX_WORDS), len(words)):
        span = ' '.join(words[i:])
        spoken = parse(span)
        if spoken is None:
            continue
        bare = spoken.anchor == CLOCK and not _CLOCK_CUE.search(span)
        if bare and (i == 0 or words[i - 1] != 'at'):
            continue
        return span, spoken
    return None


_CLOCK_CUE = re.compile(
    r"(?::|\bam\b|\bpm\b|\ba\.m|\bp\.m|o'clock|\bnoon\b|\bmidnight\b|\bpast\b|\bto\b|\btoday|\byesterday|\bthis\b|\btonight)"
)


def duration_s(text: str) -> float | None:
    """Seconds in "a minute and a half", "90 seconds", "2 minutes 30 seconds"; else None."""
    match = _DURATION.match(_normalise(text))
    if match is None:
        return None
    if match['halfunit']:
        return 0.5 * _UNITS[match['halfunit']]
    total = 0.0
    for i in (0, 1):
        if match[f'n{i}'] is None:
            continue
        count = _number(match[f'n{i}'])
        if match[f'half{i}a'] or match[f'half{i}b']:
            count += 0.5
        total += count * _UNITS[_unit(match[f'u{i}'])]
    return total if total >= 0 else None


# --- clock times ------------------------------------------------------------------------


def _day(match: re.Match) -> Spoken | None:
    day_offset = -1 if match['day'] == 'yesterday' or match.group(0).startswith('last') else 0
    part = (
        match['part1']
        or match['part2']
        or ('night' if match['tonight'] or match.group(0).startswith('last') else None)
    )
    if match['clock']:
        return _clock(match['clock'], part, day_offset)
    if part is None:
        return Spoken(DAY, day_offset=day_offset, window=(0, 24))
    return Spoken(DAY, day_offset=day_offset, window=PARTS[part])


def _clock(words: str, part: str | None, day_offset: int | None) -> Spoken | None:
    """A clock time, read in the part of the day given (which settles am or pm)."""
    words = _FILLER.sub('', words).removesuffix(" o'clock").removesuffix(' oclock').strip()
    if match := _IN_THE.match(words):
        if part is not None and part != match['part']:
            return None
        words, part = match['c'], match['part']
    meridiem = None
    if match := _MERIDIEM.match(words):
        words, meridiem = match['c'].removesuffix(" o'clock").strip(), match['ap'][0]
    if words in ('noon', 'midday', 'twelve noon'):
        return Spoken(CLOCK, seconds=12 * 3600, day_offset=day_offset)
    if words == 'midnight':
        return Spoken(CLOCK, seconds=0, day_offset=day_offset)
    read = _read_clock(words)
    if read is None:
        return None
    hour, minute, second, twelve = read
    if not twelve:  # written HH:MM: 24-hour unless am/pm or the part of day says otherwise
        settled = meridiem is not None or (part is not None and not _fits(hour, part))
        if not settled or hour > 12:
            if meridiem is not None or (part is not None and not _fits(hour, part)):
                return None
            return Spoken(CLOCK, seconds=hour * 3600 + minute * 60 + second, day_offset=day_offset)
    if not 1 <= hour <= 12:
        return None
    if meridiem is not None:
        hour = hour % 12 + (12 if meridiem == 'p' else 0)
        if part is not None and not _fits(hour, part):  # "this morning at 3 pm"
            return None
    elif part is not None:
        hour = _in_part(hour, part)
    else:
        seconds = (hour % 12) * 3600 + minute * 60 + second
        return Spoken(CLOCK, seconds=seconds, day_offset=day_offset, ambiguous=True)
    return Spoken(CLOCK, seconds=hour * 3600 + minute * 60 + second, day_offset=day_offset)


def _read_clock(words: str) -> tuple[int, int, int, bool] | None:
    """(hour, minute, second, twelve-hour) of "10:15", "ten", "ten fifteen", "half past
    ten", "quarter to eleven"; a written HH:MM is a 24-hour time."""
    if match := _DIGITS.match(words):
        hour, minute, second = int(match['h']), int(match['m'] or 0), int(match['s'] or 0)
        if hour > 23 or minute > 59 or second > 59:
            return None
        return hour, minute, second, match['m'] is None and 1 <= hour <= 12
    if match := _PAST_TO.match(words):
        hour = _hour(match['h'])
        minutes = {'half': 30, 'quarter': 15, 'a quarter': 15}.get(match['m'])
        if minutes is None:
            number = _NUMBERS.get(match['m']) if not match['m'].isdigit() else int(match['m'])
            minutes = int(number) if number is not None and number == int(number) else None
        if hour is None or minutes is None or not 0 < minutes < 60:
            return None
        if match['rel'] in ('to', 'before'):
            if minutes == 30:
                return None
            hour, minutes = (hour - 1) % 12 or 12, 60 - minutes
        return hour, minutes, 0, True
    hour_word, _, minute_word = words.partition(' ')
    hour = _hour(hour_word)
    if hour is None:
        return None
    if not minute_word:
        return hour, 0, 0, True
    minute_word = minute_word.removeprefix('oh ').removeprefix('o ')
    number = _NUMBERS.get(minute_word)
    if (
        number is None
        or number != int(number)
        or not 1 <= number <= 59
        or minute_word in ('a', 'an')
    ):
        return None
    return hour, int(number), 0, True


def _hour(word: str) -> int | None:
    number = int(word) if word.isdigit() else _NUMBERS.get(word)
    if number is None or number != int(number) or not 1 <= number <= 12 or word in ('a', 'an'):
        return None
    return int(number)


def _in_part(hour: int, part: str) -> int:
    """A 12-hour hour in its part of the day: 'ten in the morning' 10, 'three in the
    afternoon' 15, 'eleven at night' 23, 'two at night' 2."""
    if part == 'morning':
        return hour % 12
    if part == 'night' and hour < 5:
        return hour
    return hour % 12 + 12


def _fits(hour: int, part: str) -> bool:
    first, last = PARTS[part]
    return first <= hour < last or first <= hour + 24 < last


def _latest_before(seconds: int, today: date, now_ns: int, tz: ZoneInfo) -> int:
    """The latest instant at or before now when the local clock read `seconds`."""
    stamp = _local_ns(today, seconds, tz)
    if stamp > now_ns:
        stamp = _local_ns(today - timedelta(days=1), seconds, tz)
    return stamp


def _local_ns(day: date, seconds: int, tz: ZoneInfo) -> int:
    """UTC nanoseconds of `seconds` into the local `day` (may pass midnight)."""
    # Aware datetime arithmetic is wall-clock arithmetic: 10:00 stays 10:00 local on a
    # day that changes to or from daylight saving time.
    local = datetime(day.year, day.month, day.day, tzinfo=tz) + timedelta(seconds=seconds)
    return int(local.timestamp()) * NS_PER_S


# --- words ------------------------------------------------------------------------------


def _normalise(text: str) -> str:
    text = ' '.join(str(text).lower().replace('\u2019', "'").split())
    return text.strip(' ?.!,;:')


def _number(word: str) -> float:
    return float(word) if word[0].isdigit() else float(_NUMBERS[word])


def _unit(word: str) -> str:
    for name in ('second', 'sec', 'minute', 'min', 'hour', 'hr', 'day'):
        if word.startswith(name):
            return name
    return word
