# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The example script of docs/client.md, run as a script against in-test servers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / 'docs' / 'client.md'


def example() -> str:
    """The guide's first Python block."""
    blocks = re.findall(r'^```python\n(.*?)^```', GUIDE.read_text(), re.MULTILINE | re.DOTALL)
    assert blocks, f'no python block in {GUIDE.name}'
    return blocks[0]


def test_the_example_is_short_and_the_readme_links_to_it():
    lines = [line for line in example().splitlines() if line.strip()]
    assert len(lines) <= 15, f'{len(lines)} lines'
    assert '(docs/client.md)' in (ROOT / 'README.md').read_text()


@pytest.mark.dds
def test_the_example_runs_against_the_servers(tmp_path):
    from waymark_testing.fake_stack import ANSWER_GOAL, SESSION, FakeStack

    script = tmp_path / 'example.py'
    script.write_text(example())
    stack = FakeStack('/')
    try:
        run = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, 'PYTHONUNBUFFERED': '1'},
        )
    finally:
        stack.close()
    assert run.returncode == 0, run.stdout + run.stderr
    assert f'sessions: {SESSION}' in run.stdout
    assert f'answered: seen near ({ANSWER_GOAL[0]}, {ANSWER_GOAL[1]})' in run.stdout
    assert 'drive: reached' in run.stdout and 'back: reached' in run.stdout
    assert stack.questions == ['Where is the fire extinguisher?']
