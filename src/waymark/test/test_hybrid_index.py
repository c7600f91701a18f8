# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""search_backend 'auto' on Milvus Lite: the sessions being written are searched in
process, whole or not at all, within hot_rows; everything else is Milvus's."""

from __future__ import annotations

import numpy as np
import pytest

from waymark.memory.entries import FrameRecord
from waymark.memory.storage.hybrid_index import HybridViewIndex
from waymark.memory.storage.store import MemoryStore
from waymark.memory.storage.view_index import AUTO

VIEWS = {'image': 8}
T0 = 1_750_000_000 * 10**9


def frame(session: str, index: int) -> FrameRecord:
    return FrameRecord(
        session=session,
        index=index,
        stamp_ns=T0 + index * 10**9,
        x=float(index),
        y=0.0,
        z=0.0,
        yaw=0.0,
        map_epoch=0,
        pose_valid=True,
        image_ref='',
        text='',
    )


def vectors(count: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(count, VIEWS['image'])).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def write(store: MemoryStore, session: str, count: int, seed: int) -> np.ndarray:
    rows = vectors(count, seed)
    store.add_many([frame(session, i) for i in range(count)], [{'image': v} for v in rows])
    return rows


def image_index(store: MemoryStore) -> HybridViewIndex:
    index = store._levels['frame'].indexes['image']
    assert isinstance(index, HybridViewIndex)
    return index


class NoServerSearch:
    """Wraps the server index so that a search reaching Milvus fails the test."""

    def __init__(self, server) -> None:
        self.server = server

    def __getattr__(self, name):
        return getattr(self.server, name)

    def search(self, *args, **kwargs):
        raise AssertionError('searched in Milvus')


def test_a_session_being_written_is_answered_in_process_as_milvus_would(tmp_path):
    with MemoryStore(str(tmp_path / 'm.db'), VIEWS, search_backend=AUTO, hot_rows=100) as store:
        write(store, 'a', 30, 1)
        write(store, 'b', 30, 2)
        index = image_index(store)
        assert index.hot_sessions() == ['a', 'b']
        query = vectors(1, 9)[0]
        from_milvus = [
            (hit.record.id, round(hit.score, 4))
            for hit in store.search_view('image', query, 10, sessions=['a'])
        ]
        index.server = NoServerSearch(index.server)
        in_process = [
            (hit.record.id, round(hit.score, 4))
            for hit in store.search_view('image', query, 10, sessions=['a'])
        ]
        assert in_process == from_milvus and len(in_process) == 10
        with pytest.raises(AssertionError, match='searched in Milvus'):
            store.search_view('image', query, 10)  # every session: Milvus's


def test_past_hot_rows_the_least_recently_written_session_leaves_the_process(tmp_path):
    with MemoryStore(str(tmp_path / 'm.db'), VIEWS, search_backend=AUTO, hot_rows=50) as store:
        write(store, 'a', 30, 1)
        write(store, 'b', 30, 2)  # 60 rows: 'a' goes
        index = image_index(store)
        assert index.hot_sessions() == ['b'] and len(index.hot) == 30
        write(store, 'a', 1, 3)  # 'a' is Milvus's now, whatever is written to it
        assert index.hot_sessions() == ['b']
        hits = store.search_view('image', vectors(1, 1)[0], 40, sessions=['a'])
        assert len(hits) == 30  # from Milvus, the whole session
        assert store.count(view='image') == 60


def test_a_session_continued_after_a_restart_is_never_answered_from_a_part(tmp_path):
    db = str(tmp_path / 'm.db')
    with MemoryStore(db, VIEWS, search_backend=AUTO) as store:
        write(store, 'a', 10, 1)
    with MemoryStore(db, VIEWS, search_backend=AUTO) as store:
        rows = vectors(1, 5)
        store.add(frame('a', 10), {'image': rows[0]})
        store.add(frame('new', 0), {'image': rows[0]})
        index = image_index(store)
        assert index.hot_sessions() == ['new']
        hits = store.search_view('image', rows[0], 20, sessions=['a'])
        assert len(hits) == 11 and hits[0].record.index == 10


def test_a_deleted_session_leaves_the_process_too(tmp_path):
    with MemoryStore(str(tmp_path / 'm.db'), VIEWS, search_backend=AUTO) as store:
        write(store, 'a', 10, 1)
        store.delete_session('a')
        index = image_index(store)
        assert index.hot_sessions() == [] and len(index.hot) == 0
        assert store.search_view('image', vectors(1, 1)[0], 5, sessions=['a']) == []


def test_hot_rows_zero_keeps_nothing_in_process(tmp_path):
    with MemoryStore(str(tmp_path / 'm.db'), VIEWS, search_backend=AUTO, hot_rows=0) as store:
        write(store, 'a', 10, 1)
        index = image_index(store)
        assert index.hot_sessions() == [] and len(index.hot) == 0
        assert len(store.search_view('image', vectors(1, 1)[0], 5, sessions=['a'])) == 5
