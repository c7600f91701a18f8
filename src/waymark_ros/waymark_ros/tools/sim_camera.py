# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The demo's live camera: the synthetic world rendered where the simulated base stands.

sim_base_node is a kinematic base without sensors; once the demo's recorded tour has been
replayed, task_node still needs camera frames to turn for stop views and to be judged by.
This node renders the world from the base's latest odometry through the camera extrinsic
of the recording, as the recorded tour did, and publishes JPEG frames at a fixed period. It
renders nothing before the first odometry message, so a frame never shows a pose the base
did not report.
"""

from __future__ import annotations

import math
import threading

import cv2
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage

from waymark.geometry import Pose
from waymark.sim.render import render
from waymark.sim.world import World
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import pose_from_msg

JPEG_QUALITY = 90


class SimCamera(Node):
    def __init__(
        self,
        world: World,
        extrinsic: Pose,
        hfov_deg: float,
        image_topic: str,
        odom_topic: str = '/odom',
        period_s: float = 0.5,
        size: tuple[int, int] = (640, 480),
    ) -> None:
        super().__init__('waymark_demo_camera')
        self._world = world
        self._extrinsic = extrinsic
        self._hfov_deg = hfov_deg
        self._size = size
        self._lock = threading.Lock()
        self._base: Pose | None = None
        self._frame_id = 'camera'
        self.create_subscription(Odometry, odom_topic, self._on_odom, qos.state_input(True, 5))
        self._publisher = self.create_publisher(
            CompressedImage, image_topic, qos.sensor_input(True, 2)
        )
        self.create_timer(period_s, self._publish)

    def _on_odom(self, msg: Odometry) -> None:
        pose = pose_from_msg(msg.pose.pose)
        with self._lock:
            self._base = pose

    def _publish(self) -> None:
        with self._lock:
            base = self._base
        if base is None:
            return
        x, y, _ = base.position
        eye = Pose.from_xyz_yaw(x, y, 0.0, base.yaw).compose(self._extrinsic)
        width, height = self._size
        rgb = render(self._world, eye, width, height, self._hfov_deg)
        ok, jpeg = cv2.imencode(
            '.jpg', cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY]
        )
        if not ok:
            self.get_logger().error('a rendered frame did not encode')
            return
        msg = CompressedImage(format='jpeg', data=jpeg.tobytes())
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self._frame_id
        self._publisher.publish(msg)


class CameraThread:
    """A SimCamera spun on a thread of its own, for as long as the demo needs it."""

    def __init__(self, camera: SimCamera) -> None:
        self.camera = camera
        self._executor = SingleThreadedExecutor()
        self._executor.add_node(camera)
        self._thread = threading.Thread(target=self._executor.spin, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._executor.shutdown()
        self._thread.join(timeout=5.0)
        self.camera.destroy_node()


def facing(world: World, text: str, distance_m: float) -> Pose:
    """A camera pose `distance_m` in front of the sign that reads `text`, looking at it."""
    sign = next(s for s in world.signs if s.text == text)
    x, y, z = sign.position
    return Pose.from_xyz_yaw(
        x + distance_m * math.cos(sign.yaw),
        y + distance_m * math.sin(sign.yaw),
        z,
        sign.yaw + math.pi,
    )
