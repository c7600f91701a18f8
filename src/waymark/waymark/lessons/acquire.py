# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""SMA's loop over a split of problems with verified answers.

Acquiring (one pass): for each problem, in an order shuffled by the pass number, retrieve
lessons, solve with them in front of the task, score the answer against the verified one,
calibrate every lesson that guided it by that reward and, in the first pass only, reflect
and write a new card. The card is written after calibration, so a problem never retrieves
its own lesson in the pass that wrote it. Later passes only calibrate.

Deploying: the same retrieval over a read-only bank, nothing written; the report keeps
each answer's reward and the mean trust of the lessons it was given, for the accuracy by
trust diagnostic.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from waymark.lessons.bank import Embed, LessonBank
from waymark.lessons.cards import LessonCard, Provenance
from waymark.lessons.leakage import LeakContext
from waymark.lessons.prompt import ShownLesson, lesson_block
from waymark.lessons.reflect import Pending, ReflectionInput
from waymark.lessons.reflection import Reflection, Rejected

TRUST_BIN = 0.1


@dataclass(frozen=True)
class Problem:
    """One question of a split: its id, its text, and the verified answer in words."""

    problem_id: str
    task: str
    verified: str


@dataclass(frozen=True)
class Solved:
    """A solver's answer and a condensed record of how it got there; `by_model` false
    when the answer fell back (the model never read the lessons, so none is credited)."""

    answer: str
    record: str
    by_model: bool = True


Solve = Callable[[Problem, str], Solved]  # (problem, lessons block) -> answer
Score = Callable[[Problem, Solved], float]  # reward in [0, 1] against the verified answer
Reflect = Callable[[ReflectionInput, LeakContext], Reflection | Rejected | Pending]


@dataclass
class Outcome:
    problem_id: str
    reward: float
    lesson_ids: tuple[str, ...]
    mean_trust: float | None  # of the lessons given; None when none were


@dataclass
class PassReport:
    """One pass: every outcome, and what writing did (first pass only)."""

    number: int
    outcomes: list[Outcome] = field(default_factory=list)
    written: int = 0
    merged: int = 0
    rejected: Counter = field(default_factory=Counter)  # reason -> count
    pending: int = 0
    bank_size: int = 0

    @property
    def accuracy(self) -> float:
        return float(np.mean([o.reward for o in self.outcomes])) if self.outcomes else 0.0


def acquire_pass(
    bank: LessonBank,
    problems: Sequence[Problem],
    number: int,
    solve: Solve,
    score: Score,
    reflect: Reflect,
    embed_task: Embed,
    context: LeakContext,
    model: str,
    run: str,
) -> PassReport:
    """One pass over the environment split (pass 0 writes cards; every pass calibrates)."""
    report = PassReport(number)
    order = list(problems)
    random.Random(number).shuffle(order)
    for position, problem in enumerate(order):
        vector = embed_task(problem.task)
        outcome, solved = _answer(bank, problem, vector, solve, score)
        report.outcomes.append(outcome)
        bank.calibrate(outcome.lesson_ids, outcome.reward)
        if number != 0:
            continue
        written = reflect(
            ReflectionInput(problem.task, solved.record, problem.verified, outcome.reward),
            context,
        )
        if isinstance(written, Pending):
            report.pending += 1
        elif isinstance(written, Rejected):
            report.rejected[str(written.reason)] += 1
        else:
            card = LessonCard(
                f'{run}-{problem.problem_id}'[:128],
                problem.task,
                tuple(float(x) for x in vector),
                written.summary,
                written.lesson,
                Provenance(run, problem.problem_id, model, position),
            )
            added = bank.add(card)
            report.merged += added.merged
            report.written += not added.merged
    report.bank_size = len(bank)
    return report


def deploy(
    bank: LessonBank, problems: Sequence[Problem], solve: Solve, score: Score, embed_task: Embed
) -> PassReport:
    """Answers the deployment split with the bank as it is; changes nothing."""
    report = PassReport(-1)
    for problem in problems:
        outcome, _ = _answer(bank, problem, embed_task(problem.task), solve, score)
        report.outcomes.append(outcome)
    report.bank_size = len(bank)
    return report


def _answer(
    bank: LessonBank, problem: Problem, vector: np.ndarray, solve: Solve, score: Score
) -> tuple[Outcome, Solved]:
    lessons = bank.retrieve(vector)
    solved = solve(problem, lesson_block([ShownLesson.of(found) for found in lessons]))
    reward = score(problem, solved)
    read = lessons if solved.by_model else []  # a fallback read none of them
    trusts = [found.ranked.trust for found in read]
    ids = tuple(found.card.card_id for found in read)
    mean = float(np.mean(trusts)) if trusts else None
    return Outcome(problem.problem_id, reward, ids, mean), solved


def accuracy_by_trust(outcomes: Sequence[Outcome]) -> dict[str, tuple[float, int]]:
    """SMA's diagnostic: mean reward of answers by the mean trust of their lessons, in
    bins of 0.1 ('0.5-0.6': (accuracy, answers)); answers given no lesson under 'none'."""
    bins: dict[str, list[float]] = {}
    for outcome in outcomes:
        if outcome.mean_trust is None:
            key = 'none'
        else:
            low = min(int(outcome.mean_trust / TRUST_BIN), int(1 / TRUST_BIN) - 1) * TRUST_BIN
            key = f'{low:.1f}-{low + TRUST_BIN:.1f}'
        bins.setdefault(key, []).append(outcome.reward)
    return {key: (float(np.mean(r)), len(r)) for key, r in sorted(bins.items())}
