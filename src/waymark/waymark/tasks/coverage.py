# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Where the base has been: the grid cells its track passed through, for recovery signals.

The recovery controller asks whether an attempt explored new ground and whether the robot
stands somewhere it had not been before the task began. Both come from one set of grid
cells the track entered, each remembered with the order in which it was first entered: a
task notes the count at its start, and a cell entered later is new to that task. The set
is bounded; once full, further cells are not kept and the area stops growing, which reads
as no new exploration rather than as a false one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_CELL_M = 0.5
DEFAULT_MAX_CELLS = 200_000  # 50 000 m2 of 0.5 m cells: far beyond one house
MAX_CELLS_CAP = 10_000_000


@dataclass(frozen=True)
class CoverageParams:
    cell_m: float = DEFAULT_CELL_M
    max_cells: int = DEFAULT_MAX_CELLS

    def __post_init__(self) -> None:
        if not (math.isfinite(self.cell_m) and self.cell_m > 0.0):
            raise ValueError(f'cell_m must be a positive number, got {self.cell_m}')
        if not 1 <= self.max_cells <= MAX_CELLS_CAP:
            raise ValueError(f'max_cells must be in [1, {MAX_CELLS_CAP}], got {self.max_cells}')


Cell = tuple[int, int]


class Coverage:
    """The cells of a track; not thread-safe (the caller holds its own lock)."""

    def __init__(self, params: CoverageParams = CoverageParams()) -> None:
        self.params = params
        self._entered: dict[Cell, int] = {}  # cell -> order in which it was first entered

    def cell_of(self, x: float, y: float) -> Cell:
        size = self.params.cell_m
        return math.floor(x / size), math.floor(y / size)

    def add(self, x: float, y: float) -> None:
        """Note that the track passed (x, y); a non-finite point is ignored."""
        if not (math.isfinite(x) and math.isfinite(y)):
            return
        cell = self.cell_of(x, y)
        if cell not in self._entered and not self.full:
            self._entered[cell] = len(self._entered)

    @property
    def full(self) -> bool:
        return len(self._entered) >= self.params.max_cells

    @property
    def cells(self) -> int:
        return len(self._entered)

    def area_m2(self) -> float:
        return len(self._entered) * self.params.cell_m**2

    def mark(self) -> int:
        """A point in the track's history: cells entered after it are new to what follows."""
        return len(self._entered)

    def first_visit(self, x: float, y: float, since: int) -> bool:
        """Whether (x, y) lies in a cell not entered before the mark `since`. A cell the
        full set could not keep is not claimed as new: it may have been passed before."""
        entered = self._entered.get(self.cell_of(x, y))
        if entered is None:
            return not self.full
        return entered >= since
