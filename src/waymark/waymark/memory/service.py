# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The memory facade that memory_node drives: ingest keyframes, answer searches.

Entries become searchable through the views given (see views/view.py): the image view
(an image-text embedder, searched with its text tower for text queries and its image
tower for photos), the text view (what OCR read, sentence-embedded), and for segments
the caption views. With a segmenter, keyframes are also grouped into segments
(BinTrack), which carry the segment-level views.

Ingesting is split in two: `prepare` (decode, OCR, embeddings: the slow, pure part) and
`commit` (image file, database rows, segments). A commit that fails because the database
is away can be retried without redoing the model work.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from waymark.memory.entries import (
    FRAME,
    PLACE,
    SEGMENT,
    FrameRecord,
    Hit,
    Keyframe,
    Sighting,
    TextBox,
)
from waymark.memory.ingest.admission import RefusedError, same_keyframe
from waymark.memory.ingest.segment_memory import SegmentMemory
from waymark.memory.places import DEFAULT_MAX_PLACES, ROWS_PER_PLACE, PlaceBook, distinct_places
from waymark.memory.retention import (
    NS_PER_DAY,
    RetentionPolicy,
    ThinningPlan,
    plan_thinning,
)
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.storage.image_codec import ImageLimits, decode_image
from waymark.memory.storage.image_store import ImageStore, ImageStoreFullError
from waymark.memory.storage.record_table import SessionSummary
from waymark.memory.storage.store import MemoryStore
from waymark.memory.views.fusion import best_per_entry, reciprocal_rank_fusion
from waymark.memory.views.photo_rerank import PhotoReranker, PhotoRerankParams
from waymark.memory.views.view import View, level_dims

MAX_QUERY_CHARS = 1000


@dataclass(frozen=True)
class MemoryStats:
    """Counts for monitoring: what memory holds and how fast frames go in."""

    frames: int
    segments: int
    sessions: list[str]
    views: dict[str, int]
    ingested: int
    mean_ingest_ms: float
    counts: dict[str, int]


@dataclass(frozen=True)
class PreparedKeyframe:
    """A keyframe with the model work done: what `commit` writes."""

    keyframe: Keyframe
    text: str
    text_size: float
    vectors: dict[str, np.ndarray]
    text_boxes: tuple[TextBox, ...] = ()

    @property
    def sighting(self) -> Sighting | None:
        """What target localisation needs of this keyframe; None when it gives nothing."""
        keyframe = self.keyframe
        if keyframe.camera is None and not self.text_boxes and keyframe.depth is None:
            return None
        return Sighting(keyframe.camera, self.text_boxes, keyframe.depth)


class MemoryService:
    def __init__(
        self,
        store: MemoryStore,
        image_store: ImageStore,
        views: Sequence[View],
        segments: SegmentMemory | None = None,
        image_limits: ImageLimits | None = None,
        max_places: int = DEFAULT_MAX_PLACES,
        photo_rerank: PhotoRerankParams | None = None,
    ) -> None:
        """`views`: every view of both levels; the store keeps exactly their frame views
        (open it with `level_dims(views, FRAME)`), and named places (`places`) by those of
        them it keeps at the place level. `photo_rerank`: how photo searches' best hits
        are verified against their stored pictures (None or `top` 0: not at all)."""
        wanted = level_dims(views, FRAME)
        for view, dim in wanted.items():
            if store.view_dims.get(view) != dim:
                raise ValueError(
                    f'view {view!r}: embedder gives {dim}-d vectors, store has '
                    f'{store.view_dims.get(view)} (open the store with level_dims(...))'
                )
        self.store = store
        self.image_store = image_store
        self.segments = segments
        self.image_limits = image_limits or ImageLimits()
        self.views = list(wanted)
        self._views = {view.name: view for view in views}
        self.counts: Counter[str] = Counter()
        # Writers (ingest, captions arriving, deletion) take turns; searches do not wait.
        self._write_lock = threading.RLock()
        self._ingested = 0
        self._ingest_seconds = 0.0
        self.reranker = None
        if photo_rerank is not None and photo_rerank.top > 0:
            self.reranker = PhotoReranker(photo_rerank, image_store.image_of)
        self.places = PlaceBook(
            store, image_store, self._views, self._write_lock, self.image_limits, max_places
        )

    # -- ingest --------------------------------------------------------------------------

    def ingest(self, keyframe: Keyframe) -> FrameRecord:
        """Store one keyframe: `commit(prepare(keyframe))`."""
        return self.commit(self.prepare(keyframe))

    def prepare(self, keyframe: Keyframe) -> PreparedKeyframe:
        """Decode, read text, embed. ValueError when the image does not decode or is over
        `image_limits` (checked on its header, before decoding)."""
        started = time.perf_counter()
        try:
            image = decode_image(keyframe.image, self.image_limits)
        except ValueError as error:
            raise ValueError(f'keyframe {keyframe.session}/{keyframe.index}: {error}') from error
        readings = [self._views[name].read_frame(image) for name in self.views]
        vectors = {
            name: reading.vector
            for name, reading in zip(self.views, readings, strict=True)
            if reading.vector is not None
        }
        text = ' '.join(reading.text for reading in readings if reading.text)
        text_size = max((reading.text_size for reading in readings), default=0.0)
        boxes = tuple(box for reading in readings for box in reading.text_boxes)
        self._ingest_seconds += time.perf_counter() - started
        return PreparedKeyframe(keyframe, text, text_size, vectors, boxes)

    def stored_as(self, keyframe: Keyframe) -> FrameRecord | None:
        """The stored entry this very keyframe became, None when its stamp is not stored.

        Raises RefusedError (reason `conflicting`) when an entry with its session and stamp
        holds other content: checked at arrival too, so that a forged keyframe is refused
        before it reaches the journal, where it could stand in the way of a true resend.
        """
        existing = self.store.find_stamp(keyframe.session, keyframe.stamp_ns)
        if existing is None:
            return None
        reference = self.image_store.reference(keyframe.image, keyframe.image_format)
        if not same_keyframe(existing, keyframe, reference):
            raise RefusedError(
                'conflicting',
                f'keyframe {keyframe.session}/{keyframe.index}: entry {existing.id} '
                'has the same stamp and other content; it is kept',
            )
        return existing

    def commit(self, prepared: PreparedKeyframe) -> FrameRecord:
        """Write a prepared keyframe: image file, database rows, then its segment.

        Memory numbers each session's entries itself, densely and in arrival order
        (`keyframe.index` is the sender's count). A stored entry is never replaced: the
        same keyframe again (a resend, a bag replayed twice) returns the stored entry and
        writes nothing; another keyframe with a stored session and stamp raises RefusedError
        (reason `conflicting`). A full image disk keeps the entry without its image
        (image_ref empty) rather than lose it.
        """
        started = time.perf_counter()
        keyframe = prepared.keyframe
        with self._write_lock:
            existing = self.stored_as(keyframe)
            if existing is not None:
                self.counts['keyframes_duplicate'] += 1
                return existing
            index = self.store.next_index(keyframe.session)
            try:
                image_ref = self.image_store.put(keyframe.image, keyframe.image_format)
            except ImageStoreFullError:
                self.counts['images_not_stored'] += 1
                image_ref = ''
            x, y, z = keyframe.pose.position
            record = FrameRecord(
                session=keyframe.session,
                index=index,
                stamp_ns=keyframe.stamp_ns,
                x=x,
                y=y,
                z=z,
                yaw=keyframe.pose.yaw,
                map_epoch=keyframe.map_epoch,
                pose_valid=keyframe.pose_valid,
                image_ref=image_ref,
                text=prepared.text,
                text_size=prepared.text_size,
                sighting=prepared.sighting,
            )
            self.store.add(record, prepared.vectors)
            # As stored: a sighting over the store's size bound comes back trimmed.
            record = self.store.get([record.id])[0]
            self._ingested += 1
            if self.segments is not None:
                self.segments.add_frame(record, prepared.vectors)
        self._ingest_seconds += time.perf_counter() - started
        return record

    def close_segments(self, before_ns: int | None = None) -> int:
        """Close open segment windows (the end of a recording, or the robot idle)."""
        if self.segments is None:
            return 0
        with self._write_lock:
            return self.segments.flush(before_ns)

    # -- search --------------------------------------------------------------------------

    def search(self, query: SearchQuery) -> list[Hit]:
        """The entries `query` asks for, best first (see search_query.py for the modes).

        The one place a query meets the store: a query of the robots named only searches
        the sessions they recorded, and finds nothing when they recorded none asked for.
        """
        sessions = self.robot_sessions(query.sessions, query.robots)
        if sessions == []:
            return []
        q, k, level = query, query.k, query.level
        if q.mode == Mode.TEXT:
            return self._search_text(q.text, k, sessions, level, q.views)
        if q.mode == Mode.IMAGE:
            return self._search_image(q.image, k, sessions, level)
        if q.mode == Mode.INDEX_RANGE and q.text.strip():  # Binary Tracking scores a span
            span = (q.first_index, q.last_index)
            return self._search_text(q.text, k, sessions, level, q.views, span)
        return self.store.search_records(q, sessions)

    def count(self, query: SearchQuery) -> int:
        """How many entries `query` searches among: those of its sessions and robots at its
        level (every named place at the place level)."""
        if query.level == PLACE:
            return len(self.places.places())
        sessions = self.robot_sessions(query.sessions, query.robots)
        if sessions is None:
            return self.store.count(level=query.level)
        return sum(self.store.count(session, level=query.level) for session in set(sessions))

    def _search_text(
        self,
        text: str,
        k: int,
        sessions: Sequence[str] | None,
        level: str,
        views: Sequence[str],
        index_range: tuple[int, int] | None = None,
    ) -> list[Hit]:
        """Entries matching a description over the chosen views, merged (see fusion):
        views of one family by each entry's best cosine, families by reciprocal rank.

        Each hit reports the view where the entry ranked best and its cosine there.
        """
        text = ' '.join(text.split())[:MAX_QUERY_CHARS]
        chosen = set(self._chosen_views(level, views))
        unknown = sorted(chosen - set(self._views))
        if unknown:
            raise ValueError(f'views {unknown} have no model here to embed the query')
        families: dict[str, list[View]] = {}
        for view in self._views.values():
            if view.name in chosen:
                families.setdefault(view.family, []).append(view)
        rows = _rows_wanted(k, level)
        rankings = []
        for members in families.values():
            vector = members[0].embed_text(text)
            found = [
                self.store.search_view(
                    view.name, vector, rows * view.oversampling, sessions, level, index_range
                )
                for view in members
            ]
            # A lone view keeps the store's order; text views break ties by the nearest
            # reading even alone.
            if len(found) == 1 and not members[0].ranks_text:
                rankings.append(found[0])
            else:
                rankings.append(best_per_entry(found)[:rows])
        return _entries(reciprocal_rank_fusion(rankings), level)[:k]

    def _search_image(
        self, image: np.ndarray, k: int, sessions: Sequence[str] | None, level: str
    ) -> list[Hit]:
        """Entries that look like `image` (RGB uint8), by the views that embed photos
        (fused by reciprocal rank when there are several), the best of them re-ranked by
        geometric verification against their stored pictures (photo_rerank). Every view
        embeds the photo before anything is searched, so a photo one cannot take is one
        ValueError."""
        names = self.image_views(level)
        if not names:
            raise ValueError(
                'image search needs a view that embeds photos (an image-text model, or the '
                'photo view)'
            )
        vectors = {name: self._views[name].embed_image(image) for name in names}
        rows = _rows_wanted(k, level)
        if self.reranker is not None:
            rows = max(rows, self.reranker.rows(k))
        rankings = [
            self.store.search_view(name, vector, rows, sessions, level)
            for name, vector in vectors.items()
        ]
        fused = rankings[0] if len(rankings) == 1 else reciprocal_rank_fusion(rankings)
        if self.reranker is not None:
            fused = self.reranker.rerank(fused, image)
        return _entries(fused, level)[:k]

    def image_views(self, level: str = FRAME) -> list[str]:
        """The views of `level` that a photo can be searched by."""
        return [
            name
            for name in self.store.views(level)
            if name in self._views and self._views[name].image_queries
        ]

    def _chosen_views(self, level: str, views: Sequence[str] | None) -> list[str]:
        """The views a text query is embedded by: those named, else every enabled one that
        embeds text (a view without a model here is kept, and refused by the caller)."""
        enabled = self.store.views(level)
        if not enabled:
            raise ValueError(f'no embedding views are enabled at the {level} level')
        if not views:
            chosen = [name for name in enabled if self._takes_text(name)]
            if not chosen:
                raise ValueError(f'no view at the {level} level embeds text; enabled: {enabled}')
            return chosen
        unknown = sorted(set(views) - set(enabled))
        if unknown:
            raise ValueError(
                f'views {unknown} are not enabled at the {level} level; enabled: {enabled}'
            )
        pictures = sorted(name for name in views if not self._takes_text(name))
        if pictures:
            raise ValueError(f'views {pictures} describe pictures and cannot be searched by text')
        return list(dict.fromkeys(views))

    def _takes_text(self, name: str) -> bool:
        return name not in self._views or self._views[name].text_queries

    # -- sessions ------------------------------------------------------------------------

    def sessions(self) -> list[tuple[str, SessionSummary, int, str]]:
        """Each session with its frame summary, its number of segments and its robot."""
        owners = self.store.owners.owners()
        return [
            (
                name,
                self.store.summary(name),
                self.store.count(name, level=SEGMENT),
                owners.get(name, ''),
            )
            for name in self.store.sessions()
        ]

    def robot_sessions(
        self, sessions: Sequence[str] | None, robots: Sequence[str] | None
    ) -> list[str] | None:
        """The sessions a search keeps: `sessions` (None: all) narrowed to those `robots`
        recorded, when robots are named; [] when that leaves none."""
        if not robots:
            return None if not sessions else list(sessions)
        owned = self.store.owners.sessions_of(robots)
        if not sessions:
            return owned
        kept = set(owned)
        return [session for session in sessions if session in kept]

    def delete_session(self, session: str) -> tuple[int, int]:
        """Delete a session's entries and the images no other session uses; returns the
        numbers of frames and segments deleted. Another robot's session is refused
        (SessionOwnedError) before anything changes."""
        with self._write_lock:
            self.store.owners.check(session)
            if self.segments is not None:
                self.segments.forget(session)
            removed = self.store.delete_session(session)
            refs = {r.image_ref for records in removed.values() for r in records if r.image_ref}
            self.image_store.remove(refs - self.store.image_refs())
        return len(removed[FRAME]), len(removed[SEGMENT])

    # -- retention -----------------------------------------------------------------------

    def storage(self) -> dict[str, int]:
        """Bytes on this machine by part: database (Milvus Lite), snapshots, images."""
        usage = self.store.disk_usage()
        usage['images'] = self.image_store.used_bytes
        return usage

    def plan_thinning(self, policy: RetentionPolicy, now_ns: int) -> ThinningPlan:
        """What thinning under `policy` would drop now, of this robot's own sessions
        (nothing changes)."""
        cutoff = now_ns - int(policy.thin_after_days * NS_PER_DAY)
        frames = self.store.records_before(cutoff) if policy.thin_after_days > 0 else []
        owners, robot = self.store.owners.owners(), self.store.owners.robot
        frames = [record for record in frames if owners.get(record.session, robot) == robot]
        with_vectors = self.store.with_views(FRAME, (record.id for record in frames))
        return plan_thinning(frames, with_vectors, policy, now_ns)

    def thin(self, plan: ThinningPlan) -> int:
        """Drop the view rows of the plan's frames; returns the rows removed."""
        with self._write_lock:
            return self.store.remove_views(FRAME, plan.ids)

    # -- monitoring ----------------------------------------------------------------------

    def stats(self) -> MemoryStats:
        counts = dict(self.counts)
        if self.segments is not None:
            counts.update(self.segments.counts)
        return MemoryStats(
            frames=self.store.count(),
            segments=self.store.count(level=SEGMENT),
            sessions=self.store.sessions(),
            views={view: self.store.count(view=view) for view in self.views},
            ingested=self._ingested,
            mean_ingest_ms=self.mean_ingest_ms,
            counts=counts,
        )

    @property
    def mean_ingest_ms(self) -> float:
        """Mean time of a successful ingest so far (decode, OCR, embeddings, writes)."""
        return 1000.0 * self._ingest_seconds / self._ingested if self._ingested else 0.0


def _rows_wanted(k: int, level: str) -> int:
    """Rows to ask the store for k entries: a place may match by each of its rows."""
    return k * ROWS_PER_PLACE if level == PLACE else k


def _entries(hits: list[Hit], level: str) -> list[Hit]:
    return distinct_places(hits) if level == PLACE else hits
