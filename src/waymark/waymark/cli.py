# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the offline commands share: a bad argument is one line on stderr and exit
status 2 (not a traceback, not a page of usage), an output is never silently
overwritten or mixed into a folder that holds something else, and an option that sets
what a node's parameter sets takes its default, range and help from that setting."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `python -m waymark --help` imports this module alone
    from waymark.settings import SettingInfo

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


def add_setting_options(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    config_type: type,
    options: Mapping[str, str],
) -> None:
    """An option for each chosen setting of `config_type` ({setting name: option}): its
    default and help are the setting's, and a value outside its range or choices is
    refused as a bad argument, as the node refuses the parameter."""
    from waymark.settings import settings

    known = {info.name: info for info in settings(config_type)}
    for name, option in options.items():
        info = known.get(name)
        if info is None:
            raise KeyError(f'{config_type.__name__} has no setting {name!r}')
        parser.add_argument(option, **_option(info))


def settings_from_options(config_type: type, args: argparse.Namespace, options: Mapping[str, str]):
    """A `config_type` holding the values of the options `add_setting_options` added."""
    from waymark.settings import build

    values = {name: getattr(args, _dest(option)) for name, option in options.items()}
    return build(config_type, values)


def _dest(option: str) -> str:
    return option.lstrip('-').replace('-', '_')


def _option(info: SettingInfo) -> dict[str, Any]:
    help_text = info.spec.description.replace('%', '%%')
    if info.kind is bool:
        return {
            'action': argparse.BooleanOptionalAction,
            'default': info.default,
            'help': help_text,
        }
    if info.kind is tuple:
        return {
            'type': _parser(info, float),
            'nargs': '+',
            'default': info.default,
            'help': help_text,
        }
    return {'type': _parser(info, info.kind), 'default': info.default, 'help': help_text}


def _parser(info: SettingInfo, kind: type) -> Callable[[str], Any]:
    """Parse one option value as the setting's kind, refused outside its range."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'{text!r} is not {kind.__name__}') from None
        problem = '' if info.kind is tuple else info.problem(value)
        if problem:
            raise argparse.ArgumentTypeError(f'{value!r} {problem} (setting {info.name})')
        return value

    parse.__name__ = kind.__name__  # argparse names the kind in its own messages
    return parse
