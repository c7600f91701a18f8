# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Message <-> navigation core conversions, and RViz markers of what the navigator is doing.

Pure functions over messages, so they are tested without DDS. Whatever reads a message
validates it here: a malformed map or cloud raises ValueError instead of planning on garbage,
and no NaN leaves for cmd_vel. PointCloud2 is decoded with numpy (sensor_msgs_py is not
part of the ROS wheels this stack runs on).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, PoseStamped, Quaternion, Twist
from nav_msgs.msg import OccupancyGrid, Path
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from waymark.geometry import quaternion_from_yaw
from waymark.navigation.frontiers import Frontier
from waymark.navigation.grid import OccupancyMap
from waymark_ros.ros.conversions import stamp_to_ns

MAX_CLOUD_POINTS = 20_000_000
_FIELD_SIZES = {
    PointField.INT8: 1,
    PointField.UINT8: 1,
    PointField.INT16: 2,
    PointField.UINT16: 2,
    PointField.INT32: 4,
    PointField.UINT32: 4,
    PointField.FLOAT32: 4,
    PointField.FLOAT64: 8,
}
_FLOAT_FORMATS = {PointField.FLOAT32: 'f4', PointField.FLOAT64: 'f8'}
_XYZ = ('x', 'y', 'z')

_LIFT_M = 0.05  # markers float above the map plane, which RViz also draws at z = 0
_MIN_DISC_M = 0.1  # a zero-radius robot still gets a visible goal
_SAME_GOAL_M = 1e-6
_GOAL = ColorRGBA(r=0.1, g=0.8, b=0.2, a=0.6)
_SNAPPED = ColorRGBA(r=1.0, g=0.55, b=0.0, a=0.8)
_PATH = ColorRGBA(r=0.0, g=0.6, b=1.0, a=0.9)
_FRONTIER = ColorRGBA(r=0.85, g=0.2, b=0.85, a=0.9)
_CHOSEN = ColorRGBA(r=1.0, g=0.9, b=0.1, a=0.9)


def occupancy_map_from_msg(msg: OccupancyGrid) -> OccupancyMap:
    """The core map of an OccupancyGrid; ValueError on a map that cannot be planned on.

    An empty frame_id is refused: the map could not be related to the robot's pose.
    """
    if not msg.header.frame_id:
        raise ValueError('map has an empty frame_id')
    info = msg.info
    p, q = info.origin.position, info.origin.orientation
    return OccupancyMap.from_ros(
        msg.header.frame_id,
        np.frombuffer(msg.data, dtype=np.int8),
        int(info.width),
        int(info.height),
        float(info.resolution),
        (p.x, p.y, p.z),
        (q.x, q.y, q.z, q.w),
        stamp_ns=stamp_to_ns(msg.header.stamp),
    )


def occupancy_grid_msg(
    cells: np.ndarray, resolution: float, origin_xy: tuple[float, float], frame_id: str, stamp: Time
) -> OccupancyGrid:
    """An OccupancyGrid of int8 cells (row = y), its corner at `origin_xy`, unrotated."""
    cells = np.asarray(cells)
    if cells.ndim != 2 or cells.dtype != np.int8:
        raise ValueError(f'cells must be a 2-D int8 array, got {cells.dtype} {cells.shape}')
    msg = OccupancyGrid()
    msg.header.frame_id, msg.header.stamp = frame_id, stamp
    msg.info.map_load_time = stamp
    msg.info.resolution = float(resolution)
    msg.info.height, msg.info.width = cells.shape
    msg.info.origin.position.x, msg.info.origin.position.y = map(float, origin_xy)
    msg.info.origin.orientation.w = 1.0
    msg.data = cells.ravel().tolist()
    return msg


def points_from_cloud(msg: PointCloud2, *, max_points: int = MAX_CLOUD_POINTS) -> np.ndarray:
    """(N, 3) float64 x, y, z of every point, row by row; non-finite points are kept.

    x, y and z must be FLOAT32 or FLOAT64 fields; other fields are skipped by their offsets,
    and organised clouds may pad their rows (row_step > width * point_step). Raises
    ValueError on missing or duplicate coordinates, sizes that do not add up, or more than
    `max_points` points (checked before anything is allocated).
    """
    coordinates = [f for f in msg.fields if f.name in _XYZ]
    names = [f.name for f in coordinates]
    for name in _XYZ:
        if names.count(name) != 1:
            found = 'missing' if name not in names else 'duplicated'
            raise ValueError(f'point cloud field {name!r} is {found}')
    formats = []
    for field in coordinates:
        if field.datatype not in _FLOAT_FORMATS:
            raise ValueError(
                f'point cloud field {field.name!r} has datatype {field.datatype}; '
                'only FLOAT32 and FLOAT64 are supported'
            )
        if field.count > 1:
            raise ValueError(f'point cloud field {field.name!r} has count {field.count}, not 1')
        formats.append(('>' if msg.is_bigendian else '<') + _FLOAT_FORMATS[field.datatype])
    point_step, row_step = int(msg.point_step), int(msg.row_step)
    width, height = int(msg.width), int(msg.height)
    for field in msg.fields:
        size = _FIELD_SIZES.get(field.datatype)
        if size is not None and field.offset + size * max(1, field.count) > point_step:
            raise ValueError(f'point cloud field {field.name!r} ends past point_step {point_step}')
    if row_step < width * point_step:
        raise ValueError(f'row_step {row_step} < width {width} * point_step {point_step}')
    if len(msg.data) < height * row_step:
        raise ValueError(
            f'point cloud data has {len(msg.data)} bytes, height {height} * row_step '
            f'{row_step} expected'
        )
    if width * height > max_points:
        raise ValueError(f'point cloud has {width * height} points, max_points={max_points}')
    if width * height == 0:
        return np.empty((0, 3))
    dtype = np.dtype(
        {
            'names': names,
            'formats': formats,
            'offsets': [f.offset for f in coordinates],
            'itemsize': point_step,
        }
    )
    # A strided view of the message's bytes: row padding is stepped over, not copied.
    cloud = np.ndarray(
        (height, width),
        dtype=dtype,
        buffer=np.frombuffer(msg.data, dtype=np.uint8),
        strides=(row_step, point_step),
    )
    return np.stack([cloud[name].ravel().astype(np.float64) for name in _XYZ], axis=1)


def cloud_msg(points: np.ndarray, frame_id: str, stamp: Time) -> PointCloud2:
    """An unorganised little-endian FLOAT32 x, y, z cloud (the inverse of points_from_cloud)."""
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f'points must be (N, 3), got shape {pts.shape}')
    fields = [
        PointField(name=name, offset=4 * i, datatype=PointField.FLOAT32, count=1)
        for i, name in enumerate(_XYZ)
    ]
    return PointCloud2(
        header=Header(frame_id=frame_id, stamp=stamp),
        height=1,
        width=pts.shape[0],
        fields=fields,
        is_bigendian=False,
        point_step=12,
        row_step=12 * pts.shape[0],
        data=pts.astype('<f4').tobytes(),
        is_dense=bool(np.isfinite(pts).all()),
    )


def path_msg(
    points: np.ndarray | Sequence[tuple[float, float]], frame_id: str, stamp: Time
) -> Path:
    """A Path through (x, y) points, each pose facing the next point.

    The last pose keeps the heading it arrived with; a repeated point takes the heading of
    the segment before it (or, at the start, the first real segment), not atan2(0, 0).
    """
    xy = _xy(points, 'path')
    yaws = np.zeros(len(xy))
    if len(xy) >= 2:
        step = np.diff(xy, axis=0)
        moving = np.hypot(step[:, 0], step[:, 1]) > 0
        if moving.any():
            source = np.where(moving, np.arange(len(step)), -1)
            source = np.maximum.accumulate(source)
            source[source < 0] = np.argmax(moving)
            segment_yaw = np.arctan2(step[:, 1], step[:, 0])[source]
            yaws = np.append(segment_yaw, segment_yaw[-1])
    header = Header(frame_id=frame_id, stamp=stamp)
    poses = []
    for (x, y), yaw in zip(xy.tolist(), yaws.tolist(), strict=True):
        pose = PoseStamped(header=header)
        pose.pose.position.x, pose.pose.position.y = x, y
        qx, qy, qz, qw = quaternion_from_yaw(yaw)
        pose.pose.orientation = Quaternion(x=qx, y=qy, z=qz, w=qw)
        poses.append(pose)
    return Path(header=header, poses=poses)


def twist_msg(linear: float, angular: float) -> Twist:
    """A planar velocity command; ValueError on NaN/inf, which must never reach a base."""
    linear, angular = float(linear), float(angular)
    if not (math.isfinite(linear) and math.isfinite(angular)):
        raise ValueError(f'non-finite velocity command: linear {linear}, angular {angular}')
    msg = Twist()
    msg.linear.x = linear
    msg.angular.z = angular
    return msg


def navigation_markers(
    frame_id: str,
    stamp: Time,
    *,
    goal: tuple[float, float] | None = None,
    snapped_goal: tuple[float, float] | None = None,
    path: np.ndarray | None = None,
    frontiers: Sequence[Frontier] = (),
    chosen_frontier: Frontier | None = None,
    robot_radius_m: float = 0.3,
    max_frontiers: int = 500,
) -> MarkerArray:
    """The navigator's state for RViz, one namespace per thing so that each can be toggled.

    'goal' is the requested goal, a disc of the robot's size; 'snapped_goal' the goal the
    planner actually uses, with a line from the request, drawn only when they differ;
    'path' the planned path; 'frontiers' the candidates' goal cells (the first
    `max_frontiers`, which keeps RViz responsive on a large map) and the chosen one as a
    sphere. The array starts with a DELETEALL: it is republished whole, and without it
    markers of a finished goal would stay on screen.
    """
    if not (math.isfinite(robot_radius_m) and robot_radius_m >= 0):
        raise ValueError(f'robot_radius_m must be finite and >= 0, got {robot_radius_m}')
    if max_frontiers < 0:
        raise ValueError(f'max_frontiers must be >= 0, got {max_frontiers}')
    header = Header(frame_id=frame_id, stamp=stamp)
    disc = max(2.0 * robot_radius_m, _MIN_DISC_M)
    markers = [Marker(header=header, ns='', action=Marker.DELETEALL)]
    requested = None if goal is None else _xy([goal], 'goal')[0]
    snapped = None if snapped_goal is None else _xy([snapped_goal], 'snapped_goal')[0]
    if requested is not None:
        markers.append(_sphere(header, 'goal', 0, requested, disc, _GOAL))
    if snapped is not None and (requested is None or math.dist(requested, snapped) > _SAME_GOAL_M):
        markers.append(_sphere(header, 'snapped_goal', 0, snapped, disc, _SNAPPED))
        if requested is not None:
            markers.append(_line(header, 'snapped_goal', 1, [requested, snapped], _SNAPPED))
    if path is not None:
        path_xy = _xy(path, 'path')
        if len(path_xy) >= 2:
            markers.append(_line(header, 'path', 0, path_xy.tolist(), _PATH))
    shown = frontiers[:max_frontiers]
    if shown:
        cloud = _marker(header, 'frontiers', 0, Marker.POINTS)
        cloud.scale.x = cloud.scale.y = 0.15
        cloud.color = _FRONTIER
        cloud.points = [_point(xy) for xy in _xy([f.goal for f in shown], 'frontier').tolist()]
        markers.append(cloud)
    if chosen_frontier is not None:
        chosen = _xy([chosen_frontier.goal], 'chosen_frontier')[0]
        markers.append(_sphere(header, 'frontiers', 1, chosen, 0.35, _CHOSEN))
    return MarkerArray(markers=markers)


def _xy(points: np.ndarray | Sequence[Sequence[float]], what: str) -> np.ndarray:
    """Points as finite (N, 2) floats: RViz rejects a marker with any NaN in it."""
    xy = np.asarray(points, dtype=float)
    if xy.size == 0:
        return np.empty((0, 2))
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ValueError(f'{what} points must be (N, 2), got shape {xy.shape}')
    if not np.isfinite(xy).all():
        raise ValueError(f'{what} has non-finite points')
    return xy


def _marker(header: Header, namespace: str, marker_id: int, kind: int) -> Marker:
    marker = Marker(header=header, ns=namespace, id=marker_id, type=kind, action=Marker.ADD)
    marker.pose.orientation.w = 1.0
    return marker


def _sphere(
    header: Header,
    namespace: str,
    marker_id: int,
    xy: Sequence[float],
    diameter: float,
    colour: ColorRGBA,
) -> Marker:
    sphere = _marker(header, namespace, marker_id, Marker.SPHERE)
    sphere.pose.position = _point(xy)
    sphere.scale.x = sphere.scale.y = diameter
    sphere.scale.z = min(diameter, 0.2)  # flat: a footprint, not a ball hiding the map
    sphere.color = colour
    return sphere


def _line(
    header: Header,
    namespace: str,
    marker_id: int,
    points: Sequence[Sequence[float]],
    colour: ColorRGBA,
) -> Marker:
    line = _marker(header, namespace, marker_id, Marker.LINE_STRIP)
    line.scale.x = 0.05
    line.color = colour
    line.points = [_point(xy) for xy in points]
    return line


def _point(xy: Sequence[float]) -> Point:
    return Point(x=float(xy[0]), y=float(xy[1]), z=_LIFT_M)
