# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The map origin's height above the floor, for the point-cloud map: a parameter, or the
floor frame's place in the map frame from TF, looked up once at configure.

Once: the floor under a standing robot does not move in the map, and a lookup per map
would tie the map to the timing of the TF tree (ros.tf_once).
"""

from __future__ import annotations

from rclpy.node import Node

from waymark.navigation.floor import origin_height_from_floor
from waymark.parameters.navigator import CLOUD, FLOOR_TF, NavigatorParameters
from waymark_ros.ros.tf_once import lookup_once


def map_origin_height(node: Node, settings: NavigatorParameters) -> float:
    """Height of the map frame's origin above the floor (0 without a point-cloud map)."""
    cloud = settings.cloud
    if settings.map_source != CLOUD:
        return 0.0
    if cloud.floor_source != FLOOR_TF:
        return cloud.map_origin_height_m
    floor_z = lookup_floor_z(node, settings.map_frame, cloud.floor_frame, cloud.tf_timeout_s)
    height = origin_height_from_floor(floor_z)
    node.get_logger().info(
        f'floor from TF: {cloud.floor_frame} lies {floor_z:+.3f} m along {settings.map_frame} '
        f'z; the map origin is {height:.3f} m above the floor'
    )
    return height


def lookup_floor_z(node: Node, map_frame: str, floor_frame: str, timeout_s: float) -> float:
    """z of floor_frame's origin in map_frame from /tf and /tf_static, waiting timeout_s."""
    try:
        return float(lookup_once(node, map_frame, floor_frame, timeout_s).translation.z)
    except ImportError as error:
        raise RuntimeError(
            "cloud.floor_source 'tf' needs the tf2_ros Python package, which is not "
            'installed (it comes with a ROS 2 install, not with the PyPI wheels); install '
            'it, or set cloud.floor_source:=parameter and give cloud.map_origin_height_m'
        ) from error
    except TimeoutError as error:
        raise RuntimeError(
            f'no transform {map_frame} -> {floor_frame} on /tf or /tf_static within '
            f'cloud.tf_timeout_s ({timeout_s:g} s): are the SLAM (map -> base) and '
            'the robot description (base -> floor frame) publishing?'
        ) from error
