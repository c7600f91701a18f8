# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Exact arc integration of the simulated base, and stopping at obstacles."""

from __future__ import annotations

import math

import pytest

from waymark.sim.kinematics import drive, integrate_arc


def test_straight_line_along_the_heading():
    x, y, yaw = integrate_arc(1.0, 2.0, math.pi / 2, 0.5, 0.0, 4.0)
    assert (x, y, yaw) == pytest.approx((1.0, 4.0, math.pi / 2), abs=1e-12)
    assert integrate_arc(0.0, 0.0, 0.0, -1.0, 0.0, 2.0) == pytest.approx((-2.0, 0.0, 0.0))


@pytest.mark.parametrize(('v', 'w'), [(1.0, 1.0), (0.5, -2.0), (-0.3, 0.7)])
def test_a_full_circle_returns_to_the_start(v, w):
    start = (3.0, -1.0, 0.4)
    assert integrate_arc(*start, v, w, math.tau / abs(w)) == pytest.approx(start, abs=1e-9)


def test_a_quarter_circle_ends_on_the_circle_of_radius_v_over_w():
    x, y, yaw = integrate_arc(0.0, 0.0, 0.0, 2.0, 1.0, math.pi / 2)  # radius 2, centre (0, 2)
    assert (x, y, yaw) == pytest.approx((2.0, 2.0, math.pi / 2), abs=1e-12)


def test_turning_in_place_and_yaw_wraps_to_minus_pi_pi():
    x, y, yaw = integrate_arc(1.0, 1.0, 3.0, 0.0, 1.0, 1.0)
    assert (x, y) == (1.0, 1.0)
    assert yaw == pytest.approx(4.0 - math.tau)


def test_matches_small_step_euler_integration():
    v, w, duration, steps = 0.8, 0.6, 5.0, 100_000
    x, y, yaw = 0.5, -0.5, 1.0
    dt = duration / steps
    for _ in range(steps):
        x += v * dt * math.cos(yaw)
        y += v * dt * math.sin(yaw)
        yaw += w * dt
    exact = integrate_arc(0.5, -0.5, 1.0, v, w, duration)
    assert exact[:2] == pytest.approx((x, y), abs=1e-4)
    assert exact[2] == pytest.approx(math.remainder(yaw, math.tau), abs=1e-9)


def test_any_step_size_gives_the_same_path():
    pose = (0.0, 0.0, 0.0)
    for _ in range(1000):
        pose = integrate_arc(*pose, 0.7, -0.9, 0.003)
    assert pose == pytest.approx(integrate_arc(0.0, 0.0, 0.0, 0.7, -0.9, 3.0), abs=1e-9)


@pytest.mark.parametrize(
    'bad', [(math.nan, 0.0, 0.1), (0.0, math.inf, 0.1), (1.0, 0.0, math.nan), (1.0, 1.0, math.inf)]
)
def test_non_finite_input_is_refused(bad):
    with pytest.raises(ValueError, match='non-finite'):
        integrate_arc(0.0, 0.0, 0.0, *bad)


def wall_at_x(x_wall: float):
    return lambda x, y: x < x_wall


def test_drive_without_obstacles_is_the_arc():
    motion = drive((0.0, 0.0, 0.0), 1.0, 0.5, 2.0, lambda x, y: True, 0.01)
    assert not motion.blocked and motion.duration_s == 2.0
    assert motion.pose == integrate_arc(0.0, 0.0, 0.0, 1.0, 0.5, 2.0)


def test_drive_stops_just_before_an_obstacle():
    motion = drive((0.0, 1.0, 0.0), 1.0, 0.0, 5.0, wall_at_x(2.0), 0.0125)
    assert motion.blocked
    assert 2.0 - 0.0125 / 512 < motion.pose[0] < 2.0
    assert motion.pose[1:] == (1.0, 0.0)
    assert motion.duration_s == pytest.approx(motion.pose[0])  # 1 m/s


def test_drive_against_an_obstacle_does_not_move_and_turning_away_is_free():
    at_wall = drive((0.0, 0.0, 0.0), 1.0, 0.0, 5.0, wall_at_x(2.0), 0.01).pose
    pushed = drive(at_wall, 1.0, 0.0, 0.1, wall_at_x(2.0), 0.01)
    assert pushed.blocked and 0 <= pushed.pose[0] - at_wall[0] < 1e-4
    turned = drive(at_wall, 0.0, 1.0, math.pi, wall_at_x(2.0), 0.01)
    assert not turned.blocked
    away = drive(turned.pose, 1.0, 0.0, 1.0, wall_at_x(2.0), 0.01)
    assert not away.blocked and away.pose[0] == pytest.approx(at_wall[0] - 1.0)


def test_an_arc_into_an_obstacle_stops_on_the_arc():
    motion = drive((0.0, 0.0, 0.0), 1.0, 1.0, math.pi, lambda x, y: y < 1.5, 0.01)
    x, y, yaw = motion.pose
    assert motion.blocked and 1.5 - 1e-4 < y < 1.5
    assert math.hypot(x, y - 1.0) == pytest.approx(1.0)  # on the unit circle around (0, 1)
    assert yaw == pytest.approx(motion.duration_s)


def test_a_robot_inside_an_obstacle_may_drive_out():
    def free(x: float, y: float) -> bool:
        return not 2.0 <= x < 3.5  # a wall 1.5 m thick, the robot 1 m into it

    motion = drive((3.0, 0.0, 0.0), 1.0, 0.0, 1.0, free, 0.01)
    assert not motion.blocked and motion.pose[0] == pytest.approx(4.0)


def test_drive_refuses_a_bad_step():
    with pytest.raises(ValueError, match='step_m'):
        drive((0.0, 0.0, 0.0), 1.0, 0.0, 1.0, lambda x, y: True, 0.0)
