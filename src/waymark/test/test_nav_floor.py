# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Obstacle heights above the floor when the map frame starts at the sensor, not the floor.

The scene: a LIO sensor 0.5 m above the floor at start, so its map frame's origin is 0.5 m
up and the floor lies at z = -0.5; a 0.3 m box stands on the floor 2 m ahead. With the
band in metres above the floor (the navigator's defaults, 0.10-0.8 m) the box is an
obstacle only when the origin's height is taken into account.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from waymark.navigation.floor import origin_height_from_floor
from waymark.navigation.grid import FREE, OCCUPIED, project_point_cloud
from waymark.parameters.navigator import CloudParameters

SENSOR_HEIGHT_M = 0.5
BOX = (1.9, 2.1, -0.1, 0.1)  # x0, x1, y0, y1 of its footprint
BOX_HEIGHT_M = 0.3


def scene() -> np.ndarray:
    """Floor and box points in the sensor-origin map frame (floor at z = -0.5)."""
    xs, ys = np.meshgrid(np.arange(-1.0, 4.0, 0.04), np.arange(-1.5, 1.5, 0.04))
    floor = np.column_stack([xs.ravel(), ys.ravel(), np.full(xs.size, -SENSOR_HEIGHT_M)])
    x0, x1, y0, y1 = BOX
    bx, by, bz = np.meshgrid(
        np.arange(x0, x1, 0.02), np.arange(y0, y1, 0.02), np.arange(0.0, BOX_HEIGHT_M, 0.05)
    )
    box = np.column_stack([bx.ravel(), by.ravel(), bz.ravel() - SENSOR_HEIGHT_M])
    return np.concatenate([floor, box])


def project(origin_height_m: float):
    band = CloudParameters()
    return project_point_cloud(
        scene(),
        band.resolution,
        band.h_min,
        band.h_max,
        'camera_init',
        origin_height_m=origin_height_m,
    ).map


def test_defaults_are_a_band_above_the_floor_that_holds_a_go1():
    band = CloudParameters()
    assert (band.h_min, band.h_max, band.map_origin_height_m) == (0.10, 0.8, 0.0)
    assert band.floor_source == 'parameter'


def test_a_low_box_seen_from_a_sensor_half_a_metre_up_is_an_obstacle_and_the_floor_free():
    grid = project(SENSOR_HEIGHT_M)
    cell = grid.geometry.world_to_cell
    assert grid.cells[cell(2.0, 0.0)] == OCCUPIED
    assert grid.cells[cell(0.5, 0.0)] == FREE
    assert grid.cells[cell(3.5, -1.0)] == FREE
    occupied = np.argwhere(grid.cells == OCCUPIED)
    xy = grid.geometry.cells_to_world(occupied)
    x0, x1, y0, y1 = BOX
    assert np.all((xy[:, 0] > x0 - 0.05) & (xy[:, 0] < x1 + 0.05))  # the box and only it
    assert np.all((xy[:, 1] > y0 - 0.05) & (xy[:, 1] < y1 + 0.05))


def test_heights_from_the_sensor_origin_miss_the_box():
    """The old behaviour, with the map origin taken for the floor: everything below the
    sensor is 'below the band', so the box reads as floor and the robot would walk into it."""
    grid = project(0.0)
    assert grid.cells[grid.geometry.world_to_cell(2.0, 0.0)] == FREE
    assert np.count_nonzero(grid.cells == OCCUPIED) == 0


def test_a_map_frame_on_the_floor_needs_no_offset():
    lifted = scene() + np.array([0.0, 0.0, SENSOR_HEIGHT_M])  # floor at z = 0
    band = CloudParameters()
    grid = project_point_cloud(lifted, band.resolution, band.h_min, band.h_max, 'map').map
    assert grid.cells[grid.geometry.world_to_cell(2.0, 0.0)] == OCCUPIED
    assert grid.cells[grid.geometry.world_to_cell(0.5, 0.0)] == FREE


def test_the_origin_height_comes_from_the_floor_frame_in_the_map_frame():
    # base_footprint found 0.5 m below the map origin: the origin is 0.5 m above the floor.
    assert origin_height_from_floor(-SENSOR_HEIGHT_M) == SENSOR_HEIGHT_M
    grid = project(origin_height_from_floor(-SENSOR_HEIGHT_M))
    assert grid.cells[grid.geometry.world_to_cell(2.0, 0.0)] == OCCUPIED
    assert origin_height_from_floor(0.2) == -0.2  # a map frame below the floor (a pit)


@pytest.mark.parametrize('bad', [math.nan, math.inf, -25.0])
def test_a_floor_height_that_cannot_be_true_is_refused(bad):
    with pytest.raises(ValueError, match='floor'):
        origin_height_from_floor(bad)


def test_a_non_finite_origin_height_is_refused():
    with pytest.raises(ValueError, match='origin_height_m'):
        project_point_cloud(scene(), 0.05, 0.1, 0.8, 'map', origin_height_m=math.nan)
