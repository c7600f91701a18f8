# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Compact codes of each session's rows, for searches limited to a few large sessions.

The shared HNSW graph cannot serve a search limited to one session of a large memory (its
walk would have to visit every other session's rows as well), so such a search scans the
session. At 1M entries a session is some 50k rows, and reading their fp32 vectors (4.6 kB
each at 1152-d) is bound by memory bandwidth: 18 ms. Here every session also keeps 4-bit
product-quantiser codes of its rows (one byte per 16 dimensions: 72 bytes at 1152-d) in a
faiss fast-scan index, whose SIMD kernel ranks 50k rows in about 0.2 ms. The caller
re-ranks the best few hundred on the fp32 vectors, so answers carry exact cosines. A view
with pq4 vector codes has no graph at all and ranks every session this way.

One quantiser, trained once on a sample of the rows, serves all sessions. Each session
holds its codes in row order and the rows they belong to. Fast-scan indexes cannot
delete: dead rows stay until the caller rebuilds, and a search asks for as many more
candidates as the session has dead rows.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable, Iterator
from typing import BinaryIO

import faiss
import numpy as np

# Dimensions per sub-quantiser: the widest of these that divides the embedding's width
# and leaves at least _MIN_SUBQUANTISERS (narrower views need finer codes for the same
# recall). Measured on 50k clustered 1152-d rows, re-ranking 400 candidates for 10
# results: recall@10 1.00 with 8 (144 sub-quantisers, 0.2 ms a search) as with 4 (0.3 ms,
# twice the bytes).
_SUB_DIMS = (8, 4, 2, 1)
_MIN_SUBQUANTISERS = 96
_BITS = 4
_INITIAL_CAPACITY = 1024
_COUNT = struct.Struct('<Q')


class SessionCodes:
    """Per-session fast-scan codes sharing one trained quantiser."""

    def __init__(self, template: faiss.IndexPQFastScan) -> None:
        """`template`: a trained, empty index that every session's index is cloned from."""
        if not template.is_trained or template.ntotal:
            raise ValueError('the template must be trained and empty')
        self.dim = template.d
        self._template = template
        self._indexes: list[faiss.IndexPQFastScan | None] = []
        self._rows: list[np.ndarray] = []
        self._sizes: list[int] = []

    @classmethod
    def trained(cls, sample: np.ndarray) -> SessionCodes:
        """Codes whose quantiser is fitted to `sample` (unit rows, at least a few hundred)."""
        dim = sample.shape[1]
        sub = next(
            width
            for width in _SUB_DIMS
            if dim % width == 0 and (dim // width >= _MIN_SUBQUANTISERS or width == 1)
        )
        template = faiss.IndexPQFastScan(dim, dim // sub, _BITS, faiss.METRIC_INNER_PRODUCT)
        with _one_thread():
            template.train(np.ascontiguousarray(sample, dtype=np.float32))
        return cls(template)

    def size(self, session: int) -> int:
        """Rows (alive or dead) holding codes in a session."""
        return self._sizes[session] if session < len(self._sizes) else 0

    def add(self, session: int, rows: np.ndarray, vectors: np.ndarray) -> None:
        """Code `vectors`, the rows `rows` (ascending, after the session's last) of a session."""
        if len(rows) == 0:
            return
        while len(self._indexes) <= session:
            self._indexes.append(None)
            self._rows.append(np.empty(0, np.int64))
            self._sizes.append(0)
        size = self._sizes[session]
        held = self._rows[session]
        if size and rows[0] <= held[size - 1]:
            raise ValueError('rows must come after the rows the session holds')
        index = self._indexes[session]
        if index is None:
            index = faiss.clone_index(self._template)
            self._indexes[session] = index
        needed = size + len(rows)
        if needed > len(held):
            grown = np.empty(max(needed, 2 * len(held), _INITIAL_CAPACITY), np.int64)
            grown[:size] = held[:size]
            self._rows[session] = held = grown
        with _one_thread():
            index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        held[size:needed] = rows
        self._sizes[session] = needed

    def candidates(
        self, session: int, query: np.ndarray, count: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows of a session whose codes score best against `query` (one unit row), at
        most `count`, best first, with their approximate scores (comparable across the
        sessions of one query: every session decodes with the same quantiser)."""
        size = self.size(session)
        if size == 0 or count < 1:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        with _one_thread():
            scores, positions = self._indexes[session].search(query, min(count, size))
        found = positions[0] >= 0
        return self._rows[session][positions[0][found]], scores[0][found]

    # -- persistence ---------------------------------------------------------------------

    def write(self, write: Callable[[bytes | memoryview], int]) -> None:
        """Session count, each session's size and rows, the quantiser, then the codes."""
        write(_COUNT.pack(len(self._sizes)))
        write(np.asarray(self._sizes, '<i8').tobytes())
        for rows, size in zip(self._rows, self._sizes, strict=True):
            write(np.ascontiguousarray(rows[:size], '<i8'))
        writer = faiss.PyCallbackIOWriter(write)
        faiss.write_index(self._template, writer)
        for index in self._indexes:
            if index is not None:
                faiss.write_index(index, writer)
        del writer

    @classmethod
    def read(
        cls, stream: BinaryIO, dim: int, session_of_row: np.ndarray, session_count: int
    ) -> SessionCodes:
        """Codes written by `write`, checked against the index they belong to: its
        `session_count` sessions and the session code of each row (`session_of_row`).
        Raises ValueError on anything inconsistent."""
        (sessions,) = _COUNT.unpack(stream.read(_COUNT.size))
        if sessions > session_count:
            raise ValueError('more sessions hold codes than the index has')
        sizes = np.frombuffer(stream.read(8 * sessions), '<i8', count=sessions)
        if np.any(sizes < 0) or sizes.sum() > len(session_of_row):
            raise ValueError('session code sizes out of range')
        rows = []
        for session, size in enumerate(sizes.tolist()):
            held = np.frombuffer(stream.read(8 * size), '<i8', count=size).astype(np.int64)
            if size and (
                held[0] < 0
                or held[-1] >= len(session_of_row)
                or np.any(np.diff(held) <= 0)
                or np.any(session_of_row[held] != session)
            ):
                raise ValueError(f'rows of session {session} do not fit the index')
            rows.append(held)
        reader = faiss.PyCallbackIOReader(stream.read)
        template = faiss.read_index(reader)
        if (
            not isinstance(template, faiss.IndexPQFastScan)
            or template.d != dim
            or template.metric_type != faiss.METRIC_INNER_PRODUCT
        ):
            raise ValueError('session code quantiser does not match the index')
        codes = cls(template)
        for session, size in enumerate(sizes.tolist()):
            index = None
            if size:
                index = faiss.read_index(reader)
                if (
                    not isinstance(index, faiss.IndexPQFastScan)
                    or index.ntotal != size
                    or index.d != dim
                    or index.code_size != template.code_size
                ):
                    raise ValueError(f'codes of session {session} do not match their rows')
            codes._indexes.append(index)
            codes._rows.append(rows[session])
            codes._sizes.append(size)
        del reader
        return codes


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Run faiss on the calling thread alone (the setting is per thread): its OpenMP
    threads wait a scheduler tick whenever the cores are busy, and training beside two
    searching threads took ten times as long as alone."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)
