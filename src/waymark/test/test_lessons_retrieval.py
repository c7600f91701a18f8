# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Lesson retrieval: the similarity filter, the clipped z-scores and the combined rank."""

from __future__ import annotations

import math

import numpy as np
import pytest

from waymark.lessons.retrieval import Candidate, RetrievalParams, clipped_z, rank


def ids(ranked) -> list[str]:
    return [r.lesson_id for r in ranked]


def test_z_is_zero_for_fewer_than_two_values_or_no_spread():
    assert clipped_z([], 3.0).tolist() == []
    assert clipped_z([0.7], 3.0).tolist() == [0.0]
    assert clipped_z([0.4, 0.4, 0.4], 3.0).tolist() == [0.0, 0.0, 0.0]


def test_z_uses_the_population_deviation_and_is_clipped():
    assert clipped_z([0.0, 1.0], 3.0) == pytest.approx([-1.0, 1.0])
    outlier = clipped_z([0.0] * 99 + [1.0], 3.0)
    assert outlier[-1] == 3.0 and outlier[0] == pytest.approx(-math.sqrt(1 / 99))
    assert clipped_z([0.0] * 99 + [1.0], 2.0)[-1] == 2.0


def test_only_lessons_at_or_above_the_threshold_pass():
    params = RetrievalParams(min_similarity=0.6)
    candidates = [Candidate('a', 0.59, 0.9), Candidate('b', 0.6, 0.5), Candidate('c', 0.2, 1.0)]
    assert ids(rank(candidates, params)) == ['b']
    assert rank(candidates, RetrievalParams(min_similarity=0.99)) == []  # no block at all
    assert rank([], params) == []


def test_the_combined_score_is_the_weighted_sum_of_z_scores():
    candidates = [Candidate('a', 0.9, 0.3), Candidate('b', 0.7, 0.9), Candidate('c', 0.8, 0.5)]
    params = RetrievalParams(min_similarity=0.5, trust_weight=0.5, top_k=3)
    similarity_z = clipped_z([0.9, 0.7, 0.8], 3.0)
    trust_z = clipped_z([0.3, 0.9, 0.5], 3.0)
    expected = dict(zip('abc', 0.5 * similarity_z + 0.5 * trust_z, strict=True))
    ranked = rank(candidates, params)
    assert {r.lesson_id: r.score for r in ranked} == pytest.approx(expected)
    assert [r.score for r in ranked] == sorted(expected.values(), reverse=True)


def test_the_trust_weight_moves_the_order_from_similarity_to_trust():
    candidates = [
        Candidate('near', 0.95, 0.2),
        Candidate('mid', 0.8, 0.5),
        Candidate('far', 0.65, 0.9),
    ]
    similar_only = RetrievalParams(trust_weight=0.0)
    trust_only = RetrievalParams(trust_weight=1.0)
    assert ids(rank(candidates, similar_only)) == ['near', 'mid', 'far']
    assert ids(rank(candidates, trust_only)) == ['far', 'mid', 'near']


def test_at_most_k_and_the_listing_order_does_not_matter():
    rng = np.random.default_rng(42)
    candidates = [
        Candidate(f'l{i}', float(s), float(t))
        for i, (s, t) in enumerate(
            zip(rng.uniform(0.6, 1.0, 12), rng.uniform(0, 1, 12), strict=True)
        )
    ]
    params = RetrievalParams(top_k=3)
    first = rank(candidates, params)
    assert len(first) == 3
    assert rank(list(reversed(candidates)), params) == first


def test_a_single_candidate_or_equal_ones_fall_back_to_similarity_then_id():
    (only,) = rank([Candidate('a', 0.7, 0.1)], RetrievalParams())
    assert only.score == 0.0
    twins = [Candidate('b', 0.7, 0.5), Candidate('a', 0.7, 0.5)]
    assert ids(rank(twins, RetrievalParams())) == ['a', 'b']


def test_bad_parameters_and_candidates_are_refused():
    for bad in (
        dict(min_similarity=1.5),
        dict(trust_weight=-0.1),
        dict(top_k=0),
        dict(z_clip=0.0),
    ):
        with pytest.raises(ValueError):
            RetrievalParams(**bad)
    with pytest.raises(ValueError, match='finite'):
        rank([Candidate('a', math.nan, 0.5)], RetrievalParams())
