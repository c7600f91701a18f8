# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""2D occupancy maps in ROS OccupancyGrid conventions, and where a round robot may stand.

Cells are int8: -1 unknown, 0..100 occupancy probability; rows grow with y and columns with
x, and the origin is the world position of cell (0, 0)'s corner. Cells are addressed as
(row, col) so that they index the (height, width) arrays directly.

A cell between the free and occupied thresholds is unknown: the robot neither plans
through it nor treats it as a wall unless asked (`unknown_is_obstacle`). Values outside
-1..100 (invalid in a message) count as unknown below 0 and as occupied above 100.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
from scipy import ndimage

UNKNOWN = -1
FREE = 0
OCCUPIED = 100
FREE_THRESHOLD = 25
OCCUPIED_THRESHOLD = 65
ROTATION_TOLERANCE_RAD = 1e-6
MAX_CELLS = 25_000_000  # a 250 m square at 5 cm: bounds what a point cloud may allocate
# cv2's exact distance transform returns float32: a cell at exactly the robot radius must
# not pass for one just outside it because of rounding.
_CLEARANCE_TOLERANCE_CELLS = 1e-4


@dataclass(frozen=True)
class GridGeometry:
    """Where a grid lies in the world: cell size (m), the corner of cell (0, 0), its size."""

    resolution: float
    origin_x: float
    origin_y: float
    width: int
    height: int

    def __post_init__(self) -> None:
        if not (math.isfinite(self.resolution) and self.resolution > 0):
            raise ValueError(f'resolution must be finite and > 0, got {self.resolution}')
        if not (math.isfinite(self.origin_x) and math.isfinite(self.origin_y)):
            raise ValueError(f'origin must be finite, got ({self.origin_x}, {self.origin_y})')
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f'grid size must be > 0, got {self.width} x {self.height}')

    @property
    def shape(self) -> tuple[int, int]:
        return (self.height, self.width)

    def world_to_cell(self, x: float, y: float) -> tuple[int, int]:
        """(row, col) of the cell holding a world point; it may lie outside the grid."""
        row, col = self._cell_coordinates(x, y)
        return math.floor(row), math.floor(col)

    def _cell_coordinates(self, x: float, y: float) -> tuple[float, float]:
        """(row, col) of a world point in cells, not yet floored; ValueError when they are
        not finite (x = -1e308 is finite, but not once divided by the resolution)."""
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(f'non-finite point ({x}, {y})')
        row, col = (y - self.origin_y) / self.resolution, (x - self.origin_x) / self.resolution
        if not (math.isfinite(row) and math.isfinite(col)):
            raise ValueError(f'point ({x:g}, {y:g}) is beyond any grid cell')
        return row, col

    def cell_to_world(self, row: int, col: int) -> tuple[float, float]:
        """World (x, y) of a cell's centre."""
        return (
            self.origin_x + (col + 0.5) * self.resolution,
            self.origin_y + (row + 0.5) * self.resolution,
        )

    def world_to_cells(self, xy: np.ndarray) -> np.ndarray:
        """(N, 2) world points to (N, 2) int64 (row, col); the points must be finite."""
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        if not np.isfinite(xy).all():
            raise ValueError('non-finite points')
        origin = np.array([self.origin_x, self.origin_y])
        with np.errstate(over='ignore'):
            cells = np.floor((xy - origin) / self.resolution)
        if not (np.abs(cells) < 2.0**62).all():  # int64 holds them exactly
            raise ValueError('points beyond any grid cell')
        return cells.astype(np.int64)[:, ::-1]

    def cells_to_world(self, cells: np.ndarray) -> np.ndarray:
        """(N, 2) (row, col) to (N, 2) world (x, y) of the cell centres."""
        rc = np.asarray(cells, dtype=float).reshape(-1, 2)
        origin = np.array([self.origin_x, self.origin_y])
        return origin + (rc[:, ::-1] + 0.5) * self.resolution

    def contains_cell(self, row: int, col: int) -> bool:
        return 0 <= row < self.height and 0 <= col < self.width

    def contains(self, x: float, y: float) -> bool:
        """Whether a world point lies on the grid (False for non-finite or huge points)."""
        try:
            row, col = self._cell_coordinates(x, y)
        except ValueError:
            return False
        return 0 <= row < self.height and 0 <= col < self.width


@dataclass(frozen=True)
class OccupancyMap:
    """A 2D map: int8 cells (height, width) in OccupancyGrid values, in frame `frame_id`."""

    frame_id: str
    geometry: GridGeometry
    cells: np.ndarray
    stamp_ns: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.cells, np.ndarray) or self.cells.dtype != np.int8:
            raise ValueError('cells must be an int8 numpy array')
        if self.cells.shape != self.geometry.shape:
            raise ValueError(
                f'cells have shape {self.cells.shape}, geometry says {self.geometry.shape}'
            )

    @classmethod
    def from_ros(
        cls,
        frame_id: str,
        data: Sequence[int] | np.ndarray,
        width: int,
        height: int,
        resolution: float,
        origin_position: Sequence[float],
        origin_orientation: Sequence[float],
        stamp_ns: int | None = None,
    ) -> OccupancyMap:
        """Build from a nav_msgs/OccupancyGrid's fields (orientation as x, y, z, w).

        A rotated origin is refused rather than ignored: every cell would land in the wrong
        place, and planning in a rotated frame is not supported.
        """
        if width <= 0 or height <= 0:
            raise ValueError(f'map has no cells: {width} x {height}')
        if not (math.isfinite(resolution) and resolution > 0):
            raise ValueError(f'map resolution must be finite and > 0, got {resolution}')
        quat = np.asarray(origin_orientation, dtype=float).reshape(4)
        norm = float(np.linalg.norm(quat))
        if not np.isfinite(quat).all() or norm < 1e-9:
            raise ValueError(f'map origin orientation is not a rotation: {quat.tolist()}')
        # Rotation angle of the unit quaternion; q and -q are the same rotation.
        angle = 2.0 * math.atan2(float(np.linalg.norm(quat[:3])), abs(float(quat[3])))
        if angle > ROTATION_TOLERANCE_RAD:
            raise ValueError(
                f'map origin is rotated by {angle:.3g} rad; only axis-aligned maps are supported'
            )
        cells = np.asarray(data)
        if cells.size != width * height:
            raise ValueError(f'map data has {cells.size} values, {width} x {height} expected')
        if cells.dtype != np.int8:
            cells = cells.astype(np.int64)
            if cells.size and (cells.min() < -128 or cells.max() > 127):
                raise ValueError('map data must be int8 values')
        x, y = float(origin_position[0]), float(origin_position[1])
        geometry = GridGeometry(float(resolution), x, y, int(width), int(height))
        return cls(frame_id, geometry, cells.astype(np.int8).reshape(height, width), stamp_ns)

    def free_mask(self, free_threshold: int = FREE_THRESHOLD) -> np.ndarray:
        return (self.cells >= 0) & (self.cells <= free_threshold)

    def occupied_mask(self, occupied_threshold: int = OCCUPIED_THRESHOLD) -> np.ndarray:
        return self.cells >= occupied_threshold

    def unknown_mask(
        self, free_threshold: int = FREE_THRESHOLD, occupied_threshold: int = OCCUPIED_THRESHOLD
    ) -> np.ndarray:
        return ~(self.free_mask(free_threshold) | self.occupied_mask(occupied_threshold))


@dataclass(frozen=True)
class CloudProjection:
    """A map projected from a point cloud, with how many points were unusable."""

    map: OccupancyMap
    points_used: int
    points_dropped: int  # non-finite


def project_point_cloud(
    points: np.ndarray,
    resolution: float,
    h_min: float,
    h_max: float,
    frame_id: str,
    padding_m: float = 0.5,
    max_cells: int = MAX_CELLS,
    stamp_ns: int | None = None,
    origin_height_m: float = 0.0,
) -> CloudProjection:
    """Flatten a 3D point-cloud map (e.g. from LIO SLAM; x, y, z first) into an OccupancyMap.

    Heights are metres above the floor: a point's is its z plus `origin_height_m`, the
    height of the map frame's origin above the floor (a LIO map frame starts at the
    sensor, not on the floor). A cell with any point in [h_min, h_max] (the heights the
    robot's body sweeps) is occupied. A cell with points only below h_min has seen floor:
    free. Everything else is unknown, including cells that only saw points above h_max: a
    ceiling says nothing about the floor under it (it could be a stairwell). The origin is
    snapped to a multiple of the resolution so that maps from successive clouds share cell
    boundaries.
    """
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] < 3:
        raise ValueError(f'points must be (N, 3), got shape {pts.shape}')
    if not (math.isfinite(resolution) and resolution > 0):
        raise ValueError(f'resolution must be finite and > 0, got {resolution}')
    if not (math.isfinite(h_min) and math.isfinite(h_max) and h_min <= h_max):
        raise ValueError(f'height band must be finite with h_min <= h_max, got {h_min}, {h_max}')
    if not (math.isfinite(padding_m) and padding_m >= 0):
        raise ValueError(f'padding_m must be finite and >= 0, got {padding_m}')
    if not math.isfinite(origin_height_m):
        raise ValueError(f'origin_height_m must be finite, got {origin_height_m}')
    finite = np.isfinite(pts[:, :3]).all(axis=1)
    pts = pts[finite, :3]
    dropped = int(finite.size - pts.shape[0])
    if pts.shape[0] == 0:
        raise ValueError('no finite points to project')
    low = np.floor((pts[:, :2].min(axis=0) - padding_m) / resolution) * resolution
    high = pts[:, :2].max(axis=0) + padding_m
    width, height = (np.floor((high - low) / resolution).astype(np.int64) + 1).tolist()
    if width * height > max_cells:
        raise ValueError(
            f'projected map would have {width} x {height} cells, more than max_cells={max_cells}'
        )
    geometry = GridGeometry(float(resolution), float(low[0]), float(low[1]), width, height)
    cols, rows = np.floor((pts[:, :2] - low) / resolution).astype(np.int64).T
    np.clip(cols, 0, width - 1, out=cols)  # rounding at the edges must not leave the grid
    np.clip(rows, 0, height - 1, out=rows)
    flat = rows * width + cols
    z = pts[:, 2] + origin_height_m
    band = (z >= h_min) & (z <= h_max)
    cells = np.full(width * height, UNKNOWN, dtype=np.int8)
    cells[flat[z < h_min]] = FREE
    cells[flat[band]] = OCCUPIED
    grid = OccupancyMap(frame_id, geometry, cells.reshape(height, width), stamp_ns)
    return CloudProjection(grid, int(pts.shape[0]), dropped)


@dataclass(frozen=True)
class TraversabilityGrid:
    """Where the centre of a round robot may be.

    `clearance_m` is the distance from each cell's centre to the nearest obstacle cell's
    centre (inf when there is none); a cell is traversable when it is known free and its
    clearance exceeds the robot radius.
    """

    frame_id: str
    geometry: GridGeometry
    traversable: np.ndarray  # bool (height, width)
    clearance_m: np.ndarray  # float32 (height, width)
    robot_radius_m: float

    @functools.cached_property
    def components(self) -> np.ndarray:
        """int32 label of each traversable cell's region (0 where not traversable).

        4-connected labelling is exact for 8-connected moves that may not cut corners: a
        diagonal step needs both orthogonal cells free, which already join its two ends.
        """
        labels, _ = ndimage.label(self.traversable)
        return labels

    def is_traversable(self, row: int, col: int) -> bool:
        return self.geometry.contains_cell(row, col) and bool(self.traversable[row, col])


def inflate(
    grid: OccupancyMap,
    robot_radius_m: float,
    unknown_is_obstacle: bool = True,
    free_threshold: int = FREE_THRESHOLD,
    occupied_threshold: int = OCCUPIED_THRESHOLD,
) -> TraversabilityGrid:
    """Grow obstacles by the robot radius.

    Unknown cells are never traversable. With `unknown_is_obstacle` they (and the space
    beyond the map's edge) also push the robot away like walls, so that its body does not
    sweep unseen space; without it only occupied cells do, and the robot may skirt the
    unknown.
    """
    if not (math.isfinite(robot_radius_m) and robot_radius_m >= 0):
        raise ValueError(f'robot_radius_m must be finite and >= 0, got {robot_radius_m}')
    if not 0 <= free_threshold < occupied_threshold <= 100:
        raise ValueError(
            f'need 0 <= free_threshold < occupied_threshold <= 100, '
            f'got {free_threshold}, {occupied_threshold}'
        )
    free = grid.free_mask(free_threshold)
    obstacle = ~free if unknown_is_obstacle else grid.occupied_mask(occupied_threshold)
    # One border cell of the map's outside, an obstacle exactly when unknown cells are.
    padded = np.pad(~obstacle, 1, constant_values=not unknown_is_obstacle).astype(np.uint8)
    if padded.all():
        clearance = np.full(grid.geometry.shape, np.inf, dtype=np.float32)
    else:
        cells = cv2.distanceTransform(padded, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)[1:-1, 1:-1]
        clearance = cells * np.float32(grid.geometry.resolution)
        limit = robot_radius_m / grid.geometry.resolution + _CLEARANCE_TOLERANCE_CELLS
        free &= cells > limit
    return TraversabilityGrid(grid.frame_id, grid.geometry, free, clearance, robot_radius_m)
