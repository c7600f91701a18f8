# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The direction, in the map, in which a keyframe saw what a query asks about.

A text hit looks along the OCR box whose words best match the query. A photo hit looks
along where the photo matcher verified the photo's content in the entry's picture (a box
with no text; memory.views.photo_match); one it could not verify, along the image centre.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from waymark.memory.entries import FrameRecord, TextBox

_WORD = re.compile(r'[^\W_]+')
# Words of a question that name nothing a sign could read.
_FILLER = frozenset(
    _WORD.findall(
        'a an and are at did do does i in is it me my of on saw see seen the there this to '
        'was we were what when where which with you your'
    )
)
# Two words are the same reading when this alike (OCR drops or swaps a letter).
_WORD_RATIO = 0.8


@dataclass(frozen=True)
class Ray:
    """A horizontal bearing from a camera position, with the elevation of what it saw."""

    x: float
    y: float
    z: float
    angle: float  # map yaw, rad
    rise: float  # metres up per metre of horizontal range to what was seen
    record_id: str
    box: TextBox | None  # the region looked along (text '': a photo's); None: the centre

    @property
    def direction(self) -> tuple[float, float]:
        return math.cos(self.angle), math.sin(self.angle)


def words(text: str) -> list[str]:
    """Lower-case words of `text`, punctuation dropped."""
    return _WORD.findall(text.lower())


def text_score(box_text: str, query: str) -> float:
    """Share of the box's letters in words the query also has (tolerant of OCR slips)."""
    wanted = [w for w in words(query) if w not in _FILLER]
    read = words(box_text)
    total = sum(len(w) for w in read)
    if not wanted or not total:
        return 0.0
    matched = sum(len(w) for w in read if any(_same_word(w, q) for q in wanted))
    return matched / total


def _same_word(a: str, b: str) -> bool:
    return a == b or SequenceMatcher(None, a, b).ratio() >= _WORD_RATIO


def best_box(record: FrameRecord, query: str, min_score: float) -> TextBox | None:
    """The record's text box that best matches `query`, None when none scores min_score
    or the record's camera is unknown (a box without intrinsics gives no bearing)."""
    sighting = record.sighting
    boxes = sighting.text_boxes if sighting and sighting.camera else ()
    scored = [(text_score(box.text, query), box) for box in boxes]
    score, box = max(scored, key=lambda item: item[0], default=(0.0, None))
    return box if score >= min_score else None


def same_reading(a: str, b: str, ratio: float) -> bool:
    """Whether two OCR readings are the same words, case and punctuation aside."""
    left, right = ' '.join(words(a)), ' '.join(words(b))
    return bool(left) and SequenceMatcher(None, left, right).ratio() >= ratio


def ray(record: FrameRecord, box: TextBox | None) -> Ray:
    """The bearing from `record`'s camera through the centre of `box` (None: the image
    centre). FrameRecord.yaw is the camera's heading, so the map angle is yaw plus the
    pixel's angle off the optical axis."""
    camera = record.sighting.camera if record.sighting else None
    offset, rise = 0.0, 0.0
    if box is not None and camera is not None:
        u, v = box.centre
        offset = camera.bearing(u * camera.width)
        rise = (camera.cy - v * camera.height) / camera.fy * math.cos(offset)
    return Ray(record.x, record.y, record.z, record.yaw + offset, rise, record.id, box)
