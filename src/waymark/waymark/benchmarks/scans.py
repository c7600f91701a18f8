# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Scan-map benchmark: the bounded scan-by-scan map (waymark.navigation.scan_grid) fed as a
LIO SLAM feeds it, for a long run, with the planner on what it builds.

The LIO stand-in publishes what FAST-LIO publishes with a MID-360 (laserMapping.cpp,
`publish_frame_world`, `publish_odometry`): every 0.1 s a registered scan of about 20,000
points, already in the map frame, and the odometry of the same instant. Its points are rays
cast in a synthetic building (40 m x 30 m, rooms and corridors behind full-height walls,
boxes 0.6 m high, a floor and a 2.5 m ceiling) from a sensor 0.45 m above the floor, over
the MID-360's field of view (360 degrees around, -7 to 52 degrees up), with 2 cm of range
noise; the robot walks a loop through the rooms at 0.5 m/s, around and around. Casting the
scans is the stand-in's work and is not timed.

Timed, in process (no DDS): each scan's update of the map; every simulated minute (and
after the last scan), the
rebuild of the planning grid (occupancy, inflation, the planner's graph) and a plan from
the robot to the far side of its loop. The process's RSS is sampled every 5 simulated
minutes: a bounded map keeps it flat.
"""

from __future__ import annotations

import time

import numpy as np

from waymark.benchmarks.common import latency, rss_bytes, table
from waymark.navigation.grid import inflate
from waymark.navigation.planner import GridPlanner, PlanError
from waymark.navigation.scan_grid import ScanGrid, ScanGridConfig

SCAN_RATE_HZ = 10.0
POINTS_PER_SCAN = 20_000
SIM_MINUTES, QUICK_SIM_MINUTES = 30.0, 0.5
SENSOR_HEIGHT_M = 0.45
CEILING_M = 2.5
BOX_HEIGHT_M = 0.6
ELEVATION_DEG = (-7.0, 52.0)
RANGE_NOISE_M = 0.02
SPEED_MPS = 0.5
ROBOT_RADIUS_M = 0.3
PLAN_EVERY_S = 60.0
RSS_EVERY_S = 300.0
# A 40 m x 30 m building: outer walls, rooms off a corridor along y = 14..16, doors 1.2 m.
WALLS = (
    ((0, 0), (40, 0)),
    ((40, 0), (40, 30)),
    ((40, 30), (0, 30)),
    ((0, 30), (0, 0)),
    ((0, 14), (8, 14)),
    ((9.2, 14), (18, 14)),
    ((19.2, 14), (30, 14)),
    ((31.2, 14), (40, 14)),
    ((0, 16), (8, 16)),
    ((9.2, 16), (28, 16)),
    ((29.2, 16), (40, 16)),
    ((12, 0), (12, 14)),
    ((25, 0), (25, 14)),
    ((15, 16), (15, 30)),
    ((30, 16), (30, 30)),
)
BOXES = ((4, 5), (20, 8), (33, 6), (6, 24), (22, 22), (36, 25))  # 1 m squares
# The loop: through the corridor and into rooms through their doors, back to its start.
LOOP = (
    (3, 15), (8.6, 15), (8.6, 8), (8.6, 15), (18.6, 15), (18.6, 7), (18.6, 15),
    (28.6, 15), (28.6, 24), (28.6, 15), (37, 15), (30.6, 15), (30.6, 8), (30.6, 15), (3, 15),
)  # fmt: skip


def _segments() -> tuple[np.ndarray, np.ndarray]:
    """(S, 4) segments x0, y0, x1, y1 and their (S,) heights: walls, then box sides."""
    segments = [(*a, *b) for a, b in WALLS]
    heights = [CEILING_M] * len(WALLS)
    for x, y in BOXES:
        corners = ((x, y), (x + 1, y), (x + 1, y + 1), (x, y + 1))
        for i in range(4):
            segments.append((*corners[i], *corners[(i + 1) % 4]))
            heights.append(BOX_HEIGHT_M)
    return np.array(segments, dtype=float), np.array(heights)


class LioStandIn:
    """Registered scans and poses along the loop, as a LIO SLAM would publish them."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._segments, self._heights = _segments()
        loop = np.array(LOOP, dtype=float)
        self._legs = np.diff(loop, axis=0)
        self._starts = loop[:-1]
        lengths = np.hypot(self._legs[:, 0], self._legs[:, 1])
        self._ends = np.cumsum(lengths)
        self._lengths = lengths

    def pose(self, t_s: float) -> tuple[float, float]:
        along = (SPEED_MPS * t_s) % self._ends[-1]
        leg = int(np.searchsorted(self._ends, along, 'right'))
        leg = min(leg, len(self._lengths) - 1)
        into = along - (self._ends[leg] - self._lengths[leg])
        x, y = self._starts[leg] + self._legs[leg] * (into / self._lengths[leg])
        return float(x), float(y)

    def scan(self, x: float, y: float) -> np.ndarray:
        """(N, 3) points in the map frame (heights above the floor: the map frame is on it)."""
        n = POINTS_PER_SCAN
        azimuth = self._rng.uniform(0.0, 2 * np.pi, n)
        elevation = np.radians(self._rng.uniform(*ELEVATION_DEG, n))
        dx, dy, slope = np.cos(azimuth), np.sin(azimuth), np.tan(elevation)
        # Horizontal range to the floor or the ceiling, whichever the ray meets.
        with np.errstate(divide='ignore'):
            vertical = np.where(
                slope < 0, -SENSOR_HEIGHT_M / slope, (CEILING_M - SENSOR_HEIGHT_M) / slope
            )
        s = self._segments
        ex, ey = s[:, 2] - s[:, 0], s[:, 3] - s[:, 1]
        ox, oy = s[:, 0] - x, s[:, 1] - y
        denominator = dx[:, None] * ey - dy[:, None] * ex  # (N, S)
        with np.errstate(divide='ignore', invalid='ignore'):
            t = (ox * ey - oy * ex) / denominator  # along the ray
            u = (ox * dy[:, None] - oy * dx[:, None]) / denominator  # along the segment
        z = SENSOR_HEIGHT_M + t * slope[:, None]
        hit = (t > 0) & (u >= 0) & (u <= 1) & (z <= self._heights) & (z >= 0)
        wall = np.where(hit, t, np.inf).min(axis=1)
        horizontal = np.minimum(wall, vertical)
        keep = np.isfinite(horizontal)  # a level ray in an open doorway meets nothing
        horizontal = horizontal[keep] + self._rng.normal(0.0, RANGE_NOISE_M, int(keep.sum()))
        dx, dy, slope = dx[keep], dy[keep], slope[keep]
        return np.column_stack(
            [
                x + horizontal * dx,
                y + horizontal * dy,
                np.clip(SENSOR_HEIGHT_M + horizontal * slope, 0.0, CEILING_M),
            ]
        )


def run(quick: bool, sim_minutes: float | None = None) -> dict:
    minutes = sim_minutes or (QUICK_SIM_MINUTES if quick else SIM_MINUTES)
    scans = int(minutes * 60 * SCAN_RATE_HZ)
    rng = np.random.default_rng(0)
    lio = LioStandIn(rng)
    config = ScanGridConfig()  # navigator_node's defaults
    grid = ScanGrid(config, 'camera_init')
    update_s, rebuild_s, plan_s, rss, points = [], [], [], [], []
    failures = 0
    started = time.perf_counter()
    rss.append({'sim_min': 0.0, 'rss_mib': rss_bytes() / 2**20})
    for i in range(scans):
        t_s = i / SCAN_RATE_HZ
        x, y = lio.pose(t_s)
        cloud = lio.scan(x, y)
        points.append(len(cloud))
        began = time.perf_counter()
        grid.integrate(cloud, (x, y))
        update_s.append(time.perf_counter() - began)
        done = i + 1
        if done % round(PLAN_EVERY_S * SCAN_RATE_HZ) == 0 or done == scans:
            began = time.perf_counter()
            planner = GridPlanner(inflate(grid.occupancy(), ROBOT_RADIUS_M))
            rebuild_s.append(time.perf_counter() - began)
            goal = lio.pose(t_s + 40.0 / SPEED_MPS)  # 40 m farther along the loop
            began = time.perf_counter()
            try:
                planner.plan((x, y), goal)
                plan_s.append(time.perf_counter() - began)
            except PlanError:
                failures += 1
        if done % round(RSS_EVERY_S * SCAN_RATE_HZ) == 0:
            rss.append({'sim_min': done / SCAN_RATE_HZ / 60.0, 'rss_mib': rss_bytes() / 2**20})
    return {
        'benchmark': 'scans',
        'quick': quick,
        'settings': {
            'sim_minutes': minutes,
            'scans': scans,
            'scan_rate_hz': SCAN_RATE_HZ,
            'points_per_scan_mean': float(np.mean(points)) if points else 0.0,
            'window_m': config.window_m,
            'resolution_m': config.resolution,
            'max_points': config.max_points,
            'max_range_m': config.max_range_m,
            'robot_radius_m': ROBOT_RADIUS_M,
        },
        'map_bytes': grid.nbytes,
        'update': latency(update_s),
        'rebuild': latency(rebuild_s),
        'plan': latency(plan_s),
        'plan_failures': failures,
        'rss': rss,
        'run_s': time.perf_counter() - started,
    }


def render(result: dict) -> str:
    s = result['settings']
    rows = [
        [name, r['n'], r['p50_ms'], r['p95_ms'], r['mean_ms']]
        for name, r in (
            ('map update per scan', result['update']),
            ('grid rebuild (occupancy, inflation, graph)', result['rebuild']),
            ('plan, 40 m along the loop', result['plan']),
        )
    ]
    timing = table(
        f'Scan map, {s["scans"]} scans ({s["sim_minutes"]:g} simulated min) of '
        f'{s["points_per_scan_mean"]:.0f} points, {s["window_m"]:g} m window of '
        f'{s["resolution_m"]:g} m cells ({result["map_bytes"] / 2**20:.1f} MiB)',
        ['step', 'n', 'p50 ms', 'p95 ms', 'mean ms'],
        rows,
    )
    memory = table(
        'Process RSS',
        ['simulated min', 'RSS MiB'],
        [[r['sim_min'], r['rss_mib']] for r in result['rss']],
    )
    return f'{timing}\nplans failed: {result["plan_failures"]}\n\n{memory}'
