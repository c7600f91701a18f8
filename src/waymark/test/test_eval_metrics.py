# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import pytest

from waymark.evaluation.metrics import Prediction, evaluate, score
from waymark.evaluation.questions import Question

S = 1_000_000_000


def position_question(qid='p', category='basic', position=(10.0, 0.0, 1.0), observed=()):
    return Question(
        id=qid,
        category=category,
        question='where?',
        answer_type='position',
        position=position,
        observed_from=list(observed),
    )


def answer(qid, position=None, **kwargs):
    return Prediction(question_id=qid, answered=True, position=position, **kwargs)


def test_position_error_against_the_object_or_the_nearest_viewpoint():
    question = position_question(observed=[(7.0, 0.0, 0.0), (12.0, 4.0, 1.0)])
    prediction = answer('p', (7.5, 0.0, 0.5))
    assert score(question, prediction, 'object').position_error_m == pytest.approx(2.5)
    assert score(question, prediction, 'viewpoint').position_error_m == pytest.approx(0.5)
    with pytest.raises(ValueError):
        score(question, prediction, 'centroid')


def test_success_rates_count_unanswered_questions_as_failures():
    questions = [position_question(f'q{i}') for i in range(4)]
    predictions = [
        answer('q0', (10.5, 0.0, 0.0)),  # 0.5 m
        answer('q1', (12.5, 0.0, 0.0)),  # 2.5 m
        answer('q2', (30.0, 0.0, 0.0)),  # 20 m
        Prediction(question_id='q3', answered=False),
    ]
    overall = evaluate(questions, predictions)['overall']
    assert overall['questions'] == 4 and overall['answered'] == 3
    assert overall['success_at'] == {'1': 0.25, '2': 0.25, '3': 0.5, '5': 0.5, '15': 0.5}
    assert overall['mean_position_error_m'] == pytest.approx((0.5 + 2.5 + 20.0) / 3)
    assert overall['median_position_error_m'] == pytest.approx(2.5)


def test_time_yes_no_and_per_category_summaries():
    questions = [
        Question(
            id='t', category='temporal', question='when?', answer_type='time', time_ns=100 * S
        ),
        Question(id='y', category='yes_no', question='a?', answer_type='yes_no', yes=True),
        Question(id='n', category='yes_no', question='b?', answer_type='yes_no', yes=False),
        position_question('p', category='route'),
    ]
    predictions = [
        answer('t', time_ns=130 * S),
        answer('y', yes=True),
        answer('n', yes=True),
        answer('p', (10.0, 1.0, 0.0), used_fallback=True, entries_shown=5, memory_entries=100),
    ]
    result = evaluate(questions, predictions)
    assert result['overall']['mean_time_error_s'] == pytest.approx(30.0)
    assert result['overall']['yes_no_accuracy'] == pytest.approx(0.5)
    assert set(result['per_category']) == {'temporal', 'yes_no', 'route'}
    assert result['per_category']['route']['success_at']['1'] == 1.0
    assert result['per_category']['yes_no']['yes_no_accuracy'] == 0.5
    assert result['overall']['fallback_rate'] == 0.25
    assert result['overall']['retrieval_efficiency'] == pytest.approx(0.05)


def test_a_question_without_a_prediction_is_an_error_not_a_silent_drop():
    with pytest.raises(ValueError, match='no prediction'):
        evaluate([position_question('a'), position_question('b')], [answer('a', (0, 0, 0))])


def test_the_target_estimate_is_scored_as_the_object_and_the_goal_as_the_viewpoint():
    question = position_question(observed=[(7.0, 0.0, 0.0)])
    located = answer('p', (9.0, 0.0, 0.5), target=(10.3, 0.4, 1.0), target_method='triangulated')
    scored = score(question, located, 'object')
    assert scored.position_error_m == pytest.approx(0.5) == scored.target_error_m
    assert scored.target_method == 'triangulated'
    viewpoint = score(question, located, 'viewpoint')
    assert viewpoint.position_error_m == pytest.approx(2.0)
    assert viewpoint.target_error_m == pytest.approx(0.5)  # the same whichever is scored
    # Without an estimate the answer's pose is scored and there is no target error.
    bare = score(question, answer('p', (9.0, 0.0, 0.5)), 'object')
    assert bare.position_error_m == pytest.approx(1.0) and bare.target_error_m is None


def test_target_errors_and_the_method_mix_per_category_and_overall():
    questions = [position_question(f'q{i}', 'basic' if i < 3 else 'local') for i in range(4)]
    predictions = [
        answer('q0', (9.0, 0.0, 0.0), target=(10.2, 0.0, 0.0), target_method='triangulated'),
        answer('q1', (9.0, 0.0, 0.0), target=(10.0, 0.6, 0.0), target_method='triangulated'),
        answer('q2', (9.0, 0.0, 0.0), target=(13.0, 0.0, 0.0), target_method='viewpoint'),
        answer('q3', (9.0, 0.0, 0.0), target=(10.0, 1.0, 0.0), target_method='bearing'),
    ]
    result = evaluate(questions, predictions)
    overall, basic = result['overall'], result['per_category']['basic']
    assert basic['median_target_error_m'] == pytest.approx(0.6)
    assert basic['mean_target_error_m'] == pytest.approx((0.2 + 0.6 + 3.0) / 3)
    assert basic['target_methods'] == {'triangulated': 2, 'viewpoint': 1}
    assert overall['target_methods'] == {'triangulated': 2, 'viewpoint': 1, 'bearing': 1}
    assert overall['median_target_error_m'] == pytest.approx(0.8)
    assert overall['success_at']['1'] == 0.75  # on the targets, not the goals 1 m short
