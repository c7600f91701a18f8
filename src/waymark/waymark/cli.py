# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the offline commands share: a bad argument is one line on stderr and exit
status 2 (not a traceback, not a page of usage), and an output is never silently
overwritten or mixed into a folder that holds something else."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

USAGE_EXIT = 2  # argparse's exit status for bad arguments; every command uses it


class UsageError(ValueError):
    """A bad argument the user can fix; the command prints it as one line and exits 2."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line pointing at --help."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(USAGE_EXIT, f'{self.prog}: error: {message} (see --help)\n')


def fail(prog: str, error: Exception) -> int:
    """Print `error` as the command's one-line complaint; the exit status to return."""
    print(f'{prog}: {error}', file=sys.stderr)
    return USAGE_EXIT


def add_output_flags(parser: argparse.ArgumentParser, resume: bool = True) -> None:
    """--resume (continue what is there) and --overwrite (start over), never both."""
    group = parser.add_mutually_exclusive_group()
    if resume:
        group.add_argument(
            '--resume', action='store_true', help='continue the output already in --out'
        )
    group.add_argument(
        '--overwrite', action='store_true', help='delete the output already in --out first'
    )


def check_output_dir(
    path: Path, ours: Callable[[Path], bool], what: str, resume: bool, overwrite: bool
) -> None:
    """UsageError unless `path` may be written: absent, empty, or holding a `what` of
    ours that the user said to continue (`resume`) or replace (`overwrite`). A folder
    holding anything else is refused either way, so --overwrite deletes only our output."""
    if not path.exists():
        return
    if not path.is_dir():
        raise UsageError(f'{path} exists and is not a folder')
    if not any(path.iterdir()):
        return
    if not ours(path):
        raise UsageError(f'{path} is not empty and holds no {what}: choose another folder')
    if not (resume or overwrite):
        raise UsageError(
            f'{path} already holds a {what}: --resume to continue it, --overwrite to start over'
        )


def clear_output_dir(path: Path) -> None:
    """Start over in `path` (after check_output_dir allowed --overwrite)."""
    if path.is_dir():
        shutil.rmtree(path)


def check_positive(name: str, value: float | None, zero_ok: bool = False) -> None:
    """UsageError when a count or duration is not positive (or negative, with zero_ok)."""
    if value is None:
        return
    if not (value >= 0 if zero_ok else value > 0):  # NaN fails too
        bound = 'at least 0' if zero_ok else 'more than 0'
        raise UsageError(f'{name} must be {bound}, not {value:g}')
