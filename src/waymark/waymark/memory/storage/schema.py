# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The memory's Milvus collections: their fields, and opening one that must match them.

Field sizes are limits Milvus enforces on every write, so they live beside the fields
that the rows (milvus_rows) are cut to fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pymilvus import DataType, MilvusClient

from waymark.memory.entries import ROBOT_MAX_BYTES
from waymark.memory.storage.errors import MemoryStoreSchemaError
from waymark.memory.storage.sighting_codec import SIGHTING_MAX_BYTES

ID_MAX_BYTES = 96
SESSION_MAX_BYTES = 64
IMAGE_REF_MAX_BYTES = 256
TEXT_MAX_BYTES = 2048
SIGHTING_FIELD = 'sighting'
# The writer's clock when it wrote the row (nanoseconds, never decreasing per writer): other
# robots' stores catch up on what changed after the newest stamp they had read.
WRITTEN_FIELD = 'written_ns'

RECORD_FIELDS = (
    'session',
    'idx',
    'stamp_ns',
    'end_ns',
    'x',
    'y',
    'z',
    'yaw',
    'map_epoch',
    'pose_valid',
    'image_ref',
    'text',
    'text_size',
    SIGHTING_FIELD,
    WRITTEN_FIELD,
)


@dataclass(frozen=True)
class FieldSpec:
    """One field of a collection: what `ensure_collection` creates or checks."""

    name: str
    dtype: DataType
    params: dict = field(default_factory=dict)
    primary: bool = False
    partition_key: bool = False


def _session_field(partition_key: bool) -> FieldSpec:
    return FieldSpec(
        'session', DataType.VARCHAR, {'max_length': SESSION_MAX_BYTES}, partition_key=partition_key
    )


def records_fields(partition_key: bool = True) -> list[FieldSpec]:
    return [
        FieldSpec('id', DataType.VARCHAR, {'max_length': ID_MAX_BYTES}, primary=True),
        _session_field(partition_key),
        FieldSpec('idx', DataType.INT64),
        FieldSpec('stamp_ns', DataType.INT64),
        FieldSpec('end_ns', DataType.INT64),
        # Doubles, so a record reads back exactly as it was written.
        FieldSpec('x', DataType.DOUBLE),
        FieldSpec('y', DataType.DOUBLE),
        FieldSpec('z', DataType.DOUBLE),
        FieldSpec('yaw', DataType.DOUBLE),
        FieldSpec('map_epoch', DataType.INT64),
        FieldSpec('pose_valid', DataType.BOOL),
        FieldSpec('image_ref', DataType.VARCHAR, {'max_length': IMAGE_REF_MAX_BYTES}),
        FieldSpec('text', DataType.VARCHAR, {'max_length': TEXT_MAX_BYTES}),
        FieldSpec('text_size', DataType.DOUBLE),
        # What target localisation needs (camera, text boxes, depth samples) as JSON; ''
        # for none. Added to databases made before it when they are opened.
        FieldSpec(SIGHTING_FIELD, DataType.VARCHAR, {'max_length': SIGHTING_MAX_BYTES}),
        # Added to databases made before it when they are opened (0: written before).
        FieldSpec(WRITTEN_FIELD, DataType.INT64),
        # Milvus requires a vector field in every collection; the planar position is the
        # natural one and lets a Milvus server answer range queries on its own.
        FieldSpec('planar', DataType.FLOAT_VECTOR, {'dim': 2}),
    ]


def owner_fields() -> list[FieldSpec]:
    """One row per session: the robot that owns it (session_owners)."""
    return [
        FieldSpec('id', DataType.VARCHAR, {'max_length': SESSION_MAX_BYTES}, primary=True),
        FieldSpec('robot', DataType.VARCHAR, {'max_length': ROBOT_MAX_BYTES}),
        FieldSpec('claimed_ns', DataType.INT64),
        FieldSpec('planar', DataType.FLOAT_VECTOR, {'dim': 2}),  # Milvus needs a vector
    ]


def view_fields(dim: int, partition_key: bool = True) -> list[FieldSpec]:
    return [
        FieldSpec('id', DataType.VARCHAR, {'max_length': ID_MAX_BYTES}, primary=True),
        _session_field(partition_key),
        FieldSpec('idx', DataType.INT64),
        FieldSpec('vector', DataType.FLOAT_VECTOR, {'dim': dim}),
        # The text the vector was made from, where it is not the record's (captions).
        FieldSpec('text', DataType.VARCHAR, {'max_length': TEXT_MAX_BYTES}),
    ]


def ensure_collection(
    client: MilvusClient,
    name: str,
    fields: list[FieldSpec],
    vector_field: str,
    metric: str,
    load: bool = True,
    index: tuple[str, dict] = ('FLAT', {}),
) -> None:
    """Open a collection, creating it (and its index) on the way; one that exists must
    have `fields` exactly, but for whether the session is a partition key
    (MemoryStoreSchemaError says how it differs). `load` False leaves loading to the
    caller (`load_collections`). `index` (type, parameters) is the vector index a new
    collection gets; an existing one keeps its own."""
    if client.has_collection(name):
        check_schema(name, fields, client.describe_collection(name))
    else:
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
        for spec in fields:
            schema.add_field(
                spec.name,
                spec.dtype,
                is_primary=spec.primary,
                is_partition_key=spec.partition_key,
                **spec.params,
            )
        # Strong consistency: an entry is readable as soon as add() returns (a server's
        # default level lets reads miss the latest writes).
        client.create_collection(name, schema=schema, consistency_level='Strong')
    if vector_field not in set(client.list_indexes(name)):
        params = client.prepare_index_params()
        index_type, index_params = index
        params.add_index(
            vector_field, index_type=index_type, metric_type=metric, params=dict(index_params)
        )
        # Indexes on an empty collection are ready at once; skip pymilvus's 0.5 s polling.
        client.create_index(name, params, sync=False)
    if load:
        client.load_collection(name)


def load_collections(client: MilvusClient, names: Sequence[str]) -> None:
    """Load collections into the query nodes, all at once: a server takes seconds per new
    collection, and in parallel the whole store loads in about the time of one."""
    for name in names:
        client.load_collection(name, _async=True)
    for name in names:
        client.load_collection(name)  # waits for the load already under way


def check_schema(name: str, expected: list[FieldSpec], description: dict) -> None:
    actual = {item['name']: item for item in description.get('fields', [])}

    # Whether the session is a partition key is left out: both layouts read and write alike.
    def shape(spec_type, params, primary) -> str:
        sizes = ', '.join(f'{key}={int(value)}' for key, value in sorted(params.items()))
        return f'{DataType(spec_type).name}({sizes})' + ' primary' * bool(primary)

    problems = []
    for spec in expected:
        item = actual.pop(spec.name, None)
        want = shape(spec.dtype, spec.params, spec.primary)
        if item is None:
            problems.append(f'{spec.name}: missing, expected {want}')
            continue
        params = {key: item.get('params', {}).get(key) for key in spec.params}
        got = shape(
            item['type'],
            {key: value for key, value in params.items() if value is not None},
            item.get('is_primary', False),
        )
        if got != want:
            problems.append(f'{spec.name}: is {got}, expected {want}')
    problems.extend(f'{extra}: unexpected field' for extra in sorted(actual))
    if problems:
        raise MemoryStoreSchemaError(
            f'collection {name!r} does not match this version of waymark ('
            + '; '.join(problems)
            + "). A different embedding model changes a view's dim: use another "
            'memory prefix or database, or drop the collection.'
        )
