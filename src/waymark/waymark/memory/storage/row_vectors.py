# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The fp32 vectors of an index whose search structure holds codes (sq8, pq4), kept on
disk so they cost page cache rather than the process's own memory."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

# Rows a growing array (this file, an index's metadata) first makes room for.
INITIAL_CAPACITY = 1024


class RowVectors:
    """The fp32 vector of every row, for re-ranking and exact scans, when the graph holds
    sq8 codes; kept out of the process's own memory.

    Rows up to the last save are a read-only memory map of the saved file; later rows (and
    a rebuild's) go to an unnamed file in `spill_dir`, mapped as well, whose space is
    allocated before it is written (a full disk raises OSError rather than killing the
    process on a write to a hole). The kernel pages both in as searches read them.
    """

    def __init__(self, dim: int, spill_dir: Path | None, base: np.ndarray | None = None) -> None:
        self.dim = dim
        self.base = np.empty((0, dim), np.float32) if base is None else base
        self._spill_dir = spill_dir
        self._file = None
        self._tail = np.empty((0, dim), np.float32)
        self._rows = 0

    def __len__(self) -> int:
        return len(self.base) + self._rows

    def parts(self) -> list[tuple[int, np.ndarray]]:
        parts = [(0, self.base)] if len(self.base) else []
        if self._rows:
            parts.append((len(self.base), self._tail[: self._rows]))
        return parts

    def append(self, unit: np.ndarray) -> None:
        needed = self._rows + len(unit)
        if needed > len(self._tail):
            self._grow(max(needed, 2 * len(self._tail), INITIAL_CAPACITY))
        self._tail[self._rows : needed] = unit
        self._rows = needed

    def truncate(self, rows: int) -> None:
        """Forget the rows from `rows` on (after a failed append to the graph)."""
        self._rows = min(self._rows, max(0, rows - len(self.base)))

    def _grow(self, capacity: int) -> None:
        if self._file is None:
            if self._spill_dir is not None:
                self._spill_dir.mkdir(parents=True, exist_ok=True)
            # Open for the index's lifetime; closed with it.
            self._file = tempfile.TemporaryFile(prefix='waymark-vectors-', dir=self._spill_dir)  # noqa: SIM115
        size = capacity * self.dim * 4
        os.posix_fallocate(self._file.fileno(), 0, size)
        # Views of the old, shorter map stay valid: it is a separate mapping of the file.
        self._tail = np.memmap(self._file, np.float32, 'r+', shape=(capacity, self.dim))
