# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Memory entries kept durably in Milvus and searched through in-process indexes.

Three levels of entries (frames, segments, the rows of named places), each with a records
collection (time, pose, text as scalars) and one collection per embedding view keyed by the
entry id: a view row exists only where the view has content, and a view can be added later
(captions arrive after their segment) without touching the records.

Milvus is the source of truth; every write goes there first. Searches are answered by a
RecordTable and one ViewIndex per view, filled when the store opens (recovery) and
updated on each write. Milvus Lite 3.2 scans every row in Python on each query (60 ms at
100k rows whatever the index), and memory_node is the only writer, so in-process indexes
are both correct and an order of magnitude faster. `uri` is a path ending in `.db` (Milvus
Lite, embedded, one process per database) or a server address (`http://host:19530`).

With `search_backend='milvus'` the vector searches go to Milvus instead (ServerViewIndex):
memory_node then holds no vectors, opens without reading them, and sees what other writers
to the same server stored. With 'auto' Milvus answers too, but the sessions this process
is writing, up to `hot_rows` rows, are also searched in process (HybridViewIndex). Records
(time, pose, text) stay mirrored in process either way. view_index resolves the choice once
and makes each view's index; recovery fills and saves what is held in process. Each
records row is stamped with its writer's clock, so a store that reopens on a shared server
reads from its snapshot plus what other robots stamped since (write_marks), not every row.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from waymark.memory.entries import (
    FRAME,
    LEVELS,
    PLACE,
    SEGMENT,
    FrameRecord,
    Hit,
    check_robot_id,
    is_session_name,
)
from waymark.memory.search_query import DEFAULT_MAX_K, Mode, SearchQuery
from waymark.memory.storage.connection import connect, lite_path, release_lite
from waymark.memory.storage.hybrid_index import DEFAULT_HOT_ROWS
from waymark.memory.storage.index_params import IndexParams
from waymark.memory.storage.levels import Level
from waymark.memory.storage.migration import add_missing_fields
from waymark.memory.storage.milvus_rows import (
    WRITE_BATCH,
    ViewRow,
    batches,
    index_rows,
    record_from_row,
    record_row,
    unit_vector,
    view_row,
)
from waymark.memory.storage.recovery import DEFAULT_SNAPSHOT_EVERY, LevelLoader, LevelSnapshots
from waymark.memory.storage.schema import (
    RECORD_FIELDS,
    WRITTEN_FIELD,
    ensure_collection,
    load_collections,
    owner_fields,
    records_fields,
    view_fields,
)
from waymark.memory.storage.session_owners import SessionOwners
from waymark.memory.storage.store_reads import StoreReads, locked
from waymark.memory.storage.view_index import IN_PROCESS, make_view_index, resolve_backend
from waymark.memory.storage.write_marks import WriteClock

_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]{0,63}')


class MemoryStore(StoreReads):
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
        backend = resolve_backend(search_backend)
        params = index_params or IndexParams()
        backend.check_dims(params, view_dims)
        self.uri = uri
        self.search_backend = backend.name
        self.max_k = max_k
        self._backend = backend
        self._index_params = params
        self._lite_path = lite_path(uri)
        if index_dir is None and self._lite_path is not None:
            index_dir = self._lite_path.with_name(f'{self._lite_path.name}.indexes')
        self._levels = {
            FRAME: Level.named(f'{prefix}_frames', f'{prefix}_view', views),
            SEGMENT: Level.named(f'{prefix}_segments', f'{prefix}_segview', segment_views),
            # Collections of their own, created on first open: older memories open as they
            # were, with no place yet.
            PLACE: Level.named(f'{prefix}_places', f'{prefix}_placeview', place_views),
        }
        # Stamps this writer's rows, so other robots' stores catch up on them.
        self._clock = WriteClock()
        self._snapshots = None
        if index_dir is not None:
            self._snapshots = LevelSnapshots(
                Path(index_dir) / prefix,
                self._levels,
                int(snapshot_every),
                self._clock,
                robot,
                indexes=backend.mirrored,  # else only the record tables are in process
            )
        # sq8 indexes keep the fp32 vectors of unsaved rows on disk, next to the snapshots.
        self._spill_dir = None if self._snapshots is None else self._snapshots.directory
        self._owner_collection = f'{prefix}_sessions'
        # One writer at a time. The in-process indexes change only under `_local_lock`,
        # which searches take too, so a search never sees half an update and never waits
        # for a database round trip.
        self._write_lock = threading.Lock()
        self._local_lock = threading.RLock()
        self._client = connect(uri, token)
        self.owners = SessionOwners(self._client, self._owner_collection, robot)
        try:
            self._open_collections(hot_rows)
            load_collections(self._client, self._collections())
            loader = LevelLoader(
                self._client, self._levels, self._snapshots, params, backend.mirrored, self.owners
            )
            self.load_report = loader.load()
            self._clock.advance_past(self.load_report.newest_of(self.owners.robot))
            self.owners.adopt(
                {s for level in self._levels.values() for s in level.table.sessions()}
            )
        except BaseException:
            self.close()
            raise

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
                    self._snapshots.save()
            self._snapshots.close()
        self._client.close()
        self._client = None
        if self._lite_path is not None:
            release_lite(self._lite_path)

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
        record_rows = [record_row(record) for record in records]
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
                    view_rows[name].append(view_row(record, by_view[name], dim, name))
                else:
                    view_absent[name].append(record.id)
        with self._write_lock:
            self.owners.claim(sessions)
            self._note(kind, [row['id'] for row in record_rows])
            for batch in batches(record_rows, WRITE_BATCH):
                # A stamp per Milvus write: a reader that sees a stamp has seen its rows.
                stamp = self._clock.stamp()
                for row in batch:
                    row[WRITTEN_FIELD] = stamp
                self._client.upsert(level.records, batch)
            for name, collection in level.views.items():
                for batch in batches(view_rows[name], WRITE_BATCH):
                    self._client.upsert(collection, batch)
                present = level.indexes[name].present(view_absent[name])
                stale = [i for i in view_absent[name] if i in present]
                for batch in batches(stale, WRITE_BATCH):
                    self._client.delete(collection, ids=batch)
            with self._local_lock:
                # What Milvus holds (lost poses zeroed, text clipped), so a search answers
                # the same before and after a restart.
                level.table.upsert([record_from_row(row, kind) for row in record_rows])
                for name, rows in view_rows.items():
                    index_rows(level.indexes[name], rows)
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
        prepared = [view_row(r, row, dim, view) for r, row in zip(records, rows, strict=True)]
        with self._write_lock:
            self.owners.claim({record.session for record in records})
            self._note(level, [row['id'] for row in prepared])
            for batch in batches(prepared, WRITE_BATCH):
                self._client.upsert(store_level.views[view], batch)
            with self._local_lock:
                index_rows(store_level.indexes[view], prepared)
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
                for batch in batches(wanted, WRITE_BATCH):
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
                    self._snapshots.note_session(name, session)
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

    @locked
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
            unit_vector(vector, store_level.dims[view], f'query for view {view!r}'),
            self._k(k),
            sessions,
            index_range,
        )
        records = {r.id: r for r in store_level.table.get(i for i, _ in found)}
        if self._backend.in_milvus:
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

    def search_records(self, query: SearchQuery, sessions: Sequence[str] | None) -> list[Hit]:
        """The hits of a query answered from the records alone (time, interval, position,
        range, index range), within `sessions` (None: all); the store's one mapping of a
        SearchQuery. The vector modes need an embedder: MemoryService answers those."""
        q, k, level = query, query.k, query.level
        if q.mode == Mode.TIME:
            return self.search_time(q.stamp_ns, k, sessions, level)
        if q.mode == Mode.INTERVAL:
            return self.search_interval(q.stamp_ns, q.end_ns, k, sessions, level)
        if q.mode == Mode.POSITION:
            return self.search_position(*q.position, k, sessions, level)
        if q.mode == Mode.RANGE:
            return self.search_range(q.position[0], q.position[1], q.radius, sessions, k, level)
        if q.mode == Mode.INDEX_RANGE and sessions:
            return self.search_index_range(sessions[0], q.first_index, q.last_index, k, level)
        raise ValueError(f'a {q.mode.value} search is not answered from the records')

    def search_time(
        self, stamp_ns: int, k: int, sessions: Sequence[str] | None = None, level: str = FRAME
    ) -> list[Hit]:
        """The first k entries at or after `stamp_ns`, in chronological order (not centred)."""
        return self.search_interval(stamp_ns, 2**63 - 1, k, sessions, level)

    @locked
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

    @locked
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

    @locked
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

    @locked
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

    # -- internals -----------------------------------------------------------------------

    def _k(self, k: int) -> int:
        if k < 1:
            raise ValueError(f'k must be >= 1, got {k}')
        return min(int(k), self.max_k)

    def _records_from_milvus(self, level: str, ids: Sequence[str]) -> dict[str, FrameRecord]:
        """Records another writer stored in the same Milvus (this process never saw them)."""
        if not ids:
            return {}
        rows = self._client.get(
            self._level(level).records, ids=list(ids), output_fields=['id', *RECORD_FIELDS]
        )
        return {row['id']: record_from_row(row, level) for row in rows}

    def _view_texts(self, level: Level, view: str, ids: Sequence[str]) -> dict[str, str]:
        """The view's own text for these entries (captions); few rows, fetched by id."""
        if level is not self._levels[SEGMENT] or not ids or not view.startswith('caption'):
            return {}
        rows = self._client.get(level.views[view], ids=list(ids), output_fields=['text'])
        return {row['id']: row['text'] for row in rows}

    def _note(self, level: str, ids: Sequence[str]) -> None:
        if self._snapshots is not None:
            self._snapshots.note(level, ids)

    def _maybe_save_snapshot(self) -> None:
        if self._snapshots is not None:
            self._snapshots.maybe_save()

    def _open_collections(self, hot_rows: int) -> None:
        """Open (creating, checking or migrating) every collection, then give each view
        its index."""
        client, keyed = self._client, self._partition_key
        ensure_collection(
            client, self._owner_collection, owner_fields(), 'planar', 'L2', load=False
        )
        vector_index = self._backend.collection_index(self._index_params)
        for level in self._levels.values():
            add_missing_fields(client, level.records, keyed)
            fields = records_fields(keyed)
            ensure_collection(client, level.records, fields, 'planar', 'L2', load=False)
            for name, collection in level.views.items():
                fields = view_fields(level.dims[name], keyed)
                ensure_collection(
                    client, collection, fields, 'vector', 'COSINE', load=False, index=vector_index
                )
                level.indexes[name] = make_view_index(
                    self._backend,
                    level.dims[name],
                    self._index_params,
                    client,
                    collection,
                    self._spill_dir,
                    hot_rows,
                )

    @property
    def _partition_key(self) -> bool:
        """Whether new collections hash sessions into partitions: in Milvus Lite only.

        A Milvus 2.3 server files upserted rows under the wrong partition of a partition-key
        collection (a filter on the session then misses them and a session delete leaves
        them behind), so on a server the session is a plain filtered field. Collections
        made either way open either way.
        """
        return self._lite_path is not None

    def _collections(self) -> list[str]:
        return [
            self._owner_collection,
            *(
                name
                for level in self._levels.values()
                for name in (level.records, *level.views.values())
            ),
        ]


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
