# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Files that survive a killed process or a power cut: a file is replaced whole or not at
all, and its directory entry is on disk before the call returns."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

TEMPORARY_SUFFIX = '.tmp'


def temporary_sibling(path: Path) -> Path:
    """A fresh hidden name next to `path`; `is_temporary` recognises it after a crash."""
    return path.with_name(f'.{path.name}.{secrets.token_hex(4)}{TEMPORARY_SUFFIX}')


def is_temporary(name: str) -> bool:
    return name.startswith('.') and name.endswith(TEMPORARY_SUFFIX)


def replace_atomically(path: Path, data: bytes, fsync: bool = True) -> None:
    """Write `data` to a temporary sibling, sync it, and rename it over `path`; on any
    failure the temporary is removed and `path` is as it was."""
    write_atomically(path, lambda stream: stream.write(data), fsync)


def write_atomically(path: Path, write: Callable[[BinaryIO], object], fsync: bool = True) -> None:
    """As replace_atomically, with the content streamed by `write` (a large file is never
    held in memory whole)."""
    temporary = temporary_sibling(path)
    try:
        with open(temporary, 'xb') as stream:
            write(stream)
            stream.flush()
            if fsync:
                os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    if fsync:
        fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Put a directory's entries (a rename, a new file) on disk."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
