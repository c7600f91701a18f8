# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the agent needs from memory, so it runs the same in process and over ROS.

`MemoryService` satisfies this protocol as it is (evaluation, tests); reasoner_node
implements it with the SearchMemory service. A search returns core `Hit`s, best first,
raises ValueError (RefusedError) when memory refuses the query, and
`MemoryUnavailableError` when memory cannot be reached.
"""

from __future__ import annotations

from typing import Protocol

from waymark.memory.entries import Hit
from waymark.memory.search_query import SearchQuery


class MemoryUnavailableError(RuntimeError):
    """Memory did not answer (node down, timed out, database away)."""


class MemoryBackend(Protocol):
    def search(self, query: SearchQuery) -> list[Hit]: ...
