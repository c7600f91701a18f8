# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The base's latest pose, the path length it has moved, the ground its track has covered
and the current map epoch, from the pose topic and capture_node's stats; shared by the
drive (distance) and the body (pose, recovery signals)."""

from __future__ import annotations

import math
import threading
import time

from geometry_msgs.msg import Pose as PoseMsg
from std_msgs.msg import Header, String

from waymark.geometry import Pose
from waymark.navigation.epochs import MapEpoch, parse_epoch
from waymark.tasks.coverage import Coverage, CoverageParams


class PoseUnavailableError(RuntimeError):
    """No pose, or one too old to act on."""


class PoseTrack:
    """Poses in another frame than `map_frame`, or not finite, are ignored; a pose older
    than `timeout_s` counts as none. Until the first pose arrives, `current` waits for it
    up to `timeout_s` (a task sent just after the node started); later, a stale pose fails
    at once."""

    def __init__(self, map_frame: str, timeout_s: float, coverage: CoverageParams) -> None:
        self.map_frame = map_frame
        self.timeout_s = timeout_s
        self._lock = threading.Condition()
        self._pose: Pose | None = None
        self._pose_at = 0.0  # monotonic seconds
        self._travelled_m = 0.0
        self._coverage = Coverage(coverage)
        self._epoch: MapEpoch | None = None
        self.epoch_error = ''  # why the last stats could not be read

    def on_pose(self, header: Header, msg: PoseMsg, _covariance) -> None:
        if header.frame_id and header.frame_id != self.map_frame:
            return
        p, q = msg.position, msg.orientation
        values = (p.x, p.y, p.z, q.x, q.y, q.z, q.w)
        if not all(map(math.isfinite, values)) or not any(values[3:]):
            return
        norm = math.sqrt(sum(v * v for v in values[3:]))
        pose = Pose((p.x, p.y, p.z), tuple(v / norm for v in values[3:]))
        with self._lock:
            if self._pose is not None:
                self._travelled_m += math.dist(self._pose.position[:2], pose.position[:2])
            self._pose, self._pose_at = pose, time.monotonic()
            self._coverage.add(p.x, p.y)
            self._lock.notify_all()

    def on_epoch(self, msg: String) -> None:
        try:
            epoch = parse_epoch(msg.data)
        except ValueError as error:
            self.epoch_error = f'map epoch stats unreadable: {error}'
            return
        if epoch is not None:
            with self._lock:
                self._epoch = epoch

    def odometer(self) -> float:
        """Path length the pose has moved since start (m)."""
        with self._lock:
            return self._travelled_m

    def explored_area_m2(self) -> float:
        """Area of the grid cells the track has passed through since start."""
        with self._lock:
            return self._coverage.area_m2()

    def coverage_mark(self) -> int:
        """Now, in the track's history: cells entered later are new to what follows."""
        with self._lock:
            return self._coverage.mark()

    def first_visit(self, pose: Pose, since: int) -> bool:
        """Whether `pose` lies in a cell the track had not entered before the mark `since`."""
        x, y, _ = pose.position
        with self._lock:
            return self._coverage.first_visit(x, y, since)

    def map_epoch(self) -> MapEpoch | None:
        """The (session, map epoch) capture_node last reported; None before it has one."""
        with self._lock:
            return self._epoch

    def fresh(self) -> Pose | None:
        """The latest pose, or None when there is none younger than `timeout_s`."""
        with self._lock:
            if self._pose is None or time.monotonic() - self._pose_at > self.timeout_s:
                return None
            return self._pose

    def current(self) -> Pose:
        with self._lock:
            self._lock.wait_for(lambda: self._pose is not None, self.timeout_s)
        pose = self.fresh()
        if pose is None:
            raise PoseUnavailableError(
                f'no pose of the base in {self.map_frame} within {self.timeout_s} s'
            )
        return pose
