# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The memory facade that memory_node drives: ingest keyframes, answer searches.

Views are enabled by the embedders given: `image` with an image-text embedder (searched
with its text tower for text queries, its image tower for photos), `text` with a sentence
embedder over what OCR read. A text query searches every enabled view and fuses them by
reciprocal rank, because cosines from different models are not on one scale.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from waymark.memory.embedders import ImageTextModel, TextEmbedder
from waymark.memory.entries import FrameRecord, Hit, Keyframe
from waymark.memory.image_store import ImageStore
from waymark.memory.ocr import TextReader, joined
from waymark.memory.store import MemoryStore

IMAGE_VIEW = 'image'
TEXT_VIEW = 'text'
# The usual reciprocal-rank-fusion constant: damps the weight of the very first ranks.
RRF_K = 60
MAX_QUERY_CHARS = 1000
# The text view fetches this many times k, so that among many frames with the same
# reading the nearest views are still found; cosines are compared to SCORE_DECIMALS.
TEXT_OVERSAMPLING = 4
SCORE_DECIMALS = 3


@dataclass(frozen=True)
class MemoryStats:
    """Counts for monitoring: what memory holds and how fast frames go in."""

    frames: int
    sessions: list[str]
    views: dict[str, int]
    ingested: int
    mean_ingest_ms: float


def decode_image(data: bytes) -> np.ndarray:
    """JPEG or PNG bytes to an RGB uint8 array; ValueError when they do not decode."""
    buffer = np.frombuffer(data, dtype=np.uint8)
    bgr = cv2.imdecode(buffer, cv2.IMREAD_COLOR) if buffer.size else None
    if bgr is None:
        raise ValueError(f'cannot decode image ({len(data)} bytes)')
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def view_dims(
    image_embedder: ImageTextModel | None, text_embedder: TextEmbedder | None
) -> dict[str, int]:
    """The `views` argument of MemoryStore for these embedders."""
    views = {}
    if image_embedder is not None:
        views[IMAGE_VIEW] = image_embedder.dim
    if text_embedder is not None:
        views[TEXT_VIEW] = text_embedder.dim
    return views


class MemoryService:
    def __init__(
        self,
        store: MemoryStore,
        image_store: ImageStore,
        image_embedder: ImageTextModel | None,
        text_embedder: TextEmbedder | None,
        reader: TextReader | None,
    ) -> None:
        wanted = view_dims(image_embedder, text_embedder)
        for view, dim in wanted.items():
            if store.view_dims.get(view) != dim:
                raise ValueError(
                    f'view {view!r}: embedder gives {dim}-d vectors, store has '
                    f'{store.view_dims.get(view)} (open the store with view_dims(...))'
                )
        self.store = store
        self.image_store = image_store
        self.image_embedder = image_embedder
        self.text_embedder = text_embedder
        self.reader = reader
        self.views = list(wanted)
        self._ingested = 0
        self._next_index: dict[str, int] = {}
        self._ingest_seconds = 0.0

    def ingest(self, keyframe: Keyframe) -> FrameRecord:
        """Store one keyframe: image file, OCR text, embeddings, then the database row.

        Memory numbers each session's entries itself, densely and in arrival order
        (`keyframe.index` is the sender's count). A keyframe already stored (same session
        and stamp: a bag replayed twice) keeps its entry instead of adding one.
        """
        started = time.perf_counter()
        try:
            image = decode_image(keyframe.image)
        except ValueError as error:
            raise ValueError(f'keyframe {keyframe.session}/{keyframe.index}: {error}') from error
        keyframe = dataclasses.replace(keyframe, index=self._index_for(keyframe))
        image_ref = self.image_store.put(
            keyframe.session, keyframe.index, keyframe.image, keyframe.image_format
        )
        lines = self.reader.read(image) if self.reader is not None else []
        text = joined(lines)
        text_size = max((line.height for line in lines), default=0.0) / image.shape[0]
        vectors = {}
        if self.image_embedder is not None:
            vectors[IMAGE_VIEW] = self.image_embedder.embed_images([image])[0]
        if text and self.text_embedder is not None:
            vectors[TEXT_VIEW] = self.text_embedder.embed_texts([text])[0]
        x, y, z = keyframe.pose.position
        record = FrameRecord(
            session=keyframe.session,
            index=keyframe.index,
            stamp_ns=keyframe.stamp_ns,
            x=x,
            y=y,
            z=z,
            yaw=keyframe.pose.yaw,
            map_epoch=keyframe.map_epoch,
            pose_valid=keyframe.pose_valid,
            image_ref=image_ref,
            text=text,
            text_size=text_size,
        )
        self.store.add(record, vectors)
        self._next_index[record.session] = max(self._next_index[record.session], record.index + 1)
        self._ingested += 1
        self._ingest_seconds += time.perf_counter() - started
        return record

    def _index_for(self, keyframe: Keyframe) -> int:
        session = keyframe.session
        if session not in self._next_index:
            self._next_index[session] = self.store.next_index(session)
        stamp = keyframe.stamp_ns
        same = self.store.search_interval(stamp, stamp, 1, [session])
        return same[0].record.index if same else self._next_index[session]

    def search_text(self, query: str, k: int, sessions: Sequence[str] | None = None) -> list[Hit]:
        """Frames matching a description, over every enabled view, fused by rank.

        Each hit reports the view where the frame ranked best and its cosine there.
        """
        query = ' '.join(query.split())[:MAX_QUERY_CHARS]
        if not query:
            raise ValueError('empty text query')
        if not self.views:
            raise ValueError('text search needs an image-text or a sentence embedder')
        rankings = []
        if self.image_embedder is not None:
            vector = self.image_embedder.embed_texts([query])[0]
            rankings.append(self.store.search_view(IMAGE_VIEW, vector, k, sessions))
        if self.text_embedder is not None:
            vector = self.text_embedder.embed_texts([query])[0]
            candidates = self.store.search_view(TEXT_VIEW, vector, k * TEXT_OVERSAMPLING, sessions)
            rankings.append(_nearest_reading_first(candidates)[:k])
        return _fuse(rankings)[:k]

    def search_image(
        self, image: np.ndarray, k: int, sessions: Sequence[str] | None = None
    ) -> list[Hit]:
        """Frames that look like `image` (RGB uint8), by the image view."""
        if self.image_embedder is None:
            raise ValueError('image search needs an image-text embedder')
        vector = self.image_embedder.embed_images([image])[0]
        return self.store.search_view(IMAGE_VIEW, vector, k, sessions)

    def search_time(
        self, stamp_ns: int, k: int, sessions: Sequence[str] | None = None
    ) -> list[Hit]:
        return self.store.search_time(stamp_ns, k, sessions)

    def search_interval(
        self, start_ns: int, end_ns: int, k: int, sessions: Sequence[str] | None = None
    ) -> list[Hit]:
        return self.store.search_interval(start_ns, end_ns, k, sessions)

    def search_position(
        self, x: float, y: float, z: float, k: int, sessions: Sequence[str] | None = None
    ) -> list[Hit]:
        return self.store.search_position(x, y, z, k, sessions)

    def search_range(
        self,
        x: float,
        y: float,
        radius: float,
        sessions: Sequence[str] | None = None,
        k: int | None = None,
    ) -> list[Hit]:
        return self.store.search_range(x, y, radius, sessions, k)

    def stats(self) -> MemoryStats:
        return MemoryStats(
            frames=self.store.count(),
            sessions=self.store.sessions(),
            views={view: self.store.count(view=view) for view in self.views},
            ingested=self._ingested,
            mean_ingest_ms=self.mean_ingest_ms,
        )

    @property
    def mean_ingest_ms(self) -> float:
        """Mean time of a successful ingest so far (decode, OCR, embeddings, writes)."""
        return 1000.0 * self._ingest_seconds / self._ingested if self._ingested else 0.0


def _nearest_reading_first(hits: Sequence[Hit]) -> list[Hit]:
    """Frames that read the same words score the same; of those, the one that saw the
    text largest (nearest, most legible) is the better answer, so it goes first."""
    return sorted(hits, key=lambda h: (-round(h.score, SCORE_DECIMALS), -h.record.text_size))


def _fuse(rankings: Sequence[Sequence[Hit]]) -> list[Hit]:
    """Reciprocal-rank fusion; ties keep the higher cosine, then the id, for a stable order."""
    fused: dict[str, float] = {}
    best: dict[str, tuple[int, Hit]] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            key = hit.record.id
            fused[key] = fused.get(key, 0.0) + 1.0 / (RRF_K + rank)
            kept = best.get(key)
            if kept is None or (rank, -hit.score) < (kept[0], -kept[1].score):
                best[key] = (rank, hit)
    order = sorted(fused, key=lambda key: (-fused[key], -best[key][1].score, key))
    return [best[key][1] for key in order]
