# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The lesson bank's parameters (memory_node's `lessons.*`). Retrieval is live; the mode,
the snapshot and the bank's limits are fixed at configure."""

from __future__ import annotations

from dataclasses import dataclass

from waymark.lessons.bank import BankLimits, BankMode
from waymark.lessons.retrieval import RetrievalParams
from waymark.settings import setting

OFF = 'off'
MODES = (OFF, BankMode.READ_ONLY.value, BankMode.ACQUIRE.value)


@dataclass(frozen=True)
class LessonParameters:
    mode: str = setting(
        BankMode.READ_ONLY.value,
        'off: no bank; read_only: lessons are given and nothing in the bank changes; '
        'acquire: lessons are also written and calibrated by verified outcomes.',
        choices=MODES,
    )
    snapshot: str = setting(
        '',
        'A lesson snapshot (JSON, from lessons/export) loaded at configure into an empty bank, '
        'so a robot can deploy a bank acquired elsewhere; no file there: the bank starts '
        'empty; one unreadable or from another embedder or dimension fails configure with '
        'the reason. Empty: none.',
    )
    min_similarity: float = setting(
        RetrievalParams.min_similarity,
        "Least cosine between a task and a lesson's earlier task for the lesson to be given "
        '(delta; swept for the bundled sentence model: python -m waymark lessons-sweep).',
        low=0.0,
        high=1.0,
        live=True,
    )
    trust_weight: float = setting(
        RetrievalParams.trust_weight,
        'Weight of trust against similarity in the ranking (eta).',
        low=0.0,
        high=1.0,
        live=True,
    )
    top_k: int = setting(
        RetrievalParams.top_k, 'Most lessons given per task.', low=1, high=20, live=True
    )
    max_cards: int = setting(
        BankLimits.max_cards,
        'Most cards kept; beyond it the least trusted well-visited cards are evicted first.',
        low=1,
        high=100_000,
    )
    duplicate_similarity: float = setting(
        BankLimits.duplicate_similarity,
        "A new lesson at least this close (cosine) to a card's lesson is merged into it.",
        low=0.5,
        high=1.0,
    )

    @property
    def enabled(self) -> bool:
        return self.mode != OFF

    @property
    def bank_mode(self) -> BankMode:
        return BankMode(self.mode) if self.enabled else BankMode.READ_ONLY

    def retrieval(self) -> RetrievalParams:
        return RetrievalParams(
            min_similarity=self.min_similarity, trust_weight=self.trust_weight, top_k=self.top_k
        )

    def limits(self) -> BankLimits:
        return BankLimits(max_cards=self.max_cards, duplicate_similarity=self.duplicate_similarity)
