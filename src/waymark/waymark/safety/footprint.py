# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The box just ahead of the robot that must be empty for it to walk forward.

Points are in the body frame (x forward, y left, z up), whose origin stands
`body_height_m` above the floor; the box's heights are measured from the floor, so that
the floor itself (and a body that crouches) never counts as an obstacle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Footprint:
    ahead_from_m: float  # along x from the body origin: where the box starts (the body's front)
    ahead_to_m: float  # where it ends
    width_m: float  # across, centred on the body's x axis
    h_min_m: float  # above the floor: lower points are floor and noise
    h_max_m: float  # above the floor: higher points pass over the robot
    body_height_m: float  # the body frame's origin above the floor

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not math.isfinite(value):
                raise ValueError(f'{name} must be finite, got {value}')
        if self.ahead_to_m <= self.ahead_from_m:
            raise ValueError('the box must end (ahead_to_m) beyond where it starts (ahead_from_m)')
        if self.width_m <= 0.0:
            raise ValueError(f'width_m must be > 0, got {self.width_m}')
        if self.h_max_m <= self.h_min_m:
            raise ValueError('h_max_m must be above h_min_m')

    def count_inside(self, points: np.ndarray) -> int:
        """How many of the (N, 3) body-frame points lie in the box; non-finite ones do not."""
        pts = np.asarray(points, dtype=float)
        if pts.ndim != 2 or pts.shape[1] != 3:
            raise ValueError(f'points must be (N, 3), got shape {pts.shape}')
        x, y, height = pts[:, 0], pts[:, 1], pts[:, 2] + self.body_height_m
        with np.errstate(invalid='ignore'):  # NaN compares False: outside
            inside = (
                (x >= self.ahead_from_m)
                & (x <= self.ahead_to_m)
                & (np.abs(y) <= self.width_m / 2.0)
                & (height >= self.h_min_m)
                & (height <= self.h_max_m)
            )
        return int(np.count_nonzero(inside))
