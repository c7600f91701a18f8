# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Speed and acceleration limits of a planar velocity command (forward speed, yaw rate)."""

from __future__ import annotations

import math
from dataclasses import dataclass

Velocity = tuple[float, float]  # forward speed (m/s), yaw rate (rad/s)


@dataclass(frozen=True)
class VelocityLimits:
    max_linear: float  # m/s, either way
    max_angular: float  # rad/s, either way
    max_linear_accel: float  # m/s^2, speeding up and slowing down
    max_angular_accel: float  # rad/s^2

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'{name} must be finite and > 0, got {value}')

    def clamped(self, command: Velocity) -> Velocity:
        """The command within the speed limits."""
        return _clamp(command[0], self.max_linear), _clamp(command[1], self.max_angular)

    def ramped(self, previous: Velocity, target: Velocity, dt_s: float) -> Velocity:
        """The step from `previous` towards `target` that `dt_s` of acceleration allows."""
        if not (math.isfinite(dt_s) and dt_s >= 0.0):
            raise ValueError(f'dt_s must be finite and >= 0, got {dt_s}')
        linear = previous[0] + _clamp(target[0] - previous[0], self.max_linear_accel * dt_s)
        angular = previous[1] + _clamp(target[1] - previous[1], self.max_angular_accel * dt_s)
        return linear, angular


def _clamp(value: float, limit: float) -> float:
    return max(-limit, min(limit, value))
