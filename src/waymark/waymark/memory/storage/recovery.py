# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Filling a store's in-process tables and indexes at open, and saving them for the next.

Each table and index comes from the last snapshot when it has one, caught up with the
ids journaled since (this writer's own writes) and with the rows other robots stamped
after the snapshot's marks (write_marks), and is refilled from Milvus (the source of
truth) when it has none, when its collections were made again since, or when its row
count then differs from Milvus's (another robot deleted a session). Anything refilled is
saved at once as a new snapshot; what was caught up stays in the journal (and counts
towards the next save). Where Milvus answers the vector searches, only the record tables
are held in process, so only they are saved.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pymilvus import MilvusClient

from waymark.memory.storage.concurrent_load import load_concurrently
from waymark.memory.storage.index_params import IndexParams
from waymark.memory.storage.levels import Level, table_key
from waymark.memory.storage.milvus_rows import WRITE_BATCH, batches, index_rows, record_from_row
from waymark.memory.storage.record_table import RecordTable
from waymark.memory.storage.scan import READ_BATCH, read_rows, scan_batches
from waymark.memory.storage.schema import RECORD_FIELDS
from waymark.memory.storage.session_owners import SessionOwners
from waymark.memory.storage.snapshot import Change, Saved, SnapshotDir, group_changes
from waymark.memory.storage.vector_index import VectorIndex
from waymark.memory.storage.write_marks import (
    DEFAULT_MARGIN_S,
    MarkReader,
    Marks,
    WriteClock,
    WriteMark,
    changed_filter,
    read_rows_filter,
)

# Ids written between two saves of the in-process indexes: what an open after a crash
# refetches from Milvus at most (about 1 h of keyframes at 5/s).
DEFAULT_SNAPSHOT_EVERY = 20_000
_LOG = logging.getLogger(__name__)


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
    # Ids other robots wrote after the snapshot's marks, refetched from Milvus.
    caught_up_others: int = 0
    # Tables and indexes whose snapshot did not match Milvus after catching up (refilled).
    rebuilt: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # How far each robot's rows were read, by level (write_marks).
    marks: dict[str, Marks] = field(default_factory=dict)

    def newest_of(self, robot: str) -> int:
        """The newest stamp read of `robot`'s rows, 0 for none."""
        return max(
            (marks[robot].seen_ns for marks in self.marks.values() if robot in marks), default=0
        )


class LevelSnapshots:
    """The saved tables and indexes of a store's levels, and the journal of writes since:
    each write is noted before it goes to Milvus, and every `every` ids noted the whole
    set is saved again. `indexes`: the view indexes are VectorIndexes holding every row,
    saved with the tables. Each save also records how far every robot's rows were read
    (`marks`, this writer's own up to `clock`) and which collections they came from."""

    def __init__(
        self,
        directory: Path,
        levels: Mapping[str, Level],
        every: int,
        clock: WriteClock,
        robot: str,
        indexes: bool = True,
    ) -> None:
        self.saved = SnapshotDir(directory)
        self._levels = levels
        self._every = every
        self._next = every
        self._clock = clock
        self._robot = robot
        self.indexes = indexes
        self.marks: dict[str, Marks] = {}
        self.source: dict[str, int] | None = None

    @property
    def directory(self) -> Path:
        return self.saved.directory

    @property
    def state(self) -> tuple[int, int]:
        """(generation, ids journaled since)."""
        return self.saved.generation, self.saved.pending

    def note(self, level: str, ids: Sequence[str]) -> None:
        """Journal ids about to be written (in lines of at most WRITE_BATCH ids)."""
        for batch in batches(list(ids), WRITE_BATCH):
            self.saved.note(Change(level, tuple(batch)))

    def note_session(self, level: str, session: str) -> None:
        self.saved.note(Change(level, session=session))

    def maybe_save(self) -> None:
        if self.saved.pending >= self._next:
            self.save()

    def save(self) -> None:
        """Save every record table and in-process index as the next generation (the caller
        holds the store's write lock, so they agree with the journal's end; searches go on
        meanwhile). On failure (a full disk) the previous snapshot and its journal still
        stand; the next try waits for another `every` ids."""
        snapshots = self.saved
        generation = snapshots.generation + 1
        rows = {}
        try:
            snapshots.directory.mkdir(parents=True, exist_ok=True)
            for name, level in self._levels.items():
                level.table.save(snapshots.table_path(name, generation))
                rows[table_key(name)] = len(level.table)
                for view, index in level.indexes.items() if self.indexes else ():
                    key = f'{name}/{view}'
                    index.save(snapshots.index_path(key, generation))
                    rows[key] = len(index)
            snapshots.commit(generation, rows, self._marks_now(), self.source)
        except OSError as error:
            _LOG.warning('could not save the record tables and vector indexes: %s', error)
            self._next = snapshots.pending + self._every
            return
        self._next = self._every

    def close(self) -> None:
        self.saved.close()

    def _marks_now(self) -> dict[str, Marks]:
        """The marks read at open, with this writer's own moved to its last stamp: the
        tables hold every row it wrote (the caller holds the write lock)."""
        last = self._clock.last
        marks = {level: dict(self.marks.get(level, {})) for level in self._levels}
        if last > 0:
            for level_marks in marks.values():
                own = level_marks.get(self._robot, WriteMark(0, 0))
                level_marks[self._robot] = WriteMark(max(own.seen_ns, last), max(own.from_ns, last))
        return marks


@dataclass
class LevelLoader:
    """Fills `levels` from `snapshots` (None: none kept) and Milvus; `mirrored`: the view
    indexes hold every row, so they are checked against Milvus and rebuilt from it.
    `owners` says whose rows each session holds, for catching up per robot."""

    client: MilvusClient
    levels: Mapping[str, Level]
    snapshots: LevelSnapshots | None
    params: IndexParams
    mirrored: bool
    owners: SessionOwners
    margin_s: float = DEFAULT_MARGIN_S
    _owner_map: dict[str, str] | None = field(default=None, init=False, repr=False)

    def load(self) -> LoadReport:
        started = time.perf_counter()
        report = LoadReport()
        saved = self.snapshots.saved.read() if self.snapshots is not None else None
        source = self._source()
        if saved is not None and saved.source is not None and saved.source != source:
            _LOG.warning(
                'the saved record tables were read from other collections (made again, or '
                'another server): refilled from Milvus'
            )
            saved = None
        marks: dict[str, Marks] = {}
        loaded: set[str] = set()
        jobs: dict[str, Callable[[], RecordTable | VectorIndex | None]] = {}
        for name, level in self.levels.items():
            jobs[table_key(name)] = functools.partial(self._saved_table, saved, name)
            for view in level.views if self.mirrored else ():
                key = f'{name}/{view}'
                jobs[key] = functools.partial(self._saved_index, saved, key, level.dims[view])
        parts = load_concurrently(jobs)
        for name, level in self.levels.items():
            if parts[table_key(name)] is not None:
                level.table = parts[table_key(name)]
                loaded.add(table_key(name))
            for view in level.views if self.mirrored else ():
                index = parts[f'{name}/{view}']
                if index is not None:
                    level.indexes[view] = index
                    loaded.add(f'{name}/{view}')
        if saved is not None:
            report.caught_up = self._catch_up(saved.changes, loaded)
            marks = self._catch_up_others(saved, loaded, report)
        for name, level in self.levels.items():
            if table_key(name) in loaded:
                report.loaded.append(table_key(name))
            else:
                reader = MarkReader(self._owners(), self.margin_s)
                self._refill_table(name, level, reader)
                marks[name] = reader.marks()
            report.entries[name] = len(level.table)
            for view, collection in level.views.items():
                key = f'{name}/{view}'
                if self.mirrored:
                    self._check_or_rebuild(key, level, view, collection, loaded, report)
                report.views[key] = len(level.indexes[view])
        expected = len(report.views if self.mirrored else ()) + len(report.entries)
        if self.snapshots is not None:
            self.snapshots.marks, self.snapshots.source = marks, source
            if saved is None or len(report.loaded) < expected:
                self.snapshots.save()
        report.marks = marks
        report.seconds = time.perf_counter() - started
        return report

    @property
    def _spill_dir(self) -> Path | None:
        """Where sq8 indexes keep the fp32 vectors of unsaved rows: beside the snapshots."""
        return None if self.snapshots is None else self.snapshots.directory

    def _saved_table(self, saved: Saved | None, level: str) -> RecordTable | None:
        key = table_key(level)
        if saved is None or key not in saved.rows:
            return None
        table = RecordTable.load(self.snapshots.saved.table_path(level))
        return table if table is not None and len(table) == saved.rows[key] else None

    def _saved_index(self, saved: Saved | None, key: str, dim: int) -> VectorIndex | None:
        if saved is None or key not in saved.rows:
            return None
        path = self.snapshots.saved.index_path(key)
        index = VectorIndex.load(path, dim, self.params, self._spill_dir)
        return index if index is not None and len(index) == saved.rows[key] else None

    def _catch_up(self, changes: Sequence[Change], loaded: set[str]) -> int:
        """Replay the journal onto the loaded tables and indexes, in order, with what
        Milvus holds now for each id (present: upsert; absent from a view: remove; records
        leave only with their session). Returns the ids refetched."""
        refetched = 0
        for change in group_changes(changes):
            level = self.levels.get(change.level)
            if level is None:  # a level this store does not keep: nothing to replay
                continue
            if table_key(change.level) in loaded:
                self._replay_records(change, level)
            for view, collection in level.views.items():
                if f'{change.level}/{view}' not in loaded:
                    continue
                index = level.indexes[view]
                if change.session is not None:
                    index.remove_session(change.session)
                    continue
                for batch in batches(list(dict.fromkeys(change.ids)), READ_BATCH):
                    rows = self.client.get(
                        collection, ids=list(batch), output_fields=['session', 'idx', 'vector']
                    )
                    index_rows(index, rows)
                    found = {row['id'] for row in rows}
                    index.remove([key for key in batch if key not in found])
            refetched += len(change.ids)
        return refetched

    def _catch_up_others(
        self, saved: Saved, loaded: set[str], report: LoadReport
    ) -> dict[str, Marks]:
        """Read the rows each robot stamped after the snapshot's marks, every level at once
        (the time goes in waiting for the server). A snapshot saved before marks existed
        was read when no row had a stamp. A level whose table still differs from Milvus
        leaves `loaded`, to be refilled."""
        owners = self._owners()
        jobs = {}
        for name, level in self.levels.items():
            if table_key(name) not in loaded:
                continue
            if saved.marks is None:
                known = {robot: WriteMark(0, 0) for robot in set(owners.values())}
            else:
                known = saved.marks.get(name, {})
            jobs[name] = functools.partial(self._catch_up_level, name, level, owners, known, loaded)
        marks = {}
        for name, (level_marks, read, matches) in load_concurrently(jobs, waiting=True).items():
            marks[name] = level_marks
            report.caught_up_others += read
            if not matches:
                loaded.discard(table_key(name))
                _LOG.warning(
                    'record table %s differs from Milvus after catching up: refilled',
                    table_key(name),
                )
                report.rebuilt.append(table_key(name))
        return marks

    def _catch_up_level(
        self, name: str, level: Level, owners: dict[str, str], known: Marks, loaded: set[str]
    ) -> tuple[Marks, int, bool]:
        """One level's rows stamped since `known` (their records, and their views where
        held in process); the level's marks after, how many rows were read, and whether
        the table then holds what Milvus does up to those marks."""
        reader = MarkReader(owners, self.margin_s)
        expression = changed_filter(owners, known)
        rows = (
            read_rows(self.client, level.records, ['id', *RECORD_FIELDS], expression)
            if expression
            else []
        )
        for row in rows:
            reader.see(row)
        level.table.upsert([record_from_row(row, name) for row in rows])
        if rows:
            views = Change(name, tuple(row['id'] for row in rows))
            self._catch_up([views], loaded - {table_key(name)})
        marks = reader.marks(known)
        kept = read_rows_filter(owners, marks, level.table.sessions())
        return marks, len(rows), self._milvus_count(level.records, kept) == len(level.table)

    def _owners(self) -> dict[str, str]:
        if self._owner_map is None:
            self._owner_map = self.owners.owners()
        return self._owner_map

    def _source(self) -> dict[str, int]:
        """Each records collection's id: a collection made again has another."""
        return {
            level.records: int(self.client.describe_collection(level.records)['collection_id'])
            for level in self.levels.values()
        }

    def _replay_records(self, change: Change, level: Level) -> None:
        if change.session is not None:
            level.table.remove_session(change.session)
            return
        for batch in batches(list(dict.fromkeys(change.ids)), READ_BATCH):
            rows = self.client.get(
                level.records, ids=list(batch), output_fields=list(RECORD_FIELDS)
            )
            level.table.upsert([record_from_row(row, change.level) for row in rows])

    def _refill_table(self, name: str, level: Level, reader: MarkReader) -> None:
        table = RecordTable()
        for rows in self._scan(level.records, RECORD_FIELDS):
            for row in rows:
                reader.see(row)
            table.upsert([record_from_row(row, name) for row in rows])
        level.table = table

    def _check_or_rebuild(
        self,
        key: str,
        level: Level,
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
        index = VectorIndex(level.dims[view], self.params, self._spill_dir)
        for rows in self._scan(collection, ('session', 'idx', 'vector')):
            index_rows(index, rows)
        level.indexes[view] = index

    def _milvus_count(self, collection: str, expression: str = '') -> int:
        rows = self.client.query(collection, filter=expression, output_fields=['count(*)'])
        return int(rows[0]['count(*)'])

    def _scan(self, collection: str, fields: Sequence[str]) -> Iterator[list[dict]]:
        return scan_batches(self.client, collection, ['id', *fields])
