# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node opening a large memory on a Milvus server, measured as one process.

    python -m waymark_ros.tools.memory_open --entries 100000 --out /tmp/open

A local Milvus server (or the one at `--server-uri`) is filled with `--entries` frames of
one robot (20 sessions, the text view memory_node keeps by default; synthetic clustered
vectors as in `python -m waymark bench search`). Once the server has settled (indexes
built, no compaction for a while: benchmarks.milvus_server), memory_node itself is
started for each search backend, with its view models, three times: with no snapshot
(it reads every record), after a clean close (its snapshot), and after another robot
wrote `--other-writes` entries to the same server (the snapshot, caught up on what that
robot stamped since). Each start is timed from launch to taking requests, and its
resident memory (VmRSS, and the peak, VmHWM) read from /proc; the store's own figures
come from memory_node's start-up line.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from waymark.benchmarks.common import table
from waymark.benchmarks.milvus_server import SETTLE_S, server_for, wait_until_idle
from waymark.benchmarks.search import make_layout, make_view
from waymark.memory.storage.store import MemoryStore
from waymark.memory.storage.view_index import AUTO, IN_MILVUS, IN_PROCESS, SEARCH_BACKENDS
from waymark.memory.views.text import TEXT_VIEW
from waymark_ros.tools.drill.stack import Stack
from waymark_ros.tools.processes import stop_node

PREFIX = 'waymark_open'
VIEWS = {TEXT_VIEW: 384}  # memory_node's default view: OCR text, MiniLM embeddings
OWN_ROBOT, OTHER_ROBOT = 'bench-own', 'bench-other'
INSERT_CHUNK = 4096
OTHER_WRITES = 10_000
START_TIMEOUT_S = 3600.0  # an in-process first open at 1M rebuilds every index
_READY = re.compile(
    r'indexes ready in (?P<load_s>[\d.]+) s: (?P<loaded>\d+) loaded from the last snapshot '
    r'with (?P<caught_up>\d+) later ids refetched and (?P<others>\d+) other robots wrote '
    r'since, (?P<rebuilt>\d+) rebuilt'
)
CASES = ('no snapshot', 'after a clean close', 'after another robot wrote')


def fill(uri: str, count: int, robot: str, sessions: str, seed: int) -> float:
    """Write `count` entries of `robot` in 20 sessions named `<sessions>NN`; seconds."""
    rng = np.random.default_rng(seed)
    layout = make_layout(count, rng)
    vectors = make_view(TEXT_VIEW, count, rng).vectors
    started = time.perf_counter()
    with MemoryStore(uri, VIEWS, prefix=PREFIX, search_backend=IN_MILVUS, robot=robot) as store:
        for first in range(0, count, INSERT_CHUNK):
            rows = range(first, min(first + INSERT_CHUNK, count))
            records = [
                dataclasses.replace(
                    layout.record(i), session=f'{sessions}{layout.session_of[i]:02d}'
                )
                for i in rows
            ]
            store.add_many(records, [{TEXT_VIEW: vectors[i]} for i in rows])
        store.flush()
    return time.perf_counter() - started


def open_node(stack: Stack, uri: str, backend: str, data_dir: Path) -> dict:
    """Start memory_node on the filled memory, time it until it takes requests, read its
    memory and its start-up line, and stop it cleanly (its close saves the snapshot)."""
    started = time.monotonic()
    node = stack.start(
        'memory_node',
        uri=uri,
        collection_prefix=PREFIX,
        search_backend=backend,
        data_dir=str(data_dir),
        robot_id=OWN_ROBOT,
    )
    stack.wait_ready('memory_node')
    ready_s = time.monotonic() - started
    rss_kb, peak_kb = stack.memory_kb('memory_node')
    found = _READY.search(node.log_tail(400))
    stop_node(node, timeout_s=600.0)
    result = {'ready_s': ready_s, 'rss_mib': rss_kb / 1024, 'peak_mib': peak_kb / 1024}
    if found:
        result |= {key: float(value) for key, value in found.groupdict().items()}
    return result


def run(
    entries: int,
    backends: Sequence[str],
    out: Path,
    server_uri: str = '',
    other_writes: int = OTHER_WRITES,
    settle_s: float = SETTLE_S,
    domain: int = 77,
) -> dict:
    result: dict = {'entries': entries, 'other_writes': other_writes, 'opens': []}
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        base = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix='waymark-open-')))
        server_uri = server_for(stack, base, server_uri, PREFIX)
        result['fill_s'] = fill(server_uri, entries, OWN_ROBOT, 's', seed=0)
        print(f'[memory_open] {entries:,} entries written in {result["fill_s"]:.0f} s', flush=True)
        result['settled'] = _settle(server_uri, settle_s)
        nodes = stack.enter_context(Stack(base / 'stack', domain, START_TIMEOUT_S))
        for number, backend in enumerate(backends):
            data_dir = base / f'data-{backend}'
            for case in CASES:
                if case == CASES[2]:
                    seconds = fill(server_uri, other_writes, OTHER_ROBOT, f'o{number}-', 1 + number)
                    result.setdefault('other_fill_s', []).append(seconds)
                    _settle(server_uri, settle_s)
                opened = open_node(nodes, server_uri, backend, data_dir)
                opened |= {'backend': backend, 'case': case}
                result['opens'].append(opened)
                print(f'[memory_open] {backend}, {case}: {_describe(opened)}', flush=True)
                # Written after every start: a run at 1M takes an hour, and what it measured
                # before an interruption still counts.
                (out / 'memory_open.json').write_text(json.dumps(result, indent=2))
    return result


def render(result: dict) -> str:
    rows = [
        [
            opened['backend'],
            opened['case'],
            opened['ready_s'],
            opened.get('load_s'),
            int(opened.get('others', 0)),
            int(opened.get('rebuilt', 0)),
            opened['rss_mib'],
            opened['peak_mib'],
        ]
        for opened in result['opens']
    ]
    title = (
        f'memory_node opening {result["entries"]:,} entries on a Milvus server '
        f'(another robot wrote {result["other_writes"]:,} before the last start)'
    )
    headers = ['backend', 'start', 'ready (s)', 'store load (s)', 'others read', 'rebuilt']
    headers += ['RSS (MiB)', 'peak (MiB)']
    return (
        table(title, headers, rows) + f'\nfilled in {result["fill_s"]:.0f} s; {result["settled"]}\n'
    )


def _describe(opened: dict) -> str:
    return (
        f'ready in {opened["ready_s"]:.1f} s (store {opened.get("load_s", float("nan")):.1f} s, '
        f'{int(opened.get("others", 0))} rows of others read), RSS {opened["rss_mib"]:.0f} MiB'
    )


def _settle(uri: str, settle_s: float) -> str:
    settled = wait_until_idle(uri, [f'{PREFIX}_view_{TEXT_VIEW}'], settle_s=settle_s)
    print(f'[memory_open] {settled.line()}', flush=True)
    return settled.line()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m waymark_ros.tools.memory_open')
    parser.add_argument('--entries', type=int, default=100_000)
    parser.add_argument(
        '--backends', nargs='+', choices=SEARCH_BACKENDS, default=[IN_MILVUS, AUTO, IN_PROCESS]
    )
    parser.add_argument('--other-writes', type=int, default=OTHER_WRITES)
    parser.add_argument('--server-uri', default='')
    parser.add_argument('--settle-s', type=float, default=SETTLE_S)
    parser.add_argument('--domain', type=int, default=77)
    parser.add_argument('--out', type=Path, required=True)
    args = parser.parse_args(argv)
    if args.entries < 20 or args.other_writes < 20:
        parser.error('--entries and --other-writes: at least 20 (one per session)')
    result = run(
        args.entries,
        args.backends,
        args.out,
        args.server_uri,
        args.other_writes,
        args.settle_s,
        args.domain,
    )
    print(render(result))
    return 0


if __name__ == '__main__':
    sys.exit(main())
