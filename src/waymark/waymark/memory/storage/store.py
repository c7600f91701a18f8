# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Memory entries kept durably in Milvus and searched through in-process indexes.

Three levels of entries (frames, segments, the rows of named places), each with a records
collection (time, pose, text as scalars) and one collection per embedding view keyed by the
entry id: a view row exists only where the view has content, and a view can be added later
(captions arrive after their segment) without touching the records.

Milvus is the source of truth; every write goes there first. Searches are answered by a
RecordTable and one VectorIndex per view, filled from Milvus when the store opens and
updated on each write. Milvus Lite 3.2 scans every row in Python on each query (60 ms at
100k rows whatever the index), and memory_node is the only writer, so in-process indexes
are both correct and an order of magnitude faster. `uri` is a path ending in `.db` (Milvus
Lite, embedded, one process per database) or a server address (`http://host:19530`).

With `search_backend='milvus'` the vector searches go to Milvus instead (ServerViewIndex):
memory_node then holds no vectors, opens without reading them, and sees what other writers
to the same server stored. With 'auto' Milvus answers too, but the sessions this process
is writing, up to `hot_rows` rows, are also searched in process (HybridViewIndex). Records
(time, pose, text) stay mirrored in process either way.
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pymilvus import DataType, MilvusClient, MilvusException

from waymark.memory.entries import (
    FRAME,
    LEVELS,
    PLACE,
    SEGMENT,
    FrameRecord,
    Hit,
    is_session_name,
)
from waymark.memory.retention import dir_bytes
from waymark.memory.storage import sighting_codec
from waymark.memory.storage.concurrent_load import load_concurrently
from waymark.memory.storage.hybrid_index import DEFAULT_HOT_ROWS, HybridViewIndex
from waymark.memory.storage.record_table import RecordTable, SessionSummary
from waymark.memory.storage.scan import READ_BATCH, scan_collection
from waymark.memory.storage.server_index import ServerViewIndex
from waymark.memory.storage.session_owners import ROBOT_MAX_BYTES, SessionOwners, check_robot_id
from waymark.memory.storage.snapshot import Change, Saved, SnapshotDir, group_changes
from waymark.memory.storage.vector_index import HNSW, SCANN, IndexParams, VectorIndex

DEFAULT_MAX_K = 1000
ID_MAX_BYTES = 96
SESSION_MAX_BYTES = 64
IMAGE_REF_MAX_BYTES = 256
TEXT_MAX_BYTES = 2048
# A sighting's JSON: a camera model (~100 bytes), 16 text boxes (~60 each) and a 16x12
# depth grid (~6 bytes a cell) fit; a larger one is trimmed (see sighting_codec).
SIGHTING_MAX_BYTES = 4096
SIGHTING_FIELD = 'sighting'
WRITE_BATCH = 256
# Ids written between two saves of the in-process indexes: what an open after a crash
# refetches from Milvus at most (about 1 h of keyframes at 5/s).
DEFAULT_SNAPSHOT_EVERY = 20_000
# Where vector searches run: in memory_node over indexes mirrored from Milvus, or in
# Milvus itself (each view collection then carries the `index.server_index` index).
IN_PROCESS = 'in_process'
IN_MILVUS = 'milvus'
# Milvus answers, but the sessions being written are also searched in process (hybrid_index).
AUTO = 'auto'
SEARCH_BACKENDS = (IN_PROCESS, IN_MILVUS, AUTO)
_LOG = logging.getLogger(__name__)

_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]{0,63}')
_RECORD_FIELDS = (
    'session',
    'idx',
    'stamp_ns',
    'end_ns',
    'x',
    'y',
    'z',
    'yaw',
    'map_epoch',
    'pose_valid',
    'image_ref',
    'text',
    'text_size',
    SIGHTING_FIELD,
)


class MemoryStoreError(RuntimeError):
    """The memory database cannot be used as asked."""


class MemoryStoreLockedError(MemoryStoreError):
    """Another process has the Milvus Lite database open."""


class MemoryStoreSchemaError(MemoryStoreError):
    """An existing collection does not match the schema this store expects."""


@dataclass(frozen=True)
class FieldSpec:
    """One field of a collection: what `ensure_collection` creates or checks."""

    name: str
    dtype: DataType
    params: dict = field(default_factory=dict)
    primary: bool = False
    partition_key: bool = False


def _session_field(partition_key: bool) -> FieldSpec:
    return FieldSpec(
        'session', DataType.VARCHAR, {'max_length': SESSION_MAX_BYTES}, partition_key=partition_key
    )


def _records_fields(partition_key: bool = True) -> list[FieldSpec]:
    return [
        FieldSpec('id', DataType.VARCHAR, {'max_length': ID_MAX_BYTES}, primary=True),
        _session_field(partition_key),
        FieldSpec('idx', DataType.INT64),
        FieldSpec('stamp_ns', DataType.INT64),
        FieldSpec('end_ns', DataType.INT64),
        # Doubles, so a record reads back exactly as it was written.
        FieldSpec('x', DataType.DOUBLE),
        FieldSpec('y', DataType.DOUBLE),
        FieldSpec('z', DataType.DOUBLE),
        FieldSpec('yaw', DataType.DOUBLE),
        FieldSpec('map_epoch', DataType.INT64),
        FieldSpec('pose_valid', DataType.BOOL),
        FieldSpec('image_ref', DataType.VARCHAR, {'max_length': IMAGE_REF_MAX_BYTES}),
        FieldSpec('text', DataType.VARCHAR, {'max_length': TEXT_MAX_BYTES}),
        FieldSpec('text_size', DataType.DOUBLE),
        # What target localisation needs (camera, text boxes, depth samples) as JSON; ''
        # for none. Added to databases made before it when they are opened.
        FieldSpec(SIGHTING_FIELD, DataType.VARCHAR, {'max_length': SIGHTING_MAX_BYTES}),
        # Milvus requires a vector field in every collection; the planar position is the
        # natural one and lets a Milvus server answer range queries on its own.
        FieldSpec('planar', DataType.FLOAT_VECTOR, {'dim': 2}),
    ]


def _owner_fields() -> list[FieldSpec]:
    """One row per session: the robot that owns it (session_owners)."""
    return [
        FieldSpec('id', DataType.VARCHAR, {'max_length': SESSION_MAX_BYTES}, primary=True),
        FieldSpec('robot', DataType.VARCHAR, {'max_length': ROBOT_MAX_BYTES}),
        FieldSpec('claimed_ns', DataType.INT64),
        FieldSpec('planar', DataType.FLOAT_VECTOR, {'dim': 2}),  # Milvus needs a vector
    ]


def _view_fields(dim: int, partition_key: bool = True) -> list[FieldSpec]:
    return [
        FieldSpec('id', DataType.VARCHAR, {'max_length': ID_MAX_BYTES}, primary=True),
        _session_field(partition_key),
        FieldSpec('idx', DataType.INT64),
        FieldSpec('vector', DataType.FLOAT_VECTOR, {'dim': dim}),
        # The text the vector was made from, where it is not the record's (captions).
        FieldSpec('text', DataType.VARCHAR, {'max_length': TEXT_MAX_BYTES}),
    ]


def clip_utf8(text: str, max_bytes: int) -> str:
    """Cut text to at most max_bytes of UTF-8 (Milvus counts VARCHAR length in bytes)."""
    data = text.encode('utf-8')
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode('utf-8', errors='ignore')


@dataclass(frozen=True)
class ViewRow:
    """One view's vector for an entry, and the text it was made from when that text is
    not the entry's own (a caption)."""

    vector: np.ndarray
    text: str = ''


@dataclass
class LoadReport:
    """What opening the store found in Milvus: entries per level and per view, and how
    long filling the in-process indexes took."""

    entries: dict[str, int] = field(default_factory=dict)
    views: dict[str, int] = field(default_factory=dict)
    # Record tables (`level/records`) and view indexes (`level/view`) loaded from the
    # last snapshot instead of refilled from Milvus.
    loaded: list[str] = field(default_factory=list)
    # Ids written after the snapshot (journaled) and refetched from Milvus.
    caught_up: int = 0
    # Tables and indexes whose snapshot did not match Milvus after catching up (refilled).
    rebuilt: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class _Level:
    records: str
    views: dict[str, str]
    dims: dict[str, int]
    table: RecordTable
    indexes: dict[str, VectorIndex | ServerViewIndex | HybridViewIndex]


def _locked(method: Callable) -> Callable:
    """Run a reading method under the store's local lock (see __init__)."""

    @functools.wraps(method)
    def locked(self: MemoryStore, *args, **kwargs):
        with self._local_lock:
            return method(self, *args, **kwargs)

    return locked


class MemoryStore:
    """Frames and segments, their embedding views, and the searches over them."""

    def __init__(
        self,
        uri: str,
        views: Mapping[str, int],
        prefix: str = 'waymark',
        max_k: int = DEFAULT_MAX_K,
        token: str = '',
        segment_views: Mapping[str, int] | None = None,
        index_params: IndexParams | None = None,
        index_dir: str | os.PathLike | None = None,
        place_views: Mapping[str, int] | None = None,
        search_backend: str = IN_PROCESS,
        snapshot_every: int = DEFAULT_SNAPSHOT_EVERY,
        robot: str = '',
        hot_rows: int = DEFAULT_HOT_ROWS,
    ) -> None:
        """`robot`: the id this writer stamps on the sessions it creates; it may change only
        sessions of its own (SessionOwnedError otherwise). '' for a memory not shared.
        `hot_rows`: with search_backend 'auto', most view rows kept in process."""
        check_robot_id(robot)
        segment_views = dict(segment_views or {})
        place_views = dict(place_views or {})
        for name in [prefix, *views, *segment_views, *place_views]:
            if not _NAME.fullmatch(name):
                raise ValueError(f'invalid collection name part {name!r}: letters, digits, "_"')
        view_dims = [*views.items(), *segment_views.items(), *place_views.items()]
        for name, dim in view_dims:
            if not 1 <= int(dim) <= 32768:
                raise ValueError(f'view {name!r}: dim must be in [1, 32768], got {dim}')
        if max_k < 1:
            raise ValueError(f'max_k must be >= 1, got {max_k}')
        if isinstance(snapshot_every, bool) or not 1 <= int(snapshot_every) <= 10**9:
            raise ValueError(f'snapshot_every must be in [1, 1e9], got {snapshot_every!r}')
        if search_backend not in SEARCH_BACKENDS:
            raise ValueError(
                f'search_backend must be one of {SEARCH_BACKENDS}, got {search_backend!r}'
            )
        params = index_params or IndexParams()
        if search_backend != IN_PROCESS and params.server_index == SCANN:
            # Each of its 4-bit codes holds two dimensions; on an odd one Milvus would retry
            # the build of every segment forever.
            odd = {name: dim for name, dim in view_dims if int(dim) % 2}
            if odd:
                raise ValueError(f'server_index SCANN needs views of even dimension, got {odd}')
        self.uri = uri
        self.search_backend = search_backend
        self.max_k = max_k
        self._lite_path = _lite_path(uri)
        if index_dir is None and self._lite_path is not None:
            index_dir = self._lite_path.with_name(f'{self._lite_path.name}.indexes')
        if search_backend != IN_PROCESS:  # nothing in process to save
            index_dir = None
        self._snapshots = SnapshotDir(Path(index_dir) / prefix) if index_dir is not None else None
        # sq8 indexes keep the fp32 vectors of unsaved rows on disk, next to the snapshots.
        self._spill_dir = None if self._snapshots is None else self._snapshots.directory
        self._levels = {
            FRAME: _level(f'{prefix}_frames', f'{prefix}_view', views, params, self._spill_dir),
            SEGMENT: _level(
                f'{prefix}_segments', f'{prefix}_segview', segment_views, params, self._spill_dir
            ),
            # Collections of their own, created on first open: older memories open as they
            # were, with no place yet.
            PLACE: _level(
                f'{prefix}_places', f'{prefix}_placeview', place_views, params, self._spill_dir
            ),
        }
        self._owner_collection = f'{prefix}_sessions'
        self._snapshot_every = int(snapshot_every)
        self._next_snapshot = self._snapshot_every
        self._index_params = params
        # One writer at a time. The in-process indexes change only under `_local_lock`,
        # which searches take too, so a search never sees half an update and never waits
        # for a database round trip.
        self._write_lock = threading.Lock()
        self._local_lock = threading.RLock()
        self._client = _connect(uri, token, self._lite_path)
        self.owners = SessionOwners(self._client, self._owner_collection, robot)
        try:
            self._ensure(self._owner_collection, _owner_fields(), 'planar', 'L2')
            for level in self._levels.values():
                self._add_sighting_field(level.records)
                self._ensure(level.records, self._records_fields(), 'planar', 'L2')
                for name, collection in level.views.items():
                    fields = _view_fields(level.dims[name], self._partition_key)
                    self._ensure(collection, fields, 'vector', 'COSINE', self._view_index())
                    if search_backend != IN_PROCESS:
                        level.indexes[name] = ServerViewIndex(
                            self._client, collection, level.dims[name], params
                        )
                    if search_backend == AUTO:
                        level.indexes[name] = HybridViewIndex(
                            level.indexes[name], VectorIndex(level.dims[name], params), hot_rows
                        )
            load_collections(self._client, self._collections())
            self.load_report = self._load()
            self.owners.adopt(
                {s for level in self._levels.values() for s in level.table.sessions()}
            )
        except BaseException:
            self.close()
            raise

    @property
    def view_dims(self) -> dict[str, int]:
        return dict(self._levels[FRAME].dims)

    @property
    def segment_view_dims(self) -> dict[str, int]:
        return dict(self._levels[SEGMENT].dims)

    @property
    def snapshot_state(self) -> tuple[int, int] | None:
        """(generation, ids journaled since) of the saved tables and indexes: the second is
        what an open after a crash would refetch. None where nothing is saved."""
        if self._snapshots is None:
            return None
        return self._snapshots.generation, self._snapshots.pending

    def views(self, level: str = FRAME) -> list[str]:
        return list(self._level(level).dims)

    # -- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def flush(self) -> None:
        """Seal what was written into segments (Milvus Lite writes its log durably on close)."""
        for level in self._levels.values():
            for collection in [level.records, *level.views.values()]:
                self._client.flush(collection)

    def close(self) -> None:
        """Save the in-process indexes (so the next open has nothing to catch up), close
        the connection; for Milvus Lite also stop the embedded server and unlock."""
        if self._client is None:
            return
        if self._snapshots is not None:
            if getattr(self, 'load_report', None) is not None:
                with self._write_lock:
                    self._save_snapshot()
            self._snapshots.close()
        self._client.close()
        self._client = None
        if self._lite_path is not None:
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(str(self._lite_path))

    # -- writing -------------------------------------------------------------------------

    def add(self, record: FrameRecord, vectors: Mapping[str, np.ndarray | ViewRow]) -> None:
        self.add_many([record], [vectors])

    def add_many(
        self,
        records: Sequence[FrameRecord],
        vectors: Sequence[Mapping[str, np.ndarray | ViewRow]],
    ) -> None:
        """Insert or replace entries by id, with the views they have content for.

        All records must be of one kind (level). A view missing from an entry's `vectors`
        is removed for that entry if it was stored before, so a re-added entry never keeps
        a stale view row. Milvus is written first: when it fails, nothing changes here.
        """
        if len(records) != len(vectors):
            raise ValueError(f'{len(records)} records but {len(vectors)} vector maps')
        if not records:
            return
        kinds = {record.kind for record in records}
        if len(kinds) != 1:
            raise ValueError(f'one level per call, got {sorted(kinds)}')
        kind = kinds.pop()
        level = self._level(kind)
        record_rows = [_record_row(record) for record in records]
        sessions = {record.session for record in records}
        view_rows: dict[str, list[dict]] = {name: [] for name in level.dims}
        view_absent: dict[str, list[str]] = {name: [] for name in level.dims}
        for record, by_view in zip(records, vectors, strict=True):
            unknown = set(by_view) - set(level.dims)
            if unknown:
                raise ValueError(
                    f'unknown views {sorted(unknown)}; {record.kind} level has {sorted(level.dims)}'
                )
            for name, dim in level.dims.items():
                if name in by_view:
                    view_rows[name].append(_view_row(record, by_view[name], dim, name))
                else:
                    view_absent[name].append(record.id)
        with self._write_lock:
            self.owners.claim(sessions)
            self._note(kind, [row['id'] for row in record_rows])
            for batch in _batches(record_rows, WRITE_BATCH):
                self._client.upsert(level.records, batch)
            for name, collection in level.views.items():
                for batch in _batches(view_rows[name], WRITE_BATCH):
                    self._client.upsert(collection, batch)
                present = level.indexes[name].present(view_absent[name])
                stale = [i for i in view_absent[name] if i in present]
                for batch in _batches(stale, WRITE_BATCH):
                    self._client.delete(collection, ids=batch)
            with self._local_lock:
                # What Milvus holds (lost poses zeroed, text clipped), so a search answers
                # the same before and after a restart.
                level.table.upsert([_record(row, kind) for row in record_rows])
                for name, rows in view_rows.items():
                    _index_rows(level.indexes[name], rows)
                    level.indexes[name].remove(view_absent[name])
            self._maybe_save_snapshot()

    def add_views(
        self, level: str, records: Sequence[FrameRecord], view: str, rows: Sequence[ViewRow]
    ) -> None:
        """Add (or replace) one view for entries already stored, leaving their records and
        other views alone: captions arrive after their segment was stored."""
        store_level = self._level(level)
        if view not in store_level.dims:
            raise ValueError(f'unknown view {view!r}; {level} level has {sorted(store_level.dims)}')
        if len(records) != len(rows):
            raise ValueError(f'{len(records)} records but {len(rows)} view rows')
        dim = store_level.dims[view]
        prepared = [_view_row(r, row, dim, view) for r, row in zip(records, rows, strict=True)]
        with self._write_lock:
            self.owners.claim({record.session for record in records})
            self._note(level, [row['id'] for row in prepared])
            for batch in _batches(prepared, WRITE_BATCH):
                self._client.upsert(store_level.views[view], batch)
            with self._local_lock:
                _index_rows(store_level.indexes[view], prepared)
            self._maybe_save_snapshot()

    def remove_views(self, level: str, ids: Sequence[str]) -> int:
        """Drop every view row of the entries `ids`, keeping their records (thinning old
        frames): they are still found by time, position and range, no longer by vector.
        Another robot's entries raise SessionOwnedError before anything changes. Returns
        the view rows removed from the in-process indexes (0 where Milvus searches)."""
        store_level = self._level(level)
        wanted = list(dict.fromkeys(ids))
        with self._write_lock:
            sessions = {record.session for record in store_level.table.get(wanted)}
            for session in sorted(sessions):
                self.owners.check(session)
            self._note(level, wanted)
            for collection in store_level.views.values():
                for batch in _batches(wanted, WRITE_BATCH):
                    self._client.delete(collection, ids=list(batch))
            with self._local_lock:
                removed = sum(index.remove(wanted) for index in store_level.indexes.values())
            self._maybe_save_snapshot()
        return removed

    def delete_session(
        self, session: str, levels: Sequence[str] = LEVELS
    ) -> dict[str, list[FrameRecord]]:
        """Remove a session's entries and views from `levels` (frames and segments unless
        told); returns what was removed (so the caller can delete its images). An unknown
        session removes nothing; another robot's raises SessionOwnedError. Once no level
        holds the session, its name is free for any robot."""
        if not is_session_name(session):
            raise ValueError(f'invalid session name {session!r}')
        expression = f'session == {json.dumps(session)}'
        removed = {}
        chosen = {name: self._level(name) for name in levels}
        with self._write_lock:
            self.owners.check(session)
            for name, level in chosen.items():
                if self._snapshots is not None:
                    self._snapshots.note(Change(name, session=session))
                for collection in [*level.views.values(), level.records]:
                    self._client.delete(collection, filter=expression)
                with self._local_lock:
                    for index in level.indexes.values():
                        index.remove_session(session)
                    removed[name] = level.table.remove_session(session)
            if not any(level.table.count(session) for level in self._levels.values()):
                self.owners.release(session)
            self._maybe_save_snapshot()
        return removed

    # -- searching -----------------------------------------------------------------------

    @_locked
    def search_view(
        self,
        view: str,
        vector: np.ndarray,
        k: int,
        sessions: Sequence[str] | None = None,
        level: str = FRAME,
        index_range: tuple[int, int] | None = None,
    ) -> list[Hit]:
        """Entries whose `view` embedding is most similar (cosine) to `vector`, best first.

        `index_range` (first, last) keeps entries with those indices only; with it,
        exactly one session must be named.
        """
        store_level = self._level(level)
        if view not in store_level.indexes:
            raise ValueError(f'unknown view {view!r}; {level} level has {sorted(store_level.dims)}')
        if index_range is not None and (not sessions or len(set(sessions)) != 1):
            raise ValueError('an index range needs exactly one session')
        sessions = _valid_sessions(sessions)
        if sessions == []:
            return []
        found = store_level.indexes[view].search(
            _unit_vector(vector, store_level.dims[view], f'query for view {view!r}'),
            self._k(k),
            sessions,
            index_range,
        )
        records = {r.id: r for r in store_level.table.get(i for i, _ in found)}
        if self.search_backend != IN_PROCESS:
            records |= self._records_from_milvus(level, [i for i, _ in found if i not in records])
        texts = self._view_texts(store_level, view, [i for i, _ in found])
        hits = []
        for key, score in found:
            if key in records:
                record = records[key]
                if texts.get(key):
                    record = dataclasses.replace(record, text=texts[key])
                hits.append(Hit(record, float(score), view))
        return hits

    def search_time(
        self, stamp_ns: int, k: int, sessions: Sequence[str] | None = None, level: str = FRAME
    ) -> list[Hit]:
        """The first k entries at or after `stamp_ns`, in chronological order (not centred)."""
        return self.search_interval(stamp_ns, 2**63 - 1, k, sessions, level)

    @_locked
    def search_interval(
        self,
        start_ns: int,
        end_ns: int,
        k: int,
        sessions: Sequence[str] | None = None,
        level: str = FRAME,
    ) -> list[Hit]:
        """The first k entries with start_ns <= stamp <= end_ns, in chronological order;
        scores are seconds after start_ns."""
        if end_ns < start_ns:
            raise ValueError(f'interval ends ({end_ns}) before it starts ({start_ns})')
        sessions = _valid_sessions(sessions)
        if sessions == []:
            return []
        found = self._level(level).table.chronological(
            int(start_ns), int(end_ns), self._k(k), sessions
        )
        return [Hit(r, (r.stamp_ns - start_ns) / 1e9, 'time') for r in found]

    @_locked
    def search_position(
        self,
        x: float,
        y: float,
        z: float,
        k: int,
        sessions: Sequence[str] | None = None,
        level: str = FRAME,
    ) -> list[Hit]:
        """The k entries observed nearest to (x, y, z), nearest first; score in metres."""
        sessions = _valid_sessions(sessions)
        if sessions == []:
            return []
        found = self._level(level).table.nearest(x, y, z, self._k(k), sessions)
        return [Hit(record, float(distance), 'position') for record, distance in found]

    @_locked
    def search_range(
        self,
        x: float,
        y: float,
        radius: float,
        sessions: Sequence[str] | None = None,
        k: int | None = None,
        level: str = FRAME,
    ) -> list[Hit]:
        """Entries within `radius` metres of (x, y) on the floor plan, nearest first.

        Height is ignored, as on a floor plan; scores are planar distances in metres.
        """
        if not (math.isfinite(radius) and radius > 0):
            raise ValueError(f'radius must be a positive number of metres, got {radius}')
        sessions = _valid_sessions(sessions)
        if sessions == []:
            return []
        limit = self.max_k if k is None else self._k(k)
        found = self._level(level).table.within(x, y, radius, limit, sessions)
        return [Hit(record, float(distance), 'position') for record, distance in found]

    @_locked
    def search_index_range(
        self, session: str, first: int, last: int, k: int, level: str = SEGMENT
    ) -> list[Hit]:
        """Entries first..last (inclusive) of one session, in index order; score 0."""
        if last < first:
            raise ValueError(f'index range ends ({last}) before it starts ({first})')
        if not is_session_name(session):
            return []
        found = self._level(level).table.index_range(session, int(first), int(last), self._k(k))
        return [Hit(record, 0.0, 'index') for record in found]

    # -- reading -------------------------------------------------------------------------

    @_locked
    def with_views(self, level: str, ids: Iterable[str]) -> set[str]:
        """Which of `ids` have a row in at least one view."""
        wanted = list(ids)
        found: set[str] = set()
        for index in self._level(level).indexes.values():
            found |= index.present(wanted)
        return found

    def disk_usage(self) -> dict[str, int]:
        """Bytes this store keeps on this machine: the Milvus Lite database (none for a
        server, whose disk is its own) and the snapshots of the in-process indexes."""
        usage = {}
        if self._lite_path is not None and self._lite_path.exists():
            usage['database'] = dir_bytes(self._lite_path)['bytes']
        if self._snapshots is not None and self._snapshots.directory.exists():
            usage['snapshots'] = dir_bytes(self._snapshots.directory)['bytes']
        return usage

    @_locked
    def records_before(self, end_ns: int, level: str = FRAME) -> list[FrameRecord]:
        """Every entry stamped before `end_ns`, in chronological order."""
        table = self._level(level).table
        if not len(table):
            return []
        return table.chronological(-(2**63), int(end_ns) - 1, len(table), None)

    @_locked
    def get(self, ids: Iterable[str], level: str = FRAME) -> list[FrameRecord]:
        """Records for the ids that exist, in the order asked; unknown ids are skipped."""
        return self._level(level).table.get(ids)

    @_locked
    def find_stamp(self, session: str, stamp_ns: int, level: str = FRAME) -> FrameRecord | None:
        return self._level(level).table.find_stamp(session, stamp_ns)

    @_locked
    def count(self, session: str | None = None, view: str | None = None, level: str = FRAME) -> int:
        """Entries stored (with `view` when given), for one session or all."""
        store_level = self._level(level)
        if view is None:
            return store_level.table.count(session)
        if view not in store_level.indexes:
            raise ValueError(f'unknown view {view!r}; {level} level has {sorted(store_level.dims)}')
        return store_level.indexes[view].count(session)

    @_locked
    def view_ids(self, level: str, view: str) -> set[str]:
        """Ids of the entries that have `view`."""
        store_level = self._level(level)
        if view not in store_level.indexes:
            raise ValueError(f'unknown view {view!r}; {level} level has {sorted(store_level.dims)}')
        return store_level.indexes[view].ids()

    def get_vectors(self, level: str, view: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of one view by entry id (unknown ids are skipped)."""
        store_level = self._level(level)
        if view not in store_level.views:
            raise ValueError(f'unknown view {view!r}; {level} level has {sorted(store_level.dims)}')
        found = {}
        for batch in _batches(list(dict.fromkeys(ids)), READ_BATCH):
            for row in self._client.get(
                store_level.views[view], ids=list(batch), output_fields=['vector']
            ):
                found[row['id']] = np.asarray(row['vector'], dtype=np.float32)
        return found

    @_locked
    def image_refs(self) -> set[str]:
        """Every image reference held by any entry (content-addressed images may be shared)."""
        refs = set()
        for level in self._levels.values():
            if len(level.table):  # deletions are rare: a full pass is fine
                every = level.table.chronological(-(2**63), 2**63 - 1, len(level.table), None)
                refs.update(record.image_ref for record in every if record.image_ref)
        return refs

    @_locked
    def sessions(self, level: str = FRAME) -> list[str]:
        """Names of the sessions with entries at `level`, sorted."""
        return self._level(level).table.sessions()

    @_locked
    def summary(self, session: str, level: str = FRAME) -> SessionSummary:
        return self._level(level).table.summary(session)

    @_locked
    def next_index(self, session: str, level: str = FRAME) -> int:
        """One past the largest index stored for `session` (0 when it has none)."""
        return self._level(level).table.next_index(session)

    # -- internals -----------------------------------------------------------------------

    def _level(self, level: str) -> _Level:
        if level not in self._levels:
            raise ValueError(f'unknown level {level!r}; expected one of {tuple(self._levels)}')
        return self._levels[level]

    def _k(self, k: int) -> int:
        if k < 1:
            raise ValueError(f'k must be >= 1, got {k}')
        return min(int(k), self.max_k)

    def _records_from_milvus(self, level: str, ids: Sequence[str]) -> dict[str, FrameRecord]:
        """Records another writer stored in the same Milvus (this process never saw them)."""
        if not ids:
            return {}
        rows = self._client.get(
            self._level(level).records, ids=list(ids), output_fields=['id', *_RECORD_FIELDS]
        )
        return {row['id']: _record(row, level) for row in rows}

    def _view_texts(self, level: _Level, view: str, ids: Sequence[str]) -> dict[str, str]:
        """The view's own text for these entries (captions); few rows, fetched by id."""
        if level is not self._levels[SEGMENT] or not ids or not view.startswith('caption'):
            return {}
        rows = self._client.get(level.views[view], ids=list(ids), output_fields=['text'])
        return {row['id']: row['text'] for row in rows}

    def _load(self) -> LoadReport:
        """Fill the record tables and the in-process indexes from Milvus (the source of truth).

        Each table and index comes from the last snapshot when it has one, caught up with
        the ids journaled since, and is refilled from Milvus when it has none or its row
        count then differs from Milvus's. Anything refilled is saved at once as a new
        snapshot; what was caught up stays in the journal (and counts towards the next save).
        """
        started = time.perf_counter()
        report = LoadReport()
        saved = self._snapshots.read() if self._snapshots is not None else None
        loaded: set[str] = set()
        jobs: dict[str, Callable[[], RecordTable | VectorIndex | None]] = {}
        for name, level in self._levels.items():
            jobs[_table_key(name)] = functools.partial(self._saved_table, saved, name)
            for view in level.views:
                key = f'{name}/{view}'
                jobs[key] = functools.partial(self._saved_index, saved, key, level.dims[view])
        parts = load_concurrently(jobs)
        for name, level in self._levels.items():
            if parts[_table_key(name)] is not None:
                level.table = parts[_table_key(name)]
                loaded.add(_table_key(name))
            for view in level.views:
                index = parts[f'{name}/{view}']
                if index is not None:
                    level.indexes[view] = index
                    loaded.add(f'{name}/{view}')
        if saved is not None:
            report.caught_up = self._catch_up(saved.changes, loaded)
        for name, level in self._levels.items():
            self._check_or_refill_table(name, level, loaded, report)
            report.entries[name] = len(level.table)
            for view, collection in level.views.items():
                key = f'{name}/{view}'
                if self.search_backend == IN_PROCESS:
                    self._check_or_rebuild(key, level, view, collection, loaded, report)
                report.views[key] = len(level.indexes[view])
        expected = len(report.views) + len(report.entries)
        if self._snapshots is not None and (saved is None or len(report.loaded) < expected):
            self._save_snapshot()
        report.seconds = time.perf_counter() - started
        return report

    def _saved_table(self, saved: Saved | None, level: str) -> RecordTable | None:
        key = _table_key(level)
        if saved is None or key not in saved.rows:
            return None
        table = RecordTable.load(self._snapshots.table_path(level))
        return table if table is not None and len(table) == saved.rows[key] else None

    def _saved_index(self, saved: Saved | None, key: str, dim: int) -> VectorIndex | None:
        if saved is None or key not in saved.rows:
            return None
        index = VectorIndex.load(
            self._snapshots.index_path(key), dim, self._index_params, self._spill_dir
        )
        return index if index is not None and len(index) == saved.rows[key] else None

    def _catch_up(self, changes: Sequence[Change], loaded: set[str]) -> int:
        """Replay the journal onto the loaded tables and indexes, in order, with what
        Milvus holds now for each id (present: upsert; absent from a view: remove; records
        leave only with their session). Returns the ids refetched."""
        refetched = 0
        for change in group_changes(changes):
            level = self._levels.get(change.level)
            if level is None:  # a level this store does not keep: nothing to replay
                continue
            if _table_key(change.level) in loaded:
                self._replay_records(change, level)
            for view, collection in level.views.items():
                if f'{change.level}/{view}' not in loaded:
                    continue
                index = level.indexes[view]
                if change.session is not None:
                    index.remove_session(change.session)
                    continue
                for batch in _batches(list(dict.fromkeys(change.ids)), READ_BATCH):
                    rows = self._client.get(
                        collection, ids=list(batch), output_fields=['session', 'idx', 'vector']
                    )
                    _index_rows(index, rows)
                    found = {row['id'] for row in rows}
                    index.remove([key for key in batch if key not in found])
            refetched += len(change.ids)
        return refetched

    def _replay_records(self, change: Change, level: _Level) -> None:
        if change.session is not None:
            level.table.remove_session(change.session)
            return
        for batch in _batches(list(dict.fromkeys(change.ids)), READ_BATCH):
            rows = self._client.get(
                level.records, ids=list(batch), output_fields=list(_RECORD_FIELDS)
            )
            level.table.upsert([_record(row, change.level) for row in rows])

    def _check_or_refill_table(
        self, name: str, level: _Level, loaded: set[str], report: LoadReport
    ) -> None:
        key = _table_key(name)
        if key in loaded:
            if self._milvus_count(level.records) == len(level.table):
                report.loaded.append(key)
                return
            _LOG.warning('record table %s differs from Milvus after catching up: refilled', key)
            report.rebuilt.append(key)
        table = RecordTable()
        table.upsert([_record(row, name) for row in self._scan(level.records, _RECORD_FIELDS)])
        level.table = table

    def _check_or_rebuild(
        self,
        key: str,
        level: _Level,
        view: str,
        collection: str,
        loaded: set[str],
        report: LoadReport,
    ) -> None:
        if key in loaded:
            if self._milvus_count(collection) == len(level.indexes[view]):
                report.loaded.append(key)
                return
            _LOG.warning('vector index %s differs from Milvus after catching up: rebuilt', key)
            report.rebuilt.append(key)
        index = VectorIndex(level.dims[view], self._index_params, self._spill_dir)
        _index_rows(index, list(self._scan(collection, ('session', 'idx', 'vector'))))
        level.indexes[view] = index

    def _milvus_count(self, collection: str) -> int:
        rows = self._client.query(collection, filter='', output_fields=['count(*)'])
        return int(rows[0]['count(*)'])

    def _note(self, level: str, ids: Sequence[str]) -> None:
        """Journal ids about to be written (in lines of at most WRITE_BATCH ids)."""
        if self._snapshots is not None:
            for batch in _batches(list(ids), WRITE_BATCH):
                self._snapshots.note(Change(level, tuple(batch)))

    def _maybe_save_snapshot(self) -> None:
        if self._snapshots is not None and self._snapshots.pending >= self._next_snapshot:
            self._save_snapshot()

    def _save_snapshot(self) -> None:
        """Save every record table and in-process index as the next generation (the caller
        holds the write lock, so they agree with the journal's end; searches go on
        meanwhile). On failure (a full disk) the previous snapshot and its journal still
        stand; the next try waits for another `snapshot_every` ids."""
        snapshots = self._snapshots
        generation = snapshots.generation + 1
        rows = {}
        try:
            snapshots.directory.mkdir(parents=True, exist_ok=True)
            for name, level in self._levels.items():
                level.table.save(snapshots.table_path(name, generation))
                rows[_table_key(name)] = len(level.table)
                for view, index in level.indexes.items():
                    key = f'{name}/{view}'
                    index.save(snapshots.index_path(key, generation))
                    rows[key] = len(index)
            snapshots.commit(generation, rows)
        except OSError as error:
            _LOG.warning('could not save the record tables and vector indexes: %s', error)
            self._next_snapshot = snapshots.pending + self._snapshot_every
            return
        self._next_snapshot = self._snapshot_every

    def _scan(self, collection: str, fields: Sequence[str]) -> Iterator[dict]:
        return scan_collection(self._client, collection, ['id', *fields])

    def _add_sighting_field(self, name: str) -> None:
        """Give a records collection made before sightings existed its sighting field.

        A Milvus server (2.6 and later) adds a nullable field in place. Milvus Lite cannot
        (it does not implement adding a field), so the rows are copied into a collection
        with the current schema, which then takes the old one's name. The old collection
        is dropped only once the copy holds every row, and a copy left by an interrupted
        migration is finished (renamed) or redone on the next open: nothing is lost.
        """
        staging = f'{name}_migrating'
        if not self._client.has_collection(name):
            if self._client.has_collection(staging):  # stopped after the old was dropped
                self._client.rename_collection(staging, name)
            return
        fields = self._client.describe_collection(name).get('fields', [])
        if any(item['name'] == SIGHTING_FIELD for item in fields):
            return
        old_fields = [f for f in self._records_fields() if f.name != SIGHTING_FIELD]
        _check_schema(name, old_fields, {'fields': fields})
        try:
            self._client.add_collection_field(
                name,
                field_name=SIGHTING_FIELD,
                data_type=DataType.VARCHAR,
                max_length=SIGHTING_MAX_BYTES,
                nullable=True,
            )
            _LOG.info('added the %s field to collection %s', SIGHTING_FIELD, name)
            return
        except Exception as error:  # Milvus Lite answers with a bare gRPC error, UNIMPLEMENTED
            _LOG.info('cannot add a field in place (%s); copying %s', error, name)
        if self._client.has_collection(staging):  # a copy that stopped half way
            self._client.drop_collection(staging)
        self._ensure(staging, self._records_fields(), 'planar', 'L2')
        self._client.load_collection(staging)
        self._client.load_collection(name)
        copied, batch = 0, []
        fields = [*(f for f in _RECORD_FIELDS if f != SIGHTING_FIELD), 'planar']
        for row in self._scan(name, fields):
            batch.append(row | {SIGHTING_FIELD: ''})
            if len(batch) == WRITE_BATCH:
                self._client.insert(staging, batch)
                copied, batch = copied + len(batch), []
        if batch:
            self._client.insert(staging, batch)
            copied += len(batch)
        held = self._client.query(staging, filter='', output_fields=['count(*)'])
        if int(held[0]['count(*)']) != copied:
            raise MemoryStoreError(
                f'migrating {name!r}: the copy holds {held[0]["count(*)"]} of {copied} rows; '
                'the original is kept unchanged'
            )
        self._client.drop_collection(name)
        self._client.rename_collection(staging, name)
        _LOG.warning(
            'collection %s: %d records copied to add the %s field', name, copied, SIGHTING_FIELD
        )

    def _ensure(
        self,
        name: str,
        fields: list[FieldSpec],
        vector_field: str,
        metric: str,
        index: tuple[str, dict] = ('FLAT', {}),
    ) -> None:
        ensure_collection(self._client, name, fields, vector_field, metric, load=False, index=index)

    def _view_index(self) -> tuple[str, dict]:
        """The vector index a new view collection gets: FLAT where searches run in process
        (Milvus needs one to load), `server_index` where Milvus answers them."""
        if self.search_backend == IN_PROCESS:
            return 'FLAT', {}
        params = self._index_params
        if params.server_index == HNSW:
            return HNSW, {'M': params.hnsw_m, 'efConstruction': params.ef_construction}
        # SCANN keeps the raw vectors for re-ranking by default; Milvus 2.3 refuses an
        # explicit with_raw_data, which the client sends as a string.
        return params.server_index, {'nlist': params.ivf_nlist}

    @property
    def _partition_key(self) -> bool:
        """Whether new collections hash sessions into partitions: in Milvus Lite only.

        A Milvus 2.3 server files upserted rows under the wrong partition of a partition-key
        collection (a filter on the session then misses them and a session delete leaves
        them behind), so on a server the session is a plain filtered field. Collections
        made either way open either way.
        """
        return self._lite_path is not None

    def _records_fields(self) -> list[FieldSpec]:
        return _records_fields(self._partition_key)

    def _collections(self) -> list[str]:
        return [
            self._owner_collection,
            *(
                name
                for level in self._levels.values()
                for name in (level.records, *level.views.values())
            ),
        ]


def ensure_collection(
    client: MilvusClient,
    name: str,
    fields: list[FieldSpec],
    vector_field: str,
    metric: str,
    load: bool = True,
    index: tuple[str, dict] = ('FLAT', {}),
) -> None:
    """Open a collection, creating it (and its index) on the way; one that exists must
    have `fields` exactly, but for whether the session is a partition key
    (MemoryStoreSchemaError says how it differs). `load` False leaves loading to the
    caller (`load_collections`). `index` (type, parameters) is the vector index a new
    collection gets; an existing one keeps its own."""
    if client.has_collection(name):
        _check_schema(name, fields, client.describe_collection(name))
    else:
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
        for spec in fields:
            schema.add_field(
                spec.name,
                spec.dtype,
                is_primary=spec.primary,
                is_partition_key=spec.partition_key,
                **spec.params,
            )
        # Strong consistency: an entry is readable as soon as add() returns (a server's
        # default level lets reads miss the latest writes).
        client.create_collection(name, schema=schema, consistency_level='Strong')
    if vector_field not in set(client.list_indexes(name)):
        params = client.prepare_index_params()
        index_type, index_params = index
        params.add_index(
            vector_field, index_type=index_type, metric_type=metric, params=dict(index_params)
        )
        # Indexes on an empty collection are ready at once; skip pymilvus's 0.5 s polling.
        client.create_index(name, params, sync=False)
    if load:
        client.load_collection(name)


def load_collections(client: MilvusClient, names: Sequence[str]) -> None:
    """Load collections into the query nodes, all at once: a server takes seconds per new
    collection, and in parallel the whole store loads in about the time of one."""
    for name in names:
        client.load_collection(name, _async=True)
    for name in names:
        client.load_collection(name)  # waits for the load already under way


def _table_key(level: str) -> str:
    return f'{level}/records'


def _level(
    records: str,
    view_prefix: str,
    dims: Mapping[str, int],
    params: IndexParams,
    spill_dir: Path | None,
) -> _Level:
    return _Level(
        records=records,
        views={name: f'{view_prefix}_{name}' for name in dims},
        dims={name: int(dim) for name, dim in dims.items()},
        table=RecordTable(),
        indexes={name: VectorIndex(int(dim), params, spill_dir) for name, dim in dims.items()},
    )


def _index_rows(index: VectorIndex, rows: Sequence[dict]) -> None:
    if rows:
        index.upsert(
            [row['id'] for row in rows],
            [row['session'] for row in rows],
            [int(row['idx']) for row in rows],
            np.asarray([row['vector'] for row in rows], dtype=np.float32),
        )


def _lite_path(uri: str) -> Path | None:
    return Path(uri).expanduser().resolve() if uri.endswith('.db') else None


def connect(uri: str, token: str = '') -> MilvusClient:
    """A client of the Milvus at `uri`: a server address, or a Milvus Lite file (`.db`),
    which clients in one process share."""
    return _connect(uri, token, _lite_path(uri))


def _connect(uri: str, token: str, lite_path: Path | None) -> MilvusClient:
    if lite_path is None:
        try:
            return MilvusClient(uri=uri, token=token)
        except MilvusException as error:
            raise MemoryStoreError(f'cannot connect to Milvus at {uri}: {error}') from error
    if not lite_path.parent.is_dir():
        raise MemoryStoreError(
            f'cannot open memory database {lite_path}: {lite_path.parent} does not exist'
        )
    try:
        return MilvusClient(str(lite_path))
    except MilvusException as error:
        if _held_by_other_process(lite_path):
            raise MemoryStoreLockedError(
                f'memory database {lite_path} is open in another process (Milvus Lite allows one '
                'process per database): stop that process, or serve the database with '
                '`milvus-lite server` and point memory.uri at it'
            ) from error
        raise MemoryStoreError(f'cannot open memory database {lite_path}: {error}') from error


def _held_by_other_process(lite_path: Path) -> bool:
    """Whether Milvus Lite's advisory lock on the database directory is taken."""
    from milvus_lite.db import LOCK_FILENAME

    lock = lite_path / LOCK_FILENAME
    if not lock.exists():
        return False
    descriptor = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return False
    finally:
        os.close(descriptor)


def _check_schema(name: str, expected: list[FieldSpec], description: dict) -> None:
    actual = {item['name']: item for item in description.get('fields', [])}

    # Whether the session is a partition key is left out: both layouts read and write alike.
    def shape(spec_type, params, primary) -> str:
        sizes = ', '.join(f'{key}={int(value)}' for key, value in sorted(params.items()))
        return f'{DataType(spec_type).name}({sizes})' + ' primary' * bool(primary)

    problems = []
    for spec in expected:
        item = actual.pop(spec.name, None)
        want = shape(spec.dtype, spec.params, spec.primary)
        if item is None:
            problems.append(f'{spec.name}: missing, expected {want}')
            continue
        params = {key: item.get('params', {}).get(key) for key in spec.params}
        got = shape(
            item['type'],
            {key: value for key, value in params.items() if value is not None},
            item.get('is_primary', False),
        )
        if got != want:
            problems.append(f'{spec.name}: is {got}, expected {want}')
    problems.extend(f'{extra}: unexpected field' for extra in sorted(actual))
    if problems:
        raise MemoryStoreSchemaError(
            f'collection {name!r} does not match this version of waymark ('
            + '; '.join(problems)
            + "). A different embedding model changes a view's dim: use another "
            'memory prefix or database, or drop the collection.'
        )


def _valid_sessions(sessions: Sequence[str] | None) -> list[str] | None:
    """None for all sessions; otherwise the names that can exist (maybe none).

    Names that break the session-name rule cannot be in memory, so they are dropped.
    """
    if not sessions:
        return None
    valid = [name for name in dict.fromkeys(sessions) if is_session_name(name)]
    if len(valid) > DEFAULT_MAX_K:
        raise ValueError(f'at most {DEFAULT_MAX_K} sessions per query, got {len(valid)}')
    return valid


def _record_row(record: FrameRecord) -> dict:
    if not is_session_name(record.session):
        raise ValueError(f'invalid session name {record.session!r}')
    if record.index < 0:
        raise ValueError(f'entry index must be >= 0, got {record.index}')
    if record.end_ns is not None and record.end_ns < record.stamp_ns:
        raise ValueError(f'entry {record.id}: ends before it starts')
    pose = (record.x, record.y, record.z, record.yaw)
    if record.pose_valid and not all(math.isfinite(value) for value in pose):
        raise ValueError(f'entry {record.id}: pose marked valid but not finite: {pose}')
    x, y, z, yaw = (float(value) for value in pose) if record.pose_valid else (0.0,) * 4
    if len(record.image_ref.encode('utf-8')) > IMAGE_REF_MAX_BYTES:
        raise ValueError(f'image reference longer than {IMAGE_REF_MAX_BYTES} bytes')
    return {
        'id': record.id,
        'session': record.session,
        'idx': int(record.index),
        'stamp_ns': int(record.stamp_ns),
        'end_ns': int(record.end_stamp_ns),
        'x': x,
        'y': y,
        'z': z,
        'yaw': yaw,
        'map_epoch': int(record.map_epoch),
        'pose_valid': bool(record.pose_valid),
        'image_ref': record.image_ref,
        'text': clip_utf8(record.text, TEXT_MAX_BYTES),
        'text_size': float(record.text_size),
        SIGHTING_FIELD: sighting_codec.encode(record.sighting, SIGHTING_MAX_BYTES),
        'planar': [x, y],
    }


def _view_row(record: FrameRecord, value: np.ndarray | ViewRow, dim: int, view: str) -> dict:
    row = value if isinstance(value, ViewRow) else ViewRow(value)
    return {
        'id': record.id,
        'session': record.session,
        'idx': int(record.index),
        'vector': _unit_vector(row.vector, dim, f'{record.id} view {view!r}'),
        'text': clip_utf8(row.text, TEXT_MAX_BYTES),
    }


def _record(row: Mapping, kind: str) -> FrameRecord:
    stamp = int(row['stamp_ns'])
    end = int(row['end_ns'])
    return FrameRecord(
        session=row['session'],
        index=int(row['idx']),
        stamp_ns=stamp,
        x=float(row['x']),
        y=float(row['y']),
        z=float(row['z']),
        yaw=float(row['yaw']),
        map_epoch=int(row['map_epoch']),
        pose_valid=bool(row['pose_valid']),
        image_ref=row['image_ref'],
        text=row['text'],
        text_size=float(row['text_size']),
        kind=kind,
        sighting=sighting_codec.decode(row.get(SIGHTING_FIELD)),
        end_ns=None if kind == FRAME else end,
    )


def _unit_vector(vector: np.ndarray, dim: int, what: str) -> list[float]:
    array = np.asarray(vector, dtype=np.float64).reshape(-1)
    if array.shape[0] != dim:
        raise ValueError(f'{what}: expected {dim} values, got {array.shape[0]}')
    norm = float(np.linalg.norm(array))
    if not (math.isfinite(norm) and norm > 0):
        raise ValueError(f'{what}: vector is zero or not finite')
    return (array / norm).astype(np.float32).tolist()


def _batches(items: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
