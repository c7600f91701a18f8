# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The lesson bank as memory_node serves it, over a real Milvus Lite file and the real
sentence model: seeding from a snapshot only into an empty bank, a snapshot of another
model refused, texts in and cards out, and read-only refusing every change."""

from __future__ import annotations

import pytest
from milvus_lite.server_manager import server_manager_instance

from waymark.lessons.bank import BankLimits, BankMode, ReadOnlyError
from waymark.lessons.cards import SnapshotError, load_snapshot
from waymark.lessons.retrieval import RetrievalParams
from waymark.lessons.service import TaskEmbedder, open_lessons, provenance

LAST_SEEN = 'where did I last see the fire extinguisher?'
LESSON = 'When asked for the last sighting, order the sightings by time first.'


@pytest.fixture(scope='module')
def embedder(sentence_embedder):
    model = sentence_embedder
    return TaskEmbedder(model.name, model.dim, model.embed_texts)


def open_at(path, embedder, mode=BankMode.ACQUIRE, snapshot=None):
    server_manager_instance.release_server(str(path))  # as a fresh process would find it
    return open_lessons(
        str(path),
        'waymark',
        embedder,
        mode,
        RetrievalParams(min_similarity=0.3),
        BankLimits(),
        snapshot,
    )


def test_a_lesson_written_is_given_for_a_task_of_its_kind_and_survives_a_reopen(tmp_path, embedder):
    path = tmp_path / 'memory.db'
    lessons = open_at(path, embedder)
    added = lessons.add(
        LAST_SEEN, 'The latest sighting was missed.', LESSON, provenance('r', 't', 'm')
    )
    assert not added.merged
    assert lessons.calibrate([added.card_id, added.card_id], 1.0) == 1
    lessons.close()

    lessons = open_at(path, embedder, BankMode.READ_ONLY)
    found = lessons.lessons_for('where did I last see my keys?')
    assert [f.card.card_id for f in found] == [added.card_id]
    assert (found[0].card.visits.count, found[0].card.visits.reward_sum) == (1, 1.0)
    assert lessons.lessons_for('what colour was the sofa in the lounge?') == []
    with pytest.raises(ReadOnlyError):
        lessons.calibrate([added.card_id], 1.0)
    with pytest.raises(ReadOnlyError):
        lessons.add(LAST_SEEN, 'summary', 'Another lesson.', provenance('r', 't', 'm'))
    lessons.close()


def test_a_snapshot_seeds_an_empty_bank_once_and_never_rolls_it_back(tmp_path, embedder):
    source = open_at(tmp_path / 'source.db', embedder)
    source.add(LAST_SEEN, 'The latest sighting was missed.', LESSON, provenance('r', 't', 'm'))
    snapshot = tmp_path / 'bank.json'
    assert source.export(snapshot) == 1
    source.close()

    robot = open_at(tmp_path / 'robot.db', embedder, snapshot=snapshot)
    assert (robot.imported, len(robot.bank)) == (1, 1)
    card_id = robot.bank.snapshot().cards[0].card_id
    robot.calibrate([card_id], 0.0)
    robot.close()
    again = open_at(tmp_path / 'robot.db', embedder, snapshot=snapshot)
    assert again.imported == 0  # the collection is the bank; the snapshot only seeds it
    assert again.bank.snapshot().cards[0].visits.count == 1
    again.close()
    assert len(load_snapshot(snapshot).cards) == 1


def test_a_snapshot_of_another_model_is_refused_with_the_reason(tmp_path, embedder):
    source = open_at(tmp_path / 'source.db', embedder)
    source.add(LAST_SEEN, 'The latest sighting was missed.', LESSON, provenance('r', 't', 'm'))
    snapshot = tmp_path / 'bank.json'
    source.export(snapshot)
    source.close()
    other = TaskEmbedder('another-model', embedder.dimension, embedder.embed_texts)
    with pytest.raises(SnapshotError, match=r'embedded by .* this bank embeds with another-model'):
        open_at(tmp_path / 'robot.db', other, snapshot=snapshot)


def test_an_empty_or_overlong_task_is_refused(tmp_path, embedder):
    lessons = open_at(tmp_path / 'memory.db', embedder)
    with pytest.raises(ValueError, match='a task needs'):
        lessons.lessons_for('   ')
    with pytest.raises(ValueError, match='a task needs'):
        lessons.lessons_for('x' * 1001)
    assert lessons.lessons_for(LAST_SEEN) == []  # an empty bank gives no lesson
    lessons.close()


def test_a_snapshot_not_there_yet_leaves_the_bank_empty(tmp_path, embedder):
    lessons = open_at(tmp_path / 'memory.db', embedder, snapshot=tmp_path / 'none.json')
    assert (lessons.imported, len(lessons.bank)) == (0, 0)
    lessons.close()


def test_an_unreadable_snapshot_is_refused(tmp_path, embedder):
    broken = tmp_path / 'bank.json'
    broken.write_text('{"version": 1, "kind": "lesson_bank"')
    with pytest.raises(SnapshotError, match='not a lesson bank snapshot'):
        open_at(tmp_path / 'memory.db', embedder, snapshot=broken)
