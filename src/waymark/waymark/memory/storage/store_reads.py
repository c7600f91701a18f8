# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What a store holds, read without searching: records by id, session and time, view
membership, stored vectors and disk use. A base of MemoryStore, which owns the levels
these read, so its own module can keep to writing and searching."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
from pymilvus import MilvusClient

from waymark.memory.entries import FRAME, SEGMENT, FrameRecord
from waymark.memory.retention import dir_bytes
from waymark.memory.storage.levels import Level
from waymark.memory.storage.milvus_rows import batches
from waymark.memory.storage.record_table import SessionSummary
from waymark.memory.storage.recovery import LevelSnapshots
from waymark.memory.storage.scan import READ_BATCH


def locked(method: Callable) -> Callable:
    """Run a reading method under the store's local lock (see MemoryStore.__init__)."""

    @functools.wraps(method)
    def under_lock(self: StoreReads, *args, **kwargs):
        with self._local_lock:
            return method(self, *args, **kwargs)

    return under_lock


class StoreReads:
    """The reading half of MemoryStore (which sets these attributes when it opens)."""

    _levels: dict[str, Level]
    _local_lock: threading.RLock
    _client: MilvusClient | None
    _lite_path: Path | None
    _snapshots: LevelSnapshots | None

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
        return None if self._snapshots is None else self._snapshots.state

    def views(self, level: str = FRAME) -> list[str]:
        return list(self._level(level).dims)

    # -- reading -------------------------------------------------------------------------

    @locked
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

    @locked
    def records_before(self, end_ns: int, level: str = FRAME) -> list[FrameRecord]:
        """Every entry stamped before `end_ns`, in chronological order."""
        table = self._level(level).table
        if not len(table):
            return []
        return table.chronological(-(2**63), int(end_ns) - 1, len(table), None)

    @locked
    def get(self, ids: Iterable[str], level: str = FRAME) -> list[FrameRecord]:
        """Records for the ids that exist, in the order asked; unknown ids are skipped."""
        return self._level(level).table.get(ids)

    @locked
    def find_stamp(self, session: str, stamp_ns: int, level: str = FRAME) -> FrameRecord | None:
        return self._level(level).table.find_stamp(session, stamp_ns)

    @locked
    def count(self, session: str | None = None, view: str | None = None, level: str = FRAME) -> int:
        """Entries stored (with `view` when given), for one session or all."""
        store_level = self._level(level)
        if view is None:
            return store_level.table.count(session)
        if view not in store_level.indexes:
            raise ValueError(f'unknown view {view!r}; {level} level has {sorted(store_level.dims)}')
        return store_level.indexes[view].count(session)

    @locked
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
        for batch in batches(list(dict.fromkeys(ids)), READ_BATCH):
            for row in self._client.get(
                store_level.views[view], ids=list(batch), output_fields=['vector']
            ):
                found[row['id']] = np.asarray(row['vector'], dtype=np.float32)
        return found

    @locked
    def image_refs(self) -> set[str]:
        """Every image reference held by any entry (content-addressed images may be shared)."""
        refs = set()
        for level in self._levels.values():
            if len(level.table):  # deletions are rare: a full pass is fine
                every = level.table.chronological(-(2**63), 2**63 - 1, len(level.table), None)
                refs.update(record.image_ref for record in every if record.image_ref)
        return refs

    @locked
    def sessions(self, level: str = FRAME) -> list[str]:
        """Names of the sessions with entries at `level`, sorted."""
        return self._level(level).table.sessions()

    @locked
    def summary(self, session: str, level: str = FRAME) -> SessionSummary:
        return self._level(level).table.summary(session)

    @locked
    def next_index(self, session: str, level: str = FRAME) -> int:
        """One past the largest index stored for `session` (0 when it has none)."""
        return self._level(level).table.next_index(session)

    def _level(self, level: str) -> Level:
        if level not in self._levels:
            raise ValueError(f'unknown level {level!r}; expected one of {tuple(self._levels)}')
        return self._levels[level]
