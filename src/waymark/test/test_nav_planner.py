# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Grid planning: optimal against a reference Dijkstra, legal paths, safe smoothing."""

from __future__ import annotations

import heapq
import itertools
import math

import numpy as np
import pytest

from waymark.navigation.grid import (
    FREE,
    OCCUPIED,
    UNKNOWN,
    GridGeometry,
    OccupancyMap,
    TraversabilityGrid,
    inflate,
)
from waymark.navigation.planner import (
    MOVES,
    GridPlanner,
    PlanError,
    PlanFailure,
    PlannerConfig,
    line_clear,
    segment_cells,
)

RES = 0.05


def make_grid(cells: np.ndarray, radius: float = 0.0) -> TraversabilityGrid:
    height, width = cells.shape
    grid = OccupancyMap('map', GridGeometry(RES, 0.0, 0.0, width, height), cells.astype(np.int8))
    return inflate(grid, radius, unknown_is_obstacle=False)


def open_grid(traversable: np.ndarray) -> TraversabilityGrid:
    return make_grid(np.where(traversable, FREE, OCCUPIED))


def reference_cost(
    traversable: np.ndarray, start, goal, multiplier: np.ndarray | None = None
) -> float:
    """Plain Dijkstra over (row, col) with the planner's move model: 8 moves, octile steps,
    a diagonal needs both side cells, a step costs its length times the mean multiplier."""
    height, width = traversable.shape
    m = np.ones(traversable.shape) if multiplier is None else multiplier
    best = {start: 0.0}
    queue = [(0.0, start)]
    while queue:
        d, (r, c) = heapq.heappop(queue)
        if (r, c) == goal:
            return d
        if d > best[(r, c)]:
            continue
        for dr, dc in MOVES:
            nr, nc = r + dr, c + dc
            if not (0 <= nr < height and 0 <= nc < width and traversable[nr, nc]):
                continue
            if dr and dc and not (traversable[r, nc] and traversable[nr, c]):
                continue
            step = math.hypot(dr, dc) * 0.5 * (m[r, c] + m[nr, nc])
            if d + step < best.get((nr, nc), math.inf):
                best[(nr, nc)] = d + step
                heapq.heappush(queue, (d + step, (nr, nc)))
    return math.inf


def check_path(plan, traversable: np.ndarray, start, goal) -> None:
    cells = plan.cells
    assert tuple(cells[0]) == start and tuple(cells[-1]) == goal
    assert traversable[cells[:, 0], cells[:, 1]].all()
    steps = np.diff(cells, axis=0)
    assert np.abs(steps).max(initial=1) == 1 and (np.abs(steps).sum(axis=1) > 0).all()
    diagonal = (steps != 0).all(axis=1)
    before, after = cells[:-1][diagonal], cells[1:][diagonal]
    assert traversable[before[:, 0], after[:, 1]].all()  # no corner cutting
    assert traversable[after[:, 0], before[:, 1]].all()
    length = (np.count_nonzero(~diagonal) + math.sqrt(2) * np.count_nonzero(diagonal)) * RES
    assert plan.length_m == pytest.approx(length, abs=1e-9)
    assert np.allclose(plan.waypoints, (cells[:, ::-1] + 0.5) * RES)
    # Smoothing: same ends, a subsequence, clear segments, never longer.
    smooth = plan.smoothed_cells
    assert tuple(smooth[0]) == start and tuple(smooth[-1]) == goal
    index = [int(np.flatnonzero((cells == cell).all(axis=1))[0]) for cell in smooth]
    assert index == sorted(index)
    for a, b in itertools.pairwise(smooth):
        assert line_clear(traversable, tuple(a), tuple(b))
    assert plan.smoothed_length_m <= plan.length_m + 1e-9
    assert np.allclose(plan.smoothed, (smooth[:, ::-1] + 0.5) * RES)


@pytest.mark.parametrize('weight', [0.0, 2.0])
def test_costs_match_a_reference_dijkstra_on_random_grids(weight):
    checked = unreachable = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        shape = tuple(rng.integers(6, 16, 2))
        density = rng.uniform(0.1, 0.4)
        cells = np.where(rng.random(shape) < density, OCCUPIED, FREE)
        grid = make_grid(cells, radius=0.0)
        config = PlannerConfig(clearance_weight=weight, clearance_range_m=0.15)
        planner = GridPlanner(grid, config)
        multiplier = None
        if weight:
            near = np.clip(1 - (grid.clearance_m.astype(float) - 0.0) / 0.15, 0, 1)
            multiplier = 1 + weight * near
        free = [tuple(int(v) for v in cell) for cell in np.argwhere(grid.traversable)]
        for _ in range(5):
            start, goal = (free[i] for i in rng.integers(len(free), size=2))
            expected = reference_cost(grid.traversable, start, goal, multiplier)
            if math.isinf(expected):
                with pytest.raises(PlanError) as failure:
                    planner.plan_cells(start, goal)
                assert failure.value.reason is PlanFailure.UNREACHABLE
                unreachable += 1
                continue
            plan = planner.plan_cells(start, goal)
            assert plan.cost == pytest.approx(expected, abs=1e-9)
            check_path(plan, grid.traversable, start, goal)
            checked += 1
    assert checked > 100 and unreachable > 5


def test_long_detours_need_several_search_stages():
    traversable = np.ones((60, 60), dtype=bool)
    traversable[:58, 30] = False  # start and goal two cells apart, the gap 58 rows away
    start, goal = (0, 29), (0, 31)
    plan = GridPlanner(open_grid(traversable)).plan_cells(start, goal)
    assert plan.cost == pytest.approx(reference_cost(traversable, start, goal), abs=1e-9)
    check_path(plan, traversable, start, goal)
    assert plan.expanded > traversable.sum()  # more than one stage ran


def test_open_field_paths_are_octile_and_smooth_to_a_line():
    planner = GridPlanner(open_grid(np.ones((50, 80), dtype=bool)))
    plan = planner.plan_cells((3, 2), (40, 75))
    assert plan.cost == pytest.approx(73 - 37 + 37 * math.sqrt(2), abs=1e-9)
    assert len(plan.smoothed_cells) == 2
    assert plan.smoothed_length_m == pytest.approx(math.hypot(37, 73) * RES)
    near = planner.plan_cells((20, 20), (22, 21))
    assert near.expanded < 50 * 80 // 4  # the first stage's cost limit keeps a near plan local
    same = planner.plan_cells((7, 7), (7, 7))
    assert len(same.cells) == 1 and same.length_m == 0 and same.cost == 0


def test_world_points_plan_between_their_cells():
    planner = GridPlanner(open_grid(np.ones((20, 20), dtype=bool)))
    plan = planner.plan((0.12, 0.07), (0.93, 0.51))
    assert tuple(plan.cells[0]) == (1, 2) and tuple(plan.cells[-1]) == (10, 18)
    with pytest.raises(PlanError) as failure:
        planner.plan((0.1, 0.1), (1.2, 0.1))
    assert failure.value.reason is PlanFailure.GOAL_INVALID
    with pytest.raises(PlanError) as failure:
        planner.plan((math.nan, 0.1), (0.5, 0.1))
    assert failure.value.reason is PlanFailure.START_INVALID


def test_blocked_ends_and_unreachable_goals_fail_clearly():
    cells = np.full((10, 10), FREE)
    cells[:, 5] = OCCUPIED
    cells[0, 0] = UNKNOWN
    planner = GridPlanner(make_grid(cells))
    cases = [
        ((0, 0), (3, 3), PlanFailure.START_INVALID),
        ((3, 3), (3, 5), PlanFailure.GOAL_INVALID),
        ((3, 3), (3, 10), PlanFailure.GOAL_INVALID),
        ((3, 3), (3, 7), PlanFailure.UNREACHABLE),
    ]
    for start, goal, reason in cases:
        with pytest.raises(PlanError) as failure:
            planner.plan_cells(start, goal)
        assert failure.value.reason is reason and str(failure.value)


def test_diagonal_gaps_are_not_squeezed_through():
    traversable = np.ones((6, 6), dtype=bool)
    traversable[:3, 3] = False
    traversable[3, :3] = False  # the two walls meet only at a corner
    traversable[3, 4:] = False
    traversable[4:, 3] = False
    with pytest.raises(PlanError) as failure:
        GridPlanner(open_grid(traversable)).plan_cells((0, 0), (5, 5))
    assert failure.value.reason is PlanFailure.UNREACHABLE


def test_max_expansions_bounds_the_search():
    traversable = np.ones((60, 60), dtype=bool)
    traversable[:58, 30] = False
    planner = GridPlanner(open_grid(traversable), PlannerConfig(max_expansions=100))
    with pytest.raises(PlanError) as failure:
        planner.plan_cells((0, 29), (0, 31))
    assert failure.value.reason is PlanFailure.EXHAUSTED


def test_clearance_cost_keeps_paths_off_walls():
    cells = np.full((40, 60), FREE)
    cells[20, 10:50] = OCCUPIED  # a thin wall in the middle of a wide room
    grid = make_grid(cells, radius=0.05)
    start, goal = (17, 5), (17, 55)
    plain = GridPlanner(grid).plan_cells(start, goal)
    careful = GridPlanner(grid, PlannerConfig(2.0, 0.4)).plan_cells(start, goal)
    assert careful.length_m > plain.length_m
    wall_gap = [grid.clearance_m[tuple(c)] for c in careful.cells[5:-5]]
    assert min(wall_gap) > min(grid.clearance_m[tuple(c)] for c in plain.cells[5:-5])


def touches(a, b, cell) -> bool:
    """Whether the segment between the centres of cells a and b meets the closed square of
    `cell` (Liang-Barsky clipping, with a little tolerance)."""
    p0, delta = np.array(a) + 0.5, np.array(b) - np.array(a)
    low, high = 0.0, 1.0
    for axis in range(2):
        lo_edge, hi_edge = cell[axis] - 1e-9, cell[axis] + 1 + 1e-9
        if delta[axis] == 0:
            if not lo_edge <= p0[axis] <= hi_edge:
                return False
            continue
        t0, t1 = sorted(((lo_edge - p0[axis]) / delta[axis], (hi_edge - p0[axis]) / delta[axis]))
        low, high = max(low, t0), min(high, t1)
    return low <= high


def test_segment_cells_cover_everything_the_segment_touches():
    rng = np.random.default_rng(3)
    for _ in range(200):
        a, b = (tuple(int(v) for v in rng.integers(0, 12, 2)) for _ in range(2))
        cells = {tuple(c) for c in segment_cells(a, b).tolist()}
        t = np.linspace(0.0, 1.0, 4001)
        points = (np.array(a) + 0.5) + t[:, None] * (np.array(b) - np.array(a))
        # Sample points strictly inside cells: every such cell must be listed.
        inside = (np.abs(points - np.round(points)) > 1e-6).all(axis=1)
        sampled = {tuple(c) for c in np.floor(points[inside]).astype(int).tolist()}
        assert sampled <= cells
        assert all(touches(a, b, cell) for cell in cells)  # and nothing else
        assert tuple(a) in cells and tuple(b) in cells
    # Through a corner: both side cells count, as for a diagonal move.
    assert {tuple(c) for c in segment_cells((0, 0), (2, 2)).tolist()} == {
        (0, 0),
        (1, 1),
        (2, 2),
        (0, 1),
        (1, 0),
        (1, 2),
        (2, 1),
    }
    blocked = np.ones((3, 3), dtype=bool)
    blocked[0, 1] = False
    assert not line_clear(blocked, (0, 0), (2, 2))
    assert line_clear(blocked, (0, 0), (2, 0))


def test_quick_benchmark_runs_and_renders():
    from waymark.benchmarks import planner as bench

    result = bench.run(quick=True)
    assert result['benchmark'] == 'planner' and result['quick'] is True
    assert [(r['size'], r['kind']) for r in result['results']] == [(100, 'boxes'), (100, 'maze')]
    for row in result['results']:
        assert row['plan']['n'] == bench.QUICK_PLANS and row['expanded_median'] > 0
        assert row['smoothed_length_m_median'] <= row['length_m_median'] + 1e-9
        assert 0 <= row['goals_accepted'] <= 1
    assert 'plan p50' in bench.render(result)


@pytest.mark.parametrize('weight', [0.0, 2.0])
def test_distances_are_the_plan_costs_in_metres(weight):
    for seed in range(3):
        rng = np.random.default_rng(seed)
        grid = make_grid(np.where(rng.random((12, 16)) < 0.3, OCCUPIED, FREE))
        planner = GridPlanner(grid, PlannerConfig(clearance_weight=weight, clearance_range_m=0.15))
        start = tuple(int(v) for v in np.argwhere(grid.traversable)[0])
        field = planner.distances(start)
        assert field.shape == grid.traversable.shape
        labels = grid.components
        assert (np.isfinite(field) == (labels == labels[start])).all()
        for goal in np.argwhere(np.isfinite(field)):
            plan = planner.plan_cells(start, tuple(int(v) for v in goal))
            assert field[tuple(goal)] == pytest.approx(plan.cost * RES, rel=1e-12)


def test_distances_are_octile_in_open_space_and_stop_at_the_limit():
    planner = GridPlanner(open_grid(np.ones((40, 50), dtype=bool)))
    rows, cols = np.indices((40, 50))
    dr, dc = np.abs(rows - 10), np.abs(cols - 20)
    octile = RES * (np.maximum(dr, dc) + (math.sqrt(2.0) - 1.0) * np.minimum(dr, dc))
    np.testing.assert_allclose(planner.distances((10, 20)), octile, atol=1e-12)
    limited = planner.distances((10, 20), max_distance_m=0.5)
    np.testing.assert_array_equal(np.isfinite(limited), octile <= 0.5 + 1e-9)


def test_distances_go_around_walls_and_refuse_a_blocked_start():
    traversable = np.ones((10, 30), dtype=bool)
    traversable[5, :28] = False  # a wall with a gap at its east end
    planner = GridPlanner(open_grid(traversable))
    field = planner.distances((6, 1))
    # 27 cells east, 2 north through the gap (no diagonal: it would cut the wall's end), 27 back.
    assert field[4, 1] == pytest.approx(RES * 56)
    assert np.isinf(field[~traversable]).all()
    with pytest.raises(PlanError) as failure:
        planner.distances((5, 1))
    assert failure.value.reason is PlanFailure.START_INVALID
    with pytest.raises(ValueError, match='max_distance_m'):
        planner.distances((6, 1), max_distance_m=-1.0)
