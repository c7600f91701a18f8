# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Reading a whole Milvus collection in batches, for every store that mirrors one."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

from pymilvus import MilvusClient

READ_BATCH = 4096
QUERY_LIMIT = 16384  # most rows one Milvus query returns


def scan_batches(
    client: MilvusClient, name: str, fields: Sequence[str], expression: str = ''
) -> Iterator[list[dict]]:
    """Every row of a collection (that `expression` keeps, when given) with `fields`, a
    batch of READ_BATCH rows at a time: a caller that folds each batch in holds one batch,
    not the collection (a million rows as dicts of floats are gigabytes)."""
    # Milvus Lite has no MVCC timestamp to give; pymilvus warns once per scan and then
    # reads consistently anyway, which is all a scan at open needs.
    logging.getLogger('pymilvus.client.iterator.query_iterator').setLevel(logging.ERROR)
    iterator = client.query_iterator(
        name, batch_size=READ_BATCH, filter=expression, output_fields=list(fields)
    )
    try:
        while batch := iterator.next():
            yield batch
    finally:
        iterator.close()


def scan_collection(
    client: MilvusClient, name: str, fields: Sequence[str], expression: str = ''
) -> Iterator[dict]:
    """Every row of a collection (that `expression` keeps, when given) with `fields`."""
    for batch in scan_batches(client, name, fields, expression):
        yield from batch


def read_rows(
    client: MilvusClient, name: str, fields: Sequence[str], expression: str = ''
) -> list[dict]:
    """The rows `expression` keeps, with `fields`: one query when they are fewer than
    QUERY_LIMIT (an iterator spends a query of its own setting up, a third of a second
    on a server), else read in batches."""
    rows = client.query(name, filter=expression, output_fields=list(fields), limit=QUERY_LIMIT)
    if len(rows) < QUERY_LIMIT:
        return list(rows)
    return list(scan_collection(client, name, fields, expression))
