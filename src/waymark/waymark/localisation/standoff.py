# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A pose to drive to for a located target: clear of it, facing it, on the seen side."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from waymark.localisation.estimate import VIEWPOINT, TargetEstimate
from waymark.localisation.params import LocalisationParams

FreeSpace = Callable[[float, float], bool]


@dataclass(frozen=True)
class StandoffPose:
    x: float
    y: float
    yaw: float  # facing the target
    at_viewpoint: bool  # no free standoff spot: the camera's own position


def standoff_goal(
    target: TargetEstimate,
    viewpoint_xy: tuple[float, float],
    params: LocalisationParams | None = None,
    is_free: FreeSpace | None = None,
    viewpoint_yaw: float = 0.0,
) -> StandoffPose:
    """`params.standoff_m` from the target toward the viewpoint (the side the camera saw it
    from), facing the target.

    With `is_free` (an occupancy map's test of a map position), spots are tried ring by
    ring outward from the standoff distance, each ring from the viewpoint's direction
    swinging to either side up to standoff_max_side_deg (a sign's back is behind its
    wall); none free, or a target that is only the viewpoint, gives the viewpoint, where
    the robot has stood. A failing `is_free` counts as occupied.
    """
    params = params or LocalisationParams()
    vx, vy = map(float, viewpoint_xy)
    if not (math.isfinite(vx) and math.isfinite(vy) and math.isfinite(viewpoint_yaw)):
        raise ValueError(f'viewpoint must be finite, got {viewpoint_xy}, yaw {viewpoint_yaw}')
    away = math.atan2(vy - target.y, vx - target.x)
    if target.method == VIEWPOINT or math.hypot(vx - target.x, vy - target.y) < 1e-6:
        return StandoffPose(vx, vy, viewpoint_yaw, True)
    for x, y in _candidates(target.x, target.y, away, params):
        if is_free is None or _free(is_free, x, y):
            return StandoffPose(x, y, math.atan2(target.y - y, target.x - x), False)
    return StandoffPose(vx, vy, math.atan2(target.y - vy, target.x - vx), True)


def _candidates(tx: float, ty: float, away: float, params: LocalisationParams):
    step = math.radians(params.standoff_angle_step_deg)
    swings = int(math.radians(params.standoff_max_side_deg) / step + 1e-9)
    offsets = [0.0] + [sign * i * step for i in range(1, swings + 1) for sign in (1, -1)]
    for ring in range(params.standoff_rings):
        radius = params.standoff_m + ring * params.standoff_ring_step_m
        for offset in offsets:
            yield tx + radius * math.cos(away + offset), ty + radius * math.sin(away + offset)


def _free(is_free: FreeSpace, x: float, y: float) -> bool:
    try:
        return bool(is_free(x, y))
    except (ValueError, IndexError, KeyError):
        return False
