# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""map_source scans: registered scans folded into a bounded map (waymark.navigation.scan_grid).

A LIO SLAM publishes each undistorted scan in its map frame as it registers it: FAST-LIO's
ROS 2 port on `/cloud_registered` in `common.odom_frame` ("camera_init"), at the lidar's
scan rate, with `publish.scan_publish_en` (on by default; `dense_publish_en` picks the full
or the downsampled scan), the odometry of the same instant on `/Odometry` (laserMapping.cpp,
`publish_frame_world` and `publish_odometry`); Point-LIO likewise on `/cloud_registered`
("camera_init", its downsampled scan) with its odometry on `/aft_mapped_to_init`
(laserMapping.cpp, `publish_frame_world`). The rays of a scan start at the pose whose stamp
is nearest the scan's, among the last few; a scan with none within scans.max_pose_gap_s is
skipped. The pose is the IMU's, a few centimetres from the lidar on a MID-360: less than a
cell. Every scan updates the map; the planning grid is rebuilt at most every
scans.refresh_period_s, from the callback of the scan that finds it due.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable

from rclpy.node import Node
from sensor_msgs.msg import PointCloud2

from waymark.navigation.grid import OccupancyMap
from waymark.navigation.scan_grid import ScanGrid
from waymark.parameters.navigator import NavigatorParameters
from waymark_ros.nodes.navigator.backend import RobotPose
from waymark_ros.ros.conversions import NS_PER_S, stamp_to_ns
from waymark_ros.ros.navigation_msgs import points_from_cloud

_POSES_KEPT = 64  # about 6 s of 10 Hz odometry, more than any gap allowed between the two


class ScanInput:
    """The map built from scans; `on_scan` takes each one (already size-checked)."""

    def __init__(
        self,
        node: Node,
        settings: NavigatorParameters,
        origin_height_m: float,
        install: Callable[[OccupancyMap], None],
    ) -> None:
        scans = settings.scans
        self._logger = node.get_logger()
        self._map_frame = settings.map_frame
        self._max_gap_s = scans.max_pose_gap_s
        self._refresh_s = scans.refresh_period_s
        self._max_points = settings.cloud.max_cloud_points
        self._grid = ScanGrid(scans.grid_config(settings.cloud, origin_height_m), self._map_frame)
        self._install = install
        self._lock = threading.Lock()
        self._poses: collections.deque[RobotPose] = collections.deque(maxlen=_POSES_KEPT)
        self._last_install = -float('inf')
        self.integrated = 0
        self.skipped = 0

    def add_pose(self, pose: RobotPose) -> None:
        with self._lock:
            self._poses.append(pose)

    def on_scan(self, msg: PointCloud2) -> None:
        if msg.header.frame_id != self._map_frame:
            self._skip(f'scan in frame {msg.header.frame_id!r}, not {self._map_frame!r}')
            return
        stamp_s = stamp_to_ns(msg.header.stamp) / NS_PER_S
        with self._lock:
            pose = min(self._poses, key=lambda p: abs(p.stamp_s - stamp_s), default=None)
        if pose is None or abs(pose.stamp_s - stamp_s) > self._max_gap_s:
            gap = 'no pose yet' if pose is None else f'nearest {pose.stamp_s - stamp_s:+.3f} s'
            self._skip(f'scan with no pose within {self._max_gap_s:g} s of it ({gap})')
            return
        try:
            self._grid.integrate(
                points_from_cloud(msg, max_points=self._max_points), (pose.x, pose.y)
            )
        except ValueError as error:
            self._skip(f'scan unusable: {error}')
            return
        self.integrated += 1
        now = time.monotonic()
        if now - self._last_install >= self._refresh_s:
            self._last_install = now
            self._install(self._grid.occupancy(stamp_to_ns(msg.header.stamp)))

    def status(self) -> dict[str, str]:
        return {'scans_integrated': str(self.integrated), 'scans_skipped': str(self.skipped)}

    def _skip(self, why: str) -> None:
        self.skipped += 1
        self._logger.warning(f'{why}: skipped', throttle_duration_sec=5.0)
