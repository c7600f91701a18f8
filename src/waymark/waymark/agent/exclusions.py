# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Where an answer must not be: the places a task has already searched.

A task that was refused at a stop asks again, and an answer that points back at what was
ruled out wastes the attempt. The task layer builds one `Exclusions` per query, the Ask
action carries it, and the agent applies it: excluded entries are never shown to the
model, and an answer whose target lies in an excluded zone is refused (the model's) or
passed over (the fallback's). The recall still checks every candidate against the same
value, so a reasoner that ignores it cannot send the robot back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_EXCLUDED = 64  # entries, and positions, one query may carry
MAX_EXCLUSION_RADIUS_M = 100.0


@dataclass(frozen=True)
class Exclusions:
    """Entries by id, and anything within `radius_m` of `positions` (map x, y)."""

    entry_ids: tuple[str, ...] = ()
    positions: tuple[tuple[float, float], ...] = ()
    radius_m: float = 0.0

    def __post_init__(self) -> None:
        if len(self.entry_ids) > MAX_EXCLUDED or len(self.positions) > MAX_EXCLUDED:
            raise ValueError(
                f'at most {MAX_EXCLUDED} excluded entries and {MAX_EXCLUDED} excluded '
                f'positions, got {len(self.entry_ids)} and {len(self.positions)}'
            )
        if not all(isinstance(key, str) and key for key in self.entry_ids):
            raise ValueError('an excluded entry id must be a non-empty string')
        if not all(
            len(point) == 2 and all(math.isfinite(value) for value in point)
            for point in self.positions
        ):
            raise ValueError(f'excluded positions must be finite (x, y) pairs: {self.positions}')
        radius = self.radius_m
        if not (math.isfinite(radius) and 0.0 <= radius <= MAX_EXCLUSION_RADIUS_M):
            raise ValueError(
                f'exclusion radius must be in [0, {MAX_EXCLUSION_RADIUS_M:g}] m, got {radius}'
            )

    def __bool__(self) -> bool:
        return bool(self.entry_ids) or (bool(self.positions) and self.radius_m > 0.0)

    def excludes_entry(self, entry_id: str) -> bool:
        return entry_id in self.entry_ids

    def excludes_point(self, x: float, y: float) -> bool:
        return any(math.hypot(x - ex, y - ey) <= self.radius_m for ex, ey in self.positions)

    def excludes(self, entry_id: str, x: float, y: float) -> bool:
        return self.excludes_entry(entry_id) or self.excludes_point(x, y)
