# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""capture_node's parameters."""

from __future__ import annotations

from dataclasses import dataclass, field

from waymark.geometry import Pose
from waymark.memory.ingest.capture import MAX_EPOCH, CaptureConfig
from waymark.memory.ingest.clocks import ClockCheckConfig
from waymark.memory.ingest.depth import DepthGrid
from waymark.memory.ingest.keyframes import KeyframePolicy
from waymark.memory.ingest.outbox import OutboxLimits
from waymark.parameters.common import (
    POSE_TYPES,
    InputDiagnosticsParameters,
    TfPoseParameters,
    check_tf_frame,
)
from waymark.settings import setting

MB = 1 << 20


@dataclass(frozen=True)
class OutboxParameters:
    max_mb: int = setting(
        OutboxLimits.max_bytes // MB,
        'Disk cap (MB) of keyframes not yet acknowledged; beyond it the oldest are dropped '
        '(outbox_dropped_full).',
        low=1,
        high=1_000_000,
    )
    max_age_s: float = setting(
        OutboxLimits.max_age_s,
        'Unacknowledged keyframes older than this are dropped (outbox_dropped_age).',
        low=1.0,
        high=30 * 86400.0,
    )
    resend_initial_s: float = setting(
        OutboxLimits.resend_initial_s,
        'Wait for an acknowledgement before the first resend.',
        low=0.1,
        high=600.0,
    )
    resend_max_s: float = setting(
        OutboxLimits.resend_max_s,
        'The wait doubles after each resend up to this (>= outbox.resend_initial_s).',
        low=0.1,
        high=3600.0,
    )
    resend_batch: int = setting(
        OutboxLimits.resend_batch, 'Most keyframes resent per 0.1 s.', low=1, high=10_000
    )

    def limits(self) -> OutboxLimits:
        return OutboxLimits(
            max_bytes=self.max_mb * MB,
            max_age_s=self.max_age_s,
            resend_initial_s=self.resend_initial_s,
            resend_max_s=self.resend_max_s,
            resend_batch=self.resend_batch,
        )

    def __post_init__(self) -> None:
        self.limits()  # its checks across fields


@dataclass(frozen=True)
class TrackingParameters:
    max_position_variance: float = setting(
        CaptureConfig.max_position_variance,
        'Tracking counts as lost while the pose position variance (m^2, largest of xx yy '
        'zz) is above this; 0: off. A NaN covariance is always lost.',
        low=0.0,
        high=1e6,
    )
    max_speed_mps: float = setting(
        CaptureConfig.max_speed_mps,
        'A faster pose jump (m/s) is a SLAM frame reset: a new map epoch; 0: off.',
        low=0.0,
        high=1000.0,
    )
    status_topic: str = setting(
        '', 'std_msgs/Bool from SLAM, true while tracking is good; empty: not used.'
    )
    epoch_topic: str = setting(
        '',
        'std_msgs/Empty: each message starts a new map epoch (SLAM reset its map); '
        'empty: not used.',
    )


@dataclass(frozen=True)
class DepthParameters:
    columns: int = setting(
        DepthGrid.columns, 'Columns of the depth grid a keyframe keeps.', low=1, high=256
    )
    rows: int = setting(DepthGrid.rows, 'Rows of the depth grid a keyframe keeps.', low=1, high=256)
    min_range_m: float = setting(
        DepthGrid.min_range_m,
        'Depths nearer than this (m) are not measurements (below the sensor minimum).',
        low=0.0,
        high=100.0,
    )
    max_range_m: float = setting(
        DepthGrid.max_range_m,
        'Depths farther than this (m) are too noisy to use (> depth.min_range_m).',
        low=0.01,
        high=1000.0,
    )
    max_pixels_per_cell: int = setting(
        DepthGrid.max_pixels_per_cell,
        'Pixels read per grid cell at most (a stride over large images): bounds the CPU time.',
        low=1,
        high=1_000_000,
    )
    max_gap_s: float = setting(
        CaptureConfig.depth_max_gap_s,
        'Largest time between an image and the depth image paired with it.',
        low=0.001,
        high=1.0,
    )
    buffer_size: int = setting(
        CaptureConfig.depth_buffer_size,
        'Depth grids kept for pairing (60: 2 s at 30 Hz).',
        low=1,
        high=10_000,
    )

    def grid(self) -> DepthGrid:
        return DepthGrid(
            self.columns, self.rows, self.min_range_m, self.max_range_m, self.max_pixels_per_cell
        )

    def __post_init__(self) -> None:
        self.grid()  # its checks across fields


@dataclass(frozen=True)
class DiagnosticsParameters(InputDiagnosticsParameters):
    input_timeout_s: float = setting(
        5.0,
        'Diagnostics: ERROR when images stop for this long, WARN when none came yet or '
        'poses stop for this long; the console says so too.',
        low=0.1,
        high=3600.0,
        live=True,
    )


@dataclass(frozen=True)
class CaptureParameters:
    session: str = setting(
        CaptureConfig.session,
        'Session name; empty continues the saved session, or derives a new name from the '
        'first image time (UTC).',
    )
    robot_id: str = setting(
        CaptureConfig.robot_id,
        "This robot's id (as memory_node's robot_id): derived session names start with "
        'it, so robots sharing one memory never derive the same one. Empty: none.',
    )
    state_dir: str = setting(
        '~/.waymark/capture',
        'Directory for the outbox and the saved session (one per capture_node).',
    )
    new_session: bool = setting(
        False, 'Start a new session even when the saved one could be continued.'
    )
    resume_rewind_s: float = setting(
        60.0,
        'With session empty: a first keyframe stamped more than this before the saved '
        "session's newest one (another recording) starts a new session.",
        low=0.0,
        high=86400.0,
    )
    outbox: OutboxParameters = field(default_factory=OutboxParameters)
    map_frame: str = setting(CaptureConfig.map_frame, 'Frame the poses are expressed in.')
    image_topic: str = setting('/camera/image/compressed', 'Camera topic.')
    image_type: str = setting('compressed', 'Camera message type.', choices=('compressed', 'raw'))
    camera_info_topic: str = setting(
        'auto',
        "The camera's sensor_msgs/CameraInfo (its K gives the keyframes' intrinsics); auto: "
        "the image topic's sibling camera_info (image_transport's convention); empty: "
        'intrinsics from camera_hfov_deg and the image size.',
    )
    depth_topic: str = setting(
        '',
        'Depth image registered to the colour image (sensor_msgs/Image, 32FC1 metres or '
        '16UC1 millimetres); keyframes keep a coarse grid of it (depth.*); empty: none.',
    )
    depth: DepthParameters = field(default_factory=DepthParameters)
    pose_topic: str = setting('/odom', 'SLAM pose topic (map frame).')
    pose_type: str = setting(
        'odometry',
        'SLAM pose message type, or tf (tf_pose.parent_frame -> tf_pose.child_frame); '
        'odometry and pose_with_covariance carry the covariance the tracking gate reads.',
        choices=POSE_TYPES,
    )
    tf_pose: TfPoseParameters = field(default_factory=TfPoseParameters)
    extrinsic_source: str = setting(
        'parameter',
        'Where the camera extrinsic comes from: camera_extrinsic, or the static TF '
        'base_frame -> camera_frame, looked up once at start (needs tf2_ros).',
        choices=('parameter', 'tf'),
    )
    camera_extrinsic: tuple[float, ...] = setting(
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0),
        'Camera pose in the pose source frame (base): x y z qx qy qz qw. Use the camera '
        'body frame (x forward), not the optical frame.',
    )
    base_frame: str = setting(
        'base_link', 'With extrinsic_source tf: the frame the SLAM poses are of (child frame).'
    )
    camera_frame: str = setting(
        'camera_link', 'With extrinsic_source tf: the camera body frame (x forward, not optical).'
    )
    camera_hfov_deg: float = setting(
        0.0,
        "The camera's horizontal field of view in degrees (data sheet; 0 = not stated). "
        'Gives the keyframes their intrinsics until a CameraInfo comes; offline evaluation '
        'uses it when a bag has no CameraInfo.',
        low=0.0,
        high=179.0,
    )
    tf_timeout_s: float = setting(
        10.0,
        'With extrinsic_source tf: how long to wait for the transform at start.',
        low=0.1,
        high=600.0,
    )
    max_pose_gap_s: float = setting(
        CaptureConfig.max_pose_gap_s,
        'Largest time between an image and a pose to use it.',
        low=0.001,
        high=10.0,
    )
    max_pose_wait_s: float = setting(
        CaptureConfig.max_pose_wait_s,
        'How long the pose stream may stall before waiting images are placed with the poses '
        'known so far.',
        low=0.0,
        high=10.0,
    )
    clock: ClockCheckConfig = field(default_factory=ClockCheckConfig)
    pending_images_max_mb: int = setting(
        CaptureConfig.pending_bytes_max // MB,
        'Most image data (MB) waiting for poses; beyond it the oldest image is placed.',
        low=1,
        high=65536,
    )
    pose_buffer_size: int = setting(
        CaptureConfig.pose_buffer_size,
        'Poses kept for lookup (10000: 100 s at 100 Hz, enough for fast replays).',
        low=2,
        high=1_000_000,
    )
    jpeg_quality: int = setting(
        90, 'JPEG quality for re-encoded images.', low=10, high=100, live=True
    )
    reliable_input: bool = setting(
        False, 'Subscribe reliably (bag replay) instead of best effort (live drivers).'
    )
    input_queue_depth: int = setting(50, 'Queue depth of best-effort input.', low=1, high=10_000)
    output_queue_depth: int = setting(200, 'Keyframe publisher queue depth.', low=1, high=100_000)
    keyframe: KeyframePolicy = field(default_factory=KeyframePolicy)
    tracking: TrackingParameters = field(default_factory=TrackingParameters)
    map_epoch_start: int = setting(
        CaptureConfig.map_epoch_start,
        'Map epoch of the first keyframes; a restarted node continuing a session sets the '
        'last epoch + 1.',
        low=0,
        high=MAX_EPOCH,
    )
    diagnostics: DiagnosticsParameters = field(default_factory=DiagnosticsParameters)

    def __post_init__(self) -> None:
        check_tf_frame(self.pose_type, self.tf_pose, self.map_frame)
        if len(self.camera_extrinsic) != 7:
            raise ValueError(
                'camera_extrinsic needs 7 numbers (x y z qx qy qz qw), got '
                f'{len(self.camera_extrinsic)}'
            )

    def capture_config(self, camera_extrinsic: Pose) -> CaptureConfig:
        """The keyframe builder's config, with the extrinsic from wherever it came."""
        return CaptureConfig(
            session=self.session,
            robot_id=self.robot_id,
            map_frame=self.map_frame,
            camera_extrinsic=camera_extrinsic,
            max_pose_gap_s=self.max_pose_gap_s,
            max_pose_wait_s=self.max_pose_wait_s,
            pending_bytes_max=self.pending_images_max_mb * MB,
            pose_buffer_size=self.pose_buffer_size,
            policy=self.keyframe,
            max_position_variance=self.tracking.max_position_variance,
            max_speed_mps=self.tracking.max_speed_mps,
            map_epoch_start=self.map_epoch_start,
            camera_hfov_deg=self.camera_hfov_deg,
            pair_depth=bool(self.depth_topic),
            depth_grid=self.depth.grid(),
            depth_max_gap_s=self.depth.max_gap_s,
            depth_buffer_size=self.depth.buffer_size,
            clock=self.clock,
        )

    def camera_info_source(self) -> str:
        """The CameraInfo topic to subscribe ('' for none)."""
        if self.camera_info_topic != 'auto':
            return self.camera_info_topic
        base = self.image_topic
        if self.image_type == 'compressed' and base.endswith('/compressed'):
            base = base.removesuffix('/compressed')
        return base.rsplit('/', 1)[0] + '/camera_info'
