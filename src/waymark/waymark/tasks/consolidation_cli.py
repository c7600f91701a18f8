# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`python -m waymark tasks`: rewrite the house notes from a ledger (`consolidate`), or
print them (`notes`). The ledger is only read."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from waymark.agent.llm import ChatClient, LLMConfig
from waymark.cli import ArgumentParser, UsageError, check_positive, fail
from waymark.tasks.consolidation import ConsolidationConfig, consolidate
from waymark.tasks.house_notes import HouseNotesReader, HouseNotesStore, NotesFormatError
from waymark.tasks.ledger import INDEX_FILE, LedgerReader


def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog='waymark tasks', description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest='command', required=True, parser_class=ArgumentParser)
    run = commands.add_parser('consolidate', help='rewrite the house notes from a ledger')
    run.add_argument('--ledger', type=Path, required=True, help='the ledger directory')
    run.add_argument('--notes', type=Path, required=True, help='the notes directory')
    run.add_argument('--llm-url', default='', help='an OpenAI-compatible server (optional)')
    run.add_argument('--llm-model', default='', help='the model name on that server')
    run.add_argument('--llm-timeout', type=float, default=120.0, help='seconds per request')
    run.add_argument('--max-records', type=int, default=100, help='newest records read')
    show = commands.add_parser('notes', help='print the current house notes')
    show.add_argument('--notes', type=Path, required=True, help='the notes directory')
    show.add_argument('--max-chars', type=int, default=20_000, help='characters printed')
    args = parser.parse_args(argv)
    try:
        if args.command == 'notes':
            return _print_notes(args.notes, args.max_chars)
        return _consolidate(args)
    except (UsageError, NotesFormatError) as error:
        return fail(parser.prog, error)


def _print_notes(root: Path, max_chars: int) -> int:
    check_positive('--max-chars', max_chars)
    reader = HouseNotesReader(root)
    if max_chars > reader.limits.max_read_chars:
        raise UsageError(f'--max-chars must be at most {reader.limits.max_read_chars}')
    view = reader.read(max_chars)
    print(view.render() or f'no house notes in {root}')
    return 0


def _consolidate(args) -> int:
    check_positive('--llm-timeout', args.llm_timeout)
    check_positive('--max-records', args.max_records)
    if bool(args.llm_url) != bool(args.llm_model):
        raise UsageError('--llm-url and --llm-model go together')
    if not (args.ledger / INDEX_FILE).is_file() and not (args.ledger / 'records').is_dir():
        raise UsageError(f'{args.ledger} holds no task ledger')
    if args.notes.exists() and not args.notes.is_dir():
        raise UsageError(f'{args.notes} exists and is not a folder')
    try:
        config = ConsolidationConfig(max_records=args.max_records)
    except ValueError as error:
        raise UsageError(str(error)) from None
    chat = None
    if args.llm_url:
        chat = ChatClient(
            LLMConfig(args.llm_url, args.llm_model, timeout_s=args.llm_timeout, max_tokens=3_000)
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
