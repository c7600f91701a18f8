# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Binary Tracking, the anchor-aware verifier pool and lock-on-Y, over fake retrievals."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import pytest

from waymark.agent.bintrack import (
    LEFT,
    RIGHT,
    BinaryTracker,
    BinTrackParams,
    Near,
    Verify,
    anchor_aware_pool,
    evidence,
    initial_interval,
    lock_on_rerank,
    nearest_index,
    resolve_anchor_by_position,
    secondary_anchor,
    segment_scores,
    split_evidence,
)
from waymark.memory.entries import SEGMENT, FrameRecord, Hit


def seg(
    index: int,
    score: float = 0.0,
    x: float = 0.0,
    y: float = 0.0,
    session: str = 'walk',
    valid: bool = True,
    view: str = 'full',
) -> Hit:
    record = FrameRecord(
        session=session,
        index=index,
        stamp_ns=index * 1_500_000_000,
        end_ns=index * 1_500_000_000 + 1_499_000_000,
        x=x,
        y=y,
        z=0.0,
        yaw=0.0,
        map_epoch=0,
        pose_valid=valid,
        image_ref=f'grid{index}',
        kind=SEGMENT,
    )
    return Hit(record, score, view)


class FakeMemory:
    """Segments 0..n-1 with fixed scores; counts retrievals and verifier calls."""

    def __init__(self, scores: Sequence[float], pick: Verify | None = None) -> None:
        self.scores = list(scores)
        self.calls: list[tuple[int, int, int]] = []
        self.shown: list[list[Hit]] = []
        self.pick = pick or (lambda candidates: candidates[0])

    def retrieve(self, first: int, last: int, k: int) -> list[Hit]:
        assert 0 <= first <= last < len(self.scores)
        self.calls.append((first, last, k))
        hits = [seg(i, self.scores[i], x=float(i)) for i in range(first, last + 1)]
        return sorted(hits, key=lambda h: -h.score)[:k]

    def verify(self, candidates: list[Hit]) -> Hit | None:
        self.shown.append(candidates)
        return self.pick(candidates)

    def tracker(
        self, params: BinTrackParams | None = None, near: Near | None = None
    ) -> BinaryTracker:
        return BinaryTracker(self.retrieve, self.verify, params, near)


def leaf_contains(result, indices) -> bool:
    first, last = result.leaf
    return any(first <= i <= last for i in indices)


# -- parameters and evidence -------------------------------------------------------------


@pytest.mark.parametrize(
    ('kwargs', 'message'),
    [
        ({'alpha': -0.1}, 'alpha'),
        ({'beta': math.nan}, 'beta'),
        ({'alpha': 0.0, 'beta': 0.0}, 'both 0'),
        ({'k_leaf': 0}, 'k_leaf'),
        ({'top_k': 0}, 'top_k'),
        ({'verifier_pool': 0}, 'verifier_pool'),
        ({'max_iterations': -1}, 'max_iterations'),
    ],
)
def test_params_reject_invalid_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BinTrackParams(**kwargs)


def test_default_params_match_the_paper():
    p = BinTrackParams()
    assert (p.k_leaf, p.top_k, p.verifier_pool) == (16, 40, 12)
    assert (p.alpha, p.beta) == (0.5, 0.5)


def test_evidence_matches_a_hand_computation():
    scores = [0.2, 0.4, 0.9]
    assert evidence(scores, 0.5, 0.5) == pytest.approx(0.5 * 0.5 + 0.5 * 0.9)
    assert evidence(scores, 1.0, 0.0) == pytest.approx(0.5)
    assert evidence(scores, 0.0, 1.0) == pytest.approx(0.9)
    assert evidence(scores, 0.3, 2.0) == pytest.approx(0.3 * 0.5 + 2.0 * 0.9)
    assert evidence([], 0.5, 0.5) == -math.inf
    assert evidence([-0.2], 0.5, 0.5) > evidence([], 0.5, 0.5)


def test_segment_scores_take_the_best_view_per_segment():
    hits = [seg(3, 0.9, view='full'), seg(3, 0.1, view='detail'), seg(4, 0.5)]
    assert sorted(segment_scores(hits)) == [0.5, 0.9]


def test_split_evidence_puts_each_view_on_its_own_scale():
    # MiniLM-like text cosines sit near 0.55 and barely differ between the halves; the
    # image view's cosines sit near 0.05, and the right half's one clearly stands out.
    left = [seg(1, 0.55, view='text'), seg(2, 0.02, view='image'), seg(3, 0.03, view='image')]
    right = [seg(8, 0.54, view='text'), seg(9, 0.545, view='text'), seg(10, 0.2, view='image')]
    raw_left = evidence(segment_scores(left), 0.0, 1.0)
    raw_right = evidence(segment_scores(right), 0.0, 1.0)
    assert raw_left > raw_right  # mixing raw cosines, the text view decides
    normalised_left, normalised_right = split_evidence(left, right, 0.0, 1.0)
    assert normalised_right > normalised_left


def test_a_view_with_higher_cosines_throughout_does_not_dominate():
    rng = random.Random(7)
    for _ in range(50):
        views = ['text', 'image', *(rng.choice(['text', 'image', 'full']) for _ in range(10))]
        hits = [seg(i, rng.uniform(0.0, 0.3), view=v) for i, v in enumerate(views)]
        rng.shuffle(hits)
        half = rng.randint(1, len(hits) - 1)
        shift = rng.uniform(0.2, 0.7)  # one encoder's cosines run higher overall
        shifted = [Hit(h.record, h.score + shift, h.view) if h.view == 'text' else h for h in hits]
        assert split_evidence(hits[:half], hits[half:], 0.5, 0.5) == pytest.approx(
            split_evidence(shifted[:half], shifted[half:], 0.5, 0.5)
        )


def test_equal_evidence_keeps_the_left_half():
    memory = FakeMemory([0.5] * 34)
    result = memory.tracker().track(0, 33)
    assert [s.kept for s in result.splits] == [LEFT]
    assert result.splits[0].left_evidence == result.splits[0].right_evidence
    assert result.leaf == (1, 16)


def test_two_empty_halves_tie_and_keep_the_left():
    tracker = BinaryTracker(lambda first, last, k: [], lambda c: c[0], BinTrackParams(k_leaf=4))
    result = tracker.track(0, 17)
    assert [s.kept for s in result.splits] == [LEFT, LEFT]
    assert result.leaf == (1, 4)
    assert result.chosen is None and result.verifier_calls == 0


def test_mean_evidence_can_lose_a_sharp_target_that_max_evidence_keeps():
    # Left half: many fair matches; right half: one strong match among poor ones.
    scores = [0.0] + [0.6] * 16 + [0.1] * 15 + [0.95] + [0.0]
    by_mean = FakeMemory(scores).tracker(BinTrackParams(alpha=1, beta=0)).track(0, 33)
    by_max = FakeMemory(scores).tracker(BinTrackParams(alpha=0, beta=1)).track(0, 33)
    assert by_mean.splits[0].kept == LEFT
    assert by_max.splits[0].kept == RIGHT
    assert by_max.leaf[0] <= 32 <= by_max.leaf[1]


# -- anchors -----------------------------------------------------------------------------


def test_anchor_indices_are_the_nearest_segments_and_are_excluded():
    positions = [(float(i) * 2.0, 0.0) for i in range(20)]
    i_x = nearest_index(positions, (4.3, 0.5))
    i_y = nearest_index(positions, (33.9, -1.0))
    assert (i_x, i_y) == (2, 17)
    assert initial_interval(i_x, i_y) == (3, 16)
    assert initial_interval(i_y, i_x) == (3, 16)


def test_nearest_index_breaks_ties_towards_the_earliest():
    assert nearest_index([(0.0, 0.0), (2.0, 0.0), (0.0, 2.0)], (1.0, 1.0)) == 0
    with pytest.raises(ValueError):
        nearest_index([], (0.0, 0.0))


@pytest.mark.parametrize(('i_x', 'i_y'), [(5, 5), (5, 6), (6, 5)])
def test_adjacent_or_equal_anchors_leave_nothing_to_track(i_x, i_y):
    first, last = initial_interval(i_x, i_y)
    assert last < first
    memory = FakeMemory([0.5] * 10)
    result = memory.tracker().track(i_x, i_y)
    assert result.chosen is None and result.leaf is None
    assert result.retrievals == result.leaf_retrievals == result.verifier_calls == 0
    assert memory.calls == [] and memory.shown == []


def test_resolve_anchor_by_position_uses_the_pass_after_the_first_anchor():
    # A round trip: out along x, then back along the same line.
    out = [seg(i, x=float(i * 10)) for i in range(6)]
    back = [seg(6 + i, x=float(50 - i * 10)) for i in range(6)]
    segments = back + out  # order given does not matter
    assert resolve_anchor_by_position(segments, 11.0, 0.0) == 1
    assert resolve_anchor_by_position(segments, 11.0, 0.0, after_index=3) == 10
    assert resolve_anchor_by_position(segments, 0.0, 0.0, after_index=11) is None


def test_resolve_anchor_by_position_skips_invalid_poses_and_breaks_ties_by_time():
    segments = [seg(0, x=5.0, valid=False), seg(1, x=2.0), seg(2, x=-2.0)]
    assert resolve_anchor_by_position(segments, 5.0, 0.0) == 1
    assert resolve_anchor_by_position(segments, 0.0, 0.0) == 1
    assert resolve_anchor_by_position([seg(0, valid=False)], 0.0, 0.0) is None
    with pytest.raises(ValueError, match='one session'):
        resolve_anchor_by_position([seg(0), seg(1, session='other')], 0.0, 0.0)


# -- iteration counts --------------------------------------------------------------------


@pytest.mark.parametrize('j', range(6))
def test_n_equal_to_k_leaf_times_a_power_of_two_takes_exactly_j_iterations(j):
    n = 16 * 2**j
    rng = random.Random(j)
    memory = FakeMemory([rng.random() for _ in range(n + 2)])
    result = memory.tracker().track(0, n + 1)
    assert result.intervals[0] == (1, n)
    assert result.iterations == j
    assert result.retrievals == 2 * j
    assert result.leaf_retrievals == 1
    assert len(memory.calls) == 2 * j + 1
    assert result.verifier_calls == 1 and len(memory.shown) == 1
    first, last = result.leaf
    assert last - first + 1 == 16
    assert len(result.candidates) == 12


def test_any_n_takes_at_most_ceil_log2_n_over_k_leaf_iterations():
    rng = random.Random(7)
    for n in range(1, 600):
        memory = FakeMemory([rng.random() for _ in range(n + 2)])
        result = memory.tracker().track(0, n + 1)
        bound = math.ceil(math.log2(n / 16)) if n > 16 else 0
        assert result.iterations <= bound, n
        first, last = result.leaf
        assert 1 <= last - first + 1 <= 16, n
        assert result.verifier_calls == 1
        assert len(memory.calls) == result.retrievals + result.leaf_retrievals


@pytest.mark.parametrize('n', [1, 2, 15, 16])
def test_short_intervals_go_straight_to_one_verifier_call(n):
    memory = FakeMemory([0.3] * (n + 2))
    result = memory.tracker().track(n + 1, 0)
    assert result.iterations == 0 and result.retrievals == 0
    assert result.leaf == (1, n) and result.intervals == [(1, n)]
    assert result.leaf_retrievals == 1 and result.verifier_calls == 1


def test_seventeen_segments_are_split_once():
    # Our stopping rule (length > k_leaf); the pseudocode's r - l > k_leaf would not split.
    result = FakeMemory([0.3] * 19).tracker().track(0, 18)
    assert result.iterations == 1
    assert result.leaf == (1, 9)


def test_max_iterations_bounds_the_halving():
    memory = FakeMemory([0.3] * 66)
    result = memory.tracker(BinTrackParams(max_iterations=1)).track(0, 65)
    assert result.iterations == 1
    assert result.leaf == (1, 32)
    assert result.verifier_calls == 1


# -- Figure 1 ----------------------------------------------------------------------------


def test_figure_one_trace():
    step_scores = {(3, 9): 0.81, (10, 16): 0.42, (3, 6): 0.30, (7, 9): 0.79}
    leaf_scores = {7: 0.55, 8: 0.62, 9: 0.71}
    calls = []

    def retrieve(first: int, last: int, k: int) -> list[Hit]:
        calls.append((first, last))
        if (first, last) == (7, 9) and len(calls) > 4:
            hits = [seg(i, s) for i, s in leaf_scores.items()]
            return sorted(hits, key=lambda h: -h.score)
        return [seg(i, step_scores[(first, last)]) for i in range(first, last + 1)][:k]

    shown = []

    def verify(candidates: list[Hit]) -> Hit | None:
        shown.append(candidates)
        return next(c for c in candidates if c.record.index == 9)

    result = BinaryTracker(retrieve, verify, BinTrackParams(k_leaf=3)).track(2, 17)
    assert result.intervals == [(3, 16), (3, 9), (7, 9)]
    assert [(s.mid, s.kept) for s in result.splits] == [(9, LEFT), (6, RIGHT)]
    assert [(s.left_evidence, s.right_evidence) for s in result.splits] == [
        pytest.approx((0.81, 0.42)),
        pytest.approx((0.30, 0.79)),
    ]
    assert calls == [(3, 9), (10, 16), (3, 6), (7, 9), (7, 9)]
    assert len(shown) == 1
    assert {c.record.index for c in shown[0]} == {7, 8, 9}
    assert result.chosen.record.index == 9


# -- correctness condition ---------------------------------------------------------------


def test_max_evidence_always_keeps_the_best_segment_in_the_leaf():
    rng = random.Random(2026)
    for _ in range(300):
        n = rng.randint(1, 400)
        params = BinTrackParams(alpha=0.0, beta=1.0, k_leaf=rng.choice([1, 2, 3, 5, 16]))
        scores = [rng.uniform(-1.0, 0.9) for _ in range(n + 2)]
        target = rng.randint(1, n)
        scores[target] = 0.95
        result = FakeMemory(scores).tracker(params).track(0, n + 1)
        assert leaf_contains(result, [target]), (n, target, result.intervals)


def test_with_a_revisit_the_leaf_holds_one_of_the_acceptable_segments():
    rng = random.Random(11)
    for _ in range(300):
        n = rng.randint(2, 400)
        params = BinTrackParams(alpha=0.0, beta=1.0, k_leaf=rng.choice([1, 2, 4, 16]))
        scores = [rng.uniform(-1.0, 0.8) for _ in range(n + 2)]
        acceptable = rng.sample(range(1, n + 1), 2)
        for i in acceptable:
            scores[i] = rng.uniform(0.85, 0.99)
        result = FakeMemory(scores).tracker(params).track(n + 1, 0)
        assert leaf_contains(result, acceptable), (n, acceptable, result.intervals)


# -- leaf and verifier -------------------------------------------------------------------


def test_verifier_sees_the_best_verifier_pool_of_the_leaf_hits():
    rng = random.Random(3)
    scores = [rng.random() for _ in range(18)]
    memory = FakeMemory(scores)
    result = memory.tracker().track(0, 17)
    assert memory.calls == [(1, 16, 40)]
    best = sorted(range(1, 17), key=lambda i: -scores[i])[:12]
    assert [c.record.index for c in memory.shown[0]] == best
    assert result.candidates == memory.shown[0]


def test_no_candidates_means_no_verifier_call():
    shown = []
    tracker = BinaryTracker(lambda first, last, k: [], shown.append)
    result = tracker.track(0, 9)
    assert result.leaf == (1, 8)
    assert result.leaf_retrievals == 1
    assert result.verifier_calls == 0 and shown == []
    assert result.chosen is None and result.candidates == []


def test_verifier_declining_gives_no_answer():
    memory = FakeMemory([0.4] * 10, pick=lambda candidates: None)
    result = memory.tracker().track(0, 9)
    assert result.verifier_calls == 1 and result.chosen is None


def test_a_pick_outside_the_candidates_is_not_trusted():
    memory = FakeMemory([0.4] * 10, pick=lambda candidates: seg(42, 1.0))
    assert memory.tracker().track(0, 9).chosen is None


def test_a_pick_is_returned_as_the_candidate_shown():
    # Same entry, but the verifier echoed a made-up pose: the stored one is kept.
    memory = FakeMemory([0.4] * 10, pick=lambda candidates: seg(4, 1.0, x=999.0))
    chosen = memory.tracker().track(0, 9).chosen
    assert chosen.record.index == 4 and chosen.record.x == 4.0


# -- anchor-aware pool -------------------------------------------------------------------


def test_anchor_aware_pool_mixes_semantic_and_nearest_then_back_fills():
    semantic = [seg(i, 1.0 - i / 100) for i in range(20)]
    # Nearest to the anchor: 3 and 5 are already among the semantic six.
    near = [seg(i, float(d), view='position') for d, i in enumerate([3, 40, 5, 41, 42, 43, 44])]
    pool = anchor_aware_pool(semantic, near, 12)
    ids = [h.record.index for h in pool]
    assert ids[:6] == [0, 1, 2, 3, 4, 5]
    assert ids[6:10] == [40, 41, 42, 43]
    assert ids[10:] == [6, 7]
    assert len(set(ids)) == 12


def test_anchor_aware_pool_without_anchor_is_the_semantic_top():
    semantic = [seg(i, 1.0 - i / 100) for i in range(40)]
    assert anchor_aware_pool(semantic, [], 12) == semantic[:12]
    assert anchor_aware_pool(semantic[:5], [], 12) == semantic[:5]


def test_anchor_aware_pool_drops_duplicate_views_and_falls_back_to_near_hits():
    semantic = [seg(1, 0.9, view='full'), seg(1, 0.8, view='detail'), seg(2, 0.7)]
    near = [seg(i, float(i), view='position') for i in (7, 8, 9, 2)]
    ids = [h.record.index for h in anchor_aware_pool(semantic, near, 6)]
    assert ids == [1, 2, 7, 8, 9]
    assert anchor_aware_pool(semantic, near, 0) == []


def test_tracker_with_an_anchor_pose_uses_the_anchor_aware_pool():
    scores = [0.0] + [1.0 - i / 100 for i in range(1, 17)] + [0.0]
    memory = FakeMemory(scores)
    near_calls = []

    def near(x: float, y: float, first: int, last: int, k: int) -> list[Hit]:
        near_calls.append((x, y, first, last, k))
        order = sorted(range(first, last + 1), key=lambda i: abs(i - x))
        return [seg(i, abs(i - x), x=float(i), view='position') for i in order][:k]

    result = memory.tracker(near=near).track(0, 17, anchor_xy=(16.0, 0.0))
    assert near_calls == [(16.0, 0.0, 1, 16, 12)]
    assert result.leaf_retrievals == 2
    ids = [c.record.index for c in memory.shown[0]]
    assert ids == [1, 2, 3, 4, 5, 6, 16, 15, 14, 13, 12, 11]
    with pytest.raises(ValueError, match='near'):
        memory.tracker().track(0, 17, anchor_xy=(0.0, 0.0))


# -- lock-on-Y ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('question', 'expected'),
    [
        ('Where is the nearest AED to the lakeside?', 'lakeside'),
        ('Which is the closest bench to the fountain?', 'fountain'),
        ('Where is the bin closest to the main entrance?', 'main entrance'),
        ('Find the vending machine nearest the lobby.', 'lobby'),
        ('Where was the trash can nearest to a bus stop?', 'bus stop'),
        ('Where is the fire extinguisher near the kitchen?', 'kitchen'),
        ('Where is the bike rack next to the library, please?', 'library'),
        ('Is there a ramp close to the rooftop garden?', 'rooftop garden'),
        ('WHERE IS THE MAP NEAR THE EXIT?', 'EXIT'),
        ('We waited in the lobby for an hour. Where did we see a bin?', 'lobby'),
        ('After lunch we passed the parking lot. Where was the ticket machine?', 'parking lot'),
    ],
)
def test_secondary_anchor_is_detected(question, expected):
    assert secondary_anchor(question) == expected


@pytest.mark.parametrize(
    'question',
    [
        'Where is the coffee machine?',
        'Where is the nearest coffee machine?',
        'Where is a nearby bench?',
        'Where is the cafe on the way from the office to the station?',
        'Which shop is between the lobby and the cafeteria?',
        'I left the office. Where is the kiosk on the way to the station?',
        'Where is the closest coffee shop near me?',
        'We went outside. Where is the bench?',
    ],
)
def test_no_secondary_anchor_for_plain_and_route_questions(question):
    assert secondary_anchor(question) is None


def test_secondary_anchor_place_nouns_can_be_replaced():
    question = 'We stopped by the gym. Where was the water fountain?'
    assert secondary_anchor(question) is None
    assert secondary_anchor(question, place_nouns=('gym',)) == 'gym'


def test_lock_on_is_not_applied_with_one_verified_y():
    z = [seg(1, 0.9, x=0.0), seg(2, 0.8, x=50.0)]
    order, applied = lock_on_rerank(z, [seg(30, x=49.0)])
    assert not applied and order == z


def test_lock_on_is_not_applied_when_the_y_poses_are_not_distinct():
    z = [seg(1, 0.9, x=0.0), seg(2, 0.8, x=50.0)]
    y = [seg(30, x=49.0), seg(31, x=49.5)]
    assert lock_on_rerank(z, y) == (z, False)
    # Same two poses count as distinct once the threshold is below their spacing.
    assert lock_on_rerank(z, y, min_distinct_m=0.1)[1]


def test_lock_on_is_not_applied_when_the_top_one_is_unchanged():
    z = [seg(1, 0.9, x=0.0), seg(2, 0.8, x=50.0), seg(3, 0.7, x=20.0)]
    y = [seg(30, x=1.0), seg(31, x=18.0)]
    order, applied = lock_on_rerank(z, y)
    assert not applied and order == z


def test_lock_on_is_applied_when_two_distinct_ys_change_the_top_one():
    z = [seg(1, 0.9, x=0.0), seg(2, 0.8, x=50.0), seg(3, 0.7, x=20.0), seg(4, 0.6, x=51.0)]
    y = [seg(30, x=49.0), seg(31, x=80.0)]
    order, applied = lock_on_rerank(z, y)
    assert applied
    assert [h.record.index for h in order] == [2, 4, 3, 1]


def test_lock_on_ignores_invalid_poses():
    z = [seg(1, 0.9, x=0.0), seg(2, 0.8, x=50.0, valid=False), seg(3, 0.7, x=40.0)]
    y = [seg(30, x=49.0), seg(31, x=80.0), seg(32, x=0.0, valid=False)]
    order, applied = lock_on_rerank(z, y)
    assert applied
    assert [h.record.index for h in order] == [3, 1, 2]
    assert lock_on_rerank(z, [seg(30, x=49.0), seg(32, x=0.0, valid=False)]) == (z, False)
