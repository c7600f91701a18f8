# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Which lessons go in front of a task: those whose source task is similar enough, ranked
by similarity and trust on one scale.

Two stages. A lesson passes when the cosine between its task's embedding and this task's
is at least `min_similarity` (δ). The ones that pass are ranked by
S = (1 − η)·z(similarity) + η·z(trust), each z-score taken within the passing set and
clipped to ±`z_clip`; the top `top_k` are used. z only puts the two on one scale: with
fewer than two candidates, or all equal, it is 0, and the order then falls to similarity.
Fewer than `top_k` passing means fewer lessons, possibly none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RetrievalParams:
    """δ, η and k of SMA (η = 0.5, k = 3 peaked in its sweep); the z clip the paper leaves
    open. δ depends on the text embedder (SMA's 0.49–0.62 are for its own): 0.40 is the
    sweep's choice for all-MiniLM-L6-v2 (`python -m waymark lessons-sweep`)."""

    min_similarity: float = 0.4
    trust_weight: float = 0.5
    top_k: int = 3
    z_clip: float = 3.0

    def __post_init__(self) -> None:
        if not -1.0 <= self.min_similarity <= 1.0:
            raise ValueError(f'min_similarity must be in [-1, 1], got {self.min_similarity}')
        if not 0.0 <= self.trust_weight <= 1.0:
            raise ValueError(f'trust_weight must be in [0, 1], got {self.trust_weight}')
        if self.top_k < 1:
            raise ValueError(f'top_k must be >= 1, got {self.top_k}')
        if not (math.isfinite(self.z_clip) and self.z_clip > 0.0):
            raise ValueError(f'z_clip must be > 0, got {self.z_clip}')


@dataclass(frozen=True)
class Candidate:
    """One lesson as retrieval sees it: its id, the cosine of its task to this one, and
    its trust (TRS)."""

    lesson_id: str
    similarity: float
    trust: float


@dataclass(frozen=True)
class Ranked:
    """A lesson chosen for a task, with what put it there."""

    lesson_id: str
    similarity: float
    trust: float
    score: float


def clipped_z(values: Sequence[float], clip: float) -> np.ndarray:
    """z-scores of `values` among themselves (population deviation), clipped to ±clip;
    all 0 when there are fewer than two values or no spread."""
    array = np.asarray(values, dtype=float)
    if array.size < 2 or array.max() == array.min():  # equal values: a std of rounding
        return np.zeros(array.size)
    return np.clip((array - array.mean()) / array.std(), -clip, clip)


def rank(candidates: Sequence[Candidate], params: RetrievalParams) -> list[Ranked]:
    """The lessons to use, best first: at most `top_k`, each at or above `min_similarity`.
    Ties go to the more similar task, then to the lesson id, so a ranking never depends
    on the order lessons were listed in."""
    for candidate in candidates:
        if not (math.isfinite(candidate.similarity) and math.isfinite(candidate.trust)):
            raise ValueError(f'a candidate needs a finite similarity and trust: {candidate}')
    passing = [c for c in candidates if c.similarity >= params.min_similarity]
    if not passing:
        return []
    eta = params.trust_weight
    similarity_z = clipped_z([c.similarity for c in passing], params.z_clip)
    trust_z = clipped_z([c.trust for c in passing], params.z_clip)
    scores = (1.0 - eta) * similarity_z + eta * trust_z
    ranked = [
        Ranked(c.lesson_id, c.similarity, c.trust, float(score))
        for c, score in zip(passing, scores, strict=True)
    ]
    ranked.sort(key=lambda r: (-r.score, -r.similarity, r.lesson_id))
    return ranked[: params.top_k]
