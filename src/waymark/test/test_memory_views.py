# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What feeds the views: OCR, the sentence and image-text embedders."""

from __future__ import annotations

import numpy as np
import pytest

from waymark.memory.views.embedders import EmbedderLoadError, ImageTextEmbedder
from waymark.memory.views.ocr import TextLine, TextReader, joined, text_boxes
from waymark_testing.tiny_models import build_tiny_siglip


def test_reader_reads_a_large_sign(text_reader, draw_sign):
    lines = text_reader.read(draw_sign('PHARMACY'))

    assert [line.text for line in lines] == ['PHARMACY']
    assert lines[0].confidence >= 0.5
    assert len(lines[0].box) == 4
    xs = [x for x, _ in lines[0].box]
    assert 40 <= min(xs) < max(xs) <= 600  # on the board, not the whole frame
    assert joined(lines) == 'PHARMACY'


def test_reader_reads_grey_and_rgba_images(text_reader, draw_sign):
    grey = draw_sign('LIBRARY').mean(axis=2).astype(np.uint8)
    rgb = draw_sign('BAKERY')
    rgba = np.dstack([rgb, np.full(rgb.shape[:2], 255, np.uint8)])

    assert joined(text_reader.read(grey)) == 'LIBRARY'
    assert joined(text_reader.read(rgba)) == 'BAKERY'


def test_reader_returns_nothing_for_odd_or_blank_images(text_reader, draw_sign):
    for image in (
        np.zeros((0, 0, 3), np.uint8),
        np.zeros((4, 4, 3), np.uint8),
        np.zeros((1, 640, 3), np.uint8),
        np.zeros((480, 640), np.uint8),
        np.zeros((480, 640, 1), np.uint8),
        draw_sign(''),
    ):
        assert text_reader.read(image) == []
    with pytest.raises(ValueError):
        text_reader.read(np.zeros((64, 64, 3), np.float32))


def test_reader_gives_each_thread_its_own_engine_and_the_same_readings(draw_sign):
    import threading
    from concurrent.futures import ThreadPoolExecutor

    reader = TextReader(threads=1)
    words = ['PHARMACY', 'LIBRARY', 'BAKERY', 'EXIT']
    images = [draw_sign(word) for word in words]
    both_loaded = threading.Barrier(2)

    def engine_of_this_thread(_):
        engine = reader.load()
        both_loaded.wait(10.0)  # two live threads at once, so two different threads
        return engine

    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(engine_of_this_thread, range(2))
        assert first is not second
        assert list(pool.map(lambda image: joined(reader.read(image)), images)) == words
    assert reader.load() is reader.load()
    with pytest.raises(ValueError):
        TextReader(threads=0)


def test_reader_confidence_threshold_filters_lines(draw_sign):
    strict = TextReader(min_confidence=1.0)

    assert strict.read(draw_sign('PHARMACY')) == []
    with pytest.raises(ValueError):
        TextReader(min_confidence=1.5)


def test_joined_normalises_whitespace_and_keeps_case():
    lines = [TextLine('  Coffee \t Shop ', 0.9, ()), TextLine('OPEN\n24h', 0.8, ())]

    assert joined(lines) == 'Coffee Shop OPEN 24h'
    assert joined([]) == ''


# -- sentence embedder ---------------------------------------------------------------------


def test_text_boxes_are_image_fractions_clipped_and_bounded():
    def line(text, x0, y0, x1, y1):
        return TextLine(text, 0.9, ((x0, y0), (x1, y0), (x1, y1), (x0, y1)))

    lines = [
        line('EXIT', 64, 48, 192, 96),  # 48 px tall
        line('small print', 300, 400, 340, 410),  # 10 px tall
        line('PHARMACY' * 20, -20, 200, 700, 300),  # 100 px tall, over both edges
    ]

    boxes = text_boxes(lines, 640, 480, max_boxes=2, max_chars=12)

    assert [box.text for box in boxes] == ['EXIT', 'PHARMACYPHAR']  # tallest two, in order
    exit_box, wide = boxes
    assert (exit_box.left, exit_box.top, exit_box.right, exit_box.bottom) == (0.1, 0.1, 0.3, 0.2)
    assert exit_box.centre == pytest.approx((0.2, 0.15))
    assert (wide.left, wide.right) == (0.0, 1.0)
    assert (wide.top, wide.bottom) == pytest.approx((200 / 480, 300 / 480), abs=1e-4)
    assert text_boxes(lines, 640, 480, max_boxes=0) == ()
    with pytest.raises(ValueError, match='image size'):
        text_boxes(lines, 0, 480)


def test_reader_boxes_cover_the_drawn_sign(text_reader, draw_sign):
    image = draw_sign('PHARMACY')
    (box,) = text_boxes(text_reader.read(image), image.shape[1], image.shape[0])

    assert box.text == 'PHARMACY'
    assert 0.0 <= box.left < box.right <= 1.0 and 0.0 <= box.top < box.bottom <= 1.0
    assert 0.3 < box.centre[0] < 0.7  # the sign is drawn in the middle of the frame


def test_sentence_embedder_is_the_bundled_minilm_and_semantic(sentence_embedder):
    vectors = sentence_embedder.embed_texts(
        ['coffee shop', 'COFFEE SHOP', 'PHARMACY', 'where can I buy medicine']
    )

    assert sentence_embedder.dim == 384
    assert sentence_embedder.name == 'sentence-transformers/all-MiniLM-L6-v2'
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(np.ones(4), abs=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 2] + 0.2
    assert similarity[3, 2] > similarity[3, 1]
    assert sentence_embedder.embed_texts([]).shape == (0, 384)


# -- image-text embedder -------------------------------------------------------------------


def test_tiny_siglip_embeddings_have_the_right_shape_and_unit_length(image_text_embedder):
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, size=(48, 64, 3), dtype=np.uint8) for _ in range(5)]
    images.append(rng.integers(0, 256, size=(30, 30), dtype=np.uint8))

    image_vectors = image_text_embedder.embed_images(images)
    text_vectors = image_text_embedder.embed_texts(['a coffee shop', 'the pharmacy', 'zebra'])

    assert image_text_embedder.dim == 32
    assert image_vectors.shape == (6, 32) and image_vectors.dtype == np.float32
    assert text_vectors.shape == (3, 32) and text_vectors.dtype == np.float32
    norms = np.linalg.norm(np.vstack([image_vectors, text_vectors]), axis=1)
    assert norms == pytest.approx(np.ones(9), abs=1e-5)
    assert not np.allclose(image_vectors[0], image_vectors[1])
    assert not np.allclose(text_vectors[0], text_vectors[1])
    # Batches of two give what one image at a time gives.
    single = np.vstack([image_text_embedder.embed_images([image]) for image in images])
    np.testing.assert_allclose(image_vectors, single, atol=1e-5)
    assert image_text_embedder.embed_images([]).shape == (0, 32)


def test_tiny_siglip_is_deterministic_across_builds_and_calls(
    image_text_embedder, tmp_path, draw_sign
):
    rebuilt = ImageTextEmbedder(build_tiny_siglip(tmp_path / 'again'))
    other_seed = ImageTextEmbedder(build_tiny_siglip(tmp_path / 'other', seed=1))
    image = draw_sign('BAKERY')

    first = image_text_embedder.embed_images([image])
    np.testing.assert_array_equal(first, image_text_embedder.embed_images([image]))
    np.testing.assert_allclose(first, rebuilt.embed_images([image]), atol=1e-6)
    np.testing.assert_allclose(
        image_text_embedder.embed_texts(['red door']), rebuilt.embed_texts(['red door']), atol=1e-6
    )
    assert not np.allclose(first, other_seed.embed_images([image]), atol=1e-3)


def test_a_model_that_cannot_be_loaded_is_named_in_the_error(tmp_path):
    missing = str(tmp_path / 'no-such-model')

    with pytest.raises(EmbedderLoadError, match='no-such-model'):
        ImageTextEmbedder(missing).load()
    with pytest.raises(EmbedderLoadError, match='not-a-real/siglip-checkpoint'):
        ImageTextEmbedder('not-a-real/siglip-checkpoint').embed_texts(['x'])
