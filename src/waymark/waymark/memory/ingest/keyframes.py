# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Keyframe selection: keep a frame when enough time, travel, turning or new sight has passed.

Memory should grow with what the robot newly sees, not with the camera rate: a robot
standing still produces one keyframe per `max_interval_s`, a robot moving produces one
per `min_distance_m` or `min_rotation_deg`, never more often than `min_interval_s`.

Poses miss what changes in front of a still camera (a door opens, a person walks in) and
are missing altogether while SLAM has lost track. The optional image criterion covers
both: a frame is kept when its small grayscale thumbnail differs enough from the last
keyframe's. The thumbnail is asked for lazily, only when the criterion is on, the frame is
past `min_interval_s` and neither time nor pose already decided, so the cost is one
reduced decode per such frame and none at all with the criterion off (the default).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from waymark.geometry import Pose
from waymark.settings import setting

# Produces a frame's grayscale thumbnail (float values in [0, 1], the same shape for
# every frame); raises ValueError when the image cannot be decoded.
Thumbnail = Callable[[], np.ndarray]


def image_change(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute difference of two thumbnails, in [0, 1], after removing each one's
    mean brightness: auto-exposure brightening the whole view is not a new view."""
    return float(np.mean(np.abs((a - a.mean()) - (b - b.mean()))))


@dataclass(frozen=True)
class KeyframePolicy:
    """When a frame becomes a keyframe. 0 turns a criterion off (min_interval_s: no cap).

    `min_image_change` is the mean absolute difference of 32x24 grayscale thumbnails with
    their mean brightness removed (see `image_change`), in [0, 1]. 0.05 is a good start:
    in waymark's synthetic building, sensor noise stays under 0.005 and a 15 % exposure
    change under 0.02, while a 20-30 degree turn or 1-2 m of travel gives 0.04-0.06.
    Real, more textured scenes give larger values for the same motion.
    """

    min_interval_s: float = setting(
        0.5, 'Never two keyframes closer in time.', low=0.0, high=3600.0, live=True
    )
    max_interval_s: float = setting(
        10.0,
        'Always a keyframe after this long (0: off); also the rate of keyframes while '
        'tracking is lost.',
        low=0.0,
        high=86400.0,
        live=True,
    )
    min_distance_m: float = setting(
        0.5, 'Travel that triggers a keyframe.', low=0.0, high=1000.0, live=True
    )
    min_rotation_deg: float = setting(
        20.0, 'Turn that triggers a keyframe.', low=0.0, high=360.0, live=True
    )
    min_image_change: float = setting(
        0.0,
        'Change of the 32x24 grayscale thumbnail since the last keyframe (mean absolute '
        'difference, brightness removed) that triggers a keyframe; 0: off, 0.05: a good start.',
        low=0.0,
        high=1.0,
        live=True,
    )

    def __post_init__(self) -> None:
        for name in (
            'min_interval_s',
            'max_interval_s',
            'min_distance_m',
            'min_rotation_deg',
            'min_image_change',
        ):
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
        if self.min_image_change > 1.0:
            raise ValueError(
                f'keyframe policy: min_image_change is a fraction in [0, 1], '
                f'got {self.min_image_change}'
            )


class KeyframeSelector:
    """Applies a KeyframePolicy to a stream of (stamp, pose) in time order.

    A pose of None means the frame has no trustworthy pose (SLAM lost track): only time
    and image change can select it, and the first located frame after it is always kept,
    since nothing says how far the robot went meanwhile. `reason` names the criterion that
    made the last `wants` say yes ('first', 'time', 'distance', 'rotation', 'relocated',
    'image_change').

    Call `accept` once a candidate frame has actually been stored, so that a frame
    rejected later (say, an undecodable image) does not move the reference.
    """

    def __init__(self, policy: KeyframePolicy) -> None:
        self.policy = policy
        self.reason = ''
        self._last_stamp_ns: int | None = None
        self._last_pose: Pose | None = None
        self._last_thumbnail: np.ndarray | None = None

    def reset(self) -> None:
        self._last_stamp_ns = None
        self._last_pose = None
        self._last_thumbnail = None

    def wants(self, stamp_ns: int, pose: Pose | None, thumbnail: Thumbnail | None = None) -> bool:
        """Whether the frame should be kept. Raises the thumbnail's ValueError, if asked."""
        self.reason = self._decide(stamp_ns, pose, thumbnail)
        return bool(self.reason)

    def _decide(self, stamp_ns: int, pose: Pose | None, thumbnail: Thumbnail | None) -> str:
        if self._last_stamp_ns is None:
            return 'first'
        if stamp_ns < self._last_stamp_ns:
            # The clock went back (a looping bag): start over rather than wait it out.
            self.reset()
            return 'first'
        elapsed = (stamp_ns - self._last_stamp_ns) * 1e-9
        if elapsed < self.policy.min_interval_s:
            return ''
        if self.policy.max_interval_s and elapsed >= self.policy.max_interval_s:
            return 'time'
        if pose is not None:
            if self._last_pose is None:
                return 'relocated'
            if self._last_pose.distance_to(pose) >= self.policy.min_distance_m:
                return 'distance'
            if math.degrees(self._last_pose.angle_to(pose)) >= self.policy.min_rotation_deg:
                return 'rotation'
        reference = self._last_thumbnail
        changed = (
            self.policy.min_image_change
            and thumbnail is not None
            and reference is not None
            and image_change(thumbnail(), reference) > self.policy.min_image_change
        )
        return 'image_change' if changed else ''

    def accept(self, stamp_ns: int, pose: Pose | None, thumbnail: Thumbnail | None = None) -> None:
        """Make the frame the new reference. Its thumbnail is taken only with the image
        criterion on (raises its ValueError)."""
        keep = self.policy.min_image_change and thumbnail is not None
        self._last_thumbnail = thumbnail() if keep else None
        self._last_stamp_ns = stamp_ns
        self._last_pose = pose
