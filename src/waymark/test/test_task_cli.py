# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`python -m waymark tasks`: the ledger read from the command line, never written."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from waymark import __main__ as waymark_main
from waymark.tasks import cli
from waymark.tasks.ledger import TaskLedger, UnreadableFile
from waymark.tasks.outcomes import Claim, JudgeVerdict, TerminationReason, VerdictKind
from waymark.tasks.records import GoalModality, TaskGoal, TaskRecord

LATER = 2**62


@pytest.fixture
def ledger_dir(tmp_path):
    """Four closed tasks: certified, stopped, claimed, and one whose file is damaged."""
    root = tmp_path / 'ledger'
    ledger = TaskLedger(root, fsync=False)
    closes = [
        {'claim': Claim.COMPLETE, 'certificate': JudgeVerdict(VerdictKind.COMPLETE, 'mug')},
        {'claim': None, 'stop_reason': TerminationReason.NO_GOAL},
        {'claim': Claim.COMPLETE},
        {'claim': Claim.INCOMPLETE},
    ]
    for number, details in enumerate(closes):
        task_id = ledger.begin(TaskGoal(GoalModality.TEXT, f'goal {number}'), now_ns=1)
        ledger.close(TaskRecord.for_task(ledger.open_task(task_id), LATER, **details))
    damaged = sorted((root / 'records').iterdir())[2]
    damaged.write_text('{"version": 1, "kind": "record", "status": "CERTIFIED"')
    return root


def _files(root):
    return {path: path.read_bytes() for path in root.rglob('*') if path.is_file()}


def test_list_prints_the_newest_first_with_the_unreadable_file_and_its_reason(ledger_dir, capsys):
    before = _files(ledger_dir)
    assert waymark_main.main(['tasks', 'list', '--ledger', str(ledger_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert lines[0].endswith('| CLAIMED | goal 3 | places: -')
    assert '| UNREADABLE | record is not JSON' in lines[1] and lines[1].startswith('- t000003-')
    assert '| STOPPED (no_goal) | goal 1 |' in lines[2]
    assert '| CERTIFIED | goal 0 |' in lines[3]
    assert _files(ledger_dir) == before  # reading writes nothing


def test_a_limit_shows_the_newest_and_says_older_tasks_are_left_out(ledger_dir, capsys):
    assert cli.main(['list', '--ledger', str(ledger_dir), '--limit', '2']) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(' | ')[1] for line in lines[:2]] == ['CLAIMED', 'UNREADABLE']
    assert lines[2].startswith('(the newest 2; older tasks not shown')
    listing = cli.newest_tasks(ledger_dir, 4)
    assert not listing.truncated and [type(e) for e in listing.entries].count(UnreadableFile) == 1


def test_an_empty_ledger_says_so(tmp_path, capsys):
    TaskLedger(tmp_path, fsync=False)
    assert cli.main(['list', '--ledger', str(tmp_path)]) == 0
    assert capsys.readouterr().out == 'no tasks in this ledger\n'


def test_show_prints_the_record_as_stored(ledger_dir, capsys):
    task_id = sorted((ledger_dir / 'records').iterdir())[0].stem
    assert cli.main(['show', task_id, '--ledger', str(ledger_dir)]) == 0
    shown = capsys.readouterr().out
    assert TaskRecord.from_json(shown).task_id == task_id
    assert json.loads(shown)['status'] == 'CERTIFIED'


def test_show_of_a_missing_or_damaged_task_is_one_line_and_exit_1(ledger_dir, capsys):
    damaged = sorted((ledger_dir / 'records').iterdir())[2].stem
    assert cli.main(['show', damaged, '--ledger', str(ledger_dir)]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'not JSON' in err
    assert cli.main(['show', 't000099-0123abcd', '--ledger', str(ledger_dir)]) == 1
    assert 'no task t000099-0123abcd' in capsys.readouterr().err


@pytest.mark.parametrize(
    ('argv', 'message'),
    [
        (['list', '--ledger', 'missing-folder'], 'is not a folder'),
        (['list', '--ledger', '{ledger}', '--limit', '0'], '--limit must be in [1, 1000]'),
        (['list', '--ledger', '{ledger}', '--limit', '1001'], '--limit must be in [1, 1000]'),
        (['show', '../etc/passwd', '--ledger', '{ledger}'], 'is not a task id'),
        (['show', 't000001-0123abcd'], 'the following arguments are required: --ledger'),
        (['list', '--ledger', '{ledger}', '--limit', 'many'], "invalid int value: 'many'"),
        ([], 'the following arguments are required: command'),
        (['write'], "invalid choice: 'write'"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(ledger_dir, capsys, argv, message):
    argv = [arg.replace('{ledger}', str(ledger_dir)) for arg in argv]
    assert _exit_status(argv) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and message in err


def _exit_status(argv: list[str]) -> int:
    """argparse exits on its own errors; the command returns on the others."""
    try:
        return cli.main(argv)
    except SystemExit as exit:
        return exit.code


def test_the_command_runs_as_a_module(ledger_dir):
    result = subprocess.run(
        [sys.executable, '-m', 'waymark', 'tasks', 'list', '--ledger', str(ledger_dir)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count('\n') == 4
