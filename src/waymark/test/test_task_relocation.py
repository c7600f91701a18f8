# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import math

import numpy as np
import pytest

from waymark.tasks.places import NamedPlace, PlacePose, PlaceView
from waymark.tasks.relocation import (
    SE2,
    Alignment,
    CurrentView,
    MemoryCandidate,
    RelocationParams,
    goal_allowed,
    place_references,
    relocate,
)

OLD = ('run1', 0)
NEW = ('run2', 0)
DIM = 16
# Where the new map lies in the old one: what relocation has to find.
TRUTH = SE2(2.0, -1.0, 0.6)
ROBOT_NEW = (1.0, -1.0)


def basis(index: int, noise: float = 0.0, seed: int = 0) -> list[float]:
    vector = np.zeros(DIM)
    vector[index] = 1.0
    vector += noise * np.random.default_rng(seed + index).normal(size=DIM)
    return vector.tolist()


def place(name: str, x: float, y: float, headings_deg, epoch=OLD) -> NamedPlace:
    views = tuple(
        PlaceView(f'{name}/{h}', math.radians(h), PlacePose(x, y, math.radians(h)), i)
        for i, h in enumerate(headings_deg)
    )
    return NamedPlace(name, PlacePose(x, y, 0.0), 0, epoch, 1, name, views, 0)


def kitchen_at_robot() -> NamedPlace:
    """The kitchen was marked in the old map exactly where the robot now stands."""
    spot = TRUTH.apply(PlacePose(*ROBOT_NEW, 0.0))
    return place('kitchen', spot.x, spot.y, (0, 90, 180, 270))


def view_towards(old_heading_deg: float, vector, memory=(), jitter=(0.0, 0.0, 0.0)):
    """A view in the new epoch that faces what the old epoch saw at `old_heading_deg`."""
    heading = math.radians(old_heading_deg) - TRUTH.yaw + jitter[2]
    pose = PlacePose(ROBOT_NEW[0] + jitter[0], ROBOT_NEW[1] + jitter[1], heading)
    return CurrentView(heading, pose, (vector,), tuple(memory))


def embeddings_for(*places: NamedPlace) -> dict[str, list[list[float]]]:
    """Place view k of the i-th place gets basis vector 4 i + k."""
    return {
        view.image_ref: [basis(4 * i + k)]
        for i, p in enumerate(places)
        for k, view in enumerate(p.views)
    }


def test_a_known_transform_is_recovered_from_three_agreeing_matches():
    kitchen = kitchen_at_robot()
    references, missing = place_references([kitchen], embeddings_for(kitchen))
    assert missing == ()
    jitters = [(0.03, -0.02, 0.02), (-0.02, 0.01, -0.03), (0.01, 0.03, 0.01)]
    views = [
        view_towards(h, basis(k, noise=0.1), jitter=j)
        for k, (h, j) in enumerate(zip((0, 90, 180), jitters, strict=True))
    ]

    result = relocate(views, references, NEW)

    assert len(result.matches) == 3 and not result.rejections
    assert result.belief.place == 'kitchen'
    assert result.belief.agreeing == 3 and result.belief.share == 1.0
    assert result.belief.mean_similarity > 0.8
    alignment = result.alignment
    assert alignment.aligned, alignment.reason
    assert (alignment.source_epoch, alignment.target_epoch) == (NEW, OLD)
    assert alignment.inliers == 3 and alignment.headings == 3
    assert alignment.transform.x == pytest.approx(TRUTH.x, abs=0.1)
    assert alignment.transform.y == pytest.approx(TRUTH.y, abs=0.1)
    assert alignment.transform.yaw == pytest.approx(TRUTH.yaw, abs=math.radians(3))
    assert max(alignment.position_residuals_m) < 0.2
    assert max(alignment.angle_residuals_rad) < math.radians(5)


def test_look_alike_places_give_no_match_by_the_margin_rule():
    office_a = place('office A', 0.0, 0.0, (0, 90, 180, 270))
    office_b = place('office B', 10.0, 0.0, (0, 90, 180, 270))
    # Both offices look the same: each view's best match has a twin elsewhere.
    same_look = {
        view.image_ref: [basis(k)] for p in (office_a, office_b) for k, view in enumerate(p.views)
    }
    references, _ = place_references([office_a, office_b], same_look)
    views = [view_towards(h, basis(k, noise=0.05)) for k, h in enumerate((0, 90, 180, 270))]

    result = relocate(views, references, NEW)

    assert result.matches == ()
    assert len(result.rejections) == 4
    assert all('ambiguous' in r.reason for r in result.rejections)
    assert "'office A'" in result.rejections[0].reason
    assert "'office B'" in result.rejections[0].reason
    assert result.belief is None and 'none of the 4 views' in result.belief_reason
    assert not result.alignment.aligned

    # With the margin rule off the same views match: the rule is what refused them.
    loose = relocate(views, references, NEW, RelocationParams(min_margin=0.0))
    assert len(loose.matches) == 4


def test_two_views_of_one_place_are_not_rivals():
    kitchen = kitchen_at_robot()
    embeddings = embeddings_for(kitchen)
    # Two of the kitchen's views look alike; they are the same spot, not a look-alike room.
    embeddings[kitchen.views[1].image_ref] = embeddings[kitchen.views[0].image_ref]
    references, _ = place_references([kitchen], embeddings)
    result = relocate([view_towards(0, basis(0))], references, NEW)
    assert len(result.matches) == 1 and result.matches[0].margin is None


def test_one_outlier_among_four_matches_is_rejected():
    kitchen = kitchen_at_robot()
    hall = place('hall', -8.0, 6.0, (45,))
    references, _ = place_references([kitchen, hall], embeddings_for(kitchen, hall))
    views = [view_towards(h, basis(k, noise=0.05)) for k, h in enumerate((0, 90, 180))]
    # A fourth view is taken for the hall, far from where the others put the robot.
    views.append(view_towards(270, basis(4, noise=0.05)))

    result = relocate(views, references, NEW)

    assert len(result.matches) == 4
    assert result.belief.place == 'kitchen'
    assert result.belief.agreeing == 3 and result.belief.share == 0.75
    assert '1 match other places' in result.belief_reason
    alignment = result.alignment
    assert alignment.aligned, alignment.reason
    assert alignment.inliers == 3 and alignment.matches == 4
    assert alignment.transform.x == pytest.approx(TRUTH.x, abs=1e-6)
    assert alignment.transform.y == pytest.approx(TRUTH.y, abs=1e-6)
    assert alignment.transform.yaw == pytest.approx(TRUTH.yaw, abs=1e-6)


def test_fewer_agreeing_matches_than_needed_is_not_aligned_but_the_belief_stands():
    kitchen = kitchen_at_robot()
    references, _ = place_references([kitchen], embeddings_for(kitchen))
    views = [view_towards(0, basis(0)), view_towards(90, basis(1))]

    result = relocate(views, references, NEW)

    assert result.belief.place == 'kitchen' and result.belief.agreeing == 2
    alignment = result.alignment
    assert not alignment.aligned and alignment.transform is None
    assert alignment.inliers == 2
    assert '2 of 2 matches' in alignment.reason and '3 needed' in alignment.reason
    assert relocate(views, references, NEW, RelocationParams(min_agreeing=2)).alignment.aligned


def test_agreeing_matches_from_one_heading_are_not_aligned():
    kitchen = kitchen_at_robot()
    references, _ = place_references([kitchen], embeddings_for(kitchen))
    views = [view_towards(0, basis(0, noise=0.05, seed=s)) for s in range(3)]
    alignment = relocate(views, references, NEW).alignment
    assert not alignment.aligned
    assert alignment.inliers == 3 and alignment.headings == 1
    assert 'from 1 heading' in alignment.reason


def test_memory_hits_align_without_named_places():
    def hit(old_heading_deg: float, similarity: float) -> MemoryCandidate:
        pose = TRUTH.apply(PlacePose(*ROBOT_NEW, math.radians(old_heading_deg) - TRUTH.yaw))
        return MemoryCandidate(f'run1/{old_heading_deg}', pose, OLD, similarity)

    views = [view_towards(h, basis(k), memory=[hit(h, 0.9)]) for k, h in enumerate((0, 120, 240))]
    result = relocate(views, [], NEW)
    assert result.belief is None
    assert result.alignment.aligned, result.alignment.reason
    assert result.alignment.transform.yaw == pytest.approx(TRUTH.yaw, abs=1e-6)


def test_matches_in_the_current_epoch_do_not_align_it_with_itself():
    kitchen = place('kitchen', 1.0, -1.0, (0, 90, 180), epoch=NEW)
    references, _ = place_references([kitchen], embeddings_for(kitchen))
    views = [view_towards(h, basis(k)) for k, h in enumerate((0, 90, 180))]
    result = relocate(views, references, NEW)
    assert result.belief.place == 'kitchen'
    assert not result.alignment.aligned
    assert 'earlier map epoch' in result.alignment.reason


def test_a_weak_best_match_is_no_match():
    kitchen = kitchen_at_robot()
    references, _ = place_references([kitchen], embeddings_for(kitchen))
    result = relocate([view_towards(0, basis(9))], references, NEW)
    assert result.matches == ()
    assert 'below 0.800' in result.rejections[0].reason


def test_place_views_without_embeddings_are_reported():
    kitchen = kitchen_at_robot()
    embeddings = embeddings_for(kitchen)
    del embeddings['kitchen/90']
    references, missing = place_references([kitchen], embeddings)
    assert len(references) == 3 and missing == ('kitchen/90',)


def test_bad_input_is_refused_with_a_clear_error():
    kitchen = kitchen_at_robot()
    references, _ = place_references([kitchen], embeddings_for(kitchen))
    params = RelocationParams(max_views=4)
    with pytest.raises(ValueError, match='at most max_views=4'):
        relocate([view_towards(0, basis(0))] * 5, references, NEW, params)
    with pytest.raises(ValueError, match='different sizes'):
        relocate([view_towards(0, [1.0, 0.0])], references, NEW)
    with pytest.raises(ValueError, match='not finite'):
        relocate([view_towards(0, [math.nan] * DIM)], references, NEW)
    with pytest.raises(ValueError, match='is zero'):
        relocate([view_towards(0, [0.0] * DIM)], references, NEW)
    with pytest.raises(ValueError, match='embedding vectors'):
        relocate([CurrentView(0.0, PlacePose(0, 0, 0), ())], references, NEW)


def test_memory_hits_kept_per_view_are_bounded():
    far = [
        MemoryCandidate(f'run1/{i}', PlacePose(10.0 * i, 0.0, 0.0), OLD, 0.95 - 0.01 * i)
        for i in range(5)
    ]
    view = view_towards(0, basis(0), memory=far)
    # With one hit kept, the rival hits elsewhere are never seen: the best one matches.
    result = relocate([view], [], NEW, RelocationParams(max_hits_per_view=1))
    assert result.matches[0].target == 'run1/0'
    assert 'ambiguous' in relocate([view], [], NEW).rejections[0].reason


@pytest.mark.parametrize(
    'field, value',
    [
        ('min_similarity', 1.5),
        ('min_margin', -0.1),
        ('min_agreeing', 1),
        ('min_headings', 5),
        ('max_views', 0),
        ('max_views', 1000),
        ('angle_tolerance_rad', 0.0),
        ('min_agreeing', 3.0),
    ],
)
def test_parameters_are_validated(field, value):
    with pytest.raises(ValueError, match=field):
        RelocationParams(**{field: value})


def test_se2_inverse_and_between():
    source = PlacePose(1.0, 2.0, 0.3)
    target = TRUTH.apply(source)
    found = SE2.between(source, target)
    assert (found.x, found.y, found.yaw) == pytest.approx((TRUTH.x, TRUTH.y, TRUTH.yaw))
    back = TRUTH.inverse().apply(target)
    assert (back.x, back.y, back.yaw) == pytest.approx((source.x, source.y, source.yaw))


def test_se2_after_applies_the_inner_transform_first():
    inner = SE2(-0.5, 3.0, -1.2)
    pose = PlacePose(1.0, 2.0, 0.3)
    once = TRUTH.after(inner).apply(pose)
    twice = TRUTH.apply(inner.apply(pose))
    assert (once.x, once.y, once.yaw) == pytest.approx((twice.x, twice.y, twice.yaw))
    undone = TRUTH.inverse().after(TRUTH)
    assert (undone.x, undone.y, undone.yaw) == pytest.approx((0.0, 0.0, 0.0))


# -- goal_allowed ------------------------------------------------------------------------


def aligned(source=NEW, target=OLD) -> Alignment:
    return Alignment(True, 'aligned', source, target, TRUTH, inliers=3, matches=3, headings=3)


def test_a_goal_from_the_current_epoch_is_allowed_as_it_is():
    decision = goal_allowed(NEW, NEW, [])
    assert decision.allowed and decision.transform == SE2()


def test_a_goal_is_refused_when_the_current_epoch_is_unknown():
    assert not goal_allowed(OLD, None, [aligned()]).allowed


def test_a_goal_from_an_unaligned_epoch_is_refused():
    decision = goal_allowed(OLD, NEW, [])
    assert not decision.allowed and 'no alignment' in decision.reason
    failed = Alignment(False, 'not aligned: 2 of 2 matches agree, 3 needed', NEW, OLD)
    decision = goal_allowed(OLD, NEW, [failed])
    assert not decision.allowed and '3 needed' in decision.reason
    # An alignment between other epochs does not help.
    assert not goal_allowed(OLD, NEW, [aligned(('run3', 0), OLD)]).allowed


def test_a_goal_from_an_aligned_epoch_is_carried_into_the_current_one():
    goal_old = TRUTH.apply(PlacePose(4.0, 1.0, 0.2))
    # Either way round: new onto old, or old onto new.
    for alignment in (aligned(), Alignment(True, 'aligned', OLD, NEW, TRUTH.inverse())):
        decision = goal_allowed(OLD, NEW, [alignment])
        assert decision.allowed, decision.reason
        goal_new = decision.transform.apply(goal_old)
        assert (goal_new.x, goal_new.y, goal_new.yaw) == pytest.approx((4.0, 1.0, 0.2))


def test_two_epochs_aligned_onto_one_memory_carry_goals_between_them():
    # A place marked in epoch MID, the robot now in NEW: each was relocalised against the
    # same OLD memory, and that carries the place across without a relocation between them.
    mid_onto_old = SE2(-2.0, 5.0, 1.1)
    mid, place_mid = ('run2', 1), PlacePose(1.5, -0.5, 0.4)
    place_old = mid_onto_old.apply(place_mid)
    onto_old = [
        Alignment(True, 'aligned', mid, OLD, mid_onto_old, inliers=3, matches=3, headings=2),
        aligned(),  # NEW onto OLD by TRUTH
    ]
    decision = goal_allowed(mid, NEW, onto_old)
    assert decision.allowed and 'through epoch' in decision.reason
    place_new = decision.transform.apply(place_mid)
    expected = TRUTH.inverse().apply(place_old)
    assert (place_new.x, place_new.y, place_new.yaw) == pytest.approx(
        (expected.x, expected.y, expected.yaw)
    )
    # Only accepted alignments carry: a failed one onto the same memory does not.
    failed_mid = Alignment(False, 'not aligned: 1 heading', mid, OLD)
    decision = goal_allowed(mid, NEW, [failed_mid, aligned()])
    assert not decision.allowed


def test_a_relocation_that_matched_nothing_is_named_in_the_refusal():
    nothing = Alignment(False, 'no view matched a place or memory entry', NEW)
    decision = goal_allowed(OLD, NEW, [nothing])
    assert not decision.allowed and 'no view matched' in decision.reason
