# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A bounded 2D obstacle map built scan by scan, as a costmap's obstacle layer builds it.

Each registered scan (points already in the map frame, as a LIO SLAM publishes them) is
folded into a square window of cells around the robot. Heights are metres above the floor,
as in `project_point_cloud`: a point's height is its z plus `origin_height_m`. A point in
[h_min, h_max] is a hit: its cell gains `hit_log_odds`. A point below h_min has seen floor,
and a point farther than `max_range_m` has at least seen the space up to that range: the
cells along the ray from the sensor to it (the floor point's own cell included) lose
`miss_log_odds`. Points above h_max say nothing about the floor and are not used: a ray to
a ceiling passes over a table, which it must not clear. Each cell changes at most once per
scan, and a cell hit in a scan is not cleared in it (marking wins, as in a costmap).

Log-odds are clamped to [min_log_odds, max_log_odds], so a person who stood still for a
minute and walks away is cleared by a few scans, as fast as one who passed: nothing
accumulates without bound. With OctoMap's usual values (hit +0.85, miss -0.4, clamp
[-2, 3.5]) a saturated cell reads free again after about 12 scans through it (1.2 s at 10
Hz).

Memory is fixed at construction: `window_m / resolution` cells a side, whatever the run's
length. The window is centred on the robot at the first scan and slides (cells that leave
it are forgotten, cells that enter it are unknown) whenever the robot comes farther than a
quarter of the window from its centre, so the map always reaches at least a quarter window
around the robot. Ray tracing is numpy: one Chebyshev step per cell along each ray (as
Bresenham's line), over the distinct end cells of the scan, in chunks of bounded size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from waymark.navigation.grid import MAX_CELLS, UNKNOWN, GridGeometry, OccupancyMap

# Ray samples handled at once: bounds the temporary arrays of a scan (about 40 bytes each).
_CHUNK_SAMPLES = 1 << 20
_RECENTRE_FRACTION = 0.25  # of the window: how far the robot may stray from its centre


@dataclass(frozen=True)
class ScanGridConfig:
    resolution: float = 0.05
    window_m: float = 40.0
    max_range_m: float = 15.0
    max_points: int = 20_000
    h_min: float = 0.10
    h_max: float = 0.8
    origin_height_m: float = 0.0
    clearing: bool = True
    hit_log_odds: float = 0.85
    miss_log_odds: float = 0.4
    min_log_odds: float = -2.0
    max_log_odds: float = 3.5

    def __post_init__(self) -> None:
        numbers = {k: float(v) for k, v in vars(self).items() if k != 'clearing'}
        if not all(math.isfinite(v) for v in numbers.values()):
            raise ValueError(f'scan grid settings must be finite: {numbers}')
        if self.resolution <= 0 or self.window_m < 2 * self.resolution:
            raise ValueError(
                f'need resolution > 0 and a window of 2 cells or more, got '
                f'{self.resolution} and {self.window_m}'
            )
        if self.cells_per_side**2 > MAX_CELLS:
            raise ValueError(
                f'a {self.window_m} m window of {self.resolution} m cells has more than '
                f'{MAX_CELLS} cells'
            )
        if self.max_range_m <= 0 or self.max_points <= 0:
            raise ValueError('max_range_m and max_points must be > 0')
        if self.h_max <= self.h_min:
            raise ValueError('h_max must be above h_min')
        if self.hit_log_odds <= 0 or self.miss_log_odds <= 0:
            raise ValueError('hit_log_odds and miss_log_odds must be > 0')
        if not self.min_log_odds < 0 < self.max_log_odds:
            raise ValueError('need min_log_odds < 0 < max_log_odds')

    @property
    def cells_per_side(self) -> int:
        return math.ceil(self.window_m / self.resolution)


@dataclass(frozen=True)
class ScanUpdate:
    """What one scan did: points used (hits and rays), dropped (non-finite, overhead, or
    beyond max_points), and how many cells it marked and cleared."""

    points_used: int
    points_dropped: int
    marked: int
    cleared: int
    slid: bool


class ScanGrid:
    """Log-odds cells (float32, 0 = never seen) in a window that follows the robot."""

    def __init__(self, config: ScanGridConfig, frame_id: str) -> None:
        self.config = config
        self.frame_id = frame_id
        side = config.cells_per_side
        self._log_odds = np.zeros((side, side), dtype=np.float32)
        self._hit = np.zeros(side * side, dtype=bool)  # per-scan scratch
        self._miss = np.zeros(side * side, dtype=bool)
        self.geometry: GridGeometry | None = None  # placed at the first scan
        self.scans = 0

    @property
    def nbytes(self) -> int:
        return self._log_odds.nbytes + self._hit.nbytes + self._miss.nbytes

    def integrate(self, points: np.ndarray, sensor_xy: tuple[float, float]) -> ScanUpdate:
        """Fold in one scan: (N, 3+) points in the map frame, seen from `sensor_xy`."""
        pts = np.asarray(points, dtype=float)
        if pts.ndim != 2 or pts.shape[1] < 3:
            raise ValueError(f'points must be (N, 3), got shape {pts.shape}')
        sx, sy = float(sensor_xy[0]), float(sensor_xy[1])
        if not (math.isfinite(sx) and math.isfinite(sy)):
            raise ValueError(f'non-finite sensor position ({sx}, {sy})')
        c = self.config
        total = pts.shape[0]
        if total > c.max_points:  # evenly spread, so the whole field of view stays
            pts = pts[np.linspace(0, total - 1, c.max_points).astype(np.int64)]
        pts = pts[np.isfinite(pts[:, :3]).all(axis=1), :3]
        slid = self._place(sx, sy)
        g = self.geometry
        z = pts[:, 2] + c.origin_height_m
        pts = pts[z <= c.h_max]
        z = z[z <= c.h_max]
        offsets = pts[:, :2] - (sx, sy)
        distance = np.hypot(offsets[:, 0], offsets[:, 1])
        near = distance <= c.max_range_m
        origin = np.array([g.origin_x, g.origin_y])
        start = (np.array([sx, sy]) - origin) / c.resolution  # in cells, (x, y)
        ends = pts[:, :2] - origin
        hits = near & (z >= c.h_min)
        self._hit[:] = False
        self._miss[:] = False
        self._mark(ends[hits] / c.resolution, self._hit)
        if c.clearing:
            far = ~near
            scale = np.ones_like(distance)
            scale[far] = c.max_range_m / distance[far]
            ray_ends = start + (offsets * scale[:, None]) / c.resolution
            floor = near & (z < c.h_min)
            self._trace(start, ray_ends, self._miss)
            self._mark(ray_ends[floor], self._miss)  # a floor point's own cell is free
        self._miss &= ~self._hit
        marked, cleared = self._apply(self._hit, c.hit_log_odds), 0
        if c.clearing:
            cleared = self._apply(self._miss, -c.miss_log_odds)
        self.scans += 1
        used = len(pts) if c.clearing else int(hits.sum())  # clearing uses every ray
        return ScanUpdate(used, total - used, marked, cleared, slid)

    def occupancy(self, stamp_ns: int | None = None) -> OccupancyMap:
        """The window as an OccupancyMap: never-seen cells unknown (-1), the others the
        probability of their log-odds, 0..100 (free below 25, occupied from 65)."""
        if self.geometry is None:
            raise ValueError('no scan yet')
        with np.errstate(over='ignore'):
            probability = 100.0 / (1.0 + np.exp(-self._log_odds))
        cells = np.rint(probability).astype(np.int8)
        cells[self._log_odds == 0] = UNKNOWN
        return OccupancyMap(self.frame_id, self.geometry, cells, stamp_ns)

    # -- internals ---------------------------------------------------------------------------

    def _place(self, x: float, y: float) -> bool:
        """Centre the window on (x, y) at the first scan, and slide it there when the robot
        has strayed too far from its centre; whether it slid."""
        c, g = self.config, self.geometry
        side = c.cells_per_side
        half = side * c.resolution / 2.0
        if g is not None:
            cx, cy = g.origin_x + half, g.origin_y + half
            if max(abs(x - cx), abs(y - cy)) <= _RECENTRE_FRACTION * side * c.resolution:
                return False
        ox = math.floor((x - half) / c.resolution) * c.resolution
        oy = math.floor((y - half) / c.resolution) * c.resolution
        placed = GridGeometry(c.resolution, ox, oy, side, side)
        if g is not None:
            shift_col = round((ox - g.origin_x) / c.resolution)
            shift_row = round((oy - g.origin_y) / c.resolution)
            self._log_odds = _shifted(self._log_odds, shift_row, shift_col)
        self.geometry = placed
        return g is not None

    def _mark(self, cells_xy: np.ndarray, mask: np.ndarray) -> None:
        """Set `mask` at the cells (x, y in cell units) that lie in the window."""
        side = self.config.cells_per_side
        col = np.floor(cells_xy[:, 0]).astype(np.int64)
        row = np.floor(cells_xy[:, 1]).astype(np.int64)
        inside = (row >= 0) & (row < side) & (col >= 0) & (col < side)
        mask[row[inside] * side + col[inside]] = True

    def _trace(self, start: np.ndarray, ends: np.ndarray, mask: np.ndarray) -> None:
        """Set `mask` along each ray from `start` to each end (x, y in cell units), the end
        cell excluded, one cell per Chebyshev step."""
        side = self.config.cells_per_side
        end_cells = np.floor(ends).astype(np.int64)
        # Ends within a window's width of it (range and window bound them anyway), one ray
        # per distinct end cell.
        near = ((end_cells >= -side) & (end_cells < 2 * side)).all(axis=1)
        code = np.unique((end_cells[near] + side) @ np.array([1, 3 * side]))
        if code.size == 0:
            return
        end_cells = np.column_stack([code % (3 * side), code // (3 * side)]) - side
        s = np.floor(start).astype(np.int64)
        delta = end_cells - s
        steps = np.abs(delta).max(axis=1)
        keep = steps > 0
        delta, steps = delta[keep], steps[keep]
        if steps.size == 0:
            return
        bounds = np.cumsum(steps)
        first = 0
        while first < steps.size:  # chunks of rays with at most _CHUNK_SAMPLES samples
            before = bounds[first - 1] if first else 0
            last = max(first + 1, int(np.searchsorted(bounds, before + _CHUNK_SAMPLES, 'right')))
            n = steps[first:last]
            ray = np.repeat(np.arange(last - first), n)
            k = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
            t = k / n[ray]
            col = s[0] + np.rint(delta[first:last, 0][ray] * t).astype(np.int64)
            row = s[1] + np.rint(delta[first:last, 1][ray] * t).astype(np.int64)
            inside = (row >= 0) & (row < side) & (col >= 0) & (col < side)
            mask[row[inside] * side + col[inside]] = True
            first = last

    def _apply(self, mask: np.ndarray, change: float) -> int:
        """Add `change` to the log-odds of the masked cells, clamped; how many."""
        flat = np.flatnonzero(mask)
        values = self._log_odds.reshape(-1)
        c = self.config
        updated = np.clip(values[flat] + np.float32(change), c.min_log_odds, c.max_log_odds)
        updated[updated == 0] = np.float32(change) * 1e-3  # seen: never back to "unknown"
        values[flat] = updated
        return int(flat.size)


def _shifted(cells: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """`cells` seen from an origin moved by (rows, cols) cells: what stays in the window
    keeps its place in the world, the rest is never-seen (0)."""
    height, width = cells.shape
    out = np.zeros_like(cells)
    if abs(rows) >= height or abs(cols) >= width:
        return out
    src_r = slice(max(rows, 0), height + min(rows, 0))
    dst_r = slice(max(-rows, 0), height + min(-rows, 0))
    src_c = slice(max(cols, 0), width + min(cols, 0))
    dst_c = slice(max(-cols, 0), width + min(-cols, 0))
    out[dst_r, dst_c] = cells[src_r, src_c]
    return out
