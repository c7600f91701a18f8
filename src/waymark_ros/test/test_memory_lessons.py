# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node's lesson bank over real DDS and Milvus Lite: lessons written and given,
calibration counted once per card, read-only refusing every change, a snapshot exported and
deployed, and a kill -9 in the middle of calibrations losing no acknowledged count."""

from __future__ import annotations

import json
import math
import signal
import threading
import time

import pytest

from waymark.lessons.prompt import HEADER
from waymark.tasks.ledger import TaskLedger
from waymark.tasks.outcomes import Claim, JudgeVerdict, VerdictKind
from waymark.tasks.records import GoalModality, TaskGoal, TaskRecord
from waymark_interfaces.srv import (
    AddLesson,
    CalibrateLessons,
    ExportLessons,
    Feedback,
    GetLessons,
    Query,
)
from waymark_testing.ros_harness import wait_until
from waymark_testing.scripted_llm import ScriptedLLMServer, tool_call
from waymark_testing.signs import SIGNS, keyframe, publish_and_wait

pytestmark = pytest.mark.dds

LAST_SEEN = 'where did I last see the fire extinguisher?'
LESSON = 'When asked for the last sighting, order the sightings by time first.'
FALLS_BACK = 'when did I last see the fire extinguisher, once more?'


def started(ros, launch, data_dir, **params):
    node = launch('memory_node', data_dir=str(data_dir), **params)
    stats = ros.latest_json('memory/stats')
    wait_until(lambda: 'lessons_cards' in stats, 90, 'memory_node did not open its lesson bank')
    return node, stats


def add(ros, lesson=LESSON):
    request = AddLesson.Request(
        task=LAST_SEEN,
        summary='The latest sighting was missed.',
        lesson=lesson,
        run='test',
        task_id='q1',
        model='test-model',
    )
    return ros.call(AddLesson, 'lessons/add', request)


def lessons_for(ros, task='when did I last see a fire extinguisher?'):
    return ros.call(GetLessons, 'lessons/get', GetLessons.Request(task=task), resend_after_s=5)


def calibrate(ids, reward, outcome='q2'):
    return CalibrateLessons.Request(lesson_ids=ids, reward=reward, outcome=outcome)


def test_a_lesson_is_written_given_and_calibrated_and_read_only_changes_nothing(
    ros, launch, tmp_path
):
    node, stats = started(ros, launch, tmp_path / 'm', **{'lessons.mode': 'acquire'})
    written = add(ros)
    assert written.success and not written.merged, written.message
    merged = add(ros, LESSON.replace('first', 'first of all'))
    assert merged.success and merged.merged and merged.id == written.id, merged.message

    given = lessons_for(ros)
    assert given.success, given.message
    assert [(g.id, g.lesson, g.visits) for g in given.lessons] == [(written.id, LESSON, 0)]
    assert given.lessons[0].trust == pytest.approx(0.5) and given.lessons[0].similarity > 0.4
    unrelated = lessons_for(ros, 'what colour was the sofa in the lounge?')
    assert unrelated.success and list(unrelated.lessons) == []

    counted = ros.call(CalibrateLessons, 'lessons/calibrate', calibrate([written.id] * 2, 1.0))
    assert counted.success and counted.calibrated == 1, counted.message
    refused = ros.call(CalibrateLessons, 'lessons/calibrate', calibrate([written.id], 1.5))
    assert not refused.success and 'reward' in refused.message
    assert lessons_for(ros).lessons[0].trust == pytest.approx(2 / 3)
    snapshot = tmp_path / 'bank.json'
    exported = ros.call(ExportLessons, 'lessons/export', ExportLessons.Request(path=str(snapshot)))
    assert exported.success and exported.cards == 1, exported.message
    wait_until(lambda: stats.get('lessons_merged') == 1, 10, 'merge not in the stats')
    node.process.send_signal(signal.SIGINT)
    node.process.wait(timeout=60)

    # The robot: another memory, read-only, seeded from the snapshot.
    node, stats = started(ros, launch, tmp_path / 'robot', **{'lessons.snapshot': str(snapshot)})
    assert (stats['lessons_mode'], stats['lessons_cards'], stats['lessons_imported']) == (
        'read_only',
        1,
        1,
    )
    before = snapshot.read_text()
    assert not add(ros, 'Check the newest sighting twice.').success
    still = ros.call(CalibrateLessons, 'lessons/calibrate', calibrate([written.id], 0.0))
    assert not still.success and 'read-only' in still.message
    again = tmp_path / 'again.json'
    ros.call(ExportLessons, 'lessons/export', ExportLessons.Request(path=str(again)))
    assert again.read_text() == before  # byte for byte what was deployed
    assert json.loads(before)['cards'][0]['visits'] == 1
    node.process.send_signal(signal.SIGINT)
    node.process.wait(timeout=60)


def test_a_kill_during_calibrations_loses_no_acknowledged_count(ros, launch, tmp_path):
    data = tmp_path / 'm'
    node, _ = started(ros, launch, data, **{'lessons.mode': 'acquire'})
    card = add(ros).id
    client = ros.node.create_client(CalibrateLessons, 'lessons/calibrate')
    assert client.wait_for_service(timeout_sec=30)

    def answered(request) -> bool:
        future = client.call_async(request)
        deadline = time.monotonic() + 1.0
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not future.done():
            client.remove_pending_request(future)
        return future.done()

    # A first response can be lost while the service is still matching this client back:
    # a request that counts nothing (no lessons) goes until one is answered.
    wait_until(lambda: answered(calibrate([], 1.0, 'warm-up')), 30, 'the service never answered')
    acknowledged, stop = [], threading.Event()

    def calibrate_until_stopped() -> None:
        """One calibration at a time, as answers come: a count is acknowledged when its
        success came back."""
        while not stop.is_set():
            future = client.call_async(calibrate([card], 1.0, f'q{len(acknowledged)}'))
            deadline = time.monotonic() + 2.0
            while not future.done() and time.monotonic() < deadline:
                time.sleep(0.001)
            if not future.done():
                client.remove_pending_request(future)
                return
            assert future.result().success, future.result().message
            acknowledged.append(future)

    sender = threading.Thread(target=calibrate_until_stopped)
    sender.start()
    wait_until(lambda: len(acknowledged) >= 20, 60, 'calibrations not answered')
    node.process.send_signal(signal.SIGKILL)
    node.process.wait(timeout=10)
    sender.join(timeout=10)
    stop.set()
    assert not sender.is_alive()

    started(ros, launch, data)
    kept = lessons_for(ros).lessons[0]
    # Every acknowledged count is there; the one in flight at the kill may be there too.
    assert len(acknowledged) <= kept.visits <= len(acknowledged) + 1
    assert kept.trust == pytest.approx((2 * 0.5 + kept.visits) / (2 + kept.visits))


def test_the_reasoner_puts_the_lessons_before_the_question_and_names_them_in_the_answer(
    ros, launch, tmp_path
):
    _, stats = started(ros, launch, tmp_path / 'm', **{'lessons.mode': 'acquire'})
    publish_and_wait(ros, [keyframe(i, t) for i, t in enumerate(SIGNS)], stats, len(SIGNS))
    card = add(ros).id
    answer = tool_call('final_answer', {'kind': 'text', 'text': 'Not seen.', 'confidence': 0.2})

    def model(body: dict):  # searches, then answers; the question marked to fall back never
        if FALLS_BACK in body['messages'][1]['content']:
            return tool_call('no_such_tool', {})
        if not any(message['role'] == 'tool' for message in body['messages']):
            return tool_call('retrieve_from_text', {'query': 'fire extinguisher'})
        return answer

    server = ScriptedLLMServer(model)
    try:
        launch(
            'reasoner_node',
            **{
                'llm.base_url': server.base_url,
                'llm.model': server.model,
                'memory.data_dir': str(tmp_path / 'm'),
                'traces.dir': str(tmp_path / 'traces'),
                'lessons.enabled': True,
            },
        )
        asked = ros.call(Query, 'query', Query.Request(question=LAST_SEEN), timeout_s=60)
        assert asked.success, asked.message
        assert list(asked.answer.lesson_ids) == [card]
        user = server.requests[0]['messages'][1]['content']
        assert HEADER in user and LESSON in user
        assert user.index(HEADER) < user.index(LAST_SEEN, user.index(LESSON) + len(LESSON))

        other = ros.call(
            Query, 'query', Query.Request(question='what colour was the sofa?'), timeout_s=60
        )
        assert other.success and list(other.answer.lesson_ids) == []
        users = [r['messages'][1]['content'] for r in server.requests]
        sofa = [user for user in users if 'what colour was the sofa?' in user]
        assert sofa and all(HEADER not in user for user in sofa)  # no lesson passed

        # A person's word on the first answer counts for its lesson, once acknowledged.
        said = feedback(ros, query_id=asked.answer.trace_id, correct=True)
        assert said.success and said.calibrated == 1, said.message
        assert (lessons_for(ros).lessons[0].visits, lessons_for(ros).lessons[0].trust) == (
            1,
            pytest.approx(2 / 3),
        )
        resent = feedback(ros, query_id=asked.answer.trace_id, correct=True)
        assert resent.success and resent.calibrated == 0, resent.message  # counted once
        assert 'counted' in resent.message and lessons_for(ros).lessons[0].visits == 1
        none_given = feedback(ros, query_id=other.answer.trace_id, correct=False)
        assert none_given.success and none_given.calibrated == 0, none_given.message
        for refused, why in (
            (feedback(ros, correct=True), 'exactly one'),
            (feedback(ros, query_id='a' * 8, task_id='t', correct=True), 'exactly one'),
            (feedback(ros, query_id='0' * 32, correct=True), 'no trace'),
            (feedback(ros, query_id='0' * 200, correct=True), 'outcome key'),  # checked first
            (feedback(ros, task_id='no-such-task', correct=True), 'get_task'),
        ):
            assert not refused.success and why in refused.message, refused.message
        nowhere = Feedback.Request(query_id=asked.answer.trace_id, correct=True)
        nowhere.has_true_position, nowhere.true_position.point.x = True, math.nan
        assert 'not finite' in ros.call(Feedback, 'feedback', nowhere).message
        assert lessons_for(ros).lessons[0].visits == 1  # nothing refused was counted

        # An answer that fell back was shown the lesson but credits it nothing.
        fell = ros.call(Query, 'query', Query.Request(question=FALLS_BACK), timeout_s=60)
        assert fell.success and fell.answer.used_fallback, fell.message
        assert list(fell.answer.lessons_shown) == [card] and list(fell.answer.lesson_ids) == []
        assert 'not credited' in fell.answer.lessons_note
        word = feedback(ros, query_id=fell.answer.trace_id, correct=False)
        assert word.success and word.calibrated == 0 and 'used the fallback' in word.message
        assert lessons_for(ros).lessons[0].visits == 1

        # A task's question: the goal line, then a briefing that alone is over lessons/get's
        # 1000 characters. The lessons are looked up by the goal (or the lesson_task given).
        briefed = f'{LAST_SEEN}\nRecords to read: ' + 'the hall was searched. ' * 60
        assert len(briefed) > 1000
        for request in (
            Query.Request(question=briefed),
            Query.Request(question='what colour was the sofa?', lesson_task=LAST_SEEN),
        ):
            got = ros.call(Query, 'query', request, timeout_s=60)
            assert got.success and list(got.answer.lesson_ids) == [card], got.answer.lessons_note
        too_long = Query.Request(question=LAST_SEEN, lesson_task='y' * 1001)
        refused = ros.call(Query, 'query', too_long, timeout_s=60)
        assert refused.status == Query.Response.STATUS_REFUSED and 'lesson_task' in refused.message
    finally:
        server.close()


def certified_task(ledger: TaskLedger, card: str) -> str:
    """A task the judge certified, its answers given `card`, closed in `ledger`."""
    task_id = ledger.begin(TaskGoal(GoalModality.TEXT, 'the fire extinguisher'), 'test')
    opened = ledger.open_task(task_id)
    seen = JudgeVerdict(VerdictKind.COMPLETE, evidence='a red cylinder fills the view')
    ledger.close(
        TaskRecord.for_task(
            opened,
            opened.started_ns + 1,
            claim=Claim.COMPLETE,
            certificate=seen,
            lesson_ids=(card,),
        )
    )
    return task_id


def feedback(ros, **fields):
    return ros.call(Feedback, 'feedback', Feedback.Request(**fields), timeout_s=30)


def test_feedback_on_a_task_counts_for_the_lessons_in_its_ledger_record(ros, launch, tmp_path):
    started(ros, launch, tmp_path / 'm', **{'lessons.mode': 'acquire'})
    card = add(ros).id
    ledger = TaskLedger(tmp_path / 'tasks' / 'ledger')
    task_id = ledger.begin(TaskGoal(GoalModality.TEXT, 'the fire extinguisher'), 'test')
    opened = ledger.open_task(task_id)
    ledger.close(
        TaskRecord.for_task(
            opened, opened.started_ns + 1, claim=Claim.COMPLETE, lesson_ids=(card, 'evicted')
        )
    )
    certified = certified_task(ledger, card)  # by the judge, wrongly
    del ledger  # the runner that wrote this history is gone; task_node writes now
    launch('task_node', data_dir=str(tmp_path / 'tasks'))
    launch('reasoner_node', **{'memory.data_dir': str(tmp_path / 'm'), 'traces.dir': ''})

    said = feedback(ros, task_id=task_id, correct=False)
    assert said.success and said.calibrated == 1, said.message  # the evicted id is skipped
    given = lessons_for(ros).lessons[0]
    assert (given.visits, given.trust) == (1, pytest.approx(1 / 3))
    again = feedback(ros, task_id=task_id, correct=True)  # a second word on the same task
    assert again.success and again.calibrated == 0, again.message
    assert lessons_for(ros).lessons[0].visits == 1

    # task_node counted the judge's verdict (as its on_task_closed does).
    judge = calibrate([card], 1.0, f'task {certified}')
    judge.outcome_key = f'task {certified}'
    assert ros.call(CalibrateLessons, 'lessons/calibrate', judge).calibrated == 1
    given = lessons_for(ros).lessons[0]
    assert (given.visits, given.trust) == (2, pytest.approx(2 / 4))
    # A person says it was not done: the judge's 1 is replaced by their 0.
    corrected = feedback(ros, task_id=certified, correct=False)
    assert corrected.success and corrected.calibrated == 1, corrected.message
    assert f"in place of 'task {certified}'" in corrected.message
    given = lessons_for(ros).lessons[0]
    assert (given.visits, given.trust) == (2, pytest.approx(1 / 4))
    retried = ros.call(CalibrateLessons, 'lessons/calibrate', judge)  # the judge's, sent again
    assert retried.success and retried.calibrated == 0
    assert lessons_for(ros).lessons[0].visits == 2
    unknown = feedback(ros, task_id='no-such-task', correct=True)
    assert not unknown.success and 'no task' in unknown.message
    off = feedback(ros, query_id='0123456789abcdef', correct=True)
    assert not off.success and 'traces are off' in off.message
