# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Checks on memory's database from outside the node that holds it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def assert_database_unlocked(path: Path) -> None:
    """Another process can open the Milvus Lite file, so its owner has released its lock."""
    probe = subprocess.run(
        [
            sys.executable,
            '-c',
            'import sys; from waymark.memory.storage.store import MemoryStore; '
            'MemoryStore(sys.argv[1], {}).close()',
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr
