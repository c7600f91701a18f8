# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The scan-by-scan map: what hits mark, what rays clear, that a passer-by does not stay,
and that its memory is the same after any run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from waymark.navigation.grid import OCCUPIED_THRESHOLD, UNKNOWN, inflate
from waymark.navigation.planner import GridPlanner
from waymark.navigation.scan_grid import ScanGrid, ScanGridConfig

RES = 0.1


def grid(**overrides) -> ScanGrid:
    config = {'resolution': RES, 'window_m': 20.0, 'max_range_m': 8.0, **overrides}
    return ScanGrid(ScanGridConfig(**config), 'map')


def wall(x: float, y0: float, y1: float, z: float = 0.4) -> np.ndarray:
    ys = np.arange(y0, y1, RES / 2)
    return np.column_stack([np.full(ys.size, x), ys, np.full(ys.size, z)])


def floor(x0: float, x1: float, y0: float, y1: float) -> np.ndarray:
    xs, ys = np.meshgrid(np.arange(x0, x1, RES / 2), np.arange(y0, y1, RES / 2))
    return np.column_stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)])


def seen(scan: ScanGrid, points: np.ndarray, sensor_xy=(0.0, 0.0)) -> None:
    """The same scan three times: a cell one ray passed reads 40 (unknown), three read free."""
    for _ in range(3):
        scan.integrate(points, sensor_xy)


def cell(scan: ScanGrid, x: float, y: float) -> int:
    occupancy = scan.occupancy()
    row, col = occupancy.geometry.world_to_cell(x, y)
    return int(occupancy.cells[row, col])


def test_a_wall_is_marked_the_space_before_it_cleared_and_behind_it_unknown():
    scan = grid()
    update = scan.integrate(wall(3.0, -1.0, 1.0), (0.0, 0.0))
    assert update.marked > 0 and update.cleared > 0
    assert cell(scan, 3.02, 0.0) >= OCCUPIED_THRESHOLD  # one hit marks
    assert cell(scan, 1.5, 0.0) == 40  # one ray through it: not free yet
    seen(scan, wall(3.0, -1.0, 1.0))
    assert 0 <= cell(scan, 1.5, 0.0) <= 25
    assert cell(scan, 4.0, 0.0) == UNKNOWN  # behind the wall: never seen
    assert cell(scan, 0.0, 5.0) == UNKNOWN  # no ray went there


def test_heights_are_above_the_floor_from_the_map_origins_height():
    # The map frame is at the sensor, 0.5 m up: a point at z = -0.45 is 5 cm above the
    # floor (floor, clears), one at z = -0.1 is 0.4 m up (an obstacle).
    scan = grid(origin_height_m=0.5, h_min=0.1, h_max=0.8)
    seen(scan, np.array([[2.0, 0.0, -0.45], [0.0, 2.0, -0.1]]))
    assert 0 <= cell(scan, 2.0, 0.0) <= 25
    assert cell(scan, 0.0, 2.0) >= OCCUPIED_THRESHOLD


def test_a_person_who_walks_away_is_cleared_within_the_clamp():
    config = ScanGridConfig(resolution=RES, window_m=20.0)
    scan = ScanGrid(config, 'map')
    person = wall(2.0, -0.2, 0.2, z=0.5)
    ground = floor(0.0, 4.0, -0.3, 0.3)
    for _ in range(200):  # stands there for 20 s: saturates
        scan.integrate(np.concatenate([person, ground]), (0.0, 0.0))
    assert cell(scan, 2.02, 0.0) >= OCCUPIED_THRESHOLD
    # Gone: the floor behind is seen through the cell. Saturated at max_log_odds, it reads
    # free once below logit(0.25), after this many scans, and not one more.
    needed = math.ceil((config.max_log_odds - math.log(0.255 / 0.745)) / config.miss_log_odds)
    for _ in range(needed - 1):
        scan.integrate(ground, (0.0, 0.0))
    assert cell(scan, 2.02, 0.0) > 25
    scan.integrate(ground, (0.0, 0.0))
    assert 0 <= cell(scan, 2.02, 0.0) <= 25


def test_rays_to_overhead_points_clear_nothing_and_mark_nothing():
    scan = grid()
    scan.integrate(wall(2.0, -0.2, 0.2), (0.0, 0.0))
    ceiling = floor(0.0, 4.0, -0.3, 0.3) + np.array([0.0, 0.0, 2.5])
    for _ in range(50):
        update = scan.integrate(ceiling, (0.0, 0.0))
        assert (update.marked, update.cleared, update.points_used) == (0, 0, 0)
    assert cell(scan, 2.02, 0.0) >= OCCUPIED_THRESHOLD


def test_points_beyond_the_range_mark_nothing_and_clear_up_to_the_range():
    scan = grid(max_range_m=3.0)
    seen(scan, wall(6.0, -0.1, 0.1))
    assert 0 <= cell(scan, 2.5, 0.0) <= 25
    assert cell(scan, 3.5, 0.0) == UNKNOWN
    assert cell(scan, 6.02, 0.0) == UNKNOWN


def test_without_clearing_only_hits_change_the_map():
    scan = grid(clearing=False)
    update = scan.integrate(np.concatenate([wall(3.0, -1, 1), floor(0, 2, -1, 1)]), (0.0, 0.0))
    occupancy = scan.occupancy()
    assert update.cleared == 0
    assert not ((occupancy.cells >= 0) & (occupancy.cells <= 25)).any()
    assert cell(scan, 3.02, 0.0) >= OCCUPIED_THRESHOLD


def test_a_scan_is_thinned_to_max_points_and_bad_points_dropped():
    scan = grid(max_points=100)
    points = floor(0.0, 3.0, -1.0, 1.0)
    points[::7] = np.nan
    update = scan.integrate(points, (0.0, 0.0))
    assert update.points_used < 100 and update.points_used + update.points_dropped == len(points)
    with pytest.raises(ValueError, match='shape'):
        scan.integrate(np.zeros((3, 2)), (0.0, 0.0))
    with pytest.raises(ValueError, match='sensor'):
        scan.integrate(points, (math.nan, 0.0))


def test_memory_is_the_same_after_any_run_and_the_window_follows_the_robot():
    scan = grid(window_m=10.0)
    before = scan.nbytes
    slides = 0
    for step in range(600):  # 300 m along x
        x = 0.5 * step
        slides += scan.integrate(wall(x + 2.0, -1.0, 1.0), (x, 0.0)).slid
        geometry = scan.geometry
        assert geometry.contains(x, 0.0) and geometry.contains(x + 2.4, 0.0)
    assert scan.nbytes == before and scan.occupancy().cells.shape == (100, 100)
    assert slides > 50
    assert not scan.geometry.contains(0.0, 0.0)  # the start was forgotten


def test_what_was_seen_keeps_its_place_in_the_world_when_the_window_slides():
    scan = grid(window_m=10.0)
    seen(scan, wall(3.0, -1.0, 1.0))
    assert scan.integrate(np.empty((0, 3)), (3.0, 0.0)).slid
    assert cell(scan, 3.02, 0.0) >= OCCUPIED_THRESHOLD
    assert 0 <= cell(scan, 1.5, 0.0) <= 25


def test_the_map_plans_around_what_the_scans_saw():
    scan = grid(origin_height_m=0.45)
    ground = floor(-1.0, 6.0, -2.0, 2.0) - np.array([0.0, 0.0, 0.45])
    obstacle = wall(3.0, -1.0, 1.0, z=0.0)
    for _ in range(3):
        scan.integrate(np.concatenate([ground, obstacle]), (0.0, 0.0))
        scan.integrate(np.concatenate([ground, obstacle]), (5.0, 0.0))  # sees behind it
    planner = GridPlanner(inflate(scan.occupancy(), 0.2))
    plan = planner.plan((0.0, 0.0), (5.0, 0.0))
    assert min(abs(y) for x, y in plan.waypoints if 2.8 <= x <= 3.2) > 1.0


@pytest.mark.parametrize(
    ('overrides', 'message'),
    [
        ({'resolution': 0.0}, 'resolution'),
        ({'window_m': 1000.0, 'resolution': 0.01}, 'cells'),
        ({'h_min': 1.0, 'h_max': 0.5}, 'h_max'),
        ({'miss_log_odds': -0.4}, 'log_odds'),
        ({'min_log_odds': 0.5}, 'min_log_odds'),
        ({'max_range_m': math.inf}, 'finite'),
    ],
)
def test_bad_settings_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        ScanGridConfig(**overrides)
