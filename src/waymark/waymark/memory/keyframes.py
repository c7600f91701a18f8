# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Keyframe selection: keep a frame when enough time, travel or turning has passed.

Memory should grow with what the robot newly sees, not with the camera rate: a robot
standing still produces one keyframe per `max_interval_s`, a robot moving produces one
per `min_distance_m` or `min_rotation_deg`, never more often than `min_interval_s`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from waymark.geometry import Pose


@dataclass(frozen=True)
class KeyframePolicy:
    min_interval_s: float = 0.5
    max_interval_s: float = 10.0
    min_distance_m: float = 0.5
    min_rotation_deg: float = 20.0

    def __post_init__(self) -> None:
        for name in ('min_interval_s', 'max_interval_s', 'min_distance_m', 'min_rotation_deg'):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0.0:
                raise ValueError(
                    f'keyframe policy: {name} must be a finite number >= 0, got {value}'
                )
        if self.max_interval_s and self.max_interval_s < self.min_interval_s:
            raise ValueError(
                f'keyframe policy: max_interval_s ({self.max_interval_s}) must be 0 (off) '
                f'or >= min_interval_s ({self.min_interval_s})'
            )


class KeyframeSelector:
    """Applies a KeyframePolicy to a stream of (stamp, pose) in time order.

    Call `accept` once a candidate frame has actually been stored, so that a frame
    rejected later (say, an undecodable image) does not move the reference.
    """

    def __init__(self, policy: KeyframePolicy) -> None:
        self.policy = policy
        self._last_stamp_ns: int | None = None
        self._last_pose: Pose | None = None

    def reset(self) -> None:
        self._last_stamp_ns = None
        self._last_pose = None

    def wants(self, stamp_ns: int, pose: Pose) -> bool:
        if self._last_stamp_ns is None or self._last_pose is None:
            return True
        if stamp_ns < self._last_stamp_ns:
            # The clock went back (a looping bag): start over rather than wait it out.
            self.reset()
            return True
        elapsed = (stamp_ns - self._last_stamp_ns) * 1e-9
        if elapsed < self.policy.min_interval_s:
            return False
        if self.policy.max_interval_s and elapsed >= self.policy.max_interval_s:
            return True
        if self._last_pose.distance_to(pose) >= self.policy.min_distance_m:
            return True
        return math.degrees(self._last_pose.angle_to(pose)) >= self.policy.min_rotation_deg

    def accept(self, stamp_ns: int, pose: Pose) -> None:
        self._last_stamp_ns = stamp_ns
        self._last_pose = pose
