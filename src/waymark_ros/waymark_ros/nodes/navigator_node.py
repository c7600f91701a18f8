# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node: drives the robot to GoTo targets, and only where the map allows.

The map comes from an OccupancyGrid topic or from the SLAM point-cloud map projected to 2D
within a height band. It is inflated by the robot's radius. Every target is checked against
it before anything moves, whichever backend drives: a target outside the map, non-finite,
beyond `max_abs_coordinate_m`, with an orientation that is not a unit quaternion within
`quaternion_norm_tolerance`, in another frame, or with no reachable free cell within
`snap_radius_m` is refused with the reason; one inside a wall's inflation or in unknown
space is moved to the nearest reachable cell. A target remembered in another map epoch
than the current one (capture_node's, on `map_epoch_topic`) ends OUTCOME_STALE_EPOCH.

Backends (`backend`, one module each under waymark_ros.navigation): `internal` plans with
A* and follows the path on `cmd_vel`; `goal_topic` publishes the checked target on
`goal_pose` for a planner listening there; `nav2` sends it to Nav2's NavigateToPose.

The `explore` action drives, with the same backend, to frontier after frontier (see
waymark_ros.navigation.explore). One goal runs at a time, GoTo or Explore: a new one
preempts the one before, which ends FAILED, as in Nav2. The pose topic must be in the map
frame (a LIO SLAM odometry is).
"""

from __future__ import annotations

import math
import threading
import time

from geometry_msgs.msg import Pose as PoseMsg
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Header, String

from waymark.geometry import InvalidPoseError, yaw_from_quaternion
from waymark.navigation.epochs import MapEpoch, parse_epoch, stale_reason
from waymark.navigation.goals import check_goal, goal_orientation
from waymark.navigation.grid import OccupancyMap, inflate, project_point_cloud
from waymark.navigation.planner import GridPlanner
from waymark_interfaces.action import Explore, GoTo
from waymark_ros.navigation.backend import (
    CheckedGoal,
    MapState,
    Outcome,
    RefusedError,
    RobotPose,
    StaleEpochError,
)
from waymark_ros.navigation.display import Display
from waymark_ros.navigation.explore import ExploreRunner
from waymark_ros.navigation.parameters import GRID, declare_settings
from waymark_ros.navigation.registry import BACKENDS
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import NS_PER_S, pose_from_msg, stamp_to_ns
from waymark_ros.ros.navigation_client import OUTCOMES
from waymark_ros.ros.navigation_msgs import occupancy_map_from_msg, points_from_cloud
from waymark_ros.ros.pose_input import subscribe_pose
from waymark_ros.ros.spin import run_node


class NavigatorNode(Node):
    def __init__(self) -> None:
        super().__init__('navigator_node')
        self._settings = settings = declare_settings(self, tuple(BACKENDS))
        self._map_frame = settings.map_frame
        self._lock = threading.Lock()
        self._map: MapState | None = None
        self._pose: RobotPose | None = None
        self._epoch: MapEpoch | None = None  # the current one, when known
        self._active: object | None = None  # the goal handle now driving
        display = Display(self, settings.map_frame, settings.map.robot_radius_m)
        self.show, self.show_frontiers = display.show, display.show_frontiers
        self._subscribe()
        self._backend = BACKENDS[settings.backend](self, self, settings)
        self._explorer = ExploreRunner(self, settings, self.get_logger())
        self._go_to_server = self._serve(GoTo, 'go_to', self._execute)
        self._explore_server = self._serve(Explore, 'explore', self._explore)

    def _subscribe(self) -> None:
        pose, map_settings = self._settings.pose, self._settings.map
        inputs = MutuallyExclusiveCallbackGroup()
        subscribe_pose(
            self,
            pose.pose_type,
            pose.topic,
            self._on_pose,
            qos.state_input(pose.reliable, 10),
            callback_group=inputs,
        )
        map_qos = QoSProfile(
            depth=1,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=(
                DurabilityPolicy.TRANSIENT_LOCAL
                if map_settings.latched
                else DurabilityPolicy.VOLATILE
            ),
        )
        map_type, on_map = (
            (OccupancyGrid, self._on_grid)
            if map_settings.source == GRID
            else (PointCloud2, self._on_cloud)
        )
        self.create_subscription(
            map_type,
            map_settings.topic,
            on_map,
            map_qos,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )
        self.create_subscription(
            String,
            self._settings.goals.epoch_topic,
            self._on_epoch,
            qos.latched(),
            callback_group=inputs,
        )

    def _serve(self, action_type, name: str, execute) -> ActionServer:
        """Every goal is accepted (a newer one preempts) and every cancel granted."""
        return ActionServer(
            self,
            action_type,
            name,
            execute_callback=execute,
            goal_callback=lambda _goal: GoalResponse.ACCEPT,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=ReentrantCallbackGroup(),
        )

    # -- inputs --------------------------------------------------------------------------

    def _on_pose(self, header: Header, pose_msg: PoseMsg, _covariance) -> None:
        if header.frame_id != self._map_frame:
            self.get_logger().warning(
                f'pose in frame {header.frame_id!r}, not {self._map_frame!r}: ignored',
                throttle_duration_sec=5.0,
            )
            return
        try:
            pose = pose_from_msg(pose_msg)
        except InvalidPoseError as error:
            self.get_logger().warning(f'bad pose ignored: {error}', throttle_duration_sec=5.0)
            return
        x, y, _ = pose.position
        stamp_s = stamp_to_ns(header.stamp) / NS_PER_S
        with self._lock:
            self._pose = RobotPose(x, y, yaw_from_quaternion(pose.orientation), stamp_s)

    def _on_epoch(self, msg: String) -> None:
        try:
            epoch = parse_epoch(msg.data)
        except ValueError as error:
            self.get_logger().warning(
                f'map epoch on {self._settings.goals.epoch_topic} unreadable, ignored: {error}',
                throttle_duration_sec=5.0,
            )
            return
        if epoch is None:  # no session yet: capture_node has not seen an image
            return
        with self._lock:
            changed, self._epoch = self._epoch != epoch, epoch
        if changed:
            self.get_logger().info(f'current map epoch: session {epoch[0]}, epoch {epoch[1]}')

    def _on_grid(self, msg: OccupancyGrid) -> None:
        try:
            self._install(occupancy_map_from_msg(msg))
        except ValueError as error:
            self.get_logger().error(f'map refused: {error}')

    def _on_cloud(self, msg: PointCloud2) -> None:
        cloud = self._settings.map
        try:
            projection = project_point_cloud(
                points_from_cloud(msg),
                cloud.cloud_resolution,
                cloud.h_min,
                cloud.h_max,
                msg.header.frame_id,
                stamp_ns=stamp_to_ns(msg.header.stamp),
            )
        except ValueError as error:
            self.get_logger().error(f'point-cloud map refused: {error}')
            return
        if projection.points_dropped:
            self.get_logger().warning(f'{projection.points_dropped} non-finite map points dropped')
        self._install(projection.map)

    def _install(self, occupancy: OccupancyMap) -> None:
        if occupancy.frame_id != self._map_frame:
            self.get_logger().error(
                f'map in frame {occupancy.frame_id!r}, not {self._map_frame!r}: ignored'
            )
            return
        map_settings = self._settings.map
        grid = inflate(occupancy, map_settings.robot_radius_m, map_settings.unknown_is_obstacle)
        planner = GridPlanner(grid, map_settings.planner)
        with self._lock:
            version = self._map.version + 1 if self._map else 1
            self._map = MapState(version, occupancy, grid, planner)
        g = occupancy.geometry
        self.get_logger().info(
            f'map {version}: {g.width}x{g.height} cells of {g.resolution:g} m, '
            f'{int(grid.traversable.sum())} traversable'
        )

    # -- actions -------------------------------------------------------------------------

    def _execute(self, handle) -> GoTo.Result:
        """Every path ends in an explicit outcome: an exception is a failure with its reason,
        never the default result (which reads as OUTCOME_REACHED)."""
        with self._lock:
            self._active = handle  # any goal still running sees this and stops
        try:
            outcome, message = self.run_goal(handle, heading=True)
        except Exception as error:  # any failure is the goal's outcome
            outcome, message = GoTo.Result.OUTCOME_FAILED, f'navigator error: {error!r}'
        finally:
            self._release(handle)
        if outcome == GoTo.Result.OUTCOME_REACHED:
            handle.succeed()
            self.get_logger().info(f'goal ended: {message}')
        else:
            if outcome == GoTo.Result.OUTCOME_CANCELED:
                handle.canceled()
            else:
                handle.abort()
            self.get_logger().warning(f'goal ended ({OUTCOMES[outcome]}): {message}')
        robot, _ = self.latest()
        final = robot.to_msg(self._map_frame) if robot is not None else PoseStamped()
        return GoTo.Result(outcome=outcome, message=message, final_pose=final)

    def _explore(self, handle) -> Explore.Result:
        with self._lock:
            self._active = handle  # preempts any GoTo goal or exploration still running
        started = time.monotonic()
        result = Explore.Result()
        try:
            outcome, message = self._explorer.run(handle, result, Explore.Feedback(), started)
        except Exception as error:  # any failure is its outcome
            outcome, message = Explore.Result.OUTCOME_FAILED, f'navigator error: {error!r}'
        finally:
            self._release(handle)
            self.show_frontiers((), None)
        if outcome == Explore.Result.OUTCOME_CANCELED:
            handle.canceled()
        elif outcome == Explore.Result.OUTCOME_FAILED:
            handle.abort()
        else:
            handle.succeed()
        self.get_logger().info(f'exploration ended: {message}')
        result.outcome, result.message = outcome, message
        result.elapsed_s = time.monotonic() - started
        return result

    def _release(self, handle) -> None:
        """Stop the backend, and free the drive unless a newer goal has taken it already."""
        self._backend.stop()
        with self._lock:
            if self._active is handle:
                self._active = None

    # -- what backends and exploration ask of the node -------------------------------------

    def run_goal(self, handle, heading: bool) -> Outcome:
        """Check a GoTo goal (or an exploration leg) and take it to its end with the
        backend; a goal that fails a check is refused, or stale, with the reason."""
        try:
            self._check_epoch(handle.request)
            return self._backend.drive(handle, self.check(handle.request.target, heading))
        except StaleEpochError as why:
            return GoTo.Result.OUTCOME_STALE_EPOCH, str(why)
        except RefusedError as why:
            return GoTo.Result.OUTCOME_REFUSED, str(why)

    def check(self, target: PoseStamped, heading: bool) -> CheckedGoal:
        """The target checked on the newest map, from the robot's pose; else RefusedError."""
        goals = self._settings.goals
        p, q = target.pose.position, target.pose.orientation
        if not all(math.isfinite(v) for v in (p.x, p.y, p.z)):
            raise RefusedError(f'non-finite goal position ({p.x}, {p.y}, {p.z})')
        try:
            orientation = goal_orientation((q.x, q.y, q.z, q.w), goals.quaternion_norm_tolerance)
        except ValueError as error:
            raise RefusedError(str(error)) from None
        state, robot = self.inputs()
        check = check_goal(
            state.grid,
            p.x,
            p.y,
            target.header.frame_id,
            robot.x,
            robot.y,
            goals.snap_radius_m,
            goals.start_snap_radius_m,
            goals.max_abs_coordinate_m,
        )
        if not check.accepted:
            raise RefusedError(check.message)
        return CheckedGoal(target, state, check, orientation, heading)

    def _check_epoch(self, request: GoTo.Goal) -> None:
        """A remembered target must be from the current map epoch, waiting input_wait_s for
        the first report of it; else StaleEpochError (or RefusedError when none came)."""
        if not request.evidence_session:
            return
        current = self._wait_for(lambda: self._epoch)
        if current is None:
            raise RefusedError(
                f'target is from session {request.evidence_session} map epoch '
                f'{request.evidence_map_epoch}, and no current map epoch has come on '
                f'{self._settings.goals.epoch_topic}'
            )
        if stale := self.stale(request):
            raise StaleEpochError(stale)

    def stale(self, request: GoTo.Goal) -> str:
        if not request.evidence_session:
            return ''
        with self._lock:
            current = self._epoch
        return stale_reason((request.evidence_session, request.evidence_map_epoch), current)

    def inputs(self) -> tuple[MapState, RobotPose]:
        """The newest map and pose, waiting input_wait_s for the first; else RefusedError."""
        # A goal sent as the system starts may come before the map does.
        self._wait_for(lambda: self._map is not None and self._pose is not None)
        robot, state = self.latest()
        if state is None:
            raise RefusedError(f'no map received yet on {self._settings.map.topic}')
        if robot is None:
            raise RefusedError('no robot pose received yet')
        return state, robot

    def latest(self) -> tuple[RobotPose | None, MapState | None]:
        with self._lock:
            return self._pose, self._map

    def preempted(self, handle) -> bool:
        with self._lock:
            return self._active is not handle

    def hand_over(self, holder, successor) -> bool:
        with self._lock:
            if self._active is not holder:
                return False
            self._active = successor
            return True

    def now_s(self) -> float:
        return self.get_clock().now().nanoseconds / NS_PER_S

    def _wait_for(self, ready):
        """`ready()` (read under the lock) once truthy, or when input_wait_s has passed."""
        deadline = time.monotonic() + self._settings.goals.input_wait_s
        while True:
            with self._lock:
                value = ready()
            if value or time.monotonic() >= deadline:
                return value
            time.sleep(0.05)


def main(args=None) -> None:
    run_node(NavigatorNode, 'navigator_node', args, threads=4)


if __name__ == '__main__':
    main()
