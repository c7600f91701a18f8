# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""capture_node: camera + SLAM poses in, keyframes (image + camera pose) out.

Poses arrive faster than images and on their own clock grid, so each image gets the
pose interpolated at its own stamp. An image waits (briefly, in a bounded queue) until
a pose at or after its stamp has arrived, since the two topics are delivered
independently. Images without a pose close enough in time are dropped and counted: a
guessed position would poison memory for good.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter, deque
from datetime import datetime, timezone

from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image
from std_msgs.msg import String

from waymark.geometry import InvalidPoseError, Pose, PoseBuffer
from waymark.memory.entries import Keyframe, check_session_name
from waymark.memory.keyframes import KeyframePolicy, KeyframeSelector
from waymark_interfaces.msg import Keyframe as KeyframeMsg
from waymark_ros import qos
from waymark_ros.conversions import keyframe_to_msg, pose_from_msg, stamp_to_ns
from waymark_ros.image_codec import ImageDecodeError, compressed_to_jpeg, raw_to_jpeg
from waymark_ros.params import declare
from waymark_ros.spin import run_node

NS_PER_S = 1_000_000_000


class CaptureNode(Node):
    def __init__(self) -> None:
        super().__init__('capture_node')
        self._session = declare(
            self, 'session', '', 'Session name; empty derives one from the first image time (UTC).'
        )
        self._map_frame = declare(self, 'map_frame', 'map', 'Frame the poses are expressed in.')
        image_topic = declare(self, 'image_topic', '/camera/image/compressed', 'Camera topic.')
        image_type = declare(
            self, 'image_type', 'compressed', 'Camera message type.', choices=('compressed', 'raw')
        )
        pose_topic = declare(self, 'pose_topic', '/odom', 'SLAM pose topic (map frame).')
        pose_type = declare(
            self,
            'pose_type',
            'odometry',
            'SLAM pose message type.',
            choices=('odometry', 'pose_stamped'),
        )
        extrinsic = declare(
            self,
            'camera_extrinsic',
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
            'Camera pose in the pose source frame (base): x y z qx qy qz qw.',
        )
        max_gap_s = declare(
            self,
            'max_pose_gap_s',
            0.2,
            'Largest time between an image and a pose to use it.',
            low=0.001,
            high=10.0,
        )
        self._pose_wait_s = declare(
            self,
            'max_pose_wait_s',
            0.5,
            'How long the pose stream may stall before waiting images are placed with '
            'the poses known so far.',
            low=0.0,
            high=10.0,
        )
        self._pending_bytes_max = declare(
            self,
            'pending_images_max_mb',
            256,
            'Most image data (MB) waiting for poses; beyond it the oldest image is placed.',
            low=1,
            high=65536,
        ) * (1 << 20)
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
                'Always a keyframe after this long (0: off).',
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
        )
        if self._session:
            check_session_name(self._session)
        if len(extrinsic) != 7:
            raise ValueError(
                f'camera_extrinsic needs 7 numbers (x y z qx qy qz qw), got {len(extrinsic)}'
            )
        self._extrinsic = Pose.checked(extrinsic[:3], extrinsic[3:])
        self._max_gap_ns = int(max_gap_s * NS_PER_S)
        self._poses = PoseBuffer(capacity=buffer_size)
        self._selector = KeyframeSelector(policy)
        self._index = 0
        self._last_image_ns: int | None = None
        self._pending: deque[tuple[int, int, object]] = deque()
        self._pending_bytes = 0
        self._last_input_wall = time.monotonic()
        self.counts: Counter[str] = Counter()

        self._publisher = self.create_publisher(KeyframeMsg, 'keyframes', qos.keyframes(out_depth))
        self._stats_publisher = self.create_publisher(String, 'capture/stats', qos.latched())
        input_qos = qos.sensor_input(reliable, depth)
        if pose_type == 'odometry':
            self.create_subscription(Odometry, pose_topic, self._on_odometry, input_qos)
        else:
            self.create_subscription(PoseStamped, pose_topic, self._on_pose_stamped, input_qos)
        if image_type == 'compressed':
            self.create_subscription(CompressedImage, image_topic, self._on_compressed, input_qos)
        else:
            self.create_subscription(Image, image_topic, self._on_raw, input_qos)
        self.create_timer(1.0, self._publish_stats)
        self.create_timer(0.1, self._resolve_pending)
        self.get_logger().info(
            f'capturing {image_type} images from {image_topic} '
            f'with {pose_type} poses from {pose_topic}'
        )

    # Poses ---------------------------------------------------------------------------
    def _on_odometry(self, msg: Odometry) -> None:
        self._add_pose(msg.header, msg.pose.pose)

    def _on_pose_stamped(self, msg: PoseStamped) -> None:
        self._add_pose(msg.header, msg.pose)

    def _add_pose(self, header, pose_msg) -> None:
        self.counts['poses_received'] += 1
        if header.frame_id and header.frame_id != self._map_frame:
            self._count_drop(
                'pose_wrong_frame',
                f'pose in frame {header.frame_id!r}, expected {self._map_frame!r}',
            )
            return
        try:
            pose = pose_from_msg(pose_msg)
        except InvalidPoseError as error:
            self._count_drop('pose_invalid', str(error))
            return
        if not self._poses.add(stamp_to_ns(header.stamp), pose):
            self.counts['pose_time_reset'] += 1
            self._selector.reset()
            self.get_logger().warn('pose time went backwards: pose buffer reset')
        self._last_input_wall = time.monotonic()
        self._resolve_pending()

    # Images --------------------------------------------------------------------------
    def _on_compressed(self, msg: CompressedImage) -> None:
        self._on_image(
            msg.header, len(msg.data), lambda: compressed_to_jpeg(msg, self._jpeg_quality)
        )

    def _on_raw(self, msg: Image) -> None:
        self._on_image(msg.header, len(msg.data), lambda: raw_to_jpeg(msg, self._jpeg_quality))

    def _on_image(self, header, size: int, encode) -> None:
        self.counts['images_received'] += 1
        stamp_ns = stamp_to_ns(header.stamp)
        if self._last_image_ns is not None and stamp_ns < self._last_image_ns:
            self.counts['image_time_reset'] += 1
            self._selector.reset()
            self.get_logger().warn('image time went backwards: keyframe selection restarted')
        self._last_image_ns = stamp_ns
        if not self._pending:
            self._last_input_wall = time.monotonic()
        self._pending.append((stamp_ns, size, encode))
        self._pending_bytes += size
        self._resolve_pending()

    def _resolve_pending(self) -> None:
        """Place waiting images whose pose is known.

        Images may run ahead of the poses (the topics are delivered independently, and a
        fast replay takes one message per topic at a time), so an image waits as long as
        poses keep coming; only a stalled pose stream or the memory bound places it early.
        """
        stalled = time.monotonic() - self._last_input_wall >= self._pose_wait_s
        while self._pending:
            stamp_ns, size, encode = self._pending[0]
            newest = self._poses.newest_stamp
            ready = newest is not None and newest >= stamp_ns
            overflow = self._pending_bytes > self._pending_bytes_max
            if not (ready or stalled or overflow):
                return
            if overflow and not ready:
                self.counts['image_pending_overflow'] += 1
            self._pending.popleft()
            self._pending_bytes -= size
            self._place_image(stamp_ns, encode)

    def _place_image(self, stamp_ns: int, encode) -> None:
        base = self._poses.lookup(stamp_ns, self._max_gap_ns)
        if base is None:
            span = (self._poses.stamps[0], self._poses.stamps[-1]) if len(self._poses) else None
            self._count_drop(
                'image_without_pose',
                f'no pose within {self._max_gap_ns / 1e6:.0f} ms of the image at {stamp_ns} '
                f'(poses known for {span})',
            )
            return
        camera = base.compose(self._extrinsic)
        if not self._selector.wants(stamp_ns, camera):
            return
        try:
            jpeg = encode()
        except ImageDecodeError as error:
            self._count_drop('image_undecodable', str(error))
            return
        if not self._session:
            self._session = datetime.fromtimestamp(stamp_ns / NS_PER_S, tz=timezone.utc).strftime(
                'run-%Y%m%dT%H%M%SZ'
            )
            self.get_logger().info(f'session {self._session}')
        keyframe = Keyframe(
            session=self._session,
            index=self._index,
            stamp_ns=stamp_ns,
            pose=camera,
            pose_valid=True,
            map_epoch=0,
            image=jpeg,
            frame_id=self._map_frame,
        )
        self._publisher.publish(keyframe_to_msg(keyframe))
        self._selector.accept(stamp_ns, camera)
        self._index += 1
        self.counts['keyframes_published'] += 1

    def _count_drop(self, reason: str, detail: str) -> None:
        self.counts[reason] += 1
        if self.counts[reason] == 1 or math.log2(self.counts[reason]).is_integer():
            self.get_logger().warn(f'{detail} (dropped {self.counts[reason]} so far)')

    def _publish_stats(self) -> None:
        stats = dict(
            self.counts,
            session=self._session,
            buffered_poses=len(self._poses),
            images_pending=len(self._pending),
        )
        self._stats_publisher.publish(String(data=json.dumps(stats, sort_keys=True)))


def main(args=None) -> None:
    run_node(CaptureNode, 'capture_node', args)


if __name__ == '__main__':
    main()
