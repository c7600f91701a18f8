# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""How memory hits are shown to the model, and how the model's times are read.

Every hit carries what the model needs to reason and to cite it: its id, the similarity
score (a confidence cue: RAVEN found showing it helps), when it was recorded (the clock
time in the session's time zone and how long ago), and where (map position and heading).
Time searches are shown in recording order, as returned. Times the model writes may be
ISO 8601, a clock time in the session's zone, or spoken ("five minutes ago", see
`spoken_time`).

Text read in the world (OCR, captions) and names given by whoever recorded (sessions) are
untrusted: a sign can say "ignore your instructions". They reach the model only through
`quote`, as a JSON string literal (a quote inside cannot end it) with control and format
characters removed (no hidden line breaks, bidi overrides or zero-width tricks) and the
length capped, and the system prompt says such text is evidence, never instructions.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from waymark.agent.spoken_time import DEFAULT_ZONE, parse, resolve, time_zone
from waymark.memory.entries import SEGMENT, Hit

NS_PER_S = 1_000_000_000
MAX_HIT_TEXT_CHARS = 200
_ELLIPSIS = '...'
_CLOCK = re.compile(r'(\d{1,2}):(\d{2})(?::(\d{2}))?')
# "Z" or "UTC" (any case) at the end, with or without a space before it.
_UTC_SUFFIX = re.compile(r'\s*(?:Z|UTC)$', re.I)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def clock(stamp_ns: int, zone: str = DEFAULT_ZONE) -> str:
    """'2026-11-30 19:04:02 UTC', or in another zone with its offset that day:
    '2026-11-30 20:04:02 +01:00'."""
    moment = datetime.fromtimestamp(stamp_ns / NS_PER_S, UTC)
    if zone == DEFAULT_ZONE:
        return moment.strftime('%Y-%m-%d %H:%M:%S UTC')
    local = moment.astimezone(time_zone(zone))
    offset = local.strftime('%z')
    return f'{local:%Y-%m-%d %H:%M:%S} {offset[:3]}:{offset[3:]}'


def ago(stamp_ns: int, now_ns: int) -> str:
    """'12 min ago', '3 h 5 min ago', 'in 2 min' (a clock ahead of now)."""
    seconds = (now_ns - stamp_ns) / NS_PER_S
    future = seconds < 0
    seconds = abs(seconds)
    if seconds < 60:
        span = f'{seconds:.0f} s'
    elif seconds < 3600:
        span = f'{seconds / 60:.0f} min'
    elif seconds < 86400 * 2:
        hours, minutes = divmod(int(seconds // 60), 60)
        span = f'{hours} h {minutes} min'
    else:
        span = f'{seconds / 86400:.1f} days'
    return f'in {span}' if future else f'{span} ago'


def quote(text: str, limit: int = MAX_HIT_TEXT_CHARS) -> str:
    """Untrusted text as a JSON string literal of at most `limit` characters inside the
    quotes: whitespace runs become one space, other control and format characters go."""
    if limit < len(_ELLIPSIS) + 1:
        raise ValueError(f'limit must be at least {len(_ELLIPSIS) + 1}, got {limit}')
    words = ' '.join(text.split())
    clean = ''.join(c for c in words if not unicodedata.category(c).startswith('C'))
    if len(clean) > limit:
        clean = clean[: limit - len(_ELLIPSIS)] + _ELLIPSIS
    return json.dumps(clean, ensure_ascii=False)


def describe_hit(
    hit: Hit, now_ns: int, max_text_chars: int = MAX_HIT_TEXT_CHARS, zone: str = DEFAULT_ZONE
) -> str:
    """One line per hit, with everything the model may cite."""
    record = hit.record
    if record.pose_valid:
        where = (
            f'at x={record.x:.2f} y={record.y:.2f} z={record.z:.2f} m, '
            f'heading {math.degrees(record.yaw):.0f} deg (map epoch {record.map_epoch})'
        )
    else:
        where = 'position unknown (tracking was lost)'
    when = f'{clock(record.stamp_ns, zone)} ({ago(record.stamp_ns, now_ns)})'
    if record.kind == SEGMENT:
        when += f' for {(record.end_stamp_ns - record.stamp_ns) / NS_PER_S:.1f} s'
    line = f'[{record.id}] {_score(hit)}; seen {when}; {where}'
    quoted = quote(record.text, max_text_chars)
    if quoted != '""':
        label = 'caption' if hit.view.startswith('caption') else 'text read'
        line += f'; {label}: {quoted}'
    return line


def describe_hits(
    hits: Sequence[Hit],
    now_ns: int,
    max_text_chars: int = MAX_HIT_TEXT_CHARS,
    zone: str = DEFAULT_ZONE,
) -> str:
    if not hits:
        return 'No memories found.'
    return '\n'.join(describe_hit(hit, now_ns, max_text_chars, zone) for hit in hits)


def _score(hit: Hit) -> str:
    if hit.view == 'time':
        return f'{hit.score:.1f} s after the requested time'
    if hit.view == 'position':
        return f'{hit.score:.2f} m from the requested point'
    if hit.view == 'index':
        return 'in route order'
    return f'similarity {hit.score:.3f} ({hit.view})'


def parse_time(
    text: str, now_ns: int, zone: str = DEFAULT_ZONE, start_ns: int | None = None
) -> int:
    """UTC nanoseconds of an ISO 8601 time (in `zone` unless it has an offset), of a
    clock time's latest occurrence at or before now on `zone`'s clock, or of a spoken
    time (the start of a window such as "this morning"; "after I started" needs
    `start_ns`). ValueError, with a reason for the model, otherwise."""
    text = text.strip()
    tz = time_zone(zone)
    utc = _UTC_SUFFIX.search(text) is not None
    match = _CLOCK.fullmatch(_UTC_SUFFIX.sub('', text))
    if match:
        hour, minute, second = (int(part or 0) for part in match.groups())
        if hour > 23 or minute > 59 or second > 59:
            raise ValueError(f'{text!r} is not a clock time')
        now = datetime.fromtimestamp(now_ns // NS_PER_S, UTC if utc else tz)
        moment = now.replace(hour=hour, minute=minute, second=second)
        if _ns(moment) > now_ns:
            moment -= timedelta(days=1)  # wall-clock arithmetic: the same time yesterday
        return _ns(moment)
    try:
        moment = datetime.fromisoformat(_UTC_SUFFIX.sub('+00:00', text))
    except ValueError:
        spoken = parse(text)
        resolved = None if spoken is None else resolve(spoken, now_ns, start_ns, zone)
        if resolved is not None:
            return resolved.start_ns
        if spoken is not None:
            raise ValueError(f'{text!r} needs the session start, which is not known') from None
        raise ValueError(
            f'{text!r} is not a time: use ISO 8601 (2026-11-30T19:04:02), HH:MM:SS, or '
            'words such as "five minutes ago" or "two minutes after I started"'
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz)
    return _ns(moment)


def _ns(moment: datetime) -> int:
    """Nanoseconds since the epoch, exactly (a float timestamp is off by up to ~100 ns,
    enough to skip the frame stamped at the very time asked for)."""
    since = moment - _EPOCH
    return (since.days * 86400 + since.seconds) * NS_PER_S + since.microseconds * 1000
