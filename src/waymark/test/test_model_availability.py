# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A model that is not cached fails at once when the hub is off or out of reach."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest

from waymark.memory.views.embedders import EmbedderLoadError, ImageTextEmbedder, ensure_available


def test_an_uncached_model_fails_in_offline_mode_naming_it(monkeypatch, tmp_path):
    monkeypatch.setenv('HF_HOME', str(tmp_path))
    monkeypatch.setattr('huggingface_hub.constants.HF_HUB_OFFLINE', True)
    with pytest.raises(EmbedderLoadError, match=r"'nobody/no-such-model' is not cached.*offline"):
        ImageTextEmbedder('nobody/no-such-model').load()


def test_a_local_directory_needs_no_hub(monkeypatch, tmp_path):
    monkeypatch.setattr('huggingface_hub.constants.HF_HUB_OFFLINE', True)
    ensure_available(str(tmp_path))


def test_an_unreachable_hub_is_not_retried_with_back_off(tmp_path):
    """A hub that hangs up on every request: one request, then a one-line error."""
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen()
    connections = []

    def hang_up() -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            connections.append(client)
            client.close()

    threading.Thread(target=hang_up, daemon=True).start()
    env = {
        **os.environ,
        'HF_HOME': str(tmp_path),
        'HF_ENDPOINT': f'http://127.0.0.1:{server.getsockname()[1]}',
        'HF_HUB_OFFLINE': '0',
        'TRANSFORMERS_OFFLINE': '0',
    }
    script = (
        'from waymark.memory.views.embedders import ensure_available\n'
        "ensure_available('nobody/no-such-model')\n"
    )
    try:
        result = subprocess.run(
            [sys.executable, '-c', script], env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        server.close()
    assert result.returncode != 0
    assert 'cannot be reached' in result.stderr.splitlines()[-1], result.stderr
    # The HTTP client may reconnect once for a dropped connection; the hub client's
    # back-off would make six.
    assert 1 <= len(connections) <= 2
