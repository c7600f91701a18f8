# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""MemoryStore over real Milvus: persistence, every search mode, errors.

Each test runs against a Milvus Lite file and, in the server tier, against a local Milvus
standalone server (the same store code talking gRPC to a separate process).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import waymark
from waymark.memory.entries import FrameRecord
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.storage.errors import MemoryStoreLockedError, MemoryStoreSchemaError
from waymark.memory.storage.index_params import SCANN, IndexParams
from waymark.memory.storage.schema import TEXT_MAX_BYTES
from waymark.memory.storage.session_owners import SessionOwnedError
from waymark.memory.storage.store import MemoryStore
from waymark.memory.storage.view_index import AUTO, IN_MILVUS, IN_PROCESS

VIEWS = {'image': 4, 'text': 3}
T0 = 1_700_000_000 * 10**9  # a UTC stamp in ns


def frame(session='a', index=0, seconds=0.0, x=0.0, y=0.0, z=0.0, valid=True, text=''):
    return FrameRecord(
        session=session,
        index=index,
        stamp_ns=T0 + round(seconds * 1e9),
        x=x,
        y=y,
        z=z,
        yaw=0.3,
        map_epoch=1,
        pose_valid=valid,
        image_ref=f'images/{session}/{index:08d}.jpg',
        text=text,
    )


def basis(i, dim=4):
    vector = np.zeros(dim, dtype=np.float32)
    vector[i] = 1.0
    return vector


BACKENDS = [
    'lite',
    'lite-search',
    'lite-auto',
    pytest.param('server-search', marks=pytest.mark.milvus_server),
]
# Searching in process over a server ('server') searches as over Lite; what differs is
# what a store reads back from the server when it opens, so the tests of what survives a
# restart run it. 'auto' on a server is the server's search ('server-search') with the hot
# sessions in process ('lite-auto'); those tests run it too.
WITH_SERVER_AUTO = [
    *BACKENDS,
    pytest.param('server', marks=pytest.mark.milvus_server),
    pytest.param('server-auto', marks=pytest.mark.milvus_server),
]
across_every_backend = pytest.mark.parametrize('backend', WITH_SERVER_AUTO, indirect=True)


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """Where memory lives (a Milvus Lite file or a server) and, with '-search', that
    Milvus answers the vector searches too; with '-auto', Milvus but for the sessions being
    written."""
    return request.param


@pytest.fixture
def db_path(backend, request, tmp_path) -> str:
    if backend.startswith('server'):
        return request.getfixturevalue('milvus_uri')
    return str(tmp_path / 'memory.db')


@pytest.fixture
def open_store(backend):
    search = {'search': IN_MILVUS, 'auto': AUTO}.get(backend.rpartition('-')[2], IN_PROCESS)
    return functools.partial(MemoryStore, search_backend=search)


@pytest.fixture
def store(db_path, open_store):
    with open_store(db_path, VIEWS) as opened:
        yield opened


@pytest.fixture
def lite_path(tmp_path) -> str:
    return str(tmp_path / 'memory.db')


def ids(hits):
    return [hit.record.id for hit in hits]


@across_every_backend
def test_round_trip_and_restart_give_the_same_answers(db_path, open_store):
    records = [
        frame('a', i, seconds=i, x=0.1 * i, y=-i, text='EXIT' if i == 2 else '') for i in range(4)
    ]
    vectors = [{'image': basis(i)} for i in range(4)]
    vectors[2]['text'] = np.array([0.0, 3.0, 4.0])

    def answers(store):
        return (
            store.get([r.id for r in records]),
            store.search_view('image', basis(1) + 0.1, 2),
            store.search_view('text', np.array([0.0, 0.0, 1.0]), 5),
            store.search_time(T0, 3),
            store.search_position(0.2, -2.0, 0.0, 2),
            store.count(),
            store.sessions(),
        )

    with open_store(db_path, VIEWS) as store:
        store.add_many(records, vectors)
        store.flush()
        before = answers(store)
    with open_store(db_path, VIEWS) as reopened:
        after = answers(reopened)

    assert after == before
    got, image_hits, text_hits, time_hits, position_hits, count, sessions = after
    assert got == records
    assert ids(image_hits)[0] == 'a/1'
    assert ids(text_hits) == ['a/2']
    assert text_hits[0].score == pytest.approx(0.8, abs=1e-5)  # cosine of (0,3,4)/5 and z
    assert ids(time_hits) == ['a/0', 'a/1', 'a/2']
    assert ids(position_hits)[0] == 'a/2'
    assert (count, sessions) == (4, ['a'])


def test_upsert_replaces_the_frame_and_drops_a_view_it_no_longer_has(store):
    store.add(frame('a', 0, x=1.0, text='CAFE'), {'image': basis(0), 'text': basis(0, 3)})
    store.add(frame('a', 0, x=9.0), {'image': basis(1)})

    assert store.count() == 1
    assert store.get(['a/0'])[0].x == 9.0
    assert store.get(['a/0'])[0].text == ''
    assert store.count(view='text') == 0
    assert store.search_view('text', basis(0, 3), 5) == []
    assert ids(store.search_view('image', basis(1), 1)) == ['a/0']


@across_every_backend
def test_a_deleted_session_leaves_nothing_behind_after_a_restart(db_path, open_store):
    """Replaced entries go with their session too (upserts once hid them from a
    server's session filter), and the other session keeps every entry."""
    with open_store(db_path, VIEWS) as store:
        for session in ('a', 'b'):
            store.add_many([frame(session, i, i) for i in range(30)], [{'image': basis(0)}] * 30)
        store.add_many([frame('a', i, i, x=5.0) for i in range(30)], [{'image': basis(1)}] * 30)
        removed = store.delete_session('a')
        store.flush()

    assert sorted(r.index for r in removed['frame']) == list(range(30))
    with open_store(db_path, VIEWS) as reopened:
        assert reopened.sessions() == ['b']
        assert (reopened.count(), reopened.count(view='image')) == (30, 30)
        assert {hit.record.session for hit in reopened.search_view('image', basis(1), 50)} == {'b'}


def test_view_search_ranks_by_cosine_best_first(store):
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(20, 4))
    store.add_many([frame('a', i, seconds=i) for i in range(20)], [{'image': v} for v in vectors])
    query = rng.normal(size=4)

    hits = store.search_view('image', query, 5)

    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit @ (query / np.linalg.norm(query))
    expected = np.argsort(-cosines)[:5]
    assert ids(hits) == [f'a/{i}' for i in expected]
    assert [hit.score for hit in hits] == pytest.approx(cosines[expected], abs=1e-5)
    assert {hit.view for hit in hits} == {'image'}


def test_time_search_runs_forward_from_t_not_around_it(store):
    store.add_many([frame('a', i, seconds=i) for i in range(10)], [{}] * 10)

    hits = store.search_time(T0 + int(5.5e9), 3)

    # a/5 is the nearest frame to t but lies before it: it must not appear.
    assert ids(hits) == ['a/6', 'a/7', 'a/8']
    assert [hit.score for hit in hits] == pytest.approx([0.5, 1.5, 2.5])
    assert {hit.view for hit in hits} == {'time'}
    assert store.search_time(T0 + int(9.5e9), 3) == []


def test_time_search_over_many_interleaved_sessions_matches_a_full_sort(store):
    rng = np.random.default_rng(7)
    stamps = rng.integers(0, 10**12, size=300)
    records = [
        FrameRecord(f's{i % 3}', i, T0 + int(stamps[i]), 0, 0, 0, 0, 0, True, 'r', '')
        for i in rng.permutation(300)
    ]
    store.add_many(records, [{}] * len(records))
    ordered = sorted(records, key=lambda r: (r.stamp_ns, r.session, r.index))

    for t in (T0 - 1, T0 + int(stamps.mean()), T0 + int(np.quantile(stamps, 0.9))):
        expected = [r.id for r in ordered if r.stamp_ns >= t][:7]
        assert ids(store.search_time(t, 7)) == expected
    one_session = [r.id for r in ordered if r.session == 's1'][:7]
    assert ids(store.search_time(T0 - 1, 7, sessions=['s1'])) == one_session


def test_interval_search_is_chronological_and_bounded_by_both_ends(store):
    store.add_many([frame('a', i, seconds=i) for i in range(10)], [{}] * 10)

    hits = store.search_interval(T0 + int(2e9), T0 + int(6e9), 100)

    assert ids(hits) == ['a/2', 'a/3', 'a/4', 'a/5', 'a/6']
    assert ids(store.search_interval(T0 + int(2e9), T0 + int(6e9), 2)) == ['a/2', 'a/3']
    with pytest.raises(ValueError):
        store.search_interval(T0 + 5, T0, 3)


def test_a_query_of_the_records_maps_to_its_search_and_a_vector_one_is_refused(store):
    store.add_many([frame('a', i, seconds=i) for i in range(10)], [{}] * 10)
    interval = SearchQuery(Mode.INTERVAL, k=100, stamp_ns=T0 + int(2e9), end_ns=T0 + int(4e9))
    assert ids(store.search_records(interval, None)) == ['a/2', 'a/3', 'a/4']
    span = SearchQuery(Mode.INDEX_RANGE, k=5, sessions=['a'], first_index=7, last_index=9)
    assert ids(store.search_records(span, ['a'])) == ['a/7', 'a/8', 'a/9']
    with pytest.raises(ValueError, match='text search is not answered from the records'):
        store.search_records(SearchQuery(Mode.TEXT, k=3, text='a mug'), None)


def test_position_search_is_nearest_first_in_metres_and_skips_lost_poses(store):
    store.add_many(
        [
            frame('a', 0, x=3.0, y=4.0),
            frame('a', 1, x=1.0, y=0.0, z=1.0),
            frame('a', 2, x=0.1, y=0.0, valid=False),
            frame('a', 3, x=10.0),
        ],
        [{}] * 4,
    )

    hits = store.search_position(0.0, 0.0, 0.0, 10)

    assert ids(hits) == ['a/1', 'a/0', 'a/3']
    assert [hit.score for hit in hits] == pytest.approx([2**0.5, 5.0, 10.0], abs=1e-5)
    lost = store.get(['a/2'])[0]
    assert (lost.pose_valid, lost.x, lost.y, lost.z) == (False, 0.0, 0.0, 0.0)


def test_range_search_uses_the_floor_plan_distance(store):
    store.add_many(
        [
            frame('a', 0, x=1.0, y=0.0, z=5.0),  # 1 m away on the plan, 5 m above
            frame('a', 1, x=0.0, y=1.9),
            frame('a', 2, x=2.1, y=0.0),
            frame('a', 3, x=0.5, y=0.0, valid=False),
        ],
        [{}] * 4,
    )

    hits = store.search_range(0.0, 0.0, 2.0)

    assert ids(hits) == ['a/0', 'a/1']
    assert [hit.score for hit in hits] == pytest.approx([1.0, 1.9], abs=1e-5)
    with pytest.raises(ValueError):
        store.search_range(0.0, 0.0, 0.0)


def test_sessions_filter_unknown_sessions_and_indices(store):
    store.add_many(
        [frame('a', 0, 0.0), frame('a', 1, 1.0), frame('a', 5, 2.0), frame('b', 0, 0.5)],
        [{'image': basis(0)}] * 4,
    )

    assert store.sessions() == ['a', 'b']
    assert (store.count(), store.count('a'), store.count('b'), store.count('zzz')) == (4, 3, 1, 0)
    assert ids(store.search_time(T0, 10, sessions=['b'])) == ['b/0']
    assert ids(store.search_view('image', basis(0), 10, sessions=['b'])) == ['b/0']
    assert ids(store.search_position(0, 0, 0, 10, sessions=['a', 'b'])) != []
    for unknown in (['zzz'], ['a" or session != "'], ['../a']):
        assert store.search_time(T0, 10, sessions=unknown) == []
        assert store.search_view('image', basis(0), 10, sessions=unknown) == []
        assert store.search_position(0, 0, 0, 10, sessions=unknown) == []
        assert store.search_range(0, 0, 5.0, sessions=unknown) == []
    assert (store.next_index('a'), store.next_index('b'), store.next_index('zzz')) == (6, 1, 0)
    assert store.get(['a/5', 'zzz/1', 'a"/1', 'b/0']) == store.get(['a/5', 'b/0'])


def test_view_search_keeps_to_the_sessions_and_index_range_asked(store):
    records = [frame('a', i, i) for i in range(6)] + [frame('b', i, i) for i in range(3)]
    store.add_many(records, [{'image': basis(0) + 0.1 * i * basis(1)} for i in range(9)])

    in_range = store.search_view('image', basis(0), 10, sessions=['a'], index_range=(2, 4))
    assert sorted(ids(in_range)) == ['a/2', 'a/3', 'a/4']
    assert len(store.search_view('image', basis(0), 10, sessions=['a', 'b'])) == 9
    assert store.search_view('image', basis(0), 10, sessions=['a'], index_range=(4, 2)) == []
    assert (store.count(view='image', session='b'), store.count(view='image')) == (3, 9)
    assert store.view_ids('frame', 'image') == {record.id for record in records}


@across_every_backend
def test_a_robot_changes_only_its_own_sessions_and_queries_can_name_robots(db_path, open_store):
    with open_store(db_path, VIEWS, robot='go1-a') as first:
        first.add(frame('walk', 0, 0.0, x=1.0), {'image': basis(0)})
    with open_store(db_path, VIEWS, robot='go1-b') as second:
        with pytest.raises(SessionOwnedError, match="belongs to robot 'go1-a'"):
            second.add(frame('walk', 0, 5.0, x=9.0), {'image': basis(1)})
        with pytest.raises(SessionOwnedError):
            second.add_many(
                [frame('mine', 0), frame('walk', 1)], [{'image': basis(2)}, {'image': basis(2)}]
            )
        with pytest.raises(SessionOwnedError):
            second.delete_session('walk')
        assert second.count() == 1 and second.get(['walk/0'])[0].x == 1.0  # nothing changed
        second.add(frame('mine', 0, 1.0), {'image': basis(1)})
        assert second.owners.owners() == {'walk': 'go1-a', 'mine': 'go1-b'}
        assert second.owners.sessions_of(['go1-a']) == ['walk']
        assert second.owners.sessions_of(['go1-a', 'go1-b']) == ['mine', 'walk']
        assert second.owners.sessions_of(['nobody']) == []
    with open_store(db_path, VIEWS, robot='go1-a') as first:
        first.delete_session('walk')
        assert first.owners.owners() == {'mine': 'go1-b'}
    with open_store(db_path, VIEWS, robot='go1-b') as second:
        second.add(frame('walk', 0, 7.0), {'image': basis(3)})  # the name is free again
        assert second.owners.owners() == {'walk': 'go1-b', 'mine': 'go1-b'}


def test_sessions_written_before_owners_existed_go_to_the_first_robot_that_opens_them(lite_path):
    from pymilvus import MilvusClient

    with MemoryStore(lite_path, VIEWS) as store:
        store.add(frame('old', 0), {'image': basis(0)})
    client = MilvusClient(lite_path)
    try:
        client.drop_collection('waymark_sessions')  # as a memory made before them
    finally:
        client.close()
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(str(Path(lite_path).resolve()))
    with MemoryStore(lite_path, VIEWS, robot='go1') as store:
        assert store.owners.owners() == {'old': 'go1'}
        store.add(frame('old', 1), {'image': basis(1)})
        assert store.count('old') == 2
    with MemoryStore(lite_path, VIEWS, robot='other') as store, pytest.raises(SessionOwnedError):
        store.add(frame('old', 2), {'image': basis(1)})


@pytest.mark.parametrize('robot', ['-go1', 'a/b', 'x' * 33, 'go 1'])
def test_an_invalid_robot_id_is_refused_before_opening(lite_path, robot):
    with pytest.raises(ValueError, match='invalid robot id'):
        MemoryStore(lite_path, VIEWS, robot=robot)


@pytest.mark.milvus_server
def test_two_writers_sharing_a_server_lose_nothing_and_find_each_others_entries(milvus_uri):
    per_writer = 120

    def write(store, session):
        for start in range(0, per_writer, 10):
            batch = [frame(session, i, i, x=float(i)) for i in range(start, start + 10)]
            store.add_many(batch, [{'image': basis(0) + 0.01 * i * basis(1)} for i in range(10)])

    with (
        MemoryStore(milvus_uri, VIEWS, search_backend=IN_MILVUS, robot='robot1') as first,
        MemoryStore(milvus_uri, VIEWS, search_backend=IN_MILVUS, robot='robot2') as second,
    ):
        writers = [
            threading.Thread(target=write, args=(store, session))
            for store, session in ((first, 'robot1'), (second, 'robot2'))
        ]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join(timeout=120)
        # Searches read other writers' entries within a time tick (Session consistency).
        deadline = time.monotonic() + 10.0
        while True:
            theirs = first.search_view('image', basis(0), 1000, sessions=['robot2'])
            if len(theirs) >= per_writer or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert len(theirs) == per_writer
        assert {hit.record.index for hit in theirs} == set(range(per_writer))
        assert all(hit.record.x == hit.record.index for hit in theirs)
        with pytest.raises(SessionOwnedError):  # neither overwrites the other's entries
            first.add(frame('robot2', 0, x=-1.0), {'image': basis(1)})
        assert second.get(['robot2/0'])[0].x == 0.0
        assert first.owners.sessions_of(['robot2']) == ['robot2']

    with MemoryStore(milvus_uri, VIEWS, search_backend=IN_MILVUS) as reopened:
        assert (reopened.count(), reopened.count(view='image')) == (2 * per_writer,) * 2
        assert reopened.sessions() == ['robot1', 'robot2']


@pytest.mark.milvus_server
def test_a_robot_reopening_on_a_shared_server_reads_only_what_others_wrote_since(
    milvus_uri, tmp_path
):
    """Robot 2 writes all along, while robot 1 closes and opens again twice: every open
    after the first loads robot 1's snapshot and reads robot 2's newer rows, including
    those that landed while the open was reading; none is missed (a missed row would make
    the counts differ, and the table would be read whole: `rebuilt`)."""
    batches, per_batch = 12, 10

    def store(robot):
        return MemoryStore(
            milvus_uri, VIEWS, search_backend=IN_MILVUS, robot=robot, index_dir=tmp_path / robot
        )

    def write(other):
        for batch in range(batches):
            first = batch * per_batch
            entries = [frame('robot2', i, i) for i in range(first, first + per_batch)]
            other.add_many(entries, [{'image': basis(i % 4)} for i in range(per_batch)])

    with store('robot1') as own:
        own.add_many([frame('robot1', i, i) for i in range(50)], [{}] * 50)
    with store('robot2') as other:
        writer = threading.Thread(target=write, args=(other,))
        writer.start()
        reports = []
        while writer.is_alive() or len(reports) < 2:
            with store('robot1') as own:
                reports.append(own.load_report)
        writer.join(timeout=120)
    with store('robot1') as own:
        last = own.load_report
        assert own.count() == 50 + batches * per_batch
        assert own.count('robot2') == batches * per_batch
    assert all(report.rebuilt == [] for report in [*reports, last])
    assert sorted(last.loaded) == ['frame/records', 'place/records', 'segment/records']
    assert last.caught_up_others <= batches * per_batch  # the newest, not every row


@pytest.mark.milvus_server
@pytest.mark.parametrize('server_index', ['IVF_FLAT', SCANN])
def test_a_server_view_indexed_with_ivf_answers_exactly_when_every_cluster_is_searched(
    milvus_uri, server_index
):
    from pymilvus import MilvusClient

    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(2500, 4)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    records = [frame('a', i, i) for i in range(len(vectors))]
    views = {'image': 4}  # SCANN needs an even dimension
    ivf = IndexParams(server_index=server_index, ivf_nlist=16, ivf_nprobe=16)
    with MemoryStore(milvus_uri, views, search_backend=IN_MILVUS, index_params=ivf) as store:
        store.add_many(records, [{'image': vector} for vector in vectors])
        store.flush()  # sealed segments get the IVF index; the rest is scanned
    client = MilvusClient(uri=milvus_uri)
    try:
        # The server builds the index (a build it cannot do, it retries for ever, and
        # searches would scan the rows and hide that).
        deadline = time.monotonic() + 120.0
        while True:
            index = client.describe_index('waymark_view_image', 'vector')
            if int(index['indexed_rows']) >= len(vectors) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        client.close()
    assert (index['index_type'], int(index['nlist'])) == (server_index, 16)
    assert int(index['indexed_rows']) == len(vectors)
    # Reopened with the default (HNSW) settings, the collection keeps its index; SCANN's
    # 4-bit codes only shortlist, and the scores are exact cosines.
    with MemoryStore(milvus_uri, views, search_backend=IN_MILVUS) as reopened:
        for query in vectors[:20] + 0.05:
            cosines = vectors @ (query / np.linalg.norm(query))
            expected = np.argsort(-cosines)[:10]
            hits = reopened.search_view('image', query, 10)
            assert [hit.record.index for hit in hits] == expected.tolist()
            assert [hit.score for hit in hits] == pytest.approx(cosines[expected], abs=1e-5)


def test_a_scann_server_index_refuses_a_view_of_odd_dimension_before_connecting(tmp_path):
    scann = IndexParams(server_index=SCANN)
    with pytest.raises(ValueError, match=r"even dimension, got \{'text': 3\}"):
        MemoryStore(
            str(tmp_path / 'memory.db'), VIEWS, search_backend=IN_MILVUS, index_params=scann
        )

    assert not (tmp_path / 'memory.db').exists()


def test_range_and_session_listing_return_more_than_a_first_page(store):
    records = [frame(f's{i:03d}', 0, i, x=0.01 * (99 - i)) for i in range(100)]
    store.add_many(records, [{}] * len(records))

    hits = store.search_range(0.0, 0.0, 2.0)

    assert ids(hits) == [f's{i:03d}/0' for i in reversed(range(100))]
    assert store.sessions() == [f's{i:03d}' for i in range(100)]


def test_next_index_finds_the_largest_index(store):
    indices = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 37, 1000]
    store.add_many([frame('a', i, i) for i in indices], [{}] * len(indices))

    assert store.next_index('a') == 1001


def test_k_is_capped_and_must_be_positive(db_path, open_store):
    with open_store(db_path, VIEWS, max_k=3) as store:
        store.add_many([frame('a', i, i) for i in range(6)], [{'image': basis(0)}] * 6)

        assert len(store.search_view('image', basis(0), 100)) == 3
        assert len(store.search_time(T0, 100)) == 3
        assert len(store.search_range(0, 0, 100.0)) == 3
        with pytest.raises(ValueError):
            store.search_time(T0, 0)
        # Index lookups page through max_k rows at a time and still find the largest.
        store.add(frame('a', 40, 40), {})
        assert store.next_index('a') == 41


def test_bad_input_is_rejected_before_anything_is_written(store):
    bad = [
        (frame('a', 0), {'depth': basis(0)}),  # unknown view
        (frame('a', 0), {'image': np.ones(5)}),  # wrong dim
        (frame('a', 0), {'image': np.zeros(4)}),  # no direction
        (frame('a/b', 0), {}),  # session name that would break ids and paths
        (frame('a', 0, x=float('nan')), {}),  # valid pose that is not finite
    ]
    for record, vectors in bad:
        with pytest.raises(ValueError):
            store.add_many([frame('a', 1), record], [{}, vectors])
    assert store.count() == 0


def test_long_text_is_clipped_to_the_column_in_utf8_bytes(store):
    store.add(frame('a', 0, text='é' * TEXT_MAX_BYTES), {})

    text = store.get(['a/0'])[0].text
    assert len(text.encode('utf-8')) <= TEXT_MAX_BYTES
    assert text == 'é' * (TEXT_MAX_BYTES // 2)


def test_a_different_view_dim_is_an_error_not_a_silent_recreate(db_path, open_store):
    with open_store(db_path, VIEWS) as store:
        store.add(frame('a', 0), {'image': basis(0)})

    with pytest.raises(MemoryStoreSchemaError, match=r'waymark_view_image.*dim=4.*dim=8'):
        open_store(db_path, {'image': 8})
    with open_store(db_path, VIEWS) as store:
        assert store.count(view='image') == 1


def test_a_database_open_in_another_process_is_reported_by_name(lite_path):
    db_path = lite_path
    package_root = str(Path(waymark.__file__).resolve().parents[1])
    holder = subprocess.Popen(
        [
            sys.executable,
            '-c',
            'import sys\n'
            'from waymark.memory.storage.store import MemoryStore\n'
            f'store = MemoryStore({db_path!r}, {VIEWS!r})\n'
            'print("open", flush=True)\n'
            'sys.stdin.read()\n'
            'store.close()\n',
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, 'PYTHONPATH': package_root},
    )
    try:
        assert holder.stdout.readline().strip() == 'open'
        with pytest.raises(MemoryStoreLockedError) as raised:
            MemoryStore(db_path, VIEWS)
        assert str(Path(db_path).resolve()) in str(raised.value)
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=30) == 0
    with MemoryStore(db_path, VIEWS) as store:
        assert store.count() == 0
