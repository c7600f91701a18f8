# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Embedder-only answerers by level and view, on a memory of frames and segments built
with stand-in models (no OCR or sentence model runs here)."""

from __future__ import annotations

import re
import zlib

import cv2
import numpy as np
import pytest

from waymark.evaluation.answerers import (
    AnswererError,
    EmbedderOnlyAnswerer,
    check_answerer_name,
    embedder_name,
    embedder_row,
    is_per_view,
    parse_embedder_name,
    standard_answerers,
)
from waymark.evaluation.questions import Question
from waymark.geometry import Pose
from waymark.memory.entries import FRAME, SEGMENT, Keyframe
from waymark.memory.ingest.segment_memory import SegmentMemory
from waymark.memory.ingest.segments import Segmenter
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.store import MemoryStore
from waymark.memory.views.ocr import TextLine
from waymark.memory.views.text import TextView
from waymark.memory.views.view import level_dims

T0 = 1_750_000_000 * 10**9
HALF_SECOND = 5 * 10**8
WORDS = ('pharmacy', 'bakery', 'library')


class WordEmbedder:
    """Bag of hashed words: texts sharing a word are similar."""

    dim = 64

    def embed_texts(self, texts):
        vectors = np.zeros((len(texts), self.dim), np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r'[a-z]+', text.lower()):
                vectors[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        vectors[:, 0] += 1e-3  # never all zero
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class GreyReader:
    """Reads the word encoded in a grey image's brightness (80, 160, 240: WORDS)."""

    def read(self, image):
        word = WORDS[round(float(image.mean()) / 80) - 1]
        return [TextLine(word.upper(), 1.0, ((0, 0), (9, 0), (9, 8), (0, 8)))]


def grey_jpeg(word: str) -> bytes:
    image = np.full((48, 64, 3), 80 * (WORDS.index(word) + 1), np.uint8)
    ok, data = cv2.imencode('.jpg', image)
    assert ok
    return data.tobytes()


@pytest.fixture
def memory(tmp_path):
    """Three frames a window (one every 0.5 s walking along x), a sign per window."""
    views = [TextView(WordEmbedder(), GreyReader())]
    store = MemoryStore(
        str(tmp_path / 'memory.db'),
        level_dims(views, FRAME),
        segment_views=level_dims(views, SEGMENT),
    )
    images = ImageStore(tmp_path)
    segments = SegmentMemory(store, images, Segmenter(1.5), views)
    service = MemoryService(store, images, views, segments)
    for step in range(9):
        service.ingest(
            Keyframe(
                session='walk',
                index=step,
                stamp_ns=T0 + step * HALF_SECOND,
                pose=Pose.from_xyz_yaw(float(step), 0.0, 0.5, 0.1 * step),
                pose_valid=True,
                map_epoch=0,
                image=grey_jpeg(WORDS[step // 3]),
            )
        )
    service.close_segments()
    yield service
    store.close()


def question(text: str, category: str = 'basic', answer_type: str = 'position', **extra):
    return Question(id='q', category=category, question=text, answer_type=answer_type, **extra)


def test_row_names_round_trip_and_bad_ones_are_refused():
    for level, views in [(FRAME, ()), (FRAME, ('text',)), (SEGMENT, ()), (SEGMENT, ('a', 'b'))]:
        assert parse_embedder_name(embedder_name(level, views)) == (level, views)
    assert embedder_name(SEGMENT, ['text']) == 'embedder-only/segment/text'
    assert parse_embedder_name('embedder-only/frame/text') == (FRAME, ('text',))
    assert embedder_row('random-entry') is None and not is_per_view('embedder-only/segment')
    assert is_per_view('embedder-only/segment/text')
    check_answerer_name('random-entry')
    for bad in ('oracle', 'embedder-only/', 'embedder-only/text/image', 'embedder-only/a+'):
        with pytest.raises(AnswererError):
            check_answerer_name(bad)


def test_standard_rows_cover_each_level_and_view(memory):
    assert standard_answerers(memory) == (
        'embedder-only',
        'embedder-only/text',
        'embedder-only/segment',
        'embedder-only/segment/text',
        'random-entry',
    )
    with pytest.raises(AnswererError, match='image'):
        EmbedderOnlyAnswerer(memory, views=['image'])


def test_a_segment_answers_with_its_representative_pose_and_window(memory):
    assert memory.store.count(level=SEGMENT) == 3 and memory.store.count() == 9
    frame = EmbedderOnlyAnswerer(memory, top_k=2)
    segment = EmbedderOnlyAnswerer(memory, top_k=2, level=SEGMENT, views=['text'])
    assert segment.name == 'embedder-only/segment/text'
    where = question('Where is the bakery?', position=(4.0, 0.0, 0.0))
    at_frame, at_segment = frame.answer(where), segment.answer(where)
    assert at_frame.answered and at_frame.position[0] in (3.0, 4.0, 5.0)
    assert at_segment.answered and at_segment.position == pytest.approx((4.0, 0.0, 0.5))
    # Retrieval efficiency counts entries of the level searched.
    assert (at_frame.memory_entries, at_segment.memory_entries) == (9, 3)
    assert at_segment.entries_shown == 2
    when = segment.answer(question('When did I pass the library?', 'temporal', 'time', time_ns=0))
    assert when.time_ns == T0 + 6 * HALF_SECOND + 3 * HALF_SECOND // 2  # window middle


def test_photos_need_an_image_view(memory):
    photo = question('Where was this taken?', 'image', image='q.png', position=(0.0, 0.0, 0.0))
    for answerer in (EmbedderOnlyAnswerer(memory), EmbedderOnlyAnswerer(memory, level=SEGMENT)):
        missing = answerer.answer(photo, np.zeros((8, 8, 3), np.uint8))
        assert not missing.answered and 'image view' in missing.message
        assert missing.memory_entries == memory.store.count(level=answerer.level)
