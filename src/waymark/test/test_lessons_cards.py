# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Lesson cards and bank snapshots: round trips, and snapshots that must be refused."""

from __future__ import annotations

import json
import math

import pytest

from waymark.lessons.cards import (
    LessonCard,
    Provenance,
    Snapshot,
    SnapshotError,
    load_snapshot,
    read_snapshot,
    snapshot_json,
    write_snapshot,
)
from waymark.lessons.trust import TrustPrior, Visits

SOURCE = Provenance('run-1', 't000003-0a1b2c3d', 'qwen2.5-1.5b-instruct', 1_768_471_200_000)


NEW = Visits()


def card(card_id='c1', embedding=(0.6, 0.8, 0.0), visits=NEW, counted=()) -> LessonCard:
    return LessonCard(
        card_id,
        'where did I last see the fire extinguisher?',
        embedding,
        'A last-seen question: the newest sighting was wanted and the first hit was taken.',
        'When a question asks for the last sighting, sort the hits by time before choosing.',
        SOURCE,
        visits,
        counted,
    )


def snapshot(*cards: LessonCard) -> Snapshot:
    return Snapshot('all-MiniLM-L6-v2', 3, TrustPrior(), cards)


def test_a_snapshot_round_trips_and_equal_banks_give_equal_text():
    first, second = card('b', visits=Visits(3, 2.0), counted=('task t1', 'query q2')), card('a')
    text = snapshot_json(snapshot(first, second))
    again = read_snapshot(text, 'all-MiniLM-L6-v2', 3)
    assert sorted(again.cards, key=lambda c: c.card_id) == [second, first]
    assert again.prior == TrustPrior() and again.cards[1].trust(again.prior) == pytest.approx(0.6)
    assert snapshot_json(snapshot(second, first)) == text  # the listing order is not kept
    assert json.loads(text)['version'] == 2


def test_a_version_1_snapshot_reads_with_no_outcome_keys():
    raw = json.loads(snapshot_json(snapshot(card(counted=('task t1',)))))
    raw['version'] = 1
    del raw['cards'][0]['counted']
    (old,) = read_snapshot(json.dumps(raw)).cards
    assert old == card()


def test_a_snapshot_file_is_written_whole(tmp_path):
    path = tmp_path / 'bank.json'
    write_snapshot(snapshot(card()), path)
    assert load_snapshot(path).cards == (card(),)
    assert [p.name for p in tmp_path.iterdir()] == ['bank.json']


def test_a_snapshot_of_another_embedder_is_refused_with_both_named():
    text = snapshot_json(snapshot(card()))
    with pytest.raises(SnapshotError, match=r'3-d task embeddings .*384-d'):
        read_snapshot(text, 'multilingual-e5-small', 384)
    with pytest.raises(SnapshotError, match='embedded by all-MiniLM-L6-v2'):
        read_snapshot(text, 'multilingual-e5-small', 3)


@pytest.mark.parametrize(
    'change',
    [
        lambda raw: raw.update(version=3),
        lambda raw: raw['cards'][0].update(counted=['task t1\n']),  # not printable
        lambda raw: raw['cards'][0].update(counted=[f'task t{i}' for i in range(9)]),  # too many
        lambda raw: raw.update(kind='ledger'),
        lambda raw: raw['cards'][0].update(visits=-1),
        lambda raw: raw['cards'][0].update(reward_sum=5.0),  # more reward than visits
        lambda raw: raw['cards'][0].update(embedding=[1.0, 2.0]),  # not the snapshot's size
        lambda raw: raw['cards'][0].update(lesson=''),
        lambda raw: raw['cards'][0].update(answer='(3.2, 1.0)'),  # no field for an answer
        lambda raw: raw['cards'].append(dict(raw['cards'][0])),  # the same id twice
        lambda raw: raw.update(prior_weight=0.0),
    ],
)
def test_a_bad_snapshot_is_refused_with_the_reason(change):
    raw = json.loads(snapshot_json(snapshot(card())))
    change(raw)
    with pytest.raises(SnapshotError):
        read_snapshot(json.dumps(raw))


def test_unreadable_files_are_snapshot_errors(tmp_path):
    with pytest.raises(SnapshotError, match='cannot read'):
        load_snapshot(tmp_path / 'missing.json')
    (tmp_path / 'bad.json').write_bytes(b'\xff\xfe not json')
    with pytest.raises(SnapshotError):
        load_snapshot(tmp_path / 'bad.json')


def test_a_card_needs_its_texts_within_limits_and_a_finite_embedding():
    for bad in (
        dict(card_id=''),
        dict(embedding=()),
        dict(embedding=(math.nan, 1.0, 0.0)),
    ):
        with pytest.raises(ValueError):
            card(**bad)
    with pytest.raises(ValueError, match='lesson'):
        LessonCard('c', 'task', (1.0,), 'summary', 'x' * 401, SOURCE)
    with pytest.raises(ValueError):
        Provenance('run', 'task', 'model', -1)
