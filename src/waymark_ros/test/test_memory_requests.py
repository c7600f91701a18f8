# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A SearchQuery over the SearchMemory service without ROS transport: the client's request
carries the whole query back, and memory_node's handler answers it from a real memory,
refusing a bad request with its reason counted."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from waymark.geometry import Pose
from waymark.memory.entries import FRAME, SEGMENT, Keyframe
from waymark.memory.search_query import Mode, SearchQuery, SearchRules
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.store import MemoryStore
from waymark.memory.views.text import TextView
from waymark.memory.views.view import level_dims
from waymark_interfaces.srv import SearchMemory
from waymark_ros.nodes.memory.memory_requests import SearchLimits, answer_search
from waymark_ros.ros.search_msgs import query_from_msg, query_to_msg
from waymark_testing.agent_memory import SignReader, WordEmbedder, sign_jpeg

Request = SearchMemory.Request
S = 1_000_000_000
T0 = 1_750_000_000 * S
SIGNS = ('office', 'bakery', 'station')
LIMITS = SearchLimits(SearchRules(max_query_chars=20), default_k=2, max_k=10)


def test_the_wire_names_every_mode():
    wire = {value for name, value in vars(Request).items() if name.startswith('MODE_')}
    assert wire == set(Mode)


@pytest.mark.parametrize(
    'query',
    [
        SearchQuery(
            Mode.TEXT, 7, sessions=['a', 'b'], robots=['go1-a'], views=['text'], text='cup'
        ),
        SearchQuery(Mode.TIME, 1, level=SEGMENT, stamp_ns=T0 + 123),
        SearchQuery(Mode.INTERVAL, 3, stamp_ns=T0, end_ns=T0 + 5 * S + 1),
        SearchQuery(Mode.POSITION, 4, position=(1.5, -2.25, 0.5)),
        SearchQuery(Mode.RANGE, 4, position=(1.5, -2.25, 0.0), radius=2.5),
        SearchQuery(Mode.INDEX_RANGE, 9, sessions=['a'], first_index=3, last_index=2**40, text='x'),
    ],
)
def test_a_query_crosses_the_wire_whole(query):
    assert query_from_msg(query_to_msg(query), query.k, SearchRules()) == query


def test_a_photo_crosses_as_jpeg_and_only_an_image_search_decodes_one():
    photo = np.zeros((48, 64, 3), np.uint8)
    photo[:, :32] = (200, 30, 30)  # red left half: the channel order must survive
    request = query_to_msg(SearchQuery(Mode.IMAGE, 2, image=photo))
    assert request.image.format == 'jpeg'
    back = query_from_msg(request, 2, SearchRules()).image
    assert back.shape == photo.shape
    assert np.abs(back.astype(int) - photo).mean() < 4
    garbage = Request(mode=Mode.TEXT, text='cup')
    garbage.image.data = b'not an image'
    assert query_from_msg(garbage, 2, SearchRules()).image is None


def test_a_time_a_ros_time_cannot_hold_is_a_clear_error():
    with pytest.raises(ValueError, match='ROS time'):
        query_to_msg(SearchQuery(Mode.TIME, 1, stamp_ns=2**62))


@pytest.fixture(scope='module')
def memory(tmp_path_factory):
    directory = tmp_path_factory.mktemp('memory_requests')
    views = [TextView(WordEmbedder(), SignReader())]
    store = MemoryStore(str(directory / 'memory.db'), level_dims(views, FRAME), robot='go1-a')
    service = MemoryService(store, ImageStore(directory), views)
    for index, word in enumerate(SIGNS):
        service.ingest(
            Keyframe(
                session='tour',
                index=index,
                stamp_ns=T0 + index * S,
                pose=Pose.from_xyz_yaw(float(index), 0.0, 0.4, 0.0),
                pose_valid=True,
                map_epoch=0,
                image=sign_jpeg(word),
            )
        )
    yield service
    store.close()


def answer(memory, counts: Counter[str], **fields) -> tuple[SearchMemory.Response, list | None]:
    response = SearchMemory.Response()
    hits = answer_search(memory, LIMITS, Request(**fields), response, 'map', counts)
    return response, hits


def test_a_search_is_answered_with_its_hits_and_the_entries_searched(memory):
    counts: Counter[str] = Counter()
    response, hits = answer(memory, counts, mode=Mode.TIME)
    assert response.success and response.total_entries == 3
    assert [hit.index for hit in response.hits] == [0, 1]  # top_k 0: default_k
    assert [hit.record.index for hit in hits] == [0, 1]
    response, _ = answer(memory, counts, mode=Mode.TIME, top_k=50)
    assert len(response.hits) == 3 and 'capped at max_top_k=10' in response.message
    ranked, _ = answer(
        memory, counts, mode=Mode.INDEX_RANGE, sessions=['tour'], last_index=2, text='bakery'
    )
    assert ranked.hits[0].index == 1
    assert counts == Counter(searches=3)


def test_a_search_keeps_to_the_robots_named(memory):
    counts: Counter[str] = Counter()
    mine, _ = answer(memory, counts, mode=Mode.TIME, top_k=5, robots=['go1-a'])
    theirs, hits = answer(memory, counts, mode=Mode.TIME, top_k=5, robots=['go1-b'])
    assert (len(mine.hits), mine.total_entries) == (3, 3)
    assert theirs.success and (hits, theirs.total_entries) == ([], 0)


@pytest.mark.parametrize(
    ('fields', 'reason'),
    [
        ({'mode': 'fuzzy'}, 'mode'),
        ({'mode': Mode.TIME, 'level': 'building'}, 'level'),
        ({'mode': Mode.TIME, 'sessions': ['../tour']}, 'sessions'),
        ({'mode': Mode.TEXT, 'text': 'x' * 21}, 'text'),
        ({'mode': Mode.TEXT, 'text': '  '}, 'text'),
        ({'mode': Mode.IMAGE}, 'image'),
        ({'mode': Mode.INDEX_RANGE, 'first_index': 2, 'last_index': 1}, 'sessions'),
    ],
)
def test_a_bad_request_is_refused_with_its_reason_counted(memory, fields, reason):
    counts: Counter[str] = Counter()
    response, hits = answer(memory, counts, **fields)
    assert hits is None and not response.success and response.message
    assert counts == Counter({'searches_refused': 1, f'searches_refused_{reason}': 1})


def test_a_bad_stamp_is_refused_before_any_search(memory):
    counts: Counter[str] = Counter()
    request = Request(mode=Mode.TIME)
    request.end_stamp.nanosec = 2 * S
    response = SearchMemory.Response()
    assert answer_search(memory, LIMITS, request, response, 'map', counts) is None
    assert 'end_stamp' in response.message and counts['searches_refused_stamp'] == 1
