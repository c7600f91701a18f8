# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Storage benchmark: bytes per memory entry and per hour of recording, and how much
smaller memory is than the raw camera stream it was made from.

Measured on a real ingest of the demo tour (OCR, MiniLM), into two memories: the default
one (text view only) and a full one (text view, a 1152-d image view, segments of 1.5 s).
No SigLIP-so400m weights are available offline, so the full memory's image vectors come
from a fixed random projection of a thumbnail: 1152 float32 values per entry like
SigLIP's, which is all that storage depends on. Each keyframe is prepared once (OCR and
embeddings) and committed to both memories.

RAVEN reports memory 22,315x smaller than its raw video; ours keeps every keyframe's
JPEG, which dominates, so the ratio is also given for the database alone.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np

from waymark.benchmarks.common import Recording, demo_recording, table
from waymark.memory.factory import MemoryConfig, open_memory
from waymark.memory.retention import dir_bytes
from waymark.memory.service import MemoryService
from waymark.memory.storage.store import MemoryStore
from waymark.memory.views.embedders import SentenceEmbedder, normalise_rows
from waymark.memory.views.image import IMAGE_VIEW, ImageView
from waymark.memory.views.ocr import TextReader
from waymark.memory.views.text import TextView

IMAGE_DIM = 1152
SEGMENT_WINDOW_S = 1.5
QUICK_RECORDING_S = 12.0
RAVEN_RATIO = 22_315
THUMBNAIL = (32, 24)
HOUR_S = 3600.0


class ProjectionEmbedder:
    """1152-d unit vectors from a fixed random projection of a grey 32x24 thumbnail:
    vectors the size of SigLIP-so400m's, for measuring storage without its weights."""

    def __init__(self, dim: int = IMAGE_DIM, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self._matrix = rng.standard_normal((THUMBNAIL[0] * THUMBNAIL[1], dim)).astype(np.float32)

    @property
    def name(self) -> str:
        return f'random projection of a thumbnail ({self.dim}-d)'

    @property
    def dim(self) -> int:
        return int(self._matrix.shape[1])

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        thumbs = [
            cv2.resize(
                cv2.cvtColor(image, cv2.COLOR_RGB2GRAY), THUMBNAIL, interpolation=cv2.INTER_AREA
            )
            for image in images
        ]
        rows = np.asarray(thumbs, dtype=np.float32).reshape(len(thumbs), -1) / 255.0
        # Centred on each image's mean; + 1e-3 so that a uniform image still has a direction.
        return normalise_rows((rows - rows.mean(axis=1, keepdims=True) + 1e-3) @ self._matrix)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError('a storage stand-in: it embeds no text')


@dataclass
class _Memory:
    name: str
    views: str
    root: Path
    service: MemoryService


def run(quick: bool = False) -> dict:
    started = time.perf_counter()
    recording = demo_recording(QUICK_RECORDING_S if quick else None)
    with tempfile.TemporaryDirectory(prefix='waymark-bench-storage-') as tmp:
        root = Path(tmp)
        reader, sentence, image = TextReader(), SentenceEmbedder('default'), ProjectionEmbedder()
        reader.load()
        sentence.load()
        memories = [
            _open('default', 'text (OCR + MiniLM 384-d)', root / 'default', reader, sentence),
            _open(
                'full',
                f'text + image ({IMAGE_DIM}-d) + segments {SEGMENT_WINDOW_S:g} s',
                root / 'full',
                reader,
                sentence,
                image,
            ),
        ]
        full = memories[1].service
        for keyframe in recording.keyframes:
            prepared = full.prepare(keyframe)
            full.commit(prepared)
            text_only = {k: v for k, v in prepared.vectors.items() if k != IMAGE_VIEW}
            memories[0].service.commit(replace(prepared, vectors=text_only))
        results = [_measure(memory, recording) for memory in memories]
    return {
        'benchmark': 'storage',
        'quick': quick,
        'settings': recording.settings()
        | {
            'keyframe_jpeg_quality': recording.jpeg_quality,
            'text_model': sentence.name,
            'image_vectors': image.name,
            'segment_window_s': SEGMENT_WINDOW_S,
            'raw_stream': f'{recording.width}x{recording.height}x3 bytes per frame at '
            f'{recording.camera_rate_hz:g} Hz',
            'recording_bag_bytes': recording.bag_bytes,
        },
        'configs': results,
        'raven_ratio': RAVEN_RATIO,
        'seconds': time.perf_counter() - started,
        'notes': _notes(recording),
    }


def _open(
    name: str,
    views: str,
    root: Path,
    reader: TextReader,
    sentence: SentenceEmbedder,
    image: ProjectionEmbedder | None = None,
) -> _Memory:
    """A memory with the text view, and with the image view and segments when `image`."""
    root.mkdir(parents=True)
    window = SEGMENT_WINDOW_S if image is not None else 0.0
    chosen = [TextView(sentence, reader)]
    if image is not None:
        chosen.insert(0, ImageView(image))  # type: ignore[arg-type]
    service = open_memory(MemoryConfig(root, segment_window_s=window), chosen)
    return _Memory(name, views, root, service)


def _measure(memory: _Memory, recording: Recording) -> dict:
    """Close the memory (Milvus Lite writes its files on close) and measure its directory;
    an empty memory with the same views gives the fixed part of the database."""
    service = memory.service
    service.close_segments()
    stats = service.stats()
    service.store.close()
    db = dir_bytes(memory.root / 'memory.db')
    everything = dir_bytes(memory.root)
    images = {key: everything[key] - db[key] for key in db}
    empty_root = memory.root.with_name(f'{memory.root.name}_empty')
    empty_root.mkdir()
    MemoryStore(
        str(empty_root / 'memory.db'),
        service.store.view_dims,
        segment_views=service.store.segment_view_dims or None,
    ).close()
    empty = dir_bytes(empty_root / 'memory.db')['bytes']
    entries = stats.frames + stats.segments
    total = everything['bytes']
    raw = recording.width * recording.height * 3 * recording.images
    raw_per_hour = recording.width * recording.height * 3 * recording.camera_rate_hz * HOUR_S
    grown = total - empty
    per_hour = grown * HOUR_S / recording.duration_s
    return {
        'name': memory.name,
        'views': memory.views,
        'frames': stats.frames,
        'segments': stats.segments,
        'entries': entries,
        'db_bytes': db['bytes'],
        'db_disk_bytes': db['disk_bytes'],
        'empty_db_bytes': empty,
        'image_bytes': images['bytes'],
        'image_disk_bytes': images['disk_bytes'],
        'total_bytes': total,
        'total_disk_bytes': everything['disk_bytes'],
        'bytes_per_entry': grown / max(entries, 1),
        'db_bytes_per_entry': (db['bytes'] - empty) / max(entries, 1),
        'image_bytes_per_entry': images['bytes'] / max(entries, 1),
        'bytes_per_entry_with_empty_db': total / max(entries, 1),
        'bytes_per_keyframe': grown / max(stats.frames, 1),
        'bytes_per_hour': per_hour,
        'entries_per_hour': entries * HOUR_S / recording.duration_s,
        'raw_bytes': raw,
        'raw_bytes_per_hour': raw_per_hour,
        'compression_ratio': raw / total,
        'compression_ratio_per_hour': raw_per_hour / per_hour if per_hour else None,
        'compression_ratio_db_only': raw / max(db['bytes'] - empty, 1),
    }


def _notes(recording: Recording) -> list[str]:
    return [
        f'Recording: {recording.duration_s:.0f} s of the {recording.world} tour, '
        f'{recording.images} camera frames, {len(recording.keyframes)} keyframes. Per-hour '
        'figures scale what the memory grew by (its size less an empty one) to an hour.',
        'compression ratio = raw RGB frames of the recording / memory (database + images); '
        '"per hour" uses the growth only; "db only" leaves the keyframe JPEGs out, as a '
        f'memory of text and vectors (RAVEN reports {RAVEN_RATIO:,}x) would.',
        'Full memory image vectors are a 1152-d stand-in for SigLIP-so400m (same size on '
        'disk); the text view is real OCR + MiniLM, so only frames with text get a text row.',
    ]


def render(result: dict) -> str:
    s = result['settings']
    rows = [
        [
            c['name'],
            c['views'],
            c['frames'],
            c['segments'],
            c['db_bytes_per_entry'] / 1024,
            c['image_bytes_per_entry'] / 1024,
            c['bytes_per_entry'] / 1024,
            c['bytes_per_hour'] / 2**20,
            c['empty_db_bytes'] / 2**20,
            c['compression_ratio_per_hour'],
            c['compression_ratio_db_only'],
        ]
        for c in result['configs']
    ]
    headers = [
        'memory',
        'views',
        'frames',
        'segments',
        'db KiB/entry',
        'img KiB/entry',
        'KiB/entry',
        'MiB/hour',
        'empty db MiB',
        'x raw',
        'x raw (db)',
    ]
    title = (
        f'Storage: {s["world"]} tour, {s["recording_s"]:.0f} s, raw stream {s["raw_stream"]}, '
        f'keyframes JPEG q{s["keyframe_jpeg_quality"]}'
    )
    notes = '\n'.join(f'- {note}' for note in result['notes'])
    return f'{table(title, headers, rows)}\n\n{notes}\n'
