# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Reading whole collections from Milvus (Lite here): in bounded batches, every row once."""

from __future__ import annotations

from pathlib import Path

import pytest

from waymark.memory.storage.scan import QUERY_LIMIT, READ_BATCH, read_rows, scan_batches

ROWS = QUERY_LIMIT + 100  # more than one query may return


@pytest.fixture
def client(tmp_path):
    from milvus_lite.server_manager import server_manager_instance
    from pymilvus import MilvusClient

    lite_path = str(tmp_path / 'scan.db')
    client = MilvusClient(lite_path)
    client.create_collection(
        'rows', dimension=2, id_type='string', max_length=16, consistency_level='Strong'
    )
    rows = [{'id': f'r{i:05d}', 'vector': [1.0, float(i)], 'odd': i % 2} for i in range(ROWS)]
    for start in range(0, ROWS, 5000):
        client.insert('rows', rows[start : start + 5000])
    yield client
    client.close()
    server_manager_instance.release_server(str(Path(lite_path).resolve()))


def test_a_scan_hands_over_bounded_batches_holding_every_row_once(client):
    sizes, ids = [], []
    for batch in scan_batches(client, 'rows', ['id']):
        sizes.append(len(batch))
        ids += [row['id'] for row in batch]
    assert max(sizes) <= READ_BATCH and len(sizes) >= ROWS // READ_BATCH
    assert sorted(ids) == [f'r{i:05d}' for i in range(ROWS)]


def test_read_rows_reads_past_one_query_and_keeps_only_what_the_filter_keeps(client):
    every = read_rows(client, 'rows', ['id'])
    assert len({row['id'] for row in every}) == ROWS
    odd = read_rows(client, 'rows', ['id', 'odd'], 'odd == 1')
    assert len(odd) == ROWS // 2 and {row['odd'] for row in odd} == {1}
