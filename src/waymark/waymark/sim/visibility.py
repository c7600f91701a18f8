# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Whether a camera pose sees a sign: inside the field of view, in range, not behind a wall.

Scoring uses this because a memory answer is a viewpoint (where the robot stood when it
saw the target), so "correct" means the target is visible from the goal, not that the
goal coincides with the target.
"""

from __future__ import annotations

import math

import numpy as np

from waymark.geometry import Pose
from waymark.sim.world import Sign, World


def sees(world: World, camera: Pose, sign: Sign, hfov_deg: float, max_range_m: float = 8.0) -> bool:
    eye = np.asarray(camera.position[:2], dtype=float)
    target = np.asarray(sign.position[:2], dtype=float)
    offset = target - eye
    distance = float(np.linalg.norm(offset))
    if distance > max_range_m or distance < 1e-6:
        return False
    bearing = math.atan2(offset[1], offset[0]) - camera.yaw
    if abs(math.atan2(math.sin(bearing), math.cos(bearing))) > math.radians(hfov_deg) / 2:
        return False
    if float(np.dot(sign.normal, -offset)) <= 0.0:
        return False  # looking at the back of the wall the sign hangs on
    # Stop just short of the sign so the wall it hangs on does not count as a blocker.
    end = eye + offset * (1.0 - 0.1 / distance)
    return not any(_segments_cross(eye, end, np.asarray(w.a), np.asarray(w.b)) for w in world.walls)


def _segments_cross(p: np.ndarray, q: np.ndarray, a: np.ndarray, b: np.ndarray) -> bool:
    def side(o, u, v) -> float:
        return float((u[0] - o[0]) * (v[1] - o[1]) - (u[1] - o[1]) * (v[0] - o[0]))

    return side(p, q, a) * side(p, q, b) < 0 and side(a, b, p) * side(a, b, q) < 0
