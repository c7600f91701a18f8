# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Search benchmark: latency and recall of every search mode at 10k, 100k and 1M entries.

Entries are synthetic but shaped like a robot's memory: 20 sessions recorded one after
another, a keyframe every 0.5 s along a random walk through a 100 x 60 m building, and
unit vectors of the real dimensions (384 MiniLM text, 1152 SigLIP-so400m image) that
cluster by place, consecutive keyframes showing the same place. Each query is timed alone,
after ingest and again while a writer thread adds entries at 5/s (as memory_node does while
recording), and compared with an exact numpy scan of the same data: its latency and the
index's recall@10 against it.

Up to 100k entries the full MemoryStore answers (Milvus Lite for storage, in-process
indexes for search; opening the store loads the indexes, which is timed), and Milvus
Lite's own search is timed on the same collections to show why searches run in process.
At 1M, VectorIndex and RecordTable are used directly: a Milvus Lite insert of 1M rows of
both views would take hours and about 20 GB of RAM.

The `server` backend runs the same queries through MemoryStore with
`search_backend='milvus'` on a local Milvus standalone server (the `milvus` package):
Milvus answers every vector search from its own indexes (HNSW by default, IVF with
`--server-index`), timed once they are built.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from waymark.benchmarks.common import (
    centres,
    cluster_labels,
    clustered_vectors,
    latency,
    mem_available_bytes,
    rss_bytes,
    table,
)
from waymark.benchmarks.milvus_server import SETTLE_S, server_for, wait_until_idle
from waymark.memory.entries import FrameRecord
from waymark.memory.retention import dir_bytes
from waymark.memory.storage.concurrent_load import load_concurrently
from waymark.memory.storage.index_params import HNSW, SERVER_INDEXES, SQ8, IndexParams
from waymark.memory.storage.record_table import RecordTable
from waymark.memory.storage.store import MemoryStore
from waymark.memory.storage.vector_index import VectorIndex
from waymark.memory.storage.view_index import IN_MILVUS

DIMS = {'text': 384, 'image': 1152}
SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (300, 1_200)
STORE_MAX = 100_000  # larger sizes use VectorIndex and RecordTable directly
QUICK_STORE_MAX = 500
SESSIONS = 20
K = 10
RANGE_RADIUS_M = 3.0
RANGE_K = 100
INDEX_SPAN = 200  # entries between two anchors (index_range mode)
WRITE_RATE_HZ = 5.0
QUERIES = 200
LARGE_QUERIES = 100  # at 1M, where each exact scan of 1152-d rows takes ~0.5 s
QUICK_QUERIES = 8
WARMUP_QUERIES = 3  # per mode and scope, untimed
MILVUS_QUERIES = 30
QUICK_MILVUS_QUERIES = 4
BACKENDS = ('store', 'server')
# The server backend's collections, apart from any memory on the same server.
BENCH_PREFIX = 'waymark_bench'
SERVER_STORE = {'prefix': BENCH_PREFIX, 'search_backend': IN_MILVUS}
INSERT_CHUNK = 4096
QUICK_SETTLE_S = 3.0  # a few hundred rows: segments settle in seconds
# Entries a process writes after the last index snapshot before it is killed.
CRASH_WRITES = 500
AREA_M = (100.0, 60.0)
STEP_M = 0.3
STEP_NS = 500_000_000
DAY_NS = 86_400 * 10**9
T0_NS = 1_750_000_000 * 10**9
TARGET_P50_MS = 10.0
TARGET_RECALL = 0.95
MEMORY_MARGIN = 3 << 30  # left free when deciding whether 1M x 1152 fits (+ upsert chunks)
VECTOR_MODES = ('text', 'image', 'index_range')
TABLE_MODES = ('time', 'position', 'range')


# -- data ----------------------------------------------------------------------------------


@dataclass
class Layout:
    """Who, when and where each synthetic entry is; rows are grouped by session."""

    sessions: list[str]
    starts: np.ndarray  # first row of each session, then the number of rows
    session_of: np.ndarray
    index_of: np.ndarray
    stamps: np.ndarray
    xyz: np.ndarray
    yaw: np.ndarray
    ids: list[str]

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, session: int) -> slice:
        return slice(int(self.starts[session]), int(self.starts[session + 1]))

    def record(self, row: int) -> FrameRecord:
        x, y, z = (float(v) for v in self.xyz[row])
        return FrameRecord(
            session=self.sessions[self.session_of[row]],
            index=int(self.index_of[row]),
            stamp_ns=int(self.stamps[row]),
            x=x,
            y=y,
            z=z,
            yaw=float(self.yaw[row]),
            map_epoch=0,
            pose_valid=True,
            image_ref='',
        )


def make_layout(count: int, rng: np.random.Generator) -> Layout:
    sessions = [f's{i:02d}' for i in range(SESSIONS)]
    starts = np.array([part[0] for part in np.array_split(np.arange(count), SESSIONS)] + [count])
    session_of = np.repeat(np.arange(SESSIONS, dtype=np.int16), np.diff(starts))
    index_of = np.arange(count) - starts[session_of]
    stamps = T0_NS + session_of.astype(np.int64) * DAY_NS + index_of.astype(np.int64) * STEP_NS
    heading = np.cumsum(rng.normal(0.0, 0.35, count))
    walk = np.stack([np.cumsum(STEP_M * np.cos(heading)), np.cumsum(STEP_M * np.sin(heading))], 1)
    area = np.asarray(AREA_M)
    folded = area - np.abs(np.mod(walk + area / 2, 2 * area) - area)  # bounce off the walls
    xyz = np.column_stack([folded, np.full(count, 0.5)])
    yaw = np.arctan2(np.sin(heading), np.cos(heading))
    pairs = zip(session_of.tolist(), index_of.tolist(), strict=True)
    ids = [f'{sessions[s]}/{i}' for s, i in pairs]
    return Layout(sessions, starts, session_of, index_of, stamps, xyz, yaw, ids)


@dataclass
class View:
    """One view's synthetic vectors and the places (clusters) they show."""

    name: str
    vectors: np.ndarray
    centres: np.ndarray
    labels: np.ndarray


def make_view(name: str, count: int, rng: np.random.Generator) -> View:
    labels, clusters = cluster_labels(count, rng)
    centre_rows = centres(clusters, DIMS[name], rng)
    return View(name, clustered_vectors(centre_rows, labels, rng), centre_rows, labels)


@dataclass(frozen=True)
class Query:
    mode: str
    scope: str  # 'all', 'session' or 'range' (an index range of one session)
    rows: slice  # the rows the query may return
    session: str | None = None
    vector: np.ndarray | None = None
    stamp: int = 0
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    first: int = 0
    last: int = 0


def make_queries(
    layout: Layout, views: dict[str, View], modes: Sequence[str], count: int, seed: int
) -> list[Query]:
    """`count` queries per mode and scope. Vector queries ask about a place seen in their
    scope (a fresh sample around it, not a stored vector)."""
    rng = np.random.default_rng(seed)
    queries = []
    per_session = int(np.diff(layout.starts).min())
    span = min(INDEX_SPAN, per_session)
    for mode in modes:
        scopes = ('range',) if mode == 'index_range' else ('all', 'session')
        for scope in scopes:
            for _ in range(count):
                session = int(rng.integers(SESSIONS))
                rows = slice(0, len(layout)) if scope == 'all' else layout.rows(session)
                name = None if scope == 'all' else layout.sessions[session]
                first = last = 0
                if scope == 'range':
                    first = int(rng.integers(per_session - span + 1))
                    last = first + span - 1
                    rows = slice(rows.start + first, rows.start + last + 1)
                row = int(rng.integers(rows.start, rows.stop))
                vector = None
                if mode in VECTOR_MODES:
                    view = views['text' if mode == 'index_range' else mode]
                    label = view.labels[row : row + 1]
                    vector = clustered_vectors(view.centres, label, rng)[0]
                x, y, z = layout.xyz[row] + np.array([*rng.normal(0.0, 1.0, 2), 0.0])
                stamp = int(layout.stamps[row]) + int(rng.integers(STEP_NS))
                queries.append(
                    Query(mode, scope, rows, name, vector, stamp, (x, y, z), first, last)
                )
    return queries


# -- the searchers -------------------------------------------------------------------------


class Exact:
    """numpy scans over the same data: the reference for recall and a latency baseline."""

    def __init__(self, layout: Layout, views: dict[str, View]) -> None:
        self.layout = layout
        self.vectors = {name: view.vectors for name, view in views.items()}

    def run(self, q: Query) -> list[str]:
        rows, layout = q.rows, self.layout
        if q.mode in VECTOR_MODES:
            vectors = self.vectors['text' if q.mode == 'index_range' else q.mode]
            order = _smallest(-(vectors[rows] @ q.vector), K)
        elif q.mode == 'time':
            stamps = layout.stamps[rows]
            after = np.flatnonzero(stamps >= q.stamp)
            order = after[_smallest(stamps[after], K)]
        elif q.mode == 'position':
            order = _smallest(((layout.xyz[rows] - q.xyz) ** 2).sum(axis=1), K)
        else:
            planar = ((layout.xyz[rows, :2] - q.xyz[:2]) ** 2).sum(axis=1)
            inside = np.flatnonzero(planar <= RANGE_RADIUS_M**2)
            order = inside[_smallest(planar[inside], RANGE_K)]
        return [layout.ids[rows.start + int(i)] for i in order]


def _smallest(values: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k smallest values, smallest first."""
    if values.size > k:
        part = np.argpartition(values, k)[:k]
        return part[np.argsort(values[part])]
    return np.argsort(values)


class StoreSearcher:
    """The full MemoryStore, as memory_node searches it."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def run(self, q: Query) -> list[str]:
        sessions = [q.session] if q.session else None
        store = self.store
        if q.mode in ('text', 'image'):
            hits = store.search_view(q.mode, q.vector, K, sessions)
        elif q.mode == 'index_range':
            hits = store.search_view('text', q.vector, K, sessions, index_range=(q.first, q.last))
        elif q.mode == 'time':
            hits = store.search_time(q.stamp, K, sessions)
        elif q.mode == 'position':
            hits = store.search_position(*q.xyz, K, sessions)
        else:
            hits = store.search_range(q.xyz[0], q.xyz[1], RANGE_RADIUS_M, sessions, RANGE_K)
        return [hit.record.id for hit in hits]

    def write(self, record: FrameRecord, vectors: dict[str, np.ndarray]) -> None:
        self.store.add(record, vectors)


class DirectSearcher:
    """VectorIndex and RecordTable without Milvus, one lock around them as in the store."""

    def __init__(self, records: RecordTable, indexes: dict[str, VectorIndex]) -> None:
        self.records = records
        self.indexes = indexes
        self.lock = threading.Lock()

    def run(self, q: Query) -> list[str]:
        sessions = [q.session] if q.session else None
        with self.lock:
            if q.mode in VECTOR_MODES:
                view = 'text' if q.mode == 'index_range' else q.mode
                span = (q.first, q.last) if q.mode == 'index_range' else None
                return [key for key, _ in self.indexes[view].search(q.vector, K, sessions, span)]
            if q.mode == 'time':
                found = self.records.chronological(q.stamp, 2**63 - 1, K, sessions)
                return [record.id for record in found]
            if q.mode == 'position':
                found = self.records.nearest(*q.xyz, K, sessions)
            else:
                found = self.records.within(q.xyz[0], q.xyz[1], RANGE_RADIUS_M, RANGE_K, sessions)
            return [record.id for record, _ in found]

    def write(self, record: FrameRecord, vectors: dict[str, np.ndarray]) -> None:
        with self.lock:
            self.records.upsert([record])
            for name, index in self.indexes.items():
                index.upsert([record.id], [record.session], [record.index], vectors[name][None])


class Writer:
    """Adds one new entry every 1/WRITE_RATE_HZ s on its own thread, as a recording does."""

    def __init__(self, searcher, views: Sequence[str], seed: int) -> None:
        self.searcher = searcher
        self.views = list(views)
        self.rng = np.random.default_rng(seed)
        self.written = 0
        self.seconds = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name='bench-writer', daemon=True)

    def __enter__(self) -> Writer:
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        self.seconds = time.perf_counter() - self._started

    def _run(self) -> None:
        due = time.perf_counter()
        while not self._stop.wait(max(0.0, due - time.perf_counter())):
            x, y = self.rng.uniform(0.0, 1.0, 2) * AREA_M
            record = FrameRecord(
                session='writer',
                index=self.written,
                stamp_ns=T0_NS + 30 * DAY_NS + self.written * STEP_NS,
                x=float(x),
                y=float(y),
                z=0.5,
                yaw=0.0,
                map_epoch=0,
                pose_valid=True,
                image_ref='',
            )
            vectors = {v: centres(1, DIMS[v], self.rng)[0] for v in self.views}
            self.searcher.write(record, vectors)
            self.written += 1
            due += 1.0 / WRITE_RATE_HZ


# -- measuring -----------------------------------------------------------------------------


def _timed(run: Callable[[Query], list[str]], queries: Sequence[Query]):
    seconds, found = [], []
    for q in queries:
        started = time.perf_counter()
        found.append(run(q))
        seconds.append(time.perf_counter() - started)
    return seconds, found


def _recall(found: Sequence[list[str]], truth: Sequence[list[str]]) -> float:
    pairs = zip(found, truth, strict=True)
    shares = [len(set(f) & set(t)) / len(t) if t else float(not f) for f, t in pairs]
    return float(np.mean(shares)) if shares else 1.0


def _groups(queries: Sequence[Query]) -> dict[tuple[str, str], list[Query]]:
    groups: dict[tuple[str, str], list[Query]] = {}
    for q in queries:
        groups.setdefault((q.mode, q.scope), []).append(q)
    return groups


def compare(searcher, exact: Exact, queries: Sequence[Query], views: Sequence[str]) -> list[dict]:
    """Each (mode, scope) timed after ingest against the exact scan, then while writing."""
    rows = []
    groups = _groups(queries)
    for group in groups.values():  # warm caches and let the build's worker threads idle
        for q in group[:WARMUP_QUERIES]:
            searcher.run(q)
            exact.run(q)
    for (mode, scope), group in groups.items():
        seconds, found = _timed(searcher.run, group)
        exact_seconds, truth = _timed(exact.run, group)
        stats, base = latency(seconds), latency(exact_seconds)
        rows.append(
            _row(mode, scope, 'idle', stats)
            | {
                'exact_p50_ms': base['p50_ms'],
                'exact_p95_ms': base['p95_ms'],
                'exact_over_index': base['p50_ms'] / max(stats['p50_ms'], 1e-6),
                'recall_at_10': _recall(found, truth),
            }
        )
    with Writer(searcher, views, seed=len(queries)) as writer:
        for (mode, scope), group in groups.items():
            seconds, _ = _timed(searcher.run, group)
            rows.append(_row(mode, scope, 'writing', latency(seconds)))
    for row in rows:
        if row['phase'] == 'writing':
            row['writes'] = writer.written
            row['write_rate_per_s'] = writer.written / writer.seconds if writer.seconds else 0.0
    return rows


def _row(mode: str, scope: str, phase: str, stats: dict) -> dict:
    dim = DIMS['text' if mode == 'index_range' else mode] if mode in VECTOR_MODES else None
    return {'mode': mode, 'dim': dim, 'scope': scope, 'phase': phase} | {
        key: stats[key] for key in ('n', 'p50_ms', 'p95_ms', 'mean_ms')
    }


# -- one size ------------------------------------------------------------------------------


def _memory_of(count: int, queries_per: int) -> tuple[Layout, dict[str, View], list, Exact]:
    """The entries of one size (the same for every backend: seeded by the size), queries
    of every mode and the exact scan that answers them."""
    rng = np.random.default_rng(count)
    layout = make_layout(count, rng)
    views = {name: make_view(name, count, rng) for name in DIMS}
    queries = make_queries(layout, views, [*DIMS, *TABLE_MODES, 'index_range'], queries_per, 1)
    return layout, views, queries, Exact(layout, views)


def _insert(store: MemoryStore, layout: Layout, views: dict[str, View]) -> float:
    """Store every entry in chunks; returns the seconds it took."""
    started = time.perf_counter()
    for start in range(0, len(layout), INSERT_CHUNK):
        part = range(start, min(start + INSERT_CHUNK, len(layout)))
        store.add_many(
            [layout.record(i) for i in part],
            [{name: views[name].vectors[i] for name in DIMS} for i in part],
        )
    return time.perf_counter() - started


def _through_store(count: int, queries_per: int, milvus_queries: int) -> dict:
    layout, views, queries, exact = _memory_of(count, queries_per)
    result: dict = {'entries': count, 'backend': 'MemoryStore (Milvus Lite + in-process indexes)'}
    with tempfile.TemporaryDirectory(prefix='waymark-bench-search-') as tmp:
        db = str(Path(tmp) / 'memory.db')
        with MemoryStore(db, DIMS) as store:
            result['insert_s'] = _insert(store, layout, views)
        result['insert_rows_per_s'] = count / result['insert_s']
        started = time.perf_counter()
        with MemoryStore(db, DIMS) as store:
            result['open_s'] = time.perf_counter() - started
            result['load_s'] = store.load_report.seconds
            result['results'] = compare(StoreSearcher(store), exact, queries, list(DIMS))
        result['milvus'] = _milvus(db, layout, queries, exact, milvus_queries)
        result['db_bytes'] = dir_bytes(Path(db))['bytes']
        result['crash'] = _reopen_after_crash(db)
    return result


def _reopen_after_crash(db: str) -> dict:
    """Open times after a process wrote CRASH_WRITES entries and died: from the index
    snapshot plus its journal, then (the snapshot removed) rebuilding every index."""
    script = (
        'import os, numpy as np\n'
        'from waymark.benchmarks.search import CRASH_WRITES, DIMS\n'
        'from waymark.memory.entries import FrameRecord\n'
        'from waymark.memory.storage.store import MemoryStore\n'
        f'store = MemoryStore({db!r}, DIMS)\n'
        'rng = np.random.default_rng(0)\n'
        'for i in range(CRASH_WRITES):\n'
        '    store.add(FrameRecord("crashed", i, i, 0, 0, 0, 0, 0, True, ""),\n'
        '              {name: rng.standard_normal(dim) for name, dim in DIMS.items()})\n'
        'os._exit(0)\n'
    )
    subprocess.run([sys.executable, '-c', script], check=True, timeout=3600)
    result = {'writes': CRASH_WRITES}
    started = time.perf_counter()
    with MemoryStore(db, DIMS) as store:
        result['snapshot_open_s'] = time.perf_counter() - started
        result['snapshot_load_s'] = store.load_report.seconds
        result['caught_up'] = store.load_report.caught_up
    shutil.rmtree(f'{db}.indexes')
    started = time.perf_counter()
    with MemoryStore(db, DIMS) as store:
        result['rebuild_open_s'] = time.perf_counter() - started
        result['rebuild_load_s'] = store.load_report.seconds
    return result


def _through_server(
    count: int,
    queries_per: int,
    server_uri: str = '',
    server_index: str = HNSW,
    nprobes: Sequence[int] = (),
    settle_s: float = SETTLE_S,
) -> list[dict]:
    """MemoryStore searching in a Milvus server: insert, wait for the server to settle
    (indexes built, no compaction for `settle_s`), reopen, compare.

    Starts a local server unless `server_uri` names one (whose disk use is then not
    reported: the server's files are not here). `server_index`: the views' vector index.
    `nprobes` (IVF indexes): the searches are timed once per value on the same build, so
    the trade of speed against recall shows side by side; the default setting otherwise.
    One result per timing, each with the build's figures."""
    layout, views, queries, exact = _memory_of(count, queries_per)
    build: dict = {'entries': count, 'server_index': server_index}
    build_params = IndexParams(server_index=server_index)
    options = {**SERVER_STORE, 'index_params': build_params}
    timed = []
    with contextlib.ExitStack() as stack:
        base = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix='waymark-bench-')))
        server_uri = server_for(stack, base, server_uri, BENCH_PREFIX)
        with MemoryStore(server_uri, DIMS, **options) as store:
            build['insert_s'] = _insert(store, layout, views)
            store.flush()
            settled = wait_until_idle(
                server_uri,
                [f'{BENCH_PREFIX}_view_{name}' for name in DIMS],
                settle_s=settle_s,
            )
            build['index_s'] = settled.indexed_s
            build['settle_s'] = settled.seconds
            build['settled'] = settled.line()
            print(f'[search, {count:,} entries on the server] {settled.line()}', flush=True)
        build['insert_rows_per_s'] = count / build['insert_s']
        if (base / 'milvus').is_dir():
            build['db_bytes'] = dir_bytes(base / 'milvus')['bytes']
        for nprobe in nprobes or [None]:
            params = build_params
            label = server_index
            if nprobe is not None:
                params = dataclasses.replace(build_params, ivf_nprobe=int(nprobe))
                label = f'{server_index}, nprobe {nprobe}'
            result = {**build, 'backend': f'MemoryStore searching in a Milvus server ({label})'}
            before = rss_bytes()
            started = time.perf_counter()
            with MemoryStore(server_uri, DIMS, **{**options, 'index_params': params}) as store:
                result['open_s'] = time.perf_counter() - started
                result['load_s'] = store.load_report.seconds
                result['open_rss_bytes'] = rss_bytes() - before
                result['results'] = compare(StoreSearcher(store), exact, queries, list(DIMS))
            timed.append(result)
    return timed


def _milvus(db: str, layout: Layout, queries: Sequence[Query], exact: Exact, count: int):
    """Milvus Lite answering the same vector queries on the store's own collections."""
    from milvus_lite.server_manager import server_manager_instance
    from pymilvus import MilvusClient

    rows = []
    client = MilvusClient(db)
    try:
        for (mode, scope), group in _groups(queries).items():
            if mode not in DIMS:
                continue
            group = group[:count]
            collection = f'waymark_view_{mode}'
            client.load_collection(collection)

            def search(q: Query, collection: str = collection) -> list[str]:
                found = client.search(
                    collection,
                    data=[q.vector.tolist()],
                    limit=K,
                    filter=f'session == {json.dumps(q.session)}' if q.session else '',
                    anns_field='vector',
                    search_params={'metric_type': 'COSINE'},
                )
                return [hit['id'] for hit in found[0]]

            search(group[0])
            seconds, found = _timed(search, group)
            _, truth = _timed(exact.run, group)
            rows.append(
                _row(mode, scope, 'idle', latency(seconds))
                | {'recall_at_10': _recall(found, truth)}
            )
    finally:
        client.close()
        server_manager_instance.release_server(str(Path(db).resolve()))
    return rows


def _direct(count: int, queries_per: int, params: IndexParams) -> dict:
    """VectorIndex and RecordTable alone: text view first, then the image view if it fits."""
    rng = np.random.default_rng(count)
    layout = make_layout(count, rng)
    result: dict = {
        'entries': count,
        'backend': 'VectorIndex + RecordTable directly (no Milvus)',
        'results': [],
        'builds': {},
    }
    records = RecordTable()
    started = time.perf_counter()
    for start in range(0, count, 65536):
        records.upsert([layout.record(i) for i in range(start, min(start + 65536, count))])
    result['builds']['records'] = {'seconds': time.perf_counter() - started}
    saves = Path(tempfile.mkdtemp(prefix='waymark-bench-snapshot-'))
    result['snapshot'] = {}
    result['snapshot']['records'], _ = _save_and_load(records, RecordTable.load, saves / 'records')
    per_row = 1024  # index bytes per row besides its vector (links, id): measured on text
    for name, dim in DIMS.items():
        raw = count * dim * 4
        needed = 2 * raw + count * per_row + MEMORY_MARGIN  # vectors here, the index's copy
        available = mem_available_bytes()
        if name != 'text' and needed > available:
            result['builds'][name] = {
                'skipped': f'needs about {needed / 2**30:.1f} GiB, {available / 2**30:.1f} GiB free'
            }
            continue
        view = make_view(name, count, rng)
        gc.collect()
        rss = rss_bytes()
        index = VectorIndex(dim, params, spill_dir=saves)
        started = time.perf_counter()
        for start in range(0, count, 65536):
            part = slice(start, min(start + 65536, count))
            index.upsert(
                layout.ids[part],
                [layout.sessions[s] for s in layout.session_of[part].tolist()],
                layout.index_of[part].tolist(),
                view.vectors[part],
            )
        build_s = time.perf_counter() - started
        grown = rss_bytes() - rss
        per_row = max(per_row, grown // count - dim * 4)
        result['builds'][name] = {
            'dim': dim,
            'codes': index.codes,
            'seconds': build_s,
            'rows_per_s': count / build_s,
            'index_rss_bytes': grown,
        }
        # Searched as memory_node searches after a restart: the index loaded from its file.
        load = functools.partial(VectorIndex.load, dim=dim, params=params, spill_dir=saves)
        result['snapshot'][name], index = _save_and_load(index, load, saves / f'{name}.vindex')
        modes = [name, *TABLE_MODES, 'index_range'] if name == 'text' else [name]
        queries = make_queries(layout, {name: view}, modes, queries_per, 2)
        searcher = DirectSearcher(records, {name: index})
        result['results'] += compare(searcher, Exact(layout, {name: view}), queries, [name])
        result['snapshot'][name]['searched_file_rss_bytes'] = rss_bytes('RssFile') - result[
            'snapshot'
        ][name].pop('file_rss_before')
        del view, searcher, queries, index
        gc.collect()
    # An open loads the files side by side, as MemoryStore does.
    jobs = {'records': functools.partial(RecordTable.load, saves / 'records')}
    for name, dim in DIMS.items():
        if (saves / f'{name}.vindex').exists():
            jobs[name] = functools.partial(
                VectorIndex.load, saves / f'{name}.vindex', dim, params, saves
            )
    started = time.perf_counter()
    loaded = load_concurrently(jobs)
    result['concurrent_load_s'] = time.perf_counter() - started
    if any(part is None for part in loaded.values()):
        raise RuntimeError('a snapshot file did not load back')
    del loaded
    shutil.rmtree(saves, ignore_errors=True)
    return result


def _save_and_load(saved, load: Callable, path: Path) -> tuple[dict, object]:
    """Save a table or index as an open's snapshot does and load it back in its place
    (what an open at this size spends on it): seconds each way, the file's size, and the
    memory the loaded copy holds, anonymous (its own) and file pages mapped.

    Returns the figures and the loaded copy.
    """
    started = time.perf_counter()
    saved.save(path)
    save_s = time.perf_counter() - started
    entries = len(saved)
    del saved
    gc.collect()
    anon, mapped = rss_bytes('RssAnon'), rss_bytes('RssFile')
    started = time.perf_counter()
    loaded = load(path)
    load_s = time.perf_counter() - started
    if loaded is None or len(loaded) != entries:
        raise RuntimeError(f'{path.name} did not load back whole')
    size = path.stat().st_size
    figures = {
        'save_s': save_s,
        'load_s': load_s,
        'bytes': size,
        'anon_rss_bytes': rss_bytes('RssAnon') - anon,
        'file_rss_before': mapped,
    }
    return figures, loaded


# -- the benchmark -------------------------------------------------------------------------


def run(
    quick: bool = False,
    sizes: Sequence[int] | None = None,
    backends: Sequence[str] = ('store',),
    server_uri: str = '',
    server_index: str = HNSW,
    vector_codes: str = SQ8,
    server_nprobes: Sequence[int] = (),
) -> dict:
    """`backends`: 'store' (in-process search; the direct indexes above 100k, with
    `vector_codes`) and 'server' (Milvus answers, at every size: a local server, or the
    one at `server_uri`, in collections of their own, `waymark_bench_*`, dropped before
    and after, indexed with `server_index`, timed once per IVF `server_nprobes` value)."""
    if server_index not in SERVER_INDEXES:
        raise ValueError(f'server_index must be one of {SERVER_INDEXES}, got {server_index!r}')
    if server_nprobes and (server_index == HNSW or min(server_nprobes) < 1):
        raise ValueError('server_nprobes must be >= 1, for IVF server indexes, not HNSW')
    started = time.perf_counter()
    unknown = set(backends) - set(BACKENDS)
    if unknown or not backends:
        raise ValueError(f'backends must be some of {BACKENDS}, got {list(backends)}')
    sizes = list(sizes or (QUICK_SIZES if quick else SIZES))
    store_max = QUICK_STORE_MAX if quick else STORE_MAX
    results = []
    for count in sizes:
        if count < SESSIONS:
            raise ValueError(f'sizes must be at least {SESSIONS} (one entry per session)')
        if 'server' in backends:
            size_started = time.perf_counter()
            queries = QUICK_MILVUS_QUERIES if quick else MILVUS_QUERIES
            settle_s = QUICK_SETTLE_S if quick else SETTLE_S
            timed = _through_server(
                count, queries, server_uri, server_index, server_nprobes, settle_s
            )
            for result in timed:
                result['seconds'] = time.perf_counter() - size_started
            results.extend(timed)
            gc.collect()
        if 'store' not in backends:
            continue
        size_started = time.perf_counter()
        if count <= store_max:
            queries = QUICK_QUERIES if quick else QUERIES
            milvus = QUICK_MILVUS_QUERIES if quick else MILVUS_QUERIES
            result = _through_store(count, queries, milvus)
        else:
            result = _direct(
                count,
                QUICK_QUERIES if quick else LARGE_QUERIES,
                IndexParams(vector_codes=vector_codes),
            )
        result['seconds'] = time.perf_counter() - size_started
        results.append(result)
        gc.collect()
    return {
        'benchmark': 'search',
        'quick': quick,
        'settings': {
            'dims': DIMS,
            'sessions': SESSIONS,
            'k': K,
            'range_radius_m': RANGE_RADIUS_M,
            'range_k': RANGE_K,
            'index_span': INDEX_SPAN,
            'write_rate_hz': WRITE_RATE_HZ,
            'store_max_entries': store_max,
            'index_params': _params(),
            'direct_vector_codes': vector_codes,
            'vectors': 'unit, clustered by place: ~200 entries per place, runs of ~20 '
            'consecutive entries, cosine ~0.7 to the place centre',
        },
        'sizes': results,
        'targets': _targets(results),
        'seconds': time.perf_counter() - started,
        'notes': [
            'At 1M entries VectorIndex and RecordTable are timed directly: inserting 1M rows of '
            'both views into Milvus Lite would take hours and about 20 GB of RAM.',
            'Time, position and range searches are exact (RecordTable); their recall checks '
            'agreement with the numpy scan.',
            'The writing phase reports latency only (the writer adds entries the exact scan '
            'does not have).',
        ],
    }


def _params() -> dict:
    params = IndexParams()
    return dataclasses.asdict(params) if dataclasses.is_dataclass(params) else vars(params)


def _targets(results: list[dict]) -> dict:
    """The search p50 target at the largest size up to 100k, recall at every size."""
    idle = [
        (size['entries'], row)
        for size in results
        for row in size['results']
        if row['phase'] == 'idle' and row['mode'] in VECTOR_MODES and 'index_s' not in size
    ]
    small = [entries for entries, _ in idle if entries <= STORE_MAX]
    at = max(small) if small else None
    p50 = max((row['p50_ms'] for entries, row in idle if entries == at), default=None)
    recall = min((row['recall_at_10'] for _, row in idle), default=None)
    return {
        'p50_ms': {
            'target': TARGET_P50_MS,
            'entries': at,
            'worst': p50,
            'met': None if p50 is None else p50 <= TARGET_P50_MS,  # None: no size <= 100k
        },
        'recall_at_10': {
            'target': TARGET_RECALL,
            'worst': recall,
            'met': None if recall is None else recall >= TARGET_RECALL,
        },
    }


def render(result: dict) -> str:
    parts = []
    for size in result['sizes']:
        rows = [
            [
                r['mode'],
                r['dim'],
                r['scope'],
                r['phase'],
                r['p50_ms'],
                r['p95_ms'],
                r.get('exact_p50_ms'),
                r.get('exact_over_index'),
                r.get('recall_at_10'),
            ]
            for r in size['results']
        ]
        title = f'Search, {size["entries"]:,} entries: {size["backend"]} (ms)'
        headers = ['mode', 'dim', 'scope', 'phase', 'p50', 'p95', 'exact p50', 'speed-up']
        headers.append('recall@10')
        parts.append(table(title, headers, rows))
        if 'index_s' in size:
            parts.append(
                f'insert {size["insert_s"]:.1f} s ({size["insert_rows_per_s"]:.0f} rows/s), '
                f'{size.get("server_index", HNSW)} indexes ready {_fmt(size["index_s"])} s '
                f'later, the server idle after {size["settle_s"]:.0f} s; '
                f'open {size["open_s"]:.1f} s '
                f'(+{size["open_rss_bytes"] / 2**20:.0f} MiB RSS)'
                + (
                    f'; server data directory {size["db_bytes"] / 2**20:.0f} MiB '
                    f'({size["db_bytes"] / size["entries"]:.0f} bytes per entry)'
                    if 'db_bytes' in size
                    else ''
                )
            )
        elif 'insert_s' in size:
            parts.append(
                f'insert {size["insert_s"]:.1f} s ({size["insert_rows_per_s"]:.0f} rows/s); '
                f'open {size["open_s"]:.1f} s, of which loading the indexes {size["load_s"]:.1f} s'
                '; Milvus Lite directory '
                f'{size["db_bytes"] / 2**20:.0f} MiB'
            )
        if 'crash' in size:
            crash = size['crash']
            parts.append(
                f'open after a crash that left {crash["writes"]} entries past the index snapshot: '
                f'{crash["snapshot_open_s"]:.1f} s from the snapshot ({crash["caught_up"]} ids '
                f'refetched), {crash["rebuild_open_s"]:.1f} s rebuilding every index '
                f'({crash["rebuild_open_s"] / crash["snapshot_open_s"]:.1f}x)'
            )
        if size.get('milvus'):
            parts.append(
                table(
                    f'Milvus Lite search on the same collections, {size["entries"]:,} entries (ms)',
                    ['mode', 'dim', 'scope', 'p50', 'p95', 'recall@10'],
                    [
                        [
                            r['mode'],
                            r['dim'],
                            r['scope'],
                            r['p50_ms'],
                            r['p95_ms'],
                            r['recall_at_10'],
                        ]
                        for r in size['milvus']
                    ],
                )
            )
        for name, build in size.get('builds', {}).items():
            if 'skipped' in build:
                parts.append(f'{name}: skipped, {build["skipped"]}')
            elif 'dim' in build:
                parts.append(
                    f'{name} index ({build["dim"]}-d, {build.get("codes", "sq8")} codes): '
                    f'built in {build["seconds"]:.1f} s '
                    f'({build["rows_per_s"]:.0f} rows/s), '
                    f'{build["index_rss_bytes"] / 2**20:.0f} MiB resident while building'
                )
            else:
                parts.append(f'{name}: filled in {build["seconds"]:.1f} s')
        if size.get('snapshot'):
            saved = size['snapshot']
            parts.append(
                'snapshot (what an open loads): '
                + ', '.join(
                    f'{name} {part["bytes"] / 2**20:.0f} MiB saved in {part["save_s"]:.1f} s, '
                    f'loaded in {part["load_s"]:.1f} s'
                    for name, part in saved.items()
                )
                + f'; loading all {sum(part["load_s"] for part in saved.values()):.1f} s'
                + (
                    f' one after another, {size["concurrent_load_s"]:.1f} s side by side'
                    if 'concurrent_load_s' in size
                    else ''
                )
            )
            parts.append(
                'memory once loaded (anonymous; + mapped file pages read by the searches): '
                + ', '.join(
                    f'{name} {part["anon_rss_bytes"] / 2**20:.0f} MiB'
                    + (
                        f' + {part["searched_file_rss_bytes"] / 2**20:.0f} MiB'
                        if 'searched_file_rss_bytes' in part
                        else ''
                    )
                    for name, part in saved.items()
                )
                + f'; all {sum(part["anon_rss_bytes"] for part in saved.values()) / 2**20:.0f} MiB'
                ' anonymous'
            )
        parts.append(f'({size["seconds"]:.0f} s)\n')
    targets = result['targets']
    p50, recall = targets['p50_ms'], targets['recall_at_10']
    parts.append(
        f'Targets: vector search p50 <= {p50["target"]:g} ms at {p50["entries"]} entries: '
        f'worst {_fmt(p50["worst"])} ms, {_verdict(p50["met"])}; recall@10 >= '
        f'{recall["target"]:g}: worst {_fmt(recall["worst"])}, {_verdict(recall["met"])}'
    )
    parts.append('\n'.join(f'- {note}' for note in result['notes']))
    return '\n'.join(parts) + '\n'


def _verdict(met: bool | None) -> str:
    return 'not measured' if met is None else 'met' if met else 'NOT met'


def _fmt(value: float | None) -> str:
    return '-' if value is None else f'{value:.3g}'
