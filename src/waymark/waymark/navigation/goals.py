# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Goal validation: accept only goals the robot can reach, moving them a little if needed.

A goal that lands in a wall's inflation, in unknown space or in a pocket the robot cannot
get to is moved to the nearest cell of the robot's own region within `snap_radius_m`, not
to the nearest free cell: a free cell behind a wall is closer but useless. An accepted goal
is always a traversable cell connected to the robot's (snapped) cell.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from waymark.navigation.grid import TraversabilityGrid

MAX_ABS_COORDINATE_M = 10_000.0  # no map is larger; beyond it, numbers only overflow
QUATERNION_NORM_TOLERANCE = 0.01  # a norm this close to 1 is the sender's rounding


class GoalReason(enum.Enum):
    OK = 'ok'
    NON_FINITE = 'non_finite'
    TOO_FAR = 'too_far'
    WRONG_FRAME = 'wrong_frame'
    OUTSIDE_MAP = 'outside_map'
    ROBOT_OUTSIDE_MAP = 'robot_outside_map'
    ROBOT_BLOCKED = 'robot_blocked'
    NO_FREE_CELL = 'no_free_cell'
    UNREACHABLE = 'unreachable'


@dataclass(frozen=True)
class GoalCheck:
    """The verdict on a goal. x, y are where to go (the requested goal unless snapped)."""

    accepted: bool
    x: float
    y: float
    snapped: bool
    snap_distance_m: float
    reason: GoalReason
    message: str
    start_cell: tuple[int, int] | None = None  # the robot's cell, after snapping
    goal_cell: tuple[int, int] | None = None


def check_goal(
    grid: TraversabilityGrid,
    x: float,
    y: float,
    frame_id: str,
    robot_x: float,
    robot_y: float,
    snap_radius_m: float = 0.5,
    start_snap_radius_m: float = 0.25,
    max_abs_coordinate_m: float = MAX_ABS_COORDINATE_M,
) -> GoalCheck:
    """Validate a goal against the map and the robot's position (both in the map's frame).

    The robot may stand in a wall's inflation (localisation noise, a map update): it is
    moved to the nearest traversable cell within `start_snap_radius_m` to find its region.
    A coordinate beyond `max_abs_coordinate_m` is refused before any arithmetic on it: no
    map is that large, and such numbers overflow cell indices.
    """
    radii = (('snap_radius_m', snap_radius_m), ('start_snap_radius_m', start_snap_radius_m))
    for name, radius in radii:
        if not (math.isfinite(radius) and radius >= 0):
            raise ValueError(f'{name} must be finite and >= 0, got {radius}')
    if not (math.isfinite(max_abs_coordinate_m) and max_abs_coordinate_m > 0):
        raise ValueError(f'max_abs_coordinate_m must be finite and > 0, got {max_abs_coordinate_m}')

    def refuse(reason: GoalReason, message: str, start: tuple[int, int] | None = None) -> GoalCheck:
        return GoalCheck(False, x, y, False, 0.0, reason, message, start)

    geometry = grid.geometry
    if not (math.isfinite(x) and math.isfinite(y)):
        return refuse(GoalReason.NON_FINITE, f'goal ({x}, {y}) is not a finite point')
    if max(abs(x), abs(y)) > max_abs_coordinate_m:
        return refuse(
            GoalReason.TOO_FAR,
            f'goal ({x:g}, {y:g}) lies beyond max_abs_coordinate_m ({max_abs_coordinate_m:g} m)',
        )
    if frame_id != grid.frame_id:
        return refuse(
            GoalReason.WRONG_FRAME, f"goal is in frame '{frame_id}', the map in '{grid.frame_id}'"
        )
    if not geometry.contains(x, y):
        return refuse(GoalReason.OUTSIDE_MAP, f'goal ({x:.2f}, {y:.2f}) is outside {_extent(grid)}')
    if not geometry.contains(robot_x, robot_y):
        return refuse(
            GoalReason.ROBOT_OUTSIDE_MAP,
            f'robot position ({robot_x}, {robot_y}) is not on the map {_extent(grid)}',
        )
    start = nearest_cell(grid, robot_x, robot_y, start_snap_radius_m, grid.traversable)
    if start is None:
        return refuse(
            GoalReason.ROBOT_BLOCKED,
            f'robot at ({robot_x:.2f}, {robot_y:.2f}) has no traversable cell within '
            f'{start_snap_radius_m:g} m',
        )
    start_cell = start[:2]
    labels = grid.components
    region = labels == labels[start_cell]
    goal_cell = geometry.world_to_cell(x, y)
    if region[goal_cell]:
        ok = GoalReason.OK
        return GoalCheck(True, x, y, False, 0.0, ok, 'goal accepted', start_cell, goal_cell)
    snap = nearest_cell(grid, x, y, snap_radius_m, region)
    if snap is None:
        if nearest_cell(grid, x, y, snap_radius_m, grid.traversable) is None:
            return refuse(
                GoalReason.NO_FREE_CELL,
                f'no traversable cell within {snap_radius_m:g} m of goal ({x:.2f}, {y:.2f})',
                start_cell,
            )
        return refuse(
            GoalReason.UNREACHABLE,
            f'goal ({x:.2f}, {y:.2f}) is not connected to the robot within {snap_radius_m:g} m',
            start_cell,
        )
    row, col, distance = snap
    sx, sy = geometry.cell_to_world(row, col)
    message = f'goal moved {distance:.2f} m to ({sx:.2f}, {sy:.2f}), the nearest reachable cell'
    return GoalCheck(True, sx, sy, True, distance, GoalReason.OK, message, start_cell, (row, col))


def goal_orientation(
    q: tuple[float, float, float, float], norm_tolerance: float = QUATERNION_NORM_TOLERANCE
) -> tuple[float, float, float, float]:
    """A goal's heading as a unit quaternion (x, y, z, w), or ValueError saying why not.

    A norm within `norm_tolerance` of 1 is rounding in the sender and is normalised; a zero
    or clearly scaled quaternion is not a heading anyone meant, so the goal is refused
    rather than driven with a heading guessed from it.
    """
    if not (math.isfinite(norm_tolerance) and 0 <= norm_tolerance < 1):
        raise ValueError(f'norm_tolerance must be in [0, 1), got {norm_tolerance}')
    if not all(math.isfinite(v) for v in q):
        raise ValueError(f'goal orientation {list(q)} is not finite')
    norm = math.sqrt(sum(v * v for v in q))
    if abs(norm - 1.0) > norm_tolerance:
        raise ValueError(
            f'goal orientation {list(q)} has norm {norm:.4g}, not 1 within {norm_tolerance:g}'
        )
    x, y, z, w = (v / norm for v in q)
    return x, y, z, w


def nearest_cell(
    grid: TraversabilityGrid, x: float, y: float, radius_m: float, allowed: np.ndarray
) -> tuple[int, int, float] | None:
    """The allowed cell whose centre is nearest (x, y) within radius_m, with its distance.
    The point's own cell wins if allowed, though its centre may lie farther than radius_m.
    With `grid.traversable` as `allowed` this is how a robot's start cell is found, here and
    by the frontier explorer, so both see the robot in the same region."""
    geometry = grid.geometry
    row, col = geometry.world_to_cell(x, y)
    if geometry.contains_cell(row, col) and allowed[row, col]:
        cx, cy = geometry.cell_to_world(row, col)
        return row, col, math.hypot(cx - x, cy - y)
    reach = math.ceil(radius_m / geometry.resolution) + 1
    r0, r1 = max(row - reach, 0), min(row + reach + 1, geometry.height)
    c0, c1 = max(col - reach, 0), min(col + reach + 1, geometry.width)
    if r0 >= r1 or c0 >= c1:
        return None
    rows, cols = np.mgrid[r0:r1, c0:c1]
    centres = geometry.cells_to_world(np.column_stack([rows.ravel(), cols.ravel()]))
    distance = np.hypot(centres[:, 0] - x, centres[:, 1] - y)
    distance[~allowed[r0:r1, c0:c1].ravel() | (distance > radius_m)] = np.inf
    best = int(np.argmin(distance))
    if not np.isfinite(distance[best]):
        return None
    return int(rows.flat[best]), int(cols.flat[best]), float(distance[best])


def _extent(grid: TraversabilityGrid) -> str:
    g = grid.geometry
    x1, y1 = g.origin_x + g.width * g.resolution, g.origin_y + g.height * g.resolution
    return f'the map (x {g.origin_x:.2f}..{x1:.2f}, y {g.origin_y:.2f}..{y1:.2f})'
