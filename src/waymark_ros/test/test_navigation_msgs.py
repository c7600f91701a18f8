# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Navigation message conversions and markers, built without DDS."""

from __future__ import annotations

import math

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from nav_msgs.msg import OccupancyGrid
from sensor_msgs.msg import PointCloud2, PointField
from visualization_msgs.msg import Marker

from waymark.geometry import quaternion_from_yaw
from waymark.navigation.frontiers import Frontier
from waymark_ros.ros.navigation_msgs import (
    cloud_msg,
    navigation_markers,
    occupancy_grid_msg,
    occupancy_map_from_msg,
    path_msg,
    points_from_cloud,
    twist_msg,
)

STAMP = Time(sec=5, nanosec=7)
POINTS = np.array([[0.0, 1.0, 2.0], [-1.5, 2.25, 0.125], [1e3, -1e3, 3.5]])


def grid_msg(frame_id='map', yaw=0.0, data=(0, 100, -1, 50, 0, 100)) -> OccupancyGrid:
    msg = OccupancyGrid()
    msg.header.frame_id = frame_id
    msg.header.stamp = STAMP
    msg.info.width, msg.info.height, msg.info.resolution = 3, 2, 0.1
    msg.info.origin.position.x, msg.info.origin.position.y = 1.0, -2.0
    q = msg.info.origin.orientation
    q.x, q.y, q.z, q.w = quaternion_from_yaw(yaw)
    msg.data = list(data)
    return msg


def packed_cloud(points, *, fmt='<f4', height=1, row_pad=0, bigendian=False) -> PointCloud2:
    """An organised cloud: x, y, z, intensity (uint16 at byte 24) and 2 padding bytes per
    point, fields listed out of order, `row_pad` bytes after each row."""
    pts = np.asarray(points, dtype=float)
    size = np.dtype(fmt).itemsize
    dtype = np.dtype(
        {
            'names': ['x', 'y', 'z', 'intensity'],
            'formats': [fmt, fmt, fmt, fmt[0] + 'u2'],
            'offsets': [0, size, 2 * size, 24],
            'itemsize': 28,
        }
    )
    width = len(pts) // height
    records = np.zeros((height, width), dtype=dtype)
    for i, name in enumerate('xyz'):
        records[name] = pts[:, i].reshape(height, width)
    records['intensity'] = 0xBEEF
    rows = records.view(np.uint8).reshape(height, -1)
    data = np.concatenate([rows, np.full((height, row_pad), 0xFF, np.uint8)], axis=1)
    float_type = PointField.FLOAT32 if size == 4 else PointField.FLOAT64
    fields = [
        PointField(name='intensity', offset=24, datatype=PointField.UINT16, count=1),
        PointField(name='z', offset=2 * size, datatype=float_type, count=1),
        PointField(name='x', offset=0, datatype=float_type, count=1),
        PointField(name='y', offset=size, datatype=float_type, count=1),
    ]
    msg = PointCloud2(height=height, width=width, fields=fields, is_bigendian=bigendian)
    msg.point_step = dtype.itemsize
    msg.row_step = dtype.itemsize * width + row_pad
    msg.data = data.tobytes()
    return msg


def test_occupancy_grid_becomes_the_map_it_describes():
    grid = occupancy_map_from_msg(grid_msg())

    assert grid.frame_id == 'map'
    assert grid.stamp_ns == 5_000_000_007
    geometry = grid.geometry
    assert (geometry.width, geometry.height) == (3, 2)
    assert (geometry.resolution, geometry.origin_x, geometry.origin_y) == pytest.approx(
        (0.1, 1.0, -2.0)
    )
    assert grid.cells.dtype == np.int8
    np.testing.assert_array_equal(grid.cells, [[0, 100, -1], [50, 0, 100]])
    # Row 0, column 1 (occupied) lies at x in [1.1, 1.2), y in [-2.0, -1.9).
    assert grid.cells[geometry.world_to_cell(1.15, -1.95)] == 100


@pytest.mark.parametrize(
    ('msg', 'message'),
    [
        (grid_msg(yaw=0.5), 'rotated'),
        (grid_msg(data=(0, 0, 0, 0, 0)), 'data has 5 values'),
        (grid_msg(frame_id=''), 'frame_id'),
    ],
)
def test_occupancy_grid_refusals(msg, message):
    with pytest.raises(ValueError, match=message):
        occupancy_map_from_msg(msg)


def test_cloud_round_trip_keeps_non_finite_points():
    points = np.vstack([POINTS, [[np.nan, 0.0, 1.0]]])
    msg = cloud_msg(points, 'odom', STAMP)

    assert (msg.header.frame_id, msg.header.stamp) == ('odom', STAMP)
    assert (msg.height, msg.width, msg.point_step, msg.row_step) == (1, 4, 12, 48)
    assert not msg.is_dense
    decoded = points_from_cloud(msg)
    assert decoded.dtype == np.float64 and decoded.shape == (4, 3)
    np.testing.assert_array_equal(decoded, points.astype(np.float32))
    assert cloud_msg(POINTS, 'odom', STAMP).is_dense
    assert points_from_cloud(cloud_msg(np.empty((0, 3)), 'odom', STAMP)).shape == (0, 3)


@pytest.mark.parametrize('fmt', ['<f4', '>f4', '<f8', '>f8'])
def test_organised_cloud_with_padding_extra_field_and_endianness(fmt):
    points = np.arange(18, dtype=float).reshape(6, 3) * 0.25 - 1.0
    msg = packed_cloud(points, fmt=fmt, height=2, row_pad=6, bigendian=fmt[0] == '>')

    assert msg.row_step > msg.width * msg.point_step
    np.testing.assert_array_equal(points_from_cloud(msg), points)


def test_cloud_refusals():
    no_z = cloud_msg(POINTS, 'odom', STAMP)
    no_z.fields = no_z.fields[:2]
    with pytest.raises(ValueError, match="'z' is missing"):
        points_from_cloud(no_z)

    short = cloud_msg(POINTS, 'odom', STAMP)
    short.data = short.data[:-1]
    with pytest.raises(ValueError, match='data has 35 bytes'):
        points_from_cloud(short)

    narrow = cloud_msg(POINTS, 'odom', STAMP)
    narrow.point_step = 8
    with pytest.raises(ValueError, match='ends past point_step'):
        points_from_cloud(narrow)

    ints = cloud_msg(POINTS, 'odom', STAMP)
    ints.fields[0].datatype = PointField.INT32
    with pytest.raises(ValueError, match='FLOAT32 and FLOAT64'):
        points_from_cloud(ints)

    with pytest.raises(ValueError, match='max_points=2'):
        points_from_cloud(cloud_msg(POINTS, 'odom', STAMP), max_points=2)


def test_path_poses_face_the_next_point():
    path = path_msg([(0.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 2.0), (0.0, 2.0)], 'map', STAMP)

    assert path.header.frame_id == 'map' and path.header.stamp == STAMP
    assert [(p.pose.position.x, p.pose.position.y) for p in path.poses][-1] == (0.0, 2.0)
    yaws = [2.0 * math.atan2(p.pose.orientation.z, p.pose.orientation.w) for p in path.poses]
    # The repeated point keeps the heading it arrived with; the last keeps its predecessor's.
    assert yaws == pytest.approx([0.0, 0.0, math.pi / 2, math.pi, math.pi])
    assert all(p.header.frame_id == 'map' for p in path.poses)

    single = path_msg(np.array([[3.0, 4.0]]), 'map', STAMP).poses
    assert len(single) == 1 and single[0].pose.orientation.w == 1.0
    assert path_msg([], 'map', STAMP).poses == []
    leading = path_msg([(0.0, 0.0), (0.0, 0.0), (0.0, -1.0)], 'map', STAMP).poses
    assert leading[0].pose.orientation.z == pytest.approx(math.sin(-math.pi / 4))
    with pytest.raises(ValueError, match='non-finite'):
        path_msg([(0.0, 0.0), (math.nan, 1.0)], 'map', STAMP)


def test_twist_carries_planar_velocity_and_refuses_non_finite():
    twist = twist_msg(0.4, -0.2)

    assert (twist.linear.x, twist.linear.y, twist.linear.z) == (0.4, 0.0, 0.0)
    assert (twist.angular.x, twist.angular.y, twist.angular.z) == (0.0, 0.0, -0.2)
    for linear, angular in [(math.nan, 0.0), (0.0, math.inf), (-math.inf, math.nan)]:
        with pytest.raises(ValueError, match='non-finite'):
            twist_msg(linear, angular)


def frontier(x: float, y: float) -> Frontier:
    return Frontier(centroid=(x, y), goal=(x, y), goal_cell=(0, 0), size_cells=4, length_m=0.2)


def added(array, namespace: str) -> list[Marker]:
    return [m for m in array.markers if m.ns == namespace and m.action == Marker.ADD]


def test_markers_start_with_deleteall_and_draw_only_what_is_given():
    empty = navigation_markers('map', STAMP)
    assert [m.action for m in empty.markers] == [Marker.DELETEALL]

    frontiers = [frontier(float(i), 1.0) for i in range(3)]
    array = navigation_markers(
        'map',
        STAMP,
        goal=(1.0, 2.0),
        snapped_goal=(1.0, 2.5),
        path=np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 2.5]]),
        frontiers=frontiers,
        chosen_frontier=frontiers[1],
        robot_radius_m=0.25,
    )
    assert array.markers[0].action == Marker.DELETEALL
    assert all(m.action == Marker.ADD for m in array.markers[1:])
    assert {m.header.frame_id for m in array.markers} == {'map'}
    assert all(m.header.stamp == STAMP for m in array.markers)
    assert {m.ns for m in array.markers[1:]} == {'goal', 'snapped_goal', 'path', 'frontiers'}

    (goal,) = added(array, 'goal')
    assert (goal.type, goal.pose.position.x, goal.pose.position.y) == (Marker.SPHERE, 1.0, 2.0)
    assert goal.scale.x == pytest.approx(0.5)
    snapped_sphere, snapped_line = added(array, 'snapped_goal')
    assert snapped_sphere.pose.position.y == 2.5
    assert snapped_sphere.color != goal.color
    assert snapped_line.type == Marker.LINE_STRIP
    assert [(p.x, p.y) for p in snapped_line.points] == [(1.0, 2.0), (1.0, 2.5)]
    (path,) = added(array, 'path')
    assert path.type == Marker.LINE_STRIP and len(path.points) == 3
    points, chosen = added(array, 'frontiers')
    assert points.type == Marker.POINTS
    assert [(p.x, p.y) for p in points.points] == [(0.0, 1.0), (1.0, 1.0), (2.0, 1.0)]
    assert chosen.type == Marker.SPHERE and chosen.pose.position.x == 1.0


def test_snapped_goal_is_drawn_only_when_it_differs():
    same = navigation_markers('map', STAMP, goal=(1.0, 2.0), snapped_goal=(1.0, 2.0))
    assert {m.ns for m in same.markers[1:]} == {'goal'}

    only_snapped = navigation_markers('map', STAMP, snapped_goal=(1.0, 2.0))
    assert [m.type for m in added(only_snapped, 'snapped_goal')] == [Marker.SPHERE]

    path_only = navigation_markers('map', STAMP, path=np.array([[0.0, 0.0], [1.0, 0.0]]))
    assert {m.ns for m in path_only.markers[1:]} == {'path'}


def test_frontier_points_are_capped():
    frontiers = [frontier(0.1 * i, 0.0) for i in range(20)]

    def drawn(**kwargs) -> list[float]:
        array = navigation_markers('map', STAMP, frontiers=frontiers, **kwargs)
        return [p.x for m in added(array, 'frontiers') for p in m.points]

    # The first ones are kept: frontiers come ranked, nearest first.
    assert drawn(max_frontiers=5) == pytest.approx([0.1 * i for i in range(5)])
    assert len(drawn()) == 20
    assert drawn(max_frontiers=0) == []


def test_markers_refuse_non_finite_points():
    with pytest.raises(ValueError, match='goal'):
        navigation_markers('map', STAMP, goal=(math.nan, 0.0))
    with pytest.raises(ValueError, match='path'):
        navigation_markers('map', STAMP, path=np.array([[0.0, 0.0], [math.inf, 0.0]]))


def test_a_grid_of_cells_becomes_a_map_that_reads_back_the_same():
    cells = np.array([[0, 100, -1], [0, 0, 50]], dtype=np.int8)
    msg = occupancy_grid_msg(cells, 0.1, (-1.0, 2.0), 'map', Time(sec=3))
    read = occupancy_map_from_msg(msg)
    assert np.array_equal(read.cells, cells) and read.frame_id == 'map'
    assert (read.geometry.origin_x, read.geometry.origin_y) == (-1.0, 2.0)
    assert read.geometry.world_to_cell(-0.85, 2.15) == (1, 1)
    with pytest.raises(ValueError, match='int8'):
        occupancy_grid_msg(cells.astype(float), 0.1, (0.0, 0.0), 'map', Time())
