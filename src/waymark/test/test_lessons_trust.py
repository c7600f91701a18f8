# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The Transfer Reliability Score: SMA's reference values, order invariance, bounds."""

from __future__ import annotations

import itertools
import math
from functools import reduce

import pytest

from waymark.lessons.trust import TrustPrior, Visits

PRIOR = TrustPrior()


def visited(rewards: list[float]) -> Visits:
    return reduce(Visits.after, rewards, Visits())


@pytest.mark.parametrize(
    ('rewards', 'count', 'reward_sum', 'trust'),
    [
        ([], 0, 0.0, 0.5),
        ([1.0], 1, 1.0, 2 / 3),
        ([0.0], 1, 0.0, 1 / 3),
        ([1.0, 0.0], 2, 1.0, 0.5),
        ([0.0, 1.0], 2, 1.0, 0.5),
        ([1.0, 1.0], 2, 2.0, 0.75),
        ([0.5], 1, 0.5, 0.5),
        ([1.0] * 9, 9, 9.0, 10 / 11),
    ],
)
def test_the_reference_table(rewards, count, reward_sum, trust):
    visits = visited(rewards)
    assert (visits.count, visits.reward_sum) == (count, reward_sum)
    assert visits.score(PRIOR) == pytest.approx(trust)
    assert round(visits.score(PRIOR), 3) == round(trust, 3)


@pytest.mark.parametrize('zeros', [1, 2, 5, 20])
def test_n_failures_leave_one_over_two_plus_n(zeros):
    assert visited([0.0] * zeros).score(PRIOR) == pytest.approx(1 / (2 + zeros))


def test_the_order_of_outcomes_does_not_matter():
    rewards = [1.0, 0.0, 0.5, 1.0, 0.25]
    scores = {visited(list(order)).score(PRIOR) for order in itertools.permutations(rewards)}
    assert len(scores) == 1


def test_few_visits_stay_near_the_prior_and_many_reach_the_rate():
    once = visited([1.0]).score(PRIOR)
    assert PRIOR.mean < once < 1.0  # one success is not full trust
    rate = 0.8
    many = visited([1.0] * 800 + [0.0] * 200).score(PRIOR)
    assert abs(many - rate) < 0.001


def test_another_prior_is_the_same_formula():
    prior = TrustPrior(weight=4.0, mean=0.25)
    assert visited([1.0, 1.0]).score(prior) == pytest.approx((4 * 0.25 + 2) / (4 + 2))


@pytest.mark.parametrize('reward', [-0.1, 1.5, math.nan, math.inf])
def test_a_reward_outside_zero_to_one_is_refused(reward):
    with pytest.raises(ValueError, match='reward'):
        Visits().after(reward)


def test_impossible_visits_and_priors_are_refused():
    for bad in (dict(count=-1), dict(count=1, reward_sum=2.0), dict(reward_sum=math.nan)):
        with pytest.raises(ValueError):
            Visits(**bad)
    for bad in (dict(weight=0.0), dict(weight=math.inf), dict(mean=1.5)):
        with pytest.raises(ValueError):
            TrustPrior(**bad)


def test_a_withdrawn_outcome_leaves_the_counts_it_was_added_to():
    assert Visits(3, 2.0).without(1.0) == Visits(2, 1.0)
    assert Visits(1, 0.0).without(0.0) == Visits()
    for visits, reward in ((Visits(), 0.0), (Visits(2, 2.0), 0.0), (Visits(2, 0.0), 1.0)):
        with pytest.raises(ValueError, match='cannot give back'):
            visits.without(reward)
    with pytest.raises(ValueError, match='in \\[0, 1\\]'):
        Visits(2, 1.0).without(-0.5)
