# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The question file schema and its loader: round trips and errors that point at the entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from waymark.evaluation.questions import (
    AnswerType,
    Category,
    Question,
    QuestionFileError,
    QuestionSet,
    load_questions,
    save_questions,
)

T0 = 1_768_471_200 * 10**9


def _full_set() -> QuestionSet:
    return QuestionSet(
        world='demo-0',
        bag='bags/demo-0',
        questions=[
            Question(
                id='basic-0',
                category=Category.BASIC,
                question='Where is the pharmacy?',
                answer_type=AnswerType.POSITION,
                target='sign-1',
                position=(12.5, 6.0, 1.2),
                observed_from=[(12.0, 3.0, 1.5707963267948966), (11.0, 3.1, 1.2)],
            ),
            Question(
                id='temporal-0',
                category=Category.TEMPORAL,
                question='When did I last see the red barrel?',
                answer_type=AnswerType.TIME,
                target='obj-2',
                time_ns=T0 + 123_456_789,
            ),
            Question(
                id='yes_no-0',
                category=Category.YES_NO,
                question='Did I see a blue cone?',
                answer_type=AnswerType.YES_NO,
                yes=False,
            ),
            Question(
                id='local-0',
                category=Category.LOCAL,
                question='What does the sign next to the red barrel say?',
                answer_type=AnswerType.TEXT,
                text='LIBRARY',
            ),
            Question(
                id='image-0',
                category=Category.IMAGE,
                question='Where did I see this?',
                answer_type=AnswerType.POSITION,
                position=(1.0, 2.0, 0.5),
                image='images/image-0.png',
            ),
        ],
    )


def _entry(**fields) -> dict:
    base = {'id': 'q-0', 'category': 'basic', 'question': 'Where is it?'}
    base.update({'answer_type': 'position', 'position': [1.0, 2.0, 0.0]})
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def _write(tmp_path, entries, name='questions.yaml') -> str:
    path = tmp_path / name
    data = {'version': 1, 'questions': entries}
    path.write_text(json.dumps(data) if name.endswith('.json') else yaml.safe_dump(data))
    return path


def _error(path) -> str:
    with pytest.raises(QuestionFileError) as info:
        load_questions(path)
    return str(info.value)


@pytest.mark.parametrize('name', ['questions.json', 'questions.yaml', 'questions.yml'])
def test_round_trip(tmp_path, name):
    original = _full_set()
    json_path = tmp_path / 'saved.json'
    save_questions(original, json_path)
    if name.endswith('.json'):
        path = json_path
    else:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(json.loads(json_path.read_text())))
    assert load_questions(path) == original


def test_save_is_deterministic_and_sorted(tmp_path):
    a, b = tmp_path / 'a.json', tmp_path / 'b.json'
    save_questions(_full_set(), a)
    save_questions(_full_set(), b)
    assert a.read_bytes() == b.read_bytes()
    text = a.read_text()
    assert text.index('"bag"') < text.index('"questions"') < text.index('"version"')
    assert '\n "bag"' in text  # indent 1
    assert 'null' not in text  # unset optional fields are left out


def test_yaml_field_named_yes_is_not_a_boolean(tmp_path):
    path = tmp_path / 'q.yaml'
    path.write_text(
        'questions:\n'
        '  - id: a\n    category: yes_no\n    question: Did I see a cone?\n'
        '    answer_type: yes_no\n    yes: true\n'
        '  - {id: b, category: yes_no, question: "Box?", answer_type: yes_no, yes: no}\n'
    )
    loaded = load_questions(path)
    assert [q.yes for q in loaded.questions] == [True, False]


@pytest.mark.parametrize(
    ('fields', 'field', 'why'),
    [
        ({'position': None}, 'position', 'required for a position answer'),
        ({'answer_type': 'time', 'position': None}, 'time_ns', 'required for a time answer'),
        ({'answer_type': 'yes_no'}, 'yes', 'required for a yes_no answer'),
        ({'answer_type': 'text'}, 'text', 'required for a text answer'),
        ({'category': 'image'}, 'image', 'required for an image question'),
        ({'question': None}, 'question', 'Field required'),
        ({'question': '  '}, 'question', 'must not be empty'),
        ({'time_ns': -5}, 'time_ns', 'not negative'),
    ],
)
def test_missing_answer_field_names_index_id_and_field(tmp_path, fields, field, why):
    path = _write(tmp_path, [_entry(), _entry(id='q-route-2', **fields)])
    message = _error(path)
    assert f"questions[1] (id 'q-route-2').{field}: " in message
    assert why in message
    assert str(path) in message
    assert message.startswith(f'{path}:')


def test_yaml_schema_error_gives_the_line(tmp_path):
    path = tmp_path / 'q.yaml'
    path.write_text(
        'questions:\n'
        '  - id: a\n    category: basic\n    question: Where?\n'
        '    answer_type: position\n    position: [1, 2, 3]\n'
        '  - id: b\n    category: route\n    question: Where?\n'
        '    answer_type: position\n    position: [1, oops, 3]\n'
    )
    message = _error(path)
    assert message.startswith(f'{path}:11: questions[1] (id ')
    assert '.position[1]:' in message


def test_every_problem_is_reported(tmp_path):
    path = _write(tmp_path, [_entry(position=None), _entry(id='q-1', answer_type='time')])
    lines = _error(path).splitlines()
    assert len(lines) == 2
    assert "questions[0] (id 'q-0').position" in lines[0]
    assert "questions[1] (id 'q-1').time_ns" in lines[1]


@pytest.mark.parametrize('name', ['questions.json', 'questions.yaml'])
def test_duplicate_ids_rejected(tmp_path, name):
    path = _write(tmp_path, [_entry(id='a'), _entry(id='b'), _entry(id='a')], name)
    assert "questions[2] (id 'a').id: duplicate of questions[0]" in _error(path)


def test_unknown_field_rejected(tmp_path):
    path = _write(tmp_path, [_entry(answer='here')])
    assert "questions[0] (id 'q-0').answer: Extra inputs are not permitted" in _error(path)
    top = tmp_path / 'top.json'
    top.write_text(json.dumps({'questions': [], 'notes': 'x'}))
    assert 'notes: Extra inputs are not permitted' in _error(top)


@pytest.mark.parametrize(
    ('fields', 'field'),
    [
        ({'position': [1.0, float('nan'), 0.0]}, 'position[1]'),
        ({'observed_from': [[0.0, 0.0, 0.0], [1.0, 1.0, float('inf')]]}, 'observed_from[1][2]'),
    ],
)
def test_non_finite_numbers_rejected(tmp_path, fields, field):
    path = _write(tmp_path, [_entry(**fields)], 'questions.json')
    assert 'NaN' in path.read_text() or 'Infinity' in path.read_text()
    assert f"questions[0] (id 'q-0').{field}: Input should be a finite number" in _error(path)


def test_yaml_syntax_error_reports_the_line(tmp_path):
    path = tmp_path / 'broken.yaml'
    path.write_text('questions:\n  - id: a\n    category: basic\n   question: [\n')
    message = _error(path)
    assert message.startswith(f'{path}: line 4, column 4: invalid YAML')


def test_json_syntax_error_reports_the_line(tmp_path):
    path = tmp_path / 'broken.json'
    path.write_text('{"questions": [\n  {"id": "a",}\n]}\n')
    assert _error(path).startswith(f'{path}: line 2, column 14: invalid JSON')


def test_file_level_problems(tmp_path):
    wrong = tmp_path / 'questions.txt'
    wrong.write_text('{}')
    assert 'expected a .json, .yaml or .yml file' in _error(wrong)
    assert 'cannot read' in _error(tmp_path / 'absent.json')
    empty = tmp_path / 'empty.yaml'
    empty.write_text('')
    assert (
        _error(empty)
        == f'{empty}: file: Input should be a valid dictionary or instance of QuestionSet'
    )
    no_list = tmp_path / 'no_list.json'
    no_list.write_text('{"version": 2}')
    lines = _error(no_list).splitlines()
    assert any('version: Input should be 1' in line for line in lines)
    assert any('questions: Field required' in line for line in lines)


def test_models_validate_when_built_in_code():
    with pytest.raises(ValidationError, match='required for a time answer'):
        Question(id='t', category='temporal', question='When?', answer_type='time')
    with pytest.raises(ValidationError, match='duplicate of questions'):
        QuestionSet(questions=[_entry(), _entry()])


def test_documented_example_loads(tmp_path):
    docs = Path(__file__).resolve().parents[3] / 'docs' / 'questions.md'
    example = docs.read_text().split('```yaml\n')[1].split('```')[0]
    path = tmp_path / 'example.yaml'
    path.write_text(example)
    questions = load_questions(path)
    assert {q.category for q in questions.questions} == set(Category)


def test_the_hand_written_example_for_a_robots_bag_loads(tmp_path):
    docs = Path(__file__).resolve().parents[3] / 'docs' / 'questions.md'
    robot = docs.read_text().split("## Evaluating a robot's bag")[1]
    path = tmp_path / 'lab.yaml'
    path.write_text(robot.split('```yaml\n')[1].split('```')[0])
    assert [q.id for q in load_questions(path).questions] == ['extinguisher', 'bike']
