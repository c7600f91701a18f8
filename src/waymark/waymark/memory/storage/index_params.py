# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""How a view's vectors are indexed: in process (VectorIndex) and on a Milvus server.

One dataclass for both, because a memory's parameters choose them together and a saved
in-process index is only reused under the graph shape it was built with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from waymark.settings import setting

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


def server_index_spec(params: IndexParams) -> tuple[str, dict]:
    """The Milvus index (type, build parameters) a new view collection gets where Milvus
    answers the searches."""
    if params.server_index == HNSW:
        return HNSW, {'M': params.hnsw_m, 'efConstruction': params.ef_construction}
    # SCANN keeps the raw vectors for re-ranking by default; Milvus 2.3 refuses an
    # explicit with_raw_data, which the client sends as a string.
    return params.server_index, {'nlist': params.ivf_nlist}
