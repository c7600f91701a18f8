# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The transform tree behind `pose_type: tf` where tf2_ros is not installed."""

from __future__ import annotations

import math

import pytest

from waymark.geometry import Pose
from waymark.transforms import TransformError, TransformTree, inverse

S = 1_000_000_000
AGE = S // 2


def xy_yaw(x: float, y: float, yaw: float) -> Pose:
    return Pose.from_xyz_yaw(x, y, 0.0, yaw)


def planar(pose: Pose) -> tuple[float, float, float]:
    return (*(round(v, 9) for v in pose.position[:2]), round(pose.yaw, 9))


def test_a_chain_composes_from_the_parent_down():
    tree = TransformTree()
    assert tree.add('map', 'odom', xy_yaw(1.0, 0.0, math.pi / 2), 10 * S, static=False) == ''
    assert tree.add('odom', 'base_link', xy_yaw(2.0, 0.0, 0.0), 10 * S, static=False) == ''
    found = tree.lookup('map', 'base_link', 10 * S, AGE)
    # 2 m forward in odom, which is turned a quarter left in map: 2 m along map's y
    assert planar(found.pose) == pytest.approx((1.0, 2.0, math.pi / 2))
    assert found.stamp_ns == 10 * S


def test_static_and_dynamic_links_mix_and_only_dynamic_ones_age():
    tree = TransformTree()
    tree.add('map', 'odom', xy_yaw(0.5, 0.5, 0.0), 0, static=True)
    tree.add('odom', 'base_link', xy_yaw(1.0, 0.0, 0.0), 7 * S, static=False)
    found = tree.lookup('map', 'base_link', 7 * S + AGE, AGE)
    assert planar(found.pose) == pytest.approx((1.5, 0.5, 0.0))
    assert found.stamp_ns == 7 * S  # the static link is timeless
    only_static = TransformTree()
    only_static.add('map', 'base_link', xy_yaw(3.0, 0.0, 0.0), 0, static=True)
    assert only_static.lookup('map', 'base_link', 10**6 * S, AGE).stamp_ns is None


def test_a_stale_link_is_refused_with_its_age():
    tree = TransformTree()
    tree.add('map', 'odom', xy_yaw(0.0, 0.0, 0.0), 1 * S, static=False)
    tree.add('odom', 'base_link', xy_yaw(1.0, 0.0, 0.0), 5 * S, static=False)
    with pytest.raises(TransformError, match=r'map -> base_link is 4.00 s old'):
        tree.lookup('map', 'base_link', 5 * S, AGE)


def test_a_missing_link_says_where_each_chain_ends():
    tree = TransformTree()
    with pytest.raises(TransformError, match='no transforms received yet'):
        tree.lookup('map', 'base_link', 0, AGE)
    tree.add('odom', 'base_link', xy_yaw(1.0, 0.0, 0.0), S, static=False)
    with pytest.raises(TransformError, match='base_link leads up to odom, map to map'):
        tree.lookup('map', 'base_link', S, AGE)


def test_time_going_backwards_is_refused_until_the_dynamic_links_are_cleared():
    tree = TransformTree()
    tree.add('map', 'base_link', xy_yaw(1.0, 0.0, 0.0), 20 * S, static=False)
    tree.add('base_link', 'camera', xy_yaw(0.2, 0.0, 0.0), 0, static=True)
    why = tree.add('map', 'base_link', xy_yaw(9.0, 0.0, 0.0), 2 * S, static=False)
    assert 'time went backwards' in why
    assert planar(tree.lookup('map', 'base_link', 20 * S, AGE).pose)[0] == pytest.approx(1.0)
    tree.clear_dynamic()
    with pytest.raises(TransformError):
        tree.lookup('map', 'base_link', 2 * S, AGE)
    assert tree.add('map', 'base_link', xy_yaw(9.0, 0.0, 0.0), 2 * S, static=False) == ''
    found = tree.lookup('map', 'camera', 2 * S, AGE)  # the static link outlived the clearing
    assert planar(found.pose) == pytest.approx((9.2, 0.0, 0.0))


def test_a_lookup_between_siblings_goes_through_their_common_parent():
    tree = TransformTree()
    tree.add('base_link', 'camera', xy_yaw(0.3, 0.0, 0.0), 0, static=True)
    tree.add('base_link', 'lidar', xy_yaw(0.0, 0.1, math.pi), 0, static=True)
    found = tree.lookup('lidar', 'camera', S, AGE)
    # the camera is 0.3 m ahead and 0.1 m right of the lidar, which faces backwards
    assert planar(found.pose) == pytest.approx((-0.3, 0.1, -math.pi))


def test_bad_frames_are_refused():
    tree = TransformTree()
    assert 'own parent' in tree.add('map', 'map', Pose(), 0, static=True)
    assert 'empty frame' in tree.add('', 'base_link', Pose(), 0, static=True)


def test_inverse_undoes_a_pose():
    pose = Pose.checked((1.0, -2.0, 0.5), (0.1, 0.2, 0.3, 0.9))
    back = pose.compose(inverse(pose))
    assert back.position == pytest.approx((0.0, 0.0, 0.0), abs=1e-12)
    assert abs(back.orientation[3]) == pytest.approx(1.0)
