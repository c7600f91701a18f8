# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The limits of target localisation, one place, checked when made."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class LocalisationParams:
    """Every bound of localisation and of the standoff search, with sane defaults."""

    # Text matching: a box must cover this share of its words with the query's words.
    min_text_score: float = 0.5
    # Another keyframe saw the same thing when its best box reads this alike (0..1).
    same_text_ratio: float = 0.8
    # Triangulation.
    max_rays: int = 8
    min_baseline_m: float = 0.3  # spread of the camera positions used
    min_ray_angle_deg: float = 3.0  # widest angle between two rays used
    min_range_m: float = 0.2  # a target nearer than this to a camera is behind it
    max_range_m: float = 15.0
    max_residual_m: float = 1.0  # RMS miss above which the rays disagree: no triangulation
    bearing_sigma_deg: float = 1.0  # noise of one bearing (pixel centre, pose yaw)
    # Depth: the floor of the range uncertainty.
    depth_sigma_m: float = 0.05
    # One bearing with no range: assumed distance along it and its 1-sigma.
    assumed_range_m: float = 2.5
    assumed_range_sigma_m: float = 1.5
    # Only the viewpoint: how far a camera typically sees what it matched.
    viewing_range_m: float = 3.0
    # Goal pose: distance kept from the target, and the search for a free spot.
    standoff_m: float = 1.0
    standoff_ring_step_m: float = 0.25
    standoff_rings: int = 4
    standoff_angle_step_deg: float = 15.0
    standoff_max_side_deg: float = 90.0  # from the viewpoint's side; a wall sign's back is off

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not math.isfinite(value) or value < 0:
                raise ValueError(f'{item.name} must be a finite number >= 0, got {value!r}')
        for name in ('min_text_score', 'same_text_ratio'):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f'{name} must be in (0, 1], got {getattr(self, name)}')
        if not isinstance(self.max_rays, int) or not 2 <= self.max_rays <= 64:
            raise ValueError(f'max_rays must be an integer in [2, 64], got {self.max_rays!r}')
        if not isinstance(self.standoff_rings, int) or not 1 <= self.standoff_rings <= 20:
            raise ValueError(
                f'standoff_rings must be an integer in [1, 20], got {self.standoff_rings!r}'
            )
        if not self.min_range_m < self.assumed_range_m <= self.max_range_m <= 100.0:
            raise ValueError('need min_range_m < assumed_range_m <= max_range_m <= 100')
        if not 0.0 < self.min_ray_angle_deg < 90.0 or not 0.0 < self.bearing_sigma_deg <= 30.0:
            raise ValueError('min_ray_angle_deg must be in (0, 90), bearing_sigma_deg in (0, 30]')
        if not 0.0 < self.standoff_angle_step_deg <= self.standoff_max_side_deg <= 180.0:
            raise ValueError('need 0 < standoff_angle_step_deg <= standoff_max_side_deg <= 180')
        if self.standoff_m > 10.0 or self.standoff_ring_step_m <= 0.0:
            raise ValueError('standoff_m must be at most 10 and standoff_ring_step_m positive')
        for name in ('max_residual_m', 'depth_sigma_m', 'viewing_range_m', 'assumed_range_sigma_m'):
            if getattr(self, name) <= 0.0:
                raise ValueError(f'{name} must be positive')
