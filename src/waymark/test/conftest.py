# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Shared fixtures for the core tests: models built or loaded once per session, offline."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault('TOKENIZERS_PARALLELISM', 'false')

from waymark_testing.tiny_models import build_tiny_siglip


@pytest.fixture(scope='session')
def tiny_siglip(tmp_path_factory) -> str:
    """Directory of a tiny random SigLIP, loadable like a hub checkpoint."""
    return build_tiny_siglip(tmp_path_factory.mktemp('tiny_siglip'))


@pytest.fixture(scope='session')
def image_text_embedder(tiny_siglip):
    from waymark.memory.views.embedders import ImageTextEmbedder

    embedder = ImageTextEmbedder(tiny_siglip, device='cpu', batch_size=2)
    embedder.load()
    return embedder


@pytest.fixture(scope='session')
def sentence_embedder():
    from waymark.memory.views.embedders import SentenceEmbedder

    embedder = SentenceEmbedder(device='cpu')
    embedder.load()
    return embedder


@pytest.fixture(scope='session')
def text_reader():
    from waymark.memory.views.ocr import TextReader

    reader = TextReader()
    reader.load()
    return reader


@pytest.fixture(scope='session')
def draw_sign():
    """A function drawing a 640x480 RGB scene with `text` in large bold letters on a board."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=72)

    def draw(text: str, background=(196, 206, 214)) -> np.ndarray:
        image = Image.new('RGB', (640, 480), background)
        canvas = ImageDraw.Draw(image)
        if text:
            canvas.rectangle((40, 160, 600, 300), fill=(250, 250, 245))
            canvas.text(
                (320, 230),
                text,
                font=font,
                fill=(15, 15, 15),
                anchor='mm',
                stroke_width=2,
                stroke_fill=(15, 15, 15),
            )
        return np.asarray(image)

    return draw
