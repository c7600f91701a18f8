# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""In-process cosine search over one embedding view, kept in step with the database.

Milvus stays the source of truth, but Milvus Lite scans every row in Python on each query.
memory_node is the database's only writer, so it mirrors each write here and searches in
process: a faiss HNSW graph (inner product on unit vectors, i.e. cosine) whose row numbers
index numpy arrays of (session code, idx, alive) and a list of ids.

HNSW cannot delete, so removed or replaced rows are marked dead, filtered out with a faiss
IDSelector, and dropped by a rebuild once they pass `_REBUILD_DEAD_FRACTION` of the rows.
Searches whose filter (sessions, index range) keeps few rows scan those rows exactly, with
faiss's single-threaded kernel straight over the fp32 vectors; wider ones search
the graph with efSearch raised for the share of rows the filter drops (the walk still
visits them). Rebuilds lay each session out as one contiguous run of rows, so an exact scan
of a session reads slices rather than gathering rows; a long scan is bound by one core's
memory bandwidth, so it is shared among `scan_threads` (shared_work). Sessions too large to
scan quickly (past 8192 rows and `exact_below`) are ranked by 4-bit codes of their own
(session_codes) and the best `scan_shortlist` re-ranked on fp32 vectors instead.

Vector codes (`IndexParams.vector_codes`). With sq8 (the default) the graph holds one byte
per dimension and a graph search re-ranks a shortlist on the fp32 vectors, which live
outside the process's own memory (memory-mapped from the saved file, and an unnamed spill
file for rows since); exact scans read those too. With fp32 the graph's flat storage holds
the vectors and exact scans read it in place. With pq4 (by default every view of 1024
dimensions or more, `pq4_from_dim`) there is no graph: every search too wide for an exact
scan ranks the sessions' 4-bit codes, one byte per 16 dimensions, and re-ranks the best on
the fp32 vectors on disk; at 1152-d that holds a tenth of sq8's RAM and opens faster.

Memory per row (process RSS, M = 32, measured at 1M rows loaded from a file): 821 bytes at
384-d and 1,549 at 1152-d with sq8 (the codes, about 8 * M + 16 bytes of HNSW links, 13
bytes of numpy metadata and about 150 bytes of Python for the id), against 1.9 kB and
about 4.9 kB with fp32; the session codes add 56 bytes at 384-d and 80 at 1152-d, which is
about all pq4 holds besides the metadata and the id. A rebuild briefly holds a second
graph of the live rows.

Thread-safety: mutations (upsert, remove, save, rebuild) hold a write lock, so there is one
writer at a time; searches hold a state lock, which writers take for the steps that change
what searches read (adding to the graph: about 1 ms per 384-d row). A rebuild or a save runs
outside the state lock, so searches keep answering from the old graph meanwhile; writes
wait for it (a rebuild of 1M 384-d rows took about 11 minutes on 2 cores).

This module chooses and runs the searches and holds the locks; the rows and their
bookkeeping are index_state's, training and rebuilds index_training's, the saved file
index_file's, the fp32 vectors on disk row_vectors's, and the scans vector_kernels's.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

from waymark.memory.storage.index_file import read_state, save_state
from waymark.memory.storage.index_params import SQ8, IndexParams
from waymark.memory.storage.index_state import State, append, empty_state, kill
from waymark.memory.storage.index_training import (
    rebuilt,
    train_from,
    trained_codes,
    trained_graph,
)
from waymark.memory.storage.row_vectors import RowVectors
from waymark.memory.storage.shared_work import run_shared
from waymark.memory.storage.vector_kernels import (
    checked_query,
    gather,
    inner_products,
    k_largest,
    scores_of_rows,
    shares,
    unit_rows,
)

_LOG = logging.getLogger(__name__)

# Dead rows slow searches down (the graph still walks them) and use memory; past this
# fraction the graph is rebuilt from the live rows.
_REBUILD_DEAD_FRACTION = 0.3
_DEFAULT_PARAMS = IndexParams()
# A filtered graph search still walks the rows the filter drops, so efSearch is raised by
# (all rows / kept rows) ** _FILTER_EF_POWER: measured on sessions of correlated clusters,
# power 1 lost recall (0.87 with 20% of rows kept), power 2 kept it >= 0.96. One unit of
# efSearch costs about as much as 60 rows of exact scan (random reads of a row and its M
# neighbours against a sequential read), so past kept / 64 an exact scan is cheaper.
_FILTER_EF_POWER = 2.0
_EXACT_WHEN_EF_ABOVE = 1 / 64
# A bigger graph needs a wider search for the same recall: at a fixed efSearch of 128,
# recall@10 on mid-distance queries fell from 0.99 at 100k rows to 0.72 at 1M; 512 at 1M
# restored 0.95. So `ef_search` holds up to _EF_REFERENCE_ROWS and grows as rows ** 0.6
# beyond (x4 at 1M).
_EF_REFERENCE_ROWS = 100_000
_EF_GROWTH = 0.6
# sq8: graph searches re-rank a shortlist of _RERANK_FACTOR * k on fp32 vectors (measured
# on 100k clustered 384-d rows: recall@10 0.98 with no re-ranking, 1.00 with 2k).
_RERANK_FACTOR = 2
# A search limited to sessions of more than this many rows (and more than `exact_below`)
# ranks them by their session codes and re-ranks the best on fp32 vectors, unless the
# candidates would be more than 1 / _CODED_CANDIDATE_SHARE of the rows: reading a
# candidate's vector is a random read, several times a sequential one.
_CODED_FROM_ROWS = 8192
_CODED_CANDIDATE_SHARE = 8


@dataclass(frozen=True)
class _CodedPlan:
    """A search by session codes: (session code, candidates to ask it for) per session,
    and how many of the best live candidates to re-rank."""

    asks: list[tuple[int, int]]
    wanted: int


class VectorIndex:
    """Cosine search over unit vectors with (id, session, idx) per row, in process."""

    def __init__(
        self,
        dim: int,
        params: IndexParams = _DEFAULT_PARAMS,
        spill_dir: str | os.PathLike | None = None,
    ) -> None:
        """`spill_dir`: where sq8 codes keep the fp32 vectors added since the last save
        (an unnamed file; the system's temporary directory when None)."""
        if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or not 1 <= dim <= 32768:
            raise ValueError(f'dim must be an integer in [1, 32768], got {dim!r}')
        if not isinstance(params, IndexParams):
            raise TypeError(f'params must be IndexParams, got {type(params).__name__}')
        self.dim = int(dim)
        self.params = params
        self.codes = params.codes_for(self.dim)
        self._spill_dir = None if spill_dir is None else Path(spill_dir)
        self._lock = threading.RLock()
        self._write_lock = threading.RLock()
        self._state = empty_state(self.dim, params, self.codes, self._spill_dir)

    # -- reading -------------------------------------------------------------------------

    def __len__(self) -> int:
        with self._lock:
            return len(self._state.rows)

    def ids(self) -> set[str]:
        with self._lock:
            return set(self._state.rows)

    def present(self, ids: Iterable[str]) -> set[str]:
        """Which of `ids` have a row (without copying every id, as ids() does)."""
        with self._lock:
            rows = self._state.rows
            return {key for key in ids if key in rows}

    def count(self, session: str | None = None) -> int:
        """Live rows, of one session or all."""
        with self._lock:
            state = self._state
            if session is None:
                return len(state.rows)
            code = state.session_codes.get(session)
            return 0 if code is None else state.session_live[code]

    def search(
        self,
        vector: np.ndarray,
        k: int,
        sessions: Sequence[str] | None = None,
        index_range: tuple[int, int] | None = None,
    ) -> list[tuple[str, float]]:
        """The rows most similar to `vector`, as (id, cosine), best first, at most k.

        `sessions` None searches all sessions; `index_range` (first, last) keeps rows with
        first <= idx <= last. Exact when the filter keeps few rows, HNSW otherwise.
        """
        query = checked_query(vector, k, self.dim)
        if isinstance(sessions, str):
            sessions = [sessions]
        if index_range is not None:
            first, last = (int(value) for value in index_range)
            if last < first:
                return []
        with self._lock:
            state = self._state
            total = state.count
            if not state.rows:
                return []
            mask, kept = self._filter(state, sessions, index_range)
            if kept == 0:
                return []
            ef = None if state.graph is None else self._ef(int(k), kept, total)
            plan = None
            if ef is None and index_range is None:
                plan = self._coded_plan(state, int(k), sessions, kept)
            if ef is not None:
                found = self._search_graph(state, query, int(k), mask, ef)
            elif plan is not None:
                found = self._search_coded(state, query, int(k), plan)
            else:
                found = self._search_exact(state, query, int(k), mask)
            return [(state.row_ids[row], score) for row, score in found]

    # -- writing -------------------------------------------------------------------------

    def upsert(
        self,
        ids: Sequence[str],
        sessions: Sequence[str],
        indices: Sequence[int],
        vectors: np.ndarray,
    ) -> None:
        """Add rows, replacing any with the same id; vectors are normalised here.

        Everything is checked before anything changes: a bad row adds nothing. Within one
        call a repeated id keeps its last row.
        """
        ids = list(ids)
        sessions = list(sessions)
        indices = list(indices)
        matrix = np.asarray(vectors)
        if matrix.ndim != 2 or matrix.shape[1] != self.dim:
            raise ValueError(f'vectors must have shape (n, {self.dim}), got {matrix.shape}')
        if not len(ids) == len(sessions) == len(indices) == matrix.shape[0]:
            raise ValueError(
                f'{len(ids)} ids, {len(sessions)} sessions, {len(indices)} indices and '
                f'{matrix.shape[0]} vectors: expected equal counts'
            )
        for value in (*ids, *sessions):
            if not isinstance(value, str) or not value:
                raise ValueError(f'ids and sessions must be non-empty strings, got {value!r}')
        for value in indices:
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise ValueError(f'indices must be integers, got {value!r}')
        index_array = np.asarray(indices, dtype=np.int64)
        unit = unit_rows(matrix)
        if not ids:
            return
        last = {key: position for position, key in enumerate(ids)}
        if len(last) < len(ids):
            keep = sorted(last.values())
            ids = [ids[i] for i in keep]
            sessions = [sessions[i] for i in keep]
            index_array = index_array[keep]
            unit = unit[keep]
        with self._write_lock:
            with self._lock:
                append(self._state, ids, sessions, index_array, unit)
            self._maybe_train(self._state)
            self._maybe_rebuild()

    def remove(self, ids: Iterable[str]) -> int:
        """Drop rows by id; unknown ids are skipped. Returns how many rows went."""
        wanted = list(ids)
        with self._write_lock:
            with self._lock:
                state = self._state
                rows = {state.rows[key] for key in wanted if key in state.rows}
                removed = kill(state, sorted(rows))
            self._maybe_rebuild()
        return removed

    def remove_session(self, session: str) -> int:
        with self._write_lock:
            with self._lock:
                state = self._state
                code = state.session_codes.get(session)
                if code is None or state.session_live[code] == 0:
                    return 0
                count = state.count
                rows = np.flatnonzero((state.codes[:count] == code) & state.alive[:count])
                removed = kill(state, rows.tolist())
            self._maybe_rebuild()
        return removed

    # -- persistence ---------------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write the index to `path` atomically (temporary file, fsync, rename).

        Searches go on meanwhile; writes wait.
        """
        path = Path(path)
        with self._write_lock:
            state = self._state
            start = save_state(path, state, self.dim, self.params, self.codes)
            if state.exact is not None and state.count:
                # Re-rank from the file just written and let go of the spill file.
                base = np.memmap(path, '<f4', 'r', offset=start, shape=(state.count, self.dim))
                with self._lock:
                    state.exact = RowVectors(self.dim, self._spill_dir, base)

    @classmethod
    def load(
        cls,
        path: Path,
        dim: int,
        params: IndexParams = _DEFAULT_PARAMS,
        spill_dir: str | os.PathLike | None = None,
    ) -> VectorIndex | None:
        """The index saved at `path`, or None when it is missing, damaged, or was built
        for another dim, graph shape or vector codes (the caller then rebuilds it from the
        database). With sq8 codes the fp32 vectors stay in the file, memory-mapped: the
        file must not be changed in place while the index lives (saves replace files)."""
        index = cls(dim, params, spill_dir)
        path = Path(path)
        try:
            state = read_state(path, dim, index.params, index.codes, index._spill_dir)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RuntimeError, KeyError, TypeError, IndexError) as error:
            _LOG.warning('vector index %s not usable, to be rebuilt: %s', path, error)
            return None
        if state is None:
            return None
        index._state = state
        with index._write_lock:
            index._maybe_train(state)
        return index

    # -- internals: searching ------------------------------------------------------------

    @staticmethod
    def _filter(
        state: State, sessions: Sequence[str] | None, index_range: tuple[int, int] | None
    ) -> tuple[np.ndarray | None, int]:
        """Rows the search may return (None: every row, all alive) and how many."""
        count = state.count
        if sessions is None and index_range is None:
            if state.dead == 0:
                return None, count
            return state.alive[:count], count - state.dead
        if sessions is None:
            mask = state.alive[:count].copy()
        else:
            codes = sorted({state.session_codes[s] for s in sessions if s in state.session_codes})
            codes = [code for code in codes if state.session_live[code] > 0]
            if not codes:
                return None, 0
            if len(codes) == 1:
                mask = state.codes[:count] == codes[0]
            else:
                wanted = np.zeros(len(state.session_names), bool)
                wanted[codes] = True
                mask = wanted[state.codes[:count]]
            mask &= state.alive[:count]
            if index_range is None:
                return mask, sum(state.session_live[code] for code in codes)
        first, last = (int(value) for value in index_range)
        indices = state.indices[:count]
        mask &= (indices >= first) & (indices <= last)
        return mask, int(np.count_nonzero(mask))

    def _ef(self, k: int, kept: int, total: int) -> int | None:
        """efSearch for a graph search over `kept` of `total` rows, or None for exact."""
        if kept <= max(self.params.exact_below, k):
            return None
        ef = self.params.ef_search
        if total > _EF_REFERENCE_ROWS:
            ef = math.ceil(ef * (total / _EF_REFERENCE_ROWS) ** _EF_GROWTH)
        ef = max(ef, k)
        if kept < total:
            ef = math.ceil(ef * (total / kept) ** _FILTER_EF_POWER)
        if ef > kept * _EXACT_WHEN_EF_ABOVE:
            return None
        return ef

    def _search_exact(
        self, state: State, query: np.ndarray, k: int, mask: np.ndarray | None
    ) -> list[tuple[int, float]]:
        parts = state.parts(self.dim)
        if mask is None:
            rows = None
            scores = np.concatenate([inner_products(array, query[0]) for _, array in parts])
        else:
            rows = np.flatnonzero(mask)
            scores = scores_of_rows(parts, rows, query[0], self.params.scan_threads)
        top = k_largest(scores, k)
        chosen = top if rows is None else rows[top]
        return [(int(row), float(score)) for row, score in zip(chosen, scores[top], strict=True)]

    def _coded_plan(
        self, state: State, k: int, sessions: Sequence[str] | None, kept: int
    ) -> _CodedPlan | None:
        """How to rank the sessions asked (None: all) by their codes, or None when an exact
        scan of the `kept` rows is as quick (or there are no codes yet).

        The best `scan_shortlist` live rows per 10 results are re-ranked. Each session is
        asked for that many plus its dead rows (which still hold codes), so dead rows never
        crowd out live ones.
        """
        wanted = self.params.shortlist_for(k)
        if (
            state.coded is None
            or wanted == 0
            or kept <= max(self.params.exact_below, _CODED_FROM_ROWS)
            or wanted * _CODED_CANDIDATE_SHARE > kept
        ):
            return None
        if sessions is None:
            codes = range(len(state.session_names))
        else:
            codes = sorted({state.session_codes[s] for s in sessions if s in state.session_codes})
        asks = []
        for code in codes:
            live = state.session_live[code]
            if live:
                size = state.coded.size(code)
                asks.append((code, min(size, wanted + size - live)))
        return _CodedPlan(asks, wanted)

    def _search_coded(
        self, state: State, query: np.ndarray, k: int, plan: _CodedPlan
    ) -> list[tuple[int, float]]:
        """Rank the planned sessions' rows by their codes (sessions shared among
        `scan_threads`), then re-rank the best live candidates on the fp32 vectors."""
        found: list[tuple[np.ndarray, np.ndarray]] = [None] * len(plan.asks)  # type: ignore[list-item]

        def ask(position: int, code: int, count: int) -> None:
            found[position] = state.coded.candidates(code, query, count)

        jobs = [
            (state.coded.size(code), functools.partial(ask, position, code, count))
            for position, (code, count) in enumerate(plan.asks)
        ]
        run_shared(shares(jobs, self.params.scan_threads), self.params.scan_threads - 1)
        rows = np.concatenate([rows for rows, _ in found])
        approx = np.concatenate([scores for _, scores in found])
        live = state.alive[rows]
        rows, approx = rows[live], approx[live]
        if len(rows) > plan.wanted:
            best = np.argpartition(-approx, plan.wanted - 1)[: plan.wanted]
            rows = rows[best]
        scores = inner_products(gather(state.parts(self.dim), rows), query[0])
        top = np.lexsort((rows, -scores))[:k]
        return [(int(row), float(score)) for row, score in zip(rows[top], scores[top], strict=True)]

    def _search_graph(
        self, state: State, query: np.ndarray, k: int, mask: np.ndarray | None, ef: int
    ) -> list[tuple[int, float]]:
        """HNSW search; with sq8 codes a shortlist of _RERANK_FACTOR * k is scored again
        on the fp32 vectors."""
        wanted = k if state.exact is None else _RERANK_FACTOR * k
        ef = max(ef, wanted)
        if mask is None:
            params = faiss.SearchParametersHNSW(efSearch=ef)
            distances, labels = state.graph.search(query, wanted, params=params)
        else:
            bitmap = np.packbits(mask, bitorder='little')
            selector = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap))
            params = faiss.SearchParametersHNSW(sel=selector, efSearch=ef)
            distances, labels = state.graph.search(query, wanted, params=params)
            del selector, bitmap
        found = labels[0] >= 0
        rows, scores = labels[0][found], distances[0][found]
        if state.exact is not None and len(rows):
            scores = inner_products(gather(state.parts(self.dim), rows), query[0])
            top = np.lexsort((rows, -scores))[:k]
            rows, scores = rows[top], scores[top]
        return [(int(row), float(score)) for row, score in zip(rows, scores, strict=True)]

    # -- internals: training -------------------------------------------------------------

    def _maybe_train(self, state: State) -> None:
        """Once there are rows enough to train on, build what needs training: with sq8
        codes the graph, and the session codes.

        Runs under the write lock only (searches scan exactly meanwhile; no row can be
        added), then the finished parts are put in place under the state lock.
        """
        needs_graph = state.graph is None and self.codes == SQ8
        needs_codes = state.coded is None and not state.coding_failed
        if state.count < train_from(self.params) or not (needs_graph or needs_codes):
            return
        graph = (
            trained_graph(state, self.dim, self.params, self.codes) if needs_graph else state.graph
        )
        coded = trained_codes(state, self.dim) if needs_codes else state.coded
        with self._lock:
            state.graph = graph
            state.coded = coded

    def _maybe_rebuild(self) -> None:
        """Rebuild the graph from the live rows once dead rows pass their share.

        Runs under the write lock only: the old graph is read (never changed) while the new
        one is built, so searches go on; the swap itself takes the state lock.
        """
        state = self._state
        if state.dead == 0 or state.dead <= _REBUILD_DEAD_FRACTION * state.count:
            return
        new = rebuilt(state, self.dim, self.params, self.codes, self._spill_dir)
        with self._lock:
            self._state = new
