# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Verified outcomes waiting for their reflection, on disk, so a killed node loses none.

One file per job, replaced whole (`durable`), named by a digest of its outcome key ('query
<id>', 'task <id>'): a job is queued once however often its outcome is reported, and a key
whose reflection ended is remembered (the last `MAX_DONE_KEYS`) so a resent outcome writes
no second card. A job the model could not be reached for waits `retry_s`, doubled per
attempt up to `MAX_BACKOFF` times, and is given up after `max_attempts`. A damaged file is
set aside as `<name>.bad` and counted, never trusted. Bounded: at most `max_jobs` wait; a
job beyond them is refused, and the caller says so.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from waymark.durable import is_temporary, replace_atomically
from waymark.lessons.cards import check_outcome_key
from waymark.lessons.reflect import ReflectionInput

MAX_DONE_KEYS = 512
MAX_BACKOFF = 16  # the longest wait is this many times `retry_s`
MAX_NAMES = 64  # names and answers kept per job for the leak check
MAX_NAME_CHARS = 200
_JOB_SUFFIX = '.json'
_DONE_FILE = 'done-keys.json'


@dataclass(frozen=True)
class ReflectionJob:
    """One verified outcome to reflect on, with what its lesson must not carry."""

    key: str  # the outcome key
    item: ReflectionInput
    known_names: tuple[str, ...] = ()  # sign texts and places this outcome's evidence showed
    answers: tuple[str, ...] = ()  # the rollout's answer, in words
    attempts: int = 0
    not_before: float = 0.0  # time.time() before which it is not tried again

    def __post_init__(self) -> None:
        check_outcome_key(self.key)
        for field in ('known_names', 'answers'):
            names = tuple(str(n)[:MAX_NAME_CHARS] for n in getattr(self, field) if str(n))
            object.__setattr__(self, field, names[:MAX_NAMES])

    def to_json(self) -> bytes:
        return json.dumps(dataclasses.asdict(self), ensure_ascii=False).encode()

    @classmethod
    def from_json(cls, data: bytes) -> ReflectionJob:
        raw = json.loads(data)
        return cls(
            key=raw['key'],
            item=ReflectionInput(**raw['item']),
            known_names=tuple(raw['known_names']),
            answers=tuple(raw['answers']),
            attempts=int(raw['attempts']),
            not_before=float(raw['not_before']),
        )


class ReflectionQueue:
    """The jobs in `directory`; safe to share between threads."""

    def __init__(
        self, directory: Path, max_jobs: int = 256, max_attempts: int = 6, retry_s: float = 30.0
    ) -> None:
        if max_jobs < 1 or max_attempts < 1 or retry_s <= 0:
            raise ValueError('max_jobs and max_attempts must be >= 1 and retry_s > 0')
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_jobs, self.max_attempts, self.retry_s = max_jobs, max_attempts, retry_s
        self.counts: Counter[str] = Counter()
        self.damage: list[str] = []  # what was set aside at open, for the log
        self._lock = threading.Lock()
        self._jobs: dict[str, ReflectionJob] = {}
        self._done: list[str] = self._read_done()
        for path in sorted(self.directory.iterdir()):
            if is_temporary(path.name):
                path.unlink(missing_ok=True)  # a write cut short: its job was never queued
            elif path.suffix == _JOB_SUFFIX and path.name != _DONE_FILE:
                self._load(path)

    def put(self, job: ReflectionJob) -> str:
        """'queued', or why not: 'queued before', 'reflected before', 'full'. Durable on
        'queued'; raises OSError (nothing queued) when the disk refuses."""
        with self._lock:
            if job.key in self._jobs:
                return 'queued before'
            if job.key in self._done:
                return 'reflected before'
            if len(self._jobs) >= self.max_jobs:
                self.counts['refused_full'] += 1
                return 'full'
            replace_atomically(self._path(job.key), job.to_json())
            self._jobs[job.key] = job
            self.counts['queued'] += 1
            return 'queued'

    def due(self, now: float | None = None) -> list[ReflectionJob]:
        """The jobs that may be tried now, oldest first."""
        now = time.time() if now is None else now
        with self._lock:
            return [job for job in self._jobs.values() if job.not_before <= now]

    def finish(self, key: str, how: str) -> None:
        """The job's reflection ended (`how`: written, merged, rejected_..., refused, ...):
        its file goes and its key is remembered."""
        with self._lock:
            if self._jobs.pop(key, None) is None:
                return
            self._done = [*self._done, key][-MAX_DONE_KEYS:]
            replace_atomically(self.directory / _DONE_FILE, json.dumps(self._done).encode())
            self._path(key).unlink(missing_ok=True)
            self.counts[how] += 1

    def postpone(self, key: str, why: str, now: float | None = None) -> bool:
        """Try the job again later; False when it has had its attempts (it is given up)."""
        now = time.time() if now is None else now
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                return False
            attempts = job.attempts + 1
            if attempts < self.max_attempts:
                wait = self.retry_s * min(2 ** (attempts - 1), MAX_BACKOFF)
                later = dataclasses.replace(job, attempts=attempts, not_before=now + wait)
                replace_atomically(self._path(key), later.to_json())
                self._jobs[key] = later
                self.counts[f'retried_{why}'] += 1
                return True
        self.finish(key, f'gave_up_{why}')
        return False

    def __len__(self) -> int:
        with self._lock:
            return len(self._jobs)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {'pending': len(self._jobs), **self.counts}

    def _path(self, key: str) -> Path:
        return self.directory / f'{hashlib.sha256(key.encode()).hexdigest()[:32]}{_JOB_SUFFIX}'

    def _load(self, path: Path) -> None:
        try:
            job = ReflectionJob.from_json(path.read_bytes())
            if self._path(job.key) != path:
                raise ValueError('its name does not match its key')
        except (OSError, ValueError, KeyError, TypeError) as error:
            path.rename(path.with_name(f'{path.name}.bad'))
            self.counts['damaged'] += 1
            self.damage.append(f'{path.name}: {type(error).__name__}: {error}')
            return
        self._jobs[job.key] = job

    def _read_done(self) -> list[str]:
        path = self.directory / _DONE_FILE
        try:
            keys = json.loads(path.read_bytes())
        except FileNotFoundError:
            return []
        except (OSError, ValueError):
            path.rename(path.with_name(f'{path.name}.bad'))
            self.counts['damaged'] += 1
            return []
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            self.counts['damaged'] += 1
            return []
        return keys[-MAX_DONE_KEYS:]
