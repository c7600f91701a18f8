# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`python -m waymark tasks consolidate` rewrites the house notes from a ledger, `tasks
notes` prints them. The ledger is only read."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from waymark.agent.llm import ChatClient, LLMConfig
from waymark.cli import UsageError, add_setting_options, check_positive, settings_from_options
from waymark.parameters.tasks import ConsolidationParameters
from waymark.tasks.consolidation import ConsolidationConfig, consolidate
from waymark.tasks.house_notes import HouseNotesReader, HouseNotesStore, NotesFormatError
from waymark.tasks.ledger import INDEX_FILE, LedgerReader

# The options that set what task_node's consolidation parameters set.
CONSOLIDATION_OPTIONS = {'timeout_s': '--llm-timeout', 'max_records': '--max-records'}


def add_consolidate_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser('consolidate', help='rewrite the house notes from a ledger')
    parser.add_argument('--ledger', type=Path, required=True, help='the ledger directory')
    parser.add_argument('--notes', type=Path, required=True, help='the notes directory')
    parser.add_argument('--llm-url', default='', help='an OpenAI-compatible server (optional)')
    parser.add_argument('--llm-model', default='', help='the model name on that server')
    add_setting_options(parser, ConsolidationParameters, CONSOLIDATION_OPTIONS)
    parser.set_defaults(run=_notes_errors_are_usage(_consolidate))


def add_notes_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser('notes', help='print the current house notes')
    parser.add_argument('--notes', type=Path, required=True, help='the notes directory')
    parser.add_argument('--max-chars', type=int, default=20_000, help='characters printed')
    parser.set_defaults(run=_notes_errors_are_usage(_print_notes))


def _notes_errors_are_usage(command: Callable[[argparse.Namespace], int]):
    """Damaged notes are reported in one line, like a bad argument."""

    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except NotesFormatError as error:
            raise UsageError(str(error)) from None

    return run


def _print_notes(args: argparse.Namespace) -> int:
    root, max_chars = args.notes, args.max_chars
    check_positive('--max-chars', max_chars)
    reader = HouseNotesReader(root)
    if max_chars > reader.limits.max_read_chars:
        raise UsageError(f'--max-chars must be at most {reader.limits.max_read_chars}')
    view = reader.read(max_chars)
    print(view.render() or f'no house notes in {root}')
    return 0


def _consolidate(args) -> int:
    settings = settings_from_options(ConsolidationParameters, args, CONSOLIDATION_OPTIONS)
    if bool(args.llm_url) != bool(args.llm_model):
        raise UsageError('--llm-url and --llm-model go together')
    if not (args.ledger / INDEX_FILE).is_file() and not (args.ledger / 'records').is_dir():
        raise UsageError(f'{args.ledger} holds no task ledger')
    if args.notes.exists() and not args.notes.is_dir():
        raise UsageError(f'{args.notes} exists and is not a folder')
    try:
        config = ConsolidationConfig(
            max_records=settings.max_records, max_tokens=settings.max_tokens
        )
    except ValueError as error:
        raise UsageError(str(error)) from None
    chat = None
    if args.llm_url:
        chat = ChatClient(
            LLMConfig(
                args.llm_url,
                args.llm_model,
                timeout_s=settings.timeout_s,
                max_tokens=settings.max_tokens,
            )
        )
    store = HouseNotesStore(args.notes)
    result = consolidate(LedgerReader(args.ledger), store.read(), chat, config)
    report = store.write(result.notes, result.origin)
    print(
        f'notes version {report.version} ({result.origin}) from {result.records} records'
        + (f'; {len(result.unreadable)} unreadable' if result.unreadable else '')
    )
    if result.fallback_reason:
        print(f'the model was not used: {result.fallback_reason}', file=sys.stderr)
    for rule, count in sorted((result.dropped or {}).items()):
        print(f'dropped {count} statement(s): {rule}')
    for name in report.truncated:
        print(f'{name} was cut by {report.chars_dropped[name]} characters to fit its cap')
    return 0
