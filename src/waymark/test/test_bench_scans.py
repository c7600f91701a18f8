# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The scan-map benchmark's LIO stand-in casts scans as a lidar in its building would see
them, and a short run reports every figure."""

from __future__ import annotations

import numpy as np
import pytest

from waymark.benchmarks import scans


def test_a_scan_holds_a_lidars_points_in_the_map_frame_and_nothing_through_walls():
    lio = scans.LioStandIn(np.random.default_rng(0))
    x, y = lio.pose(0.0)
    points = lio.scan(x, y)
    assert len(points) > 0.95 * scans.POINTS_PER_SCAN
    assert (points[:, 2] >= 0).all() and (points[:, 2] <= scans.CEILING_M).all()
    # Inside the building, and the corridor's walls (y = 14 and 16 m) bound what it sees
    # except through doors.
    assert (points[:, 0] > -0.1).all() and (points[:, 0] < 40.1).all()
    beyond = (points[:, 1] < 13.9) | (points[:, 1] > 16.1)
    through_doors = (np.abs(points[:, 0] - 8.6) < 5) | (np.abs(points[:, 0] - 18.6) < 5)
    assert not (beyond & ~through_doors & (np.abs(points[:, 0] - x) < 3)).any()
    # The pose walks the loop at the given speed.
    x1, y1 = lio.pose(10.0)
    assert np.hypot(x1 - x, y1 - y) == pytest.approx(scans.SPEED_MPS * 10.0)


def test_a_short_run_reports_updates_a_plan_and_memory():
    result = scans.run(quick=True, sim_minutes=0.2)
    assert result['update']['n'] == 120
    assert result['plan']['n'] + result['plan_failures'] == 1 == result['rebuild']['n']
    assert result['rss'][0]['rss_mib'] > 0 and result['map_bytes'] > 0
    assert 'map update per scan' in scans.render(result)
