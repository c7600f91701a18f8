# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The records' scalar fields as numpy columns, for time, position and index queries in process.

Milvus has no ORDER BY and Milvus Lite scans rows in Python, so memory_node (the database's
only writer) mirrors every record here and answers scalar queries from columns: position
queries scan them with numpy (O(N), a few ms at 1M rows), chronological queries bisect an
order by stamp that is kept up to date cheaply because stamps mostly arrive in order (new
rows are merged in on the next query; only an in-place stamp change forces a full sort).

Removing a session compacts the columns at once (O(N), 0.4 s at 1M rows); sessions are
rarely removed and it keeps every query free of dead rows.

Records are not kept as objects: a record's fields that no column holds are pickled into
one shared blob and the record is put back together when a query returns it (about 10 us).
So a million records cost their encoded bytes rather than a million objects, and a saved
table loads as a few large buffers. Memory per row: the columns (77 bytes, grown by
doubling), 16 of scratch for distances, the id and its dict entry (about 150), and the
encoded fields (about 70 bytes plus the text and image reference).

Thread-safety: one lock around every method (queries update the cached order), so any
number of threads may call in; a reader never sees a half-applied write.
"""

from __future__ import annotations

import copy
import io
import logging
import math
import pickle
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from waymark.memory.entries import FrameRecord
from waymark.memory.storage.checked_file import checked_body, write_checked

_LOG = logging.getLogger(__name__)

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_INITIAL_CAPACITY = 1024
# Garbage in the record blob below this many bytes is never worth a compaction.
_BLOB_SLACK = 1 << 20
# Rows of the time window examined per step when a session filter drops rows; doubles.
_SCAN_STEP = 4096

# A saved table: checked_file framing around a pickle of the table's fields. The pickle
# may name only these globals (the record classes and numpy's array rebuilders), so a
# tampered file cannot run code; _FORMAT changes whenever the fields change.
_MAGIC = b'WAYMARK-RECORD-TABLE\n'
_FORMAT = 2
_UNSAVED = ('_lock', '_scratch')
_ALLOWED_GLOBALS = (
    {
        ('waymark.memory.entries', name)
        for name in ('FrameRecord', 'Sighting', 'CameraModel', 'TextBox', 'DepthSamples')
    }
    | {
        (module, name)
        for module in ('numpy', 'numpy.core.multiarray', 'numpy._core.multiarray')
        for name in ('ndarray', 'dtype', '_reconstruct', 'scalar')
    }
    | {(module, '_frombuffer') for module in ('numpy.core.numeric', 'numpy._core.numeric')}
    | {('copyreg', '_reconstructor'), ('builtins', 'object')}
)


@dataclass(frozen=True)
class SessionSummary:
    """What memory holds for one session (all zeros when it holds nothing).

    `end_ns` is the latest end of an entry's span (a segment's window end, a frame's stamp).
    """

    frames: int
    with_pose: int
    start_ns: int
    end_ns: int
    last_map_epoch: int


_COLUMNS = {
    'stamp': np.int64,
    'end': np.int64,
    'x': np.float64,
    'y': np.float64,
    'z': np.float64,
    'valid': bool,
    'code': np.int32,
    'idx': np.int64,
    'epoch': np.int64,
    # Where the row's encoded record lies in the blob.
    'blob_start': np.int64,
    'blob_end': np.int64,
}


class RecordTable:
    """The records' scalar fields as columns, for time, position and index queries in process."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        # Each record's fields that no column holds, pickled, one after another; replaced
        # and removed records leave `_garbage` bytes behind until the blob is compacted.
        self._blob = bytearray()
        self._garbage = 0
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}
        self._columns = {name: np.zeros(0, dtype) for name, dtype in _COLUMNS.items()}
        self._names: list[str] = []
        self._codes: dict[str, int] = {}
        self._counts: list[int] = []
        self._max_index: list[int] = []
        self._rank: np.ndarray | None = None
        # Rows in stamp order (ties by row), their stamps, and rows appended since.
        self._order = np.zeros(0, np.int64)
        self._order_stamps = np.zeros(0, np.int64)
        self._pending: list[int] = []
        self._order_stale = False
        self._scratch = (np.empty(0), np.empty(0))

    # -- writing -------------------------------------------------------------------------

    def upsert(self, records: Sequence[FrameRecord]) -> None:
        """Insert records, replacing those with the same id in place.

        Everything is converted before anything changes, so a bad record adds nothing.
        Within one call a repeated id keeps its last record.
        """
        records = list(records)
        if not records:
            return
        ids = [record.id for record in records]
        last = {key: position for position, key in enumerate(ids)}
        if len(last) < len(ids):
            keep = sorted(last.values())
            records = [records[i] for i in keep]
            ids = [ids[i] for i in keep]
        values = _columns_of(records)
        with self._lock:
            old = [
                (position, self._rows[key]) for position, key in enumerate(ids) if key in self._rows
            ]
            if old:
                positions, rows = (np.asarray(part, np.int64) for part in zip(*old, strict=True))
                if np.any(self._columns['stamp'][rows] != values['stamp'][positions]):
                    self._order_stale = True
                for name in ('stamp', 'end', 'x', 'y', 'z', 'valid', 'epoch'):
                    self._columns[name][rows] = values[name][positions]
                for position, row in old:
                    self._store_record(row, records[position])
            new = np.asarray(
                [position for position, key in enumerate(ids) if key not in self._rows], np.int64
            )
            if len(new):
                self._append([records[i] for i in new], [ids[i] for i in new], values, new)

    def remove_session(self, session: str) -> list[FrameRecord]:
        """Drop a session's records and return them in index order."""
        with self._lock:
            code = self._codes.get(session)
            if code is None or self._counts[code] == 0:
                return []
            count = len(self._ids)
            codes = self._columns['code'][:count]
            gone = np.flatnonzero(codes == code)
            gone = gone[np.argsort(self._columns['idx'][gone], kind='stable')]
            removed = [self._record(row) for row in gone.tolist()]
            keep = codes != code
            new_row = np.cumsum(keep) - 1
            kept = np.flatnonzero(keep)
            self._garbage += int(
                np.sum(self._columns['blob_end'][gone] - self._columns['blob_start'][gone])
            )
            for name, column in self._columns.items():
                self._columns[name] = column[kept]
            self._ids = [self._ids[row] for row in kept.tolist()]
            self._maybe_compact_blob()
            self._rows = dict(zip(self._ids, range(len(self._ids)), strict=True))
            if not self._order_stale:
                in_order = keep[self._order]
                self._order = new_row[self._order[in_order]]
                self._order_stamps = self._order_stamps[in_order]
            self._pending = [int(new_row[row]) for row in self._pending if keep[row]]
            self._counts[code] = 0
            self._max_index[code] = -1
            return removed

    # -- persistence ---------------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write the table to `path` atomically. Only copying its fields (references to the
        frozen records, the columns) holds the lock; queries go on while it is written."""
        with self._lock:
            state = {
                name: copy.copy(value) for name, value in vars(self).items() if name not in _UNSAVED
            }
        saved = (_FORMAT, state)
        protocol = pickle.HIGHEST_PROTOCOL
        write_checked(Path(path), _MAGIC, lambda checked: pickle.dump(saved, checked, protocol))

    @classmethod
    def load(cls, path: Path) -> RecordTable | None:
        """The table saved at `path`; None when it is missing, damaged or of another format
        (the caller then rebuilds it from the database)."""
        try:
            with checked_body(Path(path), _MAGIC) as (stream, _):
                saved = _TableUnpickler(stream).load()
        except FileNotFoundError:
            return None
        except (OSError, ValueError, EOFError, pickle.UnpicklingError, AttributeError) as error:
            _LOG.warning('record table %s not usable, to be rebuilt: %s', path, error)
            return None
        table = cls()
        fields = set(vars(table)) - set(_UNSAVED)
        if not (isinstance(saved, tuple) and len(saved) == 2 and saved[0] == _FORMAT):
            return None
        state = saved[1]
        if not isinstance(state, dict) or set(state) != fields:
            return None
        vars(table).update(state)
        if not table._consistent():
            _LOG.warning('record table %s does not hold together, to be rebuilt', path)
            return None
        return table

    def _consistent(self) -> bool:
        count = len(self._ids)
        starts = self._columns.get('blob_start', np.zeros(0, np.int64))[:count]
        ends = self._columns.get('blob_end', np.zeros(0, np.int64))[:count]
        sizes = {len(self._ids), len(self._rows)}
        sessions = {len(self._names), len(self._codes), len(self._counts), len(self._max_index)}
        return (
            isinstance(self._blob, bytearray)
            and sizes == {count}
            and len(sessions) == 1
            and all(len(column) >= count for column in self._columns.values())
            and set(self._columns) == set(_COLUMNS)
            and sum(self._counts) == count
            and bool(np.all(starts <= ends))
            and bool(np.all(ends <= len(self._blob)))
        )

    # -- reading -------------------------------------------------------------------------

    def __len__(self) -> int:
        with self._lock:
            return len(self._ids)

    def count(self, session: str | None = None) -> int:
        with self._lock:
            if session is None:
                return len(self._ids)
            code = self._codes.get(session)
            return 0 if code is None else self._counts[code]

    def sessions(self) -> list[str]:
        with self._lock:
            return sorted(
                name for name, count in zip(self._names, self._counts, strict=True) if count
            )

    def next_index(self, session: str) -> int:
        """1 + the largest index stored for `session`, 0 when it has none."""
        with self._lock:
            code = self._codes.get(session)
            return 0 if code is None else self._max_index[code] + 1

    def get(self, ids: Iterable[str]) -> list[FrameRecord]:
        """Records in the order asked; unknown ids are skipped."""
        with self._lock:
            rows = (self._rows.get(key) for key in ids)
            return [self._record(row) for row in rows if row is not None]

    def find_stamp(self, session: str, stamp_ns: int) -> FrameRecord | None:
        """The session's record stamped exactly `stamp_ns` (lowest index if several)."""
        stamp = int(stamp_ns)
        with self._lock:
            code = self._codes.get(session)
            if code is None or not _INT64_MIN <= stamp <= _INT64_MAX:
                return None
            self._refresh_order()
            low = np.searchsorted(self._order_stamps, stamp, 'left')
            high = np.searchsorted(self._order_stamps, stamp, 'right')
            rows = self._order[low:high]
            rows = rows[self._columns['code'][rows] == code]
            if not len(rows):
                return None
            return self._record(int(rows[np.argmin(self._columns['idx'][rows])]))

    def chronological(
        self, start_ns: int, end_ns: int, k: int, sessions: Sequence[str] | None = None
    ) -> list[FrameRecord]:
        """The first k records with start <= stamp <= end, by (stamp, session, idx)."""
        k = _check_k(k)
        start = max(int(start_ns), _INT64_MIN)
        end = min(int(end_ns), _INT64_MAX)
        with self._lock:
            wanted = self._wanted(sessions)
            if start > end or (wanted is not None and not wanted.any()):
                return []
            self._refresh_order()
            order, stamps = self._order, self._order_stamps
            low = int(np.searchsorted(stamps, start, 'left'))
            high = int(np.searchsorted(stamps, end, 'right'))
            if wanted is None:
                rows = order[low : min(high, low + k)]
                scanned = low + len(rows)
            else:
                rows, scanned = self._scan(order, low, high, k, wanted)
            if len(rows) >= k:
                # Records stamped like the k-th may lie further on; they compete on the
                # tie-break (session, idx), so take them all before cutting to k.
                kth = self._columns['stamp'][rows[k - 1]]
                tied_end = int(np.searchsorted(stamps, kth, 'right'))
                if tied_end > scanned:
                    more = order[scanned:tied_end]
                    if wanted is not None:
                        more = more[wanted[self._columns['code'][more]]]
                    rows = np.concatenate((rows, more))
            return [self._record(row) for row in self._by_time(rows)[:k].tolist()]

    def nearest(
        self, x: float, y: float, z: float, k: int, sessions: Sequence[str] | None = None
    ) -> list[tuple[FrameRecord, float]]:
        """The k records with a valid pose nearest to (x, y, z), nearest first, in metres."""
        k = _check_k(k)
        point = _finite_point(x, y, z)
        with self._lock:
            return self._closest(point, k, sessions)

    def within(
        self, x: float, y: float, radius: float, k: int, sessions: Sequence[str] | None = None
    ) -> list[tuple[FrameRecord, float]]:
        """Records with a valid pose at most `radius` metres from (x, y) on the floor plan
        (height ignored), nearest first, at most k."""
        k = _check_k(k)
        point = _finite_point(x, y)
        radius = float(radius)
        if not (math.isfinite(radius) and radius > 0):
            raise ValueError(f'radius must be a positive number of metres, got {radius}')
        with self._lock:
            return self._closest(point, k, sessions, radius)

    def index_range(self, session: str, first: int, last: int, k: int) -> list[FrameRecord]:
        """The session's first k records with first <= idx <= last, in index order."""
        k = _check_k(k)
        first, last = int(first), int(last)
        with self._lock:
            code = self._codes.get(session)
            if code is None or last < first:
                return []
            count = len(self._ids)
            indices = self._columns['idx'][:count]
            rows = np.flatnonzero(
                (self._columns['code'][:count] == code) & (indices >= first) & (indices <= last)
            )
            if len(rows) > k:
                rows = rows[np.argpartition(indices[rows], k - 1)[:k]]
            rows = rows[np.argsort(indices[rows], kind='stable')]
            return [self._record(row) for row in rows.tolist()]

    def summary(self, session: str) -> SessionSummary:
        with self._lock:
            code = self._codes.get(session)
            if code is None or self._counts[code] == 0:
                return SessionSummary(0, 0, 0, 0, 0)
            count = len(self._ids)
            rows = np.flatnonzero(self._columns['code'][:count] == code)
            column = self._columns
            return SessionSummary(
                frames=len(rows),
                with_pose=int(np.count_nonzero(column['valid'][rows])),
                start_ns=int(column['stamp'][rows].min()),
                end_ns=int(column['end'][rows].max()),
                last_map_epoch=int(column['epoch'][rows].max()),
            )

    # -- internals -----------------------------------------------------------------------

    def _append(
        self,
        records: list[FrameRecord],
        ids: list[str],
        values: dict[str, np.ndarray],
        positions: np.ndarray,
    ) -> None:
        start = len(self._ids)
        end = start + len(records)
        self._reserve(end)
        codes = [self._code(record.session) for record in records]
        for name in ('stamp', 'end', 'x', 'y', 'z', 'valid', 'idx', 'epoch'):
            self._columns[name][start:end] = values[name][positions]
        self._columns['code'][start:end] = codes
        self._ids.extend(ids)
        for row, record in enumerate(records, start):
            self._store_record(row, record)
        for offset, key in enumerate(ids):
            self._rows[key] = start + offset
        for code, index in zip(codes, values['idx'][positions].tolist(), strict=True):
            self._counts[code] += 1
            if index > self._max_index[code]:
                self._max_index[code] = index
        self._pending.extend(range(start, end))

    def _store_record(self, row: int, record: FrameRecord) -> None:
        """Encode what the columns do not hold of `record` at the end of the blob."""
        columns = self._columns
        if columns['blob_end'][row] > columns['blob_start'][row]:
            self._garbage += int(columns['blob_end'][row] - columns['blob_start'][row])
        rest = (
            record.yaw,
            record.pose_valid,
            record.image_ref,
            record.text,
            record.text_size,
            record.kind,
            record.end_ns,
            record.sighting,
        )
        encoded = pickle.dumps(rest, pickle.HIGHEST_PROTOCOL)
        columns['blob_start'][row] = len(self._blob)
        self._blob += encoded
        columns['blob_end'][row] = len(self._blob)
        self._maybe_compact_blob()

    def _record(self, row: int) -> FrameRecord:
        """The record of `row`, decoded from its columns and its part of the blob."""
        columns = self._columns
        start, end = int(columns['blob_start'][row]), int(columns['blob_end'][row])
        rest = _TableUnpickler(io.BytesIO(self._blob[start:end])).load()
        yaw, pose_valid, image_ref, text, text_size, kind, end_ns, sighting = rest
        return FrameRecord(
            session=self._names[int(columns['code'][row])],
            index=int(columns['idx'][row]),
            stamp_ns=int(columns['stamp'][row]),
            x=float(columns['x'][row]),
            y=float(columns['y'][row]),
            z=float(columns['z'][row]),
            yaw=yaw,
            map_epoch=int(columns['epoch'][row]),
            pose_valid=pose_valid,
            image_ref=image_ref,
            text=text,
            text_size=text_size,
            kind=kind,
            end_ns=end_ns,
            sighting=sighting,
        )

    def _maybe_compact_blob(self) -> None:
        """Rewrite the blob with only the rows' records, in row order, once garbage is
        over half of it (O(bytes), amortised over the writes that made the garbage)."""
        if self._garbage <= max(len(self._blob) // 2, _BLOB_SLACK):
            return
        count = len(self._ids)
        starts = self._columns['blob_start'][:count]
        ends = self._columns['blob_end'][:count]
        blob = bytearray()
        view = memoryview(self._blob)
        for row, (start, end) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
            starts[row] = len(blob)
            blob += view[start:end]
            ends[row] = len(blob)
        view.release()
        self._blob = blob
        self._garbage = 0

    def _reserve(self, needed: int) -> None:
        """Grow the columns by doubling so appends cost O(1) amortised."""
        capacity = len(self._columns['stamp'])
        if needed <= capacity:
            return
        capacity = max(needed, 2 * capacity, _INITIAL_CAPACITY)
        for name, column in self._columns.items():
            grown = np.zeros(capacity, column.dtype)
            grown[: len(column)] = column
            self._columns[name] = grown

    def _code(self, session: str) -> int:
        code = self._codes.get(session)
        if code is None:
            code = len(self._names)
            self._codes[session] = code
            self._names.append(session)
            self._counts.append(0)
            self._max_index.append(-1)
            self._rank = None
        return code

    def _wanted(self, sessions: Sequence[str] | None) -> np.ndarray | None:
        """Per session code, whether the query keeps it (None: every session)."""
        if sessions is None:
            return None
        if isinstance(sessions, str):
            sessions = [sessions]
        wanted = np.zeros(len(self._names), bool)
        for name in sessions:
            code = self._codes.get(name)
            if code is not None:
                wanted[code] = True
        return wanted

    def _refresh_order(self) -> None:
        """Bring the stamp order up to date: merge appended rows, or sort afresh."""
        stamps = self._columns['stamp']
        if self._order_stale:
            count = len(self._ids)
            self._order = np.argsort(stamps[:count], kind='stable')
            self._order_stamps = stamps[self._order]
            self._pending = []
            self._order_stale = False
            return
        if not self._pending:
            return
        new = np.asarray(self._pending, np.int64)
        self._pending = []
        new = new[np.argsort(stamps[new], kind='stable')]
        new_stamps = stamps[new]
        if not len(self._order) or new_stamps[0] >= self._order_stamps[-1]:
            self._order = np.concatenate((self._order, new))
            self._order_stamps = np.concatenate((self._order_stamps, new_stamps))
            return
        places = np.searchsorted(self._order_stamps, new_stamps, 'right')
        self._order = np.insert(self._order, places, new)
        self._order_stamps = np.insert(self._order_stamps, places, new_stamps)

    def _scan(
        self, order: np.ndarray, low: int, high: int, k: int, wanted: np.ndarray
    ) -> tuple[np.ndarray, int]:
        """The first (at least) k rows of order[low:high] in wanted sessions, in order, and
        where the scan stopped; steps double so a sparse session costs O(N) at worst."""
        codes = self._columns['code']
        found = []
        total = 0
        position = low
        step = max(_SCAN_STEP, 4 * k)
        while position < high and total < k:
            chunk = order[position : min(high, position + step)]
            chunk = chunk[wanted[codes[chunk]]]
            found.append(chunk)
            total += len(chunk)
            position = min(high, position + step)
            step *= 2
        rows = np.concatenate(found) if found else np.zeros(0, np.int64)
        return rows, position

    def _by_time(self, rows: np.ndarray) -> np.ndarray:
        if self._rank is None:
            names = np.asarray(self._names)
            self._rank = np.empty(len(names), np.int64)
            self._rank[np.argsort(names, kind='stable')] = np.arange(len(names))
        column = self._columns
        keys = (column['idx'][rows], self._rank[column['code'][rows]], column['stamp'][rows])
        return rows[np.lexsort(keys)]

    def _closest(
        self,
        point: tuple[float, ...],
        k: int,
        sessions: Sequence[str] | None,
        radius: float | None = None,
    ) -> list[tuple[FrameRecord, float]]:
        """The k records with a valid pose nearest to `point` (x, y or x, y, z), within
        `radius` when given; nearest first, equal distances by row."""
        count = len(self._ids)
        keep = self._columns['valid'][:count]
        wanted = self._wanted(sessions)
        if wanted is not None:
            keep = keep & wanted[self._columns['code'][:count]]
        kept = int(np.count_nonzero(keep))
        if kept == 0:
            return []
        if kept * 8 < count:
            # Few rows qualify (one session of many): gather them rather than scan all.
            rows = np.flatnonzero(keep)
            squared = self._squared(point, rows)
        else:
            rows = None
            squared = self._squared(point)
            if kept < count:
                np.copyto(squared, np.inf, where=~keep)
        if radius is None:
            chosen = _k_smallest(squared, k)
            distances = np.sqrt(squared[chosen])
        else:
            # Squared distances screen with a little slack; the cut is on the distance itself.
            chosen = np.flatnonzero(squared <= radius * radius * (1 + 1e-9))
            distances = np.sqrt(squared[chosen])
            inside = distances <= radius
            chosen, distances = chosen[inside], distances[inside]
            if len(chosen) > k:
                best = _k_smallest(distances, k)
                chosen, distances = chosen[best], distances[best]
        if rows is not None:
            chosen = rows[chosen]
        ranked = np.lexsort((chosen, distances))
        return [
            (self._record(row), distance)
            for row, distance in zip(
                chosen[ranked].tolist(), distances[ranked].tolist(), strict=True
            )
        ]

    def _squared(self, point: tuple[float, ...], rows: np.ndarray | None = None) -> np.ndarray:
        """Squared distances from `point` to the given rows, or to every row.

        For every row the result lives in a scratch buffer kept between calls (valid until
        the next call): fresh multi-megabyte arrays cost page faults that doubled the time.
        """
        count = len(self._ids) if rows is None else len(rows)
        if rows is None:
            if len(self._scratch[0]) < count:
                size = len(self._columns['stamp'])
                self._scratch = (np.empty(size), np.empty(size))
            total, term = (buffer[:count] for buffer in self._scratch)
        else:
            total, term = np.empty(count), np.empty(count)
        for axis, (name, value) in enumerate(zip(('x', 'y', 'z'), point, strict=False)):
            column = self._columns[name][:count] if rows is None else self._columns[name][rows]
            target = total if axis == 0 else term
            np.subtract(column, value, out=target)
            np.multiply(target, target, out=target)
            if axis:
                total += term
        return total


def _columns_of(records: list[FrameRecord]) -> dict[str, np.ndarray]:
    """The records' column values, converted (and so checked) before anything is stored."""
    try:
        values = {
            'stamp': np.array([record.stamp_ns for record in records], np.int64),
            'end': np.array([record.end_stamp_ns for record in records], np.int64),
            'x': np.array([record.x for record in records], np.float64),
            'y': np.array([record.y for record in records], np.float64),
            'z': np.array([record.z for record in records], np.float64),
            'valid': np.array([bool(record.pose_valid) for record in records], bool),
            'idx': np.array([record.index for record in records], np.int64),
            'epoch': np.array([record.map_epoch for record in records], np.int64),
        }
    except (OverflowError, TypeError) as error:
        raise ValueError(f'record field out of range or of the wrong type: {error}') from error
    # A pose with non-finite coordinates cannot be measured against: treat it as invalid.
    values['valid'] &= np.isfinite(values['x']) & np.isfinite(values['y'])
    values['valid'] &= np.isfinite(values['z'])
    return values


def _k_smallest(values: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k smallest finite values, ascending by (value, position).

    A strided sample gives a threshold that keeps a few times k values, so only those are
    partitioned and sorted (a full argpartition of 1M values took 20 ms here); if the
    threshold keeps fewer than k, every finite value is a candidate instead.
    """
    candidates = None
    if len(values) > 64 * k + 1024:
        # The sample holds > 4k + 64 values, so this rank exists; about twice k is expected
        # at or below the value found.
        rank = 2 * (k // 16) + 8
        threshold = np.partition(values[::16], rank)[rank]
        picked = np.flatnonzero(values <= threshold)
        if len(picked) >= k:
            candidates = picked
    if candidates is None:
        candidates = np.flatnonzero(values < np.inf)
    chosen = values[candidates]
    if len(candidates) > k:
        kth = np.partition(chosen, k - 1)[k - 1]
        candidates = candidates[chosen <= kth]
        chosen = values[candidates]
    finite = np.isfinite(chosen)
    candidates, chosen = candidates[finite], chosen[finite]
    return candidates[np.lexsort((candidates, chosen))[:k]]


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f'k must be an integer >= 1, got {k!r}')
    return int(k)


def _finite_point(*values: float) -> tuple[float, ...]:
    point = tuple(float(value) for value in values)
    if not all(math.isfinite(value) for value in point):
        raise ValueError(f'position must be finite, got {point}')
    return point


class _TableUnpickler(pickle.Unpickler):
    """Unpickles only what a saved table holds (see _ALLOWED_GLOBALS)."""

    def find_class(self, module: str, name: str):
        if (module, name) not in _ALLOWED_GLOBALS:
            raise pickle.UnpicklingError(f'a record table does not hold {module}.{name}')
        return super().find_class(module, name)
