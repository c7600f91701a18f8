# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import math

import numpy as np
import pytest

from waymark.navigation.frontiers import (
    Explorer,
    ExplorerParams,
    FinishReason,
    find_frontiers,
    frontier_mask,
    frontier_near,
    rank_frontiers,
)
from waymark.navigation.grid import (
    FREE,
    OCCUPIED,
    UNKNOWN,
    GridGeometry,
    OccupancyMap,
    TraversabilityGrid,
    inflate,
)
from waymark.navigation.planner import GridPlanner, PlanError, PlanFailure, PlannerConfig

RES = 0.1
ORIGIN = (-1.0, -2.0)

# '.' free, '#' wall (known, not free), '?' unknown; the first line is row 0.
ROOMS = """
##########??????
#....#....??????
#....#....??????
#.........??????
#.........??????
#....#....??????
#....#....??????
##??######??????
"""

# A lower room (robot at row 5, col 2) joined to an upper corridor only at column 20. The
# corridor's frontier is straight-line near the robot but far by path.
DETOUR = """
##??##################
#....................#
#....................#
####################.#
#....................#
#....................?
#....................#
######################
"""

# The robot's room (left) has a frontier below; the sealed pocket (right) has one too.
POCKET = """
#########
#...#...?
#...#...?
#...#...?
##?######
"""

# The robot's room (top left) has a frontier above; a nook whose only way in is a corner
# it shares diagonally with the room, between two walls, has one to its right.
CORNER_GAP = """
##?#####
#...####
#...####
#...####
####..?#
####..?#
########
"""


def grid_of(cells: np.ndarray) -> TraversabilityGrid:
    """A point robot's grid: traversable exactly where the map is free."""
    height, width = cells.shape
    geometry = GridGeometry(RES, *ORIGIN, width, height)
    return inflate(OccupancyMap('map', geometry, cells.astype(np.int8)), 0.0, False)


def parse(art: str) -> tuple[TraversabilityGrid, np.ndarray]:
    chars = np.array([list(line) for line in art.strip().splitlines()])
    cells = np.select([chars == '.', chars == '?'], [FREE, UNKNOWN], OCCUPIED)
    return grid_of(cells), chars == '?'


def cells(mask: np.ndarray) -> set[tuple[int, int]]:
    return {(int(r), int(c)) for r, c in zip(*np.nonzero(mask), strict=True)}


def centre(row: float, col: float) -> tuple[float, float]:
    return (ORIGIN[0] + (col + 0.5) * RES, ORIGIN[1] + (row + 0.5) * RES)


def distances_from(grid: TraversabilityGrid, row: int, col: int) -> np.ndarray:
    return GridPlanner(grid).distances((row, col))


def test_frontier_cells_and_groups_in_rooms_with_a_door():
    grid, unknown = parse(ROOMS)
    expected = {(r, 9) for r in range(1, 7)} | {(6, c) for c in range(1, 5)}
    assert cells(frontier_mask(grid.traversable, unknown)) == expected

    found = find_frontiers(grid, unknown)
    assert [f.size_cells for f in found] == [6, 4]  # raster order of their first cells
    east, gap = found
    assert east.centroid == pytest.approx(centre(3.5, 9))
    assert east.goal_cell in {(3, 9), (4, 9)}
    assert east.goal == pytest.approx(centre(*east.goal_cell))
    assert east.length_m == pytest.approx(0.6)
    assert gap.goal_cell in {(6, 2), (6, 3)}
    assert all(f.path_distance_m is None for f in found)


def test_goal_is_on_a_curved_frontier_even_when_its_centroid_is_not():
    # A room in unknown, walled east and south: the L-shaped frontier's centroid is inside.
    map_cells = np.full((12, 12), UNKNOWN)
    map_cells[:, 11] = map_cells[11, :] = OCCUPIED
    map_cells[1:11, 1:11] = FREE
    grid = grid_of(map_cells)
    unknown = map_cells == UNKNOWN
    (corner,) = find_frontiers(grid, unknown)
    assert corner.size_cells == 19
    mask = frontier_mask(grid.traversable, unknown)
    assert corner.goal_cell in cells(mask)
    row, col = grid.geometry.world_to_cell(*corner.centroid)
    assert not mask[row, col]


def test_min_size_drops_small_frontiers():
    grid, unknown = parse(ROOMS)
    assert [f.size_cells for f in find_frontiers(grid, unknown, min_size_cells=5)] == [6]
    assert find_frontiers(grid, unknown, min_size_cells=7) == []
    with pytest.raises(ValueError, match='min_size_cells'):
        find_frontiers(grid, unknown, min_size_cells=0)


def test_no_unknown_has_no_frontiers():
    grid = grid_of(np.full((5, 5), FREE))
    assert find_frontiers(grid, np.zeros((5, 5), dtype=bool)) == []
    with pytest.raises(ValueError, match='shape'):
        find_frontiers(grid, np.zeros((5, 4), dtype=bool))


def test_a_frontier_group_shared_across_a_corner_is_split_by_region():
    # Two rooms in unknown touch only at a corner: one 8-connected band, two regions.
    map_cells = np.full((8, 8), UNKNOWN)
    map_cells[1:4, 1:4] = FREE
    map_cells[4:7, 4:7] = FREE
    grid = grid_of(map_cells)
    found = find_frontiers(grid, map_cells == UNKNOWN)
    assert [f.size_cells for f in found] == [8, 8]
    labels = grid.components
    assert labels[found[0].goal_cell] != labels[found[1].goal_cell]
    ranked = rank_frontiers(found, distances_from(grid, 2, 2))
    assert [f.goal_cell for f in ranked] == [found[0].goal_cell]


def occupancy_of(art: str) -> OccupancyMap:
    chars = np.array([list(line) for line in art.strip().splitlines()])
    cells = np.select([chars == '.', chars == '?'], [FREE, UNKNOWN], OCCUPIED).astype(np.int8)
    return OccupancyMap('map', GridGeometry(RES, *ORIGIN, cells.shape[1], cells.shape[0]), cells)


def test_frontier_near_until_the_unknown_there_is_seen():
    occupancy = occupancy_of(ROOMS)
    # Column 9 borders the unknown east; the door gap below (row 7, columns 2-3) too.
    assert frontier_near(occupancy, centre(3, 9), 0.0)
    assert frontier_near(occupancy, centre(3, 7), 0.21)
    assert not frontier_near(occupancy, centre(3, 7), 0.15)
    assert not frontier_near(occupancy, centre(3, 2), 0.25)
    assert frontier_near(occupancy, centre(3, 2), 0.31)  # row 6, by the door gap
    seen = OccupancyMap(
        'map', occupancy.geometry, np.where(occupancy.cells == UNKNOWN, FREE, occupancy.cells)
    )
    assert not frontier_near(seen, centre(3, 9), 1.0)
    # The result is the whole map's, whatever the window: compare with frontier_mask.
    mask = frontier_mask(occupancy.free_mask(), occupancy.unknown_mask())
    rows, cols = np.nonzero(mask)
    for row, col in np.ndindex(occupancy.cells.shape):
        x, y = centre(row, col)
        nearest = min(math.dist((x, y), centre(r, c)) for r, c in zip(rows, cols, strict=True))
        assert frontier_near(occupancy, (x, y), 0.45) == (nearest <= 0.45 + 1e-9), (row, col)


def test_frontier_near_off_the_map_and_bad_radius():
    occupancy = occupancy_of(ROOMS)
    assert not frontier_near(occupancy, (100.0, 100.0), 1.0)
    assert frontier_near(occupancy, centre(3, -3), 1.25)  # off the map, a frontier in reach
    with pytest.raises(ValueError, match='radius_m'):
        frontier_near(occupancy, centre(3, 9), -1.0)
    with pytest.raises(ValueError, match='radius_m'):
        frontier_near(occupancy, centre(3, 9), math.nan)


def test_ranking_is_by_path_not_straight_line():
    grid, unknown = parse(DETOUR)
    ranked = rank_frontiers(find_frontiers(grid, unknown), distances_from(grid, 5, 2))
    assert [f.goal_cell for f in ranked] == [(5, 20), (1, 2)]
    east, north = ranked
    straight = [math.dist(centre(5, 2), f.goal) for f in ranked]
    assert straight[1] < straight[0]  # the corridor is nearer as the crow flies
    assert east.path_distance_m == pytest.approx(1.8)
    assert north.path_distance_m > 3.6


def test_frontiers_in_a_disconnected_pocket_are_not_returned():
    grid, unknown = parse(POCKET)
    found = find_frontiers(grid, unknown)
    assert len(found) == 2
    ranked = rank_frontiers(found, distances_from(grid, 2, 2))
    assert [f.goal_cell for f in ranked] == [(3, 2)]


def test_a_frontier_behind_a_diagonal_corner_gap_is_unreachable():
    grid, unknown = parse(CORNER_GAP)
    found = find_frontiers(grid, unknown)
    assert [f.goal_cell for f in found] == [(1, 2), (4, 5)]
    ranked = rank_frontiers(found, distances_from(grid, 2, 2))
    assert [f.goal_cell for f in ranked] == [(1, 2)]
    with pytest.raises(PlanError) as failure:
        GridPlanner(grid).plan_cells((2, 2), (4, 5))
    assert failure.value.reason is PlanFailure.UNREACHABLE


def test_blacklisted_goals_are_skipped():
    grid, unknown = parse(DETOUR)
    found = find_frontiers(grid, unknown)
    distances = distances_from(grid, 5, 2)
    east_goal = centre(5, 20)
    near_east = (east_goal[0] - 0.15, east_goal[1])
    ranked = rank_frontiers(found, distances, blacklist=[near_east], blacklist_radius_m=0.2)
    assert [f.goal_cell for f in ranked] == [(1, 2)]
    too_far = rank_frontiers(found, distances, blacklist=[near_east], blacklist_radius_m=0.1)
    assert len(too_far) == 2


@pytest.mark.parametrize('weight', [0.0, 2.0])
def test_every_ranked_frontier_is_one_the_planner_reaches_at_that_cost(weight):
    ranked_total = 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        map_cells = np.where(rng.random((30, 40)) < 0.3, OCCUPIED, FREE)
        map_cells[:, 25:] = UNKNOWN
        map_cells[10:20, 0:10] = FREE
        grid = grid_of(map_cells)
        planner = GridPlanner(grid, PlannerConfig(clearance_weight=weight))
        run = Explorer(ExplorerParams(min_size_cells=1, snap_radius_m=0.0), start_s=0.0)
        step = run.next_goal(grid, map_cells == UNKNOWN, planner, centre(15, 5), now_s=0.0)
        distances = planner.distances((15, 5))
        ranked = rank_frontiers(find_frontiers(grid, map_cells == UNKNOWN), distances)
        assert step.goal == ranked[0]
        for frontier in ranked:
            plan = planner.plan_cells((15, 5), frontier.goal_cell)
            assert plan.cost * RES == pytest.approx(frontier.path_distance_m, rel=1e-12)
        ranked_total += len(ranked)
    assert ranked_total > 20


def explorer(**overrides) -> Explorer:
    params = {'min_size_cells': 1, 'blacklist_radius_m': 0.2, **overrides}
    return Explorer(ExplorerParams(**params), start_s=100.0)


def test_explorer_goes_nearest_first_and_blacklists_what_it_tried():
    grid, unknown = parse(DETOUR)
    planner = GridPlanner(grid)
    run = explorer()
    robot = centre(5, 2)
    first = run.next_goal(grid, unknown, planner, robot, now_s=100.0)
    assert first.goal.goal_cell == (5, 20) and first.finished is None and len(first.frontiers) == 2
    assert run.next_goal(grid, unknown, planner, robot, now_s=101.0).goal == first.goal
    run.report(first.goal.goal, reached=False)
    second = run.next_goal(grid, unknown, planner, robot, now_s=102.0)
    assert second.goal.goal_cell == (1, 2)
    run.report(second.goal.goal, reached=True)
    done = run.next_goal(grid, unknown, planner, robot, now_s=103.0)
    assert done.goal is None and done.finished is FinishReason.NO_REACHABLE_FRONTIERS
    assert (run.goals_reached, run.goals_failed, run.goals_done) == (1, 1, 2)
    assert len(run.blacklist) == 2


def test_explorer_snaps_the_robot_like_goal_checks_or_finds_nothing_reachable():
    grid, unknown = parse(DETOUR)
    planner = GridPlanner(grid)
    on_wall = centre(7, 2)  # the south wall, 0.1 m from free row 6
    step = explorer(snap_radius_m=0.15).next_goal(grid, unknown, planner, on_wall, 100.0)
    assert step.goal.goal_cell == (5, 20)
    assert step.goal.path_distance_m == pytest.approx((17 + math.sqrt(2)) * RES)  # from (6, 2)
    blocked = explorer(snap_radius_m=0.0).next_goal(grid, unknown, planner, on_wall, 100.0)
    assert blocked.finished is FinishReason.NO_REACHABLE_FRONTIERS and len(blocked.frontiers) == 2
    off_map = explorer().next_goal(grid, unknown, planner, (50.0, 50.0), 100.0)
    assert off_map.finished is FinishReason.NO_REACHABLE_FRONTIERS
    with pytest.raises(ValueError, match='robot position'):
        explorer().next_goal(grid, unknown, planner, (math.nan, 0.0), 100.0)
    with pytest.raises(ValueError, match='another grid'):
        explorer().next_goal(parse(DETOUR)[0], unknown, planner, centre(5, 2), 100.0)


def test_explorer_finishes_when_the_map_is_closed():
    grid, unknown = parse(DETOUR)
    closed = explorer().next_goal(
        grid, np.zeros_like(unknown), GridPlanner(grid), centre(5, 2), 100.0
    )
    assert closed.finished is FinishReason.NO_FRONTIERS and closed.goal is None
    grid, unknown = parse(POCKET)
    unknown[4, 2] = False
    pocket_only = explorer().next_goal(grid, unknown, GridPlanner(grid), centre(2, 2), 100.0)
    assert pocket_only.finished is FinishReason.NO_REACHABLE_FRONTIERS
    assert len(pocket_only.frontiers) == 1


def test_explorer_time_budget_uses_the_callers_clock():
    grid, unknown = parse(DETOUR)
    planner = GridPlanner(grid)
    run = explorer(time_budget_s=10.0)
    assert run.next_goal(grid, unknown, planner, centre(5, 2), now_s=109.9).goal is not None
    late = run.next_goal(grid, unknown, planner, centre(5, 2), now_s=110.0)
    assert late.finished is FinishReason.TIME_BUDGET and late.goal is None
    assert late.frontiers  # what is left is still reported


def test_explorer_max_goals():
    grid, unknown = parse(ROOMS)
    planner = GridPlanner(grid)
    run = explorer(max_goals=1)
    step = run.next_goal(grid, unknown, planner, centre(3, 3), now_s=100.0)
    run.report(step.goal.goal, reached=True)
    assert run.next_goal(grid, unknown, planner, centre(3, 3), 100.0).finished is (
        FinishReason.MAX_GOALS
    )


@pytest.mark.parametrize(
    ('field', 'value'),
    [
        ('min_size_cells', 0),
        ('max_goals', 0),
        ('blacklist_radius_m', -1.0),
        ('snap_radius_m', math.nan),
        ('time_budget_s', 0.0),
        ('max_path_m', math.nan),
    ],
)
def test_explorer_params_are_validated(field, value):
    with pytest.raises(ValueError, match=field):
        ExplorerParams(**{field: value})
