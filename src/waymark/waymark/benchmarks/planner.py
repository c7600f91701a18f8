# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Planner benchmark: inflation, graph building, planning and goal checks on 2D grids.

Maps are synthetic, 5 cm cells, at 200², 500² and 1000² cells (10, 25 and 50 m squares;
`--quick`: 100² only), of two kinds: a room scattered with boxes (0.3 to 2 m, about 15 %
of the floor) and a maze of 0.8 m corridors behind 0.2 m walls, whose paths wind across
the whole map. The robot radius is 0.15 m. Each plan joins two random cells of the largest
region at least 0.6 map widths apart, so the search cannot stay local. A grid's one-off
costs (inflation, its regions, the planner's graph) are timed apart from the plans that
reuse them; goal checks ask about random points with a 0.5 m snap radius.
"""

from __future__ import annotations

import time

import numpy as np

from waymark.benchmarks.common import latency, table
from waymark.navigation.goals import check_goal
from waymark.navigation.grid import FREE, OCCUPIED, GridGeometry, OccupancyMap, inflate
from waymark.navigation.planner import GridPlanner

SIZES = (200, 500, 1000)
QUICK_SIZES = (100,)
KINDS = ('boxes', 'maze')
RESOLUTION = 0.05
ROBOT_RADIUS_M = 0.15
SNAP_RADIUS_M = 0.5
BOX_CELLS = (6, 40)
BOX_COVER = 0.15
CORRIDOR_CELLS = 16
WALL_CELLS = 4
MIN_SPAN = 0.6  # start and goal at least this many map widths apart
PLANS, QUICK_PLANS = 20, 3
BUILDS, QUICK_BUILDS = 3, 2
CHECKS, QUICK_CHECKS = 200, 20
TARGET_MS = 1000.0  # graph build + plan p95 at the largest size


def boxes_map(size: int, rng: np.random.Generator) -> np.ndarray:
    cells = np.full((size, size), FREE, dtype=np.int8)
    mean_area = np.mean(BOX_CELLS) ** 2
    for _ in range(int(BOX_COVER * size * size / mean_area)):
        row, col = rng.integers(0, size, 2)
        height, width = rng.integers(*BOX_CELLS, 2)
        cells[row : row + height, col : col + width] = OCCUPIED
    return cells


def maze_map(size: int, rng: np.random.Generator) -> np.ndarray:
    """A perfect maze (one path between any two corridors), carved by a randomised
    depth-first search over a coarse grid of corridor cells."""
    pitch = CORRIDOR_CELLS + WALL_CELLS
    count = max(1, (size - WALL_CELLS) // pitch)
    cells = np.full((size, size), OCCUPIED, dtype=np.int8)

    def carve(row: int, col: int, rows: int, cols: int) -> None:
        r0, c0 = WALL_CELLS + row * pitch, WALL_CELLS + col * pitch
        cells[r0 : r0 + rows, c0 : c0 + cols] = FREE

    seen = np.zeros((count, count), dtype=bool)
    seen[0, 0] = True
    carve(0, 0, CORRIDOR_CELLS, CORRIDOR_CELLS)
    stack = [(0, 0)]
    while stack:
        row, col = stack[-1]
        options = [
            (row + dr, col + dc)
            for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
            if 0 <= row + dr < count and 0 <= col + dc < count and not seen[row + dr, col + dc]
        ]
        if not options:
            stack.pop()
            continue
        nr, nc = options[int(rng.integers(len(options)))]
        seen[nr, nc] = True
        carve(nr, nc, CORRIDOR_CELLS, CORRIDOR_CELLS)
        # Open the wall between the two: one corridor wide, reaching into the next cell.
        rows, cols = (pitch, CORRIDOR_CELLS) if nr != row else (CORRIDOR_CELLS, pitch)
        carve(min(row, nr), min(col, nc), rows, cols)
        stack.append((nr, nc))
    return cells


def far_pairs(labels: np.ndarray, count: int, rng: np.random.Generator) -> list[tuple]:
    """Pairs of cells of the largest region at least MIN_SPAN map widths apart."""
    largest = int(np.argmax(np.bincount(labels.ravel())[1:])) + 1
    cells = np.argwhere(labels == largest)
    span = MIN_SPAN * labels.shape[0]
    pairs: list[tuple] = []
    while len(pairs) < count:
        a, b = cells[rng.integers(len(cells), size=2)]
        if np.hypot(*(a - b)) >= span:
            pairs.append((tuple(int(v) for v in a), tuple(int(v) for v in b)))
    return pairs


def measure(kind: str, size: int, quick: bool, rng: np.random.Generator) -> dict:
    cells = (boxes_map if kind == 'boxes' else maze_map)(size, rng)
    grid = OccupancyMap('map', GridGeometry(RESOLUTION, 0.0, 0.0, size, size), cells)
    inflate_s, regions_s, build_s = [], [], []
    builds = QUICK_BUILDS if quick else BUILDS
    for _ in range(builds):
        started = time.perf_counter()
        traversable = inflate(grid, ROBOT_RADIUS_M)
        inflate_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        labels = traversable.components
        regions_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        planner = GridPlanner(traversable)
        build_s.append(time.perf_counter() - started)
    plan_s, expanded, lengths, smoothed, waypoints = [], [], [], [], []
    pairs = far_pairs(labels, QUICK_PLANS if quick else PLANS, rng)
    for start, goal in pairs:
        started = time.perf_counter()
        plan = planner.plan_cells(start, goal)
        plan_s.append(time.perf_counter() - started)
        expanded.append(plan.expanded)
        lengths.append(plan.length_m)
        smoothed.append(plan.smoothed_length_m)
        waypoints.append(len(plan.smoothed_cells))
    check_s, accepted = [], 0
    extent = size * RESOLUTION
    robot = traversable.geometry.cell_to_world(*pairs[0][0])
    for x, y in rng.uniform(0.0, extent, size=(QUICK_CHECKS if quick else CHECKS, 2)):
        started = time.perf_counter()
        verdict = check_goal(traversable, float(x), float(y), 'map', *robot, SNAP_RADIUS_M)
        check_s.append(time.perf_counter() - started)
        accepted += verdict.accepted
    graph = planner.graph
    return {
        'kind': kind,
        'size': size,
        'cells': size * size,
        'traversable_fraction': float(traversable.traversable.mean()),
        'inflate': latency(inflate_s),
        'regions': latency(regions_s),
        'graph_build': latency(build_s),
        'graph_edges': int(graph.nnz),
        'graph_mib': (graph.data.nbytes + graph.indices.nbytes + graph.indptr.nbytes) / 2**20,
        'plan': latency(plan_s),
        'expanded_median': float(np.median(expanded)),
        'length_m_median': float(np.median(lengths)),
        'smoothed_length_m_median': float(np.median(smoothed)),
        'smoothed_waypoints_median': float(np.median(waypoints)),
        'check_goal': latency(check_s),
        'goals_accepted': accepted / len(check_s),
    }


def run(quick: bool) -> dict:
    started = time.perf_counter()
    rng = np.random.default_rng(0)
    sizes = QUICK_SIZES if quick else SIZES
    results = [measure(kind, size, quick, rng) for size in sizes for kind in KINDS]
    largest = [r for r in results if r['size'] == max(sizes)]
    worst = max(r['graph_build']['p95_ms'] + r['plan']['p95_ms'] for r in largest)
    return {
        'benchmark': 'planner',
        'quick': quick,
        'settings': {
            'resolution_m': RESOLUTION,
            'robot_radius_m': ROBOT_RADIUS_M,
            'snap_radius_m': SNAP_RADIUS_M,
            'box_cells': BOX_CELLS,
            'box_cover': BOX_COVER,
            'corridor_cells': CORRIDOR_CELLS,
            'wall_cells': WALL_CELLS,
            'min_span_map_widths': MIN_SPAN,
        },
        'results': results,
        'targets': {
            'build_plus_plan_p95_ms': {
                'target': TARGET_MS,
                'size': max(sizes),
                'worst': worst,
                'met': worst <= TARGET_MS,
            }
        },
        'seconds': time.perf_counter() - started,
    }


def render(result: dict) -> str:
    rows = [
        [
            f'{r["size"]}² {r["kind"]}',
            r['traversable_fraction'],
            r['inflate']['p50_ms'],
            r['regions']['p50_ms'],
            r['graph_build']['p50_ms'],
            r['graph_mib'],
            r['plan']['p50_ms'],
            r['plan']['p95_ms'],
            int(r['expanded_median']),
            r['length_m_median'],
            r['smoothed_length_m_median'],
            int(r['smoothed_waypoints_median']),
            r['check_goal']['p50_ms'],
            r['check_goal']['p95_ms'],
        ]
        for r in result['results']
    ]
    headers = ['grid', 'free', 'inflate', 'regions', 'graph', 'MiB', 'plan p50', 'plan p95']
    headers += ['expanded', 'path m', 'smooth m', 'points', 'goal p50', 'goal p95']
    target = result['targets']['build_plus_plan_p95_ms']
    verdict = 'met' if target['met'] else 'NOT met'
    return (
        table('Planner: one-off costs per grid, then plans and goal checks (ms)', headers, rows)
        + f'\nTarget: graph build + plan p95 <= {target["target"]:g} ms at '
        f'{target["size"]}²: worst {target["worst"]:.0f} ms, {verdict}\n'
    )
