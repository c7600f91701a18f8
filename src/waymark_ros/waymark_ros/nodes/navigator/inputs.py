# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the navigator drives by: the newest robot pose, map and map epoch, from their
topics (or the pose from TF). A map becomes a traversability grid (inflated by
robot_radius_m) and a planner as it comes (map_source scans: every
scans.refresh_period_s at most, see waymark_ros.nodes.navigator.scan_input); poses and maps in
another frame than map_frame are ignored, with a warning. A point-cloud map's heights are
measured from the floor, origin_height_m below the map frame's origin. A cloud with more
than cloud.max_cloud_points points is refused from its header alone, before its data is
read: one error line (throttled) and a count in /diagnostics; the map in use stays. A pose
stream silent for diagnostics.input_timeout_s, or no map by then, is reported on the
console and in /diagnostics."""

from __future__ import annotations

import threading

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Pose as PoseMsg
from nav_msgs.msg import OccupancyGrid
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Header, String

from waymark.geometry import InvalidPoseError, yaw_from_quaternion
from waymark.navigation.epochs import MapEpoch, parse_epoch
from waymark.navigation.grid import OccupancyMap, inflate, project_point_cloud
from waymark.navigation.planner import GridPlanner
from waymark.parameters.navigator import GRID, SCANS, NavigatorParameters
from waymark_ros.nodes.navigator.backend import MapState, RobotPose
from waymark_ros.nodes.navigator.scan_input import ScanInput
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import NS_PER_S, pose_from_msg, stamp_to_ns
from waymark_ros.ros.input_monitor import InputMonitor
from waymark_ros.ros.navigation_msgs import occupancy_map_from_msg, points_from_cloud
from waymark_ros.ros.pose_input import subscribe_pose


class Inputs:
    """Subscribed while it exists (made at configure, closed at cleanup)."""

    def __init__(
        self, node: Node, settings: NavigatorParameters, origin_height_m: float = 0.0
    ) -> None:
        self._node = node
        self._settings = settings
        self._origin_height_m = origin_height_m  # of the map frame, above the floor
        self._logger = node.get_logger()
        self._map_frame = settings.map_frame
        self._lock = threading.Lock()
        self._map: MapState | None = None
        self._pose: RobotPose | None = None
        self._epoch: MapEpoch | None = None  # the current one, when known
        inputs = MutuallyExclusiveCallbackGroup()
        self._pose_input = pose = subscribe_pose(
            node,
            settings.pose_type,
            settings.odom_topic,
            self._on_pose,
            qos.state_input(settings.reliable_input, 10),
            callback_group=inputs,
            tf=settings.tf_pose,
        )
        diagnostics = settings.diagnostics
        self._monitor = InputMonitor(node, diagnostics.input_timeout_s, diagnostics.repeat_s)
        self._pose_seen = self._monitor.watch('pose', pose.source, detail=lambda: pose.last_error)
        # A map may come once (latched): only its first coming is awaited; scans stream.
        scans = settings.map_source == SCANS
        self._map_seen = self._monitor.watch('map', settings.map_input_topic, once=not scans)
        self._scans = ScanInput(node, settings, origin_height_m, self._install) if scans else None
        self._refused = 0  # clouds too large
        self._last_refused = ''  # the last one's size
        self._newest_refused = False
        self._diagnostics = node.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._timer = node.create_timer(1.0, self._publish_diagnostics, inputs)
        map_qos = QoSProfile(
            depth=1,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=(
                DurabilityPolicy.TRANSIENT_LOCAL
                if settings.map_transient_local and not scans
                else DurabilityPolicy.VOLATILE
            ),
        )
        map_type, on_map = (
            (OccupancyGrid, self._on_grid)
            if settings.map_source == GRID
            else (PointCloud2, self._on_scan if scans else self._on_cloud)
        )
        self._subscriptions = [
            node.create_subscription(
                map_type,
                settings.map_input_topic,
                on_map,
                map_qos,
                callback_group=MutuallyExclusiveCallbackGroup(),
            ),
            node.create_subscription(
                String,
                settings.map_epoch_topic,
                self._on_epoch,
                qos.latched(),
                callback_group=inputs,
            ),
        ]

    def use(self, settings: NavigatorParameters) -> None:
        """Live settings: the diagnostics' limits."""
        self._monitor.use(settings.diagnostics.input_timeout_s, settings.diagnostics.repeat_s)

    def close(self) -> None:
        """Unsubscribe; what came is forgotten."""
        self._node.destroy_timer(self._timer)
        self._node.destroy_publisher(self._diagnostics)
        self._monitor.close()
        self._pose_input.close()
        for subscription in self._subscriptions:
            self._node.destroy_subscription(subscription)
        self._subscriptions = []

    def latest(self) -> tuple[RobotPose | None, MapState | None]:
        with self._lock:
            return self._pose, self._map

    def epoch(self) -> MapEpoch | None:
        with self._lock:
            return self._epoch

    def _on_pose(self, header: Header, pose_msg: PoseMsg, _covariance) -> None:
        self._pose_seen()
        if header.frame_id != self._map_frame:
            self._logger.warning(
                f'pose in frame {header.frame_id!r}, not {self._map_frame!r}: ignored',
                throttle_duration_sec=5.0,
            )
            return
        try:
            pose = pose_from_msg(pose_msg)
        except InvalidPoseError as error:
            self._logger.warning(f'bad pose ignored: {error}', throttle_duration_sec=5.0)
            return
        x, y, _ = pose.position
        stamp_s = stamp_to_ns(header.stamp) / NS_PER_S
        robot = RobotPose(x, y, yaw_from_quaternion(pose.orientation), stamp_s)
        with self._lock:
            self._pose = robot
        if self._scans is not None:
            self._scans.add_pose(robot)

    def _on_epoch(self, msg: String) -> None:
        try:
            epoch = parse_epoch(msg.data)
        except ValueError as error:
            self._logger.warning(
                f'map epoch on {self._settings.map_epoch_topic} unreadable, ignored: {error}',
                throttle_duration_sec=5.0,
            )
            return
        if epoch is None:  # no session yet: capture_node has not seen an image
            return
        with self._lock:
            changed, self._epoch = self._epoch != epoch, epoch
        if changed:
            self._logger.info(f'current map epoch: session {epoch[0]}, epoch {epoch[1]}')

    def _on_grid(self, msg: OccupancyGrid) -> None:
        self._map_seen()
        try:
            self._install(occupancy_map_from_msg(msg))
        except ValueError as error:
            self._logger.error(f'map refused: {error}')

    def _too_large(self, msg: PointCloud2) -> bool:
        """Whether the cloud has more points than allowed, from its header alone."""
        points, limit = msg.width * msg.height, self._settings.cloud.max_cloud_points
        self._newest_refused = points > limit
        if points <= limit:
            return False
        self._refused += 1
        self._last_refused = f'{msg.width} x {msg.height} points'
        self._logger.error(
            f'cloud on {self._settings.cloud_topic} refused: {msg.width} x {msg.height} '
            f'= {points} points, more than cloud.max_cloud_points={limit} '
            f'({self._refused} refused so far); the map in use stays',
            throttle_duration_sec=10.0,
        )
        return True

    def _on_scan(self, msg: PointCloud2) -> None:
        self._map_seen()
        if not self._too_large(msg):
            self._scans.on_scan(msg)

    def _on_cloud(self, msg: PointCloud2) -> None:
        self._map_seen()
        if self._too_large(msg):
            return
        cloud = self._settings.cloud
        try:
            projection = project_point_cloud(
                points_from_cloud(msg, max_points=cloud.max_cloud_points),
                cloud.resolution,
                cloud.h_min,
                cloud.h_max,
                msg.header.frame_id,
                stamp_ns=stamp_to_ns(msg.header.stamp),
                origin_height_m=self._origin_height_m,
            )
        except ValueError as error:
            self._logger.error(f'point-cloud map refused: {error}')
            return
        if projection.points_dropped:
            self._logger.warning(f'{projection.points_dropped} non-finite map points dropped')
        self._install(projection.map)

    def _install(self, occupancy: OccupancyMap) -> None:
        if occupancy.frame_id != self._map_frame:
            self._logger.error(
                f'map in frame {occupancy.frame_id!r}, not {self._map_frame!r}: ignored'
            )
            return
        settings = self._settings
        grid = inflate(occupancy, settings.robot_radius_m, settings.unknown_is_obstacle)
        planner = GridPlanner(grid, settings.planner.config())
        traversable = int(grid.traversable.sum())
        with self._lock:
            version = self._map.version + 1 if self._map else 1
            self._map = MapState(version, occupancy, grid, planner, traversable)
        g = occupancy.geometry
        line = (
            f'map {version}: {g.width}x{g.height} cells of {g.resolution:g} m, '
            f'{traversable} traversable'
        )
        if self._scans is None:
            self._logger.info(line)
        else:  # a new one every scans.refresh_period_s
            self._logger.info(line, throttle_duration_sec=60.0)

    def _publish_diagnostics(self) -> None:
        """The inputs' statuses, and the map's: clouds refused as too large (a warning
        while the newest cloud was one), scans folded in and skipped."""
        with self._lock:
            version = self._map.version if self._map else 0
            traversable = self._map.traversable_cells if self._map else 0
        values = {
            'map_version': str(version),
            'traversable_cells': str(traversable),
            'clouds_refused': str(self._refused),
        }
        if self._scans is not None:
            values.update(self._scans.status())
        message = (
            f'{self._refused} clouds refused as too large (last {self._last_refused})'
            if self._refused
            else 'no cloud refused'
        )
        status = DiagnosticStatus(
            level=DiagnosticStatus.WARN if self._newest_refused else DiagnosticStatus.OK,
            name=f'{self._node.get_name()}: map',
            message=message,
            hardware_id=self._settings.map_input_topic,
            values=[KeyValue(key=k, value=v) for k, v in values.items()],
        )
        array = DiagnosticArray(status=[*self._monitor.check(), status])
        array.header.stamp = self._node.get_clock().now().to_msg()
        self._diagnostics.publish(array)
