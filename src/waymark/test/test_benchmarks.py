# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Smoke test of the benchmarks: `bench all --quick` runs through the CLI and writes the
JSON documented in each module, with sane values. Nothing is timed against a bound: a
busy machine is slow, not wrong."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from waymark import __main__ as cli

BENCHMARKS = ('ingest', 'search', 'storage')
VIEW_MODES = {'text', 'image', 'index_range'}
MODES = VIEW_MODES | {'time', 'position', 'range'}


@pytest.fixture(scope='module')
def results(tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp('bench')
    argv = ['waymark', 'bench', 'all', '--quick', '--out', str(out)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, 'argv', argv)
        assert cli.main() == 0
    return {name: json.loads((Path(out) / f'{name}.json').read_text()) for name in BENCHMARKS}


def check_latency(stats: dict) -> None:
    assert stats['n'] > 0
    assert 0 <= stats['p50_ms'] <= stats['p95_ms']
    assert stats['mean_ms'] >= 0


def test_ingest_times_every_view_configuration(results):
    ingest = results['ingest']
    assert ingest['benchmark'] == 'ingest' and ingest['quick'] is True
    configs = {c['name']: c for c in ingest['configs']}
    assert list(configs) == ['text', 'image', 'both', 'both+segments']
    for config in configs.values():
        assert config['keyframes'] == ingest['settings']['keyframes_timed'] > 0
        for part in ('prepare', 'commit', 'total'):
            check_latency(config[part])
        assert config['keyframes_per_s'] > 0 and config['pipelined_keyframes_per_s'] > 0
        assert config['prepare_workers'] == 2
        assert config['sustains_5_per_s'] == (config['pipelined_keyframes_per_s'] >= 5.0)
    assert configs['both+segments']['segments'] > 0
    assert configs['both']['segments'] == 0
    assert configs['image']['frames_with_text'] == 0
    inserts = {r['batch']: r for r in ingest['db_insert']}
    assert set(inserts) == {1, 256}
    assert all(r['rows'] > 0 and r['rows_per_s'] > 0 for r in inserts.values())


def test_search_compares_every_mode_with_an_exact_scan(results):
    search = results['search']
    store_size, direct_size = search['sizes']
    assert 'MemoryStore' in store_size['backend'] and 'VectorIndex' in direct_size['backend']
    assert store_size['load_s'] >= 0 and store_size['insert_rows_per_s'] > 0
    crash = store_size['crash']  # the reopen after a crash refetched what the journal named
    assert crash['caught_up'] == crash['writes'] > 0
    assert crash['snapshot_open_s'] > 0 and crash['rebuild_open_s'] > 0
    for size in search['sizes']:
        assert {r['mode'] for r in size['results']} == MODES
        for row in size['results']:
            check_latency(row)
            if row['phase'] == 'idle':
                assert 0.0 <= row['recall_at_10'] <= 1.0
                assert row['exact_p50_ms'] >= 0
            else:
                assert row['phase'] == 'writing' and row['writes'] >= 0
            if row['mode'] not in VIEW_MODES and row['phase'] == 'idle':
                # Time, position and range searches are exact: they agree with numpy.
                assert row['recall_at_10'] == pytest.approx(1.0)
        scopes = {(r['mode'], r['scope']) for r in size['results']}
        assert ('text', 'session') in scopes and ('index_range', 'range') in scopes
    milvus = store_size['milvus']
    assert {r['mode'] for r in milvus} == {'text', 'image'}
    for row in milvus:
        check_latency(row)
        assert 0.0 <= row['recall_at_10'] <= 1.0
    assert search['targets']['p50_ms']['entries'] == direct_size['entries']  # the largest <= 100k
    assert set(direct_size['snapshot']) == {'records', 'text', 'image'}  # saved, loaded whole
    assert direct_size['concurrent_load_s'] > 0  # and all three again, side by side
    for name, part in direct_size['snapshot'].items():
        assert part['bytes'] > 0 and part['load_s'] > 0 and 'anon_rss_bytes' in part
        if name != 'records':  # searched once loaded, from the file's mapped vectors
            assert part['searched_file_rss_bytes'] >= 0
    assert 0.0 <= search['targets']['recall_at_10']['worst'] <= 1.0


def test_storage_reports_bytes_per_entry_and_compression(results):
    storage = results['storage']
    configs = {c['name']: c for c in storage['configs']}
    assert list(configs) == ['default', 'full']
    for config in configs.values():
        assert config['frames'] == storage['settings']['keyframes'] > 0
        assert config['image_bytes'] > 0 and config['db_bytes'] >= config['empty_db_bytes'] > 0
        assert config['bytes_per_entry'] > 0 and config['bytes_per_hour'] > 0
        assert config['compression_ratio'] > 1
    assert configs['full']['segments'] > 0 and configs['default']['segments'] == 0


@pytest.mark.milvus_server
def test_search_through_a_milvus_server_reports_every_mode(milvus_uri):
    from waymark.benchmarks import search

    result = search.run(quick=True, sizes=[300], backends=['server'], server_uri=milvus_uri)

    (size,) = result['sizes']
    assert 'Milvus server' in size['backend'] and size['insert_rows_per_s'] > 0
    assert size['index_s'] >= 0 and size['open_s'] > 0
    assert {r['mode'] for r in size['results']} == MODES
    for row in size['results']:
        check_latency(row)
        if row['phase'] == 'idle':
            assert 0.0 <= row['recall_at_10'] <= 1.0
    exact = [r for r in size['results'] if r['phase'] == 'idle' and r['mode'] not in VIEW_MODES]
    assert all(r['recall_at_10'] == pytest.approx(1.0) for r in exact)
    assert 'Milvus server' in search.render(result)


@pytest.mark.milvus_server
def test_search_through_a_milvus_server_times_each_ivf_nprobe_on_one_build(milvus_uri):
    from waymark.benchmarks import search

    result = search.run(
        quick=True,
        sizes=[300],
        backends=['server'],
        server_uri=milvus_uri,
        server_index='IVF_SQ8',
        server_nprobes=[1, 16],
    )

    first, second = result['sizes']
    assert first['backend'].endswith('(IVF_SQ8, nprobe 1)')
    assert second['backend'].endswith('(IVF_SQ8, nprobe 16)')
    assert first['insert_s'] == second['insert_s'] and first['index_s'] == second['index_s']
    for size in (first, second):
        assert {r['mode'] for r in size['results']} == MODES and size['open_s'] > 0
    with pytest.raises(ValueError, match='not HNSW'):
        search.run(quick=True, sizes=[300], backends=['server'], server_nprobes=[8])
