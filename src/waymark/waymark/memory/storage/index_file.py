# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The file an in-process vector index is saved to, so an open loads it instead of
reading every vector back from the database.

Body (checked_file adds the magic and a checksum trailer): header length, JSON header,
the metadata sections, the fp32 vectors where the index holds codes, the faiss graph if
there is one, then the session codes. A file built for another dim, graph shape or vector
codes is not used: the caller rebuilds from the database.
"""

from __future__ import annotations

import json
import logging
import struct
from dataclasses import asdict
from pathlib import Path

import faiss
import numpy as np

from waymark.memory.storage.checked_file import CheckedWriter, checked_body, write_checked
from waymark.memory.storage.index_params import FP32, SQ8, IndexParams
from waymark.memory.storage.index_state import ADD_CHUNK, State
from waymark.memory.storage.row_vectors import RowVectors
from waymark.memory.storage.session_codes import SessionCodes

_LOG = logging.getLogger(__name__)

_MAGIC = b'WAYMARK-VECTOR-INDEX\n'
_FORMAT = 3
_READABLE_FORMATS = (1, 2, 3)
_HEADER_LEN = struct.Struct('<Q')
_MAX_HEADER = 1 << 28


def save_state(path: Path, state: State, dim: int, params: IndexParams, codes: str) -> int:
    """Write `state` to `path` atomically (temporary file, fsync, rename); returns where
    in the file the fp32 vectors start."""
    starts: list[int] = []
    write_checked(
        path, _MAGIC, lambda checked: starts.append(_write(state, dim, params, codes, checked))
    )
    return starts[0]


def _write(state: State, dim: int, params: IndexParams, codes: str, checked: CheckedWriter) -> int:
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
        'dim': dim,
        'hnsw_m': params.hnsw_m,
        'ef_construction': params.ef_construction,
        'vector_codes': codes,
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
        for _, array in state.parts(dim):
            for offset in range(0, len(array), ADD_CHUNK):
                checked.write(np.ascontiguousarray(array[offset : offset + ADD_CHUNK]))
    if state.graph is not None:
        writer = faiss.PyCallbackIOWriter(checked.write)
        faiss.write_index(state.graph, writer)
        del writer
    if state.coded is not None:
        state.coded.write(checked.write)
    return vectors_start


def read_state(
    path: Path, dim: int, params: IndexParams, codes: str, spill_dir: Path | None
) -> State | None:
    """The state saved at `path`; None when it was built for another shape. Raises
    (OSError, ValueError, ...) when the file is damaged."""
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
        wanted = {'dim': dim, **asdict(params), 'vector_codes': codes}
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
            stream.seek(start + count * dim * 4)
            if stream.tell() > len(_MAGIC) + body:
                raise ValueError('vectors run past the body')
            base = np.memmap(path, '<f4', 'r', offset=start, shape=(count, dim))
            exact = RowVectors(dim, spill_dir, base if count else None)
        graph = None
        if header['graph']:
            graph = faiss.read_index(faiss.PyCallbackIOReader(stream.read))
        coded = None
        if header.get('session_codes'):  # format 3
            coded = SessionCodes.read(stream, dim, arrays['codes'], len(header['sessions']))
        if stream.tell() != len(_MAGIC) + body:
            raise ValueError('index does not end where the trailer starts')
    # read_index hands back the owning object, already of its concrete class.
    state = _state_from(dim, params, codes, header, count, arrays, graph, exact)
    state.coded = coded
    return state


def _state_from(
    dim: int,
    params: IndexParams,
    vector_codes: str,
    header: dict,
    count: int,
    arrays: dict[str, np.ndarray],
    graph: faiss.Index | None,
    exact: RowVectors | None,
) -> State:
    """Check the parts against each other and assemble the search state."""
    if graph is None:
        if exact is None:
            raise ValueError('neither a graph nor fp32 vectors')
    else:
        _check_graph(graph, count, dim, params, vector_codes)
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
    state = State(
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


def _check_graph(graph: faiss.Index, count: int, dim: int, params: IndexParams, codes: str) -> None:
    expected = {FP32: faiss.IndexHNSWFlat, SQ8: faiss.IndexHNSWSQ}.get(codes)
    if expected is None:
        raise ValueError(f'{codes} indexes hold no graph')
    if not isinstance(graph, expected):
        raise ValueError(f'graph is a {type(graph).__name__}, expected {expected.__name__}')
    if (
        graph.d != dim
        or graph.metric_type != faiss.METRIC_INNER_PRODUCT
        or graph.ntotal != count
        or graph.hnsw.nb_neighbors(1) != params.hnsw_m
    ):
        raise ValueError('graph does not match its header')
    if expected is faiss.IndexHNSWSQ:
        quantiser = faiss.downcast_index(graph.storage).sq
        if quantiser.qtype != faiss.ScalarQuantizer.QT_8bit:
            raise ValueError('graph codes are not sq8')
    graph.hnsw.efConstruction = params.ef_construction
