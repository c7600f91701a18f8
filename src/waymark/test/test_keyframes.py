# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import math

import pytest

from waymark.geometry import Pose
from waymark.memory.keyframes import KeyframePolicy, KeyframeSelector

S = 1_000_000_000


def feed(selector: KeyframeSelector, samples) -> list[int]:
    kept = []
    for i, (stamp, pose) in enumerate(samples):
        if selector.wants(stamp, pose):
            selector.accept(stamp, pose)
            kept.append(i)
    return kept


def test_distance_threshold_spaces_keyframes():
    selector = KeyframeSelector(
        KeyframePolicy(min_interval_s=0, max_interval_s=0, min_distance_m=1.0)
    )
    samples = [(i * S // 10, Pose.from_xyz_yaw(0.25 * i, 0, 0, 0)) for i in range(13)]
    assert feed(selector, samples) == [0, 4, 8, 12]


def test_rotation_threshold_catches_turning_in_place():
    policy = KeyframePolicy(
        min_interval_s=0, max_interval_s=0, min_distance_m=10, min_rotation_deg=45
    )
    samples = [(i * S, Pose.from_xyz_yaw(0, 0, 0, math.radians(10 * i))) for i in range(10)]
    assert feed(KeyframeSelector(policy), samples) == [0, 5]


def test_standing_still_gives_one_keyframe_per_max_interval():
    policy = KeyframePolicy(min_interval_s=0.5, max_interval_s=3.0)
    samples = [(i * S // 2, Pose()) for i in range(13)]  # 6 s at 2 Hz, not moving
    assert feed(KeyframeSelector(policy), samples) == [0, 6, 12]


def test_min_interval_caps_the_rate_even_when_moving_fast():
    policy = KeyframePolicy(min_interval_s=1.0, max_interval_s=0, min_distance_m=0.1)
    samples = [(i * S // 10, Pose.from_xyz_yaw(i, 0, 0, 0)) for i in range(25)]
    assert feed(KeyframeSelector(policy), samples) == [0, 10, 20]


def test_rejected_candidate_does_not_move_the_reference():
    selector = KeyframeSelector(
        KeyframePolicy(min_interval_s=0, max_interval_s=0, min_distance_m=1)
    )
    assert selector.wants(0, Pose())
    selector.accept(0, Pose())
    assert selector.wants(S, Pose((1.5, 0, 0)))  # not accepted (say the image was corrupt)
    assert selector.wants(2 * S, Pose((1.2, 0, 0)))


def test_time_going_backwards_restarts_selection():
    selector = KeyframeSelector(KeyframePolicy(min_interval_s=5.0))
    selector.accept(100 * S, Pose())
    assert not selector.wants(101 * S, Pose())
    assert selector.wants(50 * S, Pose())


@pytest.mark.parametrize(
    'kwargs',
    [
        {'min_interval_s': -1},
        {'min_distance_m': math.nan},
        {'min_interval_s': 5, 'max_interval_s': 2},
    ],
)
def test_invalid_policies_are_rejected(kwargs):
    with pytest.raises(ValueError, match='keyframe policy'):
        KeyframePolicy(**kwargs)
