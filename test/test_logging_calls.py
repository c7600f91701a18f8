# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""No node may log through rclpy's deprecated `warn()`.

rclpy keys each log call site's throttle settings by the caller's frame. `warn()` is wrapped
by a deprecation decorator, so every `warn()` in a process looks like one call site: the
first throttled warning fixes the settings, and the next unthrottled one raises ValueError
inside a callback and kills the node. `warning()` has no wrapper. Ruff's G010 does not see
`self.get_logger().warn(...)`, hence this check.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    path
    for folder in ('src', 'scripts', 'launch', 'test')
    for path in (ROOT / folder).rglob('*.py')
    if 'nav2_standin' not in path.parts
)


def warn_uses(source: str) -> list[int]:
    """Lines that use a `.warn` attribute, other than the `warnings` module's."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and node.attr == 'warn'
        and not (isinstance(node.value, ast.Name) and node.value.id == 'warnings')
    ]


def test_the_check_finds_each_form_of_warn():
    source = (
        'import warnings\n'
        'self.get_logger().warn("a")\n'
        '(log.info if ok else log.warn)("b")\n'
        'self._logger.warning("c")\n'
        'warnings.warn("d")\n'
    )
    assert warn_uses(source) == [2, 3]


def test_logs_warnings_with_warning_not_warn():
    offenders = {
        str(path.relative_to(ROOT)): lines
        for path in SOURCES
        if (lines := warn_uses(path.read_text()))
    }
    assert len(SOURCES) > 50  # the tree was found
    assert not offenders, f'use .warning() instead of .warn(): {offenders}'
