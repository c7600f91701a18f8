# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Entries as Milvus rows and back: what a write sends (checked, clipped to the schema's
sizes) is exactly what a read after a restart returns."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from waymark.memory.entries import FRAME, FrameRecord, is_session_name
from waymark.memory.storage import sighting_codec
from waymark.memory.storage.schema import (
    IMAGE_REF_MAX_BYTES,
    SIGHTING_FIELD,
    SIGHTING_MAX_BYTES,
    TEXT_MAX_BYTES,
    WRITTEN_FIELD,
)
from waymark.memory.storage.view_index import ViewIndex

# Rows per Milvus write (and ids per journal line).
WRITE_BATCH = 256


@dataclass(frozen=True)
class ViewRow:
    """One view's vector for an entry, and the text it was made from when that text is
    not the entry's own (a caption)."""

    vector: np.ndarray
    text: str = ''


def clip_utf8(text: str, max_bytes: int) -> str:
    """Cut text to at most max_bytes of UTF-8 (Milvus counts VARCHAR length in bytes)."""
    data = text.encode('utf-8')
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode('utf-8', errors='ignore')


def record_row(record: FrameRecord, written_ns: int = 0) -> dict:
    """The records row of `record`, stamped with its writer's clock (`written_ns`)."""
    if not is_session_name(record.session):
        raise ValueError(f'invalid session name {record.session!r}')
    if record.index < 0:
        raise ValueError(f'entry index must be >= 0, got {record.index}')
    if record.end_ns is not None and record.end_ns < record.stamp_ns:
        raise ValueError(f'entry {record.id}: ends before it starts')
    pose = (record.x, record.y, record.z, record.yaw)
    if record.pose_valid and not all(math.isfinite(value) for value in pose):
        raise ValueError(f'entry {record.id}: pose marked valid but not finite: {pose}')
    x, y, z, yaw = (float(value) for value in pose) if record.pose_valid else (0.0,) * 4
    if len(record.image_ref.encode('utf-8')) > IMAGE_REF_MAX_BYTES:
        raise ValueError(f'image reference longer than {IMAGE_REF_MAX_BYTES} bytes')
    return {
        'id': record.id,
        'session': record.session,
        'idx': int(record.index),
        'stamp_ns': int(record.stamp_ns),
        'end_ns': int(record.end_stamp_ns),
        'x': x,
        'y': y,
        'z': z,
        'yaw': yaw,
        'map_epoch': int(record.map_epoch),
        'pose_valid': bool(record.pose_valid),
        'image_ref': record.image_ref,
        'text': clip_utf8(record.text, TEXT_MAX_BYTES),
        'text_size': float(record.text_size),
        SIGHTING_FIELD: sighting_codec.encode(record.sighting, SIGHTING_MAX_BYTES),
        WRITTEN_FIELD: int(written_ns),
        'planar': [x, y],
    }


def view_row(record: FrameRecord, value: np.ndarray | ViewRow, dim: int, view: str) -> dict:
    row = value if isinstance(value, ViewRow) else ViewRow(value)
    return {
        'id': record.id,
        'session': record.session,
        'idx': int(record.index),
        'vector': unit_vector(row.vector, dim, f'{record.id} view {view!r}'),
        'text': clip_utf8(row.text, TEXT_MAX_BYTES),
    }


def record_from_row(row: Mapping, kind: str) -> FrameRecord:
    stamp = int(row['stamp_ns'])
    end = int(row['end_ns'])
    return FrameRecord(
        session=row['session'],
        index=int(row['idx']),
        stamp_ns=stamp,
        x=float(row['x']),
        y=float(row['y']),
        z=float(row['z']),
        yaw=float(row['yaw']),
        map_epoch=int(row['map_epoch']),
        pose_valid=bool(row['pose_valid']),
        image_ref=row['image_ref'],
        text=row['text'],
        text_size=float(row['text_size']),
        kind=kind,
        sighting=sighting_codec.decode(row.get(SIGHTING_FIELD)),
        end_ns=None if kind == FRAME else end,
    )


def unit_vector(vector: np.ndarray, dim: int, what: str) -> list[float]:
    array = np.asarray(vector, dtype=np.float64).reshape(-1)
    if array.shape[0] != dim:
        raise ValueError(f'{what}: expected {dim} values, got {array.shape[0]}')
    norm = float(np.linalg.norm(array))
    if not (math.isfinite(norm) and norm > 0):
        raise ValueError(f'{what}: vector is zero or not finite')
    return (array / norm).astype(np.float32).tolist()


def batches(items: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def index_rows(index: ViewIndex, rows: Sequence[dict]) -> None:
    if rows:
        index.upsert(
            [row['id'] for row in rows],
            [row['session'] for row in rows],
            [int(row['idx']) for row in rows],
            np.asarray([row['vector'] for row in rows], dtype=np.float32),
        )
