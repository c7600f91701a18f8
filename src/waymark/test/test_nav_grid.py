# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Occupancy maps: cell geometry, ROS fields, point-cloud projection and inflation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from waymark.navigation.grid import (
    FREE,
    OCCUPIED,
    UNKNOWN,
    GridGeometry,
    OccupancyMap,
    inflate,
    project_point_cloud,
)

IDENTITY = (0.0, 0.0, 0.0, 1.0)


def make_map(cells: np.ndarray, resolution: float = 0.1) -> OccupancyMap:
    height, width = cells.shape
    return OccupancyMap(
        'map', GridGeometry(resolution, 0.0, 0.0, width, height), cells.astype(np.int8)
    )


# -- geometry ------------------------------------------------------------------------------


def test_world_cell_round_trip_and_vectorised_variants_agree():
    geometry = GridGeometry(0.05, -3.2, 1.7, 140, 90)
    rng = np.random.default_rng(0)
    xy = rng.uniform([-3.2, 1.7], [-3.2 + 7.0, 1.7 + 4.5], size=(500, 2))
    cells = geometry.world_to_cells(xy)
    centres = geometry.cells_to_world(cells)
    assert np.all(np.abs(centres - xy) <= 0.025 + 1e-12)
    assert np.array_equal(geometry.world_to_cells(centres), cells)
    for (x, y), (row, col), centre in zip(xy[:50], cells[:50], centres[:50], strict=True):
        assert geometry.world_to_cell(x, y) == (row, col)
        assert geometry.cell_to_world(row, col) == pytest.approx(tuple(centre))
        assert geometry.contains(x, y)


def test_rows_grow_with_y_and_cells_floor_below_the_origin():
    geometry = GridGeometry(0.5, -1.0, -2.0, 4, 6)
    assert geometry.world_to_cell(-1.0, -2.0) == (0, 0)
    assert geometry.world_to_cell(-0.4, -0.9) == (2, 1)
    assert geometry.world_to_cell(-1.01, -2.0) == (0, -1)
    assert geometry.cell_to_world(2, 1) == pytest.approx((-0.25, -0.75))
    assert not geometry.contains(-1.01, -2.0)
    assert not geometry.contains(1.0, 0.0)  # the far edge belongs to the next cell
    assert geometry.contains(0.99, 0.99)
    assert not geometry.contains(math.nan, 0.0)
    with pytest.raises(ValueError):
        geometry.world_to_cell(math.inf, 0.0)


@pytest.mark.parametrize('point', [(-1e308, 0.0), (0.0, 1.7e308), (1e300, -1e300)])
def test_huge_finite_points_are_off_the_grid_not_an_overflow(point):
    # -1e308 is finite, but not once divided by a 5 cm resolution: floor(-inf) overflowed.
    geometry = GridGeometry(0.05, -1.0, -1.0, 40, 40)
    assert not geometry.contains(*point)
    if not all(math.isfinite(v / 0.05) for v in point):
        with pytest.raises(ValueError, match='beyond any grid cell'):
            geometry.world_to_cell(*point)
    with pytest.raises(ValueError, match='beyond any grid cell'):
        geometry.world_to_cells(np.array([point, (0.0, 0.0)]))


@pytest.mark.parametrize(
    'args', [(0.0, 0, 0, 3, 3), (math.nan, 0, 0, 3, 3), (0.1, math.inf, 0, 3, 3), (0.1, 0, 0, 0, 3)]
)
def test_invalid_geometry_is_refused(args):
    with pytest.raises(ValueError):
        GridGeometry(*args)


# -- ROS fields ----------------------------------------------------------------------------


def test_from_ros_is_row_major_from_the_origin():
    data = list(range(6))  # 3 wide, 2 high
    grid = OccupancyMap.from_ros('map', data, 3, 2, 0.1, (1.0, 2.0, 0.0), IDENTITY, 42)
    assert grid.cells.dtype == np.int8 and grid.cells.shape == (2, 3)
    assert grid.cells[0, 2] == 2 and grid.cells[1, 0] == 3
    assert grid.geometry == GridGeometry(0.1, 1.0, 2.0, 3, 2)
    assert grid.stamp_ns == 42
    # Tiny rotations and the quaternion's other sign are the identity.
    OccupancyMap.from_ros('map', data, 3, 2, 0.1, (0, 0, 0), (0, 0, 1e-8, 1.0))
    OccupancyMap.from_ros('map', data, 3, 2, 0.1, (0, 0, 0), (0, 0, 0, -1.0))


@pytest.mark.parametrize(
    ('fields', 'match'),
    [
        ({'orientation': (0.0, 0.0, math.sin(0.05), math.cos(0.05))}, 'rotated'),
        ({'orientation': (math.sin(0.05), 0.0, 0.0, math.cos(0.05))}, 'rotated'),
        ({'orientation': (0.0, 0.0, 0.0, 0.0)}, 'not a rotation'),
        ({'orientation': (0.0, 0.0, math.nan, 1.0)}, 'not a rotation'),
        ({'resolution': 0.0}, 'resolution'),
        ({'resolution': -0.1}, 'resolution'),
        ({'resolution': math.nan}, 'resolution'),
        ({'resolution': math.inf}, 'resolution'),
        ({'data': [0] * 5}, '5 values'),
        ({'width': 0, 'data': []}, 'no cells'),
        ({'data': [0, 0, 0, 0, 0, 300]}, 'int8'),
    ],
)
def test_from_ros_refuses_bad_maps(fields, match):
    args = {'data': [0] * 6, 'width': 3, 'height': 2, 'resolution': 0.1}
    args |= fields
    orientation = args.pop('orientation', IDENTITY)
    with pytest.raises(ValueError, match=match):
        OccupancyMap.from_ros(
            'map',
            args['data'],
            args['width'],
            args['height'],
            args['resolution'],
            (0.0, 0.0, 0.0),
            orientation,
        )


def test_masks_follow_the_thresholds():
    grid = make_map(np.array([[-1, 0, 25, 26, 64, 65, 100, -7]]))
    assert grid.free_mask().tolist() == [[0, 1, 1, 0, 0, 0, 0, 0]]
    assert grid.occupied_mask().tolist() == [[0, 0, 0, 0, 0, 1, 1, 0]]
    assert grid.unknown_mask().tolist() == [[1, 0, 0, 1, 1, 0, 0, 1]]
    assert grid.free_mask(50).tolist() == [[0, 1, 1, 1, 0, 0, 0, 0]]
    assert grid.occupied_mask(50).tolist() == [[0, 0, 0, 0, 1, 1, 1, 0]]


# -- point clouds --------------------------------------------------------------------------


def test_projection_marks_band_ground_and_empty_cells():
    points = np.array(
        [
            [0.05, 0.05, 0.0],  # ground only: free
            [0.25, 0.05, 0.0],  # ground and an obstacle: occupied
            [0.25, 0.05, 0.5],
            [0.45, 0.05, 2.5],  # ceiling only: unknown
            [0.05, 0.45, 1.0],  # obstacle only: occupied
            [math.nan, 0.0, 0.5],
            [0.0, math.inf, 0.0],
        ]
    )
    result = project_point_cloud(points, 0.1, 0.1, 1.8, 'map', padding_m=0.0)
    assert (result.points_used, result.points_dropped) == (5, 2)
    grid = result.map
    assert grid.frame_id == 'map' and grid.geometry.resolution == 0.1
    cell = grid.geometry.world_to_cell
    assert grid.cells[cell(0.05, 0.05)] == FREE
    assert grid.cells[cell(0.25, 0.05)] == OCCUPIED
    assert grid.cells[cell(0.45, 0.05)] == UNKNOWN
    assert grid.cells[cell(0.05, 0.45)] == OCCUPIED
    assert grid.cells[cell(0.25, 0.25)] == UNKNOWN  # no points at all
    assert np.count_nonzero(grid.cells != UNKNOWN) == 3


def test_projection_bounds_cover_the_points_with_padding():
    rng = np.random.default_rng(1)
    points = rng.uniform([-4.3, 2.1, -0.2], [3.7, 9.9, 0.05], size=(2000, 3))
    grid = project_point_cloud(points, 0.05, 0.1, 1.5, 'odom', padding_m=0.5).map
    g = grid.geometry
    low, high = points[:, :2].min(axis=0) - 0.5, points[:, :2].max(axis=0) + 0.5
    assert g.origin_x <= low[0] and g.origin_y <= low[1]
    assert g.origin_x + g.width * 0.05 >= high[0] and g.origin_y + g.height * 0.05 >= high[1]
    assert abs(g.origin_x / 0.05 - round(g.origin_x / 0.05)) < 1e-9  # on the resolution
    rows, cols = g.world_to_cells(points[:, :2]).T
    assert np.all(grid.cells[rows, cols] == FREE)  # all points are below the band
    assert np.count_nonzero(grid.cells == OCCUPIED) == 0


def test_projection_refuses_oversized_and_empty_clouds():
    points = np.array([[0.0, 0.0, 0.5], [100.0, 100.0, 0.5]])
    with pytest.raises(ValueError, match='max_cells'):
        project_point_cloud(points, 0.01, 0.1, 1.0, 'map', max_cells=1_000_000)
    with pytest.raises(ValueError, match='no finite points'):
        project_point_cloud(np.full((3, 3), np.nan), 0.1, 0.1, 1.0, 'map')
    with pytest.raises(ValueError, match='band'):
        project_point_cloud(points, 0.1, 1.0, 0.1, 'map')


# -- inflation -----------------------------------------------------------------------------


def brute_clearance(obstacle: np.ndarray, border: bool) -> np.ndarray:
    """Distance in cells from every cell centre to the nearest obstacle centre, the ring of
    cells around the map counting as obstacles when `border`."""
    padded = np.pad(obstacle, 1, constant_values=border)
    blocked = np.argwhere(padded) - 1
    rows, cols = np.indices(obstacle.shape)
    if len(blocked) == 0:
        return np.full(obstacle.shape, np.inf)
    d = np.hypot(rows[..., None] - blocked[:, 0], cols[..., None] - blocked[:, 1])
    return d.min(axis=-1)


@pytest.mark.parametrize('unknown_is_obstacle', [True, False])
@pytest.mark.parametrize('seed', range(6))
def test_inflation_matches_brute_force(seed, unknown_is_obstacle):
    rng = np.random.default_rng(seed)
    cells = rng.choice(
        [UNKNOWN, FREE, 10, 50, OCCUPIED], size=(17, 23), p=[0.1, 0.7, 0.1, 0.03, 0.07]
    )
    grid = make_map(cells, resolution=0.05)
    radius = float(rng.uniform(0.0, 0.2))
    result = inflate(grid, radius, unknown_is_obstacle=unknown_is_obstacle)
    obstacle = ~grid.free_mask() if unknown_is_obstacle else grid.occupied_mask()
    clearance = brute_clearance(obstacle, unknown_is_obstacle) * 0.05
    finite = np.isfinite(clearance)
    assert np.array_equal(np.isfinite(result.clearance_m), finite)
    assert np.allclose(result.clearance_m[finite], clearance[finite], atol=1e-5)
    assert np.array_equal(result.traversable, grid.free_mask() & (clearance > radius))
    assert not result.traversable[grid.unknown_mask()].any()


def test_a_cell_exactly_at_the_robot_radius_is_blocked():
    cells = np.zeros((9, 9), dtype=np.int8)
    cells[4, 4] = OCCUPIED
    result = inflate(make_map(cells, resolution=0.1), 0.3, unknown_is_obstacle=False)
    assert not result.traversable[4, 7] and not result.traversable[4, 1]
    assert result.traversable[4, 8] and result.traversable[6, 7]  # 3.6 cells away
    assert result.robot_radius_m == 0.3


def test_map_edge_inflates_only_when_unknown_is_an_obstacle():
    grid = make_map(np.zeros((10, 10)), resolution=0.1)
    open_field = inflate(grid, 0.15, unknown_is_obstacle=False)
    assert open_field.traversable.all() and np.isinf(open_field.clearance_m).all()
    walled = inflate(grid, 0.15, unknown_is_obstacle=True)
    assert not walled.traversable[0].any() and not walled.traversable[:, -1].any()
    assert walled.traversable[2:-2, 2:-2].all()
    with pytest.raises(ValueError):
        inflate(grid, -0.1)


def test_components_do_not_join_across_a_corner():
    cells = np.full((4, 4), OCCUPIED, dtype=np.int8)
    cells[0:2, 0:2] = FREE
    cells[2:4, 2:4] = FREE  # touches the first room at one corner only
    labels = inflate(make_map(cells), 0.0, unknown_is_obstacle=False).components
    assert labels[0, 0] > 0 and labels[3, 3] > 0 and labels[0, 0] != labels[3, 3]
    assert labels[0, 3] == 0
