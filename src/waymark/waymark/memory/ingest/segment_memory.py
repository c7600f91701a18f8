# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Segments in memory: group stored frames into windows, store each window as an entry.

A segment entry carries its segment-level views (see views/view.py: the mean of its
frames' image embeddings, what OCR read in them), a 2x2 grid of four of its frames on
disk, and, when a VLM captioner runs, three captions added later as their own views.
Captioning happens on the captioner's thread; a segment is searchable by its other views
at once.

After a restart a session's segmentation resumes where the stored segments end; frames
stored after the last closed segment (a crash in the middle of a window) are read back
and grouped again, and segments still without captions are captioned again (the
captioner's disk cache makes a repeat free).
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence

import cv2
import numpy as np

from waymark.memory.entries import FRAME, SEGMENT, FrameRecord
from waymark.memory.ingest.segments import (
    Segment,
    Segmenter,
    SegmenterState,
    center_crop,
    pick_evenly,
    tile_grid,
)
from waymark.memory.storage.image_codec import decode_image, encode_jpeg
from waymark.memory.storage.image_store import ImageStore, ImageStoreFullError
from waymark.memory.storage.milvus_rows import ViewRow
from waymark.memory.storage.store import MemoryStore
from waymark.memory.views.captioner import CAPTION_VIEWS, CaptionJob, CaptionWorker
from waymark.memory.views.view import View

GRID_JPEG_QUALITY = 85
MAX_PENDING_VECTORS = 4096


class SegmentMemory:
    def __init__(
        self,
        store: MemoryStore,
        image_store: ImageStore,
        segmenter: Segmenter,
        views: Sequence[View],
        captions: CaptionWorker | None = None,
    ) -> None:
        """`views`: those the store keeps at the segment level are filled."""
        self.store = store
        self.image_store = image_store
        self.segmenter = segmenter
        self.captions = captions
        self.counts: Counter[str] = Counter()
        kept = store.views(SEGMENT)
        self._views = {view.name: view for view in views if view.name in kept}
        self._pooled = [name for name, view in self._views.items() if view.pools_frames]
        # Vectors of the frames in open windows of the views segments pool, until their
        # segment is stored; bounded, oldest first out (frames the segmenter thinned out
        # are never claimed).
        self._vectors: OrderedDict[str, dict[str, np.ndarray]] = OrderedDict()
        self._resumed: set[str] = set()

    def add_frame(self, record: FrameRecord, vectors: Mapping[str, np.ndarray]) -> None:
        """Group a newly stored frame (`vectors`: its views); store the segments its
        arrival closes."""
        if record.session not in self._resumed:
            self._resume(record.session, record.stamp_ns)
        pooled = {name: vectors[name] for name in self._pooled if name in vectors}
        if pooled:
            self._vectors[record.id] = pooled
            while len(self._vectors) > MAX_PENDING_VECTORS:
                self._vectors.popitem(last=False)
        self._store_all(self.segmenter.add(record))

    def flush(self, before_ns: int | None = None) -> int:
        """Close and store open windows (all, or those ending by `before_ns`)."""
        closed = self.segmenter.flush(None, before_ns)
        self._store_all(closed)
        return len(closed)

    def forget(self, session: str) -> None:
        """Drop a session's open window (the session is being deleted)."""
        self.segmenter.forget(session)
        self._resumed.discard(session)
        prefix = f'{session}/'
        for key in [key for key in self._vectors if key.startswith(prefix)]:
            del self._vectors[key]

    def caption_missing(self) -> int:
        """Queue captions for stored segments that have none; returns how many were queued."""
        if self.captions is None or CAPTION_VIEWS[0] not in self._views:
            return 0
        queued = 0
        for session in self.store.sessions():
            last = self.store.next_index(session, SEGMENT) - 1
            if last < 0:
                continue
            stored = self.store.search_index_range(session, 0, last, self.store.max_k, SEGMENT)
            captioned = self.store.view_ids(SEGMENT, CAPTION_VIEWS[0])
            for hit in stored:
                if hit.record.id not in captioned and self._submit_captions(hit.record):
                    queued += 1
        return queued

    def on_captions(self, key: str, captions: dict[str, str]) -> None:
        """CaptionWorker's on_done: embed each caption and add it as its own view."""
        records = self.store.get([key], SEGMENT)
        if not records or CAPTION_VIEWS[0] not in self._views:
            self.counts['captions_for_missing_segment'] += 1
            return
        for name in CAPTION_VIEWS:
            if captions.get(name) and name in self._views:
                vector = self._views[name].embed_text(captions[name])
                self.store.add_views(SEGMENT, records, name, [ViewRow(vector, captions[name])])
        self.counts['segments_captioned'] += 1

    def on_caption_error(self, key: str, error: Exception) -> None:
        """CaptionWorker's on_error: the segment stays searchable by its other views and is
        captioned again at the next start."""
        self.counts['caption_errors'] += 1

    # -- internals -----------------------------------------------------------------------

    def _resume(self, session: str, first_stamp_ns: int) -> None:
        """Continue a session's segmentation from what memory holds."""
        self._resumed.add(session)
        next_index = self.store.next_index(session, SEGMENT)
        if next_index == 0:
            return
        first = self.store.search_index_range(session, 0, 0, 1, SEGMENT)
        last = self.store.search_index_range(session, next_index - 1, next_index - 1, 1, SEGMENT)
        if not first or not last:
            return
        closed_until = last[0].record.end_stamp_ns
        self.segmenter.resume(
            session, SegmenterState(first[0].record.stamp_ns, next_index, closed_until)
        )
        # Frames stored after the last closed window but before this one were never grouped.
        orphans = (
            self.store.search_interval(
                closed_until, first_stamp_ns - 1, self.store.max_k, [session]
            )
            if first_stamp_ns > closed_until
            else []
        )
        records = [hit.record for hit in orphans]
        for name in self._pooled:
            if name in self.store.views(FRAME):
                stored = self.store.get_vectors(FRAME, name, [r.id for r in records])
                for key, vector in stored.items():
                    self._vectors.setdefault(key, {})[name] = vector
        for record in records:
            self._store_all(self.segmenter.add(record))
        self.counts['frames_regrouped_after_restart'] += len(records)

    def _store_all(self, segments: Sequence[Segment]) -> None:
        for segment in segments:
            self._store(segment)

    def _store(self, segment: Segment) -> None:
        pending = [self._vectors.pop(f.id) for f in segment.frames if f.id in self._vectors]
        text = ' | '.join(dict.fromkeys(f.text for f in segment.frames if f.text))
        vectors: dict[str, np.ndarray] = {}
        for name, view in self._views.items():
            frame_vectors = [frame[name] for frame in pending if name in frame]
            vector = view.segment_vector(frame_vectors, text)
            if vector is not None:
                vectors[name] = vector
        images = self._frame_images(segment.frames)
        grid_ref, grid_jpeg = '', b''
        if images:
            grid_jpeg = _jpeg(tile_grid(images))
            grid_ref = self._put_image(grid_jpeg)
        record = segment.record(image_ref=grid_ref, text=text)
        self.store.add(record, vectors)
        self.counts['segments_stored'] += 1
        if images and self.captions is not None and CAPTION_VIEWS[0] in self._views:
            center = _jpeg(tile_grid([center_crop(image) for image in images]))
            self._submit_captions(record, grid_jpeg, center)

    def _submit_captions(
        self, record: FrameRecord, grid_jpeg: bytes = b'', center_jpeg: bytes = b''
    ) -> bool:
        if not grid_jpeg:
            frames = self.store.search_interval(
                record.stamp_ns, record.end_stamp_ns - 1, self.store.max_k, [record.session]
            )
            images = self._frame_images([hit.record for hit in frames])
            if not images:
                return False
            grid_jpeg = _jpeg(tile_grid(images))
            center_jpeg = _jpeg(tile_grid([center_crop(image) for image in images]))
        accepted = self.captions.submit(CaptionJob(record.id, grid_jpeg, center_jpeg))
        if not accepted:
            self.counts['captions_not_queued'] += 1
        return accepted

    def _frame_images(self, frames: Sequence[FrameRecord]) -> list[np.ndarray]:
        """Four evenly spaced frames' images, decoded; frames without a readable image are
        skipped (a full disk may have kept the entry without its image)."""
        images = []
        for frame in pick_evenly([f for f in frames if f.image_ref], 4):
            try:
                data = self.image_store.get(frame.image_ref)
            except (OSError, ValueError):
                self.counts['segment_frame_image_missing'] += 1
                continue
            try:
                images.append(decode_image(data))
            except ValueError:
                continue
        return images

    def _put_image(self, data: bytes) -> str:
        try:
            return self.image_store.put(data, 'jpeg')
        except ImageStoreFullError:
            self.counts['images_not_stored'] += 1
            return ''


def _jpeg(image: np.ndarray) -> bytes:
    return encode_jpeg(cv2.cvtColor(image, cv2.COLOR_RGB2BGR), GRID_JPEG_QUALITY)
