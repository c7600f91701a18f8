# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Saved record tables and vector indexes, and a journal of the writes made after them.

Refilling the in-process tables and indexes from Milvus grows with the memory (half a
minute at 100k entries, several minutes at 1M), so a restart must not pay it. A snapshot
is a numbered generation of saved files (a record table per level, a vector index per
view where they are held in process) plus `snapshot.json` (the generation, each file's row
count, how far each robot's rows were read and the collections they came from; written
last and atomically: the high-water mark).
Every write after it is first noted in the generation's journal (ids or a removed session,
one JSON line each), so an open loads the snapshot and refetches from Milvus only the ids
the journal names; Milvus stays the source of truth for what they now hold.

A journal line goes down before the Milvus write it announces, so a crash between the two
leaves an id that Milvus may or may not hold: refetching resolves it either way. A torn
last line is such a crash and is ignored; a damaged line elsewhere voids the snapshot. When
the journal cannot be written (a full disk) the snapshot is voided and journaling stops
until the next save, so the next open rebuilds rather than trusting it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from waymark.durable import is_temporary, replace_atomically
from waymark.memory.storage.write_marks import Marks, marks_from_json, marks_to_json

_LOG = logging.getLogger(__name__)

MARK = 'snapshot.json'
_FORMAT = 1
# Largest journal line read back: a write batch of ids (WRITE_BATCH rows, 96-byte ids).
_MAX_LINE = 1 << 20


@dataclass(frozen=True)
class Change:
    """One journaled write: these ids of a level were written or removed, or a whole
    session of the level was removed."""

    level: str
    ids: tuple[str, ...] = ()
    session: str | None = None


@dataclass
class Saved:
    """What the last snapshot holds and what was written after it. `marks`: how far it
    had read each robot's rows, by level (None: saved before marks, or unreadable);
    `source`: the collections it was read from, by name, as Milvus identifies them."""

    generation: int
    rows: dict[str, int]
    changes: list[Change] = field(default_factory=list)
    marks: dict[str, Marks] | None = None
    source: dict[str, int] | None = None


class SnapshotDir:
    """One directory of saved indexes, their high-water mark and the journal after it."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.generation = 0
        # Ids journaled since the snapshot (the work a crash would leave for the next open).
        self.pending = 0
        self._journal = None
        self._voided = False

    def index_path(self, key: str, generation: int | None = None) -> Path:
        """A view's saved vector index (key: `level/view`)."""
        number = self.generation if generation is None else generation
        return self.directory / f'{key.replace("/", "-")}.{number}.vindex'

    def table_path(self, level: str, generation: int | None = None) -> Path:
        """A level's saved record table."""
        number = self.generation if generation is None else generation
        return self.directory / f'{level}.{number}.records'

    def read(self) -> Saved | None:
        """The snapshot and its journal; None when there is none or it cannot be trusted.

        Also opens the journal for appending, so writes after the open are noted."""
        saved = self._read_mark()
        if saved is not None:
            changes = self._read_journal(saved.generation)
            if changes is None:
                saved = None
            else:
                saved.changes = changes
        if saved is None:
            self._void()
            return None
        self.generation = saved.generation
        self.pending = sum(max(len(change.ids), 1) for change in saved.changes)
        self._voided = False
        self._open_journal()
        return saved

    def note(self, change: Change) -> None:
        """Journal a write before it is made; on failure void the snapshot instead."""
        if self._voided or self._journal is None:
            return
        line = json.dumps(
            {'level': change.level, 'ids': list(change.ids), 'session': change.session}
        )
        try:
            self._journal.write(line + '\n')
            self._journal.flush()
            os.fsync(self._journal.fileno())
        except OSError as error:
            _LOG.warning('index journal not writable (%s): the next open rebuilds', error)
            self._void()
            return
        self.pending += max(len(change.ids), 1)

    def commit(
        self,
        generation: int,
        rows: dict[str, int],
        marks: Mapping[str, Marks] | None = None,
        source: Mapping[str, int] | None = None,
    ) -> None:
        """Make `generation` (whose index files are written and synced) the snapshot and
        start its empty journal; the older generation's files go."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._close_journal()
        journal = self._journal_path(generation)
        journal.write_bytes(b'')
        mark = {'format': _FORMAT, 'generation': generation, 'rows': rows}
        if marks is not None:
            mark['marks'] = marks_to_json(marks)
        if source is not None:
            mark['source'] = dict(source)
        replace_atomically(self.directory / MARK, json.dumps(mark).encode())
        self.generation = generation
        self.pending = 0
        self._voided = False
        self._open_journal()
        self._remove_other_generations(generation)

    def close(self) -> None:
        self._close_journal()

    # -- internals -----------------------------------------------------------------------

    def _read_mark(self) -> Saved | None:
        try:
            mark = json.loads((self.directory / MARK).read_text())
            generation = int(mark['generation'])
            rows = {str(key): int(value) for key, value in dict(mark['rows']).items()}
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as error:
            _LOG.warning('index snapshot mark unreadable, indexes to be rebuilt: %s', error)
            return None
        if mark.get('format') != _FORMAT or generation < 1:
            return None
        source = mark.get('source')
        if source is not None and not (
            isinstance(source, dict) and all(isinstance(v, int) for v in source.values())
        ):
            _LOG.warning('index snapshot mark damaged (source), indexes to be rebuilt')
            return None
        return Saved(generation, rows, marks=marks_from_json(mark.get('marks')), source=source)

    def _read_journal(self, generation: int) -> list[Change] | None:
        path = self._journal_path(generation)
        try:
            with open(path, 'rb') as stream:
                data = stream.read()
            # The text after the last newline is empty, or a line a crash cut short: cut
            # it off, or the next line appended would join it and read as damage.
            whole = data.rfind(b'\n') + 1
            if whole < len(data):
                os.truncate(path, whole)
        except OSError as error:
            _LOG.warning('index journal unreadable, indexes to be rebuilt: %s', error)
            return None
        lines = data[:whole].split(b'\n')
        changes = []
        for number, line in enumerate(lines[:-1]):
            change = _change_of(line)
            if change is None:
                _LOG.warning('index journal line %d damaged, indexes to be rebuilt', number + 1)
                return None
            changes.append(change)
        return changes

    def _void(self) -> None:
        """Drop the mark: an open after this rebuilds every index from Milvus."""
        self._voided = True
        self._close_journal()
        try:
            (self.directory / MARK).unlink(missing_ok=True)
        except OSError as error:
            _LOG.warning('could not remove the index snapshot mark: %s', error)

    def _open_journal(self) -> None:
        self._close_journal()
        try:
            self._journal = open(self._journal_path(self.generation), 'a')  # noqa: SIM115
        except OSError as error:
            _LOG.warning('index journal not writable (%s): the next open rebuilds', error)
            self._void()

    def _close_journal(self) -> None:
        if self._journal is not None:
            with contextlib.suppress(OSError):
                self._journal.close()
            self._journal = None

    def _journal_path(self, generation: int) -> Path:
        return self.directory / f'journal.{generation}.jsonl'

    def _remove_other_generations(self, generation: int) -> None:
        for path in self.directory.iterdir():
            parts = path.name.split('.')
            saved = path.suffix in ('.vindex', '.records', '.jsonl') and len(parts) > 2
            stale = saved and parts[-2] != str(generation)
            if stale or path.name == 'clean-shutdown.json' or is_temporary(path.name):
                path.unlink(missing_ok=True)


def _change_of(line: bytes) -> Change | None:
    if len(line) > _MAX_LINE:
        return None
    try:
        data = json.loads(line)
        level = data['level']
        ids = data['ids']
        session = data['session']
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(level, str) or not isinstance(ids, list):
        return None
    if not all(isinstance(key, str) for key in ids):
        return None
    if session is not None and not isinstance(session, str):
        return None
    if (session is None) == (not ids):  # exactly one of the two
        return None
    return Change(level, tuple(ids), session)


def group_changes(changes: Sequence[Change]) -> list[Change]:
    """Consecutive id changes of one level merged (fewer Milvus round trips on replay);
    session removals keep their place, since a later write may bring a session back."""
    merged: list[Change] = []
    for change in changes:
        last = merged[-1] if merged else None
        if (
            last is not None
            and change.session is None
            and last.session is None
            and last.level == change.level
        ):
            merged[-1] = Change(last.level, last.ids + change.ids)
        else:
            merged.append(change)
    return merged
