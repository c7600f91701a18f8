# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""How the robot's drivers record, for simulated bags: image encoding and topic, pose
message and topic, and the rates the drivers publish at, modelled on the sensor presets
(config/sensors). The suite gives each world of a new family one of these, chosen from
(family, size, seed), so the evaluation meets every shape the presets accept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class SensorShape:
    """One recording shape; `write_bag` takes its fields as keyword arguments."""

    name: str
    image_format: Literal['jpeg', 'raw']
    image_topic: str
    pose_type: Literal['odometry', 'pose_stamped', 'pose_with_covariance']
    pose_topic: str
    camera_rate_hz: float
    odom_rate_hz: float

    def bag_options(self) -> dict:
        return {
            'image_format': self.image_format,
            'image_topic': self.image_topic,
            'pose_type': self.pose_type,
            'pose_topic': self.pose_topic,
            'camera_rate_hz': self.camera_rate_hz,
            'odom_rate_hz': self.odom_rate_hz,
        }


SHAPES: tuple[SensorShape, ...] = (
    # ZED 2i: compressed images and a pose with covariance, both at the grab rate.
    SensorShape(
        'zed2i',
        'jpeg',
        '/zed/zed_node/rgb/color/rect/image/compressed',
        'pose_with_covariance',
        '/zed/zed_node/pose_with_covariance',
        15.0,
        15.0,
    ),
    # A camera beside FAST-LIO on a Mid-360: compressed at 30 Hz, odometry from the IMU-rate
    # propagation at 50 Hz.
    SensorShape(
        'fast_lio', 'jpeg', '/camera/image/compressed', 'odometry', '/Odometry', 30.0, 50.0
    ),
    # RealSense D455 raw colour (rgb8) at its 6 Hz mode, so raw bags stay a reasonable size.
    SensorShape(
        'realsense_raw',
        'raw',
        '/camera/camera/color/image_raw',
        'odometry',
        '/Odometry',
        6.0,
        100.0,
    ),
    # Point-LIO publishes point by point: odometry at 200 Hz.
    SensorShape(
        'point_lio',
        'jpeg',
        '/camera/image/compressed',
        'odometry',
        '/aft_mapped_to_init',
        15.0,
        200.0,
    ),
    # A ZED's plain PoseStamped topic, at 30 Hz.
    SensorShape(
        'zed_pose',
        'jpeg',
        '/zed/zed_node/rgb/color/rect/image/compressed',
        'pose_stamped',
        '/zed/zed_node/pose',
        30.0,
        30.0,
    ),
)
SIZE_STEP = {'small': 0, 'medium': 1, 'large': 2}


def sensor_shape(family_index: int, size: str, seed: int) -> SensorShape:
    """The shape of one world: a rotation over (family, size, seed), so the standard suite
    (three new families, three sizes, two seeds) records every shape. Large worlds skip the
    raw shape: at 230 kB a frame (320x240 rgb8) their tours would write gigabytes."""
    index = family_index + SIZE_STEP[size] + 3 * seed
    shape = SHAPES[index % len(SHAPES)]
    if size == 'large' and shape.image_format == 'raw':
        shape = SHAPES[(index + 1) % len(SHAPES)]
    return shape
