# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""No node may log through rclpy's deprecated `warn()`, nor choose its severity per call.

rclpy keys each log call site's settings (severity, throttle) by the caller's frame, and a
call that changes them raises ValueError. `warn()` is wrapped by a deprecation decorator, so
every `warn()` in a process looks like one call site: the first throttled warning fixes the
settings, and the next unthrottled one raises inside a callback and kills the node.
`warning()` has no wrapper. Ruff's G010 does not see `self.get_logger().warn(...)`.

Likewise `(log.info if ok else log.warning)(...)` or `getattr(log, level)(...)` is one call
site whose severity changes: the second severity raises, and in an action's execute
callback that exception once turned a refused goal into a default result, which reads as
reached. Each severity needs its own call.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    path
    for folder in ('src', 'scripts', 'launch', 'test')
    for path in (ROOT / folder).rglob('*.py')
    if 'standins' not in path.parts
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


LOG_METHODS = frozenset({'debug', 'info', 'warning', 'warn', 'error', 'fatal'})


def _names_log_method(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in LOG_METHODS for n in ast.walk(node))


def _is_logger(node: ast.AST) -> bool:
    """`log`, `logger`, `self._logger`, `self.get_logger()` and the like."""
    if isinstance(node, ast.Call):
        node = node.func
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, 'id', '')
    return 'log' in name.lower()


def _chooses_severity(node: ast.AST) -> bool:
    if isinstance(node, ast.IfExp):
        return all(map(_names_log_method, (node.body, node.orelse)))
    if isinstance(node, ast.BoolOp):
        return sum(map(_names_log_method, node.values)) > 1
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if not isinstance(func, (ast.Attribute, ast.Name)):
        return _names_log_method(func)
    return (
        isinstance(func, ast.Name)
        and func.id == 'getattr'
        and len(node.args) >= 2
        and _is_logger(node.args[0])
        and not isinstance(node.args[1], ast.Constant)
    )


def chosen_severities(source: str) -> list[int]:
    """Lines where a logger method is picked at run time rather than written at the call:
    a conditional between logger methods (wherever it is, assigned to a name too), a call
    through any callee other than a plain name or attribute that names one, or
    `getattr(logger, <not a literal>)`."""
    return sorted({n.lineno for n in ast.walk(ast.parse(source)) if _chooses_severity(n)})


def test_the_check_finds_each_form_of_a_severity_chosen_at_run_time():
    source = (
        '(log.info if ok else log.warning)("a")\n'
        'self.get_logger().info("b")\n'
        'say = self.get_logger().info if ok else self.get_logger().error\n'
        'getattr(self.get_logger(), level)("c")\n'
        'getattr(logger, "info")("d")\n'
        '{True: log.info, False: log.error}[ok]("e")\n'
        '(ok and log.debug or log.warning)("f")\n'
        'x = msg.info if ok else None\n'
        'if ok:\n'
        '    log.info("g")\n'
        'else:\n'
        '    log.warning("g")\n'
    )
    assert chosen_severities(source) == [1, 3, 4, 6, 7]


def test_every_log_call_has_its_severity_written_at_the_call():
    offenders = {
        str(path.relative_to(ROOT)): lines
        for path in SOURCES
        if (lines := chosen_severities(path.read_text()))
    }
    assert len(SOURCES) > 50  # the tree was found
    assert not offenders, f'one call per severity, chosen by if/else: {offenders}'


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
