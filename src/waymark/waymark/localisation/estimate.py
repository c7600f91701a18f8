# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The result of target localisation, shared by the agent, the nodes and the evaluation."""

from __future__ import annotations

import math
from dataclasses import dataclass

# How a target position was found, from the most to the least certain.
ROBOT = 'robot'  # the question asked where the robot was: the keyframe's own pose
DEPTH = 'depth'  # bearing of the matched region, ranged by the depth camera
TRIANGULATED = 'triangulated'  # bearings from several keyframes, least squares
BEARING = 'bearing'  # one bearing and an assumed range
VIEWPOINT = 'viewpoint'  # only where the camera stood
METHODS = (ROBOT, DEPTH, TRIANGULATED, BEARING, VIEWPOINT)


@dataclass(frozen=True)
class TargetEstimate:
    """A target's position in the map frame of `session`'s `map_epoch`.

    `sigma_m` is the horizontal 1-sigma uncertainty: small for depth, the least-squares
    residual and geometry for triangulation, and the camera's viewing range for a bare
    viewpoint, so a caller can tell a located thing from a guess.
    """

    x: float
    y: float
    z: float
    sigma_m: float
    method: str
    map_epoch: int = 0
    session: str = ''
    residual_m: float | None = None  # RMS miss of the bearings (triangulation only)
    sources: tuple[str, ...] = ()  # ids of the memory entries used

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f'method must be one of {METHODS}, got {self.method!r}')
        if not all(math.isfinite(v) for v in (self.x, self.y, self.z, self.sigma_m)):
            raise ValueError('a target estimate must be finite')
        if self.sigma_m < 0:
            raise ValueError(f'sigma_m must be >= 0, got {self.sigma_m}')
