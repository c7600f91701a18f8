# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""SMA's loop with the real sentence embedder and a scripted solver and reflector (no
model runs here): what each pass writes and calibrates, and a deployment that changes
nothing."""

from __future__ import annotations

import pytest

from waymark.lessons.acquire import (
    Outcome,
    Problem,
    Solved,
    accuracy_by_trust,
    acquire_pass,
    deploy,
)
from waymark.lessons.bank import BankMode, LessonBank, empty_snapshot
from waymark.lessons.cards import snapshot_json
from waymark.lessons.leakage import LeakContext
from waymark.lessons.reflect import Pending
from waymark.lessons.reflection import Reflection, Rejected, RejectReason
from waymark.lessons.retrieval import RetrievalParams

LAST_SEEN = [
    Problem(f'q{i}', f'where did I last see the {thing}?', 'the newest sighting')
    for i, thing in enumerate(('ladder', 'red backpack', 'fire extinguisher', 'blue mug'))
]
SORT = Reflection(
    'A last-seen question answered with the best match, not the newest.',
    'When asked for the last sighting, sort the sightings by time first.',
)


@pytest.fixture(scope='module')
def embed(sentence_embedder):
    return lambda text: sentence_embedder.embed_texts([text])[0]


def solve(problem: Problem, block: str) -> Solved:
    """Right only when a lesson told it to sort by time: the lessons are what it reads."""
    return Solved('newest' if 'sort the sightings by time' in block else 'first', 'one search')


def score(problem: Problem, solved: Solved) -> float:
    return 1.0 if solved.answer == 'newest' else 0.0


def new_bank(embed) -> LessonBank:
    params = RetrievalParams(min_similarity=0.3)  # all-MiniLM's range for one question shape
    return LessonBank(empty_snapshot('all-MiniLM-L6-v2', 384), embed, BankMode.ACQUIRE, params)


def run(bank, embed, number, reflect=lambda item, context: SORT):
    return acquire_pass(
        bank, LAST_SEEN, number, solve, score, reflect, embed, LeakContext(), 'scripted', 'env'
    )


def test_the_first_pass_writes_after_calibrating_and_later_passes_only_calibrate(embed):
    bank = new_bank(embed)
    first = run(bank, embed, 0)
    # The first problem had no lesson; every later one got the first card's lesson.
    assert [o.reward for o in first.outcomes] == [0.0, 1.0, 1.0, 1.0]
    assert first.outcomes[0].lesson_ids == ()
    assert (first.written, first.merged, first.bank_size) == (1, 3, 1)  # one habit, one card
    (card,) = bank.snapshot().cards
    assert (card.visits.count, card.visits.reward_sum) == (3, 3.0)
    second = run(bank, embed, 1)
    assert second.written == second.merged == 0 and second.bank_size == 1
    assert [o.reward for o in second.outcomes] == [1.0] * 4
    (card,) = bank.snapshot().cards
    assert (card.visits.count, card.visits.reward_sum) == (7, 7.0)


def test_an_answer_that_fell_back_credits_no_lesson(embed):
    bank = new_bank(embed)
    run(bank, embed, 0)
    (card,) = bank.snapshot().cards
    before = (card.visits.count, card.visits.reward_sum)

    def fell_back(problem: Problem, block: str) -> Solved:
        return Solved('first', 'no model: the embedder-only answer', by_model=False)

    report = acquire_pass(
        bank, LAST_SEEN, 1, fell_back, score, lambda i, c: SORT, embed, LeakContext(), 'x', 'env'
    )
    assert all(o.lesson_ids == () and o.reward == 0.0 for o in report.outcomes)
    assert all(o.mean_trust is None for o in report.outcomes)  # binned as given none
    (card,) = bank.snapshot().cards
    assert (card.visits.count, card.visits.reward_sum) == before  # its wrong answers count not


def test_each_pass_has_its_own_fixed_order(embed):
    orders = [
        [o.problem_id for o in run(new_bank(embed), embed, number).outcomes] for number in (0, 0, 1)
    ]
    assert orders[0] == orders[1] and sorted(orders[2]) == sorted(orders[0])
    assert orders[2] != orders[0]


def test_rejected_and_pending_reflections_are_counted_not_written(embed):
    replies = iter(
        [
            Rejected(RejectReason.LEAK, 'number: 3'),
            Pending('away'),
            SORT,
            Rejected(RejectReason.NOT_JSON, 'x'),
        ]
    )
    report = run(new_bank(embed), embed, 0, reflect=lambda item, context: next(replies))
    assert report.rejected == {'leak': 1, 'not_json': 1} and report.pending == 1
    assert report.written == 1


def test_deployment_reads_the_bank_and_changes_nothing(embed):
    bank = new_bank(embed)
    run(bank, embed, 0)
    frozen = LessonBank(bank.snapshot(), embed, BankMode.READ_ONLY, bank.params)
    before = snapshot_json(frozen.snapshot())
    unseen = [Problem('d0', 'where did I last see my keys?', 'the newest sighting')]
    report = deploy(frozen, unseen, solve, score, embed)
    assert report.accuracy == 1.0 and report.outcomes[0].mean_trust == pytest.approx(0.8)
    assert snapshot_json(frozen.snapshot()) == before


def test_accuracy_by_trust_bins():
    outcomes = [
        Outcome('a', 1.0, ('x',), 0.81),
        Outcome('b', 0.0, ('x',), 0.89),
        Outcome('c', 1.0, ('y',), 1.0),
        Outcome('d', 0.0, (), None),
    ]
    assert accuracy_by_trust(outcomes) == {
        '0.8-0.9': (0.5, 2),
        '0.9-1.0': (1.0, 1),
        'none': (0.0, 1),
    }
