# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Ground-truth geometry of a synthetic world for the task evaluation: where the base can
stand, from where a target is seen, and how far apart two places are on foot.

Both the sequence generator (a target nobody can reach a view of makes no task) and the
scorer (success and SPL) ask the same questions, so they share one answer. A viewpoint is
a position, not a pose: the base turns in place at a stop, so what matters is whether a
camera there, turned toward the target, would see it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from waymark.geometry import Pose
from waymark.navigation.grid import GridGeometry, OccupancyMap, TraversabilityGrid, inflate
from waymark.navigation.planner import GridPlanner, PlanError
from waymark.sim.landmarks import visible_landmarks
from waymark.sim.world import World, occupancy_grid

MAP_RESOLUTION_M = 0.05
ROBOT_RADIUS_M = 0.35  # the navigator's default inflation
VIEWPOINT_SPACING_M = 0.25  # candidate viewpoints are free cells on a lattice this fine
CAMERA_HEIGHT_M = 0.45  # the simulated camera's height on the base
HFOV_DEG = 90.0
VFOV_DEG = math.degrees(2.0 * math.atan(math.tan(math.radians(HFOV_DEG) / 2) * 3 / 4))


@dataclass(frozen=True)
class Camera:
    """The stop views' camera, placed at the base position (its small forward offset on
    the base is ignored: it moves a view by centimetres, the success radius is a metre)."""

    hfov_deg: float = HFOV_DEG
    vfov_deg: float | None = VFOV_DEG
    height_m: float = CAMERA_HEIGHT_M

    def __post_init__(self) -> None:
        if not 0.0 < self.hfov_deg <= 180.0:
            raise ValueError(f'hfov_deg must be in (0, 180], got {self.hfov_deg}')
        if self.vfov_deg is not None and not 0.0 < self.vfov_deg <= 180.0:
            raise ValueError(f'vfov_deg must be in (0, 180], got {self.vfov_deg}')

    def sees(self, world: World, x: float, y: float, yaw: float, landmark_id: str) -> bool:
        pose = Pose.from_xyz_yaw(x, y, self.height_m, yaw)
        return landmark_id in visible_landmarks(world, pose, self.hfov_deg, vfov_deg=self.vfov_deg)


class FreeSpace:
    """The world's free space for a round base, with geodesic distances on it."""

    def __init__(
        self,
        world: World,
        resolution_m: float = MAP_RESOLUTION_M,
        robot_radius_m: float = ROBOT_RADIUS_M,
    ) -> None:
        (x0, y0), cells = occupancy_grid(world, resolution_m)
        geometry = GridGeometry(resolution_m, x0, y0, cells.shape[1], cells.shape[0])
        self.world = world
        self.grid: TraversabilityGrid = inflate(
            OccupancyMap('map', geometry, cells), robot_radius_m
        )
        self.planner = GridPlanner(self.grid)

    @property
    def geometry(self) -> GridGeometry:
        return self.grid.geometry

    def free(self, x: float, y: float) -> bool:
        return self.grid.is_traversable(*self.geometry.world_to_cell(x, y))

    def nearest_free(self, x: float, y: float, within_m: float = 1.0) -> tuple[float, float] | None:
        """The centre of the free cell nearest to (x, y), if one lies within `within_m`."""
        rows, cols = np.nonzero(self.grid.traversable)
        if not len(rows):
            return None
        centres = self.geometry.cells_to_world(np.stack([rows, cols], axis=1))
        gaps = np.hypot(centres[:, 0] - x, centres[:, 1] - y)
        best = int(np.argmin(gaps))
        return (
            (float(centres[best, 0]), float(centres[best, 1])) if gaps[best] <= within_m else None
        )

    def distances_from(self, x: float, y: float) -> np.ndarray:
        """(height, width) metres of the shortest free path from (x, y) to every cell; inf
        where unreachable. A start off the free space (a stop pressed against a wall) is
        moved to the nearest free cell within half a metre; none there gives all inf."""
        start = (x, y) if self.free(x, y) else self.nearest_free(x, y, within_m=0.5)
        if start is None:
            return np.full(self.geometry.shape, np.inf)
        try:
            return self.planner.distances(self.geometry.world_to_cell(*start))
        except PlanError:
            return np.full(self.geometry.shape, np.inf)

    def lattice(self, centre: tuple[float, float], radius_m: float, spacing_m: float) -> np.ndarray:
        """(N, 2) free cell centres within `radius_m` of `centre`, about `spacing_m` apart."""
        stride = max(1, round(spacing_m / self.geometry.resolution))
        rows, cols = np.nonzero(self.grid.traversable[::stride, ::stride])
        points = self.geometry.cells_to_world(np.stack([rows * stride, cols * stride], axis=1))
        near = np.hypot(points[:, 0] - centre[0], points[:, 1] - centre[1]) <= radius_m
        return points[near]


def viewpoints(
    space: FreeSpace,
    landmark_id: str,
    position: tuple[float, float],
    camera: Camera,
    range_m: float = 8.0,
    spacing_m: float = VIEWPOINT_SPACING_M,
) -> np.ndarray:
    """(N, 2) free positions from which the camera, turned toward the landmark, sees it."""
    tx, ty = position
    found = [
        (x, y)
        for x, y in space.lattice(position, range_m, spacing_m)
        if camera.sees(space.world, x, y, math.atan2(ty - y, tx - x), landmark_id)
    ]
    return np.asarray(found, dtype=float).reshape(-1, 2)


def nearest_distance(points: np.ndarray, x: float, y: float) -> float:
    """Straight-line metres from (x, y) to the nearest of `points`; inf when there are none."""
    if not len(points):
        return math.inf
    return float(np.min(np.hypot(points[:, 0] - x, points[:, 1] - y)))


def path_to_nearest(space: FreeSpace, distances: np.ndarray, points: np.ndarray) -> float:
    """Shortest free-path metres (from `distances_from`) to the nearest of `points`."""
    if not len(points):
        return math.inf
    cells = space.geometry.world_to_cells(points)
    inside = (
        (cells[:, 0] >= 0)
        & (cells[:, 0] < space.geometry.height)
        & (cells[:, 1] >= 0)
        & (cells[:, 1] < space.geometry.width)
    )
    cells = cells[inside]
    return float(np.min(distances[cells[:, 0], cells[:, 1]])) if len(cells) else math.inf
