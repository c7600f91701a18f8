# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A benchmark's Milvus server: waiting for it to finish its own work before anything is
timed on it, and clearing the benchmark's collections from it.

After a large insert a server goes on flushing, building indexes and compacting segments
(then indexing the compacted ones) for many minutes, and a search or an open timed
meanwhile measures that work too. The server is taken as idle once every collection's
vector index covers all its rows and its segments (ids, states, row counts) have not
changed for `settle_s` seconds in a row: a compaction replaces segments, so a running one
shows.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Longest wait for a server to settle: indexing and compacting 1M rows took 56 min once.
MAX_WAIT_S = 5400.0
SETTLE_S = 60.0
POLL_S = 2.0


@dataclass(frozen=True)
class Settled:
    """How long the wait took, whether the server settled within it, and when its indexes
    first covered every row (None: never did)."""

    seconds: float
    settled: bool
    settle_s: float
    indexed_s: float | None = None

    def line(self) -> str:
        if self.settled:
            return (
                f'waited {self.seconds:.0f} s for the server to settle (indexes covered every '
                f'row after {self.indexed_s:.0f} s, then segments unchanged for '
                f'{self.settle_s:.0f} s)'
            )
        return (
            f'the server had not settled after {self.seconds:.0f} s (indexes or segments '
            'still changing): figures taken while it works'
        )


def wait_until_idle(
    uri: str,
    collections: Sequence[str],
    settle_s: float = SETTLE_S,
    max_wait_s: float = MAX_WAIT_S,
    vector_field: str = 'vector',
) -> Settled:
    """Wait until the server holding `collections` is idle (see the module), at most
    `max_wait_s`; `vector_field`: the indexed field of each collection, '' for none."""
    from pymilvus import MilvusClient

    if not 0 < settle_s <= max_wait_s:
        raise ValueError(f'need 0 < settle_s <= max_wait_s, got {settle_s}, {max_wait_s}')
    client = MilvusClient(uri=uri)
    started = time.monotonic()
    try:
        last, since, indexed = None, time.monotonic(), None
        while time.monotonic() - started < max_wait_s:
            state = _state(client, collections, vector_field)
            if state is not None and indexed is None:
                indexed = time.monotonic() - started
            if state != last or state is None:
                last, since = state, time.monotonic()
            elif time.monotonic() - since >= settle_s:
                return Settled(time.monotonic() - started, True, settle_s, indexed)
            time.sleep(POLL_S)
        return Settled(time.monotonic() - started, False, settle_s, indexed)
    finally:
        client.close()


def _state(client, collections: Sequence[str], vector_field: str) -> tuple | None:
    """The segments of every collection; None while an index lags behind its rows."""
    segments = []
    for collection in collections:
        if vector_field:
            info = client.describe_index(collection, vector_field)
            pending = int(info.get('pending_index_rows', 0))
            if pending or int(info.get('indexed_rows', 0)) < int(info.get('total_rows', 0)):
                return None
        segments.extend(
            (collection, info.segment_id, str(info.state), info.num_rows)
            for info in client.list_persistent_segments(collection)
        )
    return tuple(sorted(segments))


def drop_collections(uri: str, prefix: str) -> None:
    """Drop every collection whose name starts with `prefix`_ (a benchmark's own)."""
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri)
    try:
        for name in client.list_collections():
            if name.startswith(f'{prefix}_'):
                client.drop_collection(name)
    finally:
        client.close()


def server_for(stack: contextlib.ExitStack, base: Path, uri: str, prefix: str) -> str:
    """The server a benchmark runs on: the one at `uri`, else a local one with its data
    under `base`, stopped when `stack` closes. Its `prefix` collections are dropped now and
    again when `stack` closes."""
    if not uri:
        from waymark.memory.storage.local_server import LocalMilvusServer

        uri = stack.enter_context(LocalMilvusServer(base / 'milvus')).uri
    drop_collections(uri, prefix)
    stack.callback(drop_collections, uri, prefix)
    return uri
