# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The lesson bank with the real sentence embedder: retrieval by similarity and trust,
calibration (concurrent included), merging near-duplicates, the cap, and read-only."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from waymark.lessons.bank import BankLimits, BankMode, LessonBank, ReadOnlyError, empty_snapshot
from waymark.lessons.cards import (
    MAX_COUNTED_KEYS,
    LessonCard,
    Provenance,
    Snapshot,
    Superseded,
    snapshot_json,
)
from waymark.lessons.retrieval import RetrievalParams
from waymark.lessons.trust import TrustPrior, Visits

LAST_SEEN = 'where did I last see the fire extinguisher?'
ON_THE_WAY = 'where is the coffee shop on the way from the office to the station?'
SORT_BY_TIME = 'When asked for the last sighting, order the sightings by time first.'
ROUTE_FIRST = 'For a place on the way between two others, find the route before the place.'


@pytest.fixture(scope='module')
def embed(sentence_embedder):
    return lambda text: sentence_embedder.embed_texts([text])[0]


def card(embed, card_id, task, lesson, visits=None, stamp_ns=0) -> LessonCard:
    return LessonCard(
        card_id,
        task,
        tuple(float(x) for x in embed(task)),
        'A question of this shape went wrong by skipping a check.',
        lesson,
        Provenance('run', card_id, 'test-model', stamp_ns),
        visits or Visits(),
    )


def bank(embed, cards, mode=BankMode.ACQUIRE, **limits) -> LessonBank:
    dimension = len(embed('x'))
    snapshot = Snapshot('all-MiniLM-L6-v2', dimension, TrustPrior(), tuple(cards))
    return LessonBank(
        snapshot,
        embed,
        mode,
        RetrievalParams(min_similarity=0.3),
        BankLimits(**limits) if limits else None,
    )


def test_a_task_retrieves_lessons_of_its_own_kind_and_trust_orders_them(embed):
    # All-MiniLM puts "where did I last see X?" questions at a cosine near 0.4 of each other
    # (the object weighs as much as the shape): the threshold here is set for it.
    cards = [
        card(embed, 'doubted', LAST_SEEN, SORT_BY_TIME, Visits(4, 0.0)),
        card(embed, 'trusted', LAST_SEEN, SORT_BY_TIME, Visits(4, 4.0)),
        card(embed, 'route', ON_THE_WAY, ROUTE_FIRST),
    ]
    lessons = bank(embed, cards).retrieve(embed('where did I last see my keys?'))
    assert [r.card.card_id for r in lessons] == ['trusted', 'doubted']  # not the route one
    assert lessons[0].ranked.similarity == pytest.approx(lessons[1].ranked.similarity)
    assert bank(embed, cards).retrieve(embed('what colour is the sky on Mars?')) == []


def test_calibration_counts_each_guiding_card_once_and_skips_gone_ones(embed):
    lessons = bank(embed, [card(embed, 'a', LAST_SEEN, SORT_BY_TIME)])
    assert lessons.calibrate(['a', 'a', 'gone'], 1.0) == 1
    (updated,) = lessons.snapshot().cards
    assert (updated.visits.count, updated.visits.reward_sum) == (1, 1.0)
    assert updated.trust(TrustPrior()) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        lessons.calibrate(['a'], 2.0)


def test_an_outcome_sent_again_under_its_key_is_counted_once_per_card(embed):
    lessons = bank(embed, [card(embed, 'a', LAST_SEEN, SORT_BY_TIME)])
    assert lessons.calibrate(['a'], 1.0, 'query q1') == 1
    assert lessons.calibrate(['a'], 1.0, 'query q1') == 0  # the same feedback, resent
    lessons.add(card(embed, 'b', ON_THE_WAY, ROUTE_FIRST))
    assert lessons.calibrate(['a', 'b'], 0.0, 'query q1') == 1  # only b had not counted it
    assert lessons.calibrate(['a'], 0.0, 'task t1') == 1  # another outcome counts
    counts = {c.card_id: (c.visits.count, c.visits.reward_sum) for c in lessons.snapshot().cards}
    assert counts == {'a': (2, 1.0), 'b': (1, 0.0)}
    with pytest.raises(ValueError, match='outcome key'):
        lessons.calibrate(['a'], 1.0, 'query\nq2')


def visits_of(lessons: LessonBank) -> dict[str, tuple[int, float]]:
    return {c.card_id: (c.visits.count, c.visits.reward_sum) for c in lessons.snapshot().cards}


def test_a_persons_word_on_a_task_replaces_the_judges_verdict(embed):
    lessons = bank(embed, [card(embed, 'a', LAST_SEEN, SORT_BY_TIME)])
    lessons.add(card(embed, 'b', ON_THE_WAY, ROUTE_FIRST))
    assert lessons.calibrate(['a'], 1.0, 'query q0') == 1  # another outcome, kept throughout
    assert lessons.calibrate(['a'], 1.0, 'task t1') == 1  # the judge certified t1, wrongly
    assert visits_of(lessons) == {'a': (2, 2.0), 'b': (0, 0.0)}
    judge = Superseded('task t1', 1.0)
    # The person says it was not done: a's credit for t1 becomes 0; b never counted t1.
    assert lessons.calibrate(['a', 'b'], 0.0, 'feedback task t1', judge) == 2
    assert visits_of(lessons) == {'a': (2, 1.0), 'b': (1, 0.0)}
    (a, b) = sorted(lessons.snapshot().cards, key=lambda c: c.card_id)
    assert a.counted == ('query q0', 'task t1', 'feedback task t1')
    assert b.counted == ('task t1', 'feedback task t1')  # the judge's count, come late, is skipped
    assert lessons.calibrate(['a', 'b'], 1.0, 'task t1') == 0
    assert lessons.calibrate(['a', 'b'], 1.0, 'feedback task t1', judge) == 0  # resent
    assert visits_of(lessons) == {'a': (2, 1.0), 'b': (1, 0.0)}


def test_a_replacement_the_counts_cannot_hold_or_without_its_own_key_changes_nothing(embed):
    lessons = bank(embed, [card(embed, 'a', LAST_SEEN, SORT_BY_TIME)])
    lessons.add(card(embed, 'b', ON_THE_WAY, ROUTE_FIRST))
    assert lessons.calibrate(['a', 'b'], 0.0, 'task t1') == 2  # NOT DONE
    before = visits_of(lessons)
    with pytest.raises(ValueError, match='cannot give back'):  # it was counted 0, not 1
        lessons.calibrate(['b', 'a'], 1.0, 'feedback task t1', Superseded('task t1', 1.0))
    for key in ('', 'task t1'):
        with pytest.raises(ValueError, match='key of its own'):
            lessons.calibrate(['a'], 1.0, key, Superseded('task t1', 0.0))
    with pytest.raises(ValueError, match='in \\[0, 1\\]'):
        Superseded('task t1', 1.5)
    assert visits_of(lessons) == before
    assert all(c.counted == ('task t1',) for c in lessons.snapshot().cards)


def test_a_card_remembers_only_its_latest_outcome_keys(embed):
    lessons = bank(embed, [card(embed, 'a', LAST_SEEN, SORT_BY_TIME)])
    keys = [f'query q{i}' for i in range(MAX_COUNTED_KEYS + 1)]
    for key in keys:
        assert lessons.calibrate(['a'], 1.0, key) == 1
    (updated,) = lessons.snapshot().cards
    assert updated.counted == tuple(keys[1:])
    assert lessons.calibrate(['a'], 1.0, keys[-1]) == 0
    assert lessons.calibrate(['a'], 1.0, keys[0]) == 1  # forgotten: counted again


def test_concurrent_calibrations_of_one_card_lose_no_update(embed):
    lessons = bank(embed, [card(embed, 'a', LAST_SEEN, SORT_BY_TIME)])

    def answer(reward: float) -> None:
        for _ in range(200):
            lessons.calibrate(['a'], reward)

    threads = [threading.Thread(target=answer, args=(i % 2,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    (updated,) = lessons.snapshot().cards
    assert (updated.visits.count, updated.visits.reward_sum) == (1600, 800.0)


def test_a_near_duplicate_lesson_is_merged_into_the_card_that_has_it(embed):
    lessons = bank(embed, [card(embed, 'a', LAST_SEEN, SORT_BY_TIME, Visits(2, 1.0))])
    again = card(
        embed, 'b', 'where did I last see the ladder?', SORT_BY_TIME.replace('first', 'first.')
    )
    added = lessons.add(again)
    assert added.merged and added.card_id == 'a' and len(lessons) == 1 and lessons.merged == 1
    other = lessons.add(card(embed, 'c', ON_THE_WAY, ROUTE_FIRST))
    assert not other.merged and other.card_id == 'c' and len(lessons) == 2


def test_the_cap_evicts_the_least_trusted_well_visited_card_first(embed):
    cards = [
        card(embed, 'new-doubtful', LAST_SEEN, SORT_BY_TIME, Visits(1, 0.0), stamp_ns=1),
        card(embed, 'well-bad', ON_THE_WAY, ROUTE_FIRST, Visits(5, 1.0), stamp_ns=2),
        card(embed, 'well-good', 'how far is the door?', 'Measure along the path.', Visits(5, 5.0)),
    ]
    lessons = bank(embed, cards, max_cards=3, well_visited=3)
    lesson = 'Count the objects once per room, never twice.'
    added = lessons.add(card(embed, 'fresh', 'how many chairs are there?', lesson))
    assert added.evicted == ('well-bad',)  # not the less trusted card seen only once
    assert sorted(c.card_id for c in lessons.snapshot().cards) == [
        'fresh', 'new-doubtful', 'well-good'
    ]  # fmt: skip
    assert lessons.evicted == 1


def test_read_only_changes_nothing_byte_for_byte(embed):
    cards = [card(embed, 'a', LAST_SEEN, SORT_BY_TIME, Visits(3, 2.0))]
    lessons = bank(embed, cards, mode=BankMode.READ_ONLY)
    before = snapshot_json(lessons.snapshot())
    assert lessons.retrieve(embed(LAST_SEEN))
    with pytest.raises(ReadOnlyError):
        lessons.calibrate(['a'], 1.0)
    with pytest.raises(ReadOnlyError):
        lessons.add(card(embed, 'b', ON_THE_WAY, ROUTE_FIRST))
    assert snapshot_json(lessons.snapshot()) == before


def test_an_embedding_of_another_size_is_refused(embed):
    lessons = LessonBank(empty_snapshot('all-MiniLM-L6-v2', 384), embed, BankMode.ACQUIRE)
    assert lessons.retrieve(embed(LAST_SEEN)) == []  # an empty bank retrieves nothing
    with pytest.raises(ValueError, match='3-d embedding'):
        lessons.retrieve(np.ones(3))
    short = LessonCard(
        's', LAST_SEEN, (1.0, 0.0, 0.0), 'summary', 'lesson', Provenance('r', 't', 'm', 0)
    )
    with pytest.raises(ValueError, match='3-d embedding'):
        lessons.add(short)
