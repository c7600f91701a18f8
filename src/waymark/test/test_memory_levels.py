# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Frames and segments in one store: levels, index ranges, views added later, deletion."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from waymark.memory.entries import FRAME, PLACE, SEGMENT, FrameRecord
from waymark.memory.storage.milvus_rows import ViewRow
from waymark.memory.storage.store import MemoryStore

T0 = 1_700_000_000 * 10**9
S = 10**9
FRAME_VIEWS = {'image': 4}
SEGMENT_VIEWS = {'image': 4, 'caption_full': 3}


def entry(session, index, seconds, kind=FRAME, x=0.0, ref=''):
    return FrameRecord(
        session=session,
        index=index,
        stamp_ns=T0 + round(seconds * S),
        x=x,
        y=0.0,
        z=0.0,
        yaw=0.0,
        map_epoch=0,
        pose_valid=True,
        image_ref=ref,
        kind=kind,
        end_ns=T0 + round((seconds + 1.5) * S) if kind == SEGMENT else None,
    )


def unit(*values):
    return np.asarray(values, dtype=np.float32)


def ids(hits):
    return [hit.record.id for hit in hits]


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / 'memory.db')


def open_store(db):
    return MemoryStore(db, FRAME_VIEWS, segment_views=SEGMENT_VIEWS)


def test_segments_are_their_own_level_and_survive_a_restart(db):
    with open_store(db) as store:
        store.add_many([entry('a', i, i) for i in range(3)], [{'image': unit(1, 0, 0, 0)}] * 3)
        store.add_many(
            [entry('a', j, 1.5 * j, SEGMENT, x=j) for j in range(4)],
            [{'image': unit(0, 1, 0, j)} for j in range(4)],
        )
        assert (store.count(), store.count(level=SEGMENT)) == (3, 4)
        before = store.search_view('image', unit(0, 1, 0, 3), 2, level=SEGMENT)
    with open_store(db) as store:
        assert store.load_report.entries == {FRAME: 3, SEGMENT: 4, PLACE: 0}
        after = store.search_view('image', unit(0, 1, 0, 3), 2, level=SEGMENT)
        segment = store.get(['a/s2'], SEGMENT)[0]
    assert ids(after) == ids(before) == ['a/s3', 'a/s2']
    assert after[0].record.kind == SEGMENT and after[0].record.id == 'a/s3'
    assert segment.end_stamp_ns - segment.stamp_ns == round(1.5 * S)
    assert store.get(['a/s2']) == []  # not a frame id


def test_an_index_range_keeps_only_those_entries_of_one_session(db):
    with open_store(db) as store:
        for session in ('a', 'b'):
            store.add_many(
                [entry(session, j, 1.5 * j, SEGMENT) for j in range(20)],
                [{'image': unit(1, 0, 0, j / 10)} for j in range(20)],
            )
        inside = store.search_view(
            'image', unit(1, 0, 0, 1.9), 50, ['a'], level=SEGMENT, index_range=(5, 9)
        )
        listed = store.search_index_range('a', 5, 9, 50)
        with pytest.raises(ValueError, match='exactly one session'):
            store.search_view('image', unit(1, 0, 0, 0), 5, None, SEGMENT, index_range=(0, 3))

    assert ids(inside) == ['a/s9', 'a/s8', 'a/s7', 'a/s6', 'a/s5']
    assert ids(listed) == ['a/s5', 'a/s6', 'a/s7', 'a/s8', 'a/s9']


def test_a_view_added_later_is_searchable_and_brings_its_own_text(db):
    with open_store(db) as store:
        segment = dataclasses.replace(entry('a', 0, 0.0, SEGMENT), text='EXIT')
        store.add(segment, {'image': unit(1, 0, 0, 0)})
        assert store.search_view('caption_full', unit(0, 0, 1), 3, level=SEGMENT) == []
        store.add_views(SEGMENT, [segment], 'caption_full', [ViewRow(unit(0, 0, 2), 'a red door')])
        hits = store.search_view('caption_full', unit(0, 0, 1), 3, level=SEGMENT)
        by_image = store.search_view('image', unit(1, 0, 0, 0), 3, level=SEGMENT)
    assert ids(hits) == ['a/s0']
    assert hits[0].record.text == 'a red door' and hits[0].view == 'caption_full'
    assert by_image[0].record.text == 'EXIT'  # the record's own text elsewhere


def test_deleting_a_session_removes_every_level_and_view_and_returns_them(db):
    with open_store(db) as store:
        store.add_many([entry(s, 0, 0, ref=f'images/{s}.jpg') for s in 'ab'], [{}] * 2)
        store.add_many([entry(s, 0, 0, SEGMENT) for s in 'ab'], [{'image': unit(0, 1, 0, 0)}] * 2)
        removed = store.delete_session('a')
        assert [r.id for r in removed[FRAME]] == ['a/0']
        assert [r.id for r in removed[SEGMENT]] == ['a/s0']
        assert store.sessions() == ['b']
        assert store.image_refs() == {'images/b.jpg'}
        assert ids(store.search_view('image', unit(0, 1, 0, 0), 5, level=SEGMENT)) == ['b/s0']
        assert store.delete_session('zzz') == {FRAME: [], SEGMENT: []}
        with pytest.raises(ValueError):
            store.delete_session('../b')
    with open_store(db) as store:
        assert (store.count(), store.count(level=SEGMENT), store.sessions()) == (1, 1, ['b'])


def test_a_clean_shutdown_saves_the_indexes_and_a_crash_catches_up_from_the_journal(db):
    import os
    import subprocess
    import sys

    with open_store(db) as store:
        store.add_many(
            [entry('a', i, i) for i in range(5)], [{'image': unit(1, i, 0, 0)} for i in range(5)]
        )
    with open_store(db) as store:
        loaded = sorted(store.load_report.loaded)
        assert loaded == [
            'frame/image',
            'frame/records',
            'place/records',
            'segment/caption_full',
            'segment/image',
            'segment/records',
        ]
        assert store.load_report.caught_up == 0
        assert ids(store.search_view('image', unit(1, 4, 0, 0), 1)) == ['a/4']
    # A process that writes and dies without closing: the snapshot loads, and the one id
    # its journal names is refetched from Milvus.
    script = (
        'import os, sys, numpy as np\n'
        'from waymark.memory.entries import FrameRecord\n'
        'from waymark.memory.storage.store import MemoryStore\n'
        f'store = MemoryStore({db!r}, {FRAME_VIEWS!r}, segment_views={SEGMENT_VIEWS!r})\n'
        f'store.add(FrameRecord("a", 9, {T0 + 9 * S}, 0, 0, 0, 0, 0, True, ""), '
        '{"image": np.array([0.0, 0.0, 1.0, 0.0])})\n'
        'os._exit(0)\n'
    )
    subprocess.run([sys.executable, '-c', script], check=True, env=dict(os.environ), timeout=120)
    with open_store(db) as store:
        assert sorted(store.load_report.loaded) == loaded
        assert (store.load_report.caught_up, store.load_report.rebuilt) == (1, [])
        assert store.count() == 6
        assert ids(store.search_view('image', unit(0, 0, 1, 0), 1)) == ['a/9']
