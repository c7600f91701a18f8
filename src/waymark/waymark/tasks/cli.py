# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`python -m waymark tasks <command>`: read the task ledger without ROS, and keep the
house notes (`consolidate`, `notes`).

Each subcommand is added to the `tasks` parser by its own function, so a new one is one
more function and one more line in `build_parser`. Reading only: the ledger's one writer
is the task runner, and nothing here can write to it.

Exit status: 0 when the ledger was read, 1 when a task is not there or its record cannot
be read, 2 for a bad argument (one line on stderr, like every offline command).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from waymark.cli import ArgumentParser, UsageError, fail
from waymark.tasks.consolidation_cli import add_consolidate_command, add_notes_command
from waymark.tasks.ledger import (
    TASK_ID,
    LedgerLimits,
    LedgerReader,
    UnknownTaskError,
    UnreadableFile,
    index_line,
    unreadable_line,
)
from waymark.tasks.records import RecordFormatError, TaskRecord

PROG = 'waymark tasks'
DEFAULT_LIMIT = 20
MAX_LIMIT = 1000
NOT_READ_EXIT = 1


@dataclass(frozen=True)
class TaskListing:
    """The newest tasks of a ledger, newest first: each one a record or the reason its file
    could not be read. `truncated` says the ledger holds older tasks than these."""

    entries: tuple[TaskRecord | UnreadableFile, ...]
    truncated: bool


def newest_tasks(root: str | Path, limit: int = DEFAULT_LIMIT) -> TaskListing:
    """The newest `limit` tasks (1 to MAX_LIMIT); one more is read to tell whether the
    listing was cut."""
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f'limit must be in [1, {MAX_LIMIT}], got {limit}')
    page = LedgerReader(root, LedgerLimits(max_listed=limit + 1)).records(limit + 1)
    entries = sorted([*page.records, *page.unreadable], key=_sequence, reverse=True)
    return TaskListing(tuple(entries[:limit]), len(entries) > limit)


def _sequence(entry: TaskRecord | UnreadableFile) -> int:
    if isinstance(entry, TaskRecord):
        return entry.sequence
    match = TASK_ID.fullmatch(entry.name.removesuffix('.json'))
    return int(match.group(1)) if match else 0


def add_list_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        'list',
        help='the newest tasks, one line each',
        description='The newest tasks of a '
        'ledger, newest first, one index line each; unreadable files are listed with why.',
    )
    _add_ledger_argument(parser)
    parser.add_argument(
        '--limit',
        type=int,
        default=DEFAULT_LIMIT,
        help=f'how many tasks at most (1 to {MAX_LIMIT}, default {DEFAULT_LIMIT})',
    )
    parser.set_defaults(run=_list)


def add_show_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        'show',
        help="one task's record",
        description="One task's record, as the ledger keeps it (JSON).",
    )
    parser.add_argument('task_id', help='the task id, as `list` prints it (t000001-...)')
    _add_ledger_argument(parser)
    parser.set_defaults(run=_show)


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog=PROG, description='Read the task ledger; rewrite or print the house notes.'
    )
    commands = parser.add_subparsers(
        dest='command', required=True, metavar='command', parser_class=ArgumentParser
    )
    add_list_command(commands)
    add_show_command(commands)
    add_consolidate_command(commands)
    add_notes_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as error:
        return fail(f'{PROG} {args.command}', error)


def _add_ledger_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        '--ledger', type=Path, required=True, help="the ledger's folder (the runner's)"
    )


def _check_ledger(path: Path) -> None:
    """A missing folder is a typo far more often than an empty ledger: say so."""
    if not path.is_dir():
        raise UsageError(f'{path} is not a folder: no ledger there')


def _list(args: argparse.Namespace) -> int:
    _check_ledger(args.ledger)
    if not 1 <= args.limit <= MAX_LIMIT:
        raise UsageError(f'--limit must be in [1, {MAX_LIMIT}], not {args.limit}')
    listing = newest_tasks(args.ledger, args.limit)
    for entry in listing.entries:
        if isinstance(entry, TaskRecord):
            print(index_line(entry))
        else:
            print(unreadable_line(entry))
    if not listing.entries:
        print('no tasks in this ledger')
    elif listing.truncated:
        print(f'(the newest {len(listing.entries)}; older tasks not shown, see --limit)')
    return 0


def _show(args: argparse.Namespace) -> int:
    _check_ledger(args.ledger)
    if not TASK_ID.fullmatch(args.task_id):
        raise UsageError(f'{args.task_id!r} is not a task id (t<sequence>-<8 hex digits>)')
    try:
        record = LedgerReader(args.ledger).record(args.task_id)
    except (UnknownTaskError, RecordFormatError, OSError) as error:
        print(f'{PROG} show: {error}', file=sys.stderr)
        return NOT_READ_EXIT
    print(record.to_json())
    return 0
