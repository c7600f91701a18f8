# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import math

import pytest

from waymark.tasks.coverage import Coverage, CoverageParams


def walk(coverage: Coverage, points) -> None:
    for x, y in points:
        coverage.add(x, y)


def test_the_area_counts_each_distinct_cell_once():
    coverage = Coverage(CoverageParams(cell_m=0.5))
    walk(coverage, [(0.1, 0.1), (0.2, 0.4), (0.6, 0.1), (0.1, 0.1), (-0.1, 0.1)])
    assert coverage.cells == 3  # (0, 0), (1, 0), (-1, 0)
    assert coverage.area_m2() == pytest.approx(0.75)


def test_cells_follow_the_cell_size():
    coverage = Coverage(CoverageParams(cell_m=2.0))
    walk(coverage, [(0.1, 0.1), (1.9, 1.9), (2.1, 0.0)])
    assert coverage.cells == 2
    assert coverage.area_m2() == pytest.approx(8.0)


def test_first_visit_is_relative_to_the_mark_of_the_task_start():
    coverage = Coverage()
    walk(coverage, [(0.0, 0.0), (1.0, 0.0)])
    start = coverage.mark()
    walk(coverage, [(2.0, 0.0), (1.0, 0.0)])
    assert not coverage.first_visit(1.0, 0.0, start)  # passed before the task began
    assert coverage.first_visit(2.0, 0.0, start)  # first entered during the task
    assert coverage.first_visit(9.0, 9.0, start)  # never entered
    assert not coverage.first_visit(2.0, 0.0, coverage.mark())


def test_a_full_set_stops_growing_and_claims_nothing_new():
    coverage = Coverage(CoverageParams(cell_m=1.0, max_cells=2))
    walk(coverage, [(0.5, 0.5), (1.5, 0.5), (2.5, 0.5), (3.5, 0.5)])
    assert coverage.full and coverage.cells == 2
    assert coverage.area_m2() == pytest.approx(2.0)
    assert not coverage.first_visit(3.5, 0.5, 0)
    assert coverage.first_visit(1.5, 0.5, 1)


def test_non_finite_points_are_ignored():
    coverage = Coverage()
    walk(coverage, [(math.nan, 0.0), (0.0, math.inf)])
    assert coverage.cells == 0


@pytest.mark.parametrize(
    'params', [{'cell_m': 0.0}, {'cell_m': math.nan}, {'max_cells': 0}, {'max_cells': 10**9}]
)
def test_bad_parameters_are_refused(params):
    with pytest.raises(ValueError):
        CoverageParams(**params)
