# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""capture_node: camera + SLAM poses in, keyframes (image + camera pose) out.

The pairing of images with poses, the tracking-quality gate, map epochs and the keyframe
selection live in the core (waymark.memory.ingest.capture), shared with the offline tools; this
node converts messages, publishes keyframes and reports what happened to every input on
`capture/stats` (JSON) and `/diagnostics` (for rqt_robot_monitor and the like).

Every queue is bounded by a parameter: subscription queues by `input_queue_depth` (with
`reliable_input`, KEEP_ALL is bounded by the DDS resource limits and a reliable
publisher waits), the keyframe publisher by `output_queue_depth`, images waiting for poses
by `pending_images_max_mb`, poses by `pose_buffer_size`, the outbox by `outbox.*`.

Delivery is acknowledged: every keyframe also goes to an on-disk outbox in `state_dir`
and stays there until memory_node says on `keyframes/ack` that it has journaled it;
unacknowledged keyframes are sent again, oldest first, with a doubling wait, and at once
when a memory_node (re)appears. The session (name, next index, map epoch) is saved there
too, so a restarted capture_node continues it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Transform
from rclpy.event_handler import PublisherEventCallbacks, QoSPublisherMatchedInfo
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.time import Time
from sensor_msgs.msg import CompressedImage, Image
from std_msgs.msg import Bool, Empty, String

from waymark.geometry import Pose
from waymark.memory.entries import Keyframe
from waymark.memory.ingest.capture import MAX_EPOCH, CaptureConfig, KeyframeBuilder
from waymark.memory.ingest.keyframes import KeyframePolicy
from waymark.memory.ingest.outbox import CaptureState, KeyframeOutbox, OutboxLimits
from waymark.memory.storage.image_codec import (
    compressed_thumbnail,
    compressed_to_jpeg,
    raw_thumbnail,
    raw_to_jpeg,
)
from waymark_interfaces.msg import Keyframe as KeyframeMsg
from waymark_interfaces.msg import KeyframeAck
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import keyframe_to_msg, stamp_to_ns
from waymark_ros.ros.params import declare
from waymark_ros.ros.pose_input import POSE_TYPES, subscribe_pose
from waymark_ros.ros.spin import run_node

NS_PER_S = 1_000_000_000
DIAGNOSTIC_NAME = 'waymark: capture'


class CaptureNode(Node):
    def __init__(self) -> None:
        super().__init__('capture_node')
        session = declare(
            self,
            'session',
            '',
            'Session name; empty continues the saved session, or derives a new name from '
            'the first image time (UTC).',
        )
        state_dir = declare(
            self,
            'state_dir',
            '~/.waymark/capture',
            'Directory for the outbox and the saved session (one per capture_node).',
        )
        new_session = declare(
            self,
            'new_session',
            False,
            'Start a new session even when the saved one could be continued.',
        )
        rewind_s = declare(
            self,
            'resume_rewind_s',
            60.0,
            'With session empty: a first keyframe stamped more than this before the saved '
            "session's newest one (another recording) starts a new session.",
            low=0.0,
            high=86400.0,
        )
        outbox_limits = OutboxLimits(
            max_bytes=declare(
                self,
                'outbox.max_mb',
                1024,
                'Disk cap (MB) of keyframes not yet acknowledged; beyond it the oldest are '
                'dropped (outbox_dropped_full).',
                low=1,
                high=1_000_000,
            )
            << 20,
            max_age_s=declare(
                self,
                'outbox.max_age_s',
                86400.0,
                'Unacknowledged keyframes older than this are dropped (outbox_dropped_age).',
                low=1.0,
                high=30 * 86400.0,
            ),
            resend_initial_s=declare(
                self,
                'outbox.resend_initial_s',
                2.0,
                'Wait for an acknowledgement before the first resend.',
                low=0.1,
                high=600.0,
            ),
            resend_max_s=declare(
                self,
                'outbox.resend_max_s',
                30.0,
                'The wait doubles after each resend up to this (>= outbox.resend_initial_s).',
                low=0.1,
                high=3600.0,
            ),
            resend_batch=declare(
                self,
                'outbox.resend_batch',
                20,
                'Most keyframes resent per 0.1 s.',
                low=1,
                high=10_000,
            ),
        )
        map_frame = declare(self, 'map_frame', 'map', 'Frame the poses are expressed in.')
        image_topic = declare(self, 'image_topic', '/camera/image/compressed', 'Camera topic.')
        image_type = declare(
            self, 'image_type', 'compressed', 'Camera message type.', choices=('compressed', 'raw')
        )
        pose_topic = declare(self, 'pose_topic', '/odom', 'SLAM pose topic (map frame).')
        pose_type = declare(
            self,
            'pose_type',
            'odometry',
            'SLAM pose message type; odometry and pose_with_covariance carry the covariance '
            'the tracking gate reads.',
            choices=POSE_TYPES,
        )
        extrinsic_source = declare(
            self,
            'extrinsic_source',
            'parameter',
            'Where the camera extrinsic comes from: camera_extrinsic, or the static TF '
            'base_frame -> camera_frame, looked up once at start (needs tf2_ros).',
            choices=('parameter', 'tf'),
        )
        extrinsic = declare(
            self,
            'camera_extrinsic',
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
            'Camera pose in the pose source frame (base): x y z qx qy qz qw. Use the '
            'camera body frame (x forward), not the optical frame.',
        )
        base_frame = declare(
            self,
            'base_frame',
            'base_link',
            'With extrinsic_source tf: the frame the SLAM poses are of (child frame).',
        )
        camera_frame = declare(
            self,
            'camera_frame',
            'camera_link',
            'With extrinsic_source tf: the camera body frame (x forward, not optical).',
        )
        self._camera_hfov_deg = declare(
            self,
            'camera_hfov_deg',
            0.0,
            "The camera's horizontal field of view in degrees (data sheet; 0 = not stated). "
            'Reported in capture/stats; offline evaluation uses it when a bag has no '
            'CameraInfo.',
            low=0.0,
            high=180.0,
        )
        tf_timeout_s = declare(
            self,
            'tf_timeout_s',
            10.0,
            'With extrinsic_source tf: how long to wait for the transform at start.',
            low=0.1,
            high=600.0,
        )
        max_gap_s = declare(
            self,
            'max_pose_gap_s',
            0.2,
            'Largest time between an image and a pose to use it.',
            low=0.001,
            high=10.0,
        )
        pose_wait_s = declare(
            self,
            'max_pose_wait_s',
            0.5,
            'How long the pose stream may stall before waiting images are placed with '
            'the poses known so far.',
            low=0.0,
            high=10.0,
        )
        pending_mb = declare(
            self,
            'pending_images_max_mb',
            256,
            'Most image data (MB) waiting for poses; beyond it the oldest image is placed.',
            low=1,
            high=65536,
        )
        buffer_size = declare(
            self,
            'pose_buffer_size',
            10000,
            'Poses kept for lookup (10000: 100 s at 100 Hz, enough for fast replays).',
            low=2,
            high=1_000_000,
        )
        self._jpeg_quality = declare(
            self, 'jpeg_quality', 90, 'JPEG quality for re-encoded images.', low=10, high=100
        )
        reliable = declare(
            self,
            'reliable_input',
            False,
            'Subscribe reliably (bag replay) instead of best effort (live drivers).',
        )
        depth = declare(
            self, 'input_queue_depth', 50, 'Queue depth of best-effort input.', low=1, high=10_000
        )
        out_depth = declare(
            self, 'output_queue_depth', 200, 'Keyframe publisher queue depth.', low=1, high=100_000
        )
        policy = KeyframePolicy(
            min_interval_s=declare(
                self,
                'keyframe.min_interval_s',
                0.5,
                'Never two keyframes closer in time.',
                low=0.0,
                high=3600.0,
            ),
            max_interval_s=declare(
                self,
                'keyframe.max_interval_s',
                10.0,
                'Always a keyframe after this long (0: off); also the rate of keyframes '
                'while tracking is lost.',
                low=0.0,
                high=86400.0,
            ),
            min_distance_m=declare(
                self,
                'keyframe.min_distance_m',
                0.5,
                'Travel that triggers a keyframe.',
                low=0.0,
                high=1000.0,
            ),
            min_rotation_deg=declare(
                self,
                'keyframe.min_rotation_deg',
                20.0,
                'Turn that triggers a keyframe.',
                low=0.0,
                high=360.0,
            ),
            min_image_change=declare(
                self,
                'keyframe.min_image_change',
                0.0,
                'Change of the 32x24 grayscale thumbnail since the last keyframe (mean '
                'absolute difference, brightness removed) that triggers a keyframe; '
                '0: off, 0.05: a good start.',
                low=0.0,
                high=1.0,
            ),
        )
        max_variance = declare(
            self,
            'tracking.max_position_variance',
            1.0,
            'Tracking counts as lost while the pose position variance (m^2, largest of '
            'xx yy zz) is above this; 0: off. A NaN covariance is always lost.',
            low=0.0,
            high=1e6,
        )
        max_speed = declare(
            self,
            'tracking.max_speed_mps',
            5.0,
            'A faster pose jump (m/s) is a SLAM frame reset: a new map epoch; 0: off.',
            low=0.0,
            high=1000.0,
        )
        status_topic = declare(
            self,
            'tracking.status_topic',
            '',
            'std_msgs/Bool from SLAM, true while tracking is good; empty: not used.',
        )
        epoch_topic = declare(
            self,
            'tracking.epoch_topic',
            '',
            'std_msgs/Empty: each message starts a new map epoch (SLAM reset its map); '
            'empty: not used.',
        )
        epoch_start = declare(
            self,
            'map_epoch_start',
            0,
            'Map epoch of the first keyframes; a restarted node continuing a session '
            'sets the last epoch + 1.',
            low=0,
            high=MAX_EPOCH,
        )
        self._input_timeout_s = declare(
            self,
            'diagnostics.input_timeout_s',
            5.0,
            'Diagnostics: ERROR when images stop for this long, WARN when none came yet '
            'or poses stop for this long.',
            low=0.1,
            high=3600.0,
        )
        if len(extrinsic) != 7:
            raise ValueError(
                f'camera_extrinsic needs 7 numbers (x y z qx qy qz qw), got {len(extrinsic)}'
            )
        if extrinsic_source == 'tf':
            camera = lookup_extrinsic(self, base_frame, camera_frame, tf_timeout_s)
            self.get_logger().info(f'camera extrinsic from TF {base_frame} -> {camera_frame}')
        else:
            camera = Pose.checked(extrinsic[:3], extrinsic[3:])
        self._builder = KeyframeBuilder(
            CaptureConfig(
                session=session,
                map_frame=map_frame,
                camera_extrinsic=camera,
                max_pose_gap_s=max_gap_s,
                max_pose_wait_s=pose_wait_s,
                pending_bytes_max=pending_mb << 20,
                pose_buffer_size=buffer_size,
                policy=policy,
                max_position_variance=max_variance,
                max_speed_mps=max_speed,
                map_epoch_start=epoch_start,
            ),
            warn=self.get_logger().warning,
            info=self.get_logger().info,
        )
        state_path = Path(state_dir).expanduser()
        state_path.mkdir(parents=True, exist_ok=True)
        self._state_path = state_path / 'session.json'
        self._outbox = KeyframeOutbox(state_path / 'outbox', outbox_limits)
        saved = self._saved_state()
        if saved is not None and not new_session and session in ('', saved.session):
            self._builder.resume(saved, rewind_s=None if session else rewind_s)
            self.get_logger().info(
                f'continuing session {saved.session} from keyframe {saved.next_index} '
                f'in map epoch {self._builder.map_epoch}'
            )
        if len(self._outbox):
            self.get_logger().info(f'{len(self._outbox)} unacknowledged keyframes to resend')
        self._state_errors = 0
        self._reported_session = ''
        self._image_topic = image_topic
        self._started = time.monotonic()
        self._last_image: float | None = None
        self._last_pose: float | None = None

        self._publisher = self.create_publisher(
            KeyframeMsg,
            'keyframes',
            qos.keyframes(out_depth),
            event_callbacks=PublisherEventCallbacks(matched=self._on_matched),
        )
        self.create_subscription(
            KeyframeAck, 'keyframes/ack', self._on_ack, qos.keyframes(out_depth)
        )
        self._stats_publisher = self.create_publisher(String, 'capture/stats', qos.latched())
        self._diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        input_qos = qos.sensor_input(reliable, depth)
        subscribe_pose(self, pose_type, pose_topic, self._add_pose, input_qos)
        if image_type == 'compressed':
            self.create_subscription(CompressedImage, image_topic, self._on_compressed, input_qos)
        else:
            self.create_subscription(Image, image_topic, self._on_raw, input_qos)
        if status_topic:
            self.create_subscription(Bool, status_topic, self._on_status, input_qos)
        if epoch_topic:
            self.create_subscription(Empty, epoch_topic, self._on_epoch, input_qos)
        self.create_timer(1.0, self._publish_stats)
        self.create_timer(0.1, self._poll)
        self.get_logger().info(
            f'capturing {image_type} images from {image_topic} '
            f'with {pose_type} poses from {pose_topic}'
        )

    def _saved_state(self) -> CaptureState | None:
        try:
            return CaptureState.load(self._state_path)
        except ValueError as error:
            aside = self._state_path.with_suffix('.unreadable')
            self._state_path.replace(aside)
            self.get_logger().error(f'{error}; kept as {aside.name}, a new session starts')
            return None

    # Poses ---------------------------------------------------------------------------
    def _add_pose(self, header, pose, covariance: Sequence[float] | None) -> None:
        self._last_pose = time.monotonic()
        p, q = pose.position, pose.orientation
        self._publish(
            self._builder.add_pose(
                stamp_to_ns(header.stamp),
                header.frame_id,
                (p.x, p.y, p.z),
                (q.x, q.y, q.z, q.w),
                covariance,
            )
        )

    def _on_status(self, msg: Bool) -> None:
        self._builder.set_tracking_status(bool(msg.data))

    def _on_epoch(self, _msg: Empty) -> None:
        self._publish(self._builder.new_map_epoch('new map epoch requested'))

    # Images --------------------------------------------------------------------------
    def _on_compressed(self, msg: CompressedImage) -> None:
        # Decoding is deferred: only keyframes are encoded, and thumbnails (for the image
        # criterion) are made only for the frames the policy has to look at.
        def encode() -> bytes:
            return compressed_to_jpeg(msg.format, bytes(msg.data), self._jpeg_quality)

        def thumbnail() -> np.ndarray:
            return compressed_thumbnail(bytes(msg.data))

        self._add_image(msg.header, len(msg.data), encode, thumbnail)

    def _on_raw(self, msg: Image) -> None:
        def encode() -> bytes:
            return raw_to_jpeg(
                msg.encoding, msg.width, msg.height, msg.step, bytes(msg.data), self._jpeg_quality
            )

        def thumbnail() -> np.ndarray:
            return raw_thumbnail(msg.encoding, msg.width, msg.height, msg.step, bytes(msg.data))

        self._add_image(msg.header, len(msg.data), encode, thumbnail)

    def _add_image(self, header, size: int, encode, thumbnail) -> None:
        self._last_image = time.monotonic()
        self._publish(self._builder.add_image(stamp_to_ns(header.stamp), size, encode, thumbnail))

    # Output --------------------------------------------------------------------------
    def _poll(self) -> None:
        self._publish(self._builder.poll())
        if self._publisher.get_subscription_count():
            for keyframe in self._outbox.due():
                self._publisher.publish(keyframe_to_msg(keyframe))

    def _publish(self, keyframes: list[Keyframe]) -> None:
        if keyframes:  # first, so that a restart never numbers a keyframe twice
            self._save_state()
        for keyframe in keyframes:
            # Kept before it is sent: an acknowledgement can only find a kept keyframe.
            if not self._outbox.add(keyframe):
                self.get_logger().error(
                    f'keyframe {keyframe.session}/{keyframe.index} not kept in the outbox '
                    '(bigger than outbox.max_mb, or the disk refused it): sent once only',
                    throttle_duration_sec=10.0,
                )
            self._publisher.publish(keyframe_to_msg(keyframe))
        if self._builder.session != self._reported_session:
            self._reported_session = self._builder.session
            self.get_logger().info(f'session {self._reported_session}')

    def _save_state(self) -> None:
        try:
            self._builder.state.save(self._state_path)
        except OSError as error:
            self._state_errors += 1
            self.get_logger().error(
                f'could not save the session state ({error}): a restart may start a new session',
                throttle_duration_sec=10.0,
            )

    def _on_ack(self, msg: KeyframeAck) -> None:
        self._outbox.acknowledge(msg.session, msg.durable)
        if self._outbox.acknowledge(msg.session, msg.refused, refused=True):
            self.get_logger().warning(
                f'memory_node refused keyframes {list(msg.refused)} of {msg.session} (see its log)'
            )

    def _on_matched(self, info: QoSPublisherMatchedInfo) -> None:
        if info.current_count_change > 0:  # a memory_node (re)started: send the backlog now
            self._outbox.hurry()

    def _publish_stats(self) -> None:
        builder = self._builder
        stats = dict(
            builder.counts,
            **self._outbox.counts,
            outbox_pending=len(self._outbox),
            outbox_bytes=self._outbox.used_bytes,
            state_write_errors=self._state_errors,
            session=builder.session,
            buffered_poses=builder.buffered_poses,
            images_pending=builder.pending_images,
            map_epoch=builder.map_epoch,
            tracking_lost=builder.tracking_lost,
            camera_hfov_deg=self._camera_hfov_deg,
        )
        self._stats_publisher.publish(String(data=json.dumps(stats, sort_keys=True)))
        level, message = self._health()
        status = DiagnosticStatus(
            level=level,
            name=DIAGNOSTIC_NAME,
            message=message,
            hardware_id=self._image_topic,
            values=[KeyValue(key=key, value=str(value)) for key, value in sorted(stats.items())],
        )
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(array)

    def _health(self) -> tuple[bytes, str]:
        """ERROR when images stopped; WARN when a stream is missing, tracking is lost or
        images pile up waiting for poses; OK otherwise."""
        now = time.monotonic()
        timeout = self._input_timeout_s
        if self._last_image is not None and now - self._last_image > timeout:
            return DiagnosticStatus.ERROR, f'no images for {now - self._last_image:.0f} s'
        problems = []
        if self._last_image is None and now - self._started > timeout:
            problems.append(f'no images yet on {self._image_topic}')
        last_pose = self._last_pose if self._last_pose is not None else self._started
        if now - last_pose > timeout:
            problems.append(f'no poses for {now - last_pose:.0f} s')
        if self._builder.tracking_lost:
            problems.append(f'tracking lost: {self._builder.tracking_lost}')
        if self._builder.pending_bytes > self._builder.config.pending_bytes_max // 2:
            problems.append('images piling up waiting for poses')
        if len(self._outbox) and not self._publisher.get_subscription_count():
            problems.append(f'no memory_node: {len(self._outbox)} keyframes kept in the outbox')
        dropped = sum(
            self._outbox.counts[reason]
            for reason in ('outbox_dropped_full', 'outbox_dropped_age', 'outbox_too_big')
        )
        if dropped:
            problems.append(f'outbox limits dropped {dropped} unacknowledged keyframes')
        if problems:
            return DiagnosticStatus.WARN, '; '.join(problems)
        return DiagnosticStatus.OK, 'capturing'


def lookup_extrinsic(node: Node, base_frame: str, camera_frame: str, timeout_s: float) -> Pose:
    """The camera pose in the base frame from TF, looked up once, waiting up to timeout_s.

    Once: the camera is bolted on, so the static transform does not change, and a lookup
    per image would tie capture to the timing of the TF tree for nothing. tf2_ros comes
    with a ROS install, not with the PyPI wheels, so it is imported only here.
    """
    try:
        import tf2_ros
    except ImportError as error:
        raise RuntimeError(
            "extrinsic_source 'tf' needs the tf2_ros Python package, which is not installed "
            '(it comes with a ROS 2 install, not with the PyPI wheels); install it, or set '
            'extrinsic_source:=parameter and give camera_extrinsic'
        ) from error
    buffer = tf2_ros.Buffer()
    listener = tf2_ros.TransformListener(buffer, node, spin_thread=False)
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    try:
        deadline = time.monotonic() + timeout_s
        while not buffer.can_transform(base_frame, camera_frame, Time()):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f'no transform {base_frame} -> {camera_frame} on /tf_static or /tf '
                    f'within tf_timeout_s ({timeout_s:g} s): is the robot description '
                    '(or a static_transform_publisher) running?'
                )
            executor.spin_once(timeout_sec=0.1)
        transform = buffer.lookup_transform(base_frame, camera_frame, Time()).transform
    finally:
        executor.remove_node(node)
        executor.shutdown()
        listener.unregister()
    return pose_from_transform(transform)


def pose_from_transform(transform: Transform) -> Pose:
    """Raises InvalidPoseError on NaN/inf or a zero quaternion."""
    t, r = transform.translation, transform.rotation
    return Pose.checked((t.x, t.y, t.z), (r.x, r.y, r.z, r.w))


def main(args=None) -> None:
    run_node(CaptureNode, 'capture_node', args)


if __name__ == '__main__':
    main()
