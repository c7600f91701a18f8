# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""SearchQuery: a query that exists is well formed, and SearchRules bound what a server
answers; every refusal names its reason in one short line."""

from __future__ import annotations

import dataclasses
import math

import cv2
import numpy as np
import pytest

from waymark.memory.entries import PLACE, SEGMENT
from waymark.memory.refusal import RefusedError
from waymark.memory.search_query import MAX_INT64, Mode, SearchQuery, SearchRules
from waymark_testing.images import png_bomb

PHOTO = np.full((48, 64, 3), 120, np.uint8)
# One good query of each mode.
GOOD = {
    Mode.TEXT: dict(text='coffee shop'),
    Mode.IMAGE: dict(image=PHOTO),
    Mode.TIME: dict(stamp_ns=5),
    Mode.INTERVAL: dict(stamp_ns=5, end_ns=5),
    Mode.POSITION: dict(position=(1.0, -2.0, 0.5)),
    Mode.RANGE: dict(position=(1.0, 2.0, 0.0), radius=3.0),
    Mode.INDEX_RANGE: dict(sessions=['tour'], first_index=0, last_index=MAX_INT64),
}


def refusal(mode: str, k: int = 5, **fields) -> str:
    """The reason a query of `mode` with GOOD's arguments changed by `fields` is refused."""
    with pytest.raises(RefusedError) as refused:
        SearchQuery(mode, k, **(GOOD[mode] | fields))
    message = str(refused.value)
    assert message and '\n' not in message and len(message) < 300
    return refused.value.reason


def test_a_good_query_of_each_mode_is_made_and_keeps_tuples():
    assert set(GOOD) == set(Mode)
    for mode, arguments in GOOD.items():
        query = SearchQuery(mode, 5, **arguments)
        assert query.mode == mode and isinstance(query.sessions, tuple)
    query = SearchQuery(
        Mode.TEXT, 3, sessions=['a', 'b'], robots=['go1-a'], views=['text'], text='x'
    )
    assert (query.sessions, query.robots, query.views) == (('a', 'b'), ('go1-a',), ('text',))
    assert SearchQuery(Mode.TEXT, np.int64(2), level=PLACE, text='x').k == 2
    assert hash(query) == hash(dataclasses.replace(query))  # frozen, a key if need be


@pytest.mark.parametrize(
    ('mode', 'fields', 'expected'),
    [
        (Mode.TEXT, {'level': 'building'}, 'level'),
        (Mode.TEXT, {'k': 0}, 'k'),
        (Mode.TEXT, {'k': 2.5}, 'k'),
        (Mode.TEXT, {'sessions': ['../etc']}, 'sessions'),
        (Mode.TEXT, {'sessions': ['']}, 'sessions'),
        (Mode.TEXT, {'robots': ['go1/a']}, 'robots'),
        (Mode.TEXT, {'text': ' \n '}, 'text'),
        (Mode.IMAGE, {'image': None}, 'image'),
        (Mode.IMAGE, {'image': PHOTO[:, :, 0]}, 'image'),
        (Mode.IMAGE, {'image': PHOTO.astype(np.float32)}, 'image'),
        (Mode.IMAGE, {'image': PHOTO[:0]}, 'image'),
        (Mode.TIME, {'stamp_ns': -1}, 'stamp'),
        (Mode.TIME, {'stamp_ns': MAX_INT64 + 1}, 'stamp'),
        (Mode.INTERVAL, {'end_ns': 4}, 'interval'),
        (Mode.POSITION, {'position': (math.nan, 0.0, 0.0)}, 'position'),
        (Mode.POSITION, {'position': (0.0, 0.0)}, 'position'),
        (Mode.RANGE, {'radius': 0.0}, 'radius'),
        (Mode.RANGE, {'radius': math.inf}, 'radius'),
        (Mode.RANGE, {'position': (0.0, math.inf, 0.0)}, 'position'),
        (Mode.INDEX_RANGE, {'sessions': []}, 'sessions'),
        (Mode.INDEX_RANGE, {'sessions': ['a', 'b']}, 'sessions'),
        (Mode.INDEX_RANGE, {'first_index': 3, 'last_index': 2}, 'index_range'),
        (Mode.INDEX_RANGE, {'first_index': -1}, 'index_range'),
        (Mode.INDEX_RANGE, {'last_index': 2**64 - 1}, 'index_range'),
    ],
)
def test_a_malformed_query_is_refused_with_its_reason(mode, fields, expected):
    arguments = dict(fields)
    assert refusal(mode, arguments.pop('k', 5), **arguments) == expected


def test_an_unknown_mode_is_refused_naming_the_modes():
    with pytest.raises(RefusedError, match='use text, image, time') as refused:
        SearchQuery('fuzzy', 5, text='x')
    assert refused.value.reason == 'mode'


def test_arguments_of_other_modes_are_not_checked():
    SearchQuery(Mode.TEXT, 1, text='x', radius=-1.0, stamp_ns=-5, position=(math.nan, 0.0, 0.0))
    SearchQuery(Mode.TIME, 1, sessions=['a', 'b'], first_index=9, last_index=1)
    # An index range ranks by a text when given, lists in order when not.
    SearchQuery(Mode.INDEX_RANGE, 1, sessions=['a'], text='', level=SEGMENT)


def test_rules_bound_what_a_server_answers():
    rules = SearchRules(max_coordinate_m=10.0, max_radius_m=50.0, max_query_chars=10)
    rules.check(SearchQuery(Mode.TEXT, 1, text='x' * 10))
    rules.check(SearchQuery(Mode.RANGE, 1, position=(10.0, -10.0, 0.0), radius=50.0))

    def reason(query: SearchQuery, bounds: SearchRules = rules) -> str:
        with pytest.raises(RefusedError) as refused:
            bounds.check(query)
        return refused.value.reason

    assert reason(SearchQuery(Mode.TEXT, 1, text='x' * 11)) == 'text'
    assert reason(SearchQuery(Mode.TIME, 1, text='x' * 11)) == 'text'  # whatever the mode
    assert reason(SearchQuery(Mode.RANGE, 1, radius=50.1)) == 'radius'
    assert reason(SearchQuery(Mode.POSITION, 1, position=(11.0, 0.0, 0.0))) == 'position'
    assert reason(SearchQuery(Mode.RANGE, 1, position=(0.0, -11.0, 0.0), radius=1.0)) == 'position'
    two = SearchRules(max_sessions=2)
    two.check(SearchQuery(Mode.TIME, 1, sessions=['a', 'b'], robots=['r', 's']))
    assert reason(SearchQuery(Mode.TIME, 1, sessions=['a', 'b', 'c']), two) == 'sessions'
    assert reason(SearchQuery(Mode.TIME, 1, robots=['r', 's', 't']), two) == 'robots'


def test_a_query_photo_is_refused_on_its_header_before_decoding():
    rules = SearchRules()
    ok, jpeg = cv2.imencode('.jpg', PHOTO)
    assert ok
    assert rules.decode_image(jpeg.tobytes()).shape == PHOTO.shape

    def reason(data: bytes) -> str:
        with pytest.raises(RefusedError) as refused:
            rules.decode_image(data)
        return refused.value.reason

    assert reason(b'') == 'image'
    assert reason(b'\xff\xd8\xff garbage') == 'image'
    assert reason(png_bomb(18_000)) == 'image_too_large'
    assert reason(jpeg.tobytes()[:200]) == 'image'  # a header, then nothing to decode
