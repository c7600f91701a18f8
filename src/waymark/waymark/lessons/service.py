# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The lesson bank as memory_node serves it: texts in, cards out.

It owns the bank over its collection in memory's Milvus and the sentence model that
embeds tasks (memory's text model, so a snapshot records which one). A snapshot is
imported only into an empty bank, so a restart never doubles or rolls back what the
collection holds: the collection is the bank, the snapshot only seeds it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from waymark.lessons.bank import Added, BankLimits, BankMode, LessonBank, Retrieved, open_bank
from waymark.lessons.cards import (
    MAX_TASK_CHARS,
    LessonCard,
    Provenance,
    Superseded,
    load_snapshot,
    write_snapshot,
)
from waymark.lessons.retrieval import RetrievalParams
from waymark.lessons.store import LessonStore

EmbedTexts = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class TaskEmbedder:
    """The sentence model tasks and lessons are embedded with."""

    name: str
    dimension: int
    embed_texts: EmbedTexts

    def embed(self, text: str) -> np.ndarray:
        return np.asarray(self.embed_texts([text]), dtype=float)[0]


class LessonService:
    def __init__(self, bank: LessonBank, embedder: TaskEmbedder, imported: int = 0) -> None:
        self.bank = bank
        self.embedder = embedder
        self.imported = imported  # cards seeded from the snapshot at open

    @property
    def mode(self) -> BankMode:
        return self.bank.mode

    def lessons_for(self, task: str) -> list[Retrieved]:
        """The lessons to give for `task`; ValueError for an empty or over-long task."""
        return self.bank.retrieve(self.embedder.embed(_task_text(task)))

    def calibrate(
        self,
        card_ids: Sequence[str],
        reward: float,
        key: str = '',
        replaces: Superseded | None = None,
    ) -> int:
        return self.bank.calibrate(card_ids, reward, key, replaces)

    def add(self, task: str, summary: str, lesson: str, provenance: Provenance) -> Added:
        vector = self.embedder.embed(_task_text(task))
        card = LessonCard(
            card_id=uuid.uuid4().hex,
            task=task,
            embedding=tuple(float(x) for x in vector),
            summary=summary,
            lesson=lesson,
            provenance=provenance,
        )
        return self.bank.add(card)

    def export(self, path: Path) -> int:
        """Writes the bank as a snapshot, atomically; returns the cards written."""
        snapshot = self.bank.snapshot()
        write_snapshot(snapshot, path)
        return len(snapshot.cards)

    def stats(self) -> dict:
        return {
            'mode': str(self.bank.mode),
            'cards': len(self.bank),
            'merged': self.bank.merged,
            'evicted': self.bank.evicted,
            'imported': self.imported,
        }

    def close(self) -> None:
        if self.bank.store is not None:
            self.bank.store.close()


def open_lessons(
    uri: str,
    prefix: str,
    embedder: TaskEmbedder,
    mode: BankMode,
    params: RetrievalParams,
    limits: BankLimits,
    snapshot: Path | None = None,
    token: str = '',
) -> LessonService:
    """The bank in `uri`'s lesson collection; seeded from `snapshot` when it is empty and
    the file exists (a robot deployed before any bank was exported starts empty).
    SnapshotError for a snapshot that is unreadable or of another embedder or dimension,
    LessonStoreError when the collection cannot be opened."""
    store = LessonStore(uri, embedder.dimension, prefix, token)
    try:
        imported = 0
        if snapshot is not None and snapshot.exists() and not store.cards():
            seed = load_snapshot(snapshot, embedder.name, embedder.dimension)
            store.put(seed.cards)
            imported = len(seed.cards)
        bank = open_bank(store, embedder.name, embedder.embed, mode, params, limits)
    except Exception:
        store.close()
        raise
    return LessonService(bank, embedder, imported)


def provenance(run: str, task_id: str, model: str) -> Provenance:
    return Provenance(run, task_id, model, time.time_ns())


def _task_text(task: str) -> str:
    if not task.strip() or len(task) > MAX_TASK_CHARS:
        raise ValueError(f'a task needs 1-{MAX_TASK_CHARS} characters')
    return task
