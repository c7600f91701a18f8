# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What an in-process vector index's searches read, and the steps that add and kill rows.

Row numbers index the graph, the fp32 vectors and numpy arrays of (session code, idx,
alive) alike, so every step here keeps them aligned, also when the graph refuses a row.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

from waymark.memory.storage.index_params import FP32, IndexParams
from waymark.memory.storage.row_vectors import INITIAL_CAPACITY, RowVectors
from waymark.memory.storage.session_codes import SessionCodes

_LOG = logging.getLogger(__name__)

# Rows are added to (and rebuilt into) the graph in chunks so a rebuild gathers at most
# this many vectors at a time instead of copying all of them.
ADD_CHUNK = 65536
# sq8: each dimension's range is widened by this share on both sides for rows added
# after the quantiser was trained.
_SQ_RANGE_MARGIN = 0.2


@dataclass
class State:
    """What searches read; replaced as a whole by a rebuild or a load.

    `graph` holds every row (alive or dead) in row order; with sq8 codes it is None until
    there are enough rows to train the quantiser, and `exact` holds the fp32 vectors.
    """

    graph: faiss.Index | None
    codes: np.ndarray  # int32 session code per row (capacity-sized, first `rows` used)
    indices: np.ndarray  # int64 idx per row
    alive: np.ndarray  # bool per row
    row_ids: list[str]  # id per row, '' once dead
    rows: dict[str, int]  # live id -> row
    session_names: list[str]
    session_codes: dict[str, int]
    session_live: list[int]  # live rows per session code
    dead: int = 0
    exact: RowVectors | None = None  # sq8 and pq4
    coded: SessionCodes | None = None  # None until there are rows enough to train on
    coding_failed: bool = False  # codes dropped after an error: none until a rebuild or load

    @property
    def count(self) -> int:
        return len(self.row_ids)

    def parts(self, dim: int) -> list[tuple[int, np.ndarray]]:
        """The fp32 vectors of all rows as (first row, rows x dim array) pieces, no copy:
        the graph's own storage with fp32 codes, else `exact`.

        Valid only until the next append: read them under a lock.
        """
        if self.exact is not None:
            return self.exact.parts()
        total = self.graph.ntotal
        if total == 0:
            return []
        storage = faiss.downcast_index(self.graph.storage)
        return [(0, faiss.rev_swig_ptr(storage.get_xb(), total * dim).reshape(total, dim))]

    def code(self, session: str) -> int:
        code = self.session_codes.get(session)
        if code is None:
            code = len(self.session_names)
            self.session_codes[session] = code
            self.session_names.append(session)
            self.session_live.append(0)
        return code

    def reserve(self, needed: int) -> None:
        """Grow the metadata arrays by doubling so appends cost O(1) amortised."""
        capacity = len(self.codes)
        if needed <= capacity:
            return
        capacity = max(needed, 2 * capacity, INITIAL_CAPACITY)
        for name in ('codes', 'indices', 'alive'):
            old = getattr(self, name)
            new = np.zeros(capacity, old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)


def new_graph(dim: int, params: IndexParams, codes: str) -> faiss.Index:
    """An empty HNSW graph holding fp32 vectors or sq8 codes (to be trained)."""
    if codes == FP32:
        graph = faiss.IndexHNSWFlat(dim, params.hnsw_m, faiss.METRIC_INNER_PRODUCT)
    else:
        graph = faiss.IndexHNSWSQ(
            dim, faiss.ScalarQuantizer.QT_8bit, params.hnsw_m, faiss.METRIC_INNER_PRODUCT
        )
        faiss.downcast_index(graph.storage).sq.rangestat_arg = _SQ_RANGE_MARGIN
    graph.hnsw.efConstruction = params.ef_construction
    return graph


def empty_state(dim: int, params: IndexParams, codes: str, spill_dir: Path | None) -> State:
    """No rows: an fp32 graph, or (sq8, pq4) fp32 vectors on disk and no graph yet."""
    on_disk = codes != FP32
    return State(
        graph=None if on_disk else new_graph(dim, params, codes),
        exact=RowVectors(dim, spill_dir) if on_disk else None,
        codes=np.zeros(0, np.int32),
        indices=np.zeros(0, np.int64),
        alive=np.zeros(0, bool),
        row_ids=[],
        rows={},
        session_names=[],
        session_codes={},
        session_live=[],
    )


def append(
    state: State, ids: list[str], sessions: list[str], indices: np.ndarray, unit: np.ndarray
) -> None:
    """Add rows to the graph (and the fp32 rows), then record them; a replaced id's
    old row dies."""
    start = state.count
    if state.exact is not None:
        state.exact.append(unit)
    try:
        if state.graph is not None:
            for offset in range(0, len(ids), ADD_CHUNK):
                state.graph.add(unit[offset : offset + ADD_CHUNK])
    except BaseException:
        # Keep graph rows and metadata rows aligned: what got in stays, dead.
        added = state.graph.ntotal - start
        if state.exact is not None:
            state.exact.truncate(start + max(added, 0))
        if added > 0:
            state.reserve(start + added)
            state.codes[start : start + added] = state.code(sessions[0])
            state.row_ids.extend([''] * added)
            state.dead += added
        raise
    kill(state, [state.rows[key] for key in ids if key in state.rows])
    state.reserve(start + len(ids))
    end = start + len(ids)
    codes = [state.code(session) for session in sessions]
    state.codes[start:end] = codes
    state.indices[start:end] = indices
    state.alive[start:end] = True
    state.row_ids.extend(ids)
    for offset, key in enumerate(ids):
        state.rows[key] = start + offset
    for code in codes:
        state.session_live[code] += 1
    if state.coded is not None:
        try:
            add_codes(state.coded, state.codes[start:end], np.arange(start, end), unit)
        except Exception:
            # The rows are in; searches scan exactly until a rebuild or a restart.
            _LOG.exception('session codes dropped after a failed add')
            state.coded = None
            state.coding_failed = True


def add_codes(coded: SessionCodes, codes: np.ndarray, rows: np.ndarray, vectors: np.ndarray):
    """Give rows (ascending) their session codes, session by session."""
    for code in np.unique(codes).tolist():
        mine = codes == code
        coded.add(code, rows[mine], vectors[mine])


def kill(state: State, rows: Sequence[int]) -> int:
    """Mark rows dead (HNSW cannot delete); searches filter them out."""
    for row in rows:
        state.alive[row] = False
        state.session_live[int(state.codes[row])] -= 1
        del state.rows[state.row_ids[row]]
        state.row_ids[row] = ''
    state.dead += len(rows)
    return len(rows)
