# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Scores of predictions against a question set, per category and overall.

Position success follows RAVEN: the answer is right when it lies within τ metres of the
ground truth, for τ in {1, 2, 3, 5, 15}. Two ground truths exist and the report says
which was used, each scoring its own position of the answer:

- "object": the thing's own position against the answer's target estimate (where the
  answerer located the thing), or against the answer's pose when it has no estimate;
- "viewpoint": the nearest camera pose that saw the thing against the answer's pose (the
  goal to drive to: a place to look from).

Apart from these, the target error is the distance from the target estimate to the
thing's position, over the answers that have an estimate, with the mix of methods that
found them. A question without an answer counts as a failure at every τ and in every
rate; it is never dropped.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from waymark.evaluation.questions import AnswerType, Question

THRESHOLDS_M = (1.0, 2.0, 3.0, 5.0, 15.0)
POSITION_METRICS = ('object', 'viewpoint')
NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class Prediction:
    """What an answerer said for one question, with what it cost."""

    question_id: str
    answered: bool
    position: tuple[float, float, float] | None = None  # the pose to go to (goal)
    # Where the answerer located the thing itself, its 1-sigma and how (localisation).
    target: tuple[float, float, float] | None = None
    target_sigma_m: float | None = None
    target_method: str = ''
    viewpoint: tuple[float, float, float] | None = None  # where the camera stood
    time_ns: int | None = None
    yes: bool | None = None
    text: str = ''
    used_fallback: bool = False
    entries_shown: int = 0  # memory entries put before the reasoner
    memory_entries: int = 0  # entries in memory when the question was asked
    latency_s: float = 0.0
    llm_calls: int = 0
    tokens: int = 0  # prompt and completion tokens of those calls
    retrievals: int = 0  # memory searches made for the question (the agent's)
    verifier_calls: int = 0
    message: str = ''


@dataclass
class Score:
    """One question's outcome: errors are None where they do not apply or no answer came."""

    question_id: str
    category: str
    answer_type: str
    answered: bool
    position_error_m: float | None = None
    target_error_m: float | None = None  # target estimate to the thing's position
    target_method: str = ''
    time_error_s: float | None = None
    correct: bool | None = None  # yes/no and text answers


@dataclass
class Summary:
    questions: int
    answered: int
    success_at: dict[str, float] = field(default_factory=dict)
    position_questions: int = 0
    mean_position_error_m: float | None = None
    median_position_error_m: float | None = None
    mean_target_error_m: float | None = None
    median_target_error_m: float | None = None
    target_methods: dict[str, int] = field(default_factory=dict)  # answers by method
    time_questions: int = 0
    mean_time_error_s: float | None = None
    median_time_error_s: float | None = None
    yes_no_questions: int = 0
    yes_no_accuracy: float | None = None
    retrieval_efficiency: float | None = None
    mean_latency_s: float | None = None
    llm_calls_per_query: float = 0.0
    tokens_per_query: float = 0.0
    retrievals_per_query: float = 0.0
    verifier_calls_per_query: float = 0.0
    fallback_rate: float = 0.0


def score(question: Question, prediction: Prediction, position_metric: str = 'object') -> Score:
    if position_metric not in POSITION_METRICS:
        raise ValueError(f'position_metric must be one of {POSITION_METRICS}')
    result = Score(
        question.id, question.category.value, question.answer_type.value, prediction.answered
    )
    if question.answer_type == AnswerType.POSITION:
        if prediction.answered and prediction.position is not None:
            result.position_error_m = _position_error(question, prediction, position_metric)
        if prediction.answered and prediction.target is not None:
            result.target_method = prediction.target_method
            if question.position is not None:
                result.target_error_m = _distance(prediction.target, question.position)
    elif question.answer_type == AnswerType.TIME:
        if prediction.answered and prediction.time_ns is not None:
            result.time_error_s = abs(prediction.time_ns - question.time_ns) / NS_PER_S
    elif question.answer_type == AnswerType.YES_NO:
        result.correct = prediction.answered and prediction.yes is question.yes
    else:
        expected = (question.text or '').strip().lower()
        result.correct = prediction.answered and prediction.text.strip().lower() == expected
    return result


def _position_error(question: Question, prediction: Prediction, metric: str) -> float:
    if metric == 'viewpoint' and question.observed_from:
        return min(_distance(prediction.position, seen) for seen in question.observed_from)
    return _distance(prediction.target or prediction.position, question.position)


def _distance(a: Sequence[float], b: Sequence[float]) -> float:
    """Horizontal distance: heights are not asked for."""
    return math.hypot(a[0] - b[0], a[1] - b[1])


def summarise(scores: Sequence[Score], predictions: Sequence[Prediction]) -> Summary:
    """Rates over every question of the kind; errors averaged over the answered ones."""
    summary = Summary(questions=len(scores), answered=sum(s.answered for s in scores))
    positions = [s for s in scores if s.answer_type == AnswerType.POSITION.value]
    summary.position_questions = len(positions)
    errors = [s.position_error_m for s in positions if s.position_error_m is not None]
    if positions:
        for tau in THRESHOLDS_M:
            hits = sum(1 for e in errors if e <= tau)
            summary.success_at[f'{tau:g}'] = hits / len(positions)
    if errors:
        summary.mean_position_error_m = statistics.fmean(errors)
        summary.median_position_error_m = statistics.median(errors)
    target_errors = [s.target_error_m for s in positions if s.target_error_m is not None]
    if target_errors:
        summary.mean_target_error_m = statistics.fmean(target_errors)
        summary.median_target_error_m = statistics.median(target_errors)
    summary.target_methods = dict(Counter(s.target_method for s in positions if s.target_method))
    times = [s for s in scores if s.answer_type == AnswerType.TIME.value]
    summary.time_questions = len(times)
    time_errors = [s.time_error_s for s in times if s.time_error_s is not None]
    if time_errors:
        summary.mean_time_error_s = statistics.fmean(time_errors)
        summary.median_time_error_s = statistics.median(time_errors)
    yes_no = [s for s in scores if s.answer_type == AnswerType.YES_NO.value]
    summary.yes_no_questions = len(yes_no)
    if yes_no:
        summary.yes_no_accuracy = sum(bool(s.correct) for s in yes_no) / len(yes_no)
    if predictions:
        shown = [p.entries_shown / p.memory_entries for p in predictions if p.memory_entries]
        summary.retrieval_efficiency = statistics.fmean(shown) if shown else None
        summary.mean_latency_s = statistics.fmean(p.latency_s for p in predictions)
        summary.llm_calls_per_query = statistics.fmean(p.llm_calls for p in predictions)
        summary.tokens_per_query = statistics.fmean(p.tokens for p in predictions)
        summary.retrievals_per_query = statistics.fmean(p.retrievals for p in predictions)
        summary.verifier_calls_per_query = statistics.fmean(p.verifier_calls for p in predictions)
        summary.fallback_rate = statistics.fmean(p.used_fallback for p in predictions)
    return summary


def evaluate(
    questions: Sequence[Question],
    predictions: Sequence[Prediction],
    position_metric: str = 'object',
) -> dict:
    """Scores and summaries (overall and per category) as plain data for the report."""
    by_id = {p.question_id: p for p in predictions}
    missing = [q.id for q in questions if q.id not in by_id]
    if missing:
        raise ValueError(f'no prediction for {len(missing)} questions, e.g. {missing[:3]}')
    scores = [score(q, by_id[q.id], position_metric) for q in questions]
    categories = sorted({q.category.value for q in questions})
    per_category = {}
    for category in categories:
        chosen = [i for i, q in enumerate(questions) if q.category.value == category]
        per_category[category] = asdict(
            summarise([scores[i] for i in chosen], [by_id[questions[i].id] for i in chosen])
        )
    return {
        'position_metric': position_metric,
        'overall': asdict(summarise(scores, [by_id[q.id] for q in questions])),
        'per_category': per_category,
        'scores': [asdict(s) for s in scores],
    }
