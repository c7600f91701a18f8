# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`python -m waymark <command>`: the offline tools."""

from __future__ import annotations

import sys

COMMANDS = {
    'evaluate': 'waymark.evaluation.harness',
    'questions': 'waymark.evaluation.question_gen',
    'world': 'waymark.sim.bag',
    'suite': 'waymark.evaluation.suite',
    'bench': 'waymark.benchmarks.cli',
}


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(f'usage: python -m waymark {{{",".join(COMMANDS)}}} ...', file=sys.stderr)
        return 2
    import importlib

    return importlib.import_module(COMMANDS[sys.argv[1]]).main(sys.argv[2:])


if __name__ == '__main__':
    sys.exit(main())
