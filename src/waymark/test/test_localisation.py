# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Target localisation on synthetic geometry with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from waymark.localisation.bearing import best_box, text_score
from waymark.localisation.estimate import BEARING, DEPTH, ROBOT, TRIANGULATED, VIEWPOINT
from waymark.localisation.locate import locate
from waymark.localisation.params import LocalisationParams
from waymark.localisation.place import place
from waymark.localisation.self_position import about_the_robot
from waymark.localisation.standoff import standoff_goal
from waymark.memory.entries import DepthSamples, FrameRecord, Sighting, TextBox
from waymark_testing.sightings import POSES, SIGN, seeing


def test_text_match_is_tolerant_of_case_punctuation_and_slips():
    assert text_score('PHARMACY', 'Where is the pharmacy?') == 1.0
    assert text_score('PHARMAGY.', 'where is the pharmacy') == 1.0  # one letter misread
    assert text_score('CITY PHARMACY', 'the pharmacy') == pytest.approx(8 / 12)
    assert text_score('THE', 'where is the pharmacy') == 0.0
    record = seeing(0, *POSES[0])
    assert best_box(record, 'where is the pharmacy', 0.5).text == 'PHARMACY'
    assert best_box(record, 'where is the bakery', 0.5) is None


def test_a_sign_seen_from_three_poses_is_triangulated_within_centimetres():
    first, *others = [seeing(i, x, y) for i, (x, y) in enumerate(POSES)]
    estimate = locate(first, 'where is the pharmacy?', others)
    assert estimate.method == TRIANGULATED
    assert math.hypot(estimate.x - SIGN[0], estimate.y - SIGN[1]) < 0.03
    assert estimate.z == pytest.approx(SIGN[2], abs=0.05)
    assert estimate.residual_m < 0.01
    assert estimate.sigma_m < 0.3
    assert estimate.sources == ('walk/0', 'walk/1', 'walk/2')


def test_noisy_bearings_grow_the_residual_and_the_uncertainty():
    def estimate(noise: float):
        records = [
            seeing(i, x, y, bearing_noise=noise * sign)
            for i, ((x, y), sign) in enumerate(zip(POSES, (1, -1, 1), strict=True))
        ]
        return locate(records[0], 'pharmacy', records[1:])

    clean, noisy = estimate(0.0), estimate(math.radians(4))
    assert noisy.method == TRIANGULATED
    assert noisy.residual_m > 10 * clean.residual_m + 0.01
    assert noisy.sigma_m > clean.sigma_m


def test_parallel_rays_are_not_triangulated():
    # Cameras in a line with the sign: every ray lies on the same line.
    records = [seeing(i, SIGN[0] - d, SIGN[1], yaw_offset=0.0) for i, d in enumerate((3, 2, 1))]
    estimate = locate(records[0], 'pharmacy', records[1:])
    assert estimate.method == BEARING
    assert estimate.sigma_m == LocalisationParams().assumed_range_sigma_m


def test_rays_of_another_session_or_map_epoch_or_other_words_are_not_combined():
    first = seeing(0, *POSES[0])
    others = [
        seeing(1, *POSES[1], session='other'),
        seeing(2, *POSES[2], map_epoch=1),
        seeing(3, *POSES[1], text='BAKERY'),
    ]
    assert locate(first, 'pharmacy', others).method == BEARING


def test_a_ray_pointing_away_is_dropped_and_the_rest_still_meet():
    good = [seeing(i, x, y) for i, (x, y) in enumerate(POSES)]
    # Sees the same words, but they lie behind it relative to the others' meeting point.
    away = seeing(9, 6.0, 5.0, target=(8.0, 7.0, 1.6))
    estimate = locate(good[0], 'pharmacy', [away, *good[1:]])
    assert estimate.method == TRIANGULATED
    assert 'walk/9' not in estimate.sources
    assert math.hypot(estimate.x - SIGN[0], estimate.y - SIGN[1]) < 0.05


def test_depth_under_the_box_ranges_one_bearing():
    x, y = POSES[0]
    towards = math.atan2(SIGN[1] - y, SIGN[0] - x)
    along_axis = math.hypot(SIGN[0] - x, SIGN[1] - y) * math.cos(0.2)
    grid = np.full((12, 16), 9.0)  # the wall behind
    record = seeing(0, x, y)
    box = record.sighting.text_boxes[1]
    rows = slice(math.floor(box.top * 12), math.ceil(box.bottom * 12))
    cols = slice(math.floor(box.left * 16), math.ceil(box.right * 16))
    grid[rows, cols] = along_axis
    grid[0, 0] = np.nan
    depth = DepthSamples(16, 12, tuple(grid.ravel()))
    estimate = locate(seeing(0, x, y, depth=depth), 'pharmacy')
    assert estimate.method == DEPTH
    assert math.hypot(estimate.x - SIGN[0], estimate.y - SIGN[1]) < 0.05
    assert estimate.sigma_m < 0.2
    assert math.atan2(estimate.y - y, estimate.x - x) == pytest.approx(towards, abs=1e-6)


def test_no_sighting_or_no_pose_gives_the_viewpoint_with_the_viewing_range():
    record = seeing(0, *POSES[0])
    bare = FrameRecord('walk', 0, 1, 1.0, 2.0, 0.5, 0.3, 0, True, '0.jpg')
    params = LocalisationParams(viewing_range_m=3.5)
    for case in (bare, FrameRecord(**{**vars(record), 'pose_valid': False})):
        estimate = locate(case, 'pharmacy', [record], params)
        assert estimate.method == VIEWPOINT
        assert (estimate.x, estimate.y, estimate.sigma_m) == (case.x, case.y, 3.5)


def test_a_box_without_intrinsics_gives_the_viewpoint():
    first, *others = [seeing(i, x, y) for i, (x, y) in enumerate(POSES)]
    blind = FrameRecord(**{**vars(first), 'sighting': Sighting(None, first.sighting.text_boxes)})
    assert best_box(blind, 'pharmacy', 0.5) is None
    estimate = locate(blind, 'pharmacy', others)
    assert estimate.method == VIEWPOINT
    assert (estimate.x, estimate.y) == (blind.x, blind.y)


def test_an_image_hit_looks_along_the_image_centre():
    record = seeing(0, *POSES[0])
    estimate = locate(record, 'a photo of a chair')
    assert estimate.method == BEARING
    bearing = math.atan2(estimate.y - record.y, estimate.x - record.x)
    assert bearing == pytest.approx(record.yaw)


def test_a_photo_hit_looks_along_where_the_photo_matched_and_ranges_it_by_depth():
    x, y = POSES[0]
    record = seeing(0, x, y)
    sign_box = record.sighting.text_boxes[1]  # where the sign is in the picture
    region = TextBox('', sign_box.left, sign_box.top, sign_box.right, sign_box.bottom)
    towards = math.atan2(SIGN[1] - y, SIGN[0] - x)
    along = locate(record, '', [seeing(1, *POSES[1])], region=region)
    assert along.method == BEARING  # one ray: a photo region is not triangulated by words
    assert math.atan2(along.y - y, along.x - x) == pytest.approx(towards, abs=1e-6)
    grid = np.full((12, 16), math.hypot(SIGN[0] - x, SIGN[1] - y) * math.cos(0.2))
    ranged = locate(
        seeing(0, x, y, depth=DepthSamples(16, 12, tuple(grid.ravel()))), '', region=region
    )
    assert ranged.method == DEPTH
    assert math.hypot(ranged.x - SIGN[0], ranged.y - SIGN[1]) < 0.05


def test_params_are_validated():
    for bad in (
        {'max_rays': 1},
        {'min_baseline_m': -1.0},
        {'max_range_m': float('nan')},
        {'assumed_range_m': 50.0},
        {'min_text_score': 0.0},
        {'standoff_rings': 0},
    ):
        with pytest.raises(ValueError):
            LocalisationParams(**bad)


def test_standoff_faces_the_target_from_the_viewpoint_side():
    first, *others = [seeing(i, x, y) for i, (x, y) in enumerate(POSES)]
    target = locate(first, 'pharmacy', others)
    pose = standoff_goal(target, (first.x, first.y))
    assert math.hypot(pose.x - target.x, pose.y - target.y) == pytest.approx(1.0)
    assert math.hypot(pose.x - first.x, pose.y - first.y) < math.hypot(
        target.x - first.x, target.y - first.y
    )
    assert pose.yaw == pytest.approx(math.atan2(target.y - pose.y, target.x - pose.x))
    assert not pose.at_viewpoint


def test_standoff_searches_a_free_spot_and_falls_back_to_the_viewpoint():
    first, *others = [seeing(i, x, y) for i, (x, y) in enumerate(POSES)]
    target = locate(first, 'pharmacy', others)
    direct = standoff_goal(target, (first.x, first.y))

    def blocked_direct(x: float, y: float) -> bool:
        return math.hypot(x - direct.x, y - direct.y) > 0.2

    pose = standoff_goal(target, (first.x, first.y), is_free=blocked_direct)
    assert not pose.at_viewpoint and blocked_direct(pose.x, pose.y)
    assert 0.9 < math.hypot(pose.x - target.x, pose.y - target.y) < 2.1
    assert math.cos(pose.yaw - math.atan2(target.y - pose.y, target.x - pose.x)) > 0.9999

    def broken(x: float, y: float) -> bool:
        raise IndexError('off the map')

    for is_free in (lambda x, y: False, broken):
        pose = standoff_goal(target, (first.x, first.y), is_free=is_free)
        assert pose.at_viewpoint and (pose.x, pose.y) == (first.x, first.y)
        assert all(math.isfinite(v) for v in (pose.x, pose.y, pose.yaw))


def test_a_viewpoint_target_keeps_the_viewpoint_pose():
    bare = FrameRecord('walk', 0, 1, 1.0, 2.0, 0.5, 0.3, 0, True, '0.jpg')
    pose = standoff_goal(locate(bare, 'x'), (1.0, 2.0), viewpoint_yaw=0.3)
    assert (pose.x, pose.y, pose.yaw, pose.at_viewpoint) == (1.0, 2.0, 0.3, True)


# -- questions about the robot itself ----------------------------------------------------


@pytest.mark.parametrize(
    'question',
    [
        'Where was I at 20:27:22?',
        'Where was I at 20:27:22 UTC?',
        'What was my position at 10:15?',
        'Where was I when I saw the pharmacy?',
        'where did the robot start?',
        "What was the robot's location five minutes ago?",
    ],
)
def test_a_question_about_the_robot_is_answered_with_its_own_pose(question):
    first, *others = [seeing(i, x, y) for i, (x, y) in enumerate(POSES)]
    assert about_the_robot(question)
    target, goal = place(first, question, others)
    assert (target.method, target.sources) == (ROBOT, (first.id,))
    assert (target.x, target.y, target.sigma_m) == (first.x, first.y, 0.0)
    assert (goal.x, goal.y, goal.yaw) == (first.x, first.y, first.yaw)


@pytest.mark.parametrize(
    'question',
    [
        'Where did I see the pharmacy?',
        'Where is the pharmacy?',
        "Where was the robot's charger? The pharmacy sign was beside it.",
        'Where was the pharmacy?',
    ],
)
def test_a_question_about_a_thing_is_answered_with_the_thing(question):
    first, *others = [seeing(i, x, y) for i, (x, y) in enumerate(POSES)]
    assert not about_the_robot(question)
    target, _goal = place(first, question, others)
    assert target.method == TRIANGULATED
    assert math.hypot(target.x - SIGN[0], target.y - SIGN[1]) < 0.03
