# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The sentence-embedded views: `text`, what OCR read in a keyframe (a segment: what its
frames read), and the segment caption views a VLM fills later (see captioner). All are
embedded by one sentence model, so they share a cosine scale and rank jointly."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from waymark.memory.entries import SEGMENT
from waymark.memory.views.captioner import CAPTION_VIEWS
from waymark.memory.views.embedders import DeviceSettings, SentenceEmbedder, TextEmbedder
from waymark.memory.views.ocr import MAX_TEXT_BOXES, TextReader, joined, text_boxes
from waymark.memory.views.view import Reading, View, ViewKind
from waymark.settings import setting

TEXT_VIEW = 'text'
SENTENCE_FAMILY = 'sentence'


class SentenceView(View):
    """A view whose vectors are sentence embeddings of text."""

    family = SENTENCE_FAMILY
    ranks_text = True

    def __init__(self, embedder: TextEmbedder) -> None:
        self.embedder = embedder

    @property
    def dim(self) -> int:
        return self.embedder.dim

    def embed_text(self, text: str) -> np.ndarray:
        return self.embedder.embed_texts([text])[0]


class TextView(SentenceView):
    """Printed text (signs, labels) read by OCR; no reader: frames read nothing."""

    name = TEXT_VIEW
    # Many frames read the same sign: fetch more, so that the nearest are among them.
    oversampling = 4

    def __init__(
        self, embedder: TextEmbedder, reader: TextReader | None, max_boxes: int = MAX_TEXT_BOXES
    ) -> None:
        super().__init__(embedder)
        self.reader = reader
        self.max_boxes = max_boxes

    def read_frame(self, image: np.ndarray) -> Reading:
        lines = self.reader.read(image) if self.reader is not None else []
        text = joined(lines)
        height, width = image.shape[:2]
        text_size = max((line.height for line in lines), default=0.0) / height
        boxes = text_boxes(lines, width, height, self.max_boxes)
        return Reading(self.embed_text(text) if text else None, text, text_size, boxes)

    def segment_vector(self, frame_vectors: Sequence[np.ndarray], text: str) -> np.ndarray | None:
        return self.embed_text(text) if text else None


class CaptionView(SentenceView):
    """One of a segment's VLM captions; its vectors arrive after the segment is stored."""

    levels = (SEGMENT,)

    def __init__(self, name: str, embedder: TextEmbedder) -> None:
        super().__init__(embedder)
        self.name = name


def caption_views(embedder: TextEmbedder) -> tuple[CaptionView, ...]:
    """The caption views, embedded by the text view's sentence model."""
    return tuple(CaptionView(name, embedder) for name in CAPTION_VIEWS)


@dataclass(frozen=True)
class TextViewSettings(DeviceSettings):
    text_model: str = setting('default', 'Sentence embedder for the text (OCR) view; empty: off.')
    ocr: bool = setting(True, 'Read text in keyframes (OCR) for the text view.')
    ocr_min_confidence: float = setting(0.5, 'Drop OCR lines below this.', low=0.0, high=1.0)
    ocr_max_boxes: int = setting(
        MAX_TEXT_BOXES,
        'Text boxes kept per keyframe for target localisation (the tallest lines).',
        low=0,
        high=64,
    )


def load(settings: TextViewSettings) -> TextView | None:
    """The text view; OCR runs only for it."""
    if not settings.text_model:
        return None
    reader = TextReader(min_confidence=settings.ocr_min_confidence) if settings.ocr else None
    return TextView(
        SentenceEmbedder(settings.text_model, device=settings.embedder_device),
        reader,
        settings.ocr_max_boxes,
    )


KIND = ViewKind(TextViewSettings, load)
