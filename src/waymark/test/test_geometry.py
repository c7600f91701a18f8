# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import math

import numpy as np
import pytest

from waymark.geometry import (
    InvalidPoseError,
    Pose,
    PoseBuffer,
    interpolate,
    quaternion_from_yaw,
    yaw_from_quaternion,
)

MS = 1_000_000


def test_checked_rejects_non_finite_and_degenerate_poses():
    with pytest.raises(InvalidPoseError, match='non-finite'):
        Pose.checked((0.0, math.nan, 0.0), (0, 0, 0, 1))
    with pytest.raises(InvalidPoseError, match='non-finite'):
        Pose.checked((0.0, 0.0, 0.0), (0, 0, math.inf, 1))
    with pytest.raises(InvalidPoseError, match='degenerate'):
        Pose.checked((0.0, 0.0, 0.0), (0, 0, 0, 0))
    assert Pose.checked((1, 2, 3), (0, 0, 0, 2)).orientation == (0.0, 0.0, 0.0, 1.0)


@pytest.mark.parametrize('yaw', [-3.0, -1.0, 0.0, 0.5, 3.1])
def test_yaw_round_trip(yaw):
    assert yaw_from_quaternion(quaternion_from_yaw(yaw)) == pytest.approx(yaw)


def test_interpolate_is_linear_in_position_and_slerp_in_rotation():
    a = Pose.from_xyz_yaw(0.0, 0.0, 0.0, 0.0)
    b = Pose.from_xyz_yaw(2.0, -4.0, 1.0, math.pi / 2)
    mid = interpolate(a, b, 0.25)
    assert mid.position == pytest.approx((0.5, -1.0, 0.25))
    assert mid.yaw == pytest.approx(math.pi / 8)
    assert interpolate(a, b, 0.0).position == pytest.approx(a.position)
    assert interpolate(a, b, 1.0).yaw == pytest.approx(math.pi / 2)


def test_interpolate_takes_the_short_way_round():
    a = Pose.from_xyz_yaw(0, 0, 0, math.radians(170))
    b = Pose.from_xyz_yaw(0, 0, 0, math.radians(-170))
    assert abs(interpolate(a, b, 0.5).yaw) == pytest.approx(math.pi)


def test_compose_applies_the_extrinsic_in_the_body_frame():
    base = Pose.from_xyz_yaw(1.0, 2.0, 0.0, math.pi / 2)
    camera_in_base = Pose((0.5, 0.0, 0.4))
    camera = base.compose(camera_in_base)
    assert camera.position == pytest.approx((1.0, 2.5, 0.4))
    assert camera.yaw == pytest.approx(math.pi / 2)


def test_pose_buffer_interpolates_between_neighbours_within_the_gap():
    buffer = PoseBuffer()
    buffer.add(0, Pose.from_xyz_yaw(0, 0, 0, 0))
    buffer.add(100 * MS, Pose.from_xyz_yaw(1, 0, 0, 0))
    assert buffer.lookup(30 * MS, 200 * MS).position == pytest.approx((0.3, 0.0, 0.0))
    assert buffer.lookup(100 * MS, 0).position == pytest.approx((1.0, 0.0, 0.0))


def test_pose_buffer_never_guesses_beyond_the_gap():
    buffer = PoseBuffer()
    buffer.add(0, Pose.from_xyz_yaw(0, 0, 0, 0))
    buffer.add(1000 * MS, Pose.from_xyz_yaw(1, 0, 0, 0))
    assert buffer.lookup(500 * MS, 200 * MS) is None  # both neighbours too far
    assert buffer.lookup(1300 * MS, 200 * MS) is None  # after the newest, too far
    # Only one neighbour close enough: held, not extrapolated.
    assert buffer.lookup(1100 * MS, 200 * MS).position == pytest.approx((1.0, 0.0, 0.0))
    assert PoseBuffer().lookup(0, 10**12) is None


def test_pose_buffer_resets_when_time_goes_backwards():
    buffer = PoseBuffer()
    buffer.add(500 * MS, Pose.from_xyz_yaw(5, 0, 0, 0))
    buffer.add(600 * MS, Pose.from_xyz_yaw(6, 0, 0, 0))
    assert buffer.add(100 * MS, Pose.from_xyz_yaw(1, 0, 0, 0)) is False
    assert buffer.resets == 1
    assert len(buffer) == 1
    assert buffer.lookup(550 * MS, 200 * MS) is None  # the old timeline is gone
    assert buffer.lookup(150 * MS, 200 * MS).position[0] == pytest.approx(1.0)


def test_pose_buffer_is_bounded():
    buffer = PoseBuffer(capacity=10)
    for i in range(100):
        buffer.add(i * MS, Pose.from_xyz_yaw(i, 0, 0, 0))
    assert len(buffer) == 10
    assert buffer.stamps[0] == 90 * MS
    assert np.allclose(buffer.lookup(95 * MS, 0).position, (95, 0, 0))
    with pytest.raises(ValueError):
        PoseBuffer(capacity=1)
