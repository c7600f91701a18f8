# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Building what an in-process index needs training for (an sq8 graph, session codes),
and the rebuild that drops dead rows; all of it reads a state without changing it, so
searches go on over the old one meanwhile."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np

from waymark.memory.storage.index_params import SQ8, IndexParams
from waymark.memory.storage.index_state import (
    ADD_CHUNK,
    State,
    add_codes,
    append,
    empty_state,
    new_graph,
)
from waymark.memory.storage.session_codes import SessionCodes
from waymark.memory.storage.vector_kernels import gather

# Quantisers (sq8, session codes) are trained on the rows present once there are this
# many (fewer are always scanned exactly), on a sample of at most _TRAIN_SAMPLE rows.
_TRAIN_MIN = 1024
_TRAIN_SAMPLE = 65536


def train_from(params: IndexParams) -> int:
    """Rows an index holds before its quantisers are trained."""
    return max(params.exact_below, _TRAIN_MIN)


def trained_graph(state: State, dim: int, params: IndexParams, codes: str) -> faiss.Index:
    """An sq8 graph of every row, its quantiser fitted to (a sample of) the live rows."""
    parts = state.parts(dim)
    count = state.count
    graph = new_graph(dim, params, codes)
    graph.train(gather(parts, _training_rows(state)))
    for offset in range(0, count, ADD_CHUNK):
        graph.add(gather(parts, np.arange(offset, min(count, offset + ADD_CHUNK))))
    return graph


def trained_codes(state: State, dim: int) -> SessionCodes:
    """Session codes of every live row, the quantiser fitted to (a sample of) them."""
    parts = state.parts(dim)
    coded = SessionCodes.trained(gather(parts, _training_rows(state)))
    live = np.flatnonzero(state.alive[: state.count])
    for offset in range(0, len(live), ADD_CHUNK):
        rows = live[offset : offset + ADD_CHUNK]
        add_codes(coded, state.codes[rows], rows, gather(parts, rows))
    return coded


def rebuilt(
    state: State, dim: int, params: IndexParams, codes: str, spill_dir: Path | None
) -> State:
    """A new state of the live rows alone, trained where there are rows enough."""
    new = empty_state(dim, params, codes, spill_dir)
    if not state.rows:
        return new
    rows = np.flatnonzero(state.alive[: state.count])
    # Sessions become contiguous runs of rows, so exact scans of a session can read
    # slices instead of gathering rows.
    names = np.asarray(state.session_names)
    rank = np.empty(len(names), np.int64)
    rank[np.argsort(names, kind='stable')] = np.arange(len(names))
    rows = rows[np.lexsort((state.indices[rows], rank[state.codes[rows]]))]
    parts = state.parts(dim)
    for offset in range(0, len(rows), ADD_CHUNK):
        chunk = rows[offset : offset + ADD_CHUNK]
        append(
            new,
            [state.row_ids[row] for row in chunk],
            [state.session_names[code] for code in state.codes[chunk]],
            state.indices[chunk],
            gather(parts, chunk),
        )
    if new.count >= train_from(params):
        if new.graph is None and codes == SQ8:
            new.graph = trained_graph(new, dim, params, codes)
        new.coded = trained_codes(new, dim)
    return new


def _training_rows(state: State) -> np.ndarray:
    """Rows to fit a quantiser to: the live rows (all rows when none live), sampled down
    to _TRAIN_SAMPLE, ascending."""
    count = state.count
    live = np.flatnonzero(state.alive[:count])
    if len(live) == 0:
        live = np.arange(count)
    if len(live) > _TRAIN_SAMPLE:
        rng = np.random.default_rng(count)
        live = np.sort(rng.choice(live, _TRAIN_SAMPLE, replace=False))
    return live
