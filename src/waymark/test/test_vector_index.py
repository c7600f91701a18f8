# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""VectorIndex: recall against exact search, filters, replacement, removal, persistence."""

from __future__ import annotations

import functools
import io
import itertools
import threading
from unittest import mock

import numpy as np
import pytest

from waymark.memory.storage import shared_work, vector_index, vector_kernels
from waymark.memory.storage.index_params import FP32, PQ4, SQ8, VECTOR_CODES, IndexParams
from waymark.memory.storage.session_codes import SessionCodes
from waymark.memory.storage.vector_index import VectorIndex

DIM = 384
ROWS = 20_000
SESSIONS = ['alpha', 'bravo', 'charlie', 'delta']
# Each session a share of the rows, as recordings of different lengths.
SHARES = [0.5, 0.3, 0.15, 0.05]


def _unit(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def _clustered(rows: int, dim: int, seed: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Gaussian clusters plus noise; each session mostly visits clusters of its own, as a
    robot's route does, so a one-session filter drops the query's nearest clusters."""
    rng = np.random.default_rng(seed)
    centres = _unit(rng.standard_normal((rows // 100, dim)))
    sizes = [int(share * rows) for share in SHARES]
    sizes[0] += rows - sum(sizes)
    vectors, sessions, indices = [], [], []
    first = 0
    for name, size in zip(SESSIONS, sizes, strict=True):
        own = np.arange(first, first + max(2, len(centres) * size // rows)) % len(centres)
        first += len(own)
        labels = np.where(
            rng.random(size) < 0.8, rng.choice(own, size), rng.integers(0, len(centres), size)
        )
        noise = rng.standard_normal((size, dim)) / np.sqrt(dim)
        vectors.append(centres[labels] + noise)
        sessions += [name] * size
        indices.append(np.arange(size))
    return _unit(np.concatenate(vectors)), sessions, np.concatenate(indices)


def _queries(data: np.ndarray, count: int, seed: int) -> np.ndarray:
    """Near data points but not on them, some close and some far (cosine 0.4 to 0.8)."""
    rng = np.random.default_rng(seed)
    picked = data[rng.integers(0, len(data), count)]
    spread = rng.uniform(0.7, 2.0, (count, 1))
    return _unit(picked + spread * rng.standard_normal(picked.shape) / np.sqrt(data.shape[1]))


def _ids(sessions: list[str], indices: np.ndarray) -> list[str]:
    return [f'{s}/{i}' for s, i in zip(sessions, indices.tolist(), strict=True)]


def _exact(data: np.ndarray, query: np.ndarray, rows: np.ndarray, k: int) -> list[int]:
    scores = data[rows] @ query
    return rows[np.argsort(-scores, kind='stable')[:k]].tolist()


def _recall(index: VectorIndex, data, ids, queries, rows, k=10, **filters) -> float:
    row_of = {key: row for row, key in enumerate(ids)}
    hits = 0
    for query in queries:
        found = index.search(query, k, **filters)
        assert len(found) == min(k, len(rows))
        assert all(a[1] >= b[1] for a, b in itertools.pairwise(found))
        hits += len({row_of[key] for key, _ in found} & set(_exact(data, query, rows, k)))
    return hits / (len(queries) * min(k, len(rows)))


@functools.cache
def _corpus(codes: str):
    data, sessions, indices = _clustered(ROWS, DIM, seed=1)
    ids = _ids(sessions, indices)
    index = VectorIndex(DIM, IndexParams(vector_codes=codes))
    for start in range(0, ROWS, 5000):
        stop = start + 5000
        index.upsert(ids[start:stop], sessions[start:stop], indices[start:stop], data[start:stop])
    return index, data, ids, np.asarray(sessions), indices


@pytest.fixture(scope='module', params=VECTOR_CODES)
def corpus(request):
    """The clustered corpus in an index of each kind of vector codes."""
    return _corpus(request.param)


@pytest.fixture(scope='module', params=(SQ8, FP32))
def graph_corpus(request):
    """The corpus in each kind of index that holds a graph (pq4 holds none)."""
    return _corpus(request.param)


@pytest.fixture
def graph_only(graph_corpus, monkeypatch):
    """Make the corpus's filtered searches use the graph however few rows they keep."""
    monkeypatch.setattr(vector_index, '_EXACT_WHEN_EF_ABOVE', float('inf'))
    codes = graph_corpus[0].params.vector_codes
    monkeypatch.setattr(graph_corpus[0], 'params', IndexParams(exact_below=0, vector_codes=codes))


def _no_exact():
    return mock.patch.object(
        VectorIndex, '_search_exact', side_effect=AssertionError('exact search used')
    )


def _small(rows: int = 1200, dim: int = 16, seed: int = 0, **params):
    rng = np.random.default_rng(seed)
    data = _unit(rng.standard_normal((rows, dim)))
    sessions = [SESSIONS[i % 3] for i in range(rows)]
    indices = np.arange(rows) // 3
    ids = _ids(sessions, indices)
    index = VectorIndex(dim, IndexParams(**params))
    index.upsert(ids, sessions, indices, data)
    return index, data, ids, np.asarray(sessions), indices


# -- recall ------------------------------------------------------------------------------


def test_recall_without_filter(corpus):
    index, data, ids, _, _ = corpus
    queries = _queries(data, 100, seed=2)
    with _no_exact():
        recall = _recall(index, data, ids, queries, np.arange(ROWS))
    assert recall >= 0.95


@pytest.mark.parametrize('session', ['alpha', 'charlie'])
def test_recall_with_one_session(corpus, session):
    index, data, ids, sessions, _ = corpus
    queries = _queries(data, 60, seed=3)
    rows = np.flatnonzero(sessions == session)
    assert _recall(index, data, ids, queries, rows, sessions=[session]) >= 0.95


@pytest.mark.parametrize('session', ['alpha', 'bravo'])
def test_recall_with_one_session_on_the_graph(graph_corpus, graph_only, session):
    index, data, ids, sessions, _ = graph_corpus
    queries = _queries(data, 60, seed=4)
    rows = np.flatnonzero(sessions == session)
    with _no_exact():
        recall = _recall(index, data, ids, queries, rows, sessions=[session])
    assert recall >= 0.95


def test_results_stay_in_the_sessions_asked(graph_corpus, graph_only):
    index, data, _, _, _ = graph_corpus
    for query in _queries(data, 20, seed=5):
        found = index.search(query, 50, sessions=['bravo', 'delta'])
        assert len(found) == 50
        assert {key.split('/')[0] for key, _ in found} <= {'bravo', 'delta'}


# -- filters -----------------------------------------------------------------------------


def test_index_range_returns_exactly_the_rows_in_range_ranked_by_cosine(corpus):
    index, data, _, sessions, indices = corpus
    query = _queries(data, 1, seed=6)[0]
    rows = np.flatnonzero((sessions == 'bravo') & (indices >= 100) & (indices <= 180))
    found = index.search(query, 500, sessions=['bravo'], index_range=(100, 180))
    assert [key for key, _ in found] == [
        f'bravo/{indices[r]}' for r in _exact(data, query, rows, 500)
    ]
    np.testing.assert_allclose([s for _, s in found], np.sort(data[rows] @ query)[::-1], atol=1e-5)


def test_index_range_on_the_graph_keeps_only_rows_in_range(graph_corpus, graph_only):
    index, data, ids, sessions, indices = graph_corpus
    rows = np.flatnonzero((sessions == 'alpha') & (indices >= 2000) & (indices <= 7999))
    queries = _queries(data, 30, seed=7)
    with _no_exact():
        recall = _recall(
            index, data, ids, queries, rows, sessions=['alpha'], index_range=(2000, 7999)
        )
    assert recall >= 0.95
    found = index.search(queries[0], 100, sessions=['alpha'], index_range=(2000, 7999))
    assert all(2000 <= int(key.split('/')[1]) <= 7999 for key, _ in found)


def test_empty_matches_give_empty_lists():
    index, data, _, _, _ = _small()
    assert index.search(data[0], 5, sessions=[]) == []
    assert index.search(data[0], 5, sessions=['nobody']) == []
    assert index.search(data[0], 5, sessions=['alpha'], index_range=(10_000, 20_000)) == []
    assert index.search(data[0], 5, sessions=['alpha'], index_range=(5, 4)) == []
    assert VectorIndex(16).search(data[0], 5) == []


def test_k_larger_than_the_rows_returns_them_all():
    index, data, ids, _, _ = _small(rows=30)
    found = index.search(data[3], 100)
    assert sorted(key for key, _ in found) == sorted(ids)
    assert found[0][0] == ids[3]
    assert found[0][1] == pytest.approx(1.0, abs=1e-5)


# -- writes ------------------------------------------------------------------------------


@pytest.mark.parametrize('exact_below', [0, 10_000])
def test_upsert_of_an_existing_id_replaces_its_vector(exact_below):
    index, data, ids, sessions, indices = _small(exact_below=exact_below)
    replacement = _unit(np.random.default_rng(9).standard_normal((1, 16)))
    index.upsert([ids[7]], [sessions[7]], [indices[7]], replacement * 3.0)
    assert len(index) == len(ids)
    old = index.search(data[7], 5)
    assert ids[7] not in [key for key, _ in old[:1]]
    assert all(score < 0.99 for key, score in old if key == ids[7])
    new = index.search(replacement[0], 1)
    assert new[0][0] == ids[7]
    assert new[0][1] == pytest.approx(1.0, abs=1e-5)


def test_repeated_id_in_one_call_keeps_the_last():
    index = VectorIndex(4)
    index.upsert(['a', 'a'], ['s', 's'], [0, 0], np.eye(4)[:2])
    assert len(index) == 1
    assert index.search(np.eye(4)[1], 1) == [('a', pytest.approx(1.0))]


def test_vectors_are_normalised():
    index = VectorIndex(3)
    index.upsert(['a', 'b'], ['s', 's'], [0, 1], np.array([[10.0, 0, 0], [1.0, 1.0, 0]]))
    found = dict(index.search(np.array([2.0, 0, 0]), 2))
    assert found['a'] == pytest.approx(1.0)
    assert found['b'] == pytest.approx(np.sqrt(0.5))


@pytest.mark.parametrize(
    'vectors',
    [
        np.ones((2, 15)),
        np.ones((2, 16, 1)),
        np.ones(16),
        np.vstack([np.ones(16), np.zeros(16)]),
        np.vstack([np.ones(16), np.full(16, np.nan)]),
        np.vstack([np.ones(16), np.full(16, np.inf)]),
        np.vstack([np.ones(16), np.full(16, 1e300)]),
        np.ones((3, 16)),
    ],
)
def test_bad_vectors_raise_and_add_nothing(vectors):
    index, data, ids, _, _ = _small()
    before = index.search(data[0], 10)
    with pytest.raises(ValueError):
        index.upsert(['new/0', 'new/1'], ['new', 'new'], [0, 1], vectors)
    assert len(index) == len(ids)
    assert index.ids() == set(ids)
    assert index.search(data[0], 10) == before


def test_bad_rows_raise_and_add_nothing():
    index, _, ids, _, _ = _small()
    vectors = np.ones((2, 16))
    for args in (
        (['a', 'b'], ['s'], [0, 1]),
        (['a', 'b'], ['s', 's'], [0]),
        (['a', ''], ['s', 's'], [0, 1]),
        (['a', 'b'], ['s', None], [0, 1]),
        (['a', 'b'], ['s', 's'], [0, 1.5]),
        ([ids[0], 'b'], ['s', 's'], [0, 'x']),
    ):
        with pytest.raises(ValueError):
            index.upsert(*args, vectors)
    assert index.ids() == set(ids)


def test_bad_queries_raise():
    index, data, _, _, _ = _small()
    for k in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            index.search(data[0], k)
    for query in (np.zeros(16), np.full(16, np.nan), np.ones(15), np.ones((2, 16))):
        with pytest.raises(ValueError):
            index.search(query, 3)


@pytest.mark.parametrize(
    'params',
    [
        {'hnsw_m': 0},
        {'hnsw_m': 1000},
        {'ef_construction': 0},
        {'ef_search': 0},
        {'exact_below': -1},
        {'ef_search': 1.5},
        {'hnsw_m': True},
        {'scan_shortlist': -1},
    ],
)
def test_params_are_validated(params):
    with pytest.raises(ValueError):
        IndexParams(**params)


def test_dim_is_validated():
    for dim in (0, -3, 1.5, True):
        with pytest.raises(ValueError):
            VectorIndex(dim)


# -- removal -----------------------------------------------------------------------------


@pytest.mark.parametrize('exact_below', [0, 10_000])
def test_remove_drops_rows(exact_below):
    index, data, ids, _, _ = _small(exact_below=exact_below)
    assert index.remove([ids[0], ids[1], 'unknown', ids[0]]) == 2
    assert len(index) == len(ids) - 2
    assert ids[0] not in index.ids()
    assert ids[0] not in [key for key, _ in index.search(data[0], 20)]
    assert index.remove([ids[0]]) == 0


@pytest.mark.parametrize('exact_below', [0, 10_000])
def test_remove_session_drops_its_rows_only(exact_below):
    index, data, ids, sessions, _ = _small(exact_below=exact_below)
    assert index.remove_session('bravo') == int(np.sum(sessions == 'bravo'))
    assert index.remove_session('bravo') == 0
    assert index.remove_session('nobody') == 0
    assert index.ids() == {key for key, s in zip(ids, sessions, strict=True) if s != 'bravo'}
    assert index.search(data[1], 5, sessions=['bravo']) == []
    found = index.search(data[1], 1200)
    assert len(found) == len(index)
    assert all(not key.startswith('bravo/') for key, _ in found)


@pytest.mark.parametrize('exact_below', [0, 10_000])
def test_rows_keep_their_ids_after_many_removals(exact_below):
    # Removing more than the rebuild share replaces the graph and renumbers its rows.
    index, data, ids, _, _ = _small(rows=3000, exact_below=exact_below)
    rng = np.random.default_rng(4)
    gone = set(rng.choice(len(ids), 1500, replace=False).tolist())
    index.remove([ids[row] for row in sorted(gone)])
    left = np.array(sorted(set(range(len(ids))) - gone))
    assert index.ids() == {ids[row] for row in left}
    for row in left[::50]:
        assert index.search(data[row], 1) == [(ids[row], pytest.approx(1.0, abs=1e-5))]
    if exact_below:
        for query in _unit(rng.standard_normal((10, 16))):
            found = index.search(query, 5)
            assert [key for key, _ in found] == [ids[row] for row in _exact(data, query, left, 5)]
    index.upsert(['fresh/0'], ['fresh'], [0], data[:1])
    assert index.search(data[0], 1, sessions=['fresh']) == [('fresh/0', pytest.approx(1.0))]


def test_everything_removed_then_added_again():
    index, data, ids, _, _ = _small(rows=90)
    for session in SESSIONS:
        index.remove_session(session)
    assert len(index) == 0
    assert index.search(data[0], 3) == []
    index.upsert(ids[:3], ['alpha'] * 3, [0, 1, 2], data[:3])
    assert index.search(data[2], 1) == [(ids[2], pytest.approx(1.0))]


def test_searches_run_while_rows_are_written_and_removed():
    index, data, ids, _, _ = _small(rows=1500, exact_below=0)
    errors = []
    stop = threading.Event()

    def search() -> None:
        rng = np.random.default_rng(11)
        while not stop.is_set():
            try:
                for key, score in index.search(data[rng.integers(0, 1500)], 5):
                    assert isinstance(key, str) and key and -1.01 <= score <= 1.01
            except Exception as error:  # reported by the main thread
                errors.append(error)
                return

    readers = [threading.Thread(target=search) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        # Each round passes the dead share twice, so the graph is rebuilt under the readers.
        for session in SESSIONS[:3]:
            index.remove_session(session)
            index.upsert(ids, [key.split('/')[0] for key in ids], np.arange(1500) // 3, data)
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert errors == []
    assert index.ids() == set(ids)


# -- persistence -------------------------------------------------------------------------


def test_save_and_load_give_identical_results(corpus, tmp_path):
    index, data, _, _, _ = corpus
    path = tmp_path / 'frames_image.vidx'
    index.save(path)
    loaded = VectorIndex.load(path, DIM, index.params)
    assert loaded is not None
    assert len(loaded) == len(index)
    assert loaded.ids() == index.ids()
    for query in _queries(data, 20, seed=8):
        for filters in (
            {},
            {'sessions': ['charlie']},
            {'sessions': ['alpha'], 'index_range': (5, 900)},
        ):
            assert loaded.search(query, 10, **filters) == index.search(query, 10, **filters)
    assert not list(tmp_path.glob('.*tmp'))


def test_loaded_index_keeps_dead_rows_dead_and_takes_writes(tmp_path):
    index, data, ids, _, _ = _small(exact_below=0)
    index.remove(ids[:10])
    index.save(tmp_path / 'v.vidx')
    loaded = VectorIndex.load(tmp_path / 'v.vidx', 16, IndexParams(exact_below=0))
    assert loaded.ids() == set(ids[10:])
    assert loaded.search(data[0], 5) == index.search(data[0], 5)
    loaded.upsert([ids[0]], ['alpha'], [0], data[:1])
    assert loaded.search(data[0], 1) == [(ids[0], pytest.approx(1.0))]
    loaded.save(tmp_path / 'v.vidx')
    assert VectorIndex.load(tmp_path / 'v.vidx', 16).ids() == set(ids[10:]) | {ids[0]}


def test_empty_index_round_trip(tmp_path):
    VectorIndex(8).save(tmp_path / 'e.vidx')
    loaded = VectorIndex.load(tmp_path / 'e.vidx', 8)
    assert loaded is not None and len(loaded) == 0


def test_load_refuses_missing_damaged_and_mismatched_files(tmp_path):
    index, _, _, _, _ = _small()
    path = tmp_path / 'v.vidx'
    assert VectorIndex.load(path, 16) is None
    index.save(path)
    good = path.read_bytes()
    assert VectorIndex.load(path, 16) is not None
    assert VectorIndex.load(path, 32) is None
    assert VectorIndex.load(path, 16, IndexParams(hnsw_m=16)) is None
    assert VectorIndex.load(path, 16, IndexParams(ef_construction=200)) is None
    # Search-time settings do not change the graph, so the file serves under new ones.
    assert VectorIndex.load(path, 16, IndexParams(ef_search=300, exact_below=5)) is not None
    damaged = tmp_path / 'd.vidx'
    for data in (
        good[: len(good) // 2],
        good[:-1],
        good + b'\0',
        b'',
        b'not an index at all',
        good[:40] + bytes([good[40] ^ 0x10]) + good[41:],
        good[:-3000] + bytes([good[-3000] ^ 0x01]) + good[-2999:],
    ):
        damaged.write_bytes(data)
        assert VectorIndex.load(damaged, 16) is None
    (tmp_path / 'dir.vidx').mkdir()
    assert VectorIndex.load(tmp_path / 'dir.vidx', 16) is None


def test_save_replaces_the_file_atomically(tmp_path):
    index, _, ids, _, _ = _small(exact_below=0)
    path = tmp_path / 'v.vidx'
    index.save(path)
    index.remove(ids[:5])
    failing = mock.patch.object(vector_index.faiss, 'write_index', side_effect=RuntimeError('io'))
    with failing, pytest.raises(RuntimeError):
        index.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ['v.vidx']
    assert VectorIndex.load(path, 16).ids() == set(ids)


def test_exact_search_when_the_strided_sample_misleads():
    # Every 16th row scores high and the rest low, so a threshold taken from a strided
    # sample keeps fewer rows than asked for; the answer must still be exact.
    rows = 20_000
    angles = np.where(
        np.arange(rows) % 16 == 0, np.arange(rows) * 1e-5, 1.0 + np.arange(rows) * 1e-5
    )
    data = np.stack([np.cos(angles), np.sin(angles), np.zeros(rows), np.zeros(rows)], axis=1)
    ids = [f'a/{i}' for i in range(rows)]
    index = VectorIndex(4, IndexParams(exact_below=100_000))
    index.upsert(ids, ['a'] * rows, np.arange(rows), data)
    query = np.array([1.0, 0.0, 0.0, 0.0])
    for k in (5, 100, 1500):
        expected = _exact(_unit(data), query.astype(np.float32), np.arange(rows), k)
        assert [key for key, _ in index.search(query, k)] == [ids[row] for row in expected]


# -- sq8 codes ---------------------------------------------------------------------------


@pytest.fixture
def small_graphs(monkeypatch):
    """Let graphs of a few thousand rows be searched (an exact scan is cheaper there)."""
    monkeypatch.setattr(vector_index, '_EXACT_WHEN_EF_ABOVE', float('inf'))


@pytest.mark.parametrize('layout', ['runs', 'scattered'])
def test_a_long_exact_scan_shared_among_threads_finds_what_one_thread_finds(layout, monkeypatch):
    monkeypatch.setattr(vector_kernels, '_SPLIT_FROM_ROWS', 4096)
    monkeypatch.setattr(vector_kernels, '_SCAN_CHUNK', 2048)
    rows, dim = 30_000, 16
    rng = np.random.default_rng(7)
    data = _unit(rng.standard_normal((rows, dim)))
    if layout == 'runs':  # sessions recorded one after another
        sessions = [SESSIONS[i * 2 // rows] for i in range(rows)]
    else:  # two sessions written in turns
        sessions = [SESSIONS[i % 2] for i in range(rows)]
    indices = np.arange(rows)
    ids = _ids(sessions, indices)
    indexes = {}
    for threads in (1, 3):
        params = IndexParams(exact_below=10**6, vector_codes=FP32, scan_threads=threads)
        indexes[threads] = VectorIndex(dim, params)
        indexes[threads].upsert(ids, sessions, indices, data)
    shares = []

    def counted(jobs, helpers):
        shares.append(len(jobs))
        return shared_work.run_shared(jobs, helpers)

    with mock.patch.object(vector_kernels, 'run_shared', side_effect=counted):
        for query in _queries(data, 10, seed=8):
            for session in SESSIONS[:2]:
                one = indexes[1].search(query, 10, sessions=[session])
                shared = indexes[3].search(query, 10, sessions=[session])
                assert shared == one and len(one) == 10
                expected = _exact(data, query, np.flatnonzero(np.asarray(sessions) == session), 10)
                assert [ids[row] for row in expected] == [key for key, _ in one]
    assert set(shares) == {1, 3}  # one thread: one job; three: 15k rows in three shares


def test_shared_work_never_waits_for_a_busy_helper():
    """With the only helper thread held up, every job still runs, on the caller's thread."""
    release = threading.Event()
    pool = shared_work._helpers(1)
    blocker = pool.submit(release.wait, 30)
    try:
        ran = []
        callers = []
        jobs = [
            lambda n=n: (ran.append(n), callers.append(threading.current_thread()))
            for n in range(5)
        ]
        shared_work.run_shared(jobs, helpers=1)
        assert sorted(ran) == list(range(5))
        assert set(callers) == {threading.current_thread()}
    finally:
        release.set()
    assert blocker.result(timeout=10)


def test_shared_work_raises_a_job_error_after_the_others_ran():
    ran = []

    def bad():
        raise RuntimeError('broken job')

    jobs = [lambda: ran.append(1), bad, lambda: ran.append(3), lambda: ran.append(4)]
    with pytest.raises(RuntimeError, match='broken job'):
        shared_work.run_shared(jobs, helpers=2)
    assert sorted(ran) == [1, 3, 4]


def test_sq8_scans_exactly_until_there_are_rows_to_train_on(small_graphs):
    index, data, _, _, _ = _small(rows=900, exact_below=0)
    assert index.params.vector_codes == SQ8
    with _no_exact(), pytest.raises(AssertionError, match='exact search used'):
        index.search(data[0], 5)
    rng = np.random.default_rng(3)
    more = _unit(rng.standard_normal((300, 16)))
    index.upsert([f'x/{i}' for i in range(300)], ['x'] * 300, list(range(300)), more)
    with _no_exact():
        found = index.search(more[7], 3)
    assert found[0] == ('x/7', pytest.approx(1.0))


def test_sq8_scores_are_exact_cosines_after_reranking(small_graphs):
    index, data, ids, _, _ = _small(rows=3000, exact_below=0)
    query = _queries(data, 1, seed=11)[0]
    with _no_exact():
        found = index.search(query, 10)
    row_of = {key: row for row, key in enumerate(ids)}
    scores = np.array([score for _, score in found])
    np.testing.assert_allclose(scores, data[[row_of[key] for key, _ in found]] @ query, atol=1e-6)


def test_sq8_keeps_writes_after_a_save_and_saves_them_again(tmp_path):
    index, data, ids, _, _ = _small(rows=2000, exact_below=0)
    path = tmp_path / 'v.vidx'
    index.save(path)
    rng = np.random.default_rng(5)
    more = _unit(rng.standard_normal((50, 16)))
    new_ids = [f'y/{i}' for i in range(50)]
    index.upsert(new_ids, ['y'] * 50, list(range(50)), more)
    index.remove(ids[:20])
    assert index.search(more[3], 1) == [('y/3', pytest.approx(1.0))]
    assert index.search(data[0], 1)[0][0] != ids[0]
    index.save(tmp_path / 'w.vidx')
    path.unlink()  # the vectors saved first are still mapped; the file may go
    loaded = VectorIndex.load(tmp_path / 'w.vidx', 16, index.params)
    assert loaded.ids() == (set(ids[20:]) | set(new_ids))
    for query in (*more[:5], *data[20:25]):
        assert loaded.search(query, 5) == index.search(query, 5)


def test_saved_codes_must_match_to_load(tmp_path):
    for codes, other in ((SQ8, FP32), (FP32, PQ4), (PQ4, SQ8)):
        index, _, _, _, _ = _small(exact_below=0, vector_codes=codes)
        path = tmp_path / f'{codes}.vidx'
        index.save(path)
        assert VectorIndex.load(path, 16, IndexParams(vector_codes=codes)) is not None
        assert VectorIndex.load(path, 16, IndexParams(vector_codes=other)) is None


def test_sq8_rebuild_after_removals_keeps_recall(small_graphs):
    index, data, ids, _, _ = _small(rows=4000, exact_below=0)
    assert index.remove(ids[::2]) == 2000  # past the dead share: a rebuild
    kept = np.arange(1, 4000, 2)
    queries = _queries(data, 30, seed=12)
    with _no_exact():
        assert _recall(index, data, ids, queries, kept) >= 0.95


def test_a_full_disk_refuses_the_write_and_keeps_the_index(tmp_path):
    index = VectorIndex(16, IndexParams(vector_codes=SQ8), spill_dir=tmp_path)
    rng = np.random.default_rng(2)
    data = _unit(rng.standard_normal((10, 16)))
    index.upsert([f'a/{i}' for i in range(10)], ['a'] * 10, list(range(10)), data)
    more = _unit(rng.standard_normal((2000, 16)))
    full = OSError(28, 'No space left on device')
    no_space = mock.patch.object(vector_index.os, 'posix_fallocate', side_effect=full)
    with no_space, pytest.raises(OSError, match='No space'):
        index.upsert([f'b/{i}' for i in range(2000)], ['b'] * 2000, list(range(2000)), more)
    assert index.ids() == {f'a/{i}' for i in range(10)}
    assert index.search(data[4], 1) == [('a/4', pytest.approx(1.0))]
    assert list(tmp_path.iterdir()) == []  # the spill file has no name


# -- session codes -----------------------------------------------------------------------


@pytest.fixture
def coded_from_600(monkeypatch):
    """Sessions of more than 600 rows are searched by their codes when the candidates are
    at most half their rows (8192 rows and an eighth in service)."""
    monkeypatch.setattr(vector_index, '_CODED_FROM_ROWS', 600)
    monkeypatch.setattr(vector_index, '_CODED_CANDIDATE_SHARE', 2)


def _sessions_corpus(rows: int = 6000, dim: int = 64, **params):
    data, sessions, indices = _clustered(rows, dim, seed=21)
    ids = _ids(sessions, indices)
    index = VectorIndex(dim, IndexParams(exact_below=0, scan_shortlist=200, **params))
    for start in range(0, rows, 1000):
        stop = start + 1000
        index.upsert(ids[start:stop], sessions[start:stop], indices[start:stop], data[start:stop])
    return index, data, ids, np.asarray(sessions)


def _only_coded():
    """Fail if a search scans exactly or walks the graph instead of using session codes."""
    wrong = AssertionError('not searched by session codes')
    return mock.patch.multiple(
        VectorIndex,
        _search_exact=mock.Mock(side_effect=wrong),
        _search_graph=mock.Mock(side_effect=wrong),
    )


@pytest.mark.parametrize('codes', VECTOR_CODES)
def test_a_large_session_is_ranked_by_its_codes_with_exact_cosines(coded_from_600, codes):
    index, data, ids, sessions = _sessions_corpus(vector_codes=codes)
    row_of = {key: row for row, key in enumerate(ids)}
    queries = _queries(data, 40, seed=22)
    for session in ('alpha', 'bravo'):
        rows = np.flatnonzero(sessions == session)
        with _only_coded():
            assert _recall(index, data, ids, queries, rows, sessions=[session]) >= 0.95
            found = index.search(queries[0], 10, sessions=[session])
        assert {key.split('/')[0] for key, _ in found} == {session}
        scores = [score for _, score in found]
        expected = data[[row_of[key] for key, _ in found]] @ queries[0]
        np.testing.assert_allclose(scores, expected, atol=1e-6)


def test_sessions_too_small_for_codes_are_scanned_exactly(coded_from_600):
    index, data, ids, sessions = _sessions_corpus()
    query = _queries(data, 1, seed=23)[0]
    rows = np.flatnonzero(sessions == 'delta')  # 300 rows
    with mock.patch.object(VectorIndex, '_search_coded', side_effect=AssertionError('codes used')):
        found = index.search(query, 10, sessions=['delta'])
    assert [key for key, _ in found] == [ids[row] for row in _exact(data, query, rows, 10)]
    # So is everything when the shortlist is 0, and a search over an index range.
    index.params = IndexParams(exact_below=0, scan_shortlist=0)
    rows = np.flatnonzero(sessions == 'alpha')
    with mock.patch.object(VectorIndex, '_search_coded', side_effect=AssertionError('codes used')):
        found = index.search(query, 10, sessions=['alpha'])
    assert [key for key, _ in found] == [ids[row] for row in _exact(data, query, rows, 10)]


def test_dead_rows_of_a_coded_session_never_crowd_out_live_ones(coded_from_600):
    index, data, ids, sessions = _sessions_corpus()
    alpha = np.flatnonzero(sessions == 'alpha')
    # The best rows of alpha for the query die: they still hold codes and rank first.
    query = _queries(data, 1, seed=24)[0]
    best = _exact(data, query, alpha, 500)
    assert index.remove([ids[row] for row in best]) == 500  # below the rebuild share
    live = np.setdiff1d(alpha, best)
    with _only_coded():
        found = index.search(query, 10, sessions=['alpha'])
    assert [key for key, _ in found] == [ids[row] for row in _exact(data, query, live, 10)]
    # A replaced row's new vector is what the codes find.
    index.upsert([ids[live[5]]], ['alpha'], [0], -data[live[5]][None])
    with _only_coded():
        found = index.search(-data[live[5]], 1, sessions=['alpha'])
    assert found == [(ids[live[5]], pytest.approx(1.0))]


def test_rows_added_after_training_get_codes(coded_from_600):
    index, _, _, _ = _sessions_corpus()
    rng = np.random.default_rng(25)
    more = _unit(rng.standard_normal((700, 64)))
    index.upsert([f'echo/{i}' for i in range(700)], ['echo'] * 700, list(range(700)), more)
    with _only_coded():
        for row in (0, 350, 699):
            assert index.search(more[row], 1, sessions=['echo']) == [
                (f'echo/{row}', pytest.approx(1.0))
            ]
            found = index.search(more[row], 3, sessions=['echo', 'alpha'])
            assert found[0] == (f'echo/{row}', pytest.approx(1.0))


def test_session_codes_survive_save_load_and_rebuild(coded_from_600, tmp_path):
    index, data, ids, sessions = _sessions_corpus()
    path = tmp_path / 'v.vidx'
    index.save(path)
    loaded = VectorIndex.load(path, 64, index.params)
    queries = _queries(data, 10, seed=26)
    with _only_coded():
        for query in queries:
            assert loaded.search(query, 10, sessions=['bravo']) == index.search(
                query, 10, sessions=['bravo']
            )
    # A file saved before the codes existed loads and trains them.
    index._state.coded = None
    index.save(path)
    loaded = VectorIndex.load(path, 64, index.params)
    with _only_coded():
        found = loaded.search(queries[0], 10, sessions=['bravo'])
    rows = np.flatnonzero(sessions == 'bravo')
    assert _recall(loaded, data, ids, queries, rows, sessions=['bravo']) >= 0.95
    assert {key.split('/')[0] for key, _ in found} == {'bravo'}
    # A rebuild (past the dead share) lays sessions out anew and codes them again.
    assert loaded.remove(ids[::2]) == 3000
    kept = rows[1::2] if rows[0] % 2 == 0 else rows[::2]
    with _only_coded():
        assert _recall(loaded, data, ids, queries, kept, sessions=['bravo']) >= 0.95


def test_session_codes_that_do_not_fit_their_rows_are_refused():
    rng = np.random.default_rng(27)
    vectors = _unit(rng.standard_normal((1000, 16)))
    coded = SessionCodes.trained(vectors)
    coded.add(0, np.arange(0, 1000, 2), vectors[::2])
    coded.add(1, np.arange(1, 1000, 2), vectors[1::2])
    with pytest.raises(ValueError, match='must come after'):
        coded.add(0, np.array([4]), vectors[:1])
    written = io.BytesIO()
    coded.write(written.write)
    session_of_row = np.arange(1000, dtype=np.int32) % 2

    def read(session_of_row=session_of_row, sessions=2):
        return SessionCodes.read(io.BytesIO(written.getvalue()), 16, session_of_row, sessions)

    again = read()
    assert again.size(0) == again.size(1) == 500
    np.testing.assert_array_equal(
        again.candidates(1, vectors[7:8], 5), coded.candidates(1, vectors[7:8], 5)
    )
    with pytest.raises(ValueError, match='rows of session 0'):
        read(session_of_row=1 - session_of_row)
    with pytest.raises(ValueError, match='session code sizes'):
        read(session_of_row=session_of_row[:900])
    with pytest.raises(ValueError, match='more sessions'):
        read(sessions=1)
    with pytest.raises(ValueError, match='quantiser'):
        SessionCodes.read(io.BytesIO(written.getvalue()), 32, session_of_row, 2)


def test_a_failed_code_add_leaves_exact_scans_that_stay_right(coded_from_600, tmp_path):
    index, _, _, _ = _sessions_corpus()
    failing = mock.patch.object(SessionCodes, 'add', side_effect=MemoryError)
    more = _unit(np.random.default_rng(28).standard_normal((5, 64)))
    with failing:
        index.upsert([f'alpha/x{i}' for i in range(5)], ['alpha'] * 5, list(range(5)), more)
    assert index._state.coded is None
    assert index.search(more[2], 1, sessions=['alpha']) == [('alpha/x2', pytest.approx(1.0))]
    # Not retrained on every write (that takes seconds at a million rows), but on a load.
    index.upsert(['alpha/y'], ['alpha'], [9], more[:1])
    assert index._state.coded is None
    assert index.search(more[4], 1, sessions=['alpha'])[0][0] == 'alpha/x4'
    index.save(tmp_path / 'v.vidx')
    loaded = VectorIndex.load(tmp_path / 'v.vidx', 64, index.params)
    with _only_coded():
        assert loaded.search(more[4], 1, sessions=['alpha'])[0][0] == 'alpha/x4'


def test_pq4_holds_no_graph_and_answers_every_search_by_codes(coded_from_600, tmp_path):
    index, data, ids, sessions = _sessions_corpus(vector_codes=PQ4)
    assert index._state.graph is None and index._state.coded is not None
    queries = _queries(data, 40, seed=29)
    with _only_coded():
        assert _recall(index, data, ids, queries, np.arange(len(ids))) >= 0.95
        bravo = np.flatnonzero(sessions == 'bravo')
        assert _recall(index, data, ids, queries, bravo, sessions=['bravo']) >= 0.95
    index.save(tmp_path / 'v.vidx')
    loaded = VectorIndex.load(tmp_path / 'v.vidx', 64, index.params)
    assert loaded._state.graph is None
    with _only_coded():
        for query in queries[:5]:
            assert loaded.search(query, 10) == index.search(query, 10)
    # An index range keeps few rows of a session: scanned exactly.
    rows = np.flatnonzero((sessions == 'alpha') & (np.arange(len(ids)) < 40))
    found = loaded.search(queries[0], 5, sessions=['alpha'], index_range=(0, 39))
    assert [key for key, _ in found] == [ids[row] for row in _exact(data, queries[0], rows, 5)]


def test_wide_views_take_pq4_codes(tmp_path):
    assert IndexParams().codes_for(1152) == PQ4
    assert IndexParams().codes_for(384) == SQ8
    assert IndexParams(vector_codes=FP32, pq4_from_dim=512).codes_for(512) == PQ4
    assert IndexParams(pq4_from_dim=0).codes_for(4096) == SQ8
    with pytest.raises(ValueError):
        IndexParams(pq4_from_dim=-1)
    rng = np.random.default_rng(30)
    data = _unit(rng.standard_normal((1100, 1024)))
    index = VectorIndex(1024, IndexParams(exact_below=0))
    index.upsert([f'a/{i}' for i in range(1100)], ['a'] * 1100, list(range(1100)), data)
    assert index.codes == PQ4 and index._state.graph is None and index._state.coded is not None
    index.save(tmp_path / 'wide.vidx')
    assert VectorIndex.load(tmp_path / 'wide.vidx', 1024, IndexParams(exact_below=0)) is not None
    # Saved with pq4 codes: not loaded as an sq8 graph (rebuilt from the database instead).
    assert VectorIndex.load(tmp_path / 'wide.vidx', 1024, IndexParams(pq4_from_dim=0)) is None
