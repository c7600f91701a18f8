# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node's parameters, declared by group into the settings each part reads."""

from __future__ import annotations

from dataclasses import dataclass

from rclpy.node import Node

from waymark.navigation.follower import FollowerParams
from waymark.navigation.frontiers import ExplorerParams
from waymark.navigation.goals import MAX_ABS_COORDINATE_M, QUATERNION_NORM_TOLERANCE
from waymark.navigation.planner import PlannerConfig
from waymark_ros.ros.params import declare
from waymark_ros.ros.pose_input import POSE_TYPES

GRID, CLOUD = 'grid', 'cloud'


@dataclass(frozen=True)
class MapSettings:
    """Where the map comes from and how it becomes a traversability grid and planner."""

    source: str
    topic: str  # the topic of the chosen source
    latched: bool
    cloud_resolution: float
    h_min: float
    h_max: float
    robot_radius_m: float
    unknown_is_obstacle: bool
    planner: PlannerConfig


@dataclass(frozen=True)
class GoalSettings:
    """The checks every goal passes before any backend sees it."""

    snap_radius_m: float
    start_snap_radius_m: float
    max_abs_coordinate_m: float
    quaternion_norm_tolerance: float
    input_wait_s: float
    epoch_topic: str


@dataclass(frozen=True)
class DriveSettings:
    """How a goal is driven and when it counts as reached or given up."""

    align_yaw: bool
    control_rate_hz: float
    goal_tolerance_m: float
    follower: FollowerParams  # its timeout_s is goal_timeout_s, for every backend


@dataclass(frozen=True)
class PoseSettings:
    topic: str
    pose_type: str
    reliable: bool


@dataclass(frozen=True)
class Nav2Settings:
    action_name: str
    server_wait_s: float


@dataclass(frozen=True)
class ExploreSettings:
    explorer: ExplorerParams
    seen_radius_m: float


@dataclass(frozen=True)
class NavigatorSettings:
    map_frame: str
    backend: str
    map: MapSettings
    goals: GoalSettings
    drive: DriveSettings
    pose: PoseSettings
    nav2: Nav2Settings
    explore: ExploreSettings


def declare_settings(node: Node, backends: tuple[str, ...]) -> NavigatorSettings:
    """Declare every parameter of navigator_node; `backends` are the names it may choose,
    the first one the default."""
    map_frame = declare(node, 'map_frame', 'map', 'Frame of targets, map and pose.')
    backend = declare(node, 'backend', backends[0], 'Who drives.', choices=backends)
    map_settings, goals = _map(node), _goals(node)
    return NavigatorSettings(
        map_frame=map_frame,
        backend=backend,
        map=map_settings,
        goals=goals,
        drive=_drive(node),
        pose=_pose(node),
        nav2=_nav2(node),
        explore=_explore(node, goals.start_snap_radius_m),
    )


def _map(node: Node) -> MapSettings:
    source = declare(node, 'map_source', GRID, 'Map input.', choices=(GRID, CLOUD))
    map_topic = declare(node, 'map_topic', '/map', 'nav_msgs/OccupancyGrid (map_source grid).')
    cloud_topic = declare(
        node, 'cloud_topic', '/cloud_map', 'sensor_msgs/PointCloud2 map (map_source cloud).'
    )
    latched = declare(
        node, 'map_transient_local', True, 'Map publisher is latched (map_server, SLAM).'
    )
    resolution = declare(
        node, 'cloud.resolution', 0.05, 'Cell size of the projected map.', low=0.01, high=2.0
    )
    h_min = declare(
        node, 'cloud.h_min', 0.15, 'Points above this height are obstacles.', low=-10.0, high=10.0
    )
    h_max = declare(
        node, 'cloud.h_max', 0.8, 'Points above this height are overhead.', low=-10.0, high=10.0
    )
    if h_max <= h_min:
        raise ValueError('cloud.h_max must be above cloud.h_min')
    return MapSettings(
        source=source,
        topic=map_topic if source == GRID else cloud_topic,
        latched=latched,
        cloud_resolution=resolution,
        h_min=h_min,
        h_max=h_max,
        robot_radius_m=declare(
            node, 'robot_radius_m', 0.35, 'Obstacles grow by this much.', low=0.0, high=5.0
        ),
        unknown_is_obstacle=declare(
            node, 'unknown_is_obstacle', True, 'Unknown space also keeps the robot away.'
        ),
        planner=PlannerConfig(
            clearance_weight=declare(
                node, 'planner.clearance_weight', 2.0, 'Extra cost near walls.', low=0.0, high=100.0
            ),
            clearance_range_m=declare(
                node,
                'planner.clearance_range_m',
                0.5,
                'Walls cost extra within this.',
                low=0.01,
                high=10.0,
            ),
            max_expansions=declare(
                node,
                'planner.max_expansions',
                5_000_000,
                'Cells a plan may settle.',
                low=1,
                high=500_000_000,
            ),
        ),
    )


def _goals(node: Node) -> GoalSettings:
    return GoalSettings(
        snap_radius_m=declare(
            node, 'snap_radius_m', 1.0, 'Move blocked targets this far at most.', low=0.0, high=20.0
        ),
        start_snap_radius_m=declare(
            node,
            'start_snap_radius_m',
            0.3,
            'Robot may stand this far inside an inflation.',
            low=0.0,
            high=5.0,
        ),
        max_abs_coordinate_m=declare(
            node,
            'max_abs_coordinate_m',
            MAX_ABS_COORDINATE_M,
            'Targets with |x| or |y| beyond this are refused before any map lookup.',
            low=1.0,
            high=1e6,
        ),
        quaternion_norm_tolerance=declare(
            node,
            'quaternion_norm_tolerance',
            QUATERNION_NORM_TOLERANCE,
            "A target's orientation quaternion is normalised when its norm is within this "
            'of 1, and refused otherwise (zero included).',
            low=0.0,
            high=0.5,
        ),
        input_wait_s=declare(
            node,
            'input_wait_s',
            5.0,
            'A goal waits this long for a first map and pose.',
            low=0.0,
            high=600.0,
        ),
        epoch_topic=declare(
            node,
            'map_epoch_topic',
            'capture/stats',
            "capture_node's latched stats (std_msgs/String, JSON): their session and "
            'map_epoch are the current map epoch, which a remembered target must be from.',
        ),
    )


def _drive(node: Node) -> DriveSettings:
    tolerance = declare(node, 'goal_tolerance_m', 0.25, 'Arrival radius.', low=0.01, high=100.0)
    return DriveSettings(
        align_yaw=declare(node, 'align_yaw', True, "Turn to the target's heading."),
        control_rate_hz=declare(
            node, 'control_rate_hz', 20.0, 'Follower rate.', low=1.0, high=200.0
        ),
        goal_tolerance_m=tolerance,
        follower=FollowerParams(
            max_linear=declare(node, 'follower.max_linear', 0.5, 'm/s', low=0.01, high=5.0),
            max_angular=declare(node, 'follower.max_angular', 1.0, 'rad/s', low=0.01, high=10.0),
            max_linear_accel=declare(
                node, 'follower.max_linear_accel', 0.5, 'm/s^2', low=0.01, high=20.0
            ),
            max_angular_accel=declare(
                node, 'follower.max_angular_accel', 1.5, 'rad/s^2', low=0.01, high=50.0
            ),
            lookahead_m=declare(
                node, 'follower.lookahead_m', 0.4, 'Carrot distance.', low=0.02, high=10.0
            ),
            goal_tolerance_m=tolerance,
            progress_window_s=declare(
                node,
                'follower.progress_window_s',
                10.0,
                'Stuck after this long without progress.',
                low=0.5,
                high=600.0,
            ),
            progress_min_m=declare(
                node, 'follower.progress_min_m', 0.1, 'Progress that counts.', low=0.001, high=10.0
            ),
            timeout_s=declare(
                node,
                'goal_timeout_s',
                300.0,
                'Give up on a goal after this long.',
                low=1.0,
                high=86400.0,
            ),
            pose_timeout_s=declare(
                node,
                'follower.pose_timeout_s',
                0.5,
                'Stop when the pose is older.',
                low=0.01,
                high=60.0,
            ),
        ),
    )


def _pose(node: Node) -> PoseSettings:
    return PoseSettings(
        topic=declare(node, 'odom_topic', '/odom', 'Robot pose in the map frame.'),
        pose_type=declare(
            node, 'pose_type', 'odometry', 'Message type on odom_topic.', choices=POSE_TYPES
        ),
        reliable=declare(
            node, 'reliable_input', False, 'Subscribe to the pose reliably (newest 10 kept).'
        ),
    )


def _nav2(node: Node) -> Nav2Settings:
    return Nav2Settings(
        action_name=declare(
            node, 'nav2.action_name', 'navigate_to_pose', 'NavigateToPose server (backend nav2).'
        ),
        server_wait_s=declare(
            node,
            'nav2.server_wait_s',
            5.0,
            'Wait this long for the Nav2 server, its answer to a goal, and to a cancel.',
            low=0.0,
            high=600.0,
        ),
    )


def _explore(node: Node, snap_radius_m: float) -> ExploreSettings:
    """Exploration's own parameters; a frontier goal's start snaps like any goal's."""
    return ExploreSettings(
        explorer=ExplorerParams(
            min_size_cells=declare(
                node,
                'explore.min_frontier_cells',
                8,
                'Smaller frontiers are noise.',
                low=1,
                high=1_000_000,
            ),
            blacklist_radius_m=declare(
                node,
                'explore.blacklist_radius_m',
                0.5,
                'Frontiers this near a visited or failed goal are skipped.',
                low=0.0,
                high=100.0,
            ),
            time_budget_s=declare(
                node,
                'explore.time_budget_s',
                900.0,
                'Default time budget of an exploration.',
                low=1.0,
                high=86400.0,
            ),
            max_goals=declare(
                node,
                'explore.max_goals',
                100,
                'Frontier goals per exploration.',
                low=1,
                high=100_000,
            ),
            snap_radius_m=snap_radius_m,
        ),
        seen_radius_m=declare(
            node,
            'explore.seen_radius_m',
            1.0,
            'A frontier leg ends early, counted reached, once no frontier is left this near '
            'its goal (the unknown there has been seen); 0: drive every leg to its goal.',
            low=0.0,
            high=20.0,
        ),
    )
