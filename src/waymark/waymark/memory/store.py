# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Frame memory in Milvus: one frames collection plus one collection per embedding view.

The frames collection carries time and pose as scalars and the position as small vectors,
so time, position and radius queries run inside Milvus. Each embedding view (image, OCR
text, ...) lives in its own collection keyed by the frame id: a view row exists only where
the view has content, and a view can be added later without touching the frames.

`uri` is a path ending in `.db` (Milvus Lite, embedded, one process per database) or a
server address (`http://host:19530`); the code paths are the same apart from opening and
closing. Milvus has no ORDER BY for scalar queries, so chronological queries narrow a time
window until it holds few enough rows to sort here; every request is bounded by `max_k`.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pymilvus import DataType, MilvusClient, MilvusException

from waymark.memory.entries import SESSION_NAME, FrameRecord, Hit, frame_id, is_session_name

DEFAULT_MAX_K = 1000
ID_MAX_BYTES = 96
SESSION_MAX_BYTES = 64
IMAGE_REF_MAX_BYTES = 256
TEXT_MAX_BYTES = 2048
INT64_MAX = 2**63 - 1
WRITE_BATCH = 256

_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]{0,63}')
_FRAME_ID = re.compile(rf'({SESSION_NAME.pattern})/(0|[1-9][0-9]{{0,18}})')
_RECORD_FIELDS = (
    'session',
    'idx',
    'stamp_ns',
    'x',
    'y',
    'z',
    'yaw',
    'map_epoch',
    'pose_valid',
    'image_ref',
    'text',
    'text_size',
)


class MemoryStoreError(RuntimeError):
    """The memory database cannot be used as asked."""


class MemoryStoreLockedError(MemoryStoreError):
    """Another process has the Milvus Lite database open."""


class MemoryStoreSchemaError(MemoryStoreError):
    """An existing collection does not match the schema this store expects."""


@dataclass(frozen=True)
class _Field:
    name: str
    dtype: DataType
    params: dict = field(default_factory=dict)
    primary: bool = False
    partition_key: bool = False


@dataclass(frozen=True)
class _Index:
    field_name: str
    index_type: str
    extra: dict = field(default_factory=dict)


# Exact search for the tiny position vectors; inverted indexes for the common filters.
_FRAMES_INDEXES = [
    _Index('position', 'FLAT', {'metric_type': 'L2'}),
    _Index('planar', 'FLAT', {'metric_type': 'L2'}),
    _Index('session', 'INVERTED'),
    _Index('stamp_ns', 'INVERTED'),
]


def _frames_fields() -> list[_Field]:
    return [
        _Field('id', DataType.VARCHAR, {'max_length': ID_MAX_BYTES}, primary=True),
        _Field('session', DataType.VARCHAR, {'max_length': SESSION_MAX_BYTES}, partition_key=True),
        _Field('idx', DataType.INT64),
        _Field('stamp_ns', DataType.INT64),
        _Field('x', DataType.DOUBLE),
        _Field('y', DataType.DOUBLE),
        _Field('z', DataType.DOUBLE),
        _Field('yaw', DataType.DOUBLE),
        _Field('map_epoch', DataType.INT64),
        _Field('pose_valid', DataType.BOOL),
        _Field('image_ref', DataType.VARCHAR, {'max_length': IMAGE_REF_MAX_BYTES}),
        _Field('text', DataType.VARCHAR, {'max_length': TEXT_MAX_BYTES}),
        _Field('text_size', DataType.DOUBLE),
        # The pose scalars are doubles so a record reads back exactly as it was written; the
        # vectors are float32 copies: (x, y, z) for nearest search, (x, y) for radius search.
        _Field('position', DataType.FLOAT_VECTOR, {'dim': 3}),
        _Field('planar', DataType.FLOAT_VECTOR, {'dim': 2}),
    ]


def _view_fields(dim: int) -> list[_Field]:
    return [
        _Field('id', DataType.VARCHAR, {'max_length': ID_MAX_BYTES}, primary=True),
        _Field('session', DataType.VARCHAR, {'max_length': SESSION_MAX_BYTES}, partition_key=True),
        _Field('vector', DataType.FLOAT_VECTOR, {'dim': dim}),
    ]


def clip_utf8(text: str, max_bytes: int) -> str:
    """Cut text to at most max_bytes of UTF-8 (Milvus counts VARCHAR length in bytes)."""
    data = text.encode('utf-8')
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode('utf-8', errors='ignore')


class MemoryStore:
    """Frames, their embedding views, and the time/position/similarity queries over them."""

    def __init__(
        self,
        uri: str,
        views: Mapping[str, int],
        prefix: str = 'waymark',
        max_k: int = DEFAULT_MAX_K,
        view_index_type: str = 'AUTOINDEX',
        token: str = '',
    ) -> None:
        for name in [prefix, *views]:
            if not _NAME.fullmatch(name):
                raise ValueError(f'invalid collection name part {name!r}: letters, digits, "_"')
        for name, dim in views.items():
            if not 1 <= int(dim) <= 32768:
                raise ValueError(f'view {name!r}: dim must be in [1, 32768], got {dim}')
        if max_k < 1:
            raise ValueError(f'max_k must be >= 1, got {max_k}')
        self.uri = uri
        self.max_k = max_k
        self.view_dims = {name: int(dim) for name, dim in views.items()}
        self._frames = f'{prefix}_frames'
        self._view_collections = {name: f'{prefix}_view_{name}' for name in views}
        self._lite_path = _lite_path(uri)
        self._write_lock = threading.Lock()
        self._client = _connect(uri, token, self._lite_path)
        try:
            self._ensure(self._frames, _frames_fields(), _FRAMES_INDEXES)
            for name, collection in self._view_collections.items():
                view_index = _Index('vector', view_index_type, {'metric_type': 'COSINE'})
                self._ensure(collection, _view_fields(self.view_dims[name]), [view_index])
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
        for collection in [self._frames, *self._view_collections.values()]:
            self._client.flush(collection)

    def close(self) -> None:
        """Close the connection; for Milvus Lite also stop the embedded server and unlock."""
        if self._client is None:
            return
        self._client.close()
        self._client = None
        if self._lite_path is not None:
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(str(self._lite_path))

    # -- writing -------------------------------------------------------------------------

    def add(self, record: FrameRecord, vectors: Mapping[str, np.ndarray]) -> None:
        self.add_many([record], [vectors])

    def add_many(
        self, records: Sequence[FrameRecord], vectors: Sequence[Mapping[str, np.ndarray]]
    ) -> None:
        """Insert or replace frames by id, with the views they have content for.

        A view missing from a frame's `vectors` is removed for that frame if it was stored
        before, so a re-added frame never keeps a stale view row.
        """
        if len(records) != len(vectors):
            raise ValueError(f'{len(records)} records but {len(vectors)} vector maps')
        frame_rows = [_frame_row(record) for record in records]
        view_rows: dict[str, list[dict]] = {name: [] for name in self.view_dims}
        view_absent: dict[str, list[str]] = {name: [] for name in self.view_dims}
        for record, by_view in zip(records, vectors, strict=True):
            unknown = set(by_view) - set(self.view_dims)
            if unknown:
                raise ValueError(
                    f'unknown views {sorted(unknown)}; this store has {sorted(self.view_dims)}'
                )
            for name, dim in self.view_dims.items():
                if name in by_view:
                    vector = _unit_vector(by_view[name], dim, f'{record.id} view {name!r}')
                    view_rows[name].append(
                        {'id': record.id, 'session': record.session, 'vector': vector}
                    )
                else:
                    view_absent[name].append(record.id)
        with self._write_lock:
            existing = self._records_by_id([row['id'] for row in frame_rows])
            for batch in _batches(frame_rows, WRITE_BATCH):
                self._client.upsert(self._frames, batch)
            for name, collection in self._view_collections.items():
                for batch in _batches(view_rows[name], WRITE_BATCH):
                    self._client.upsert(collection, batch)
                stale = [i for i in view_absent[name] if i in existing]
                for batch in _batches(stale, WRITE_BATCH):
                    self._client.delete(collection, ids=batch)

    # -- searching -----------------------------------------------------------------------

    def search_view(
        self, view: str, vector: np.ndarray, k: int, sessions: Sequence[str] | None = None
    ) -> list[Hit]:
        """Frames whose `view` embedding is most similar (cosine) to `vector`, best first."""
        if view not in self._view_collections:
            raise ValueError(f'unknown view {view!r}; this store has {sorted(self.view_dims)}')
        query = _unit_vector(vector, self.view_dims[view], f'query for view {view!r}')
        expression = _session_filter(sessions)
        if expression is None:
            return []
        found = self._client.search(
            self._view_collections[view],
            data=[query],
            anns_field='vector',
            limit=self._k(k),
            filter=expression,
            output_fields=['id'],
            search_params={'metric_type': 'COSINE'},
        )[0]
        records = self._records_by_id([hit['id'] for hit in found])
        return [
            Hit(records[hit['id']], float(hit['distance']), view)
            for hit in found
            if hit['id'] in records
        ]

    def search_time(
        self, stamp_ns: int, k: int, sessions: Sequence[str] | None = None
    ) -> list[Hit]:
        """The first k frames at or after `stamp_ns`, in chronological order (not centred)."""
        return self._chronological(int(stamp_ns), INT64_MAX, self._k(k), sessions)

    def search_interval(
        self, start_ns: int, end_ns: int, k: int, sessions: Sequence[str] | None = None
    ) -> list[Hit]:
        """The first k frames with start_ns <= stamp <= end_ns, in chronological order."""
        if end_ns < start_ns:
            raise ValueError(f'interval ends ({end_ns}) before it starts ({start_ns})')
        return self._chronological(int(start_ns), int(end_ns), self._k(k), sessions)

    def search_position(
        self, x: float, y: float, z: float, k: int, sessions: Sequence[str] | None = None
    ) -> list[Hit]:
        """The k frames observed nearest to (x, y, z), nearest first; score in metres."""
        return self._search_positions('position', [x, y, z], self._k(k), None, sessions)

    def search_range(
        self,
        x: float,
        y: float,
        radius: float,
        sessions: Sequence[str] | None = None,
        k: int | None = None,
    ) -> list[Hit]:
        """Frames within `radius` metres of (x, y) on the floor plan, nearest first.

        Height is ignored, as on a floor plan; scores are planar distances in metres, and
        hits are labelled with the 'position' view.
        """
        if not (math.isfinite(radius) and radius > 0):
            raise ValueError(f'radius must be a positive number of metres, got {radius}')
        limit = self.max_k if k is None else self._k(k)
        return self._search_positions('planar', [x, y], limit, radius, sessions)

    # -- reading -------------------------------------------------------------------------

    def get(self, ids: Iterable[str]) -> list[FrameRecord]:
        """Records for the ids that exist, in the order asked; unknown ids are skipped."""
        ids = list(ids)
        records = self._records_by_id(ids)
        return [records[i] for i in ids if i in records]

    def count(self, session: str | None = None, view: str | None = None) -> int:
        """Frames stored (in `view`'s collection when given), for one session or all."""
        collection = self._frames if view is None else self._view_collections.get(view)
        if collection is None:
            raise ValueError(f'unknown view {view!r}; this store has {sorted(self.view_dims)}')
        expression = _session_filter(None if session is None else [session])
        if expression is None:
            return 0
        rows = self._client.query(collection, filter=expression, output_fields=['count(*)'])
        return int(rows[0]['count(*)'])

    def sessions(self) -> list[str]:
        """Names of the sessions in memory (at most max_k), sorted."""
        found = _widening(
            self.max_k,
            lambda limit: self._client.search(
                self._frames,
                data=[[0.0, 0.0, 0.0]],
                anns_field='position',
                limit=limit,
                group_by_field='session',
                output_fields=['session'],
                search_params={'metric_type': 'L2'},
            )[0],
        )
        return sorted({hit['entity']['session'] for hit in found})

    def next_index(self, session: str) -> int:
        """One past the largest keyframe index stored for `session` (0 when it has none).

        Pages of indices above the largest seen so far are read until a page is not full,
        so a session costs about count / max_k small queries.
        """
        if not is_session_name(session):
            return 0
        low = 0
        while True:
            found = self._client.query(
                self._frames,
                filter=f'session == {json.dumps(session)} and idx >= {low}',
                output_fields=['idx'],
                limit=self.max_k,
            )
            if not found:
                return low
            top = max(int(row['idx']) for row in found)
            if len(found) < self.max_k:
                return top + 1
            low = top + 1

    # -- internals -----------------------------------------------------------------------

    def _k(self, k: int) -> int:
        if k < 1:
            raise ValueError(f'k must be >= 1, got {k}')
        return min(int(k), self.max_k)

    def _records_by_id(self, ids: Sequence[str]) -> dict[str, FrameRecord]:
        wanted = list(
            dict.fromkeys(i for i in ids if isinstance(i, str) and _FRAME_ID.fullmatch(i))
        )
        records = {}
        for batch in _batches(wanted, self.max_k):
            for row in self._client.get(
                self._frames, ids=batch, output_fields=list(_RECORD_FIELDS)
            ):
                record = _record(row)
                records[record.id] = record
        return records

    def _search_positions(
        self,
        field_name: str,
        point: list[float],
        limit: int,
        radius: float | None,
        sessions: Sequence[str] | None,
    ) -> list[Hit]:
        if not all(math.isfinite(value) for value in point):
            raise ValueError(f'position must be finite, got {point}')
        expression = _session_filter(sessions, 'pose_valid == true')
        if expression is None:
            return []
        params: dict = {'metric_type': 'L2'}
        if radius is not None:
            # Milvus reports squared L2 distances, and bounds them the same way.
            params['params'] = {'radius': radius * radius}

        def search(size: int) -> list:
            return self._client.search(
                self._frames,
                data=[[float(value) for value in point]],
                anns_field=field_name,
                limit=size,
                filter=expression,
                output_fields=list(_RECORD_FIELDS),
                search_params=params,
            )[0]

        # A radius usually holds far fewer frames than the cap, and the cost follows the limit.
        found = search(limit) if radius is None else _widening(limit, search)
        hits = [
            Hit(_record(hit['entity']), math.sqrt(max(float(hit['distance']), 0.0)), 'position')
            for hit in found
        ]
        return [hit for hit in hits if radius is None or hit.score <= radius]

    def _chronological(
        self, start: int, end: int, k: int, sessions: Sequence[str] | None
    ) -> list[Hit]:
        """First k frames in [start, end] by stamp, without reading the whole range.

        A query that fills its page may have left out earlier rows, so the window is cut
        at the stamp by which the page alone already holds enough rows (or halved when
        that does not shrink it) and asked again; a window that fits is sorted and kept.
        """
        base = _session_filter(sessions)
        if base is None:
            return []
        page = 2 * k + 16
        rows: list[dict] = []
        low = start
        while len(rows) < k and low <= end:
            need, high = k - len(rows), end
            while True:
                expression = f'stamp_ns >= {low} and stamp_ns <= {high}'
                found = self._client.query(
                    self._frames,
                    filter=f'{base} and {expression}' if base else expression,
                    output_fields=list(_RECORD_FIELDS),
                    limit=page,
                )
                if len(found) < page or high == low:
                    break
                enough = sorted(row['stamp_ns'] for row in found)[need - 1]
                high = enough if enough < high else low + (high - low) // 2
            rows.extend(
                sorted(found, key=lambda row: (row['stamp_ns'], row['session'], row['idx']))
            )
            low = high + 1
        return [
            Hit(record, (record.stamp_ns - start) / 1e9, 'time')
            for record in (_record(row) for row in rows[:k])
        ]

    def _ensure(self, name: str, fields: list[_Field], indexes: list[_Index]) -> None:
        """Open a collection, creating it (and any missing index) on the way."""
        if self._client.has_collection(name):
            _check_schema(name, fields, self._client.describe_collection(name))
        else:
            schema = self._client.create_schema(auto_id=False, enable_dynamic_field=False)
            for spec in fields:
                schema.add_field(
                    spec.name,
                    spec.dtype,
                    is_primary=spec.primary,
                    is_partition_key=spec.partition_key,
                    **spec.params,
                )
            # Strong consistency: a frame is searchable as soon as add() returns (a server's
            # default level lets searches miss the latest writes).
            self._client.create_collection(name, schema=schema, consistency_level='Strong')
        present = set(self._client.list_indexes(name))
        missing = [index for index in indexes if index.field_name not in present]
        if missing:
            params = self._client.prepare_index_params()
            for index in missing:
                params.add_index(index.field_name, index_type=index.index_type, **index.extra)
            # Indexes on an empty collection are ready at once; skip pymilvus's 0.5 s polling.
            self._client.create_index(name, params, sync=False)
        self._client.load_collection(name)


def _lite_path(uri: str) -> Path | None:
    return Path(uri).expanduser().resolve() if uri.endswith('.db') else None


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


def _check_schema(name: str, expected: list[_Field], description: dict) -> None:
    actual = {item['name']: item for item in description.get('fields', [])}

    def shape(spec_type, params, primary, partition_key) -> str:
        sizes = ', '.join(f'{key}={int(value)}' for key, value in sorted(params.items()))
        flags = ' primary' * bool(primary) + ' partition-key' * bool(partition_key)
        return f'{DataType(spec_type).name}({sizes}){flags}'

    problems = []
    for spec in expected:
        item = actual.pop(spec.name, None)
        want = shape(spec.dtype, spec.params, spec.primary, spec.partition_key)
        if item is None:
            problems.append(f'{spec.name}: missing, expected {want}')
            continue
        params = {key: item.get('params', {}).get(key) for key in spec.params}
        got = shape(
            item['type'],
            {key: value for key, value in params.items() if value is not None},
            item.get('is_primary', False),
            item.get('is_partition_key', False),
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


def _session_filter(sessions: Sequence[str] | None, condition: str = '') -> str | None:
    """A filter restricted to `sessions`; None when none of them can exist.

    Names that break the session-name rule cannot be in memory, so they are dropped
    rather than quoted into the expression.
    """
    parts = [condition] if condition else []
    if sessions:
        valid = [name for name in dict.fromkeys(sessions) if is_session_name(name)]
        if not valid:
            return None
        if len(valid) > DEFAULT_MAX_K:
            raise ValueError(f'at most {DEFAULT_MAX_K} sessions per query, got {len(valid)}')
        parts.append(f'session in {json.dumps(valid)}')
    return ' and '.join(parts)


def _frame_row(record: FrameRecord) -> dict:
    if not is_session_name(record.session):
        raise ValueError(f'invalid session name {record.session!r}')
    if record.index < 0:
        raise ValueError(f'keyframe index must be >= 0, got {record.index}')
    pose = (record.x, record.y, record.z, record.yaw)
    if record.pose_valid and not all(math.isfinite(value) for value in pose):
        raise ValueError(f'frame {record.id}: pose marked valid but not finite: {pose}')
    x, y, z, yaw = (float(value) for value in pose) if record.pose_valid else (0.0,) * 4
    return {
        'id': frame_id(record.session, record.index),
        'session': record.session,
        'idx': int(record.index),
        'stamp_ns': int(record.stamp_ns),
        'x': x,
        'y': y,
        'z': z,
        'yaw': yaw,
        'map_epoch': int(record.map_epoch),
        'pose_valid': bool(record.pose_valid),
        'image_ref': _checked_ref(record.image_ref),
        'text': clip_utf8(record.text, TEXT_MAX_BYTES),
        'text_size': float(record.text_size),
        'position': [x, y, z],
        'planar': [x, y],
    }


def _checked_ref(ref: str) -> str:
    if len(ref.encode('utf-8')) > IMAGE_REF_MAX_BYTES:
        raise ValueError(f'image reference longer than {IMAGE_REF_MAX_BYTES} bytes: {ref[:64]}...')
    return ref


def _record(row: Mapping) -> FrameRecord:
    return FrameRecord(
        session=row['session'],
        index=int(row['idx']),
        stamp_ns=int(row['stamp_ns']),
        x=float(row['x']),
        y=float(row['y']),
        z=float(row['z']),
        yaw=float(row['yaw']),
        map_epoch=int(row['map_epoch']),
        pose_valid=bool(row['pose_valid']),
        image_ref=row['image_ref'],
        text=row['text'],
        text_size=float(row['text_size']),
    )


def _unit_vector(vector: np.ndarray, dim: int, what: str) -> list[float]:
    array = np.asarray(vector, dtype=np.float64).reshape(-1)
    if array.shape[0] != dim:
        raise ValueError(f'{what}: expected {dim} values, got {array.shape[0]}')
    norm = float(np.linalg.norm(array))
    if not (math.isfinite(norm) and norm > 0):
        raise ValueError(f'{what}: vector is zero or not finite')
    return (array / norm).astype(np.float32).tolist()


def _widening(cap: int, search: Callable[[int], list], first: int = 32) -> list:
    """Run `search(limit)` with a growing limit until it returns fewer hits than asked.

    For searches whose result set is small but whose cost grows with the limit asked.
    """
    limit = min(cap, first)
    while True:
        found = search(limit)
        if len(found) < limit or limit >= cap:
            return found
        limit = min(cap, limit * 4)


def _batches(items: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
