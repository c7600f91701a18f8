# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The suite's time left, from the measured seconds per tour second of finished worlds."""

from __future__ import annotations

from waymark.evaluation.progress import Finished, eta_s, format_duration, progress_line


def test_nothing_is_guessed_before_a_world_has_finished():
    assert eta_s([], current_tour_s=100, current_elapsed_s=5, todo_tour_s=300) is None
    assert format_duration(None) == 'ETA unknown'


def test_the_estimate_scales_the_measured_rate_by_the_tour_left():
    done = [Finished(tour_s=100, wall_s=50), Finished(tour_s=300, wall_s=150)]  # 0.5 s/s
    # Current world: 200 s of tour, 40 s spent of its 100 s; then 1000 s of tour: 500 s.
    assert eta_s(done, 200, 40, 1000) == 60 + 500
    # A world running longer than expected counts as done, not as negative time.
    assert eta_s(done, 200, 400, 0) == 0


def test_the_line_names_world_stage_and_time_left():
    assert progress_line(3, 6, 'medium-0', 'evaluating', 119) == (
        '[3/6] medium-0: evaluating ... ETA 2 min'
    )
    assert format_duration(20) == 'ETA <1 min'
    assert format_duration(7500) == 'ETA 2 h 05 min'
