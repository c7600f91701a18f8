# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Reading printed text (signs, labels) in keyframes, for the memory's text view.

Signs are what people ask about ("where is the pharmacy?"), and OCR reads them far more
reliably than an image embedding matches a shop name, so the text view complements the
image view rather than duplicating it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from waymark.memory.entries import TextBox

# Below this the detector has nothing to work with and RapidOCR can divide by zero.
MIN_IMAGE_SIDE = 16
# Boxes kept per image, and characters per box: a sign frame reads a handful of lines;
# the bounds keep a poster or a bookshelf from swelling the stored record.
MAX_TEXT_BOXES = 16
MAX_BOX_CHARS = 64
# Box edges are kept to 1e-4 of the image side (a tenth of a pixel at 1280 px): finer
# digits only lengthen the stored JSON.
BOX_DIGITS = 4


@dataclass(frozen=True)
class TextLine:
    """One line of text: the reading, the recogniser's confidence, the four corners (px)."""

    text: str
    confidence: float
    box: tuple[tuple[float, float], ...]

    @property
    def height(self) -> float:
        """Vertical extent of the line in pixels."""
        ys = [y for _, y in self.box]
        return max(ys) - min(ys)


class TextReader:
    """RapidOCR (ONNX Runtime, CPU) behind a small interface.

    Each calling thread gets its own engine, loaded on its first use, with `threads`
    ONNX Runtime threads: OCR calls run side by side on several threads (see
    prepare_pool), which here gains far more than more threads inside one call.
    """

    def __init__(self, min_confidence: float = 0.5, threads: int = 1) -> None:
        if not 0.0 <= min_confidence <= 1.0:
            raise ValueError(f'min_confidence must be in [0, 1], got {min_confidence}')
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 64:
            raise ValueError(f'threads must be an integer in [1, 64], got {threads!r}')
        self.min_confidence = min_confidence
        self.threads = threads
        self._local = threading.local()

    def load(self):
        """This thread's engine, loaded if needed."""
        engine = getattr(self._local, 'engine', None)
        if engine is None:
            from rapidocr_onnxruntime import RapidOCR

            engine = RapidOCR(intra_op_num_threads=self.threads, inter_op_num_threads=1)
            self._local.engine = engine
        return engine

    def read(self, image: np.ndarray) -> list[TextLine]:
        """Text lines in an RGB (or grey) uint8 image, in the engine's reading order."""
        bgr = _to_bgr(image)
        if bgr is None:
            return []
        result, _ = self.load()(bgr)
        lines = []
        for box, text, confidence in result or ():
            text = ' '.join(str(text).split())
            if text and float(confidence) >= self.min_confidence:
                corners = tuple((float(x), float(y)) for x, y in box)
                lines.append(TextLine(text, float(confidence), corners))
        return lines


def text_boxes(
    lines: Sequence[TextLine],
    width: int,
    height: int,
    max_boxes: int = MAX_TEXT_BOXES,
    max_chars: int = MAX_BOX_CHARS,
) -> tuple[TextBox, ...]:
    """Each line's axis-aligned box as fractions of the image size, clipped to [0, 1].

    Target localisation turns a box's centre into a bearing, so boxes are kept in a form
    that does not depend on the image's resolution. Beyond `max_boxes`, the tallest lines
    are kept (the nearest and clearest text), in reading order.
    """
    if width <= 0 or height <= 0:
        raise ValueError(f'image size must be positive, got {width}x{height}')
    if max_boxes < 0 or max_chars < 1:
        raise ValueError(f'need max_boxes >= 0 and max_chars >= 1, got {max_boxes}, {max_chars}')
    tallest = sorted(range(len(lines)), key=lambda i: -lines[i].height)[:max_boxes]
    boxes = []
    for line in (lines[i] for i in sorted(tallest)):
        corners = np.asarray(line.box, dtype=np.float64).reshape(-1, 2) / (width, height)
        left, top = np.clip(corners.min(axis=0), 0.0, 1.0).round(BOX_DIGITS)
        right, bottom = np.clip(corners.max(axis=0), 0.0, 1.0).round(BOX_DIGITS)
        boxes.append(
            TextBox(line.text[:max_chars], float(left), float(top), float(right), float(bottom))
        )
    return tuple(boxes)


def joined(lines: Iterable[TextLine]) -> str:
    """All readings as one string with single spaces; case is kept (signs are often capitals)."""
    return ' '.join(' '.join(line.text.split()) for line in lines).strip()


def _to_bgr(image: np.ndarray) -> np.ndarray | None:
    """The BGR image RapidOCR expects for arrays, or None when there is nothing to read."""
    array = np.asarray(image)
    if array.dtype != np.uint8:
        raise ValueError(f'expected a uint8 image, got {array.dtype}')
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if array.ndim not in (2, 3) or min(array.shape[:2], default=0) < MIN_IMAGE_SIDE:
        return None
    if array.ndim == 2:
        return cv2.cvtColor(array, cv2.COLOR_GRAY2BGR)
    if array.shape[2] == 3:
        return cv2.cvtColor(array, cv2.COLOR_RGB2BGR)
    if array.shape[2] == 4:
        return cv2.cvtColor(array, cv2.COLOR_RGBA2BGR)
    return None
