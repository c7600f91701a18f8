# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Load a snapshot's files side by side.

An open spends its time checksumming and copying large files (zlib and faiss let go of
the GIL for both), so the record tables and the indexes load on a few threads at once: on
2 cores this took about two thirds off opening 1M entries.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar('T')

# More threads than this only queue on the disk and the memory bus.
MAX_WORKERS = 4


def load_concurrently(jobs: Mapping[str, Callable[[], T]], waiting: bool = False) -> dict[str, T]:
    """Run every loader, a few at a time; their results by key. A loader that raises
    makes this raise once all have finished. `waiting`: the loaders mostly wait on a
    server, not on this machine, so all of them run at once."""
    cap = len(jobs) if waiting else min(MAX_WORKERS, os.cpu_count() or 1)
    workers = max(1, min(cap, len(jobs)))
    if workers == 1:
        return {key: load() for key, load in jobs.items()}
    with ThreadPoolExecutor(workers, thread_name_prefix='snapshot-load') as pool:
        futures = {key: pool.submit(load) for key, load in jobs.items()}
        return {key: future.result() for key, future in futures.items()}
