# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Planar unicycle kinematics of the simulated base (sim_base_node) and of the test robots.

A command (v, w) held for dt moves the robot exactly along an arc of radius v / w (a
straight line when w is 0), so a simulation adds no integration error at any step size:
what a closed loop gets wrong is the controller's doing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

Pose2D = tuple[float, float, float]  # x (m), y (m), yaw (rad, in [-pi, pi])

_STRAIGHT_TURN_RAD = 1e-9  # below this, v / w would lose precision: drive straight
_BISECTIONS = 10  # finds an obstacle's boundary to within 1/1024 of a sampling step


def integrate_arc(x: float, y: float, yaw: float, v: float, w: float, dt: float) -> Pose2D:
    """The pose after driving forward at v (m/s) while turning at w (rad/s) for dt seconds.

    Non-finite input raises ValueError: one NaN would corrupt the pose for good.
    """
    if not all(math.isfinite(value) for value in (x, y, yaw, v, w, dt)):
        raise ValueError(f'non-finite input: pose ({x}, {y}, {yaw}), v {v}, w {w}, dt {dt}')
    turn = w * dt
    if abs(turn) < _STRAIGHT_TURN_RAD:
        x += v * dt * math.cos(yaw)
        y += v * dt * math.sin(yaw)
    else:
        radius = v / w
        x += radius * (math.sin(yaw + turn) - math.sin(yaw))
        y -= radius * (math.cos(yaw + turn) - math.cos(yaw))
    return x, y, math.remainder(yaw + turn, math.tau)


@dataclass(frozen=True)
class Motion:
    pose: Pose2D
    duration_s: float  # how long the command ran before an obstacle stopped it
    blocked: bool


def drive(
    pose: Pose2D,
    v: float,
    w: float,
    dt: float,
    is_free: Callable[[float, float], bool],
    step_m: float,
) -> Motion:
    """Hold (v, w) for dt unless the path enters a point `is_free` refuses; stop just before.

    The arc is sampled every `step_m` (keep it below the obstacle map's cell size) and the
    boundary found by bisection. A robot that starts on a refused point (placed in a wall, or
    the map changed under it) may drive out of it rather than be frozen there.
    """
    if not (math.isfinite(step_m) and step_m > 0):
        raise ValueError(f'step_m must be finite and > 0, got {step_m}')
    if not is_free(pose[0], pose[1]):
        return Motion(integrate_arc(*pose, v, w, dt), dt, blocked=False)
    # Only poses that passed is_free are returned: a pose a rounding error inside an obstacle
    # would count as starting in it, and the next step would drive on through.
    samples = max(1, math.ceil(abs(v) * dt / step_m))
    free_s, free_pose = 0.0, pose
    for i in range(1, samples + 1):
        t = dt if i == samples else dt * i / samples
        sample = integrate_arc(*pose, v, w, t)
        if is_free(sample[0], sample[1]):
            free_s, free_pose = t, sample
            continue
        blocked_s = t
        for _ in range(_BISECTIONS):
            middle = 0.5 * (free_s + blocked_s)
            sample = integrate_arc(*pose, v, w, middle)
            if is_free(sample[0], sample[1]):
                free_s, free_pose = middle, sample
            else:
                blocked_s = middle
        return Motion(free_pose, free_s, blocked=True)
    return Motion(free_pose, dt, blocked=False)
