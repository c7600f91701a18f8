# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Accepted keyframes on their way into memory: journal, queue, backlog, ingest thread.

OCR and embedding take far longer than a message callback should, so `accept` only
journals and queues; a thread prepares keyframes (several at once) and stores them in
arrival order, retrying while the database is away. A keyframe leaves the journal only
once it is stored: a killed process, a database that is away, or a stop with a full queue
loses nothing accepted, and the next `start` ingests what the journal holds.

Keyframes the queue has no room for, and those a previous run left in the journal, form
the backlog: read back from the journal in stamp order after the queue, while new
keyframes keep being journaled and acknowledged behind it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from waymark.memory.entries import Keyframe
from waymark.memory.ingest.admission import RefusedError, shown
from waymark.memory.ingest.journal import JournalFullError, KeyframeJournal
from waymark.memory.ingest.prepare_pool import PreparePool
from waymark.memory.storage.session_owners import SessionOwnedError

RETRY_LOG_PERIOD_S = 10.0  # one "retrying" line per this long while the database is away


class Memory(Protocol):
    """What ingest needs of the memory service."""

    def stored_as(self, keyframe: Keyframe) -> object | None: ...

    def prepare(self, keyframe: Keyframe) -> Any: ...

    def commit(self, prepared: Any) -> object: ...


class Log(Protocol):
    def info(self, message: str) -> object: ...

    def warning(self, message: str) -> object: ...

    def error(self, message: str) -> object: ...


# acknowledge(keyframe, refused): tell the sender it may forget the keyframe.
Acknowledge = Callable[[Keyframe, bool], None]


@dataclass(frozen=True)
class _Job:
    keyframe: Keyframe
    journal_path: Path | None


class IngestWorker:
    """Journals, queues and stores keyframes; `counts` says what happened to them.

    `put_timeout_s` (how long `accept` waits for queue space) and `retry_max_s` (the
    longest wait between store retries) may be changed while it runs.
    """

    def __init__(
        self,
        memory: Memory,
        journal: KeyframeJournal,
        acknowledge: Acknowledge,
        log: Log,
        *,
        queue_size: int,
        prepare_workers: int = 2,
        put_timeout_s: float = 5.0,
        retry_max_s: float = 10.0,
        counts: Counter[str] | None = None,
        on_stored: Callable[[], None] = lambda: None,
    ) -> None:
        self.memory, self.journal = memory, journal
        self.put_timeout_s, self.retry_max_s = put_timeout_s, retry_max_s
        self.counts: Counter[str] = counts if counts is not None else Counter()
        self._acknowledge, self._log, self._on_stored = acknowledge, log, on_stored
        self._prepare_workers = prepare_workers
        self._queue: queue.Queue[_Job] = queue.Queue(maxsize=queue_size)
        # Journaled keyframes waiting behind the queue, oldest first; bounded by the
        # journal's cap (only their paths are held).
        self._backlog: deque[Path] = deque()
        self._backlog_lock = threading.Lock()
        self._stop = threading.Event()
        self._deadline = float('inf')  # set by stop: when the thread must give up
        self._thread: threading.Thread | None = None
        self._last_retry_log = -float('inf')

    @property
    def queued(self) -> int:
        return self._queue.qsize()

    @property
    def queue_size(self) -> int:
        return self._queue.maxsize

    @property
    def backlog(self) -> int:
        return len(self._backlog)

    @property
    def idle(self) -> bool:
        return self._queue.empty() and not self._backlog

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> int:
        """Start the ingest thread, with everything the journal holds as the backlog (what
        a previous run or the last `stop` left); returns how many keyframes that is."""
        if self.running:
            raise RuntimeError('the previous ingest thread is still storing a keyframe')
        while not self._queue.empty():  # journaled, so in the backlog; or never acknowledged
            self._queue.get_nowait()
        pending = self.journal.paths()
        with self._backlog_lock:
            self._backlog = deque(pending)
        self.counts['keyframes_recovered_from_journal'] = len(pending)
        self._stop.clear()
        self._deadline = float('inf')
        self._thread = threading.Thread(target=self._ingest_loop, name='ingest', daemon=True)
        self._thread.start()
        return len(pending)

    def stop(self, wait_s: float) -> int:
        """Store what is queued for at most `wait_s`, then stop; returns how many keyframes
        are left (they stay in the journal for the next start)."""
        if self._thread is None:
            return 0
        self._deadline = time.monotonic() + wait_s
        self._stop.set()
        self._thread.join(timeout=wait_s + 1.0)
        left = self.queued + self.backlog
        if left or self.running:
            self._log.warning(
                f'{left} keyframes not ingested within {wait_s:.0f} s; they stay in the '
                'journal for the next start'
            )
        return left

    # Arrival -------------------------------------------------------------------------
    def accept(self, keyframe: Keyframe) -> None:
        """Journal and queue a keyframe, acknowledging it once it is journaled (or refused
        for good). A keyframe not acknowledged is one the sender must send again."""
        name = f'{shown(keyframe.session)}/{keyframe.index}'
        try:
            stored = self.memory.stored_as(keyframe)
        except RefusedError as error:  # another keyframe is stored at its stamp
            self._refuse(keyframe, f'rejected keyframe {name}: {error}')
            return
        if stored is not None:  # sent again after it was stored: nothing to write
            self.counts['keyframes_duplicate'] += 1
            self._acknowledge(keyframe, False)
            return
        if self.journal.holds(keyframe):
            # Sent again (our acknowledgement was lost, or the sender restarted): it is
            # queued or in the backlog already.
            self.counts['keyframes_resent_while_journaled'] += 1
            self._acknowledge(keyframe, False)
            return
        if self.journal.path_of(keyframe).exists():
            self._refuse(
                keyframe,
                f'rejected keyframe {name}: another keyframe with its session and stamp is '
                'journaled',
            )
            return
        path = None
        try:
            path = self.journal.write(keyframe)
        except (JournalFullError, OSError) as error:
            # Still ingested if the process lives; not acknowledged, so the sender keeps it.
            self.counts['keyframes_not_journaled'] += 1
            self._log.warning(f'keyframe {name} not journaled: {error}')
        if path is not None:
            self._acknowledge(keyframe, False)
            with self._backlog_lock:
                if self._backlog:  # behind the backlog, to stay in order
                    self._backlog.append(path)
                    self.counts['keyframes_behind_backlog'] += 1
                    return
        try:
            self._queue.put(_Job(keyframe, path), timeout=self.put_timeout_s)
        except queue.Full:
            # Journaled keyframes wait in the backlog; the rest are refused (unacknowledged,
            # so the sender sends them again).
            if path is not None:
                with self._backlog_lock:
                    self._backlog.append(path)
            self.counts['keyframes_deferred_queue_full' if path else 'keyframes_refused'] += 1
            self._log.error(
                f'ingest queue full for {self.put_timeout_s:.1f} s: keyframe {name} '
                + ('waits in the journal backlog' if path else 'refused')
            )

    def _refuse(self, keyframe: Keyframe, reason: str) -> None:
        self.counts['keyframes_rejected'] += 1
        self.counts['keyframes_conflicting'] += 1
        self._log.warning(reason)
        self._acknowledge(keyframe, True)

    # The ingest thread ---------------------------------------------------------------
    def _next_job(self, wait: bool) -> _Job | None:
        """The queue first, then the backlog (all newer than the queue, in order); with
        `wait`, waits a little for a keyframe when both are empty. The backlog is left to
        the next start once a stop has begun."""
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            pass
        while not self._stop.is_set():
            with self._backlog_lock:
                if not self._backlog:
                    break
                path = self._backlog.popleft()
            keyframe = self.journal.read(path)  # None: gone, or set aside as unreadable
            if keyframe is not None:
                self.counts['keyframes_from_backlog'] += 1
                return _Job(keyframe, path)
        if not wait:
            return None
        try:
            return self._queue.get(timeout=0.2)
        except queue.Empty:
            return None

    def _overdue(self) -> bool:
        return self._stop.is_set() and time.monotonic() > self._deadline

    def _ingest_loop(self) -> None:
        """Prepare up to `prepare_workers` keyframes at once; store them in arrival order."""
        pool = PreparePool(self._prepare, self._prepare_workers)
        try:
            while True:
                while not pool.full:
                    # Wait for work only when nothing is in preparation.
                    job = self._next_job(wait=not pool)
                    if job is None:
                        break
                    pool.submit(job)
                if not pool:
                    if self._stop.is_set():
                        return
                    continue
                job, prepared = pool.take()
                if self._store(job, prepared) and job.journal_path is not None:
                    self.journal.remove(job.journal_path)
                if self._overdue():
                    return
        finally:
            # Keyframes still in preparation stay in the journal for the next start.
            pool.close()

    def _prepare(self, job: _Job) -> Any:
        return self.memory.prepare(job.keyframe)

    def _store(self, job: _Job, prepared: Any) -> bool:
        """Store one prepared keyframe; True when it is done with (stored, or refused for
        good)."""
        keyframe = job.keyframe
        name = f'{keyframe.session}/{keyframe.index}'
        if isinstance(prepared, ValueError):
            self.counts['keyframes_undecodable'] += 1
            self._log.warning(f'skipped keyframe {name}: {prepared}')
            return True
        if isinstance(prepared, Exception):
            # A model failing on one image must not stop ingest: the keyframe stays in the
            # journal and is tried again at the next start.
            self.counts['keyframes_prepare_failed'] += 1
            self._log.error(
                f'could not prepare keyframe {name}: {type(prepared).__name__}: {prepared}'
            )
            return False
        backoff = 0.5
        while True:
            try:
                self.memory.commit(prepared)
            except RefusedError as error:  # the same stamp with other content: never replaced
                self.counts['keyframes_conflicting'] += 1
                self._log.warning(f'refused keyframe {name}: {error}')
                return True
            except SessionOwnedError as error:  # another robot's session: never written
                self.counts['keyframes_refused_session_owned'] += 1
                self._log.error(f'refused keyframe {name}: {error}')
                return True
            except ValueError as error:
                self.counts['keyframes_failed'] += 1
                self._log.error(f'could not store keyframe {name}: {error}')
                return True
            except Exception as error:  # the database is away, the disk is full, ...
                self.counts['store_retries'] += 1
                self._log_retry(
                    f'could not store keyframe {name} ({type(error).__name__}: '
                    f'{error}); retrying in {backoff:.1f} s'
                )
                if self._overdue():
                    return False
                time.sleep(backoff)
                backoff = min(2 * backoff, self.retry_max_s)
                continue
            self.counts['keyframes_ingested'] += 1
            self._on_stored()
            return True

    def _log_retry(self, message: str) -> None:
        now = time.monotonic()
        if now - self._last_retry_log >= RETRY_LOG_PERIOD_S:
            self._last_retry_log = now
            self._log.error(message)
