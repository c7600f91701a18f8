# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node: drives the robot to GoTo targets, and only where the map allows.

The map comes from an OccupancyGrid topic or from the SLAM point-cloud map projected to 2D
within a height band. It is inflated by the robot's radius. Every target is checked against
it before anything moves: a target outside the map, non-finite, beyond
`max_abs_coordinate_m`, with an orientation that is not a unit quaternion within
`quaternion_norm_tolerance`, in another frame, or with no reachable free cell within
`snap_radius_m` is refused with the reason; one inside a wall's inflation or in unknown
space is moved to the nearest reachable cell. A target remembered in another map epoch
than the current one (capture_node's, on `map_epoch_topic`) ends OUTCOME_STALE_EPOCH.

Backends (`backend`):
- `internal`: A* on the inflated grid, the path smoothed and published on `plan`, and a PD
  follower driving it on `cmd_vel` (as RAVEN drove its Go1). The path is replanned when the
  map changes; the robot stops on cancel, preemption, stale pose, no progress or timeout.
- `goal_topic`: the checked target is published on `goal_pose` for a planner that listens
  there (Nav2's bt_navigator does), and arrival is judged from the pose.
- `nav2`: the checked target goes to Nav2's NavigateToPose action, whose feedback, result
  and error are passed on; a GoTo cancel, preemption or timeout cancels the Nav2 goal.
  Needs nav2_msgs, imported only for this backend.

The `explore` action (Phase I) drives, with the same backend, to the nearest frontier by
path, then the next, until none is reachable or its time budget or `explore.max_goals` is
spent. Frontiers are found on the map inflated with unknown space counted as free (else
none would border it), but each frontier goal is driven as a GoTo target, with unknown
space as `unknown_is_obstacle` says. Every goal ended, reached or not, is not tried again.

One goal runs at a time, GoTo or Explore: a new one preempts the one before, which ends
FAILED, as in Nav2. The pose topic must be in the map frame (a LIO SLAM odometry is).
"""

from __future__ import annotations

import copy
import json
import math
import os
import threading
import time
from dataclasses import dataclass, replace

import numpy as np
import rclpy
from action_msgs.msg import GoalStatus
from geometry_msgs.msg import Pose as PoseMsg
from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import OccupancyGrid, Path
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Header, String
from visualization_msgs.msg import MarkerArray

from waymark.geometry import InvalidPoseError, quaternion_from_yaw, yaw_from_quaternion
from waymark.navigation.follower import FollowerParams, FollowerStatus, PathFollower
from waymark.navigation.frontiers import (
    Explorer,
    ExplorerParams,
    FinishReason,
    Frontier,
    frontier_near,
)
from waymark.navigation.goals import (
    MAX_ABS_COORDINATE_M,
    QUATERNION_NORM_TOLERANCE,
    check_goal,
    goal_orientation,
)
from waymark.navigation.grid import OccupancyMap, TraversabilityGrid, inflate, project_point_cloud
from waymark.navigation.planner import GridPlanner, PlanError, PlannerConfig
from waymark_interfaces.action import Explore, GoTo
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import NS_PER_S, pose_from_msg, stamp_to_ns
from waymark_ros.ros.navigation_client import OUTCOMES
from waymark_ros.ros.navigation_msgs import (
    navigation_markers,
    occupancy_map_from_msg,
    path_msg,
    points_from_cloud,
    twist_msg,
)
from waymark_ros.ros.params import declare
from waymark_ros.ros.pose_input import POSE_TYPES, subscribe_pose
from waymark_ros.ros.spin import run_node

INTERNAL, NAV2, GOAL_TOPIC = 'internal', 'nav2', 'goal_topic'
BACKENDS = (INTERNAL, NAV2, GOAL_TOPIC)
GRID, CLOUD = 'grid', 'cloud'
_EXPLORE_ENDS = {
    FinishReason.NO_FRONTIERS: Explore.Result.OUTCOME_COMPLETE,
    FinishReason.NO_REACHABLE_FRONTIERS: Explore.Result.OUTCOME_COMPLETE,
    FinishReason.TIME_BUDGET: Explore.Result.OUTCOME_BUDGET_SPENT,
    FinishReason.MAX_GOALS: Explore.Result.OUTCOME_BUDGET_SPENT,
}
_FAILURES = {
    FollowerStatus.STUCK: 'no progress',
    FollowerStatus.TIMED_OUT: 'timed out',
    FollowerStatus.CANCELED: 'canceled',
}


@dataclass(frozen=True)
class _Map:
    version: int
    occupancy: OccupancyMap
    grid: TraversabilityGrid
    planner: GridPlanner


@dataclass(frozen=True)
class _FrontierMap:
    """A map as exploration sees it: unknown space is not an obstacle, so frontiers exist."""

    version: int
    grid: TraversabilityGrid
    planner: GridPlanner
    unknown: np.ndarray


@dataclass(frozen=True)
class _Pose:
    x: float
    y: float
    yaw: float
    stamp_s: float


class _RefusedError(Exception):
    """A target that must not be driven to; the message says why."""


class _StaleEpochError(_RefusedError):
    """A remembered target from another map epoch than the current one."""


class _Leg:
    """One frontier goal of an exploration, driven exactly as a GoTo goal would be.

    It quacks like the GoTo goal handle that the backends read: the request's target, a
    cancel when the exploration is cancelled or its time budget `expired`, and distance
    feedback passed up to the exploration's feedback.
    """

    def __init__(self, explore_handle, target: PoseStamped, expired, on_distance) -> None:
        self.request = GoTo.Goal(target=target)
        self._explore_handle = explore_handle
        self._expired = expired
        self._on_distance = on_distance

    @property
    def is_cancel_requested(self) -> bool:
        return self._explore_handle.is_cancel_requested or self._expired()

    def publish_feedback(self, feedback: GoTo.Feedback) -> None:
        self._on_distance(feedback.distance_remaining)


class NavigatorNode(Node):
    def __init__(self) -> None:
        super().__init__('navigator_node')
        self._map_frame = declare(self, 'map_frame', 'map', 'Frame of targets, map and pose.')
        self._backend = declare(self, 'backend', INTERNAL, 'Who drives.', choices=BACKENDS)
        source = declare(self, 'map_source', GRID, 'Map input.', choices=(GRID, CLOUD))
        map_topic = declare(self, 'map_topic', '/map', 'nav_msgs/OccupancyGrid (map_source grid).')
        cloud_topic = declare(
            self, 'cloud_topic', '/cloud_map', 'sensor_msgs/PointCloud2 map (map_source cloud).'
        )
        map_latched = declare(
            self, 'map_transient_local', True, 'Map publisher is latched (map_server, SLAM).'
        )
        self._cloud_resolution = declare(
            self, 'cloud.resolution', 0.05, 'Cell size of the projected map.', low=0.01, high=2.0
        )
        self._h_min = declare(
            self,
            'cloud.h_min',
            0.15,
            'Points above this height are obstacles.',
            low=-10.0,
            high=10.0,
        )
        self._h_max = declare(
            self,
            'cloud.h_max',
            0.8,
            'Points above this height are overhead.',
            low=-10.0,
            high=10.0,
        )
        if self._h_max <= self._h_min:
            raise ValueError('cloud.h_max must be above cloud.h_min')
        self._radius = declare(
            self, 'robot_radius_m', 0.35, 'Obstacles grow by this much.', low=0.0, high=5.0
        )
        self._unknown_is_obstacle = declare(
            self, 'unknown_is_obstacle', True, 'Unknown space also keeps the robot away.'
        )
        self._snap = declare(
            self,
            'snap_radius_m',
            1.0,
            'Move blocked targets this far at most.',
            low=0.0,
            high=20.0,
        )
        self._start_snap = declare(
            self,
            'start_snap_radius_m',
            0.3,
            'Robot may stand this far inside an inflation.',
            low=0.0,
            high=5.0,
        )
        self._planner_config = PlannerConfig(
            clearance_weight=declare(
                self,
                'planner.clearance_weight',
                2.0,
                'Extra cost near walls.',
                low=0.0,
                high=100.0,
            ),
            clearance_range_m=declare(
                self,
                'planner.clearance_range_m',
                0.5,
                'Walls cost extra within this.',
                low=0.01,
                high=10.0,
            ),
            max_expansions=declare(
                self,
                'planner.max_expansions',
                5_000_000,
                'Cells a plan may settle.',
                low=1,
                high=500_000_000,
            ),
        )
        self._max_abs_coordinate = declare(
            self,
            'max_abs_coordinate_m',
            MAX_ABS_COORDINATE_M,
            'Targets with |x| or |y| beyond this are refused before any map lookup.',
            low=1.0,
            high=1e6,
        )
        self._quaternion_tolerance = declare(
            self,
            'quaternion_norm_tolerance',
            QUATERNION_NORM_TOLERANCE,
            "A target's orientation quaternion is normalised when its norm is within this "
            'of 1, and refused otherwise (zero included).',
            low=0.0,
            high=0.5,
        )
        self._align_yaw = declare(self, 'align_yaw', True, "Turn to the target's heading.")
        self._rate = declare(self, 'control_rate_hz', 20.0, 'Follower rate.', low=1.0, high=200.0)
        self._tolerance = declare(
            self, 'goal_tolerance_m', 0.25, 'Arrival radius.', low=0.01, high=100.0
        )
        timeout = declare(
            self,
            'goal_timeout_s',
            300.0,
            'Give up on a goal after this long.',
            low=1.0,
            high=86400.0,
        )
        self._follower_params = FollowerParams(
            max_linear=declare(self, 'follower.max_linear', 0.5, 'm/s', low=0.01, high=5.0),
            max_angular=declare(self, 'follower.max_angular', 1.0, 'rad/s', low=0.01, high=10.0),
            max_linear_accel=declare(
                self, 'follower.max_linear_accel', 0.5, 'm/s^2', low=0.01, high=20.0
            ),
            max_angular_accel=declare(
                self, 'follower.max_angular_accel', 1.5, 'rad/s^2', low=0.01, high=50.0
            ),
            lookahead_m=declare(
                self, 'follower.lookahead_m', 0.4, 'Carrot distance.', low=0.02, high=10.0
            ),
            goal_tolerance_m=self._tolerance,
            progress_window_s=declare(
                self,
                'follower.progress_window_s',
                10.0,
                'Stuck after this long without progress.',
                low=0.5,
                high=600.0,
            ),
            progress_min_m=declare(
                self,
                'follower.progress_min_m',
                0.1,
                'Progress that counts.',
                low=0.001,
                high=10.0,
            ),
            timeout_s=timeout,
            pose_timeout_s=declare(
                self,
                'follower.pose_timeout_s',
                0.5,
                'Stop when the pose is older.',
                low=0.01,
                high=60.0,
            ),
        )
        self._input_wait = declare(
            self,
            'input_wait_s',
            5.0,
            'A goal waits this long for a first map and pose.',
            low=0.0,
            high=600.0,
        )
        odom_topic = declare(self, 'odom_topic', '/odom', 'Robot pose in the map frame.')
        pose_type = declare(
            self, 'pose_type', 'odometry', 'Message type on odom_topic.', choices=POSE_TYPES
        )
        reliable = declare(
            self, 'reliable_input', False, 'Subscribe to the pose reliably (newest 10 kept).'
        )

        self._lock = threading.Lock()
        self._map: _Map | None = None
        self._pose: _Pose | None = None
        self._active: object | None = None  # the goal handle now driving
        latched = qos.latched()
        self._cmd_vel = self.create_publisher(Twist, 'cmd_vel', 10)
        self._plan_publisher = self.create_publisher(Path, 'plan', latched)
        self._markers = self.create_publisher(MarkerArray, 'navigation_markers', latched)
        self._goal_publisher = self.create_publisher(PoseStamped, 'goal_pose', 10)
        inputs = MutuallyExclusiveCallbackGroup()
        subscribe_pose(
            self,
            pose_type,
            odom_topic,
            self._on_pose,
            qos.state_input(reliable, 10),
            callback_group=inputs,
        )
        map_qos = QoSProfile(
            depth=1,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=(
                DurabilityPolicy.TRANSIENT_LOCAL if map_latched else DurabilityPolicy.VOLATILE
            ),
        )
        maps = MutuallyExclusiveCallbackGroup()
        if source == GRID:
            self.create_subscription(
                OccupancyGrid, map_topic, self._on_grid, map_qos, callback_group=maps
            )
        else:
            self.create_subscription(
                PointCloud2, cloud_topic, self._on_cloud, map_qos, callback_group=maps
            )
        self._map_topic = map_topic if source == GRID else cloud_topic
        self._epoch_topic = declare(
            self,
            'map_epoch_topic',
            'capture/stats',
            "capture_node's latched stats (std_msgs/String, JSON): their session and "
            'map_epoch are the current map epoch, which a remembered target must be from.',
        )
        self._epoch: tuple[str, int] | None = None  # (session, map epoch) now, when known
        self.create_subscription(
            String, self._epoch_topic, self._on_epoch, qos.latched(), callback_group=inputs
        )
        self._go_to_server = self._serve(GoTo, 'go_to', self._execute)
        self._nav2_action = declare(
            self, 'nav2.action_name', 'navigate_to_pose', 'NavigateToPose server (backend nav2).'
        )
        self._nav2_wait = declare(
            self,
            'nav2.server_wait_s',
            5.0,
            'Wait this long for the Nav2 server, its answer to a goal, and to a cancel.',
            low=0.0,
            high=600.0,
        )
        if self._backend == NAV2:
            self._nav2, self._nav2_goal = self._nav2_client()
        self._explore_params = ExplorerParams(
            min_size_cells=declare(
                self,
                'explore.min_frontier_cells',
                8,
                'Smaller frontiers are noise.',
                low=1,
                high=1_000_000,
            ),
            blacklist_radius_m=declare(
                self,
                'explore.blacklist_radius_m',
                0.5,
                'Frontiers this near a visited or failed goal are skipped.',
                low=0.0,
                high=100.0,
            ),
            time_budget_s=declare(
                self,
                'explore.time_budget_s',
                900.0,
                'Default time budget of an exploration.',
                low=1.0,
                high=86400.0,
            ),
            max_goals=declare(
                self,
                'explore.max_goals',
                100,
                'Frontier goals per exploration.',
                low=1,
                high=100_000,
            ),
            snap_radius_m=self._start_snap,
        )
        self._seen_radius = declare(
            self,
            'explore.seen_radius_m',
            1.0,
            'A frontier leg ends early, counted reached, once no frontier is left this near '
            'its goal (the unknown there has been seen); 0: drive every leg to its goal.',
            low=0.0,
            high=20.0,
        )
        self._seen_check: tuple[int, tuple[float, float], bool] | None = None
        self._frontier_map: _FrontierMap | None = None  # cached per map version
        self._frontiers: tuple[tuple[Frontier, ...], Frontier | None] = ((), None)  # for RViz
        self._explore_server = self._serve(Explore, 'explore', self._explore)

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
            self._pose = _Pose(x, y, yaw_from_quaternion(pose.orientation), stamp_s)

    def _on_epoch(self, msg: String) -> None:
        try:
            stats = json.loads(msg.data)
            session, epoch = stats['session'], stats['map_epoch']
            if not (isinstance(session, str) and type(epoch) is int and epoch >= 0):
                raise ValueError(f'session {session!r}, map_epoch {epoch!r}')
        except (ValueError, KeyError, TypeError) as error:
            self.get_logger().warning(
                f'map epoch on {self._epoch_topic} unreadable, ignored: {error}',
                throttle_duration_sec=5.0,
            )
            return
        with self._lock:
            changed = bool(session) and self._epoch != (session, epoch)
            if session:  # no session yet: capture_node has not seen an image
                self._epoch = (session, epoch)
        if changed:
            self.get_logger().info(f'current map epoch: session {session}, epoch {epoch}')

    def _on_grid(self, msg: OccupancyGrid) -> None:
        try:
            self._install(occupancy_map_from_msg(msg))
        except ValueError as error:
            self.get_logger().error(f'map refused: {error}')

    def _on_cloud(self, msg: PointCloud2) -> None:
        try:
            projection = project_point_cloud(
                points_from_cloud(msg),
                self._cloud_resolution,
                self._h_min,
                self._h_max,
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
        grid = inflate(occupancy, self._radius, self._unknown_is_obstacle)
        planner = GridPlanner(grid, self._planner_config)
        with self._lock:
            version = self._map.version + 1 if self._map else 1
            self._map = _Map(version, occupancy, grid, planner)
        g = occupancy.geometry
        self.get_logger().info(
            f'map {version}: {g.width}x{g.height} cells of {g.resolution:g} m, '
            f'{int(grid.traversable.sum())} traversable'
        )

    # -- goals ---------------------------------------------------------------------------

    def _execute(self, handle) -> GoTo.Result:
        """Every path ends in an explicit outcome: an exception is a failure with its reason,
        never the default result (which reads as OUTCOME_REACHED)."""
        with self._lock:
            self._active = handle  # any goal still running sees this and stops
        try:
            outcome, message = self._run(handle)
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
        with self._lock:
            final = self._pose_msg(self._pose) if self._pose is not None else PoseStamped()
        return GoTo.Result(outcome=outcome, message=message, final_pose=final)

    def _release(self, handle) -> None:
        """Stop the robot, and free the drive unless a newer goal has taken it already."""
        self._cmd_vel.publish(twist_msg(0.0, 0.0))
        with self._lock:
            if self._active is handle:
                self._active = None

    def _run(self, handle) -> tuple[int, str]:
        """Take a GoTo goal (or an exploration leg) to its end with the configured backend."""
        try:
            self._check_epoch(handle.request)
            if self._backend == INTERNAL:
                return self._drive(handle)
            if self._backend == NAV2:
                return self._navigate(handle)
            return self._forward(handle)
        except _StaleEpochError as why:
            return GoTo.Result.OUTCOME_STALE_EPOCH, str(why)
        except _RefusedError as why:
            return GoTo.Result.OUTCOME_REFUSED, str(why)

    def _check(self, target: PoseStamped):
        """The map, the robot's pose, the checked target and its unit orientation quaternion,
        or _RefusedError."""
        p, q = target.pose.position, target.pose.orientation
        if not all(math.isfinite(v) for v in (p.x, p.y, p.z)):
            raise _RefusedError(f'non-finite goal position ({p.x}, {p.y}, {p.z})')
        try:
            orientation = goal_orientation((q.x, q.y, q.z, q.w), self._quaternion_tolerance)
        except ValueError as error:
            raise _RefusedError(str(error)) from None
        state, robot = self._inputs()
        check = check_goal(
            state.grid,
            p.x,
            p.y,
            target.header.frame_id,
            robot.x,
            robot.y,
            self._snap,
            self._start_snap,
            self._max_abs_coordinate,
        )
        if not check.accepted:
            raise _RefusedError(check.message)
        return state, robot, check, orientation

    def _check_epoch(self, request: GoTo.Goal) -> None:
        """A remembered target must be from the current map epoch, waiting input_wait_s for
        the first report of it; else _StaleEpochError (or _RefusedError when none came)."""
        if not request.evidence_session:
            return
        deadline = time.monotonic() + self._input_wait
        while True:
            with self._lock:
                current = self._epoch
            if current is not None or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        evidence = f'session {request.evidence_session} map epoch {request.evidence_map_epoch}'
        if current is None:
            raise _RefusedError(
                f'target is from {evidence}, and no current map epoch has come on '
                f'{self._epoch_topic}'
            )
        if stale := self._stale(request):
            raise _StaleEpochError(stale)

    def _stale(self, request: GoTo.Goal) -> str:
        """Why a remembered target is not in the current map epoch; empty when it is."""
        if not request.evidence_session:
            return ''
        with self._lock:
            current = self._epoch
        evidence = (request.evidence_session, request.evidence_map_epoch)
        if current is None or current == evidence:
            return ''
        return (
            f'target is from session {evidence[0]} map epoch {evidence[1]}, the map is now '
            f'session {current[0]} epoch {current[1]}; no alignment between them is known'
        )

    def _inputs(self) -> tuple[_Map, _Pose]:
        """The latest map and pose, waiting input_wait_s for the first; else _RefusedError."""
        deadline = time.monotonic() + self._input_wait
        while True:  # a goal sent as the system starts may come before the map does
            with self._lock:
                state, robot = self._map, self._pose
            if (state is not None and robot is not None) or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        if state is None:
            raise _RefusedError(f'no map received yet on {self._map_topic}')
        if robot is None:
            raise _RefusedError('no robot pose received yet')
        return state, robot

    def _plan(self, state: _Map, check) -> np.ndarray:
        try:
            plan = state.planner.plan_cells(check.start_cell, check.goal_cell)
        except PlanError as error:
            raise _RefusedError(str(error)) from None
        waypoints = np.array(plan.smoothed, dtype=float)
        waypoints[-1] = (check.x, check.y)
        return waypoints

    def _drive(self, handle) -> tuple[int, str]:
        target: PoseStamped = handle.request.target
        state, _, check, orientation = self._check(target)
        yaw = yaw_from_quaternion(orientation)
        waypoints = self._plan(state, check)
        self._show(target, check, waypoints)
        follower = PathFollower(self._follower_params)
        align = self._align_yaw and not isinstance(handle, _Leg)  # a frontier has no heading
        follower.start([tuple(p) for p in waypoints], yaw if align else None, self._now_s())
        feedback = GoTo.Feedback()
        period = 1.0 / self._rate
        while rclpy.ok():
            if handle.is_cancel_requested:
                follower.cancel()
                return GoTo.Result.OUTCOME_CANCELED, 'canceled'
            with self._lock:
                robot, current, preempted = self._pose, self._map, self._active is not handle
            if preempted:
                return GoTo.Result.OUTCOME_FAILED, 'preempted by a newer goal'
            if stale := self._stale(handle.request):
                follower.cancel()
                return GoTo.Result.OUTCOME_STALE_EPOCH, stale
            if current is not None and current.version != state.version:
                state = current
                try:  # the goal is checked again: the new map may have closed it off
                    _, _, check, _ = self._check(target)
                    waypoints = self._plan(state, check)
                except _RefusedError as why:
                    return GoTo.Result.OUTCOME_FAILED, f'map changed: {why}'
                follower.replace_path([tuple(p) for p in waypoints])
                self._show(target, check, waypoints)
            if robot is None:
                output = follower.update(math.nan, math.nan, math.nan, math.nan, self._now_s())
            else:
                output = follower.update(robot.x, robot.y, robot.yaw, robot.stamp_s, self._now_s())
            self._cmd_vel.publish(twist_msg(output.command.linear, output.command.angular))
            if output.status == FollowerStatus.ARRIVED:
                return GoTo.Result.OUTCOME_REACHED, (
                    'reached'
                    + (
                        f' (target moved {check.snap_distance_m:.2f} m to free space)'
                        if check.snapped
                        else ''
                    )
                )
            if output.status in _FAILURES:
                return GoTo.Result.OUTCOME_FAILED, (
                    f'{_FAILURES[output.status]}, {output.distance_remaining_m:.2f} m from the goal'
                )
            feedback.distance_remaining = float(output.distance_remaining_m)
            handle.publish_feedback(feedback)
            time.sleep(period)
        return GoTo.Result.OUTCOME_FAILED, 'shutting down'

    def _forward(self, handle) -> tuple[int, str]:
        target: PoseStamped = handle.request.target
        _, _, check, orientation = self._check(target)
        goal = PoseStamped()
        goal.header.frame_id = self._map_frame
        goal.header.stamp = self.get_clock().now().to_msg()
        goal.pose = _checked_pose(target, check, orientation)
        self._show(target, check, None)
        self._goal_publisher.publish(goal)
        deadline = time.monotonic() + self._follower_params.timeout_s
        feedback = GoTo.Feedback()
        while rclpy.ok():
            if handle.is_cancel_requested:
                return GoTo.Result.OUTCOME_CANCELED, 'canceled'
            with self._lock:
                robot, preempted = self._pose, self._active is not handle
            if preempted:
                return GoTo.Result.OUTCOME_FAILED, 'preempted by a newer goal'
            if stale := self._stale(handle.request):
                return GoTo.Result.OUTCOME_STALE_EPOCH, stale
            if robot is not None:
                distance = math.hypot(robot.x - check.x, robot.y - check.y)
                feedback.distance_remaining = float(distance)
                handle.publish_feedback(feedback)
                if distance <= self._tolerance:
                    return GoTo.Result.OUTCOME_REACHED, 'reached'
            if time.monotonic() > deadline:
                return GoTo.Result.OUTCOME_FAILED, (
                    f'not within {self._tolerance} m after {self._follower_params.timeout_s:.0f} s'
                )
            time.sleep(0.1)
        return GoTo.Result.OUTCOME_FAILED, 'shutting down'

    # -- exploration ---------------------------------------------------------------------

    def _explore(self, handle) -> Explore.Result:
        with self._lock:
            self._active = handle  # preempts any GoTo goal or exploration still running
        started = time.monotonic()
        result = Explore.Result()
        feedback = Explore.Feedback()
        try:
            outcome, message = self._explore_until_done(handle, result, feedback, started)
        except Exception as error:  # any failure is its outcome
            outcome, message = Explore.Result.OUTCOME_FAILED, f'navigator error: {error!r}'
        finally:
            self._release(handle)
            self._frontiers = ((), None)
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

    def _explore_until_done(self, handle, result, feedback, started: float) -> tuple[int, str]:
        """Frontier after frontier, nearest by path first; fills in result's counts."""
        budget = handle.request.time_budget_s or self._explore_params.time_budget_s
        if not (math.isfinite(budget) and budget > 0):
            return Explore.Result.OUTCOME_FAILED, f'time_budget_s must be >= 0, got {budget}'
        explorer = Explorer(replace(self._explore_params, time_budget_s=budget), self._now_s())

        def on_distance(distance: float) -> None:
            feedback.distance_remaining = float(distance)
            feedback.elapsed_s = time.monotonic() - started
            handle.publish_feedback(feedback)

        while rclpy.ok():
            if handle.is_cancel_requested:
                return Explore.Result.OUTCOME_CANCELED, 'canceled'
            try:
                state, robot = self._inputs()
            except _RefusedError as why:
                return Explore.Result.OUTCOME_FAILED, str(why)
            frontier_map = self._frontier_map_of(state)
            step = explorer.next_goal(
                frontier_map.grid,
                frontier_map.unknown,
                frontier_map.planner,
                (robot.x, robot.y),
                self._now_s(),
            )
            result.frontiers_left = len(step.frontiers)
            if step.finished is not None:
                return _EXPLORE_ENDS[step.finished], self._explore_summary(step, explorer)
            self._frontiers = (step.frontiers, step.goal)
            target = PoseStamped()
            target.header.frame_id = self._map_frame
            target.pose.position.x, target.pose.position.y = step.goal.goal
            target.pose.orientation.w = 1.0
            feedback.current_goal = target
            feedback.frontiers = len(step.frontiers)
            goal_xy = step.goal.goal
            leg = _Leg(
                handle,
                target,
                lambda xy=goal_xy: explorer.budget_spent(self._now_s()) or self._frontier_seen(xy),
                on_distance,
            )
            with self._lock:
                if self._active is not handle:
                    return Explore.Result.OUTCOME_FAILED, 'preempted by a newer goal'
                self._active = leg
            outcome, message = self._run(leg)
            with self._lock:
                preempted = self._active is not leg
                if not preempted:
                    self._active = handle
            if preempted:
                return Explore.Result.OUTCOME_FAILED, 'preempted by a newer goal'
            if outcome == GoTo.Result.OUTCOME_CANCELED:
                if handle.is_cancel_requested:
                    return Explore.Result.OUTCOME_CANCELED, 'canceled'
                if not self._frontier_seen(goal_xy):
                    continue  # the budget ran out mid-leg: next_goal says so
                outcome, message = GoTo.Result.OUTCOME_REACHED, 'seen before arrival'
            reached = outcome == GoTo.Result.OUTCOME_REACHED
            explorer.report(goal_xy, reached)
            result.goals_reached, result.goals_failed = (
                explorer.goals_reached,
                explorer.goals_failed,
            )
            feedback.goals_reached, feedback.goals_failed = (
                result.goals_reached,
                result.goals_failed,
            )
            if not reached:
                self.get_logger().warning(
                    f'frontier at ({goal_xy[0]:.2f}, {goal_xy[1]:.2f}) given up: {message}'
                )
        return Explore.Result.OUTCOME_FAILED, 'shutting down'

    def _frontier_seen(self, goal_xy: tuple[float, float]) -> bool:
        """Whether the unknown a frontier leg was sent to look at is now known.

        Asked at every control step of a leg, so it is worked out once per map version.
        """
        with self._lock:
            state = self._map
        if self._seen_radius <= 0 or state is None:
            return False
        if self._seen_check is None or self._seen_check[:2] != (state.version, goal_xy):
            seen = not frontier_near(state.occupancy, goal_xy, self._seen_radius)
            self._seen_check = (state.version, goal_xy, seen)
        return self._seen_check[2]

    def _frontier_map_of(self, state: _Map) -> _FrontierMap:
        cached = self._frontier_map
        if cached is None or cached.version != state.version:
            grid = inflate(state.occupancy, self._radius, unknown_is_obstacle=False)
            cached = _FrontierMap(
                state.version,
                grid,
                GridPlanner(grid, self._planner_config),
                state.occupancy.unknown_mask(),
            )
            self._frontier_map = cached
        return cached

    @staticmethod
    def _explore_summary(step, explorer: Explorer) -> str:
        done = f'{explorer.goals_reached} frontier goals reached, {explorer.goals_failed} failed'
        left = len(step.frontiers)
        why = {
            FinishReason.NO_FRONTIERS: 'no frontier left',
            FinishReason.NO_REACHABLE_FRONTIERS: f'{left} frontiers left, none reachable',
            FinishReason.TIME_BUDGET: f'time budget spent, {left} frontiers left',
            FinishReason.MAX_GOALS: f'explore.max_goals spent, {left} frontiers left',
        }[step.finished]
        return f'{why}; {done}'

    # -- nav2 backend ----------------------------------------------------------------------

    def _nav2_client(self) -> tuple[ActionClient, type]:
        try:
            from nav2_msgs.action import NavigateToPose
        except ImportError:
            distro = os.environ.get('ROS_DISTRO') or '<distro>'
            raise RuntimeError(
                f'backend nav2 needs nav2_msgs (install ros-{distro}-nav2-msgs)'
            ) from None
        # Its own group: the client's responses must be handled while _execute blocks.
        client = ActionClient(
            self, NavigateToPose, self._nav2_action, callback_group=MutuallyExclusiveCallbackGroup()
        )
        return client, NavigateToPose.Goal

    def _navigate(self, handle) -> tuple[int, str]:
        target: PoseStamped = handle.request.target
        _, _, check, orientation = self._check(target)
        self._show(target, check, None)
        if not self._nav2.wait_for_server(timeout_sec=self._nav2_wait):
            return GoTo.Result.OUTCOME_FAILED, (
                f'Nav2 action server not available on {self._nav2_action!r} '
                f'after {self._nav2_wait:g} s'
            )
        goal = self._nav2_goal()
        goal.pose.header.frame_id = self._map_frame
        goal.pose.header.stamp = self.get_clock().now().to_msg()
        goal.pose.pose = _checked_pose(target, check, orientation)
        latest = [(0, 0.0)]  # (feedback count, distance); written by the client's callbacks

        def on_feedback(msg) -> None:
            latest[0] = (latest[0][0] + 1, float(msg.feedback.distance_remaining))

        sent = self._nav2.send_goal_async(goal, feedback_callback=on_feedback)
        if not self._wait(sent.done, self._nav2_wait):
            sent.add_done_callback(_cancel_if_accepted)  # nothing may drive unasked
            return GoTo.Result.OUTCOME_FAILED, (
                f'Nav2 did not answer the goal within {self._nav2_wait:g} s'
            )
        nav = sent.result()
        if nav is None or not nav.accepted:
            return GoTo.Result.OUTCOME_FAILED, 'Nav2 rejected the goal'
        result = nav.get_result_async()
        deadline = time.monotonic() + self._follower_params.timeout_s
        feedback, relayed = GoTo.Feedback(), 0
        while rclpy.ok():
            if result.done():
                return self._nav2_outcome(result.result(), check)
            if handle.is_cancel_requested:
                if self._cancel_nav2(nav, result):
                    return GoTo.Result.OUTCOME_CANCELED, 'canceled'
                return GoTo.Result.OUTCOME_FAILED, (
                    f'canceled, but Nav2 did not confirm within {self._nav2_wait:g} s'
                )
            if stale := self._stale(handle.request):
                if not self._cancel_nav2(nav, result):
                    stale += f'; Nav2 did not confirm the cancel within {self._nav2_wait:g} s'
                return GoTo.Result.OUTCOME_STALE_EPOCH, stale
            with self._lock:
                preempted = self._active is not handle
            if preempted or time.monotonic() > deadline:
                message = (
                    'preempted by a newer goal'
                    if preempted
                    else f'Nav2 did not arrive within {self._follower_params.timeout_s:.0f} s'
                )
                if not self._cancel_nav2(nav, result):
                    message += f'; Nav2 did not confirm the cancel within {self._nav2_wait:g} s'
                return GoTo.Result.OUTCOME_FAILED, message
            count, distance = latest[0]
            if count > relayed:
                relayed, feedback.distance_remaining = count, distance
                handle.publish_feedback(feedback)
            time.sleep(0.05)
        return GoTo.Result.OUTCOME_FAILED, 'shutting down'

    def _cancel_nav2(self, nav, result) -> bool:
        """Cancel a Nav2 goal; whether Nav2 confirmed its end within nav2.server_wait_s."""
        nav.cancel_goal_async()
        return self._wait(result.done, self._nav2_wait)

    @staticmethod
    def _nav2_outcome(response, check) -> tuple[int, str]:
        status, result = response.status, response.result
        if status == GoalStatus.STATUS_SUCCEEDED:
            return GoTo.Result.OUTCOME_REACHED, (
                'reached'
                + (
                    f' (target moved {check.snap_distance_m:.2f} m to free space)'
                    if check.snapped
                    else ''
                )
            )
        if status == GoalStatus.STATUS_ABORTED:
            return GoTo.Result.OUTCOME_FAILED, (
                f'Nav2 aborted (error {result.error_code}): {result.error_msg or "no reason given"}'
            )
        if status == GoalStatus.STATUS_CANCELED:  # not by this node: it only cancels on request
            return GoTo.Result.OUTCOME_FAILED, 'Nav2 canceled the goal'
        return GoTo.Result.OUTCOME_FAILED, f'Nav2 ended the goal with status {status}'

    @staticmethod
    def _wait(condition, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not condition() and time.monotonic() < deadline and rclpy.ok():
            time.sleep(0.02)
        return condition()

    # -- output --------------------------------------------------------------------------

    def _show(self, target: PoseStamped, check, waypoints: np.ndarray | None) -> None:
        stamp = self.get_clock().now().to_msg()
        requested = (target.pose.position.x, target.pose.position.y)
        if waypoints is not None:
            self._plan_publisher.publish(path_msg(waypoints, self._map_frame, stamp))
        self._markers.publish(
            navigation_markers(
                self._map_frame,
                stamp,
                goal=requested,
                snapped_goal=(check.x, check.y),
                path=waypoints,
                frontiers=self._frontiers[0],
                chosen_frontier=self._frontiers[1],
                robot_radius_m=self._radius,
            )
        )

    def _now_s(self) -> float:
        return self.get_clock().now().nanoseconds / NS_PER_S

    def _pose_msg(self, pose: _Pose) -> PoseStamped:
        msg = PoseStamped()
        msg.header.frame_id = self._map_frame
        msg.pose.position.x, msg.pose.position.y = pose.x, pose.y
        q = quaternion_from_yaw(pose.yaw)
        msg.pose.orientation.x, msg.pose.orientation.y = q[0], q[1]
        msg.pose.orientation.z, msg.pose.orientation.w = q[2], q[3]
        return msg


def _checked_pose(target: PoseStamped, check, orientation) -> PoseMsg:
    """The target as it is to be driven: its checked (maybe snapped) position and its
    normalised orientation."""
    pose = copy.deepcopy(target.pose)
    pose.position.x, pose.position.y = check.x, check.y
    o = pose.orientation
    o.x, o.y, o.z, o.w = orientation
    return pose


def _cancel_if_accepted(sent) -> None:
    """Cancel a Nav2 goal whose acceptance came after the navigator had given up on it."""
    nav = sent.result()
    if nav is not None and nav.accepted:
        nav.cancel_goal_async()


def main(args=None) -> None:
    run_node(NavigatorNode, 'navigator_node', args, threads=4)


if __name__ == '__main__':
    main()
