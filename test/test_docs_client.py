# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The example script of docs/client.md, run as a script against in-test servers; the
guide's other examples checked against the client's calls."""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / 'docs' / 'client.md'


def blocks() -> list[str]:
    """The guide's Python blocks."""
    found = re.findall(r'^```python\n(.*?)^```', GUIDE.read_text(), re.MULTILINE | re.DOTALL)
    assert found, f'no python block in {GUIDE.name}'
    return found


def example() -> str:
    """The guide's first Python block."""
    return blocks()[0]


def client_calls(code: str) -> list[tuple[str, list[str], int]]:
    """Each `waymark.NAME(...)` of `code`: the name, its keywords, its positional count."""
    return [
        (node.func.attr, [k.arg for k in node.keywords if k.arg], len(node.args))
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == 'waymark'
    ]


def test_the_example_is_short_and_the_readme_links_to_it():
    lines = [line for line in example().splitlines() if line.strip()]
    assert len(lines) <= 15, f'{len(lines)} lines'
    assert '(docs/client.md)' in (ROOT / 'README.md').read_text()


def wrong_calls(calls: list[tuple[str, list[str], int]]) -> list[str]:
    """What each call names that the client does not have."""
    from waymark_ros.client import Waymark

    problems = []
    for name, keywords, positional in calls:
        method = getattr(Waymark, name, None)
        if not callable(method):
            problems.append(f'Waymark has no {name}()')
            continue
        parameters = list(inspect.signature(method).parameters)[1:]  # after self
        if unknown := set(keywords) - set(parameters):
            problems.append(f'{name}() takes no {sorted(unknown)}')
        if positional > len(parameters):
            problems.append(f'{name}() takes {len(parameters)} arguments, not {positional}')
    return problems


def test_every_example_calls_the_client_as_it_is():
    inline = re.findall(r'`(waymark\.\w+\(.*?\))`', GUIDE.read_text())
    calls = [call for code in blocks() + inline for call in client_calls(code)]
    assert {'run_task', 'mark', 'tasks', 'task', 'feedback'} <= {name for name, _, _ in calls}
    assert wrong_calls(calls) == []


def test_a_wrong_call_in_an_example_is_found():
    calls = client_calls("waymark.run_task(place='dock', budget=3)\nwaymark.drive(1)")
    assert wrong_calls(calls) == ["run_task() takes no ['budget']", 'Waymark has no drive()']


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
