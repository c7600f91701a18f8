# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`python -m waymark`: help without importing the commands, and for every bad argument
of every command one line on stderr, exit status 2, and nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from rosbags.rosbag2 import Writer

from waymark import __main__ as waymark_main
from waymark.benchmarks import cli as bench
from waymark.evaluation import harness, question_gen, suite
from waymark.evaluation.questions import Question, QuestionSet, save_questions
from waymark.sim import bag as world


def test_help_lists_every_command_without_importing_them():
    code = (
        'import sys; from waymark.__main__ import main; rc = main(["--help"]); '
        'print(sorted(m for m in sys.modules if m.startswith("waymark.")), rc)'
    )
    result = subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True, check=True
    )
    for name in waymark_main.COMMANDS:
        assert f'\n  {name} ' in result.stdout
    assert result.stdout.rstrip().endswith("['waymark.__main__', 'waymark.cli'] 0")


@pytest.mark.parametrize('argv', [['-h'], ['--help'], []])
def test_help_and_no_arguments_list_the_commands(argv, capsys):
    assert waymark_main.main(argv) == (0 if argv else 2)
    captured = capsys.readouterr()
    listing = captured.out if argv else captured.err
    assert all(command.summary in listing for command in waymark_main.COMMANDS.values())


def test_an_unknown_command_is_one_line_and_exit_2(capsys):
    assert waymark_main.main(['evalute', 'x']) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and "unknown command 'evalute'" in err and '--help' in err


@pytest.mark.parametrize('name', list(waymark_main.COMMANDS))
def test_each_command_has_help(name):
    result = subprocess.run(
        [sys.executable, '-m', 'waymark', name, '--help'], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('usage: ') and '--help' in result.stdout


# ---- inputs ----


@pytest.fixture
def inputs(tmp_path) -> dict[str, Path]:
    """An empty but real rosbag2, a valid question file, a ground truth and a stray file."""
    empty_bag = tmp_path / 'empty_bag'
    with Writer(empty_bag, version=8):
        pass
    questions = tmp_path / 'questions.json'
    zebra = Question(
        id='z', category='yes_no', question='A zebra?', answer_type='yes_no', yes=False
    )
    save_questions(QuestionSet(world='w', questions=[zebra]), questions)
    truth = tmp_path / 'ground_truth.json'
    truth.write_text(json.dumps({'images': [], 'landmarks': [], 'trajectory': []}))
    stray = tmp_path / 'stray'
    stray.mkdir()
    (stray / 'notes.txt').write_text('mine')
    return {'bag': empty_bag, 'questions': questions, 'truth': truth, 'stray': stray}


def _refused(main, argv, capsys, prog: str, message: str) -> str:
    try:
        status = main(argv)
    except SystemExit as exit:  # argparse's refusals exit from inside
        status = exit.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1, err  # one line, no traceback
    assert err.startswith(f'{prog}:') and message in err, err
    return err


def _evaluation(path: Path) -> Path:
    (path / 'memory').mkdir(parents=True)
    return path


EVALUATE_CASES = {
    'missing bag': (lambda i, o: [str(o.parent / 'nothing'), str(i['questions'])], 'no bag at'),
    'not a bag': (lambda i, o: [str(i['stray']), str(i['questions'])], 'not a rosbag2 folder'),
    'missing questions': (
        lambda i, o: [str(i['bag']), str(o.parent / 'q.json')],
        'no question file at',
    ),
    'question file of another kind': (
        lambda i, o: [str(i['bag']), str(i['stray'] / 'notes.txt')],
        'expected a .json, .yaml or .yml file',
    ),
    'unknown preset': (
        lambda i, o: [str(i['bag']), str(i['questions']), '--preset', 'nope'],
        "no sensor preset 'nope'",
    ),
    'top-k 0': (lambda i, o: [str(i['bag']), str(i['questions']), '--top-k', '0'], '--top-k'),
    'negative window': (
        lambda i, o: [str(i['bag']), str(i['questions']), '--segment-window', '-1'],
        '--segment-window must be at least 0',
    ),
    'hfov 200': (lambda i, o: [str(i['bag']), str(i['questions']), '--hfov', '200'], '--hfov'),
    'share 2': (
        lambda i, o: [str(i['bag']), str(i['questions']), '--min-valid-poses', '2'],
        '--min-valid-poses must be in [0, 1]',
    ),
    'zero quaternion': (
        lambda i, o: [str(i['bag']), str(i['questions']), '--camera-extrinsic', *'0000000'],
        'degenerate quaternion',
    ),
    'unknown answerer': (
        lambda i, o: [str(i['bag']), str(i['questions']), '--answerers', 'oracle'],
        'oracle',
    ),
    'resume and overwrite': (
        lambda i, o: [str(i['bag']), str(i['questions']), '--resume', '--overwrite'],
        'not allowed with argument',
    ),
    'no camera topic in the bag': (lambda i, o: [str(i['bag']), str(i['questions'])], 'image'),
}


@pytest.mark.parametrize('case', list(EVALUATE_CASES))
def test_evaluate_refuses_bad_arguments_and_leaves_nothing(case, inputs, tmp_path, capsys):
    arguments, message = EVALUATE_CASES[case]
    out = tmp_path / 'out'
    argv = [*arguments(inputs, out), '--out', str(out), '--no-progress']
    _refused(harness.main, argv, capsys, 'waymark evaluate', message)
    assert not out.exists()


def test_evaluate_refuses_an_existing_evaluation_unless_told(inputs, tmp_path, capsys):
    out = _evaluation(tmp_path / 'out')
    argv = [str(inputs['bag']), str(inputs['questions']), '--out', str(out), '--no-progress']
    _refused(harness.main, argv, capsys, 'waymark evaluate', '--resume to continue it')
    assert (out / 'memory').is_dir()  # untouched
    # --overwrite never deletes a folder that holds something else.
    argv[3] = str(inputs['stray'])
    _refused(harness.main, [*argv, '--overwrite'], capsys, 'waymark evaluate', 'no evaluation')
    assert (inputs['stray'] / 'notes.txt').is_file()


QUESTIONS_CASES = {
    'missing ground truth': (lambda i, t: [str(t / 'nothing.json'), str(t / 'q.json')], 'no '),
    'not json': (lambda i, t: [str(i['stray'] / 'notes.txt'), str(t / 'q.json')], 'not a JSON'),
    'not a ground truth': (lambda i, t: [str(i['questions']), str(t / 'q.json')], 'not a ground'),
    'existing file': (lambda i, t: [str(i['truth']), str(i['questions'])], '--overwrite'),
    'not .json': (lambda i, t: [str(i['truth']), str(t / 'q.yaml')], 'must end in .json'),
    'no folder': (lambda i, t: [str(i['truth']), str(t / 'no' / 'q.json')], 'no folder'),
    'per-category 0': (
        lambda i, t: [str(i['truth']), str(t / 'q.json'), '--per-category', '0'],
        '--per-category must be more than 0',
    ),
}


@pytest.mark.parametrize('case', list(QUESTIONS_CASES))
def test_questions_refuses_bad_arguments(case, inputs, tmp_path, capsys):
    arguments, message = QUESTIONS_CASES[case]
    before = inputs['questions'].read_text()
    _refused(question_gen.main, arguments(inputs, tmp_path), capsys, 'waymark questions', message)
    assert not (tmp_path / 'q.json').exists() and not (tmp_path / 'q.yaml').exists()
    assert inputs['questions'].read_text() == before


def test_questions_takes_a_bag_folder_and_overwrites_when_told(inputs, tmp_path):
    out = inputs['questions']
    assert question_gen.main([str(inputs['truth'].parent), str(out), '--overwrite']) == 0
    assert json.loads(out.read_text())['questions'] == []  # the empty truth's


WORLD_CASES = {
    'stray folder': (lambda i, t: [str(i['stray'])], 'holds no bag'),
    'existing bag': (lambda i, t: [str(i['bag'])], '--overwrite to start over'),
    'rate 0': (lambda i, t: [str(t / 'new'), '--rate', '0'], '--rate must be more than 0'),
    'width -1': (lambda i, t: [str(t / 'new'), '--width', '-1'], '--width'),
    'negative noise': (lambda i, t: [str(t / 'new'), '--odom-noise', '-1'], '--odom-noise'),
    'unknown size': (lambda i, t: [str(t / 'new'), '--size', 'huge'], 'invalid choice'),
}


@pytest.mark.parametrize('case', list(WORLD_CASES))
def test_world_refuses_bad_arguments(case, inputs, tmp_path, capsys):
    arguments, message = WORLD_CASES[case]
    _refused(world.main, arguments(inputs, tmp_path), capsys, 'waymark world', message)
    assert not (tmp_path / 'new').exists()
    assert (inputs['bag'] / 'metadata.yaml').is_file() and (inputs['stray'] / 'notes.txt').exists()


CAPTIONER_CASES = {
    'model without a server': (['--captioner-model', 'm'], '--captioner-model needs'),
    'negative wait': (['--caption-wait', '-1'], '--caption-wait must be at least 0'),
    'zero timeout': (['--captioner-timeout', '0'], '--captioner-timeout: 0.0 must be in [1, 3600]'),
    'no segments to caption': (
        ['--captioner-url', 'http://127.0.0.1:9/v1', '--segment-window', '0'],
        '--captioner-url needs segments',
    ),
}


@pytest.mark.parametrize('case', list(CAPTIONER_CASES))
def test_evaluate_refuses_bad_captioner_options_before_building(case, inputs, tmp_path, capsys):
    arguments, message = CAPTIONER_CASES[case]
    out = tmp_path / 'out'
    argv = [str(inputs['bag']), str(inputs['questions']), '--out', str(out), *arguments]
    _refused(harness.main, argv, capsys, 'waymark evaluate', message)
    assert not out.exists()


SUITE_CASES = {
    'per-category 0': (['--per-category', '0'], '--per-category must be more than 0'),
    'max-duration 0': (['--max-duration', '0'], '--max-duration must be more than 0'),
    'negative seed': (['--seeds', '-1'], '--seeds must be at least 0'),
    'unknown size': (['--sizes', 'huge'], 'invalid choice'),
    'captioner model alone': (['--captioner-model', 'm'], '--captioner-model needs'),
}


@pytest.mark.parametrize('case', list(SUITE_CASES))
def test_suite_refuses_bad_arguments(case, tmp_path, capsys):
    arguments, message = SUITE_CASES[case]
    out = tmp_path / 'suite'
    _refused(suite.main, ['--out', str(out), *arguments], capsys, 'waymark suite', message)
    assert not out.exists()


def test_suite_refuses_an_existing_suite_or_a_stray_folder(inputs, tmp_path, capsys):
    out = tmp_path / 'suite'
    (out / 'small-0' / 'bag').mkdir(parents=True)
    _refused(suite.main, ['--out', str(out)], capsys, 'waymark suite', '--resume to continue')
    argv = ['--out', str(inputs['stray']), '--overwrite']
    _refused(suite.main, argv, capsys, 'waymark suite', 'holds no suite')
    assert (out / 'small-0' / 'bag').is_dir() and (inputs['stray'] / 'notes.txt').exists()


def test_bench_refuses_bad_arguments(inputs, tmp_path, capsys):
    out = tmp_path / 'bench'
    out.mkdir()
    (out / 'planner.json').write_text('{}')
    _refused(bench.main, ['planner', '--out', str(out)], capsys, 'waymark bench', 'planner.json')
    assert (out / 'planner.json').read_text() == '{}'
    stray = str(inputs['stray'] / 'notes.txt')
    _refused(bench.main, ['planner', '--out', stray], capsys, 'waymark bench', 'not a folder')
    _refused(bench.main, ['search', '--sizes', '5'], capsys, 'waymark bench', 'at least 20')
    for probes in (['--server-nprobe', '8'], ['--server-index', 'IVF_SQ8', '--server-nprobe', '0']):
        argv = ['search', '--backends', 'server', *probes]
        _refused(bench.main, argv, capsys, 'waymark bench', 'with an IVF --server-index')
    _refused(bench.main, ['everything'], capsys, 'waymark bench', 'invalid choice')
    assert sorted(p.name for p in out.iterdir()) == ['planner.json']
