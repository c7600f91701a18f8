# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import pytest

from waymark.navigation.follower import (
    STOP,
    FollowerOutput,
    FollowerParams,
    FollowerStatus,
    PathFollower,
    wrap_angle,
)
from waymark_testing.unicycle import Unicycle

DT = 0.05
PARAMS = FollowerParams()
RUNNING = FollowerStatus.RUNNING


@dataclass
class Trace:
    times: list[float] = field(default_factory=list)
    poses: list[tuple[float, float, float]] = field(default_factory=list)
    outputs: list[FollowerOutput] = field(default_factory=list)

    @property
    def last(self) -> FollowerOutput:
        return self.outputs[-1]


def drive(
    follower: PathFollower, robot: Unicycle, t0: float = 0.0, duration: float = 60.0
) -> Trace:
    """Close the loop at 20 Hz with fresh poses until the follower stops (or time is up)."""
    trace = Trace()
    t = t0
    while t < t0 + duration:
        out = follower.update(*robot.pose, pose_stamp_s=t, now_s=t)
        trace.times.append(t)
        trace.poses.append(robot.pose)
        trace.outputs.append(out)
        if out.status is not RUNNING:
            break
        robot.step(out.command.linear, out.command.angular, DT)
        t += DT
    return trace


def densify(corners: list[tuple[float, float]], step: float = 0.05) -> list[tuple[float, float]]:
    """Waypoints every `step` metres along a polyline, like an A* path on a 5 cm grid."""
    points = [corners[0]]
    for a, b in itertools.pairwise(corners):
        n = max(1, round(math.dist(a, b) / step))
        points += [
            (a[0] + (b[0] - a[0]) * k / n, a[1] + (b[1] - a[1]) * k / n) for k in range(1, n + 1)
        ]
    return points


def distance_to_polyline(point, corners) -> float:
    p = np.asarray(point[:2])
    best = math.inf
    for a, b in itertools.pairwise(corners):
        a, b = np.asarray(a), np.asarray(b)
        t = np.clip(np.dot(p - a, b - a) / np.dot(b - a, b - a), 0.0, 1.0)
        best = min(best, float(np.linalg.norm(p - (a + t * (b - a)))))
    return best


def assert_within_limits(trace: Trace, params: FollowerParams = PARAMS) -> None:
    """Speeds within limits, and every step between running commands (from rest at the
    start) within the acceleration limits over the time between the updates."""
    eps = 1e-9
    previous, previous_t = STOP, trace.times[0]
    for t, out in zip(trace.times, trace.outputs, strict=True):
        if out.status is not RUNNING:
            assert out.command == STOP
            continue
        v, w = out.command.linear, out.command.angular
        assert 0.0 <= v <= params.max_linear + eps
        assert abs(w) <= params.max_angular + eps
        dt = min(t - previous_t, params.max_dt_s)
        assert abs(v - previous.linear) <= params.max_linear_accel * dt + eps
        assert abs(w - previous.angular) <= params.max_angular_accel * dt + eps
        previous, previous_t = out.command, t


def arrive(
    corners, robot: Unicycle, goal_yaw=None, params=PARAMS, duration=60.0, dense=True
) -> Trace:
    follower = PathFollower(params)
    follower.start(densify(corners) if dense else corners, goal_yaw, now_s=0.0)
    trace = drive(follower, robot, duration=duration)
    assert trace.last.status is FollowerStatus.ARRIVED, trace.last
    assert math.dist(robot.pose[:2], corners[-1]) <= params.goal_tolerance_m
    assert trace.last.command == STOP
    assert_within_limits(trace, params)
    return trace


def test_wrap_angle_is_in_half_open_interval():
    assert wrap_angle(math.pi) == math.pi
    assert wrap_angle(-math.pi) == math.pi
    assert wrap_angle(1.5 * math.pi) == pytest.approx(-0.5 * math.pi)
    assert wrap_angle(-7.0) == pytest.approx(-7.0 + math.tau)


def test_follows_an_l_shaped_a_star_path():
    corners = [(0.0, 0.0), (3.0, 0.0), (3.0, 2.0)]
    trace = arrive(corners, Unicycle())
    assert trace.times[-1] < 16.0  # 5 m at 0.5 m/s plus a corner and the ramps
    assert max(distance_to_polyline(p, corners) for p in trace.poses) < 0.25
    indices = [out.waypoint_index for out in trace.outputs]
    assert indices == sorted(indices)
    remaining = [out.distance_remaining_m for out in trace.outputs]
    assert remaining[0] == pytest.approx(5.0, abs=0.05)
    assert remaining[-1] <= PARAMS.goal_tolerance_m


def test_follows_a_sparse_zig_zag_with_a_noisy_gait():
    corners = [(0.0, 0.0), (1.0, 1.0), (2.0, -1.0), (3.0, 1.0), (4.0, 0.0)]
    trace = arrive(corners, Unicycle(velocity_noise=0.1, seed=3), dense=False)
    assert trace.times[-1] < 30.0
    assert max(distance_to_polyline(p, corners) for p in trace.poses) < 0.4


def test_turns_in_place_when_the_goal_is_behind():
    robot = Unicycle(yaw=0.0)
    trace = arrive([(0.0, 0.0), (-2.0, 0.0)], robot)
    turning = [
        (pose, out)
        for pose, out in zip(trace.poses, trace.outputs, strict=True)
        if abs(wrap_angle(math.pi - pose[2])) >= PARAMS.turn_in_place_rad
    ]
    assert len(turning) > 20
    assert all(out.command.linear == 0.0 for _, out in turning)
    assert all(math.hypot(pose[0], pose[1]) < 1e-9 for pose, _ in turning)


def test_aligns_to_the_goal_yaw_at_the_end():
    robot = Unicycle()
    trace = arrive([(0.0, 0.0), (2.0, 0.0)], robot, goal_yaw=math.pi / 2)
    assert abs(wrap_angle(robot.yaw - math.pi / 2)) <= PARAMS.yaw_tolerance_rad
    at_goal = [
        out
        for pose, out in zip(trace.poses, trace.outputs, strict=True)
        if math.dist(pose[:2], (2.0, 0.0)) <= PARAMS.goal_tolerance_m
    ]
    assert len(at_goal) > 10  # it stood at the goal, turning
    assert all(out.command.linear == 0.0 for out in at_goal[-10:])


def test_a_robot_that_does_not_move_is_stuck():
    robot = Unicycle()
    robot.blocked = True
    follower = PathFollower()
    follower.start(densify([(0.0, 0.0), (3.0, 1.0)]), None, now_s=0.0)
    trace = drive(follower, robot)
    assert trace.last.status is FollowerStatus.STUCK
    assert PARAMS.progress_window_s < trace.times[-1] < PARAMS.progress_window_s + 0.2
    assert trace.last.command == STOP
    assert not follower.active


def test_a_robot_blocked_mid_way_is_stuck_even_while_replanning():
    robot = Unicycle()
    follower = PathFollower()
    path = densify([(0.0, 0.0), (4.0, 0.0)])
    follower.start(path, None, now_s=0.0)
    drive(follower, robot, duration=3.0)
    robot.blocked = True
    t, status = 3.0, RUNNING
    while status is RUNNING and t < 20.0:
        if round(t / DT) % 20 == 0:  # a replan every second
            follower.replace_path(densify([robot.pose[:2], (4.0, 0.0)]))
        status = follower.update(*robot.pose, t, t).status
        t += DT
    assert status is FollowerStatus.STUCK
    assert t < 3.0 + PARAMS.progress_window_s + 1.0


def test_times_out():
    follower = PathFollower(FollowerParams(timeout_s=3.0))
    follower.start(densify([(0.0, 0.0), (10.0, 0.0)]), None, now_s=0.0)
    trace = drive(follower, Unicycle())
    assert trace.last.status is FollowerStatus.TIMED_OUT
    assert 3.0 < trace.times[-1] <= 3.0 + DT + 1e-9
    assert trace.last.command == STOP


def test_stale_pose_stops_and_fresh_pose_resumes():
    robot = Unicycle()
    follower = PathFollower()
    follower.start(densify([(0.0, 0.0), (3.0, 0.0)]), None, now_s=0.0)
    drive(follower, robot, duration=2.0)
    moving = follower.update(*robot.pose, 2.0, 2.0)
    assert moving.command.linear > 0.3
    stale = follower.update(*robot.pose, pose_stamp_s=2.0, now_s=2.0 + 0.6)
    assert stale.status is FollowerStatus.STALE_POSE and stale.command == STOP
    assert follower.active
    resumed = follower.update(*robot.pose, 2.7, 2.7)
    assert resumed.status is RUNNING
    assert 0.0 <= resumed.command.linear <= PARAMS.max_linear_accel * 0.1 + 1e-9
    trace = drive(follower, robot, t0=2.7)
    assert trace.last.status is FollowerStatus.ARRIVED


def test_timeout_fires_while_poses_are_stale():
    follower = PathFollower(FollowerParams(timeout_s=3.0))
    follower.start([(5.0, 0.0)], None, now_s=0.0)
    assert follower.update(0.0, 0.0, 0.0, 0.0, 1.0).status is FollowerStatus.STALE_POSE
    assert follower.update(0.0, 0.0, 0.0, 0.0, 3.5).status is FollowerStatus.TIMED_OUT


def test_cancel_gives_zero_command():
    robot = Unicycle()
    follower = PathFollower()
    follower.start(densify([(0.0, 0.0), (3.0, 0.0)]), None, now_s=0.0)
    drive(follower, robot, duration=2.0)
    follower.cancel()
    out = follower.update(*robot.pose, 2.0, 2.0)
    assert out.status is FollowerStatus.CANCELED and out.command == STOP
    assert follower.update(*robot.pose, 2.1, 2.1).status is FollowerStatus.CANCELED
    with pytest.raises(RuntimeError, match='no path'):
        follower.replace_path([(1.0, 1.0)])


def test_idle_before_start():
    out = PathFollower().update(0.0, 0.0, 0.0, 0.0, 0.0)
    assert out.status is FollowerStatus.IDLE and out.command == STOP


@pytest.mark.parametrize('bad', [math.nan, math.inf, -math.inf])
def test_non_finite_inputs_never_produce_a_non_finite_command(bad):
    robot = Unicycle()
    follower = PathFollower()
    follower.start(densify([(0.0, 0.0), (3.0, 0.0)]), None, now_s=0.0)
    drive(follower, robot, duration=1.0)
    x, y, yaw = robot.pose
    for args in [
        (bad, y, yaw, 1.0, 1.0),
        (x, bad, yaw, 1.0, 1.0),
        (x, y, bad, 1.0, 1.0),
        (x, y, yaw, bad, 1.0),
        (x, y, yaw, 1.0, bad),
    ]:
        out = follower.update(*args)
        assert out.status is FollowerStatus.STALE_POSE and out.command == STOP
    out = follower.update(x, y, yaw, 1.05, 1.05)
    assert out.status is RUNNING
    assert all(math.isfinite(v) for v in (out.command.linear, out.command.angular))


def test_absurd_finite_poses_never_produce_a_non_finite_command():
    follower = PathFollower(FollowerParams(kd_distance=0.0))
    follower.start([(0.0, 0.0)], None, now_s=0.0)
    for t, x in [(0.0, 1e300), (1e-9, -1e300), (0.05, 1e308)]:
        out = follower.update(x, -x, 1e300, t, t)
        assert all(math.isfinite(v) for v in (out.command.linear, out.command.angular))


@pytest.mark.parametrize(
    'waypoints', [[], [(0.0, math.nan)], [(0.0, 0.0), (math.inf, 1.0)]], ids=str
)
def test_bad_paths_are_refused(waypoints):
    with pytest.raises(ValueError, match='path'):
        PathFollower().start(waypoints, None, now_s=0.0)


def test_a_long_gap_between_updates_cannot_jolt():
    robot = Unicycle()
    follower = PathFollower()
    follower.start(densify([(0.0, 0.0), (0.0, 5.0)]), None, now_s=0.0)
    first = follower.update(*robot.pose, 0.0, 0.0)
    late = follower.update(*robot.pose, 10.0, 10.0)
    assert abs(late.command.angular - first.command.angular) <= (
        PARAMS.max_angular_accel * PARAMS.max_dt_s + 1e-9
    )


def test_heading_derivative_wraps_across_pi():
    params = FollowerParams(kp_heading=1e-3, kd_heading=1.0, max_angular_accel=1e3)
    follower = PathFollower(params)
    follower.start([(-2.0, 0.0)], None, now_s=0.0)
    follower.update(0.0, 0.0, 0.01, 0.0, 0.0)  # heading error pi - 0.01
    out = follower.update(0.0, 0.0, -0.01, DT, DT)  # error -pi + 0.01: it moved 0.02 rad
    assert abs(out.command.angular) < 0.5


def test_replace_path_mid_way_keeps_velocity_and_arrives():
    robot = Unicycle()
    follower = PathFollower()
    follower.start(densify([(0.0, 0.0), (4.0, 0.0)]), None, now_s=0.0)
    before = drive(follower, robot, duration=3.0)
    detour = [robot.pose[:2], (2.5, 0.8), (4.0, 0.8), (4.0, 0.0)]
    follower.replace_path(densify(detour))
    after = drive(follower, robot, t0=3.0)
    assert after.last.status is FollowerStatus.ARRIVED
    assert math.dist(robot.pose[:2], (4.0, 0.0)) <= PARAMS.goal_tolerance_m
    joined = Trace(
        before.times + after.times, before.poses + after.poses, before.outputs + after.outputs
    )
    assert_within_limits(joined)
    assert max(p[1] for p in after.poses) > 0.6  # it took the detour


def test_start_while_moving_keeps_velocity():
    robot = Unicycle()
    follower = PathFollower()
    follower.start(densify([(0.0, 0.0), (4.0, 0.0)]), None, now_s=0.0)
    before = drive(follower, robot, duration=3.0)
    follower.start(densify([robot.pose[:2], (5.0, 1.0)]), None, now_s=3.0)
    after = drive(follower, robot, t0=3.0)
    assert after.last.status is FollowerStatus.ARRIVED
    assert_within_limits(
        Trace(
            before.times + after.times, before.poses + after.poses, before.outputs + after.outputs
        )
    )


@pytest.mark.parametrize(
    ('name', 'value'),
    [
        ('max_linear', 0.0),
        ('max_angular', -1.0),
        ('max_linear_accel', math.nan),
        ('kd_heading', -0.1),
        ('kp_distance', math.inf),
        ('pose_timeout_s', 0.0),
        ('turn_in_place_rad', 4.0),
        ('goal_tolerance_m', 1.0),
    ],
)
def test_params_are_validated(name, value):
    with pytest.raises(ValueError, match=name):
        FollowerParams(**{name: value})
