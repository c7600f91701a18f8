# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node's lesson answers without ROS transport: every path fills an explicit
result, a bank that is off says why, and a refused or failed request changes nothing."""

from __future__ import annotations

import zlib
from collections import Counter

import numpy as np
import pytest

from waymark.lessons.bank import BankMode, LessonBank, empty_snapshot
from waymark.lessons.service import LessonService, TaskEmbedder
from waymark_interfaces.srv import AddLesson, CalibrateLessons, ExportLessons, GetLessons
from waymark_ros.nodes.memory.lesson_requests import (
    LESSONS_OFF,
    answer_add,
    answer_calibrate,
    answer_export,
    answer_get_lessons,
)

DIM = 32
ANSWERS = (
    (answer_get_lessons, GetLessons),
    (answer_calibrate, CalibrateLessons),
    (answer_add, AddLesson),
    (answer_export, ExportLessons),
)


def embed_texts(texts):
    vectors = np.full((len(texts), DIM), 1e-3)
    for row, text in enumerate(texts):
        for word in text.lower().split():
            vectors[row, zlib.crc32(word.encode()) % DIM] += 1.0
    return vectors


def service(mode: BankMode, broken: bool = False) -> LessonService:
    def embed(texts):
        if broken:
            raise RuntimeError('the text model ran out of memory')
        return embed_texts(texts)

    embedder = TaskEmbedder('words', DIM, embed)
    bank = LessonBank(empty_snapshot('words', DIM), embedder.embed, mode)
    return LessonService(bank, embedder)


def add_request(task: str = 'where is the bakery?') -> AddLesson.Request:
    return AddLesson.Request(
        task=task,
        summary='A shop question.',
        lesson='When a shop is asked for, search for its sign first.',
        run='r',
        task_id='t',
        model='m',
    )


@pytest.mark.parametrize(('answer', 'kind'), ANSWERS)
def test_a_bank_that_did_not_open_says_why(answer, kind):
    response, counts = kind.Response(), Counter()
    changed = answer(None, kind.Request(), response, counts, 'snapshot of dimension 384, not 512')
    assert not changed and not response.success
    assert response.message == f'{LESSONS_OFF}: snapshot of dimension 384, not 512'
    response = kind.Response()
    answer(None, kind.Request(), response, counts)
    assert response.message == LESSONS_OFF


def test_written_lessons_are_given_and_calibrated_and_each_answer_says_so(tmp_path):
    lessons, counts = service(BankMode.ACQUIRE), Counter()
    added = AddLesson.Response()
    assert answer_add(lessons, add_request(), added, counts)
    assert added.success and added.id and not added.merged
    given = GetLessons.Response()
    asked = GetLessons.Request(task='where is the bakery?')
    assert not answer_get_lessons(lessons, asked, given, counts)
    assert given.success and [lesson.id for lesson in given.lessons] == [added.id]
    calibrated = CalibrateLessons.Response()
    request = CalibrateLessons.Request(
        lesson_ids=[added.id, 'gone'], reward=1.0, outcome='CERTIFIED'
    )
    assert answer_calibrate(lessons, request, calibrated, counts)
    assert calibrated.success and calibrated.calibrated == 1
    assert calibrated.message == 'CERTIFIED (reward 1) counted for 1 of 2 lessons'
    keyed = CalibrateLessons.Request(
        lesson_ids=[added.id], reward=0.0, outcome='NOT DONE', outcome_key='task t1'
    )
    assert answer_calibrate(lessons, keyed, CalibrateLessons.Response(), counts)
    resent = CalibrateLessons.Response()
    assert not answer_calibrate(lessons, keyed, resent, counts)  # the same outcome again
    assert resent.success and resent.calibrated == 0
    assert resent.message.endswith("(the others are gone or counted 'task t1' before)")
    exported = ExportLessons.Response()
    to_file = ExportLessons.Request(path=str(tmp_path / 'bank.json'))
    assert not answer_export(lessons, to_file, exported, counts)
    assert exported.success and exported.cards == 1
    assert counts == Counter(lessons_add_written=1, lessons_given=1, calibrations=3, exports=1)


def test_a_read_only_bank_refuses_changes_and_stays_as_it_was():
    lessons, counts = service(BankMode.READ_ONLY), Counter()
    before = lessons.bank.snapshot()
    added, calibrated = AddLesson.Response(), CalibrateLessons.Response()
    assert not answer_add(lessons, add_request(), added, counts)
    request = CalibrateLessons.Request(lesson_ids=['a'], reward=0.0)
    assert not answer_calibrate(lessons, request, calibrated, counts)
    assert not added.success and not calibrated.success and 'read' in added.message.lower()
    assert lessons.bank.snapshot() == before
    assert counts == Counter(lessons_add_refused=1, calibrations_refused=1)


def test_bad_requests_are_refused_and_failures_reported_without_raising():
    counts = Counter()
    too_long = GetLessons.Response()
    answer_get_lessons(service(BankMode.ACQUIRE), GetLessons.Request(task=' '), too_long, counts)
    assert not too_long.success and 'characters' in too_long.message
    failed = AddLesson.Response()
    assert not answer_add(service(BankMode.ACQUIRE, broken=True), add_request(), failed, counts)
    assert not failed.success
    assert failed.message.startswith('add_lesson failed: RuntimeError: the text model ran out')
    nowhere = ExportLessons.Response()
    relative = ExportLessons.Request(path='bank.json')
    answer_export(service(BankMode.ACQUIRE), relative, nowhere, counts)
    assert not nowhere.success and 'absolute path' in nowhere.message
    assert counts == Counter(lessons_refused=1, lessons_add_failed=1, exports_refused=1)


def test_a_calibration_in_place_of_another_withdraws_it_and_a_bad_one_counts_nothing():
    lessons, counts = service(BankMode.ACQUIRE), Counter()
    added = AddLesson.Response()
    assert answer_add(lessons, add_request(), added, counts)
    judge = CalibrateLessons.Request(
        lesson_ids=[added.id], reward=1.0, outcome='CERTIFIED', outcome_key='task t1'
    )
    assert answer_calibrate(lessons, judge, CalibrateLessons.Response(), counts)
    for replaces_key, replaces_reward, why in (
        ('task t1', 1.5, 'in [0, 1]'),
        ('task t1', 0.0, 'cannot give back'),  # the judge counted 1, not 0
        ('feedback task t1', 1.0, 'key of its own'),
    ):
        refused = CalibrateLessons.Response()
        bad = CalibrateLessons.Request(
            lesson_ids=[added.id],
            reward=0.0,
            outcome_key='feedback task t1',
            replaces_key=replaces_key,
            replaces_reward=replaces_reward,
        )
        assert not answer_calibrate(lessons, bad, refused, counts)
        assert not refused.success and why in refused.message, refused.message
    (card,) = lessons.bank.snapshot().cards
    assert (card.visits.count, card.visits.reward_sum) == (1, 1.0)  # nothing refused counted
    person = CalibrateLessons.Request(
        lesson_ids=[added.id],
        reward=0.0,
        outcome='feedback on task t1: wrong',
        outcome_key='feedback task t1',
        replaces_key='task t1',
        replaces_reward=1.0,
    )
    replaced = CalibrateLessons.Response()
    assert answer_calibrate(lessons, person, replaced, counts)
    assert replaced.success and replaced.calibrated == 1
    assert replaced.message.endswith("in place of 'task t1' where it had counted")
    (card,) = lessons.bank.snapshot().cards
    assert (card.visits.count, card.visits.reward_sum) == (1, 0.0)
