# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Baseline answerers: the rows every reasoning agent is compared against.

`EmbedderOnlyAnswerer` answers from the best memory hit and nothing else (what
reasoner_node does without an LLM); `RandomEntryAnswerer` answers from a random memory
entry, the floor any method must clear.
"""

from __future__ import annotations

import random
import time
from typing import Protocol

import numpy as np

from waymark.evaluation.metrics import Prediction
from waymark.evaluation.questions import AnswerType, Category, Question
from waymark.memory.entries import FrameRecord, Hit, frame_id
from waymark.memory.service import MemoryService


class Answerer(Protocol):
    name: str

    def answer(self, question: Question, image: np.ndarray | None = None) -> Prediction: ...


class EmbedderOnlyAnswerer:
    """Top-1 of a similarity search with the question as the query (or the photo)."""

    name = 'embedder-only'

    def __init__(self, memory: MemoryService, top_k: int = 5, yes_threshold: float = 0.5) -> None:
        self.memory = memory
        self.top_k = top_k
        self.yes_threshold = yes_threshold

    def answer(self, question: Question, image: np.ndarray | None = None) -> Prediction:
        started = time.perf_counter()
        total = self.memory.store.count()
        if question.category == Category.IMAGE:
            if image is None or self.memory.image_embedder is None:
                why = 'no photo given' if image is None else 'memory has no image view'
                return Prediction(
                    question_id=question.id, answered=False, memory_entries=total, message=why
                )
            hits = self.memory.search_image(image, self.top_k)
        else:
            hits = self.memory.search_text(question.question, self.top_k)
        best = next((h for h in hits if h.record.pose_valid), None)
        elapsed = time.perf_counter() - started
        common = {
            'question_id': question.id,
            'used_fallback': True,
            'entries_shown': len(hits),
            'memory_entries': total,
            'latency_s': elapsed,
        }
        if best is None:
            return Prediction(answered=False, message='no matching memory entry', **common)
        return _from_record(question, best.record, best, self.yes_threshold, common)


class RandomEntryAnswerer:
    """A memory entry drawn uniformly at random (seeded), answered as if it matched."""

    name = 'random-entry'

    def __init__(self, memory: MemoryService, seed: int = 0, max_draws: int = 50) -> None:
        self.memory = memory
        self.rng = random.Random(seed)
        self.max_draws = max_draws
        self._sizes: dict[str, int] | None = None

    def answer(self, question: Question, image: np.ndarray | None = None) -> Prediction:
        started = time.perf_counter()
        store = self.memory.store
        if self._sizes is None:
            self._sizes = {session: store.next_index(session) for session in store.sessions()}
        common = {'question_id': question.id, 'entries_shown': 1, 'memory_entries': store.count()}
        record = self._draw()
        common['latency_s'] = time.perf_counter() - started
        if record is None:
            return Prediction(answered=False, message='no entry with a valid pose', **common)
        return _from_record(question, record, Hit(record, self.rng.random(), 'random'), 0.5, common)

    def _draw(self) -> FrameRecord | None:
        """Uniform over entries: a session by its size, then an index in it."""
        sessions = [s for s, n in sorted(self._sizes.items()) if n > 0]
        for _ in range(self.max_draws if sessions else 0):
            session = self.rng.choices(sessions, weights=[self._sizes[s] for s in sessions])[0]
            found = self.memory.store.get(
                [frame_id(session, self.rng.randrange(self._sizes[session]))]
            )
            if found and found[0].pose_valid:
                return found[0]
        return None


def _from_record(
    question: Question, record: FrameRecord, hit: Hit, yes_threshold: float, common: dict
) -> Prediction:
    """Read the answer a memory entry gives to a question of each type."""
    if question.answer_type == AnswerType.YES_NO:
        return Prediction(answered=True, yes=hit.score >= yes_threshold, **common)
    return Prediction(
        answered=True,
        position=(record.x, record.y, record.z),
        time_ns=record.stamp_ns,
        text=record.text,
        **common,
    )
