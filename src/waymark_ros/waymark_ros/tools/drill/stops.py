# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""When the base stopped after a fault, read from its odometry: the safety drills' measure.

Times are the odometry's own stamps (the base's clock, the system clock on one machine),
so a slow drill process does not lengthen a stop it only heard of late.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    """One odometry message: its stamp, position and executed speeds."""

    stamp_ns: int
    x: float
    y: float
    linear: float
    angular: float

    def still(self, tolerance: float) -> bool:
        return abs(self.linear) <= tolerance and abs(self.angular) <= tolerance


@dataclass(frozen=True)
class Stop:
    seconds: float  # from the fault to the first odometry that shows the base standing
    distance_m: float  # driven from the fault until then


def stop_after(samples: list[Sample], fault_ns: int, tolerance: float) -> Stop | None:
    """The stop that follows `fault_ns`: the first sample after it from which every later
    one stands still. None when the base still moved at the last sample, or when no sample
    came after the fault. Samples must be in stamp order."""
    after = [i for i, s in enumerate(samples) if s.stamp_ns > fault_ns]
    if not after or not samples[-1].still(tolerance):
        return None
    stop = len(samples) - 1
    while stop > after[0] and samples[stop - 1].still(tolerance):
        stop -= 1
    first = max(after[0] - 1, 0)  # the position at the fault: the last sample before it
    distance = sum(
        math.hypot(b.x - a.x, b.y - a.y)
        for a, b in zip(samples[first:stop], samples[first + 1 : stop + 1], strict=True)
    )
    return Stop((samples[stop].stamp_ns - fault_ns) / 1e9, distance)


def moved_m(samples: list[Sample], since_ns: int) -> float:
    """How far the base went from its position at `since_ns` to its last sample."""
    before = [s for s in samples if s.stamp_ns <= since_ns]
    if not before:
        return 0.0
    start, end = before[-1], samples[-1]
    return math.hypot(end.x - start.x, end.y - start.y)
