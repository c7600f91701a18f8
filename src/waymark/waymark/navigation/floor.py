# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Where the floor lies in the map frame, so that obstacle heights are above the floor.

A LIO SLAM's map frame starts where its sensor was at the first scan, so the map's z = 0
is the sensor's height, not the floor's. The point-cloud map's height band is given in
metres above the floor, and the map origin's height above the floor shifts every point
into it (grid.project_point_cloud's `origin_height_m`). That height is a measured
parameter, or it comes from TF: the z of a frame on the floor under the robot
(`base_footprint`) in the map frame, with the robot standing on the floor.
"""

from __future__ import annotations

import math

# A map origin further than this from the floor is a wrong frame, not a tall robot.
MAX_ORIGIN_HEIGHT_M = 10.0


def origin_height_from_floor(floor_z_m: float, max_abs_m: float = MAX_ORIGIN_HEIGHT_M) -> float:
    """The map origin's height above the floor, given the floor's z in the map frame.

    The floor lies `floor_z_m` along the map's z axis (negative when the map starts above
    it), so the origin is that far above it, with the sign turned. The map frame is taken
    to be level: a LIO's is its sensor's at start, so start it with the robot standing on
    level floor.
    """
    if not math.isfinite(floor_z_m):
        raise ValueError(f'floor height in the map frame is not finite: {floor_z_m}')
    if abs(floor_z_m) > max_abs_m:
        raise ValueError(
            f'the floor is {floor_z_m:+.2f} m from the map origin, beyond {max_abs_m:g} m: '
            'is the floor frame on the floor, and the map frame the SLAM map?'
        )
    return -floor_z_m
