# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What every view's search offers, and the one place a store's search backend is read.

A store keeps one ViewIndex per embedding view; which kind depends on where vector
searches run (`search_backend`): in memory_node over a mirror of Milvus (VectorIndex), in
Milvus itself (ServerViewIndex), or in Milvus with the sessions being written also held in
process (HybridViewIndex). The name is resolved once into a Backend that says what the
choice entails, so the rest of the store asks about consequences, never about names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from pymilvus import MilvusClient

from waymark.memory.storage.hybrid_index import DEFAULT_HOT_ROWS, HybridViewIndex
from waymark.memory.storage.index_params import SCANN, IndexParams, server_index_spec
from waymark.memory.storage.server_index import ServerViewIndex
from waymark.memory.storage.vector_index import VectorIndex

IN_PROCESS = 'in_process'
IN_MILVUS = 'milvus'
AUTO = 'auto'
SEARCH_BACKENDS = (IN_PROCESS, IN_MILVUS, AUTO)


class ViewIndex(Protocol):
    """Cosine search over one view's rows of (id, session, idx, vector)."""

    dim: int

    def __len__(self) -> int: ...

    def count(self, session: str | None = None) -> int: ...

    def present(self, ids: Iterable[str]) -> set[str]: ...

    def ids(self) -> set[str]: ...

    def search(
        self,
        vector: np.ndarray,
        k: int,
        sessions: Sequence[str] | None = None,
        index_range: tuple[int, int] | None = None,
    ) -> list[tuple[str, float]]:
        """(id, cosine) of the best rows, best first, at most k."""
        ...

    def upsert(
        self,
        ids: Sequence[str],
        sessions: Sequence[str],
        indices: Sequence[int],
        vectors: np.ndarray,
    ) -> None: ...

    def remove(self, ids: Iterable[str]) -> int: ...

    def remove_session(self, session: str) -> int: ...


@dataclass(frozen=True)
class Backend:
    """Where a store's vector searches run, as what that choice entails.

    `in_milvus`: Milvus answers them, so view collections carry a server index and a hit
    may be an entry another writer stored. `hot_sessions`: the sessions being written are
    searched in process as well. `mirrored`: every view row is held in process, so the
    indexes are saved as snapshots and checked against Milvus at open.
    """

    name: str
    in_milvus: bool
    hot_sessions: bool

    @property
    def mirrored(self) -> bool:
        return not self.in_milvus

    def check_dims(self, params: IndexParams, dims: Iterable[tuple[str, int]]) -> None:
        """Refuse views a server index cannot hold: SCANN's 4-bit codes hold two dimensions
        each, and on an odd width Milvus would retry building every segment forever."""
        if self.in_milvus and params.server_index == SCANN:
            odd = {name: dim for name, dim in dims if int(dim) % 2}
            if odd:
                raise ValueError(f'server_index SCANN needs views of even dimension, got {odd}')

    def collection_index(self, params: IndexParams) -> tuple[str, dict]:
        """The vector index a new view collection gets: FLAT where searches run in process
        (Milvus needs one to load), `server_index` where Milvus answers them."""
        return server_index_spec(params) if self.in_milvus else ('FLAT', {})


_BACKENDS = {
    IN_PROCESS: Backend(IN_PROCESS, in_milvus=False, hot_sessions=False),
    IN_MILVUS: Backend(IN_MILVUS, in_milvus=True, hot_sessions=False),
    AUTO: Backend(AUTO, in_milvus=True, hot_sessions=True),
}


def resolve_backend(name: str) -> Backend:
    """The backend `name` (one of SEARCH_BACKENDS) stands for."""
    if name not in _BACKENDS:
        raise ValueError(f'search_backend must be one of {SEARCH_BACKENDS}, got {name!r}')
    return _BACKENDS[name]


def make_view_index(
    backend: Backend,
    dim: int,
    params: IndexParams,
    client: MilvusClient | None = None,
    collection: str = '',
    spill_dir: Path | None = None,
    hot_rows: int = DEFAULT_HOT_ROWS,
) -> ViewIndex:
    """An empty index of one view for `backend`; `client` and `collection` (which must
    exist) where Milvus answers, `spill_dir` where vectors are held in process."""
    if not backend.in_milvus:
        return VectorIndex(dim, params, spill_dir)
    server = ServerViewIndex(client, collection, dim, params)
    if backend.hot_sessions:
        return HybridViewIndex(server, VectorIndex(dim, params), hot_rows)
    return server
