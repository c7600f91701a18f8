# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Environment and deployment splits, and the sweep that sets δ for an embedder.

Each category's questions are halved at random (seed 42): lessons are acquired on one
half (the environment split) and used, read-only, on the other. SMA tunes δ per
benchmark for its own embedder; waymark's embedder is another, so δ is swept here on the
environment split alone, without a model: a lesson is only useful to a question of the
same kind, so δ is chosen where retrieving the other environment questions above it best
separates those of the same category from the rest (F1 over every pair).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

SPLIT_SEED = 42
T = TypeVar('T')


def split_by_category(
    items: Sequence[T], category_of, seed: int = SPLIT_SEED
) -> tuple[list[T], list[T]]:
    """(environment, deployment): each category shuffled with `seed` and halved, the odd
    one going to the environment split; order within a split follows the input."""
    by_category: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        by_category.setdefault(str(category_of(item)), []).append(index)
    rng = random.Random(seed)
    environment: set[int] = set()
    for category in sorted(by_category):
        indices = list(by_category[category])
        rng.shuffle(indices)
        environment.update(indices[: (len(indices) + 1) // 2])
    env = [item for index, item in enumerate(items) if index in environment]
    deploy = [item for index, item in enumerate(items) if index not in environment]
    return env, deploy


@dataclass(frozen=True)
class SweepPoint:
    threshold: float
    precision: float  # of the pairs at or above it, the share of one category
    recall: float  # of the pairs of one category, the share at or above it
    f1: float


def sweep_threshold(
    embeddings: np.ndarray, categories: Sequence[str], thresholds: Sequence[float]
) -> list[SweepPoint]:
    """The same-category retrieval of each threshold over every pair of distinct items."""
    if len(embeddings) != len(categories) or len(categories) < 2:
        raise ValueError('the sweep needs at least two items, each with a category')
    unit = np.asarray(embeddings, dtype=float)
    unit = unit / np.linalg.norm(unit, axis=1, keepdims=True)
    cosines = unit @ unit.T
    upper = np.triu_indices(len(categories), k=1)
    similarity = cosines[upper]
    labels = np.asarray(categories)
    same = labels[upper[0]] == labels[upper[1]]
    points = []
    for threshold in thresholds:
        kept = similarity >= threshold
        hits = int(np.sum(kept & same))
        precision = hits / int(np.sum(kept)) if np.any(kept) else 0.0
        recall = hits / int(np.sum(same)) if np.any(same) else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        points.append(SweepPoint(float(threshold), precision, recall, f1))
    return points


def best_threshold(points: Sequence[SweepPoint]) -> SweepPoint:
    """The point of highest F1; of equal ones, the highest threshold (fewer lessons)."""
    if not points:
        raise ValueError('no sweep points')
    return max(points, key=lambda point: (point.f1, point.threshold))
