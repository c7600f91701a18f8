# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The import graph of one package read with `ast`, for the rank tests of the core and
of waymark_ros: which module imports which, without importing anything."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path


def package_modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module under the package folder `root`."""
    modules = {}
    for path in root.rglob('*.py'):
        parts = (root.name, *path.relative_to(root).with_suffix('').parts)
        if parts[-1] == '__init__':
            parts = parts[:-1]
        modules['.'.join(parts)] = path
    return modules


def module_imports(path: Path, name: str, modules: dict[str, Path]) -> Iterator[str]:
    """Every module `path` imports (a name imported from a package counts as its module)."""
    package = name if path.name == '__init__.py' else name.rpartition('.')[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                anchor = package.rsplit('.', node.level - 1)[0] if node.level > 1 else package
                base = f'{anchor}.{base}' if base else anchor
            for alias in node.names:
                full = f'{base}.{alias.name}'
                yield full if full in modules else base


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the other modules it imports, for every module of the package `root`."""
    modules = package_modules(root)
    return {
        name: {target for target in module_imports(path, name, modules) if target != name}
        for name, path in modules.items()
    }
