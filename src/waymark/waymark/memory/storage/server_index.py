# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Vector search of one view answered by Milvus itself (`search_backend: milvus`).

The in-process VectorIndex holds every vector in memory_node's RAM and sees only what
this process wrote. Searching in Milvus instead keeps memory_node small whatever the
memory's size, lets several writers share one memory, and scales with the server (a
cluster shards it). The collection carries an HNSW, IVF or SCANN index
(`IndexParams.server_index` when it was made; searches read which from Milvus); the session
and the index range are a filter on scalar fields.

Writes go to Milvus before they reach this class (MemoryStore writes the source of truth
first), so its writing methods only keep the same interface as VectorIndex.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import numpy as np
from pymilvus import MilvusClient

from waymark.memory.storage.index_params import HNSW, SCANN, IndexParams
from waymark.memory.storage.scan import scan_collection
from waymark.memory.storage.vector_kernels import checked_query

# `id in [...]` lists are sent in batches of this many ids.
_ID_BATCH = 1024
# Milvus caps a query's offset + limit at 16384 rows.
_QUERY_LIMIT = 16384


class ServerViewIndex:
    """Cosine search over a Milvus view collection, with VectorIndex's interface."""

    def __init__(self, client: MilvusClient, collection: str, dim: int, params: IndexParams):
        self.client = client
        self.collection = collection
        self.dim = int(dim)
        self.params = params
        self.index = _vector_index(client, collection)

    def __len__(self) -> int:
        return self.count()

    def count(self, session: str | None = None) -> int:
        expression = '' if session is None else f'session == {json.dumps(session)}'
        rows = self.client.query(self.collection, filter=expression, output_fields=['count(*)'])
        return int(rows[0]['count(*)'])

    def present(self, ids: Iterable[str]) -> set[str]:
        """Which of `ids` have a row in this view."""
        wanted = list(dict.fromkeys(ids))
        found: set[str] = set()
        for start in range(0, len(wanted), _ID_BATCH):
            batch = wanted[start : start + _ID_BATCH]
            rows = self.client.query(
                self.collection, filter=f'id in {json.dumps(batch)}', output_fields=['id']
            )
            found.update(row['id'] for row in rows)
        return found

    def ids(self) -> set[str]:
        return {row['id'] for row in scan_collection(self.client, self.collection, ['id'])}

    def search(
        self,
        vector: np.ndarray,
        k: int,
        sessions: Sequence[str] | None = None,
        index_range: tuple[int, int] | None = None,
    ) -> list[tuple[str, float]]:
        """As VectorIndex.search: (id, cosine), best first, at most k."""
        query = checked_query(vector, k, self.dim)
        clauses = []
        if isinstance(sessions, str):
            sessions = [sessions]
        if sessions is not None:
            clauses.append(f'session in {json.dumps(list(sessions))}')
        if index_range is not None:
            first, last = (int(value) for value in index_range)
            if last < first:
                return []
            clauses.append(f'idx >= {first} and idx <= {last}')
        limit = min(int(k), _QUERY_LIMIT)
        found = self.client.search(
            self.collection,
            query.tolist(),
            limit=limit,
            filter=' and '.join(f'({clause})' for clause in clauses),
            search_params={'metric_type': 'COSINE', 'params': self._search_params(limit)},
            output_fields=[],
            # Strong waits a time tick (about 200 ms) on every search; Session still reads
            # this client's own writes, and other writers' within a tick.
            consistency_level='Session',
        )
        return [(hit['id'], float(hit['distance'])) for hit in found[0]]

    def _search_params(self, k: int) -> dict[str, int]:
        """HNSW: the in-process graph's breadth (never below k, as Milvus needs); IVF: the
        clusters to search, at most as many as there are; SCANN also re-ranks
        `scan_shortlist` candidates per 10 results on the raw vectors, as pq4 codes do in
        process, so its scores are exact cosines."""
        index_type = self.index.get('index_type', HNSW)
        if index_type == HNSW:
            return {'ef': max(int(k), self.params.ef_search)}
        nlist = int(self.index.get('nlist', self.params.ivf_nlist))
        params = {'nprobe': min(self.params.ivf_nprobe, nlist)}
        if index_type == SCANN:
            params['reorder_k'] = max(int(k), self.params.shortlist_for(k))
        return params

    # Milvus was written by the store already: nothing to mirror.
    def upsert(self, ids, sessions, indices, vectors) -> None:
        return None

    def remove(self, ids: Iterable[str]) -> int:
        return 0

    def remove_session(self, session: str) -> int:
        return 0


def _vector_index(client: MilvusClient, collection: str) -> dict:
    """How the collection's vector field is indexed (type and build parameters), as
    Milvus describes it; empty when it has no index yet."""
    for name in client.list_indexes(collection, field_name='vector'):
        return dict(client.describe_index(collection, name))
    return {}
