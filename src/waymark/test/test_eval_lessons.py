# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""SMA's evaluation loop over a small real memory: the agent planned by the scripted
planner, lessons reflected by a scripted policy, tasks embedded by the real text model.
The planner reads no lesson, so these tests check the loop's bookkeeping, not gains."""

from __future__ import annotations

import pytest

from waymark.agent.llm import LLMConfig
from waymark.evaluation.agent_answerer import AgentAnswerer
from waymark.evaluation.lessons_eval import (
    RAG_HEADER,
    ROWS,
    LessonsEvalConfig,
    RewardRule,
    evaluate_world,
    verified_words,
)
from waymark.evaluation.metrics import Prediction
from waymark.evaluation.questions import Question
from waymark.lessons.prompt import HEADER
from waymark.lessons.splits import split_by_category
from waymark_testing.agent_memory import HALF_SECOND, T0, build_memory, plaza_pose, route_pose
from waymark_testing.scripted_lessons import ReflectingPlanner
from waymark_testing.scripted_llm import ScriptedLLMServer

PLACES = {
    'office': route_pose(1),
    'bakery': route_pose(37),
    'station': route_pose(58),
    'kiosk': plaza_pose(2),
}
MOMENTS = {'office': 1, 'bakery': 37, 'station': 58, 'corridor': 119}


def questions() -> list[Question]:
    asked = []
    for name, place in PLACES.items():
        asked.append(
            Question(
                id=f'where-{name}', category='basic', question=f'Where did I see the {name}?',
                answer_type='position', target=name, position=(place.x, place.y, place.z),
            )
        )  # fmt: skip
    for name, frame in MOMENTS.items():
        asked.append(
            Question(
                id=f'when-{name}', category='temporal', question=f'When did I last see the {name}?',
                answer_type='time', target=name, time_ns=T0 + frame * HALF_SECOND,
            )
        )  # fmt: skip
    for name, seen in (('BAKERY', True), ('STATION', True), ('PHARMACY', False), ('MUSEUM', False)):
        asked.append(
            Question(
                id=f'saw-{name.lower()}', category='yes_no',
                question=f'Did I see a sign saying {name}?', answer_type='yes_no',
                target=name.lower(), yes=seen,
            )
        )  # fmt: skip
    return asked


@pytest.fixture(scope='module')
def memory(tmp_path_factory):
    service = build_memory(tmp_path_factory.mktemp('lessons_eval_memory'))
    yield service
    service.store.close()


@pytest.fixture(scope='module')
def embed(sentence_embedder):
    return lambda text: sentence_embedder.embed_texts([text])[0]


def evaluate(memory, embed, leak=False, passes=2):
    policy = ReflectingPlanner(leak=leak)
    with ScriptedLLMServer(policy, model='scripted/planner') as server:
        llm = LLMConfig(base_url=server.base_url, model=server.model, timeout_s=5.0)
        answerer = AgentAnswerer(memory, llm, label='scripted')
        config = LessonsEvalConfig(passes=passes)
        result = evaluate_world('walk', questions(), answerer, embed, 'minilm', config, True)
        return result, policy, server.requests


def user_texts(requests) -> list[str]:
    return [
        body['messages'][1]['content']
        for body in requests
        if 'transferable_lesson' not in str(body['messages'][0]['content'])
        and len(body['messages']) == 2  # the first request of a question
    ]


@pytest.fixture(scope='module')
def clean_run(memory, embed):
    return evaluate(memory, embed)


def test_lessons_are_written_in_the_first_pass_only_and_every_pass_calibrates(clean_run):
    result, policy, _ = clean_run
    environment, _ = split_by_category(questions(), lambda q: q.category.value)
    first, second = result.passes
    assert policy.reflections == len(environment)  # one per environment question, pass 0 only
    assert first.written + first.merged == len(environment) and not first.rejected
    assert first.merged > 0  # the policy writes one lesson per kind: repeats merge
    assert second.written == second.merged == 0 and second.bank_size == first.bank_size
    for report in result.passes:
        assert sorted(o.problem_id for o in report.outcomes) == sorted(q.id for q in environment)
    # the second pass was given lessons, and they were trusted by what they guided
    assert any(o.lesson_ids for o in second.outcomes)
    assert all(o.mean_trust is not None for o in second.outcomes if o.lesson_ids)


def test_every_row_answers_the_whole_deployment_split(clean_run):
    result, _, _ = clean_run
    _, deployment = split_by_category(questions(), lambda q: q.category.value)
    assert tuple(result.rows) == ROWS
    for report in result.rows.values():
        assert sorted(o.problem_id for o in report.outcomes) == sorted(q.id for q in deployment)
    assert all(not o.lesson_ids for o in result.rows['no-lessons'].outcomes)
    assert any(o.lesson_ids for o in result.rows['lessons-trs'].outcomes)
    accuracy, count = result.accuracy('no-lessons')
    assert count == len(deployment) and 0.0 <= accuracy <= 1.0
    assert result.accuracy('lessons-trs', 'yes_no')[1] == 2


def test_each_row_puts_its_own_block_before_the_question(clean_run):
    _, _, requests = clean_run
    texts = user_texts(requests)
    with_lessons = [t for t in texts if t.startswith(HEADER)]
    with_answers = [t for t in texts if t.startswith(RAG_HEADER)]
    assert with_lessons and with_answers
    assert all('answer given:' in t for t in with_answers)
    assert not any('answer given:' in t for t in with_lessons)  # a lesson carries no answer


def test_the_report_says_it_shows_mechanics_and_bins_every_lessons_answer(clean_run):
    result, _, _ = clean_run
    report = result.to_json()
    assert report['mechanics_only'] is True and report['model'] == 'scripted/planner'
    binned = sum(b['answers'] for b in report['accuracy_by_trust'].values())
    assert binned == len(result.rows['lessons-trs'].outcomes)
    assert [p['bank_size'] for p in report['passes']] == [result.passes[0].bank_size] * 2


def test_leaking_reflections_are_refused_and_counted_and_no_card_is_written(memory, embed):
    result, policy, _ = evaluate(memory, embed, leak=True, passes=1)
    environment, _ = split_by_category(questions(), lambda q: q.category.value)
    (first,) = result.passes
    assert policy.reflections == 2 * len(environment)  # one retry each
    assert sum(first.rejected.values()) == len(environment) and first.bank_size == 0
    assert all(not o.lesson_ids for o in result.rows['lessons-trs'].outcomes)


@pytest.mark.parametrize(
    ('question', 'prediction', 'reward'),
    [
        (dict(answer_type='position', position=(0, 0, 0)), dict(position=(3.0, 4.0, 0)), 1.0),
        (dict(answer_type='position', position=(0, 0, 0)), dict(position=(3.0, 4.1, 0)), 0.0),
        (dict(answer_type='time', time_ns=T0), dict(time_ns=T0 + 60 * 10**9), 1.0),
        (dict(answer_type='time', time_ns=T0), dict(time_ns=T0 - 61 * 10**9), 0.0),
        (dict(answer_type='yes_no', yes=False), dict(yes=False), 1.0),
        (dict(answer_type='yes_no', yes=False), dict(yes=True), 0.0),
        (dict(answer_type='position', position=(0, 0, 0)), dict(answered=False), 0.0),
    ],
)  # fmt: skip
def test_the_reward_is_the_harness_metric_made_binary(question, prediction, reward):
    asked = Question(id='q', category='basic', question='q?', **question)
    answered = Prediction(question_id='q', **{'answered': True, **prediction})
    assert RewardRule(tau_m=5.0, time_tolerance_s=60.0)(asked, answered) == reward


def test_the_verified_target_is_put_in_words():
    where, when, whether = questions()[1], questions()[5], questions()[10]
    assert verified_words(where) == 'bakery is at x=18.5 y=0.0'
    assert verified_words(when) == 'at 15:06:58 UTC'
    assert verified_words(whether) == 'no'
