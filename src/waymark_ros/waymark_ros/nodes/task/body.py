# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`Body` over the pose track, the camera and navigator_node's GoTo action.

Stop views are taken by turning in place with GoTo goals at the stop's position and the
view headings, not by publishing on cmd_vel: the navigator's follower and the safety node
after it stay between the task layer and the motors. After each turn the first camera
frame that arrives is the view; a turn the navigator does not complete gives no view.
Camera frames are also kept, at most one per `frame_period_s`, in a ring of
`ring_length`, for the judge's earlier frames.

Recovery signals are measured on the pose track: the explored area is that of the grid
cells the track has passed through since the node started, a first visit is a current
cell the track had not entered before the task began (`begin_task`), and tracking counts
as lost when the pose is older than the track's timeout. Before capture_node has reported
a map epoch, poses are given as of epoch 0.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Sequence

from sensor_msgs.msg import CompressedImage

from waymark.geometry import Pose
from waymark.navigation.follower import wrap_angle
from waymark.tasks.attempts import BodyPose, BodySignals, DriveOutcome
from waymark.tasks.stop_views import HEADING_BUCKETS, StopView, latest_per_bucket
from waymark_ros.nodes.task.drive import GoToDrive
from waymark_ros.nodes.task.pose_track import PoseTrack

_POLL_S = 0.05  # how often a stop view looks for a new frame
_FACING_MIN_M = 0.1  # a target nearer than this gives no heading to face
_FACING_TOLERANCE_RAD = math.radians(10.0)  # facing it already: no first turn


class RosBody:
    def __init__(
        self, track: PoseTrack, drive: GoToDrive, frame_period_s: float, ring_length: int
    ) -> None:
        self._track = track
        self._drive = drive
        self._frame_period_ns = int(frame_period_s * 1e9)
        self._lock = threading.Lock()
        self._frames: deque[StopView] = deque(maxlen=ring_length)
        self._latest: StopView | None = None
        self._task_mark = 0  # the track's coverage mark when the current task began

    def on_image(self, msg: CompressedImage) -> None:
        """Frames taken while the pose is unknown have no heading and are dropped."""
        pose = self._track.fresh()
        if not msg.data or pose is None:
            return
        view = StopView(bytes(msg.data), pose.yaw, time.time_ns(), pose)
        with self._lock:
            self._latest = view
            last = self._frames[-1].stamp_ns if self._frames else 0
            if view.stamp_ns - last >= self._frame_period_ns:
                self._frames.append(view)

    def place_views(self, radius_m: float, max_age_s: float) -> list[StopView]:
        """The views of the place the base stands at, for a mark: of the recent frames taken
        within `radius_m` of the current position and at most `max_age_s` ago, the latest
        per heading bucket (at most four, in the order taken)."""
        x, y, _ = self._track.current().position
        since_ns = time.time_ns() - int(max_age_s * 1e9)
        with self._lock:
            frames = list(self._frames)
            if self._latest is not None and (not frames or frames[-1] is not self._latest):
                frames.append(self._latest)
        near = [
            view
            for view in frames
            if view.stamp_ns >= since_ns
            and view.pose is not None
            and math.dist(view.pose.position[:2], (x, y)) <= radius_m
        ]
        return latest_per_bucket(near, HEADING_BUCKETS)

    def begin_task(self) -> None:
        """Ground covered from now on is new to the task that begins."""
        self._task_mark = self._track.coverage_mark()

    def latest_frame(self) -> StopView | None:
        with self._lock:
            return self._latest

    # -- Body ----------------------------------------------------------------------------

    def pose(self) -> BodyPose:
        epoch = self._track.map_epoch()
        pose = self._track.current()
        if epoch is None:  # no map epoch reported yet: candidates are not checked against one
            return BodyPose(pose, self._track.map_frame)
        return BodyPose(pose, self._track.map_frame, epoch[1], epoch[0])

    def stop_views(
        self, count: int, deadline: float, facing: tuple[float, float] | None = None
    ) -> Sequence[StopView]:
        start = self._track.current()
        x, y, _ = start.position
        first = start.yaw
        if facing is not None and math.dist(facing, (x, y)) > _FACING_MIN_M:
            first = math.atan2(facing[1] - y, facing[0] - x)
        views: list[StopView] = []
        never = threading.Event()  # the runner honours cancel between its calls
        for k in range(count):
            if time.monotonic() >= deadline:
                break
            heading = first + 2.0 * math.pi * k / count
            if k or abs(wrap_angle(heading - start.yaw)) > _FACING_TOLERANCE_RAD:
                turn = self._drive.drive(Pose.from_xyz_yaw(x, y, 0.0, heading), deadline, never)
                if turn.outcome is not DriveOutcome.REACHED:
                    continue
            view = self._next_frame(time.time_ns(), deadline)
            if view is not None:
                views.append(view)
        return views

    def recent_frames(self, since_ns: int, limit: int) -> Sequence[StopView]:
        with self._lock:
            frames = [view for view in self._frames if view.stamp_ns >= since_ns]
        if len(frames) <= limit:
            return frames
        step = len(frames) / limit
        return [frames[int(i * step)] for i in range(limit)]

    def frames_since(self, since_ns: int) -> int:
        with self._lock:
            return sum(1 for view in self._frames if view.stamp_ns >= since_ns)

    def signals(self) -> BodySignals:
        pose = self._track.fresh()
        return BodySignals(
            explored_area_m2=self._track.explored_area_m2(),
            tracking_lost=pose is None,
            first_visit=pose is not None and self._track.first_visit(pose, self._task_mark),
        )

    def _next_frame(self, after_ns: int, deadline: float) -> StopView | None:
        while time.monotonic() < deadline:
            frame = self.latest_frame()
            if frame is not None and frame.stamp_ns > after_ns:
                return frame
            time.sleep(_POLL_S)
        return None
