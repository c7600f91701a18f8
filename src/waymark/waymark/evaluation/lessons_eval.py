# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""SMA's evaluation on one world's questions: the agent with no lessons, with retrieved
prior answers (RAG), with reflected lessons ranked by similarity only, and with lessons
ranked by similarity and trust (TRS).

The questions are halved per category (`split_by_category`, seed 42). Lessons are
acquired on the environment half for `passes` passes (cards written in the first pass
only, every pass calibrating), then each row answers the deployment half read-only:

- `no-lessons`: nothing before the question;
- `rag`: the most similar environment questions with the answer the agent gave them in
  the first pass (no reflection, no trust);
- `similarity-only`: the acquired cards, ranked with η = 0;
- `lessons-trs`: the acquired cards, ranked with the configured η.

A reward is the harness's metric made binary: a position within `tau_m` of the thing, a
time within `time_tolerance_s`, a right yes or no. The scripted planner cannot read a
lesson, so its rows only show the loop works; `mechanics_only` marks them.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from waymark.agent.agent import LessonsGiven
from waymark.agent.evidence import quote
from waymark.evaluation.agent_answerer import AgentAnswerer
from waymark.evaluation.harness import question_image
from waymark.evaluation.metrics import Prediction, score
from waymark.evaluation.questions import AnswerType, Question
from waymark.lessons.acquire import (
    Outcome,
    PassReport,
    Problem,
    Solved,
    accuracy_by_trust,
    acquire_pass,
    deploy,
)
from waymark.lessons.bank import BankMode, Embed, LessonBank, empty_snapshot, unit_vector
from waymark.lessons.cards import MAX_TASK_CHARS
from waymark.lessons.leakage import LeakContext
from waymark.lessons.reflect import ReflectionInput, record_of, reflect
from waymark.lessons.retrieval import RetrievalParams
from waymark.lessons.splits import split_by_category

ROWS = ('no-lessons', 'rag', 'similarity-only', 'lessons-trs')
MAX_ANSWER_CHARS = 300
RAG_HEADER = (
    'Earlier questions about this memory and the answers given to them (not checked; '
    'they may be wrong):'
)


@dataclass(frozen=True)
class RewardRule:
    """A verified outcome as SMA's binary reward."""

    tau_m: float = 5.0
    time_tolerance_s: float = 60.0

    def __call__(self, question: Question, prediction: Prediction) -> float:
        result = score(question, prediction)
        if result.position_error_m is not None:
            return float(result.position_error_m <= self.tau_m)
        if result.time_error_s is not None:
            return float(result.time_error_s <= self.time_tolerance_s)
        return float(bool(result.correct))


@dataclass(frozen=True)
class LessonsEvalConfig:
    passes: int = 3
    retrieval: RetrievalParams = field(default_factory=RetrievalParams)
    reward: RewardRule = field(default_factory=RewardRule)
    reflection_tokens: int = 300

    def __post_init__(self) -> None:
        if self.passes < 1:
            raise ValueError(f'passes must be >= 1, got {self.passes}')


def verified_words(question: Question) -> str:
    """The verified target as the reflecting model sees it."""
    if question.answer_type is AnswerType.POSITION and question.position is not None:
        x, y, _ = question.position
        return f'{question.target or "the place asked about"} is at x={x:.1f} y={y:.1f}'
    if question.answer_type is AnswerType.TIME and question.time_ns is not None:
        moment = datetime.datetime.fromtimestamp(question.time_ns / 1e9, datetime.timezone.utc)
        return f'at {moment:%H:%M:%S} UTC'
    if question.answer_type is AnswerType.YES_NO and question.yes is not None:
        return 'yes' if question.yes else 'no'
    return question.text or ''


class AgentSolver:
    """The agent as SMA's solver: each question asked with the given block before it,
    its prediction kept for the reward and its steps condensed for reflection."""

    def __init__(
        self,
        answerer: AgentAnswerer,
        questions: Sequence[Question],
        reward,
        photo_dir: Path | None = None,
    ) -> None:
        self.answerer = answerer
        self.photo_dir = photo_dir  # where the questions' photos are (the question file's)
        self.questions = {q.id: q for q in questions}
        self.reward = reward
        self.predictions: dict[str, Prediction] = {}
        self.last_answer = ''

    def solve(self, problem: Problem, block: str) -> Solved:
        question = self.questions[problem.problem_id]
        self.answerer.agent.lessons = lambda _text: LessonsGiven(block)
        photo = question_image(question, self.photo_dir) if self.photo_dir else None
        prediction = self.answerer.answer(question, photo)
        self.predictions[problem.problem_id] = prediction
        self.last_answer = _answer_words(prediction)
        return Solved(
            self.last_answer,
            record_of(self.answerer.last_trace),
            by_model=not prediction.used_fallback,
        )

    def score(self, problem: Problem, solved: Solved) -> float:
        del solved  # the prediction behind it is kept
        return self.reward(self.questions[problem.problem_id], self.predictions[problem.problem_id])


class PriorAnswers:
    """RAG's memory: environment questions with the answer first given, retrieved by
    task similarity above δ, the `top_k` most similar."""

    def __init__(self, embed_task: Embed, params: RetrievalParams) -> None:
        self.embed_task = embed_task
        self.params = params
        self.tasks: list[str] = []
        self.answers: list[str] = []
        self.vectors: list[np.ndarray] = []

    def add(self, task: str, answer: str) -> None:
        self.tasks.append(task)
        self.answers.append(answer)
        self.vectors.append(unit_vector(self.embed_task(task)))

    def block(self, task: str) -> str:
        if not self.vectors:
            return ''
        similarity = np.stack(self.vectors) @ unit_vector(self.embed_task(task))
        passing = similarity >= self.params.min_similarity
        order = [int(i) for i in np.argsort(-similarity) if passing[i]]
        parts = [RAG_HEADER]
        for i in order[: self.params.top_k]:
            parts.append(
                f'- question: {quote(self.tasks[i], MAX_TASK_CHARS)}\n'
                f'  answer given: {quote(self.answers[i], MAX_ANSWER_CHARS)}'
            )
        return '\n'.join(parts) if len(parts) > 1 else ''


@dataclass
class WorldResult:
    """One world's rows: each row's deployment outcomes, the acquisition passes, and the
    question categories to break them down by."""

    world: str
    model: str
    mechanics_only: bool
    categories: dict[str, str]  # question id -> category
    passes: list[PassReport]
    rows: dict[str, PassReport]

    def accuracy(self, row: str, category: str | None = None) -> tuple[float | None, int]:
        rewards = [
            o.reward
            for o in self.rows[row].outcomes
            if category is None or self.categories[o.problem_id] == category
        ]
        return (float(np.mean(rewards)) if rewards else None), len(rewards)

    def to_json(self) -> dict:
        return {
            'world': self.world,
            'model': self.model,
            'mechanics_only': self.mechanics_only,
            'passes': [_pass_json(p) for p in self.passes],
            'rows': {name: _pass_json(report) for name, report in self.rows.items()},
            'accuracy_by_trust': {
                key: {'accuracy': acc, 'answers': n}
                for key, (acc, n) in accuracy_by_trust(self.rows['lessons-trs'].outcomes).items()
            },
        }


def evaluate_world(
    world: str,
    questions: Sequence[Question],
    answerer: AgentAnswerer,
    embed_task: Embed,
    embedder_name: str,
    config: LessonsEvalConfig,
    mechanics_only: bool,
    photo_dir: Path | None = None,
) -> WorldResult:
    """Acquire on the environment half, then every row on the deployment half."""
    environment, deployment = split_by_category(questions, lambda q: q.category.value)
    solver = AgentSolver(answerer, questions, config.reward, photo_dir)
    model = answerer.llm.model
    dimension = len(embed_task(questions[0].question))
    bank = LessonBank(
        empty_snapshot(embedder_name, dimension), embed_task, BankMode.ACQUIRE, config.retrieval
    )
    names = [name for q in questions for name in (q.target, q.text) if name]
    context = LeakContext.of(known_names=names)

    def reflect_on(item: ReflectionInput, leak_context: LeakContext):
        # acquire reflects right after solving, so the solver's last answer is this one's
        widened = LeakContext.of(leak_context.known_names, [solver.last_answer])
        return reflect(answerer.chat, item, widened, max_tokens=config.reflection_tokens)

    env_problems = [_problem(q) for q in environment]
    passes = []
    for number in range(config.passes):
        passes.append(
            acquire_pass(
                bank, env_problems, number, solver.solve, solver.score, reflect_on,
                embed_task, context, model, run=world,
            )
        )  # fmt: skip
        if number == 0:
            prior = PriorAnswers(embed_task, config.retrieval)
            for problem in env_problems:
                prior.add(problem.task, _answer_words(solver.predictions[problem.problem_id]))
    deploy_problems = [_problem(q) for q in deployment]
    final = bank.snapshot()
    banks = {
        'no-lessons': LessonBank(empty_snapshot(embedder_name, dimension), embed_task),
        'similarity-only': LessonBank(
            final, embed_task, params=dataclasses.replace(config.retrieval, trust_weight=0.0)
        ),
        'lessons-trs': LessonBank(final, embed_task, params=config.retrieval),
    }
    rows = {}
    for name in ROWS:
        if name == 'rag':
            rows[name] = _deploy_rag(prior, deploy_problems, solver)
        else:
            rows[name] = deploy(
                banks[name], deploy_problems, solver.solve, solver.score, embed_task
            )
    return WorldResult(
        world, model, mechanics_only, {q.id: q.category.value for q in questions}, passes, rows
    )


def _deploy_rag(
    prior: PriorAnswers, problems: Sequence[Problem], solver: AgentSolver
) -> PassReport:
    report = PassReport(-1)
    for problem in problems:
        solved = solver.solve(problem, prior.block(problem.task))
        report.outcomes.append(Outcome(problem.problem_id, solver.score(problem, solved), (), None))
    report.bank_size = len(prior.tasks)
    return report


def _problem(question: Question) -> Problem:
    return Problem(question.id, question.question, verified_words(question))


def _answer_words(prediction: Prediction) -> str:
    if not prediction.answered:
        return f'no answer ({prediction.message})' if prediction.message else 'no answer'
    if prediction.position is not None:
        x, y, _ = prediction.target or prediction.position
        return f'position x={x:.1f} y={y:.1f}'
    if prediction.time_ns is not None:
        moment = datetime.datetime.fromtimestamp(prediction.time_ns / 1e9, datetime.timezone.utc)
        return f'at {moment:%H:%M:%S} UTC'
    if prediction.yes is not None:
        return 'yes' if prediction.yes else 'no'
    return prediction.text


def _pass_json(report: PassReport) -> dict:
    return {
        'number': report.number,
        'accuracy': report.accuracy,
        'answers': len(report.outcomes),
        'written': report.written,
        'merged': report.merged,
        'rejected': dict(report.rejected),
        'pending': report.pending,
        'bank_size': report.bank_size,
        'outcomes': [dataclasses.asdict(o) for o in report.outcomes],
    }
