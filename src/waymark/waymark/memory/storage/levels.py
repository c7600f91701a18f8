# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""One level of a store (frames, segments or places): its Milvus collections and the
in-process record table and view indexes that answer its searches."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from waymark.memory.storage.record_table import RecordTable
from waymark.memory.storage.view_index import ViewIndex


@dataclass
class Level:
    """`views` and `dims` by view name: its collection and width. `indexes` is filled once
    the collections exist (a Milvus-backed index reads its collection's index)."""

    records: str
    views: dict[str, str]
    dims: dict[str, int]
    table: RecordTable = field(default_factory=RecordTable)
    indexes: dict[str, ViewIndex] = field(default_factory=dict)

    @classmethod
    def named(cls, records: str, view_prefix: str, dims: Mapping[str, int]) -> Level:
        return cls(
            records=records,
            views={name: f'{view_prefix}_{name}' for name in dims},
            dims={name: int(dim) for name, dim in dims.items()},
        )


def table_key(level: str) -> str:
    """A level's record table among the saved parts (view indexes are `level/view`)."""
    return f'{level}/records'
