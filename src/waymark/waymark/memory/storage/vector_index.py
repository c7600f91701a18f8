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
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import struct
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import faiss
import numpy as np

from waymark.memory.storage.checked_file import CheckedWriter, checked_body, write_checked
from waymark.memory.storage.session_codes import SessionCodes
from waymark.memory.storage.shared_work import run_shared
from waymark.settings import setting

_LOG = logging.getLogger(__name__)

# Dead rows slow searches down (the graph still walks them) and use memory; past this
# fraction the graph is rebuilt from the live rows.
_REBUILD_DEAD_FRACTION = 0.3
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
# Rows are added to (and rebuilt into) the graph in chunks so a rebuild gathers at most
# this many vectors at a time instead of copying all of them.
_ADD_CHUNK = 65536
_INITIAL_CAPACITY = 1024

# sq8: a scalar quantiser trained on the rows present once there are this many (fewer are
# always scanned exactly), with each dimension's range widened by this share on both sides
# for later rows; graph searches re-rank a shortlist of _RERANK_FACTOR * k on fp32 vectors
# (measured on 100k clustered 384-d rows: recall@10 0.98 with no re-ranking, 1.00 with 2k).
_SQ_TRAIN_MIN = 1024
_SQ_TRAIN_SAMPLE = 65536
_SQ_RANGE_MARGIN = 0.2
_RERANK_FACTOR = 2
# Exact scans run in jobs of at most _SCAN_CHUNK rows; one of at least _SPLIT_FROM_ROWS
# rows per thread is shared among `scan_threads` (measured on 50k 1152-d rows: 16.7 ms on
# one thread, 8.2 ms on two).
_SCAN_CHUNK = 8192
_SPLIT_FROM_ROWS = 16384
# A search limited to sessions of more than this many rows (and more than `exact_below`)
# ranks them by their session codes and re-ranks the best on fp32 vectors, unless the
# candidates would be more than 1 / _CODED_CANDIDATE_SHARE of the rows: reading a
# candidate's vector is a random read, several times a sequential one.
_CODED_FROM_ROWS = 8192
_CODED_CANDIDATE_SHARE = 8

_MAGIC = b'WAYMARK-VECTOR-INDEX\n'
_FORMAT = 3
_READABLE_FORMATS = (1, 2, 3)
_HEADER_LEN = struct.Struct('<Q')
_MAX_HEADER = 1 << 28

FP32 = 'fp32'
SQ8 = 'sq8'
PQ4 = 'pq4'
VECTOR_CODES = (SQ8, FP32, PQ4)
# Vector indexes a Milvus server can hold for a view (search_backend milvus).
HNSW = 'HNSW'
# IVF with 4-bit product codes, re-ranked on the raw vectors (Milvus 2.3 and later).
SCANN = 'SCANN'
SERVER_INDEXES = (HNSW, 'IVF_SQ8', 'IVF_FLAT', SCANN)


@dataclass(frozen=True)
class IndexParams:
    """HNSW graph and search settings (defaults measured on 384-d and 1152-d embeddings).

    `hnsw_m` and `ef_construction` shape the saved graph; `ef_search` and `exact_below`
    only steer searches, so a saved index loads under other values of those two.
    `ef_search` is the efSearch of an index up to 100k rows; larger ones search wider.
    """

    hnsw_m: int = setting(32, 'HNSW links per vector.', low=4, high=128)
    ef_construction: int = 80
    ef_search: int = setting(128, 'HNSW search breadth (recall/speed).', low=8, high=4096)
    exact_below: int = 10_000
    vector_codes: str = setting(
        SQ8,
        'How the search graph holds vectors: sq8 (one byte per dimension in RAM; the '
        'shortlist is re-ranked on fp32 vectors kept on disk), fp32 (all in RAM), or pq4 '
        '(no graph: every search ranks rows by 4-bit codes, one byte per 16 dimensions, '
        'then re-ranks on fp32 vectors on disk; the least RAM for wide views).',
        choices=VECTOR_CODES,
    )
    server_index: str = setting(
        HNSW,
        'Vector index of a new view collection where Milvus answers searches '
        '(search_backend milvus): HNSW, or IVF_SQ8 / IVF_FLAT / SCANN (much quicker to '
        'build at millions of rows; recall set by ivf_nprobe; SCANN re-ranks '
        'scan_shortlist candidates per 10 results on the raw vectors). Existing collections '
        'keep theirs.',
        choices=SERVER_INDEXES,
    )
    ivf_nlist: int = setting(
        1024, 'IVF clusters per segment (server_index IVF_* or SCANN).', low=16, high=65536
    )
    ivf_nprobe: int = setting(
        32,
        'IVF clusters searched per segment (server_index IVF_* or SCANN).',
        low=1,
        high=65536,
    )
    scan_threads: int = setting(
        2,
        'Threads sharing one exact scan of many rows (a session at a million entries); '
        'the searching thread itself takes any share no helper has started.',
        low=1,
        high=64,
    )

    pq4_from_dim: int = setting(
        1024,
        'Views at least this wide use pq4 codes whatever vector_codes says (0: none), so a '
        '1152-d image view holds about 250 bytes per entry in RAM instead of 1.6 kB.',
        low=0,
        high=32768,
    )
    scan_shortlist: int = setting(
        400,
        'Candidates re-ranked on fp32 vectors per 10 results when a search ranks rows by '
        'their 4-bit codes first (one limited to large sessions; any on a pq4 view; a '
        'server SCANN index); 0 scans those rows exactly instead (recall 1.0, much slower '
        'at a million entries; SCANN then re-ranks only the k results).',
        low=0,
        high=100_000,
    )

    def shortlist_for(self, k: int) -> int:
        """Candidates ranked by 4-bit codes to re-rank exactly for k results: `scan_shortlist`
        per 10 results, never fewer than for 10 (0 when the shortlist is off)."""
        return math.ceil(self.scan_shortlist * max(int(k), 10) / 10)

    def __post_init__(self) -> None:
        for name, allowed in (
            ('vector_codes', VECTOR_CODES),
            ('server_index', SERVER_INDEXES),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f'{name} must be one of {allowed}, got {getattr(self, name)!r}')
        for name, low, high in (
            ('hnsw_m', 4, 256),
            ('ef_construction', 8, 100_000),
            ('ef_search', 1, 100_000),
            ('exact_below', 0, 2**62),
            ('ivf_nlist', 16, 65536),
            ('ivf_nprobe', 1, 65536),
            ('scan_threads', 1, 64),
            ('scan_shortlist', 0, 100_000),
            ('pq4_from_dim', 0, 32768),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise ValueError(f'{name} must be an integer, got {value!r}')
            if not low <= value <= high:
                raise ValueError(f'{name} must be in [{low}, {high}], got {value}')

    def codes_for(self, dim: int) -> str:
        """The vector codes of a view `dim` wide."""
        if self.pq4_from_dim and dim >= self.pq4_from_dim:
            return PQ4
        return self.vector_codes


class _RowVectors:
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
            self._grow(max(needed, 2 * len(self._tail), _INITIAL_CAPACITY))
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


@dataclass(frozen=True)
class _CodedPlan:
    """A search by session codes: (session code, candidates to ask it for) per session,
    and how many of the best live candidates to re-rank."""

    asks: list[tuple[int, int]]
    wanted: int


@dataclass
class _State:
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
    exact: _RowVectors | None = None  # sq8 and pq4
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
        capacity = max(needed, 2 * capacity, _INITIAL_CAPACITY)
        for name in ('codes', 'indices', 'alive'):
            old = getattr(self, name)
            new = np.zeros(capacity, old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)


class VectorIndex:
    """Cosine search over unit vectors with (id, session, idx) per row, in process."""

    def __init__(
        self,
        dim: int,
        params: IndexParams = IndexParams(),
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
        self._state = self._empty_state()

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
        unit = _unit_rows(matrix)
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
                self._append(self._state, ids, sessions, index_array, unit)
            self._maybe_train(self._state)
            self._maybe_rebuild()

    def remove(self, ids: Iterable[str]) -> int:
        """Drop rows by id; unknown ids are skipped. Returns how many rows went."""
        wanted = list(ids)
        with self._write_lock:
            with self._lock:
                state = self._state
                rows = {state.rows[key] for key in wanted if key in state.rows}
                removed = _kill(state, sorted(rows))
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
                removed = _kill(state, rows.tolist())
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
            starts: list[int] = []
            write_checked(path, _MAGIC, lambda checked: starts.append(self._write(state, checked)))
            if state.exact is not None and state.count:
                # Re-rank from the file just written and let go of the spill file.
                base = np.memmap(path, '<f4', 'r', offset=starts[0], shape=(state.count, self.dim))
                with self._lock:
                    state.exact = _RowVectors(self.dim, self._spill_dir, base)

    @classmethod
    def load(
        cls,
        path: Path,
        dim: int,
        params: IndexParams = IndexParams(),
        spill_dir: str | os.PathLike | None = None,
    ) -> VectorIndex | None:
        """The index saved at `path`, or None when it is missing, damaged, or was built
        for another dim, graph shape or vector codes (the caller then rebuilds it from the
        database). With sq8 codes the fp32 vectors stay in the file, memory-mapped: the
        file must not be changed in place while the index lives (saves replace files)."""
        index = cls(dim, params, spill_dir)
        path = Path(path)
        try:
            state = index._read(path)
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
        state: _State, sessions: Sequence[str] | None, index_range: tuple[int, int] | None
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
        self, state: _State, query: np.ndarray, k: int, mask: np.ndarray | None
    ) -> list[tuple[int, float]]:
        parts = state.parts(self.dim)
        if mask is None:
            rows = None
            scores = np.concatenate([_inner_products(array, query[0]) for _, array in parts])
        else:
            rows = np.flatnonzero(mask)
            scores = _scores_of_rows(parts, rows, query[0], self.params.scan_threads)
        top = _k_largest(scores, k)
        chosen = top if rows is None else rows[top]
        return [(int(row), float(score)) for row, score in zip(chosen, scores[top], strict=True)]

    def _coded_plan(
        self, state: _State, k: int, sessions: Sequence[str] | None, kept: int
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
        self, state: _State, query: np.ndarray, k: int, plan: _CodedPlan
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
        run_shared(_shares(jobs, self.params.scan_threads), self.params.scan_threads - 1)
        rows = np.concatenate([rows for rows, _ in found])
        approx = np.concatenate([scores for _, scores in found])
        live = state.alive[rows]
        rows, approx = rows[live], approx[live]
        if len(rows) > plan.wanted:
            best = np.argpartition(-approx, plan.wanted - 1)[: plan.wanted]
            rows = rows[best]
        scores = _inner_products(_gather(state.parts(self.dim), rows), query[0])
        top = np.lexsort((rows, -scores))[:k]
        return [(int(row), float(score)) for row, score in zip(rows[top], scores[top], strict=True)]

    def _search_graph(
        self, state: _State, query: np.ndarray, k: int, mask: np.ndarray | None, ef: int
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
            scores = _inner_products(_gather(state.parts(self.dim), rows), query[0])
            top = np.lexsort((rows, -scores))[:k]
            rows, scores = rows[top], scores[top]
        return [(int(row), float(score)) for row, score in zip(rows, scores, strict=True)]

    # -- internals: writing --------------------------------------------------------------

    def _new_graph(self) -> faiss.Index:
        params = self.params
        if self.codes == FP32:
            graph = faiss.IndexHNSWFlat(self.dim, params.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        else:
            graph = faiss.IndexHNSWSQ(
                self.dim, faiss.ScalarQuantizer.QT_8bit, params.hnsw_m, faiss.METRIC_INNER_PRODUCT
            )
            faiss.downcast_index(graph.storage).sq.rangestat_arg = _SQ_RANGE_MARGIN
        graph.hnsw.efConstruction = params.ef_construction
        return graph

    def _empty_state(self) -> _State:
        on_disk = self.codes != FP32
        return _State(
            graph=None if on_disk else self._new_graph(),
            exact=_RowVectors(self.dim, self._spill_dir) if on_disk else None,
            codes=np.zeros(0, np.int32),
            indices=np.zeros(0, np.int64),
            alive=np.zeros(0, bool),
            row_ids=[],
            rows={},
            session_names=[],
            session_codes={},
            session_live=[],
        )

    @staticmethod
    def _append(
        state: _State,
        ids: list[str],
        sessions: list[str],
        indices: np.ndarray,
        unit: np.ndarray,
    ) -> None:
        """Add rows to the graph (and the fp32 rows), then record them; a replaced id's
        old row dies."""
        start = state.count
        if state.exact is not None:
            state.exact.append(unit)
        try:
            if state.graph is not None:
                for offset in range(0, len(ids), _ADD_CHUNK):
                    state.graph.add(unit[offset : offset + _ADD_CHUNK])
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
        _kill(state, [state.rows[key] for key in ids if key in state.rows])
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
                _add_codes(state.coded, state.codes[start:end], np.arange(start, end), unit)
            except Exception:
                # The rows are in; searches scan exactly until a rebuild or a restart.
                _LOG.exception('session codes dropped after a failed add')
                state.coded = None
                state.coding_failed = True

    def _maybe_train(self, state: _State) -> None:
        """Once there are rows enough to train on, build what needs training: with sq8
        codes the graph, and the session codes.

        Runs under the write lock only (searches scan exactly meanwhile; no row can be
        added), then the finished parts are put in place under the state lock.
        """
        needs_graph = state.graph is None and self.codes == SQ8
        needs_codes = state.coded is None and not state.coding_failed
        if state.count < max(self.params.exact_below, _SQ_TRAIN_MIN) or not (
            needs_graph or needs_codes
        ):
            return
        graph = self._trained_graph(state) if needs_graph else state.graph
        coded = self._trained_codes(state) if needs_codes else state.coded
        with self._lock:
            state.graph = graph
            state.coded = coded

    def _trained_graph(self, state: _State) -> faiss.Index:
        """An sq8 graph of every row, its quantiser fitted to (a sample of) the live rows."""
        parts = state.parts(self.dim)
        count = state.count
        graph = self._new_graph()
        graph.train(_gather(parts, _training_rows(state)))
        for offset in range(0, count, _ADD_CHUNK):
            graph.add(_gather(parts, np.arange(offset, min(count, offset + _ADD_CHUNK))))
        return graph

    def _trained_codes(self, state: _State) -> SessionCodes:
        """Session codes of every live row, the quantiser fitted to (a sample of) them."""
        parts = state.parts(self.dim)
        coded = SessionCodes.trained(_gather(parts, _training_rows(state)))
        live = np.flatnonzero(state.alive[: state.count])
        for offset in range(0, len(live), _ADD_CHUNK):
            rows = live[offset : offset + _ADD_CHUNK]
            _add_codes(coded, state.codes[rows], rows, _gather(parts, rows))
        return coded

    def _maybe_rebuild(self) -> None:
        """Rebuild the graph from the live rows once dead rows pass their share.

        Runs under the write lock only: the old graph is read (never changed) while the new
        one is built, so searches go on; the swap itself takes the state lock.
        """
        state = self._state
        if state.dead == 0 or state.dead <= _REBUILD_DEAD_FRACTION * state.count:
            return
        new = self._empty_state()
        if state.rows:
            count = state.count
            rows = np.flatnonzero(state.alive[:count])
            # Sessions become contiguous runs of rows, so exact scans of a session can
            # read slices instead of gathering rows.
            names = np.asarray(state.session_names)
            rank = np.empty(len(names), np.int64)
            rank[np.argsort(names, kind='stable')] = np.arange(len(names))
            rows = rows[np.lexsort((state.indices[rows], rank[state.codes[rows]]))]
            parts = state.parts(self.dim)
            for offset in range(0, len(rows), _ADD_CHUNK):
                chunk = rows[offset : offset + _ADD_CHUNK]
                self._append(
                    new,
                    [state.row_ids[row] for row in chunk],
                    [state.session_names[code] for code in state.codes[chunk]],
                    state.indices[chunk],
                    _gather(parts, chunk),
                )
            if new.count >= max(self.params.exact_below, _SQ_TRAIN_MIN):
                if new.graph is None and self.codes == SQ8:
                    new.graph = self._trained_graph(new)
                new.coded = self._trained_codes(new)
        with self._lock:
            self._state = new

    # -- internals: persistence ----------------------------------------------------------

    def _write(self, state: _State, checked: CheckedWriter) -> int:
        """Body: header length, JSON header, sections, with sq8 codes the fp32 vectors,
        then the faiss graph if there is one (checked_file adds the magic and the trailer).
        Returns where in the file the fp32 vectors start."""
        count = state.count
        joined = ''.join(state.row_ids)
        offsets = np.zeros(count + 1, np.int64)
        np.cumsum([len(key) for key in state.row_ids], out=offsets[1:])
        sections = {
            'codes': state.codes[:count].astype('<i4'),
            'indices': state.indices[:count].astype('<i8'),
            'alive': state.alive[:count].astype(np.uint8),
            'id_offsets': offsets.astype('<i8'),
            'id_text': np.frombuffer(joined.encode('utf-8'), np.uint8),
        }
        header = {
            'format': _FORMAT,
            'dim': self.dim,
            'hnsw_m': self.params.hnsw_m,
            'ef_construction': self.params.ef_construction,
            'vector_codes': self.codes,
            'graph': state.graph is not None,
            'session_codes': state.coded is not None,
            'rows': count,
            'live': len(state.rows),
            'sessions': state.session_names,
            'sections': {name: [array.dtype.str, len(array)] for name, array in sections.items()},
        }
        encoded = json.dumps(header).encode('utf-8')
        checked.write(_HEADER_LEN.pack(len(encoded)))
        checked.write(encoded)
        for array in sections.values():
            checked.write(array.tobytes())
        vectors_start = len(_MAGIC) + checked.size
        if state.exact is not None:
            for _, array in state.parts(self.dim):
                for offset in range(0, len(array), _ADD_CHUNK):
                    checked.write(np.ascontiguousarray(array[offset : offset + _ADD_CHUNK]))
        if state.graph is not None:
            writer = faiss.PyCallbackIOWriter(checked.write)
            faiss.write_index(state.graph, writer)
            del writer
        if state.coded is not None:
            state.coded.write(checked.write)
        return vectors_start

    def _read(self, path: Path) -> _State | None:
        with checked_body(path, _MAGIC) as (stream, body):
            if body < _HEADER_LEN.size:
                raise ValueError('file too short')
            (header_len,) = _HEADER_LEN.unpack(stream.read(_HEADER_LEN.size))
            if header_len > min(body, _MAX_HEADER):
                raise ValueError('header length out of range')
            header = json.loads(stream.read(header_len).decode('utf-8'))
            if header.get('format') not in _READABLE_FORMATS:
                raise ValueError(f'format {header.get("format")!r}, expected {_FORMAT}')
            header.setdefault('vector_codes', FP32)  # format 1
            header.setdefault('graph', True)
            keys = ('dim', 'hnsw_m', 'ef_construction', 'vector_codes')
            shape = {key: header.get(key) for key in keys}
            wanted = {'dim': self.dim, **asdict(self.params), 'vector_codes': self.codes}
            if any(shape[key] != wanted[key] for key in shape):
                _LOG.info('vector index %s built as %s, wanted %s: rebuilding', path, shape, wanted)
                return None
            count = int(header['rows'])
            arrays = {}
            for name, (dtype, length) in header['sections'].items():
                data = np.dtype(dtype)
                raw = stream.read(data.itemsize * int(length))
                arrays[name] = np.frombuffer(raw, data, count=int(length))
            exact = None
            if header['vector_codes'] != FP32:
                start = stream.tell()
                stream.seek(start + count * self.dim * 4)
                if stream.tell() > len(_MAGIC) + body:
                    raise ValueError('vectors run past the body')
                base = np.memmap(path, '<f4', 'r', offset=start, shape=(count, self.dim))
                exact = _RowVectors(self.dim, self._spill_dir, base if count else None)
            graph = None
            if header['graph']:
                graph = faiss.read_index(faiss.PyCallbackIOReader(stream.read))
            coded = None
            if header.get('session_codes'):  # format 3
                coded = SessionCodes.read(
                    stream, self.dim, arrays['codes'], len(header['sessions'])
                )
            if stream.tell() != len(_MAGIC) + body:
                raise ValueError('index does not end where the trailer starts')
        # read_index hands back the owning object, already of its concrete class.
        state = self._state_from(header, count, arrays, graph, exact)
        state.coded = coded
        return state

    def _state_from(
        self,
        header: dict,
        count: int,
        arrays: dict[str, np.ndarray],
        graph: faiss.Index | None,
        exact: _RowVectors | None,
    ) -> _State:
        """Check the parts against each other and assemble the search state."""
        if graph is None:
            if exact is None:
                raise ValueError('neither a graph nor fp32 vectors')
        else:
            self._check_graph(graph, count)
        names = [str(name) for name in header['sessions']]
        codes = arrays['codes'].astype(np.int32)
        indices = arrays['indices'].astype(np.int64)
        alive = arrays['alive'].astype(bool)
        offsets = arrays['id_offsets']
        text = arrays['id_text'].tobytes().decode('utf-8')
        if not (len(codes) == len(indices) == len(alive) == len(offsets) - 1 == count):
            raise ValueError('section lengths do not match the row count')
        if count and (codes.min() < 0 or codes.max() >= len(names)):
            raise ValueError('session code out of range')
        if offsets[0] != 0 or offsets[-1] != len(text) or np.any(np.diff(offsets) < 0):
            raise ValueError('id offsets do not fit the id text')
        bounds = offsets.tolist()
        row_ids = [text[bounds[i] : bounds[i + 1]] for i in range(count)]
        rows = {key: row for row, key in enumerate(row_ids) if alive[row]}
        live = int(np.count_nonzero(alive))
        if len(rows) != live or live != int(header['live']) or '' in rows:
            raise ValueError('live ids are not unique and non-empty')
        session_live = np.bincount(codes[alive], minlength=len(names)).tolist()
        state = _State(
            graph=graph,
            codes=codes,
            indices=indices,
            alive=alive,
            row_ids=[key if alive[row] else '' for row, key in enumerate(row_ids)],
            rows=rows,
            session_names=names,
            session_codes={name: code for code, name in enumerate(names)},
            session_live=session_live,
            dead=count - live,
            exact=exact,
        )
        if len(state.session_codes) != len(names):
            raise ValueError('session names repeat')
        return state

    def _check_graph(self, graph: faiss.Index, count: int) -> None:
        expected = {FP32: faiss.IndexHNSWFlat, SQ8: faiss.IndexHNSWSQ}.get(self.codes)
        if expected is None:
            raise ValueError(f'{self.codes} indexes hold no graph')
        if not isinstance(graph, expected):
            raise ValueError(f'graph is a {type(graph).__name__}, expected {expected.__name__}')
        if (
            graph.d != self.dim
            or graph.metric_type != faiss.METRIC_INNER_PRODUCT
            or graph.ntotal != count
            or graph.hnsw.nb_neighbors(1) != self.params.hnsw_m
        ):
            raise ValueError('graph does not match its header')
        if expected is faiss.IndexHNSWSQ:
            quantiser = faiss.downcast_index(graph.storage).sq
            if quantiser.qtype != faiss.ScalarQuantizer.QT_8bit:
                raise ValueError('graph codes are not sq8')
        graph.hnsw.efConstruction = self.params.ef_construction


def _training_rows(state: _State) -> np.ndarray:
    """Rows to fit a quantiser to: the live rows (all rows when none live), sampled down
    to _SQ_TRAIN_SAMPLE, ascending."""
    count = state.count
    live = np.flatnonzero(state.alive[:count])
    if len(live) == 0:
        live = np.arange(count)
    if len(live) > _SQ_TRAIN_SAMPLE:
        rng = np.random.default_rng(count)
        live = np.sort(rng.choice(live, _SQ_TRAIN_SAMPLE, replace=False))
    return live


def _add_codes(coded: SessionCodes, codes: np.ndarray, rows: np.ndarray, vectors: np.ndarray):
    """Give rows (ascending) their session codes, session by session."""
    for code in np.unique(codes).tolist():
        mine = codes == code
        coded.add(code, rows[mine], vectors[mine])


def _kill(state: _State, rows: Sequence[int]) -> int:
    """Mark rows dead (HNSW cannot delete); searches filter them out."""
    for row in rows:
        state.alive[row] = False
        state.session_live[int(state.codes[row])] -= 1
        del state.rows[state.row_ids[row]]
        state.row_ids[row] = ''
    state.dead += len(rows)
    return len(rows)


def checked_query(vector: np.ndarray, k: int, dim: int) -> np.ndarray:
    """A search's query as one unit row, after checking it and k (every index's search)."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f'k must be an integer >= 1, got {k!r}')
    query = np.asarray(vector)
    if query.shape not in ((dim,), (1, dim)):
        raise ValueError(f'query must have shape ({dim},), got {query.shape}')
    return _unit_rows(query.reshape(1, dim))


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length as float32; refuses zero and non-finite rows."""
    if matrix.dtype.kind not in 'fiu':
        raise ValueError(f'vectors must be numeric, got dtype {matrix.dtype}')
    values = matrix.astype(np.float64, copy=False)
    if not np.isfinite(values).all():
        raise ValueError('vectors must be finite')
    with np.errstate(over='ignore'):
        norms = np.linalg.norm(values, axis=1)
    if len(norms) and not (np.isfinite(norms).all() and norms.min() > 0):
        raise ValueError('vectors must have a non-zero, finite length')
    return np.ascontiguousarray(values / norms[:, None], dtype=np.float32)


def _inner_products(vectors: np.ndarray, query: np.ndarray, out: np.ndarray | None = None):
    """vectors @ query, single-threaded (faiss's SIMD kernel).

    numpy's product goes through multi-threaded BLAS, whose threads wait a scheduler tick
    (12 ms here) whenever the cores are busy with anything else; this kernel ran 4000 to
    100k rows 2 to 100 times faster on a loaded machine and as fast on an idle one.
    """
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    query = np.ascontiguousarray(query, dtype=np.float32)
    if out is None:
        out = np.empty(len(vectors), np.float32)
    if len(vectors):
        faiss.fvec_inner_products_ny(
            faiss.swig_ptr(out),
            faiss.swig_ptr(query),
            faiss.swig_ptr(vectors),
            vectors.shape[1],
            len(vectors),
        )
    return out


def _gather(parts: Sequence[tuple[int, np.ndarray]], rows: np.ndarray) -> np.ndarray:
    """The vectors of `rows` (any order) as one contiguous float32 array."""
    rows = np.asarray(rows, np.int64)
    out = np.empty((len(rows), parts[0][1].shape[1] if parts else 0), np.float32)
    for first, array in parts:
        inside = (rows >= first) & (rows < first + len(array))
        if inside.all():
            return np.ascontiguousarray(array[rows - first], dtype=np.float32)
        if inside.any():
            out[inside] = array[rows[inside] - first]
    return out


def _scores_of_rows(
    parts: Sequence[tuple[int, np.ndarray]], rows: np.ndarray, query: np.ndarray, threads: int = 1
) -> np.ndarray:
    """Inner products of the given rows (ascending) with the query, piece by piece; a scan
    of many rows is shared among `threads`."""
    scores = np.empty(len(rows), np.float32)
    tasks: list[tuple[int, Callable[[], None]]] = []
    for first, array in parts:
        lo, hi = (int(value) for value in np.searchsorted(rows, (first, first + len(array))))
        if hi > lo:
            tasks.extend(_piece_tasks(array, rows[lo:hi] - first, query, scores[lo:hi]))
    run_shared(_shares(tasks, threads), threads - 1)
    return scores


def _piece_tasks(
    vectors: np.ndarray, rows: np.ndarray, query: np.ndarray, out: np.ndarray
) -> list[tuple[int, Callable[[], None]]]:
    """Jobs writing the inner products of the given rows (ascending) of one piece into
    `out`, as (rows, job), each of at most _SCAN_CHUNK rows.

    A session's rows mostly lie in long contiguous runs, and a slice is read in place
    while a gather copies every row first (several times slower), so runs are read as
    slices when they are long on average.
    """
    if len(rows) == 0:
        return []
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    if (len(breaks) + 1) * 64 > len(rows):
        chunks = [slice(at, at + _SCAN_CHUNK) for at in range(0, len(rows), _SCAN_CHUNK)]
        return [
            (
                len(rows[chunk]),
                functools.partial(
                    _inner_products_of_gathered, vectors, rows[chunk], query, out[chunk]
                ),
            )
            for chunk in chunks
        ]
    starts = rows[np.concatenate(([0], breaks))].tolist()
    ends = (rows[np.concatenate((breaks - 1, [len(rows) - 1]))] + 1).tolist()
    tasks = []
    position = 0
    for start, end in zip(starts, ends, strict=True):
        for first in range(start, end, _SCAN_CHUNK):
            last = min(first + _SCAN_CHUNK, end)
            target = out[position : position + last - first]
            job = functools.partial(_inner_products, vectors[first:last], query, target)
            tasks.append((last - first, job))
            position += last - first
    return tasks


def _inner_products_of_gathered(
    vectors: np.ndarray, rows: np.ndarray, query: np.ndarray, out: np.ndarray
) -> None:
    _inner_products(vectors[rows], query, out)


def _shares(tasks: list[tuple[int, Callable[[], None]]], threads: int) -> list[Callable[[], None]]:
    """The tasks grouped into about `threads` jobs of equal rows (one job for a short scan)."""
    total = sum(rows for rows, _ in tasks)
    count = min(threads, max(1, total // _SPLIT_FROM_ROWS))
    groups: list[list[Callable[[], None]]] = [[] for _ in range(count)]
    done = 0
    for rows, task in tasks:
        groups[min(count - 1, done * count // max(total, 1))].append(task)
        done += rows
    return [functools.partial(_run_all, group) for group in groups if group]


def _run_all(tasks: list[Callable[[], None]]) -> None:
    for task in tasks:
        task()


def _k_largest(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k largest scores, best first, equal scores by position.

    A threshold from a strided sample keeps a few times k scores, so only those are
    partitioned (a full argpartition of 200k scores took 6 ms here); when it keeps fewer
    than k, all scores are candidates.
    """
    candidates = None
    if len(scores) > 64 * k + 1024:
        rank = 2 * (k // 16) + 8
        sample = scores[::16]
        threshold = np.partition(sample, len(sample) - 1 - rank)[len(sample) - 1 - rank]
        picked = np.flatnonzero(scores >= threshold)
        if len(picked) >= k:
            candidates = picked
    if candidates is None:
        candidates = np.arange(len(scores))
    chosen = scores[candidates]
    if len(candidates) > k:
        kth = np.partition(chosen, len(chosen) - k)[len(chosen) - k]
        candidates = candidates[chosen >= kth]
        chosen = scores[candidates]
    return candidates[np.lexsort((candidates, -chosen))[:k]]
