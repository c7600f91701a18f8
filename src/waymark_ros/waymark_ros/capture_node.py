# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""capture_node: camera + SLAM poses in, keyframes (image + camera pose) out.

The pairing of images with poses and the keyframe selection live in the core
(waymark.memory.capture), shared with the offline tools; this node converts messages,
publishes keyframes and reports what happened to every input on `capture/stats`.
"""

from __future__ import annotations

import json

from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image
from std_msgs.msg import String

from waymark.geometry import Pose
from waymark.memory.capture import CaptureConfig, KeyframeBuilder
from waymark.memory.image_codec import compressed_to_jpeg, raw_to_jpeg
from waymark.memory.keyframes import KeyframePolicy
from waymark_interfaces.msg import Keyframe as KeyframeMsg
from waymark_ros import qos
from waymark_ros.conversions import keyframe_to_msg, stamp_to_ns
from waymark_ros.params import declare
from waymark_ros.spin import run_node

NS_PER_S = 1_000_000_000


class CaptureNode(Node):
    def __init__(self) -> None:
        super().__init__('capture_node')
        session = declare(
            self, 'session', '', 'Session name; empty derives one from the first image time (UTC).'
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
        if len(extrinsic) != 7:
            raise ValueError(
                f'camera_extrinsic needs 7 numbers (x y z qx qy qz qw), got {len(extrinsic)}'
            )
        self._builder = KeyframeBuilder(
            CaptureConfig(
                session=session,
                map_frame=map_frame,
                camera_extrinsic=Pose.checked(extrinsic[:3], extrinsic[3:]),
                max_pose_gap_s=max_gap_s,
                max_pose_wait_s=pose_wait_s,
                pending_bytes_max=pending_mb << 20,
                pose_buffer_size=buffer_size,
                policy=policy,
            ),
            warn=self.get_logger().warn,
        )
        self._reported_session = ''

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
        self.create_timer(0.1, self._poll)
        self.get_logger().info(
            f'capturing {image_type} images from {image_topic} '
            f'with {pose_type} poses from {pose_topic}'
        )

    # Poses ---------------------------------------------------------------------------
    def _on_odometry(self, msg: Odometry) -> None:
        self._add_pose(msg.header, msg.pose.pose)

    def _on_pose_stamped(self, msg: PoseStamped) -> None:
        self._add_pose(msg.header, msg.pose)

    def _add_pose(self, header, pose) -> None:
        p, q = pose.position, pose.orientation
        self._publish(
            self._builder.add_pose(
                stamp_to_ns(header.stamp), header.frame_id, (p.x, p.y, p.z), (q.x, q.y, q.z, q.w)
            )
        )

    def _on_compressed(self, msg: CompressedImage) -> None:
        # Encoding is deferred: only the images that become keyframes are ever decoded.
        def encode() -> bytes:
            return compressed_to_jpeg(msg.format, bytes(msg.data), self._jpeg_quality)

        self._publish(self._builder.add_image(stamp_to_ns(msg.header.stamp), len(msg.data), encode))

    def _on_raw(self, msg: Image) -> None:
        def encode() -> bytes:
            return raw_to_jpeg(
                msg.encoding, msg.width, msg.height, msg.step, bytes(msg.data), self._jpeg_quality
            )

        self._publish(self._builder.add_image(stamp_to_ns(msg.header.stamp), len(msg.data), encode))

    def _poll(self) -> None:
        self._publish(self._builder.poll())

    def _publish(self, keyframes) -> None:
        for keyframe in keyframes:
            self._publisher.publish(keyframe_to_msg(keyframe))
        if self._builder.session != self._reported_session:
            self._reported_session = self._builder.session
            self.get_logger().info(f'session {self._reported_session}')

    def _publish_stats(self) -> None:
        stats = dict(
            self._builder.counts,
            session=self._builder.session,
            buffered_poses=self._builder.buffered_poses,
            images_pending=self._builder.pending_images,
        )
        self._stats_publisher.publish(String(data=json.dumps(stats, sort_keys=True)))


def main(args=None) -> None:
    run_node(CaptureNode, 'capture_node', args)


if __name__ == '__main__':
    main()
