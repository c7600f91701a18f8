# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The task ledger: one file per closed task, an open-task marker per running one, and a
one-line-per-task index.

Layout of the ledger directory:

    open/<task_id>.json      a task that began and has not closed (its marker)
    records/<task_id>.json   a closed task's record
    ledger.md                the index: one line per closed task, oldest first

A task is never lost: `begin` makes its marker durable before the runner does anything
else, `close` writes the record before it removes the marker, and `recover_interrupted`,
run at start, turns every marker without a record into a STOPPED record. Every file is
written whole (temporary file, fsync, rename, fsync of the directory), so a crash leaves
either the old state or the new one plus a temporary file that is ignored.

Only the runner writes, through `TaskLedger`; everyone else (the agent, a service, the
command line) gets a `LedgerReader`, which has no method that writes. A `TaskLedger` holds an
advisory lock on `writer.lock` for as long as it lives: a second runner on the same folder
would close the first one's running task as interrupted at its start, so it is refused
instead. The kernel drops the lock when the process dies, however it dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from waymark.durable import fsync_directory, is_temporary, replace_atomically
from waymark.tasks.handover import SanitizedHandover, sanitize_handover
from waymark.tasks.outcomes import TerminationReason
from waymark.tasks.records import (
    GoalModality,
    OpenTask,
    RecordFormatError,
    TaskGoal,
    TaskRecord,
    open_task_from_json,
    open_task_to_json,
)

_LOG = logging.getLogger(__name__)
TASK_ID = re.compile(r't(\d{6,})-[0-9a-f]{8}')
_INDEXED_ID = re.compile(r'- (t\d{6,}-[0-9a-f]{8}) \|')
_OPEN = 'open'
_RECORDS = 'records'
INDEX_FILE = 'ledger.md'
WRITER_LOCK = 'writer.lock'
_INDEX_GOAL_CHARS = 60
_INDEX_PLACES = 3
_INDEX_PLACE_CHARS = 32


class LedgerLockedError(RuntimeError):
    """Another live process already writes this ledger."""


class UnknownTaskError(LookupError):
    """No record (or no open task) has this id."""


@dataclass(frozen=True)
class LedgerLimits:
    """What one read may return: records are summaries, and a reader's context is finite."""

    max_record_chars: int = 16_000
    max_listed: int = 100
    max_index_chars: int = 20_000

    def __post_init__(self) -> None:
        if not (1_000 <= self.max_record_chars <= 1_000_000):
            raise ValueError(f'max_record_chars must be in [1000, 1e6]: {self}')
        if not (1 <= self.max_listed <= 10_000 and 1 <= self.max_index_chars <= 1_000_000):
            raise ValueError(f'max_listed and max_index_chars must be positive, bounded: {self}')


@dataclass(frozen=True)
class UnreadableFile:
    """A ledger file that could not be read, and why: reported, never silently dropped."""

    name: str
    reason: str


@dataclass(frozen=True)
class RecordPage:
    """Records newest first, plus the files among them that could not be read."""

    records: tuple[TaskRecord, ...]
    unreadable: tuple[UnreadableFile, ...] = ()


@dataclass(frozen=True)
class IndexText:
    """A prefix of the index; `truncated` says the reader did not see all of it."""

    text: str
    truncated: bool
    total_bytes: int


@dataclass(frozen=True)
class RecoveryReport:
    """What `recover_interrupted` found at start."""

    stopped: tuple[str, ...] = ()  # markers without a record, now STOPPED (interrupted)
    completed: tuple[str, ...] = ()  # closes cut short after the record was written
    temporary_removed: int = 0
    unreadable: tuple[UnreadableFile, ...] = ()


class LedgerReader:
    """Reads a ledger that the runner owns. The directory need not exist yet."""

    def __init__(self, root: str | os.PathLike, limits: LedgerLimits | None = None) -> None:
        self.root = Path(root)
        self.limits = limits or LedgerLimits()

    def record(self, task_id: str) -> TaskRecord:
        """One record; UnknownTaskError if absent, RecordFormatError if unreadable."""
        return self._read_record(self._path(_RECORDS, task_id))

    def records(self, limit: int | None = None) -> RecordPage:
        """The newest `limit` records (capped by `max_listed`); unreadable files among
        them are listed apart and do not hide the others."""
        count = self.limits.max_listed if limit is None else limit
        if count < 1:
            raise ValueError(f'limit must be >= 1, got {limit}')
        count = min(count, self.limits.max_listed)
        records, unreadable = [], []
        for path in reversed(self._files(_RECORDS)[-count:]):
            try:
                records.append(self._read_record(path))
            except (RecordFormatError, OSError) as error:
                unreadable.append(UnreadableFile(path.name, str(error)))
        return RecordPage(tuple(records), tuple(unreadable))

    def open_task(self, task_id: str) -> OpenTask:
        """A task that began and has not closed; UnknownTaskError if there is none."""
        return open_task_from_json(self._read_text(self._path(_OPEN, task_id)))

    def open_tasks(self) -> tuple[OpenTask, ...]:
        """Tasks that began and have not closed, oldest first (unreadable markers skipped;
        `recover_interrupted` reports them)."""
        tasks = []
        for path in self._files(_OPEN):
            # A marker may also vanish here: its task closed while the folder was read.
            with contextlib.suppress(RecordFormatError, UnknownTaskError, OSError):
                tasks.append(open_task_from_json(self._read_text(path)))
        return tuple(tasks)

    def index_text(self, max_chars: int | None = None) -> IndexText:
        """The index's first `max_chars` characters (like every bounded file read: a
        prefix, never an offset), and whether it was cut."""
        limit = self.limits.max_index_chars if max_chars is None else max_chars
        if not 1 <= limit <= self.limits.max_index_chars:
            raise ValueError(f'max_chars must be in [1, {self.limits.max_index_chars}]')
        try:
            with open(self.root / INDEX_FILE, encoding='utf-8', errors='replace') as stream:
                text = stream.read(limit + 1)
                total_bytes = os.fstat(stream.fileno()).st_size
        except FileNotFoundError:
            return IndexText('', False, 0)
        return IndexText(text[:limit], len(text) > limit, total_bytes)

    def _read_record(self, path: Path) -> TaskRecord:
        record = TaskRecord.from_json(self._read_text(path))
        if record.task_id != path.stem:
            raise RecordFormatError(f'{path.name} holds the record of {record.task_id}')
        return record

    def _read_text(self, path: Path) -> str:
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise UnknownTaskError(f'no task {path.stem} in {path.parent.name}/') from None
        if size > self.limits.max_record_chars * 4:  # UTF-8: at most 4 bytes a character
            raise RecordFormatError(f'{path.name} is {size} bytes, too large for a record')
        try:
            text = path.read_text(encoding='utf-8', errors='strict')
        except UnicodeDecodeError as error:
            raise RecordFormatError(f'{path.name} is not UTF-8 text: {error}') from None
        if len(text) > self.limits.max_record_chars:
            raise RecordFormatError(
                f'{path.name} has {len(text)} characters, more than max_record_chars='
                f'{self.limits.max_record_chars}'
            )
        return text

    def _path(self, folder: str, task_id: str) -> Path:
        if not TASK_ID.fullmatch(task_id):
            raise UnknownTaskError(f'not a task id: {task_id!r}')
        return self.root / folder / f'{task_id}.json'

    def _files(self, folder: str) -> list[Path]:
        """Task files of a folder in task order (ids sort by sequence); temporary files
        and strangers are not task files."""
        try:
            names = os.listdir(self.root / folder)
        except FileNotFoundError:
            return []
        ids = [name[:-5] for name in names if name.endswith('.json')]
        ids = [task_id for task_id in ids if TASK_ID.fullmatch(task_id)]
        return [self.root / folder / f'{task_id}.json' for task_id in sorted(ids, key=_order)]


class TaskLedger(LedgerReader):
    """The ledger's only writer (the task runner). One process owns a ledger at a time."""

    def __init__(
        self, root: str | os.PathLike, limits: LedgerLimits | None = None, fsync: bool = True
    ) -> None:
        super().__init__(root, limits)
        self.fsync = fsync
        self._lock = threading.Lock()
        for folder in (_OPEN, _RECORDS):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        self._writer_lock = _take_writer_lock(self.root / WRITER_LOCK)  # held while alive

    def reader(self) -> LedgerReader:
        """A read-only view of this ledger for the agent, a service or the command line."""
        return LedgerReader(self.root, self.limits)

    def begin(self, goal: TaskGoal, run_id: str = '', now_ns: int | None = None) -> str:
        """Make the task's marker durable and return its id; call before anything else."""
        if len(run_id) > 64:
            raise ValueError('run_id must be at most 64 characters')
        with self._lock:
            sequence = 1 + max(
                (_order(path.stem) for folder in (_OPEN, _RECORDS) for path in self._files(folder)),
                default=0,
            )
            task = OpenTask(
                f't{sequence:06d}-{secrets.token_hex(4)}',
                run_id,
                sequence,
                goal,
                time.time_ns() if now_ns is None else now_ns,
            )
            text = open_task_to_json(task)
            open_task_from_json(text)  # what cannot be read back is refused, not written
            self._write(self._path(_OPEN, task.task_id), text)
        return task.task_id

    def close(self, record: TaskRecord) -> SanitizedHandover:
        """Record an open task: the record first, then the marker goes, then the index
        line. The handover is stored as `sanitize_handover` leaves it; what that removed
        is returned. A record too large, or one that does not match its marker, is
        refused before anything is written, and the task stays open."""
        handover = sanitize_handover(record.handover)
        record = replace(record, handover=handover.text)
        text = record.to_json()
        TaskRecord.from_json(text)  # what cannot be read back is refused, not written
        if len(text) > self.limits.max_record_chars:
            raise ValueError(
                f'record of {record.task_id} has {len(text)} characters, more than '
                f'max_record_chars={self.limits.max_record_chars}: shorten its evidence'
            )
        with self._lock:
            task = self.open_task(record.task_id)
            opened = (task.run_id, task.sequence, task.goal, task.started_ns)
            if opened != (record.run_id, record.sequence, record.goal, record.started_ns):
                raise ValueError(f'record of {record.task_id} does not match the task it closes')
            self._write(self._path(_RECORDS, record.task_id), text)
            self._finish(record, indexed=set())
        return handover

    def recover_interrupted(self, now_ns: int | None = None) -> RecoveryReport:
        """At start: record every task whose runner died as STOPPED (interrupted), finish
        closes cut short, and delete temporary files of torn writes."""
        ended = time.time_ns() if now_ns is None else now_ns
        stopped, completed, unreadable = [], [], []
        with self._lock:
            removed = self._remove_temporary()
            for marker in self._files(_OPEN):
                record_path = self._path(_RECORDS, marker.stem)
                try:
                    if record_path.exists():
                        self._finish(self._read_record(record_path))
                        completed.append(marker.stem)
                        continue
                    task = open_task_from_json(self._read_text(marker))
                    record = TaskRecord.for_task(
                        task,
                        max(ended, task.started_ns),
                        stop_reason=TerminationReason.INTERRUPTED,
                    )
                    self._write(record_path, record.to_json())
                    self._finish(record)
                    stopped.append(task.task_id)
                except (RecordFormatError, OSError) as error:
                    # Left in place: the next start reports it again, and nothing is lost.
                    unreadable.append(UnreadableFile(marker.name, str(error)))
            completed.extend(self._index_missing(unreadable))
        if stopped or unreadable:
            _LOG.warning('ledger recovery: stopped %s, unreadable %s', stopped, unreadable)
        return RecoveryReport(tuple(stopped), tuple(completed), removed, tuple(unreadable))

    def _finish(self, record: TaskRecord, indexed: set[str] | None = None) -> None:
        """Remove the marker, then add the index line unless `indexed` (read from the
        index when None) already has it."""
        marker = self._path(_OPEN, record.task_id)
        marker.unlink(missing_ok=True)
        if self.fsync:
            fsync_directory(marker.parent)
        if record.task_id not in (self._indexed() if indexed is None else indexed):
            with open(self.root / INDEX_FILE, 'a', encoding='utf-8') as stream:
                stream.write(index_line(record) + '\n')
                stream.flush()
                if self.fsync:
                    os.fsync(stream.fileno())

    def _index_missing(self, unreadable: list[UnreadableFile]) -> list[str]:
        """Index lines lost to a crash between a marker's removal and the append."""
        indexed, added = self._indexed(), []
        for path in self._files(_RECORDS):
            if path.stem in indexed or self._path(_OPEN, path.stem).exists():
                continue
            try:
                self._finish(self._read_record(path))
                added.append(path.stem)
            except (RecordFormatError, OSError) as error:
                unreadable.append(UnreadableFile(path.name, str(error)))
        return added

    def _indexed(self) -> set[str]:
        try:
            with open(self.root / INDEX_FILE, encoding='utf-8', errors='replace') as stream:
                return {match.group(1) for line in stream if (match := _INDEXED_ID.match(line))}
        except FileNotFoundError:
            return set()

    def _remove_temporary(self) -> int:
        removed = 0
        for folder in (_OPEN, _RECORDS):
            for name in os.listdir(self.root / folder):
                if is_temporary(name):
                    (self.root / folder / name).unlink(missing_ok=True)
                    removed += 1
        return removed

    def _write(self, path: Path, text: str) -> None:
        replace_atomically(path, text.encode('utf-8'), self.fsync)


def unreadable_line(bad: UnreadableFile) -> str:
    """How a record file that cannot be read is listed in place of its index line."""
    return f'- {bad.name} | UNREADABLE | {bad.reason}'


def index_line(record: TaskRecord) -> str:
    """One index line: id, status (with the reason of a stop), abbreviated goal and up to
    three places, separated by ' | '."""
    goal = record.goal
    if goal.modality is GoalModality.PHOTO:
        summary = f'photo {goal.text}'.strip()
    elif goal.modality is GoalModality.PLACE:
        summary = f'place {goal.text}'
    else:
        summary = goal.text
    summary = _cell(summary)
    summary = _abbreviated(summary, _INDEX_GOAL_CHARS)
    status = str(record.status)
    if record.termination is not TerminationReason.CLOSED:
        status += f' ({record.termination})'
    places = ', '.join(
        _abbreviated(_cell(place), _INDEX_PLACE_CHARS) for place in record.places[:_INDEX_PLACES]
    )
    return f'- {record.task_id} | {status} | {summary} | places: {places or "-"}'


def _cell(text: str) -> str:
    """Text as one index cell: one line, and no column separator to misread."""
    return ' '.join(text.replace('|', '/').split())


def _abbreviated(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + '…'


def _order(task_id: str) -> int:
    match = TASK_ID.fullmatch(task_id)
    return int(match.group(1)) if match else 0


def _take_writer_lock(path: Path) -> TextIO:
    """The open lock file, held exclusively until it is closed or the process ends."""
    lock = path.open('a+')
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or 'unknown'
        lock.close()
        raise LedgerLockedError(
            f'task ledger {path.parent} is written by another process (pid {holder}): run '
            'one task runner per data_dir, or give this one its own data_dir'
        ) from None
    lock.truncate(0)
    lock.write(str(os.getpid()))
    lock.flush()
    return lock
