# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Environment/deployment splits and the δ sweep."""

from __future__ import annotations

import numpy as np
import pytest

from waymark.lessons.splits import best_threshold, split_by_category, sweep_threshold


def test_each_category_is_halved_reproducibly_and_nothing_is_lost():
    items = [(f'q{i}', category) for i, category in enumerate('aaaaabbbbc')]
    env, deploy = split_by_category(items, lambda item: item[1])
    assert sorted(env + deploy) == sorted(items)
    counts = {c: sum(1 for _, k in env if k == c) for c in 'abc'}
    assert counts == {'a': 3, 'b': 2, 'c': 1}
    assert split_by_category(items, lambda item: item[1]) == (env, deploy)
    assert split_by_category(items, lambda item: item[1], seed=7) != (env, deploy)


def test_the_sweep_finds_the_threshold_that_separates_the_kinds():
    # Two kinds, each a tight bundle; across kinds the cosine is about 0.
    rng = np.random.default_rng(0)
    base = np.eye(8)[:2]
    vectors = np.vstack([base[i % 2] + 0.05 * rng.standard_normal(8) for i in range(10)])
    kinds = ['a' if i % 2 == 0 else 'b' for i in range(10)]
    points = sweep_threshold(vectors, kinds, [-1.0, 0.5, 0.9, 0.999])
    assert [round(p.recall, 2) for p in points][:2] == [1.0, 1.0]
    assert points[1].precision == 1.0 and points[0].precision == pytest.approx(20 / 45)
    best = best_threshold(points)
    assert (best.threshold, best.f1) == (0.9, 1.0)  # 0.5 does as well: the higher wins
    assert points[3].recall < 1.0


def test_the_sweep_needs_pairs():
    with pytest.raises(ValueError):
        sweep_threshold(np.ones((1, 3)), ['a'], [0.5])
    with pytest.raises(ValueError):
        best_threshold([])
