# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What capture keeps on disk so that neither a dead memory_node nor its own death loses
a keyframe or splits a recording.

`KeyframeOutbox` holds every keyframe sent until memory_node says it has made it durable
(journaled), and hands back the unacknowledged ones for resending, oldest first, with a
doubling wait between tries. It is bounded by bytes and by age; what the bounds drop is
counted, never silent. The files use the journal's format, so a keyframe is whole on disk
or absent, and the outbox survives a kill.

`CaptureState` is the session a capture process was writing (name, next keyframe index,
map epoch, newest stamp), so that a restart continues it instead of starting another.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from waymark.memory.entries import Keyframe, check_session_name
from waymark.memory.ingest.journal import JournalFullError, KeyframeJournal


@dataclass(frozen=True)
class OutboxLimits:
    max_bytes: int = 1 << 30
    max_age_s: float = 86400.0  # older unacknowledged keyframes are dropped (counted)
    resend_initial_s: float = 2.0  # first wait for an acknowledgement
    resend_max_s: float = 30.0  # the wait doubles up to this
    resend_batch: int = 20  # most keyframes resent per call of `due`

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.resend_batch < 1:
            raise ValueError('outbox max_bytes and resend_batch must be >= 1')
        if not (0 < self.resend_initial_s <= self.resend_max_s and self.max_age_s > 0):
            raise ValueError('outbox waits must satisfy 0 < resend_initial_s <= resend_max_s')


@dataclass
class _Slot:
    path: Path
    written: float  # wall time (s): ages survive a restart through the file time
    due: float  # monotonic time of the next send
    wait: float  # current wait between sends


class KeyframeOutbox:
    """Keyframes sent and not yet acknowledged, keyed by (session, index), oldest first.

    Only the keys sit in memory; images are read back from disk when resent.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        limits: OutboxLimits,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        fsync: bool = True,
    ) -> None:
        self.limits = limits
        self.counts: Counter[str] = Counter()
        self._clock = clock
        self._wall = wall
        self._files = KeyframeJournal(directory, max_bytes=limits.max_bytes, fsync=fsync)
        self._slots: OrderedDict[tuple[str, int], _Slot] = OrderedDict()
        now = clock()
        # A previous run's keyframes go out again as soon as memory listens.
        found = []
        for path in self._files.paths():
            keyframe = self._files.read(path)  # one image in memory at a time
            if keyframe is not None:
                found.append((path.stat().st_mtime, (keyframe.session, keyframe.index), path))
        for written, key, path in sorted(found):
            self._slots[key] = _Slot(path, written, now, limits.resend_initial_s)
        self.counts['outbox_recovered'] = len(self._slots)
        self.counts['outbox_unreadable'] = self._files.counts['journal_unreadable']

    def __len__(self) -> int:
        return len(self._slots)

    @property
    def used_bytes(self) -> int:
        return self._files.used_bytes

    def add(self, keyframe: Keyframe) -> bool:
        """Keep a keyframe that is being sent; False when it could not be kept (too big
        for the outbox alone, or the disk refused it: counted, and sent once anyway)."""
        key = (keyframe.session, keyframe.index)
        path = self._files.path_of(keyframe)
        for other, slot in list(self._slots.items()):
            if slot.path == path and other != key:  # same stamp again: the file is replaced
                del self._slots[other]
                self.counts['outbox_replaced'] += 1
        while True:
            try:
                self._files.write(keyframe)
                break
            except JournalFullError:
                if not self._slots:
                    self.counts['outbox_too_big'] += 1
                    return False
                self._drop_oldest('outbox_dropped_full')
            except OSError:
                self.counts['outbox_unwritable'] += 1
                return False
        wait = self.limits.resend_initial_s
        self._slots[key] = _Slot(path, self._wall(), self._clock() + wait, wait)
        self._slots.move_to_end(key)
        self.counts['outbox_added'] += 1
        return True

    def acknowledge(self, session: str, indices: Iterable[int], refused: bool = False) -> int:
        """Forget what memory made durable (or refused for good); returns how many were
        ours (an acknowledgement for another sender's session matches nothing)."""
        done = 0
        for index in indices:
            slot = self._slots.pop((session, int(index)), None)
            if slot is None:
                continue
            self._files.remove(slot.path)
            done += 1
        self.counts['outbox_refused_by_memory' if refused else 'outbox_acknowledged'] += done
        return done

    def due(self) -> list[Keyframe]:
        """The oldest keyframes whose wait for an acknowledgement ran out, at most
        `resend_batch`; each waits twice as long (up to `resend_max_s`) for the next try.
        Keyframes older than `max_age_s` are dropped first."""
        oldest = self._wall() - self.limits.max_age_s
        while self._slots and next(iter(self._slots.values())).written < oldest:
            self._drop_oldest('outbox_dropped_age')
        now = self._clock()
        resend = []
        for key, slot in list(self._slots.items()):
            if len(resend) >= self.limits.resend_batch:
                break
            if slot.due > now:
                continue
            keyframe = self._files.read(slot.path)
            if keyframe is None:
                del self._slots[key]
                self.counts['outbox_unreadable'] += 1
                continue
            slot.wait = min(2 * slot.wait, self.limits.resend_max_s)
            slot.due = now + slot.wait
            resend.append(keyframe)
        self.counts['outbox_resent'] += len(resend)
        return resend

    def hurry(self) -> None:
        """Make every keyframe due now, with the first wait again: a receiver appeared."""
        now = self._clock()
        for slot in self._slots.values():
            slot.due, slot.wait = now, self.limits.resend_initial_s

    def _drop_oldest(self, reason: str) -> None:
        _, slot = self._slots.popitem(last=False)
        self._files.remove(slot.path)
        self.counts[reason] += 1


@dataclass(frozen=True)
class CaptureState:
    session: str
    next_index: int
    map_epoch: int
    last_stamp_ns: int

    @classmethod
    def load(cls, path: Path) -> CaptureState | None:
        """The saved state; None when there is none. ValueError names a damaged file."""
        try:
            data = json.loads(path.read_text())
            state = cls(
                session=check_session_name(str(data['session'])),
                next_index=int(data['next_index']),
                map_epoch=int(data['map_epoch']),
                last_stamp_ns=int(data['last_stamp_ns']),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ValueError(f'capture state {path.name} unreadable: {error}') from error
        if state.next_index < 0 or state.map_epoch < 0:
            raise ValueError(f'capture state {path.name}: negative index or epoch')
        return state

    def save(self, path: Path, fsync: bool = True) -> None:
        """Write whole or not at all (temporary file, fsync, rename)."""
        temporary = path.with_name(f'.{path.name}.tmp')
        with open(temporary, 'w') as stream:
            json.dump(asdict(self), stream)
            if fsync:
                stream.flush()
                os.fsync(stream.fileno())
        os.replace(temporary, path)
