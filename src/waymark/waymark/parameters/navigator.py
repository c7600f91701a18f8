# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node's parameters. What shapes a drive and its limits (speeds, tolerances,
the follower's timeouts, exploration's budgets) is live and applies from the next goal;
who drives, the topics, frames and the map's making are fixed at start."""

from __future__ import annotations

from dataclasses import dataclass, field

from waymark.navigation.floor import MAX_ORIGIN_HEIGHT_M
from waymark.navigation.follower import FollowerParams
from waymark.navigation.frontiers import ExplorerParams
from waymark.navigation.goals import MAX_ABS_COORDINATE_M, QUATERNION_NORM_TOLERANCE
from waymark.navigation.planner import PlannerConfig
from waymark.navigation.scan_grid import ScanGridConfig
from waymark.parameters.common import (
    POSE_TYPES,
    InputDiagnosticsParameters,
    TfPoseParameters,
    check_tf_frame,
)
from waymark.settings import setting

# The backends (waymark_ros.nodes.navigator.registry has one class for each); the first is the
# default.
INTERNAL, NAV2, GOAL_TOPIC = 'internal', 'nav2', 'goal_topic'
BACKENDS = (INTERNAL, NAV2, GOAL_TOPIC)
GRID, CLOUD, SCANS = 'grid', 'cloud', 'scans'
MAP_SOURCES = (GRID, CLOUD, SCANS)


FLOOR_PARAMETER, FLOOR_TF = 'parameter', 'tf'


@dataclass(frozen=True)
class CloudParameters:
    """The point-cloud map's projection. Heights are metres above the floor: a Go1 stands
    about 0.4 m tall (0.5-0.6 m with a lidar on its back), so 0.8 m keeps a margin over
    everything it carries, and 0.10 m lies above the map's floor noise (a few cm) while
    still catching a step, a box or a lying person."""

    resolution: float = setting(0.05, 'Cell size of the projected map.', low=0.01, high=2.0)
    h_min: float = setting(
        0.10, 'Points higher above the floor are obstacles (m).', low=-10.0, high=10.0
    )
    h_max: float = setting(
        0.8, 'Points higher above the floor are overhead (m).', low=-10.0, high=10.0
    )
    floor_source: str = setting(
        FLOOR_PARAMETER,
        "Where the floor lies: 'parameter' (map_origin_height_m) or 'tf' (floor_frame in "
        'the map frame, looked up once at configure; needs tf2_ros).',
        choices=(FLOOR_PARAMETER, FLOOR_TF),
    )
    map_origin_height_m: float = setting(
        0.0,
        "Height of the map frame's origin above the floor (m); 0 for a map frame on the "
        'floor, the sensor height at start for a LIO map frame.',
        low=-MAX_ORIGIN_HEIGHT_M,
        high=MAX_ORIGIN_HEIGHT_M,
    )
    floor_frame: str = setting(
        'base_footprint', "A frame on the floor under the robot (floor_source 'tf')."
    )
    tf_timeout_s: float = setting(
        10.0, "Wait this long for the floor frame's transform.", low=0.1, high=600.0
    )
    max_cloud_points: int = setting(
        3_000_000,
        'A cloud message (a map, or a scan) with more points (width x height) is refused '
        'before its data is read, with a log line, and counted in /diagnostics; the map '
        'in use stays.',
        low=1,
        high=200_000_000,
    )

    def __post_init__(self) -> None:
        if self.h_max <= self.h_min:
            raise ValueError('cloud.h_max must be above cloud.h_min')


_SCAN_DEFAULTS = ScanGridConfig()


@dataclass(frozen=True)
class ScanParameters:
    """map_source scans: a bounded map built scan by scan (waymark.navigation.scan_grid),
    in cells of cloud.resolution, obstacles in the heights cloud.h_min..cloud.h_max above
    the floor. Each cell's log-odds gain hit_log_odds when a scan hits it and lose
    miss_log_odds when a ray passes through it, clamped, so that someone walking by is
    cleared again within about a second of scans."""

    window_m: float = setting(
        _SCAN_DEFAULTS.window_m,
        'Side of the square map around the robot (m); it slides when the robot is more '
        'than a quarter of it from its centre, and what leaves it is forgotten.',
        low=1.0,
        high=250.0,
    )
    max_range_m: float = setting(
        _SCAN_DEFAULTS.max_range_m,
        'Points farther from the sensor mark nothing; their rays clear up to this range.',
        low=0.5,
        high=200.0,
    )
    max_points: int = setting(
        _SCAN_DEFAULTS.max_points,
        'Points taken from a scan, evenly spread over it (the rest are skipped).',
        low=1,
        high=1_000_000,
    )
    clearing: bool = setting(True, 'Clear the cells along the rays from the sensor to each point.')
    hit_log_odds: float = setting(
        _SCAN_DEFAULTS.hit_log_odds, 'A hit adds this to its cell.', low=0.01, high=10.0
    )
    miss_log_odds: float = setting(
        _SCAN_DEFAULTS.miss_log_odds,
        'A ray through a cell takes this from it.',
        low=0.01,
        high=10.0,
    )
    min_log_odds: float = setting(
        _SCAN_DEFAULTS.min_log_odds, 'Lower clamp of a cell.', low=-20.0, high=-0.01
    )
    max_log_odds: float = setting(
        _SCAN_DEFAULTS.max_log_odds,
        'Upper clamp of a cell: how long a gone obstacle takes to clear.',
        low=0.01,
        high=20.0,
    )
    refresh_period_s: float = setting(
        1.0,
        'Rebuild the planning grid (inflation, planner graph) at most this often; every '
        'scan updates the map itself.',
        low=0.05,
        high=60.0,
    )
    max_pose_gap_s: float = setting(
        0.2,
        "A scan is skipped (counted in /diagnostics) unless a pose's stamp is within this "
        'of its own: the rays start at that pose.',
        low=0.001,
        high=10.0,
    )

    def grid_config(self, cloud: CloudParameters, origin_height_m: float) -> ScanGridConfig:
        return ScanGridConfig(
            resolution=cloud.resolution,
            window_m=self.window_m,
            max_range_m=self.max_range_m,
            max_points=self.max_points,
            h_min=cloud.h_min,
            h_max=cloud.h_max,
            origin_height_m=origin_height_m,
            clearing=self.clearing,
            hit_log_odds=self.hit_log_odds,
            miss_log_odds=self.miss_log_odds,
            min_log_odds=self.min_log_odds,
            max_log_odds=self.max_log_odds,
        )


@dataclass(frozen=True)
class PlannerParameters:
    clearance_weight: float = setting(2.0, 'Extra cost near walls.', low=0.0, high=100.0)
    clearance_range_m: float = setting(
        PlannerConfig.clearance_range_m, 'Walls cost extra within this.', low=0.01, high=10.0
    )
    max_expansions: int = setting(
        PlannerConfig.max_expansions, 'Cells a plan may settle.', low=1, high=500_000_000
    )

    def config(self) -> PlannerConfig:
        return PlannerConfig(self.clearance_weight, self.clearance_range_m, self.max_expansions)


@dataclass(frozen=True)
class FollowerParameters:
    max_linear: float = setting(FollowerParams.max_linear, 'm/s', low=0.01, high=5.0, live=True)
    max_angular: float = setting(
        FollowerParams.max_angular, 'rad/s', low=0.01, high=10.0, live=True
    )
    max_linear_accel: float = setting(
        FollowerParams.max_linear_accel, 'm/s^2', low=0.01, high=20.0, live=True
    )
    max_angular_accel: float = setting(
        FollowerParams.max_angular_accel, 'rad/s^2', low=0.01, high=50.0, live=True
    )
    lookahead_m: float = setting(
        FollowerParams.lookahead_m, 'Carrot distance.', low=0.02, high=10.0, live=True
    )
    progress_window_s: float = setting(
        10.0, 'Stuck after this long without progress.', low=0.5, high=600.0, live=True
    )
    progress_min_m: float = setting(
        FollowerParams.progress_min_m, 'Progress that counts.', low=0.001, high=10.0, live=True
    )
    pose_timeout_s: float = setting(
        FollowerParams.pose_timeout_s,
        'Stop when the pose is older.',
        low=0.01,
        high=60.0,
        live=True,
    )


@dataclass(frozen=True)
class Nav2Parameters:
    action_name: str = setting('navigate_to_pose', 'NavigateToPose server (backend nav2).')
    server_wait_s: float = setting(
        5.0,
        'Wait this long for the Nav2 server, its answer to a goal, and to a cancel.',
        low=0.0,
        high=600.0,
        live=True,
    )


@dataclass(frozen=True)
class ExploreParameters:
    min_frontier_cells: int = setting(
        ExplorerParams.min_size_cells,
        'Smaller frontiers are noise.',
        low=1,
        high=1_000_000,
        live=True,
    )
    blacklist_radius_m: float = setting(
        ExplorerParams.blacklist_radius_m,
        'Frontiers this near a visited or failed goal are skipped.',
        low=0.0,
        high=100.0,
        live=True,
    )
    time_budget_s: float = setting(
        ExplorerParams.time_budget_s,
        'Default time budget of an exploration.',
        low=1.0,
        high=86400.0,
        live=True,
    )
    max_goals: int = setting(
        ExplorerParams.max_goals, 'Frontier goals per exploration.', low=1, high=100_000, live=True
    )
    seen_radius_m: float = setting(
        1.0,
        'A frontier leg ends early, counted reached, once no frontier is left this near '
        'its goal (the unknown there has been seen); 0: drive every leg to its goal.',
        low=0.0,
        high=20.0,
        live=True,
    )


@dataclass(frozen=True)
class NavigatorParameters:
    map_frame: str = setting('map', 'Frame of targets, map and pose.')
    backend: str = setting(BACKENDS[0], 'Who drives.', choices=BACKENDS)
    autostart: bool = setting(
        True,
        'Configure and activate at start (a plain start); false: wait for a lifecycle manager '
        '(the launch files, or ros2 lifecycle set navigator_node configure, then activate).',
    )
    map_source: str = setting(
        GRID,
        "Map input: 'grid' an OccupancyGrid; 'cloud' a whole point-cloud map, projected "
        "again at each message; 'scans' registered scans (in map_frame) folded one by one "
        'into a bounded map (scans.*).',
        choices=MAP_SOURCES,
    )
    map_topic: str = setting('/map', 'nav_msgs/OccupancyGrid (map_source grid).')
    cloud_topic: str = setting(
        '/cloud_map',
        'sensor_msgs/PointCloud2: the map (map_source cloud) or each registered scan '
        '(map_source scans).',
    )
    map_transient_local: bool = setting(
        True, 'Map publisher is latched (map_server, SLAM); scans are always volatile.'
    )
    cloud: CloudParameters = field(default_factory=CloudParameters)
    scans: ScanParameters = field(default_factory=ScanParameters)
    robot_radius_m: float = setting(0.35, 'Obstacles grow by this much.', low=0.0, high=5.0)
    unknown_is_obstacle: bool = setting(True, 'Unknown space also keeps the robot away.')
    planner: PlannerParameters = field(default_factory=PlannerParameters)
    snap_radius_m: float = setting(
        1.0, 'Move blocked targets this far at most.', low=0.0, high=20.0, live=True
    )
    start_snap_radius_m: float = setting(
        0.3, 'Robot may stand this far inside an inflation.', low=0.0, high=5.0, live=True
    )
    max_abs_coordinate_m: float = setting(
        MAX_ABS_COORDINATE_M,
        'Targets with |x| or |y| beyond this are refused before any map lookup.',
        low=1.0,
        high=1e6,
    )
    quaternion_norm_tolerance: float = setting(
        QUATERNION_NORM_TOLERANCE,
        "A target's orientation quaternion is normalised when its norm is within this "
        'of 1, and refused otherwise (zero included).',
        low=0.0,
        high=0.5,
    )
    input_wait_s: float = setting(
        5.0, 'A goal waits this long for a first map and pose.', low=0.0, high=600.0, live=True
    )
    map_epoch_topic: str = setting(
        'capture/stats',
        "capture_node's latched stats (std_msgs/String, JSON): their session and "
        'map_epoch are the current map epoch, which a remembered target must be from.',
    )
    goal_tolerance_m: float = setting(0.25, 'Arrival radius.', low=0.01, high=100.0, live=True)
    align_yaw: bool = setting(True, "Turn to the target's heading.", live=True)
    control_rate_hz: float = setting(20.0, 'Follower rate.', low=1.0, high=200.0)
    follower: FollowerParameters = field(default_factory=FollowerParameters)
    goal_timeout_s: float = setting(
        FollowerParams.timeout_s,
        'Give up on a goal after this long.',
        low=1.0,
        high=86400.0,
        live=True,
    )
    cmd_vel_topic: str = setting(
        'cmd_vel',
        "geometry_msgs/Twist out (backend internal): the base's, or safety_node's input "
        '(cmd_vel_nav) when it stands between.',
    )
    e_stop_topic: str = setting(
        'e_stop',
        'std_msgs/Bool, latched: while true, goals are refused and the one running aborts.',
    )
    safety_state_topic: str = setting(
        'safety/state', "safety_node's state (std_msgs/String, latched, at least every 0.2 s)."
    )
    safety_state_timeout_s: float = setting(
        1.0,
        'Goals are refused, and the one running is canceled, while no safety_node state came '
        'for this long (or none yet): nothing would stop the base. 0: not checked (a stack '
        'without safety_node).',
        low=0.0,
        high=60.0,
        live=True,
    )
    odom_topic: str = setting('/odom', 'Robot pose in the map frame.')
    pose_type: str = setting(
        'odometry',
        'Message type on odom_topic, or tf (tf_pose.parent_frame -> tf_pose.child_frame).',
        choices=POSE_TYPES,
    )
    tf_pose: TfPoseParameters = field(default_factory=TfPoseParameters)
    reliable_input: bool = setting(False, 'Subscribe to the pose reliably (newest 10 kept).')
    nav2: Nav2Parameters = field(default_factory=Nav2Parameters)
    explore: ExploreParameters = field(default_factory=ExploreParameters)
    diagnostics: InputDiagnosticsParameters = field(default_factory=InputDiagnosticsParameters)

    def __post_init__(self) -> None:
        check_tf_frame(self.pose_type, self.tf_pose, self.map_frame)
        self.follower_params()  # their checks across fields
        self.explorer_params()
        self.scans.grid_config(self.cloud, 0.0)

    @property
    def map_input_topic(self) -> str:
        """The topic of the chosen map source."""
        return self.map_topic if self.map_source == GRID else self.cloud_topic

    def follower_params(self) -> FollowerParams:
        """The PD follower's; its timeout is goal_timeout_s, which every backend keeps."""
        f = self.follower
        return FollowerParams(
            max_linear=f.max_linear,
            max_angular=f.max_angular,
            max_linear_accel=f.max_linear_accel,
            max_angular_accel=f.max_angular_accel,
            lookahead_m=f.lookahead_m,
            goal_tolerance_m=self.goal_tolerance_m,
            progress_window_s=f.progress_window_s,
            progress_min_m=f.progress_min_m,
            timeout_s=self.goal_timeout_s,
            pose_timeout_s=f.pose_timeout_s,
        )

    def explorer_params(self) -> ExplorerParams:
        """Exploration's limits; a frontier goal's start snaps like any goal's."""
        e = self.explore
        return ExplorerParams(
            min_size_cells=e.min_frontier_cells,
            blacklist_radius_m=e.blacklist_radius_m,
            time_budget_s=e.time_budget_s,
            max_goals=e.max_goals,
            snap_radius_m=self.start_snap_radius_m,
        )
