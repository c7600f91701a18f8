# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Poses, SE(3) interpolation and the time-indexed pose buffer.

Quaternions are (x, y, z, w), as in geometry_msgs. Stamps are integer nanoseconds
(UTC), as in message headers, so no precision is lost in long sessions.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation, Slerp


class InvalidPoseError(ValueError):
    """A pose with non-finite values or a degenerate quaternion."""


@dataclass(frozen=True)
class Pose:
    """A rigid transform: position in metres and unit quaternion (x, y, z, w)."""

    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    orientation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)

    @classmethod
    def checked(cls, position, orientation) -> Pose:
        """Build a pose from untrusted numbers: reject NaN/inf, normalise the quaternion."""
        p = np.asarray(position, dtype=float).reshape(3)
        q = np.asarray(orientation, dtype=float).reshape(4)
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(q))):
            raise InvalidPoseError(
                f'non-finite pose: position={p.tolist()}, orientation={q.tolist()}'
            )
        norm = float(np.linalg.norm(q))
        if norm < 1e-6:
            raise InvalidPoseError(f'degenerate quaternion {q.tolist()}')
        q = q / norm
        return cls(tuple(p.tolist()), tuple(q.tolist()))

    @classmethod
    def from_xyz_yaw(cls, x: float, y: float, z: float, yaw: float) -> Pose:
        return cls((float(x), float(y), float(z)), quaternion_from_yaw(yaw))

    @property
    def rotation(self) -> Rotation:
        return Rotation.from_quat(self.orientation)

    @property
    def yaw(self) -> float:
        return yaw_from_quaternion(self.orientation)

    def compose(self, other: Pose) -> Pose:
        """self * other: express `other` (given in self's frame) in self's parent frame."""
        rot = self.rotation
        position = np.asarray(self.position) + rot.apply(other.position)
        orientation = (rot * other.rotation).as_quat()
        return Pose(tuple(position.tolist()), tuple(orientation.tolist()))

    def distance_to(self, other: Pose) -> float:
        return float(np.linalg.norm(np.subtract(self.position, other.position)))

    def angle_to(self, other: Pose) -> float:
        """Rotation angle between the two orientations, in radians."""
        return float((self.rotation.inv() * other.rotation).magnitude())


def yaw_from_quaternion(q) -> float:
    x, y, z, w = q
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def quaternion_from_yaw(yaw: float) -> tuple[float, float, float, float]:
    return (0.0, 0.0, math.sin(yaw / 2.0), math.cos(yaw / 2.0))


def interpolate(a: Pose, b: Pose, fraction: float) -> Pose:
    """SE(3) interpolation: linear in position, spherical (slerp) in rotation."""
    position = (1.0 - fraction) * np.asarray(a.position) + fraction * np.asarray(b.position)
    slerp = Slerp([0.0, 1.0], Rotation.from_quat([a.orientation, b.orientation]))
    orientation = slerp([fraction]).as_quat()[0]
    return Pose(tuple(position.tolist()), tuple(orientation.tolist()))


@dataclass
class PoseBuffer:
    """Recent poses by stamp, for looking up the pose at an image's acquisition time.

    Poses must arrive in time order. A pose older than the newest one means the clock
    jumped back (a looping bag, a restarted driver): the buffer is cleared and the
    count in `resets` goes up, rather than mixing two timelines.
    """

    capacity: int = 2000
    stamps: list[int] = field(default_factory=list)
    poses: deque[Pose] = field(default_factory=deque)
    resets: int = 0

    def __post_init__(self) -> None:
        if self.capacity < 2:
            raise ValueError('PoseBuffer capacity must be at least 2')

    def add(self, stamp_ns: int, pose: Pose) -> bool:
        """Insert a pose; returns False when it caused a reset (time went backwards)."""
        ok = True
        if self.stamps and stamp_ns < self.stamps[-1]:
            self.clear()
            self.resets += 1
            ok = False
        elif self.stamps and stamp_ns == self.stamps[-1]:
            self.poses[-1] = pose
            return True
        self.stamps.append(stamp_ns)
        self.poses.append(pose)
        if len(self.stamps) > self.capacity:
            del self.stamps[0]
            self.poses.popleft()
        return ok

    def clear(self) -> None:
        self.stamps.clear()
        self.poses.clear()

    def __len__(self) -> int:
        return len(self.stamps)

    @property
    def newest_stamp(self) -> int | None:
        return self.stamps[-1] if self.stamps else None

    def lookup(self, stamp_ns: int, max_gap_ns: int) -> Pose | None:
        """The pose at `stamp_ns`, or None when no pose lies within `max_gap_ns`.

        Between two poses the result is interpolated only if both are within the gap of
        the stamp; a single neighbour within the gap is used as is (no extrapolation).
        """
        if not self.stamps:
            return None
        i = bisect.bisect_left(self.stamps, stamp_ns)
        if i < len(self.stamps) and self.stamps[i] == stamp_ns:
            return self.poses[i]
        before = i - 1 if i > 0 else None
        after = i if i < len(self.stamps) else None
        if before is not None and after is not None:
            t0, t1 = self.stamps[before], self.stamps[after]
            if stamp_ns - t0 <= max_gap_ns and t1 - stamp_ns <= max_gap_ns:
                return interpolate(
                    self.poses[before], self.poses[after], (stamp_ns - t0) / (t1 - t0)
                )
        for j in (before, after):
            if j is not None and abs(self.stamps[j] - stamp_ns) <= max_gap_ns:
                return self.poses[j]
        return None
