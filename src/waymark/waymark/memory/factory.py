# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The one way a MemoryService is put together: store, image files, segments, captions.

memory_node, the offline evaluation and the benchmarks all open memory here, so a memory
directory written by one is laid out as the others expect, and the views a store keeps
always match the models that fill them. The models come separately (`MemoryModels`): a
benchmark loads them once for many memories, and tests give stand-ins.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from waymark.memory.ingest.segment_memory import SegmentMemory, segment_view_dims
from waymark.memory.ingest.segments import DEFAULT_WINDOW_S, Segmenter
from waymark.memory.service import MemoryService, view_dims
from waymark.memory.storage.image_codec import ImageLimits
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.store import MemoryStore
from waymark.memory.storage.vector_index import IndexParams
from waymark.memory.views.captioner import Captioner, CaptionerConfig, CaptionWorker
from waymark.memory.views.embedders import (
    ImageTextEmbedder,
    ImageTextModel,
    SentenceEmbedder,
    TextEmbedder,
)
from waymark.memory.views.ocr import TextReader

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
    # Segment length in seconds; 0: no segments.
    segment_window_s: float = DEFAULT_WINDOW_S
    # Disk cap of stored images; 0: none.
    images_max_bytes: int = 0
    index_params: IndexParams = field(default_factory=IndexParams)
    # Save the in-process indexes at close, so the next open loads instead of rebuilding.
    keep_indexes: bool = False
    image_limits: ImageLimits = field(default_factory=ImageLimits)
    # The VLM that captions segments (its answers cached in data_dir); None: no captions.
    captioner: CaptionerConfig | None = None
    caption_queue_size: int = 1000


@dataclass(frozen=True)
class MemoryModels:
    """The models behind the views; a view is kept only when its model is given."""

    image_embedder: ImageTextModel | None = None
    text_embedder: TextEmbedder | None = None
    # OCR feeds the text view, so it runs only with a text embedder.
    reader: TextReader | None = None


def load_models(
    text_model: str, image_model: str, ocr: bool, ocr_min_confidence: float = 0.5
) -> MemoryModels:
    """The models named (an empty name: that view is off); OCR only with a text model."""
    return MemoryModels(
        image_embedder=ImageTextEmbedder(image_model) if image_model else None,
        text_embedder=SentenceEmbedder(text_model) if text_model else None,
        reader=TextReader(min_confidence=ocr_min_confidence) if ocr and text_model else None,
    )


def open_memory(config: MemoryConfig, models: MemoryModels) -> MemoryService:
    """Open (creating) the memory in `config.data_dir` with the views `models` fill.

    With a captioner, the service's `segments.captions` is a started CaptionWorker: stop
    it before closing the store.
    """
    data_dir = Path(config.data_dir).expanduser()
    data_dir.mkdir(parents=True, exist_ok=True)
    image, text = models.image_embedder, models.text_embedder
    segmented = config.segment_window_s > 0
    captions = segmented and config.captioner is not None
    store = MemoryStore(
        config.uri or str(data_dir / DATABASE),
        views=view_dims(image, text),
        prefix=config.collection_prefix,
        segment_views=(
            segment_view_dims(image.dim if image else None, text.dim if text else None, captions)
            if segmented
            else {}
        ),
        index_params=config.index_params,
        index_dir=data_dir / INDEXES if config.keep_indexes else None,
    )
    images = ImageStore(data_dir, max_bytes=config.images_max_bytes)
    segments = None
    if segmented:
        segments = SegmentMemory(store, images, Segmenter(config.segment_window_s), text)
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
        image_embedder=image,
        text_embedder=text,
        reader=models.reader if text is not None else None,
        segments=segments,
        image_limits=config.image_limits,
    )
