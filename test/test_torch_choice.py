# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""scripts/torch_choice.py: which torch build the bootstrap installs, and its quick check
that PyTorch's CPU wheel index answers (a fake nvidia-smi on PATH, local URLs)."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / 'scripts' / 'torch_choice.py'


def run(*args: str, path: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key != 'WAYMARK_TORCH'}
    environment.update(env, PATH=str(path))
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def fake_nvidia_smi(folder: Path, exit_code: int, output: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / 'nvidia-smi'
    program.write_text(f'#!/bin/sh\necho "{output}"\nexit {exit_code}\n')
    program.chmod(0o755)
    return folder


@pytest.fixture
def gpu(tmp_path):
    return fake_nvidia_smi(tmp_path / 'gpu', 0, 'GPU 0: NVIDIA H100 (UUID: GPU-1234)')


@pytest.fixture
def broken_driver(tmp_path):
    return fake_nvidia_smi(
        tmp_path / 'broken', 9, 'NVIDIA-SMI has failed because it could not communicate'
    )


@pytest.fixture
def no_gpu(tmp_path):
    folder = tmp_path / 'empty'
    folder.mkdir()
    return folder


def test_auto_picks_cuda_when_nvidia_smi_lists_a_gpu(gpu):
    assert run('build', path=gpu).stdout.strip() == 'cuda'


@pytest.mark.parametrize('where', ['no_gpu', 'broken_driver'])
def test_auto_picks_cpu_without_a_working_gpu(where, request):
    result = run('build', path=request.getfixturevalue(where))
    assert (result.returncode, result.stdout.strip()) == (0, 'cpu')


def test_an_explicit_choice_wins_over_detection(gpu, no_gpu):
    assert run('build', path=gpu, WAYMARK_TORCH='cpu').stdout.strip() == 'cpu'
    assert run('build', path=no_gpu, WAYMARK_TORCH='CUDA').stdout.strip() == 'cuda'


def test_an_unknown_choice_is_refused_by_name(no_gpu):
    result = run('build', path=no_gpu, WAYMARK_TORCH='rocm')
    assert result.returncode == 2
    assert "WAYMARK_TORCH must be one of auto, cpu, cuda, got 'rocm'" in result.stderr


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def test_an_unreachable_index_is_not_reachable(no_gpu):
    result = run('reachable', f'http://127.0.0.1:{closed_port()}/whl/cpu', path=no_gpu)
    assert result.returncode == 1


def test_an_index_that_never_answers_gives_up_after_the_timeout(no_gpu):
    with socket.socket() as silent:  # accepts connections, never replies
        silent.bind(('127.0.0.1', 0))
        silent.listen()
        url = f'http://127.0.0.1:{silent.getsockname()[1]}/whl/cpu'
        result = run('reachable', url, path=no_gpu, WAYMARK_TORCH_INDEX_TIMEOUT_S='0.5')
    assert result.returncode == 1


class _Index(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self):
        self.send_response(200 if self.path == '/whl/cpu/torch/' else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def index():
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f'http://127.0.0.1:{server.server_address[1]}'
    server.shutdown()
    server.server_close()


def test_an_index_serving_torch_is_reachable(index, no_gpu):
    assert run('reachable', f'{index}/whl/cpu', path=no_gpu).returncode == 0
    assert run('reachable', f'{index}/other', path=no_gpu).returncode == 1


def test_the_index_url_comes_from_the_environment(index, no_gpu):
    assert run('reachable', path=no_gpu, WAYMARK_TORCH_CPU_INDEX=f'{index}/whl/cpu').returncode == 0


def test_bad_usage_says_how(no_gpu):
    result = run('install', path=no_gpu)
    assert result.returncode == 2
    assert 'usage: torch_choice.py build | reachable [URL]' in result.stderr
