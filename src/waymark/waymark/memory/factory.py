# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The one way a MemoryService is put together: store, image files, segments, captions.

memory_node, the offline evaluation and the benchmarks all open memory here, so a memory
directory written by one is laid out as the others expect, and the views a store keeps
always match the models that fill them. The views come separately (`load_models`): a
benchmark loads them once for many memories, and tests give stand-ins.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from waymark.memory.entries import FRAME, SEGMENT, check_robot_id
from waymark.memory.ingest.segment_memory import SegmentMemory
from waymark.memory.ingest.segments import DEFAULT_WINDOW_S, Segmenter
from waymark.memory.places import DEFAULT_MAX_PLACES
from waymark.memory.service import MemoryService
from waymark.memory.storage.hybrid_index import DEFAULT_HOT_ROWS
from waymark.memory.storage.image_codec import ImageLimits
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.index_params import IndexParams
from waymark.memory.storage.recovery import DEFAULT_SNAPSHOT_EVERY
from waymark.memory.storage.store import MemoryStore
from waymark.memory.storage.view_index import IN_PROCESS
from waymark.memory.views.captioner import Captioner, CaptionerConfig, CaptionWorker
from waymark.memory.views.photo_rerank import PhotoRerankParams
from waymark.memory.views.registry import VIEWS
from waymark.memory.views.text import TextView, caption_views
from waymark.memory.views.view import View, ViewKind, level_dims

DATABASE = 'memory.db'
INDEXES = 'indexes'
CAPTIONS = 'captions'


@dataclass(frozen=True)
class MemoryConfig:
    """Where memory lives and how it is kept (everything but the models)."""

    data_dir: Path
    # Milvus server address (http://host:19530); empty: a Milvus Lite file in data_dir.
    uri: str = ''
    collection_prefix: str = 'waymark'
    # Where vector searches run (store.SEARCH_BACKENDS).
    search_backend: str = IN_PROCESS
    # Segment length in seconds; 0: no segments.
    segment_window_s: float = DEFAULT_WINDOW_S
    # Disk cap of stored images; 0: none.
    images_max_bytes: int = 0
    index_params: IndexParams = field(default_factory=IndexParams)
    # Save the in-process indexes (at close and every `snapshot_every` ids written), so
    # an open loads them and refetches only later writes instead of rebuilding.
    keep_indexes: bool = False
    snapshot_every: int = DEFAULT_SNAPSHOT_EVERY
    image_limits: ImageLimits = field(default_factory=ImageLimits)
    # The VLM that captions segments (its answers cached in data_dir); None: no captions.
    captioner: CaptionerConfig | None = None
    caption_queue_size: int = 1000
    # Most named places memory keeps.
    max_places: int = DEFAULT_MAX_PLACES
    # Robot that owns the sessions this memory_node writes (session_owners); '' alone.
    robot_id: str = ''
    # search_backend 'auto': most view rows of the sessions being written kept in process.
    hot_rows: int = DEFAULT_HOT_ROWS
    # How photo searches' best hits are verified against their stored pictures.
    photo_rerank: PhotoRerankParams = field(default_factory=PhotoRerankParams)

    def __post_init__(self) -> None:
        check_robot_id(self.robot_id)


def load_models(settings: object, kinds: Sequence[ViewKind] = VIEWS) -> tuple[View, ...]:
    """The views `settings` turn on (memory_node's parameters, or any object holding every
    kind's settings: `registry.ViewSettings`), with their models, in registry order."""
    views = (kind.load(settings) for kind in kinds)
    return tuple(view for view in views if view is not None)


def open_memory(config: MemoryConfig, views: Sequence[View]) -> MemoryService:
    """Open (creating) the memory in `config.data_dir` keeping `views`.

    With a captioner and a text view, segments also keep the caption views, embedded by
    the text view's model; the service's `segments.captions` is then a started
    CaptionWorker: stop it before closing the store.
    """
    data_dir = Path(config.data_dir).expanduser()
    data_dir.mkdir(parents=True, exist_ok=True)
    segmented = config.segment_window_s > 0
    captions = segmented and config.captioner is not None
    text = next((view for view in views if isinstance(view, TextView)), None)
    if captions and text is not None:
        views = (*views, *caption_views(text.embedder))
    store = MemoryStore(
        config.uri or str(data_dir / DATABASE),
        views=level_dims(views, FRAME),
        prefix=config.collection_prefix,
        segment_views=level_dims(views, SEGMENT) if segmented else {},
        index_params=config.index_params,
        index_dir=data_dir / INDEXES if config.keep_indexes else None,
        # Places are found by the frame views' models: images by the image view, names by
        # the text (OCR) view.
        place_views=level_dims(views, FRAME),
        search_backend=config.search_backend,
        snapshot_every=config.snapshot_every,
        robot=config.robot_id,
        hot_rows=config.hot_rows,
    )
    images = ImageStore(data_dir, max_bytes=config.images_max_bytes)
    segments = None
    if segmented:
        segments = SegmentMemory(store, images, Segmenter(config.segment_window_s), views)
        if captions:
            captioner = Captioner(
                dataclasses.replace(config.captioner, cache_dir=data_dir / CAPTIONS)
            )
            segments.captions = CaptionWorker(
                captioner,
                on_done=segments.on_captions,
                on_error=segments.on_caption_error,
                queue_size=config.caption_queue_size,
            )
    return MemoryService(
        store,
        images,
        views,
        segments=segments,
        image_limits=config.image_limits,
        max_places=config.max_places,
        photo_rerank=config.photo_rerank,
    )
