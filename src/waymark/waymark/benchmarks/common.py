# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the benchmarks share: latency summaries, tables, JSON, synthetic vectors, and the
synthetic recording whose keyframes the ingest and storage benchmarks feed to memory.

Keyframes come from the demo world's tour written as a rosbag2 and cut by the same capture
code the nodes run, so their images, text and rate are what memory_node would receive.
"""

from __future__ import annotations

import functools
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from waymark.geometry import Pose
from waymark.memory.entries import Keyframe
from waymark.memory.retention import dir_bytes

SESSION = 'bench'
# Synthetic embeddings: clusters of about this many entries (one place seen for a while),
# visited in runs of consecutive entries, each vector its cluster's centre plus noise of
# this norm: cosine 0.7 to its centre and about 0.5 to a query about the same place.
CLUSTER_SIZE = 200
MEAN_RUN = 20
NOISE = 1.0


# -- measuring -----------------------------------------------------------------------------


def latency(seconds: Sequence[float]) -> dict[str, float | int | None]:
    """Count, p50, p95 and mean of durations given in seconds, in milliseconds."""
    ms = np.asarray(seconds, dtype=float) * 1000.0
    if ms.size == 0:
        return {'n': 0, 'p50_ms': None, 'p95_ms': None, 'mean_ms': None}
    return {
        'n': int(ms.size),
        'p50_ms': float(np.percentile(ms, 50)),
        'p95_ms': float(np.percentile(ms, 95)),
        'mean_ms': float(ms.mean()),
    }


def mem_available_bytes() -> int:
    """MemAvailable from /proc/meminfo: how much more the benchmarks may take."""
    for line in Path('/proc/meminfo').read_text().splitlines():
        if line.startswith('MemAvailable:'):
            return int(line.split()[1]) * 1024
    return 0


def rss_bytes(kind: str = 'VmRSS') -> int:
    """This process's resident memory, to report what an index costs in RAM: all of it
    (VmRSS), or only anonymous memory (RssAnon) or mapped files' pages (RssFile)."""
    for line in Path('/proc/self/status').read_text().splitlines():
        if line.startswith(f'{kind}:'):
            return int(line.split()[1]) * 1024
    return 0


# -- reporting -----------------------------------------------------------------------------


def _cell(value: object) -> str:
    if value is None:
        return '-'
    if isinstance(value, bool):
        return 'yes' if value else 'no'
    if isinstance(value, float):
        if value == 0 or abs(value) >= 100:
            return f'{value:,.0f}'
        if abs(value) >= 10:
            return f'{value:.1f}'
        return f'{value:.2f}' if abs(value) >= 0.1 else f'{value:.3f}'
    if isinstance(value, int):
        return f'{value:,}'
    return str(value)


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table: first column left-aligned, the others right-aligned."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [
            value.ljust(width) if i == 0 else value.rjust(width)
            for i, (value, width) in enumerate(zip(values, widths, strict=True))
        ]
        return '  '.join(parts).rstrip()

    rule = '-' * len(line(list(headers)))
    return '\n'.join([title, rule, line(list(headers)), rule, *map(line, cells), rule])


def write_json(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + '\n', encoding='utf-8')
    return path


# -- synthetic embeddings ------------------------------------------------------------------


def cluster_labels(count: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Which place each of `count` consecutive entries shows, and how many places there are."""
    clusters = max(1, count // CLUSTER_SIZE)
    runs = rng.geometric(1.0 / MEAN_RUN, size=2 * count // MEAN_RUN + 16)
    while runs.sum() < count:
        runs = np.concatenate([runs, rng.geometric(1.0 / MEAN_RUN, size=runs.size)])
    labels = np.repeat(rng.integers(0, clusters, runs.size), runs)[:count]
    return labels.astype(np.int32), clusters


def unit_rows(rows: np.ndarray) -> np.ndarray:
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def centres(count: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    return unit_rows(rng.standard_normal((count, dim), dtype=np.float32))


def clustered_vectors(
    centre_rows: np.ndarray, labels: np.ndarray, rng: np.random.Generator, chunk: int = 65536
) -> np.ndarray:
    """Unit float32 rows: each its cluster's centre plus Gaussian noise of norm ~NOISE.
    Made in chunks, so that 1M x 1152 never needs a float64 copy."""
    dim = centre_rows.shape[1]
    out = np.empty((labels.size, dim), dtype=np.float32)
    scale = np.float32(NOISE / np.sqrt(dim))
    for start in range(0, labels.size, chunk):
        part = out[start : start + chunk]
        rng.standard_normal(part.shape, dtype=np.float32, out=part)
        part *= scale
        part += centre_rows[labels[start : start + chunk]]
        unit_rows(part)
    return out


# -- the synthetic recording ---------------------------------------------------------------


@dataclass(frozen=True)
class Recording:
    """Keyframes of a recorded tour and what the camera stream they came from was."""

    world: str
    keyframes: tuple[Keyframe, ...]
    duration_s: float
    images: int  # camera frames in the recording
    width: int
    height: int
    camera_rate_hz: float
    jpeg_quality: int
    bag_bytes: int

    @property
    def keyframe_rate_hz(self) -> float:
        return len(self.keyframes) / self.duration_s if self.duration_s else 0.0

    def settings(self) -> dict:
        return {
            'world': self.world,
            'recording_s': self.duration_s,
            'camera': f'{self.width}x{self.height} RGB at {self.camera_rate_hz:g} Hz',
            'camera_jpeg_quality': self.jpeg_quality,
            'camera_frames': self.images,
            'keyframes': len(self.keyframes),
            'keyframes_per_s_of_recording': self.keyframe_rate_hz,
        }


class _Collector:
    """Takes the place of MemoryService in ingest_bag, keeping the keyframes it is given."""

    def __init__(self) -> None:
        self.keyframes: list[Keyframe] = []

    def ingest(self, keyframe: Keyframe) -> None:
        self.keyframes.append(keyframe)


@functools.lru_cache(maxsize=2)
def demo_recording(max_duration_s: float | None = None) -> Recording:
    """The demo world's tour as keyframes: bag written, then cut by KeyframeBuilder with
    the default keyframe policy and the bag's camera extrinsic (as `evaluate` does)."""
    from waymark.evaluation.ingest import ingest_bag
    from waymark.memory.ingest.capture import CaptureConfig
    from waymark.sim.bag import DEMO_CAMERA_RATE_HZ, IMAGE_TOPICS, write_bag
    from waymark.sim.world import build_demo_world

    world = build_demo_world(0)
    width, height, quality = 640, 480, 90
    with tempfile.TemporaryDirectory(prefix='waymark-bench-') as tmp:
        info = write_bag(
            world,
            Path(tmp) / 'bag',
            camera_rate_hz=DEMO_CAMERA_RATE_HZ,
            width=width,
            height=height,
            jpeg_quality=quality,
            max_duration_s=max_duration_s,
        )
        truth = json.loads(info.ground_truth.read_text())
        values = truth['camera']['extrinsic']
        capture = CaptureConfig(
            session=SESSION, camera_extrinsic=Pose.checked(values[:3], values[3:])
        )
        collector = _Collector()
        ingest_bag(info.path, collector, capture)  # type: ignore[arg-type]
        bag_bytes = dir_bytes(info.path)['bytes']
    return Recording(
        world=world.name,
        keyframes=tuple(collector.keyframes),
        duration_s=info.duration_s,
        images=info.message_counts[IMAGE_TOPICS['jpeg'][0]],
        width=width,
        height=height,
        camera_rate_hz=DEMO_CAMERA_RATE_HZ,
        jpeg_quality=quality,
        bag_bytes=bag_bytes,
    )


def tiny_siglip(directory: Path) -> str:
    """Build the tests' tiny random SigLIP (no image-text weights ship on PyPI) and return
    its directory. It comes from the waymark_testing package of a source checkout."""
    try:
        from waymark_testing.tiny_models import build_tiny_siglip
    except ImportError:
        here = Path(__file__).resolve()
        package = Path('src', 'waymark_testing')
        roots = [p for p in here.parents if (p / package / 'waymark_testing').is_dir()]
        if not roots:
            raise RuntimeError(
                'the image view benchmarks need the waymark_testing package '
                '(src/waymark_testing of a waymark source checkout)'
            ) from None
        sys.path.insert(0, str(roots[0] / package))
        from waymark_testing.tiny_models import build_tiny_siglip
    return build_tiny_siglip(directory)
