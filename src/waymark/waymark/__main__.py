# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`python -m waymark <command>`: the offline tools.

A command's module is imported only to run it: help lists the commands from the table
below, so it stays fast while the commands pull in models and plotting.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import NamedTuple

from waymark.cli import USAGE_EXIT


class Command(NamedTuple):
    module: str
    summary: str


COMMANDS = {
    'world': Command('waymark.sim.bag', 'record a tour of a synthetic world as a rosbag2'),
    'questions': Command(
        'waymark.evaluation.question_gen', "generate questions from a bag's ground truth"
    ),
    'evaluate': Command(
        'waymark.evaluation.harness', 'score memory built from a rosbag2 on a question file'
    ),
    'suite': Command(
        'waymark.evaluation.suite', 'the standard benchmark: every world size and seed, one table'
    ),
    'task-eval': Command(
        'waymark.evaluation.task_cli',
        'chained tasks in generated worlds: task layer vs single shot',
    ),
    'bench': Command('waymark.benchmarks.cli', 'ingest, search, storage and planner benchmarks'),
    'tasks': Command('waymark.tasks.cli', 'read the task ledger, rewrite or print the house notes'),
    'lessons-sweep': Command(
        'waymark.lessons.sweep_cli', "tune the lessons' similarity threshold for an embedder"
    ),
}
PROG = 'python -m waymark'


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f'usage: {PROG} <command> [options]', '', 'commands:']
    lines += [f'  {name:<{width}}  {command.summary}' for name, command in COMMANDS.items()]
    lines += ['', f'`{PROG} <command> --help` describes a command.']
    return '\n'.join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ('-h', '--help'):
        print(usage(), file=sys.stdout if args else sys.stderr)
        return 0 if args else USAGE_EXIT
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(
            f'{PROG}: unknown command {name!r}; choose from {", ".join(COMMANDS)} (see --help)',
            file=sys.stderr,
        )
        return USAGE_EXIT
    return importlib.import_module(COMMANDS[name].module).main(rest)


if __name__ == '__main__':
    sys.exit(main())
