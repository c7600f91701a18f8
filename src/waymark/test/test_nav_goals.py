# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Goal checks: every refusal, snapping into the robot's region, and nothing unsafe accepted."""

from __future__ import annotations

import math

import numpy as np
import pytest

from waymark.navigation.goals import GoalReason, check_goal, goal_orientation
from waymark.navigation.grid import FREE, OCCUPIED, GridGeometry, OccupancyMap, inflate
from waymark.navigation.planner import GridPlanner

RES = 0.1


def centre(row: int, col: int) -> tuple[float, float]:
    return ((col + 0.5) * RES, (row + 0.5) * RES)


@pytest.fixture(scope='module')
def split_room():
    """20 x 30 cells: the robot's region (cols 0-11), a 3-cell wall (12-14), a pocket (15-29)."""
    cells = np.full((20, 30), FREE, dtype=np.int8)
    cells[:, 12:15] = OCCUPIED
    grid = OccupancyMap('map', GridGeometry(RES, 0.0, 0.0, 30, 20), cells)
    return inflate(grid, 0.0, unknown_is_obstacle=False)


ROBOT = centre(5, 3)


def test_a_free_reachable_goal_is_accepted_as_is(split_room):
    result = check_goal(split_room, 0.42, 1.73, 'map', *ROBOT)
    assert result.accepted and result.reason is GoalReason.OK
    assert (result.x, result.y, result.snapped, result.snap_distance_m) == (0.42, 1.73, False, 0)
    assert result.start_cell == (5, 3) and result.goal_cell == (17, 4)


@pytest.mark.parametrize(
    ('goal', 'frame', 'robot', 'reason'),
    [
        ((math.nan, 1.0), 'map', ROBOT, GoalReason.NON_FINITE),
        ((1.0, math.inf), 'map', ROBOT, GoalReason.NON_FINITE),
        ((0.5, 0.5), 'odom', ROBOT, GoalReason.WRONG_FRAME),
        ((-0.01, 0.5), 'map', ROBOT, GoalReason.OUTSIDE_MAP),
        ((3.0, 0.5), 'map', ROBOT, GoalReason.OUTSIDE_MAP),
        ((0.5, 0.5), 'map', (math.nan, 0.5), GoalReason.ROBOT_OUTSIDE_MAP),
        ((0.5, 0.5), 'map', (0.5, 2.5), GoalReason.ROBOT_OUTSIDE_MAP),
        ((0.5, 0.5), 'map', centre(10, 13), GoalReason.ROBOT_BLOCKED),  # mid-wall
        (centre(10, 13), 'map', ROBOT, GoalReason.NO_FREE_CELL),  # mid-wall, radius 0.1
        (centre(10, 25), 'map', ROBOT, GoalReason.UNREACHABLE),  # in the pocket
    ],
)
def test_refusals_say_why(split_room, goal, frame, robot, reason):
    result = check_goal(
        split_room, *goal, frame, *robot, snap_radius_m=0.1, start_snap_radius_m=0.1
    )
    assert not result.accepted and result.reason is reason
    assert result.message and not result.snapped
    assert np.array_equal((result.x, result.y), goal, equal_nan=True)


def test_snaps_to_the_robots_region_not_to_a_nearer_pocket(split_room):
    goal = centre(10, 14)  # wall cell next to the pocket: pocket 0.1 m away, region 0.3 m
    result = check_goal(split_room, *goal, 'map', *ROBOT, snap_radius_m=0.5)
    assert result.accepted and result.snapped and result.reason is GoalReason.OK
    assert result.goal_cell == (10, 11)
    assert (result.x, result.y) == pytest.approx(centre(10, 11))
    assert result.snap_distance_m == pytest.approx(0.3)


def test_snap_radius_is_respected(split_room):
    goal = centre(10, 14)
    result = check_goal(split_room, *goal, 'map', *ROBOT, snap_radius_m=0.25)
    assert not result.accepted and result.reason is GoalReason.UNREACHABLE
    result = check_goal(split_room, *goal, 'map', *ROBOT, snap_radius_m=0.05)
    assert not result.accepted and result.reason is GoalReason.NO_FREE_CELL


def test_a_robot_on_a_blocked_cell_is_moved_to_find_its_region(split_room):
    robot = centre(10, 12)  # on the wall's first cell, 0.1 m from the region
    result = check_goal(split_room, *centre(2, 2), 'map', *robot, start_snap_radius_m=0.15)
    assert result.accepted and result.start_cell == (10, 11)
    result = check_goal(split_room, *centre(2, 2), 'map', *robot, start_snap_radius_m=0.05)
    assert result.reason is GoalReason.ROBOT_BLOCKED


@pytest.mark.parametrize(
    'goal', [(-1e308, 0.5), (0.5, -1e308), (1e300, 1e300), (10_000.5, 0.5), (0.5, -20_000.0)]
)
def test_coordinates_beyond_the_bound_are_refused_before_any_cell_arithmetic(split_room, goal):
    result = check_goal(split_room, *goal, 'map', *ROBOT, max_abs_coordinate_m=10_000.0)
    assert not result.accepted and result.reason is GoalReason.TOO_FAR
    assert 'max_abs_coordinate_m (10000 m)' in result.message


def test_a_bound_wider_than_any_number_still_refuses_huge_goals_as_off_the_map(split_room):
    # Nothing overflows even when the bound lets -1e308 through to the map lookup.
    result = check_goal(split_room, -1e308, 0.5, 'map', *ROBOT, max_abs_coordinate_m=1.7e308)
    assert not result.accepted and result.reason is GoalReason.OUTSIDE_MAP
    bound = check_goal(split_room, 0.5, 0.5, 'map', *ROBOT, max_abs_coordinate_m=0.5)
    assert bound.accepted  # the bound is inclusive


@pytest.mark.parametrize(
    ('q', 'expected'),
    [
        ((0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 1.0)),
        ((0.0, 0.0, 0.0, 1.005), (0.0, 0.0, 0.0, 1.0)),  # rounding: normalised
        ((0.0, 0.0, 0.6, 0.8 * 0.995), (0.0, 0.0, 0.6 / 0.99681, 0.8 * 0.995 / 0.99681)),
    ],
)
def test_an_orientation_near_unit_length_is_normalised(q, expected):
    result = goal_orientation(q, 0.01)
    assert result == pytest.approx(expected, abs=1e-5)
    assert math.fsum(v * v for v in result) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ('q', 'match'),
    [
        ((0.0, 0.0, 0.0, 0.0), 'norm 0,'),
        ((0.0, 0.0, 0.0, 1e-9), 'norm 1e-09'),
        ((0.0, 0.0, 0.0, 2.0), 'norm 2,'),
        ((0.0, 0.0, 0.7, 0.7), 'norm 0.9899'),
        ((0.0, math.nan, 0.0, 1.0), 'not finite'),
        ((0.0, 0.0, 0.0, math.inf), 'not finite'),
    ],
)
def test_a_zero_or_scaled_orientation_is_refused(q, match):
    with pytest.raises(ValueError, match=match):
        goal_orientation(q, 0.01)


def test_bad_radii_are_programming_errors(split_room):
    with pytest.raises(ValueError):
        check_goal(split_room, 0.5, 0.5, 'map', *ROBOT, snap_radius_m=-1.0)
    with pytest.raises(ValueError):
        check_goal(split_room, 0.5, 0.5, 'map', *ROBOT, start_snap_radius_m=math.nan)
    with pytest.raises(ValueError):
        check_goal(split_room, 0.5, 0.5, 'map', *ROBOT, max_abs_coordinate_m=0.0)
    with pytest.raises(ValueError):
        goal_orientation((0.0, 0.0, 0.0, 1.0), 1.0)


@pytest.mark.parametrize('seed', range(8))
def test_nothing_unsafe_is_accepted(seed):
    """Random maps and goals: an accepted goal is a traversable cell of the robot's region,
    the nearest one within the radius when snapped, and the planner reaches it."""
    rng = np.random.default_rng(seed)
    cells = np.where(rng.random((30, 40)) < 0.25, OCCUPIED, FREE).astype(np.int8)
    cells[rng.random(cells.shape) < 0.05] = -1
    grid = inflate(OccupancyMap('map', GridGeometry(RES, 0.0, 0.0, 40, 30), cells), 0.05)
    free = np.argwhere(grid.traversable)
    planner = GridPlanner(grid)
    accepted = 0
    for _ in range(60):
        robot = centre(*free[rng.integers(len(free))])
        goal = rng.uniform(0.0, [4.0, 3.0])
        radius = float(rng.uniform(0.0, 0.6))
        result = check_goal(grid, *goal, 'map', *robot, snap_radius_m=radius)
        if not result.accepted:
            assert result.reason in (GoalReason.NO_FREE_CELL, GoalReason.UNREACHABLE)
            continue
        accepted += 1
        labels = grid.components
        assert grid.traversable[result.goal_cell]
        assert labels[result.goal_cell] == labels[result.start_cell]
        assert grid.geometry.world_to_cell(result.x, result.y) == result.goal_cell
        if result.snapped:
            region = np.argwhere(labels == labels[result.start_cell])
            gaps = np.hypot(*(grid.geometry.cells_to_world(region) - goal).T)
            assert result.snap_distance_m == pytest.approx(gaps.min())
            assert result.snap_distance_m <= radius
        planner.plan_cells(result.start_cell, result.goal_cell)
    assert accepted > 10
