# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The numpy and faiss kernels under every in-process vector search: unit rows, inner
products on one thread, gathers across the pieces of a view's vectors, shared scans and
a top-k that partitions only what can win.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import faiss
import numpy as np

from waymark.memory.storage.shared_work import run_shared

# Exact scans run in jobs of at most _SCAN_CHUNK rows; one of at least _SPLIT_FROM_ROWS
# rows per thread is shared among `scan_threads` (measured on 50k 1152-d rows: 16.7 ms on
# one thread, 8.2 ms on two).
_SCAN_CHUNK = 8192
_SPLIT_FROM_ROWS = 16384


def checked_query(vector: np.ndarray, k: int, dim: int) -> np.ndarray:
    """A search's query as one unit row, after checking it and k (every index's search)."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f'k must be an integer >= 1, got {k!r}')
    query = np.asarray(vector)
    if query.shape not in ((dim,), (1, dim)):
        raise ValueError(f'query must have shape ({dim},), got {query.shape}')
    return unit_rows(query.reshape(1, dim))


def unit_rows(matrix: np.ndarray) -> np.ndarray:
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


def inner_products(vectors: np.ndarray, query: np.ndarray, out: np.ndarray | None = None):
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


def gather(parts: Sequence[tuple[int, np.ndarray]], rows: np.ndarray) -> np.ndarray:
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


def scores_of_rows(
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
    run_shared(shares(tasks, threads), threads - 1)
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
            job = functools.partial(inner_products, vectors[first:last], query, target)
            tasks.append((last - first, job))
            position += last - first
    return tasks


def _inner_products_of_gathered(
    vectors: np.ndarray, rows: np.ndarray, query: np.ndarray, out: np.ndarray
) -> None:
    inner_products(vectors[rows], query, out)


def shares(tasks: list[tuple[int, Callable[[], None]]], threads: int) -> list[Callable[[], None]]:
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


def k_largest(scores: np.ndarray, k: int) -> np.ndarray:
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
