# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Vector search of one view split by how hot a session is (`search_backend: auto`).

Milvus (a ServerViewIndex) holds and answers for every row; the sessions this process is
writing, which are the ones a robot asks about most ("where did I just see..."), are also
kept in process, in a VectorIndex, up to `hot_rows` rows. A search limited to sessions
that are all hot is answered in process (sub-millisecond to a few ms); any other search
goes to Milvus. Past the budget the least recently written sessions leave the process
(Milvus still has them), so memory_node's RAM stays bounded whatever the memory's size.

A session counts as hot only when the process holds all of it: one that already had rows
in Milvus when this process first wrote to it (a continued session) is never answered in
process, so a hot answer is always the whole answer.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

from waymark.memory.storage.server_index import ServerViewIndex
from waymark.memory.storage.vector_index import VectorIndex

DEFAULT_HOT_ROWS = 200_000


class HybridViewIndex:
    """Cosine search over a Milvus view collection with the hot sessions in process;
    VectorIndex's interface (writes go to Milvus before they reach this class)."""

    def __init__(self, server: ServerViewIndex, hot: VectorIndex, hot_rows: int) -> None:
        if isinstance(hot_rows, bool) or not 0 <= int(hot_rows) <= 10**9:
            raise ValueError(f'hot_rows must be in [0, 1e9], got {hot_rows!r}')
        self.server = server
        self.hot = hot
        self.hot_rows = int(hot_rows)
        self.dim = server.dim
        # Sessions held whole in process, least recently written first.
        self._complete: OrderedDict[str, None] = OrderedDict()
        # Sessions Milvus had rows of before this process wrote to them: never hot.
        self._partial: set[str] = set()

    # -- reading: Milvus is the whole truth ----------------------------------------------

    def __len__(self) -> int:
        return len(self.server)

    def count(self, session: str | None = None) -> int:
        return self.server.count(session)

    def present(self, ids: Iterable[str]) -> set[str]:
        return self.server.present(ids)

    def ids(self) -> set[str]:
        return self.server.ids()

    def hot_sessions(self) -> list[str]:
        """The sessions searches answer in process, least recently written first."""
        return list(self._complete)

    def search(
        self,
        vector: np.ndarray,
        k: int,
        sessions: Sequence[str] | None = None,
        index_range: tuple[int, int] | None = None,
    ) -> list[tuple[str, float]]:
        """As VectorIndex.search; in process when every session named is hot."""
        if isinstance(sessions, str):
            sessions = [sessions]
        if sessions and all(session in self._complete for session in sessions):
            return self.hot.search(vector, k, sessions, index_range)
        return self.server.search(vector, k, sessions, index_range)

    # -- writing -------------------------------------------------------------------------

    def upsert(
        self,
        ids: Sequence[str],
        sessions: Sequence[str],
        indices: Sequence[int],
        vectors: np.ndarray,
    ) -> None:
        """Mirror rows Milvus was just given into the process, for sessions that are (or
        now become) hot; then keep the process within `hot_rows`."""
        if self.hot_rows == 0:
            return
        keep = []
        for position, session in enumerate(sessions):
            if session in self._partial:
                continue
            if session not in self._complete:
                # Rows of it in Milvus beyond these: it was written before, not by us.
                earlier = self.server.count(session) - sessions.count(session)
                if earlier > 0:
                    self._partial.add(session)
                    continue
                self._complete[session] = None
            self._complete.move_to_end(session)
            keep.append(position)
        if keep:
            self.hot.upsert(
                [ids[i] for i in keep],
                [sessions[i] for i in keep],
                [indices[i] for i in keep],
                np.asarray(vectors)[keep],
            )
        self._evict(protect=set(sessions))

    def remove(self, ids: Iterable[str]) -> int:
        return self.hot.remove(ids)

    def remove_session(self, session: str) -> int:
        self._complete.pop(session, None)
        self._partial.discard(session)
        return self.hot.remove_session(session)

    def _evict(self, protect: set[str]) -> None:
        """Least recently written sessions out of the process until within `hot_rows`
        (the sessions just written stay, even past the budget)."""
        for session in list(self._complete):
            if len(self.hot) <= self.hot_rows:
                return
            if session in protect:
                continue
            del self._complete[session]
            self._partial.add(session)  # its rows in Milvus are no longer all here
            self.hot.remove_session(session)
