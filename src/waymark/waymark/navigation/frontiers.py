# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Frontier exploration: go to the nearest reachable edge of the known map until none is left.

Frontiers are traversable cells of a TraversabilityGrid next to unknown ones, so the grid
must be inflated with `unknown_is_obstacle=False`: otherwise, for a radius of a cell or
more, the inflation keeps every traversable cell away from the unknown and finds none.

"Nearest" is by path, not straight-line distance: a frontier just behind a wall may be a
long walk away. The distances are the planner's own (`GridPlanner.distances`, one Dijkstra
on its graph per call) and the robot's cell is snapped as goal checks snap it
(`goals.nearest_cell`), so a frontier is ranked reachable exactly when the planner can plan
to its goal cell, at the cost it would find. Frontier groups are split along the grid's
regions for the same reason: every member, the goal cell included, lies in one region.

Measured on a shared 2-core machine (load ~2), medians of 7: 1000 x 1000 cells at 5 cm
(the planner benchmark's maps), robot radius 0.15 m, the east 40 % and forty 1.5 m patches
unknown. Among boxes (robot's region 473k cells, 31 frontiers) `next_goal` takes 87 ms with
the planner already built (finding frontiers 14 ms, distances 73 ms) and 150 ms with the
graph build (60 ms) on a fresh grid; in the maze (region 64k cells, 78 frontiers) 24 ms and
88 ms. The search grows with the robot's region, not the map; `max_path_m` bounds it.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import ndimage

from waymark.navigation.goals import nearest_cell
from waymark.navigation.grid import OccupancyMap, TraversabilityGrid
from waymark.navigation.planner import GridPlanner

EIGHT = np.ones((3, 3), dtype=bool)


@dataclass(frozen=True)
class Frontier:
    """A connected run of traversable cells bordering the unknown, all in one region.

    `goal` is the member cell nearest the centroid: the centroid of a curved frontier can lie
    off it, even in a wall. `length_m` is cells times resolution, a rough extent that
    over-counts diagonal runs (their 8-neighbour band is two cells thick).
    `path_distance_m` is None until `rank_frontiers` has measured it.
    """

    centroid: tuple[float, float]
    goal: tuple[float, float]
    goal_cell: tuple[int, int]
    size_cells: int
    length_m: float
    path_distance_m: float | None = None


def _check_masks(*masks: np.ndarray) -> None:
    shape = masks[0].shape
    for mask in masks:
        if mask.ndim != 2 or mask.shape != shape or mask.dtype != bool:
            raise ValueError('masks must be boolean 2-D arrays of one shape')


def frontier_mask(free: np.ndarray, unknown: np.ndarray) -> np.ndarray:
    """Free, known cells with at least one unknown 8-neighbour."""
    _check_masks(free, unknown)
    near_unknown = ndimage.binary_dilation(unknown, structure=EIGHT)
    return free & ~unknown & near_unknown


def frontier_near(occupancy: OccupancyMap, xy: tuple[float, float], radius_m: float) -> bool:
    """Whether known free space bordering the unknown lies within `radius_m` of `xy`.

    Tells an exploration leg that the unknown it was sent to look at has been seen, so it
    can stop short. Cells count as free as the map's own thresholds say, before inflation:
    that finds every frontier `find_frontiers` would and more, so a leg is never cut short
    while a frontier it could be driving to remains. Only a window around `xy` is read, which
    keeps this cheap enough for every control step.
    """
    if not (math.isfinite(radius_m) and radius_m >= 0):
        raise ValueError(f'radius_m must be a finite number >= 0, got {radius_m}')
    geometry = occupancy.geometry
    row, col = geometry.world_to_cell(*xy)
    reach = math.ceil(radius_m / geometry.resolution) + 1  # +1: the neighbours of the rim
    row0, col0 = max(row - reach, 0), max(col - reach, 0)
    row1, col1 = min(row + reach + 1, geometry.height), min(col + reach + 1, geometry.width)
    if row0 >= row1 or col0 >= col1:
        return False  # the window lies wholly off the map
    window = OccupancyMap(
        occupancy.frame_id,
        replace(geometry, width=col1 - col0, height=row1 - row0),  # only its shape is read
        occupancy.cells[row0:row1, col0:col1],
    )
    found = np.argwhere(frontier_mask(window.free_mask(), window.unknown_mask()))
    if not len(found):
        return False
    centres = geometry.cells_to_world(found + np.array([row0, col0]))
    return bool(np.any(np.hypot(centres[:, 0] - xy[0], centres[:, 1] - xy[1]) <= radius_m))


def find_frontiers(
    grid: TraversabilityGrid, unknown: np.ndarray, min_size_cells: int = 1
) -> list[Frontier]:
    """Frontiers of at least `min_size_cells`, in raster order of their first cell.

    A frontier is an 8-connected group of frontier cells within one of the grid's regions:
    a group that two regions share only across a corner becomes two frontiers.
    """
    if min_size_cells < 1:
        raise ValueError(f'min_size_cells must be >= 1, got {min_size_cells}')
    labels, count = ndimage.label(frontier_mask(grid.traversable, unknown), structure=EIGHT)
    if count == 0:
        return []
    rows, cols = np.nonzero(labels)
    regions = grid.components[rows, cols].astype(np.int64)
    key = labels[rows, cols].astype(np.int64) * (int(regions.max()) + 1) + regions
    _, first_cell, group = np.unique(key, return_index=True, return_inverse=True)
    count = first_cell.size
    rank = np.empty(count, dtype=np.int64)
    rank[np.argsort(first_cell)] = np.arange(count)  # groups in raster order
    group = rank[group]
    sizes = np.bincount(group, minlength=count)
    mean_row = np.bincount(group, weights=rows, minlength=count) / sizes
    mean_col = np.bincount(group, weights=cols, minlength=count) / sizes
    # Per group, the member nearest its centroid: sort by (group, distance), take each first.
    d2 = (rows - mean_row[group]) ** 2 + (cols - mean_col[group]) ** 2
    order = np.lexsort((d2, group))
    first = order[np.searchsorted(group[order], np.arange(count))]
    kept = np.flatnonzero(sizes >= min_size_cells)
    goal_cells = np.column_stack([rows[first[kept]], cols[first[kept]]])
    geometry = grid.geometry
    centroids = geometry.cells_to_world(np.column_stack([mean_row[kept], mean_col[kept]]))
    goals = geometry.cells_to_world(goal_cells)
    return [
        Frontier(
            centroid=(float(centroid[0]), float(centroid[1])),
            goal=(float(goal[0]), float(goal[1])),
            goal_cell=(int(cell[0]), int(cell[1])),
            size_cells=int(sizes[g]),
            length_m=float(sizes[g]) * geometry.resolution,
        )
        for g, centroid, goal, cell in zip(kept, centroids, goals, goal_cells, strict=True)
    ]


def rank_frontiers(
    frontiers: Sequence[Frontier],
    distances: np.ndarray,
    blacklist: Sequence[tuple[float, float]] = (),
    blacklist_radius_m: float = 0.0,
) -> list[Frontier]:
    """Reachable frontiers, nearest by path first (larger first on ties), distances set.

    `distances` is a field of path distances from the robot (`GridPlanner.distances`);
    a frontier whose goal cell has inf there is unreachable. Frontiers whose goal lies
    within `blacklist_radius_m` of a blacklisted point are left out.
    """
    if not frontiers:
        return []
    goals = np.array([f.goal for f in frontiers])
    allowed = np.ones(len(frontiers), dtype=bool)
    if len(blacklist):
        gaps = np.linalg.norm(goals[:, None, :] - np.asarray(blacklist)[None, :, :], axis=2)
        allowed = ~np.any(gaps <= blacklist_radius_m, axis=1)
    cells = np.array([f.goal_cell for f in frontiers])
    path = distances[cells[:, 0], cells[:, 1]]
    keep = np.flatnonzero(allowed & np.isfinite(path))
    sizes = np.array([f.size_cells for f in frontiers])
    keep = keep[np.lexsort((-sizes[keep], path[keep]))]
    return [replace(frontiers[i], path_distance_m=float(path[i])) for i in keep]


class FinishReason(enum.Enum):
    NO_FRONTIERS = 'no_frontiers'
    NO_REACHABLE_FRONTIERS = 'no_reachable_frontiers'
    TIME_BUDGET = 'time_budget'
    MAX_GOALS = 'max_goals'


@dataclass(frozen=True)
class ExplorerParams:
    """Limits of one exploration run; distances in metres, times in seconds."""

    min_size_cells: int = 8
    blacklist_radius_m: float = 0.5
    time_budget_s: float = 900.0
    max_goals: int = 100
    snap_radius_m: float = 0.5
    max_path_m: float = math.inf

    def __post_init__(self) -> None:
        for name in ('min_size_cells', 'max_goals'):
            if getattr(self, name) < 1:
                raise ValueError(f'{name} must be >= 1, got {getattr(self, name)}')
        for name in ('blacklist_radius_m', 'snap_radius_m'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f'{name} must be a finite number >= 0, got {value}')
        for name in ('time_budget_s', 'max_path_m'):
            value = getattr(self, name)
            if math.isnan(value) or value <= 0:
                raise ValueError(f'{name} must be > 0, got {value}')


@dataclass(frozen=True)
class ExplorerStep:
    """Either the next goal or why exploration is over; `frontiers` are all those found."""

    goal: Frontier | None = None
    finished: FinishReason | None = None
    frontiers: tuple[Frontier, ...] = ()


class Explorer:
    """Hands out frontier goals until the map is closed or a budget is spent.

    Call `next_goal` whenever the map changes (the best frontier may move), and `report`
    once per goal when it ends. Reached goals are blacklisted as well as failed ones: a
    frontier still there after the robot stood on it is one the sensors cannot resolve, and
    returning to it would loop forever. `report` calls count towards `max_goals`.
    """

    def __init__(self, params: ExplorerParams, start_s: float) -> None:
        self.params = params
        self.start_s = start_s
        self.goals_reached = 0
        self.goals_failed = 0
        self._blacklist: list[tuple[float, float]] = []

    @property
    def goals_done(self) -> int:
        return self.goals_reached + self.goals_failed

    @property
    def blacklist(self) -> tuple[tuple[float, float], ...]:
        return tuple(self._blacklist)

    def budget_spent(self, now_s: float) -> bool:
        """Whether the time budget has run out, on the caller's clock."""
        return now_s - self.start_s >= self.params.time_budget_s

    def next_goal(
        self,
        grid: TraversabilityGrid,
        unknown: np.ndarray,
        planner: GridPlanner,
        robot_xy: tuple[float, float],
        now_s: float,
    ) -> ExplorerStep:
        """The nearest reachable frontier not blacklisted; `planner` must be `grid`'s.

        The robot's cell is snapped to the nearest traversable cell within `snap_radius_m`;
        when there is none (or the robot is off the map), nothing is reachable.
        """
        if planner.grid is not grid:
            raise ValueError('planner was built for another grid')
        if not all(math.isfinite(v) for v in robot_xy):
            raise ValueError(f'robot position must be finite, got {robot_xy}')
        found = tuple(find_frontiers(grid, unknown, self.params.min_size_cells))
        if not found:
            return ExplorerStep(finished=FinishReason.NO_FRONTIERS)
        if self.budget_spent(now_s):
            return ExplorerStep(finished=FinishReason.TIME_BUDGET, frontiers=found)
        if self.goals_done >= self.params.max_goals:
            return ExplorerStep(finished=FinishReason.MAX_GOALS, frontiers=found)
        x, y = robot_xy
        start = nearest_cell(grid, x, y, self.params.snap_radius_m, grid.traversable)
        ranked = []
        if start is not None:
            distances = planner.distances(start[:2], self.params.max_path_m)
            ranked = rank_frontiers(
                found, distances, self._blacklist, self.params.blacklist_radius_m
            )
        if not ranked:
            return ExplorerStep(finished=FinishReason.NO_REACHABLE_FRONTIERS, frontiers=found)
        return ExplorerStep(goal=ranked[0], frontiers=found)

    def report(self, goal_xy: tuple[float, float], reached: bool) -> None:
        """End of one goal, reached or not; either way it is blacklisted (see the class)."""
        if reached:
            self.goals_reached += 1
        else:
            self.goals_failed += 1
        self._blacklist.append((float(goal_xy[0]), float(goal_xy[1])))
