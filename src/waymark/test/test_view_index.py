# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The ViewIndex protocol and the one place a search backend's name is resolved."""

from __future__ import annotations

import inspect

import pytest

from waymark.memory.storage.hybrid_index import HybridViewIndex
from waymark.memory.storage.index_params import SCANN, IndexParams
from waymark.memory.storage.server_index import ServerViewIndex
from waymark.memory.storage.vector_index import VectorIndex
from waymark.memory.storage.view_index import (
    AUTO,
    IN_MILVUS,
    IN_PROCESS,
    SEARCH_BACKENDS,
    ViewIndex,
    make_view_index,
    resolve_backend,
)


def _protocol_methods() -> list[str]:
    return [
        name
        for name, member in vars(ViewIndex).items()
        if callable(member) and (not name.startswith('_') or name == '__len__')
    ]


@pytest.mark.parametrize('kind', [VectorIndex, ServerViewIndex, HybridViewIndex])
def test_every_view_index_takes_the_protocols_parameters(kind):
    assert _protocol_methods()  # the protocol names its methods
    for name in _protocol_methods():
        wanted = list(inspect.signature(getattr(ViewIndex, name)).parameters)
        assert list(inspect.signature(getattr(kind, name)).parameters) == wanted, name


def test_each_backend_name_resolves_to_what_it_entails():
    resolved = {name: resolve_backend(name) for name in SEARCH_BACKENDS}
    assert {name: (b.in_milvus, b.hot_sessions, b.mirrored) for name, b in resolved.items()} == {
        IN_PROCESS: (False, False, True),
        IN_MILVUS: (True, False, False),
        AUTO: (True, True, False),
    }
    assert resolved[IN_PROCESS].collection_index(IndexParams()) == ('FLAT', {})
    assert resolved[IN_MILVUS].collection_index(IndexParams())[0] == 'HNSW'


def test_an_unknown_backend_is_refused_by_name():
    with pytest.raises(ValueError, match=r"search_backend must be one of .* got 'gpu'"):
        resolve_backend('gpu')


def test_scann_refuses_odd_views_only_where_milvus_searches():
    scann = IndexParams(server_index=SCANN)
    resolve_backend(IN_PROCESS).check_dims(scann, [('text', 3)])
    with pytest.raises(ValueError, match='even dimension'):
        resolve_backend(AUTO).check_dims(scann, [('text', 3), ('image', 4)])


def test_the_in_process_backend_makes_an_empty_vector_index(tmp_path):
    index = make_view_index(resolve_backend(IN_PROCESS), 8, IndexParams(), spill_dir=tmp_path)
    assert isinstance(index, VectorIndex) and len(index) == 0 and index.dim == 8
