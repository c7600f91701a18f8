# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The lesson collection in a real Milvus Lite database: cards and counts read back
exactly, after the database is closed and opened again, next to memory's collections."""

from __future__ import annotations

import pytest
from milvus_lite.server_manager import server_manager_instance

from waymark.lessons.bank import BankLimits, BankMode, open_bank
from waymark.lessons.cards import LessonCard, Provenance, snapshot_json
from waymark.lessons.store import LessonStore, LessonStoreError
from waymark.lessons.trust import Visits
from waymark.memory.storage.store import MemoryStore

SOURCE = Provenance('run-1', 'q0007', 'qwen2.5-1.5b-instruct', 1_768_471_200_000_000_000)


def card(card_id: str, visits: Visits = Visits(), lesson: str = 'Sort sightings by time.'):  # noqa: B008
    return LessonCard(
        card_id,
        'where did I last see the ladder? \u2014 \u00e9chelle',
        (0.5, 0.25, 0.0, -0.75),  # float32 values: Milvus keeps vectors as float32
        'A last-seen question answered with the first sighting.',
        lesson,
        SOURCE,
        visits,
    )


def reopen(path, dimension: int = 4) -> LessonStore:
    server_manager_instance.release_server(str(path))  # as a process exit would
    return LessonStore(str(path), dimension)


def test_cards_and_counts_read_back_exactly_after_a_reopen(tmp_path):
    path = tmp_path / 'memory.db'
    store = LessonStore(str(path), 4)
    store.put([card('a'), card('b', Visits(3, 1.5))])
    store.put([card('a', Visits(1, 1.0))])  # new counts replace the old row
    store.remove(['b', 'never-there'])
    store.close()
    again = reopen(path)
    try:
        assert again.cards() == [card('a', Visits(1, 1.0))]
    finally:
        again.close()
        server_manager_instance.release_server(str(path))


def test_lessons_live_beside_memory_in_one_database(tmp_path):
    path = tmp_path / 'memory.db'
    memory = MemoryStore(str(path), {'text': 4})
    lessons = LessonStore(str(path), 4)
    try:
        lessons.put([card('a')])
        assert memory.count() == 0 and [c.card_id for c in lessons.cards()] == ['a']
    finally:
        lessons.close()
        memory.close()


def test_another_dimension_is_refused_clearly(tmp_path):
    path = tmp_path / 'memory.db'
    LessonStore(str(path), 4).close()
    with pytest.raises(LessonStoreError, match='does not match'):
        reopen(path, 8)
    store = LessonStore(str(tmp_path / 'other.db'), 8)
    try:
        with pytest.raises(ValueError, match='4-d embedding in a 8-d'):
            store.put([card('a')])
    finally:
        store.close()
        server_manager_instance.release_server(str(tmp_path / 'other.db'))


def test_a_bank_over_the_store_reopens_as_it_was_and_a_refused_write_changes_nothing(
    tmp_path, sentence_embedder
):
    def embed(text):
        return sentence_embedder.embed_texts([text])[0]

    path = tmp_path / 'memory.db'
    dimension = len(embed('x'))

    def lesson(card_id: str, task: str, text: str, stamp_ns: int) -> LessonCard:
        source = Provenance('run', card_id, 'model', stamp_ns)
        vector = tuple(float(x) for x in embed(task))
        return LessonCard(card_id, task, vector, 'How it went.', text, source)

    store = LessonStore(str(path), dimension)
    bank = open_bank(store, 'all-MiniLM-L6-v2', embed, BankMode.ACQUIRE, limits=BankLimits(2))
    bank.add(lesson('a', 'where did I last see the ladder?', 'Sort by time.', 1))
    bank.add(lesson('b', 'how far is the door?', 'Measure along the path.', 2))
    bank.calibrate(['a', 'b'], 1.0, 'task t1')
    bank.calibrate(['b'], 0.0)
    added = bank.add(lesson('c', 'how many chairs are there?', 'Count each room once.', 3))
    assert added.evicted == ('b',)  # neither is well visited: the less trusted goes
    before = snapshot_json(bank.snapshot())
    store.close()
    with pytest.raises(LessonStoreError, match='closed'):
        bank.calibrate(['c'], 1.0)
    assert snapshot_json(bank.snapshot()) == before
    again = open_bank(reopen(path, dimension), 'all-MiniLM-L6-v2', embed)
    try:
        assert snapshot_json(again.snapshot()) == before
        assert {c.card_id: c.counted for c in again.snapshot().cards}['a'] == ('task t1',)
        assert again.mode is BankMode.READ_ONLY
    finally:
        again.store.close()
        server_manager_instance.release_server(str(path))
