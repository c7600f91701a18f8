# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`python -m waymark bench {ingest,search,storage,planner,scans,photo_match,all}`: run
benchmarks, print their tables, write `<out>/<benchmark>.json`."""

from __future__ import annotations

import importlib
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path

from waymark.benchmarks.common import write_json
from waymark.cli import ArgumentParser, UsageError, add_output_flags, fail
from waymark.memory.storage.index_params import HNSW, SERVER_INDEXES, SQ8, VECTOR_CODES

BENCHMARKS = ('ingest', 'search', 'storage', 'planner', 'scans', 'photo_match')


def check_results(out: Path, chosen: Sequence[str], overwrite: bool) -> None:
    """UsageError when `out` is not a folder, or holds results of `chosen` and
    `overwrite` was not asked for."""
    if out.exists() and not out.is_dir():
        raise UsageError(f'{out} exists and is not a folder')
    there = [f'{name}.json' for name in chosen if (out / f'{name}.json').exists()]
    if there and not overwrite:
        raise UsageError(f'{out} already holds {", ".join(there)}: --overwrite to replace')


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(
        prog='waymark bench',
        description='Measure ingest rate, search latency and recall, and storage of memory, '
        "the navigation planner, the scan-by-scan map, and the photo matcher's calibration.",
    )
    parser.add_argument('benchmark', choices=[*BENCHMARKS, 'all'])
    parser.add_argument(
        '--sizes',
        type=int,
        nargs='+',
        help='entries for the search benchmark (default 10000 100000 1000000; '
        'sizes above 100000 use the in-process indexes without Milvus)',
    )
    parser.add_argument(
        '--backends',
        nargs='+',
        choices=('store', 'server'),
        default=['store'],
        help='search benchmark: store (in-process search, the default) and/or server '
        '(a local Milvus server answers; needs the `milvus` package)',
    )
    parser.add_argument(
        '--server-uri',
        default='',
        help='search benchmark, server backend: a running Milvus server to use (its '
        'waymark_bench_* collections) instead of starting a local one',
    )
    parser.add_argument(
        '--server-index',
        choices=SERVER_INDEXES,
        default=HNSW,
        help='search benchmark, server backend: the vector index of the view collections',
    )
    parser.add_argument(
        '--server-nprobe',
        type=int,
        nargs='+',
        default=[],
        metavar='N',
        help='search benchmark, server backend with an IVF index: time the searches once '
        'per value of index.ivf_nprobe on the same build (default: the setting)',
    )
    parser.add_argument(
        '--vector-codes',
        choices=VECTOR_CODES,
        default=SQ8,
        help='search benchmark, sizes above 100k (indexes timed directly): the vector codes '
        'of the in-process indexes',
    )
    parser.add_argument(
        '--sim-minutes',
        type=float,
        help='scans benchmark: simulated minutes of 10 Hz scans (default 30; --quick 0.5)',
    )
    parser.add_argument('--out', type=Path, default=Path('bench_output'))
    parser.add_argument('--quick', action='store_true', help='tiny sizes, for a smoke test')
    add_output_flags(parser, resume=False)
    args = parser.parse_args(argv)
    if args.sizes and min(args.sizes) < 20:
        parser.error('--sizes: at least 20 entries (one per session)')
    if args.server_nprobe and (args.server_index == HNSW or min(args.server_nprobe) < 1):
        parser.error('--server-nprobe: values >= 1, with an IVF --server-index')
    chosen = BENCHMARKS if args.benchmark == 'all' else (args.benchmark,)
    try:
        check_results(args.out, chosen, args.overwrite)
    except UsageError as error:
        return fail(parser.prog, error)
    # Models load from disk only; tokenizers' worker threads would fight the timed work.
    for key, value in (
        ('HF_HUB_OFFLINE', '1'),
        ('TRANSFORMERS_OFFLINE', '1'),
        ('TOKENIZERS_PARALLELISM', 'false'),
    ):
        os.environ.setdefault(key, value)
    # pymilvus warns on every read of Milvus Lite (no server timestamp); it is noise here.
    logging.getLogger('pymilvus').setLevel(logging.ERROR)
    for name in chosen:
        module = importlib.import_module(f'waymark.benchmarks.{name}')
        started = time.perf_counter()
        load = os.getloadavg()
        kwargs = {}
        if name == 'scans':
            kwargs = {'sim_minutes': args.sim_minutes}
        if name == 'search':
            kwargs = {
                'sizes': args.sizes,
                'backends': args.backends,
                'server_uri': args.server_uri,
                'server_index': args.server_index,
                'server_nprobes': args.server_nprobe,
                'vector_codes': args.vector_codes,
            }
        result = module.run(quick=args.quick, **kwargs)
        result['wall_s'] = time.perf_counter() - started
        # Other processes on the machine slow every number down: keep the load with them.
        result['machine'] = {
            'cpus': os.cpu_count(),
            'load_average_1min': {'start': load[0], 'end': os.getloadavg()[0]},
        }
        path = write_json(args.out / f'{name}.json', result)
        print(module.render(result))
        machine = result['machine']
        print(
            f'[{name}: {result["wall_s"]:.0f} s, {path}; load average '
            f'{load[0]:.1f} at start, {machine["load_average_1min"]["end"]:.1f} at end, '
            f'{machine["cpus"]} CPUs]\n',
            flush=True,
        )
    return 0
