# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the agent needs from memory, so it runs the same in process and over ROS.

`MemoryService` satisfies this protocol as it is (evaluation, tests); reasoner_node
implements it with the SearchMemory service. Every search returns core `Hit`s, best
first, and raises `MemoryUnavailableError` when memory cannot be reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from waymark.memory.entries import Hit


class MemoryUnavailableError(RuntimeError):
    """Memory did not answer (node down, timed out, database away)."""


class MemoryBackend(Protocol):
    def search_text(
        self,
        query: str,
        k: int,
        sessions: Sequence[str] | None = None,
        level: str = ...,
        views: Sequence[str] | None = None,
        index_range: tuple[int, int] | None = None,
    ) -> list[Hit]: ...

    def search_image(
        self,
        image: np.ndarray,
        k: int,
        sessions: Sequence[str] | None = None,
        level: str = ...,
        index_range: tuple[int, int] | None = None,
    ) -> list[Hit]: ...

    def search_time(
        self, stamp_ns: int, k: int, sessions: Sequence[str] | None = None, level: str = ...
    ) -> list[Hit]: ...

    def search_position(
        self,
        x: float,
        y: float,
        z: float,
        k: int,
        sessions: Sequence[str] | None = None,
        level: str = ...,
    ) -> list[Hit]: ...

    def search_range(
        self,
        x: float,
        y: float,
        radius: float,
        sessions: Sequence[str] | None = None,
        k: int | None = None,
        level: str = ...,
    ) -> list[Hit]: ...

    def search_index_range(
        self,
        session: str,
        first: int,
        last: int,
        k: int,
        level: str = ...,
        text: str = '',
        views: Sequence[str] | None = None,
    ) -> list[Hit]: ...
