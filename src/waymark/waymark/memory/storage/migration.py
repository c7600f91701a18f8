# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Bringing a records collection made by an older waymark up to the current schema.

Fields added since the first schema (the sighting, the write stamp) are filled with what
an old row means: no sighting, written before stamps existed. A Milvus server (2.6 and
later) adds a nullable field in place. Milvus Lite and older servers cannot, so the rows
are copied into a collection with the current schema, which then takes the old one's name.
The old collection is dropped only once the copy holds every row, and a copy left by an
interrupted migration is finished (renamed) or redone on the next open: nothing is lost.
"""

from __future__ import annotations

import logging

from pymilvus import DataType, MilvusClient

from waymark.memory.storage.errors import MemoryStoreError
from waymark.memory.storage.milvus_rows import WRITE_BATCH
from waymark.memory.storage.scan import scan_collection
from waymark.memory.storage.schema import (
    RECORD_FIELDS,
    SIGHTING_FIELD,
    SIGHTING_MAX_BYTES,
    WRITTEN_FIELD,
    check_schema,
    ensure_collection,
    records_fields,
)

_LOG = logging.getLogger(__name__)

# Each added field: its value in an old row, and how a server adds it in place.
_ADDED_FIELDS = {
    SIGHTING_FIELD: ('', {'data_type': DataType.VARCHAR, 'max_length': SIGHTING_MAX_BYTES}),
    WRITTEN_FIELD: (0, {'data_type': DataType.INT64}),
}


def add_missing_fields(client: MilvusClient, name: str, partition_key: bool) -> None:
    """Give a records collection made before some fields existed those fields."""
    staging = f'{name}_migrating'
    if not client.has_collection(name):
        if client.has_collection(staging):  # stopped after the old was dropped
            client.rename_collection(staging, name)
        return
    present = {item['name'] for item in client.describe_collection(name).get('fields', [])}
    missing = [field for field in _ADDED_FIELDS if field not in present]
    if not missing:
        return
    old_fields = [f for f in records_fields(partition_key) if f.name not in missing]
    check_schema(name, old_fields, client.describe_collection(name))
    try:
        for field in missing:
            client.add_collection_field(
                name, field_name=field, nullable=True, **_ADDED_FIELDS[field][1]
            )
            _LOG.info('added the %s field to collection %s', field, name)
        return
    except Exception as error:  # Milvus Lite answers with a bare gRPC error, UNIMPLEMENTED
        _LOG.info('cannot add a field in place (%s); copying %s', error, name)
    present = {item['name'] for item in client.describe_collection(name).get('fields', [])}
    _copy_with_fields(client, name, staging, partition_key, present)


def _copy_with_fields(
    client: MilvusClient, name: str, staging: str, partition_key: bool, present: set[str]
) -> None:
    if client.has_collection(staging):  # a copy that stopped half way
        client.drop_collection(staging)
    ensure_collection(client, staging, records_fields(partition_key), 'planar', 'L2', load=False)
    client.load_collection(staging)
    client.load_collection(name)
    defaults = {field: value for field, (value, _) in _ADDED_FIELDS.items() if field not in present}
    copied, batch = 0, []
    fields = [*(f for f in RECORD_FIELDS if f not in defaults), 'planar']
    for row in scan_collection(client, name, ['id', *fields]):
        batch.append(row | defaults)
        if len(batch) == WRITE_BATCH:
            client.insert(staging, batch)
            copied, batch = copied + len(batch), []
    if batch:
        client.insert(staging, batch)
        copied += len(batch)
    held = client.query(staging, filter='', output_fields=['count(*)'])
    if int(held[0]['count(*)']) != copied:
        raise MemoryStoreError(
            f'migrating {name!r}: the copy holds {held[0]["count(*)"]} of {copied} rows; '
            'the original is kept unchanged'
        )
    client.drop_collection(name)
    client.rename_collection(staging, name)
    _LOG.warning(
        'collection %s: %d records copied to add the fields %s', name, copied, sorted(defaults)
    )
