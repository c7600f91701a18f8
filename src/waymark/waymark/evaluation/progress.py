# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""How long a suite has left, from how long its finished worlds took.

A world's work grows with the length of its tour (images rendered, ingested, read for
text), so the measured seconds per tour second of the worlds done so far, times the
tour seconds left, is the estimate. Nothing is guessed before a world has finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Finished:
    tour_s: float  # length of the world's recorded tour
    wall_s: float  # what recording, questioning and evaluating it took


def eta_s(
    finished: Sequence[Finished],
    current_tour_s: float,
    current_elapsed_s: float,
    todo_tour_s: float,
) -> float | None:
    """Seconds left for the current world (its share not yet spent) and the worlds after
    it; None until a world has finished."""
    measured = sum(f.tour_s for f in finished)
    if measured <= 0:
        return None
    rate = sum(f.wall_s for f in finished) / measured
    return max(0.0, rate * current_tour_s - current_elapsed_s) + rate * todo_tour_s


def format_duration(seconds: float | None) -> str:
    """'ETA unknown', 'ETA <1 min', 'ETA 12 min' or 'ETA 2 h 05 min'."""
    if seconds is None:
        return 'ETA unknown'
    minutes = round(seconds / 60)
    if minutes < 1:
        return 'ETA <1 min'
    if minutes < 60:
        return f'ETA {minutes} min'
    return f'ETA {minutes // 60} h {minutes % 60:02d} min'


def progress_line(index: int, total: int, case: str, stage: str, eta: float | None) -> str:
    """One line per stage of a world: '[3/6] medium-0: ingest ... ETA 2 min'."""
    return f'[{index}/{total}] {case}: {stage} ... {format_duration(eta)}'
