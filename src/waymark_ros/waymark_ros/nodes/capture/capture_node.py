# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""capture_node: camera + SLAM poses in, keyframes (image + camera pose) out.

The pairing of images with poses, the tracking-quality gate, map epochs and the keyframe
selection live in the core (waymark.memory.ingest.capture), shared with the offline tools; this
node converts messages, publishes keyframes and reports what happened to every input on
`capture/stats` (JSON) and `/diagnostics` (for rqt_robot_monitor and the like); an image or
pose stream silent for `diagnostics.input_timeout_s` is also said on the console. The
poses come from a topic or, with `pose_type: tf`, from TF (no covariance then, so the
tracking gate sees only `tracking.status_topic` and pose jumps).

Images and poses must be stamped by one clock: the core checks it from their arrival
times (waymark.memory.ingest.clocks; `clock.*`), and clocks that disagree by more than
`clock.max_offset_s` are said once on the console and in `/diagnostics` (ERROR, with
the offset) for as long as they do; images get no pose meanwhile (docs/clocks.md).

Keyframes carry the camera's intrinsics, from the newest CameraInfo on
`camera_info_topic` (else from `camera_hfov_deg`), and, with a `depth_topic`, the median
depths of a coarse grid over the image: each depth image is reduced to that grid as it
comes (waymark.memory.ingest.depth) and dropped; a keyframe takes the grid nearest its stamp.

Every queue is bounded by a parameter: subscription queues by `input_queue_depth` (with
`reliable_input`, KEEP_ALL is bounded by the DDS resource limits and a reliable
publisher waits), the keyframe publisher by `output_queue_depth`, images waiting for poses
by `pending_images_max_mb`, poses by `pose_buffer_size`, depth grids by
`depth.buffer_size`, the outbox by `outbox.*`.

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
from functools import partial
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Transform
from rclpy.event_handler import PublisherEventCallbacks, QoSPublisherMatchedInfo
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import Bool, Empty, String

from waymark.geometry import Pose
from waymark.memory.entries import Keyframe
from waymark.memory.ingest.capture import KeyframeBuilder
from waymark.memory.ingest.depth import depth_of_message
from waymark.memory.ingest.outbox import CaptureState, KeyframeOutbox
from waymark.memory.storage.image_codec import (
    compressed_thumbnail,
    compressed_to_jpeg,
    raw_thumbnail,
    raw_to_jpeg,
)
from waymark.parameters.capture import CaptureParameters
from waymark_interfaces.msg import Keyframe as KeyframeMsg
from waymark_interfaces.msg import KeyframeAck
from waymark_ros.nodes.capture.clock_report import ClockReport
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import stamp_to_ns
from waymark_ros.ros.input_monitor import InputMonitor
from waymark_ros.ros.memory_msgs import keyframe_to_msg
from waymark_ros.ros.params import declare_settings
from waymark_ros.ros.pose_input import subscribe_pose
from waymark_ros.ros.spin import run_node
from waymark_ros.ros.tf_once import lookup_once

NS_PER_S = 1_000_000_000


class CaptureNode(Node):
    def __init__(self) -> None:
        super().__init__('capture_node')
        params = declare_settings(self, CaptureParameters, on_change=self._on_parameters)
        self._jpeg_quality = params.jpeg_quality
        self._input_timeout_s = params.diagnostics.input_timeout_s
        self._camera_hfov_deg = params.camera_hfov_deg
        if params.extrinsic_source == 'tf':
            camera = lookup_extrinsic(
                self, params.base_frame, params.camera_frame, params.tf_timeout_s
            )
            self.get_logger().info(
                f'camera extrinsic from TF {params.base_frame} -> {params.camera_frame}'
            )
        else:
            extrinsic = params.camera_extrinsic
            camera = Pose.checked(extrinsic[:3], extrinsic[3:])
        self._builder = KeyframeBuilder(
            params.capture_config(camera),
            warn=self.get_logger().warning,
            info=self.get_logger().info,
        )
        state_path = Path(params.state_dir).expanduser()
        state_path.mkdir(parents=True, exist_ok=True)
        self._state_path = state_path / 'session.json'
        self._outbox = KeyframeOutbox(state_path / 'outbox', params.outbox.limits())
        saved = self._saved_state()
        session = params.session
        if saved is not None and not params.new_session and session in ('', saved.session):
            self._builder.resume(saved, rewind_s=None if session else params.resume_rewind_s)
            self.get_logger().info(
                f'continuing session {saved.session} from keyframe {saved.next_index} '
                f'in map epoch {self._builder.map_epoch}'
            )
        if len(self._outbox):
            self.get_logger().info(f'{len(self._outbox)} unacknowledged keyframes to resend')
        self._state_errors = 0
        self._reported_session = ''
        self._image_topic = params.image_topic
        self._started = time.monotonic()
        self._last_image: float | None = None
        self._last_pose: float | None = None

        self._publisher = self.create_publisher(
            KeyframeMsg,
            'keyframes',
            qos.keyframes(params.output_queue_depth),
            event_callbacks=PublisherEventCallbacks(matched=self._on_matched),
        )
        self.create_subscription(
            KeyframeAck, 'keyframes/ack', self._on_ack, qos.keyframes(params.output_queue_depth)
        )
        self._stats_publisher = self.create_publisher(String, 'capture/stats', qos.latched())
        self._diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        input_qos = qos.sensor_input(params.reliable_input, params.input_queue_depth)
        poses = subscribe_pose(
            self, params.pose_type, params.pose_topic, self._add_pose, input_qos, tf=params.tf_pose
        )
        image_type, image_topic = params.image_type, params.image_topic
        diagnostics = params.diagnostics
        self._monitor = InputMonitor(self, diagnostics.input_timeout_s, diagnostics.repeat_s)
        self._image_seen = self._monitor.watch('image', image_topic)
        self._pose_seen = self._monitor.watch('pose', poses.source, detail=lambda: poses.last_error)
        self._clock_report = ClockReport(self, image_topic, poses.source)
        if image_type == 'compressed':
            self.create_subscription(CompressedImage, image_topic, self._on_compressed, input_qos)
        else:
            self.create_subscription(Image, image_topic, self._on_raw, input_qos)
        info_topic = params.camera_info_source()
        if info_topic:
            self.create_subscription(CameraInfo, info_topic, self._on_camera_info, input_qos)
        if params.depth_topic:
            self.create_subscription(Image, params.depth_topic, self._on_depth, input_qos)
        tracking = params.tracking
        if tracking.status_topic:
            self.create_subscription(Bool, tracking.status_topic, self._on_status, input_qos)
        if tracking.epoch_topic:
            self.create_subscription(Empty, tracking.epoch_topic, self._on_epoch, input_qos)
        self.create_timer(1.0, self._publish_stats)
        self.create_timer(0.1, self._poll)
        self.get_logger().info(
            f'capturing {image_type} images from {image_topic} '
            f'with {params.pose_type} poses from {poses.source}; '
            f'intrinsics from {info_topic or "camera_hfov_deg"}; '
            f'depth from {params.depth_topic or "nowhere"}'
        )

    def _on_parameters(self, params: CaptureParameters) -> None:
        """Live parameters: the keyframe policy, JPEG quality and diagnostics timeout."""
        self._builder.set_policy(params.keyframe)
        self._jpeg_quality = params.jpeg_quality
        self._input_timeout_s = params.diagnostics.input_timeout_s
        self._monitor.use(params.diagnostics.input_timeout_s, params.diagnostics.repeat_s)

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
        self._pose_seen()
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
        self._image_seen()
        self._publish(self._builder.add_image(stamp_to_ns(header.stamp), size, encode, thumbnail))

    def _on_camera_info(self, msg: CameraInfo) -> None:
        self._builder.set_camera_info(msg.width, msg.height, list(msg.k))

    def _on_depth(self, msg: Image) -> None:
        decode = partial(depth_of_message, msg)
        self._publish(self._builder.add_depth(stamp_to_ns(msg.header.stamp), decode))

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
            **builder.clocks.summary(),
        )
        self._stats_publisher.publish(String(data=json.dumps(stats, sort_keys=True)))
        level, message = self._health()
        status = DiagnosticStatus(
            level=level,
            name=f'{self.get_name()}: capture',
            message=message,
            hardware_id=self._image_topic,
            values=[KeyValue(key=key, value=str(value)) for key, value in sorted(stats.items())],
        )
        clocks = self._clock_report.check(builder.clocks)
        array = DiagnosticArray(status=[status, clocks, *self._monitor.check()])
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
    """The camera pose in the base frame from TF, looked up once, waiting up to timeout_s:
    the camera is bolted on, so the static transform does not change."""
    try:
        transform = lookup_once(node, base_frame, camera_frame, timeout_s)
    except ImportError as error:
        raise RuntimeError(
            "extrinsic_source 'tf' needs the tf2_ros Python package, which is not installed "
            '(it comes with a ROS 2 install, not with the PyPI wheels); install it, or set '
            'extrinsic_source:=parameter and give camera_extrinsic'
        ) from error
    except TimeoutError as error:
        raise RuntimeError(
            f'no transform {base_frame} -> {camera_frame} on /tf_static or /tf '
            f'within tf_timeout_s ({timeout_s:g} s): is the robot description '
            '(or a static_transform_publisher) running?'
        ) from error
    return pose_from_transform(transform)


def pose_from_transform(transform: Transform) -> Pose:
    """Raises InvalidPoseError on NaN/inf or a zero quaternion."""
    t, r = transform.translation, transform.rotation
    return Pose.checked((t.x, t.y, t.z), (r.x, r.y, r.z, r.w))


def main(args=None) -> None:
    run_node(CaptureNode, 'capture_node', args)


if __name__ == '__main__':
    main()
