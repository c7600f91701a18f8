# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`Body` over the pose track, the camera and navigator_node's GoTo action.

Stop views are taken by turning in place with GoTo goals at the stop's position and the
view headings, not by publishing on cmd_vel: the navigator's follower and the safety node
after it stay between the task layer and the motors. After each turn the first camera
frame that arrives is the view; a turn the navigator does not complete gives no view.
Camera frames are also kept, at most one per `frame_period_s`, in a ring of
`ring_length`, for the judge's earlier frames.

What is not measured here is reported as such: no explored area (0) and no first-visit
signal; tracking counts as lost when the pose is older than the track's timeout. Before
capture_node has reported a map epoch, poses are given as of epoch 0.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Sequence

from sensor_msgs.msg import CompressedImage

from waymark.geometry import Pose
from waymark.tasks.attempts import BodyPose, BodySignals, DriveOutcome
from waymark.tasks.stop_views import StopView
from waymark_ros.tasks.drive import GoToDrive
from waymark_ros.tasks.pose_track import PoseTrack

_POLL_S = 0.05  # how often a stop view looks for a new frame


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

    def latest_frame(self) -> StopView | None:
        with self._lock:
            return self._latest

    # -- Body ----------------------------------------------------------------------------

    def pose(self) -> BodyPose:
        epoch = self._track.map_epoch()
        pose = self._track.current()
        return BodyPose(pose, self._track.map_frame, epoch[1] if epoch else 0)

    def stop_views(self, count: int, deadline: float) -> Sequence[StopView]:
        start = self._track.current()
        x, y, _ = start.position
        views: list[StopView] = []
        never = threading.Event()  # the runner honours cancel between its calls
        for k in range(count):
            if time.monotonic() >= deadline:
                break
            if k:
                heading = start.yaw + 2.0 * math.pi * k / count
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
        return BodySignals(tracking_lost=self._track.fresh() is None)

    def _next_frame(self, after_ns: int, deadline: float) -> StopView | None:
        while time.monotonic() < deadline:
            frame = self.latest_frame()
            if frame is not None and frame.stamp_ns > after_ns:
                return frame
            time.sleep(_POLL_S)
        return None
