# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Reflection on the robot over real DDS and Milvus Lite: a person's word on an answer
becomes a lesson card in memory_node's bank, written by the answering model (a scripted
server: no model runs here). The model away, the outcome waits on disk; a kill -9 of
reasoner_node then loses nothing; a leaking lesson is rejected and counted. A task the judge
verified is reflected on once, with the judge's finding as the verified target."""

from __future__ import annotations

import json
import signal

import pytest

from waymark.tasks.ledger import TaskLedger
from waymark.tasks.outcomes import Claim, JudgeVerdict, VerdictKind
from waymark.tasks.records import GoalModality, TaskGoal, TaskRecord
from waymark_interfaces.srv import Feedback, GetLessons, Query, ReflectOnTask
from waymark_testing.ros_harness import wait_until
from waymark_testing.scripted_llm import ScriptedLLMServer, http_error, text, tool_call
from waymark_testing.signs import SIGNS, keyframe, publish_and_wait

pytestmark = pytest.mark.dds

QUESTION = 'where did I last see the fire extinguisher?'
LESSON = (
    'When asked where something was last seen, rank its sightings by time, avoid taking the '
    'closest match for the latest, and check that no newer sighting exists.'
)
LEAKING = 'When asked where a sign was, go back 20 metres and look again.'  # a number


def bank(ros, launch, tmp_path) -> dict:
    launch('memory_node', data_dir=str(tmp_path / 'm'), **{'lessons.mode': 'acquire'})
    stats = ros.latest_json('memory/stats')
    wait_until(lambda: 'lessons_cards' in stats, 90, 'memory_node did not open its lesson bank')
    return stats


class Model:
    """Answers questions with a final answer and reflections with `lesson`, or is away."""

    def __init__(self) -> None:
        self.away = False
        self.lesson = LESSON
        self.reflections = 0

    def __call__(self, body: dict):
        if not body['messages'][0]['content'].startswith('You help a robot learn habits'):
            answer = {'kind': 'text', 'text': 'Not seen.', 'confidence': 0.2}
            return tool_call('final_answer', answer)
        if self.away:
            return http_error(503, 'loading')
        self.reflections += 1
        summary = 'A last-seen question answered without ordering the sightings by time.'
        return text(json.dumps({'summary': summary, 'transferable_lesson': self.lesson}))


def reasoner(launch, server, tmp_path):
    return launch(
        'reasoner_node',
        **{
            'llm.base_url': server.base_url,
            'llm.model': server.model,
            'llm.max_retries': 0,
            'memory.data_dir': str(tmp_path / 'm'),
            'traces.dir': str(tmp_path / 'traces'),
            'lessons.reflect': True,
            'lessons.reflect_dir': str(tmp_path / 'reflections'),
            'lessons.reflect_retry_s': 0.5,
            'lessons.timeout_s': 10.0,
        },
    )


def feedback(ros, query_id: str) -> Feedback.Response:
    request = Feedback.Request(query_id=query_id, correct=True)
    return ros.call(Feedback, 'feedback', request, timeout_s=30)


def test_a_verified_answer_becomes_a_card_and_survives_the_model_away_and_a_kill(
    ros, launch, tmp_path
):
    stats = bank(ros, launch, tmp_path)
    publish_and_wait(ros, [keyframe(i, t) for i, t in enumerate(SIGNS)], stats, len(SIGNS))
    model = Model()
    model.away = True
    server = ScriptedLLMServer(model)
    try:
        node = reasoner(launch, server, tmp_path)
        reflections = ros.latest_json('lessons/reflections')
        asked = ros.call(Query, 'query', Query.Request(question=QUESTION), timeout_s=60)
        assert asked.success, asked.message

        said = feedback(ros, asked.answer.trace_id)
        assert said.success and said.reflection_queued, said.message
        assert 'given no lessons' in said.message and 'reflection queued' in said.message
        again = feedback(ros, asked.answer.trace_id)
        assert again.success and not again.reflection_queued
        assert 'reflection queued before' in again.message

        # The model is away: the outcome waits, tried again, on disk.
        wait_until(lambda: reflections.get('retried_llm', 0) >= 2, 60, 'no retry')
        assert reflections['pending'] == 1 and 'written' not in reflections
        assert len(list((tmp_path / 'reflections').glob('*.json'))) == 1
        node.process.send_signal(signal.SIGKILL)
        node.process.wait(timeout=10)

        model.away = False
        reasoner(launch, server, tmp_path)
        reflections = ros.latest_json('lessons/reflections')
        wait_until(lambda: reflections.get('written') == 1, 60, 'the lesson was not written')
        assert reflections['pending'] == 0
        given = ros.call(GetLessons, 'lessons/get', GetLessons.Request(task=QUESTION))
        assert [g.lesson for g in given.lessons] == [LESSON]
        assert feedback(ros, asked.answer.trace_id).reflection_queued is False  # done before

        # A lesson that carries a number is rejected after one re-prompt, counted.
        model.lesson = LEAKING
        other = ros.call(Query, 'query', Query.Request(question='where is the pharmacy?'))
        assert feedback(ros, other.answer.trace_id).reflection_queued
        wait_until(lambda: reflections.get('rejected_leak') == 1, 60, 'no rejection')
        assert model.reflections == 3 and reflections['written'] == 1
        given = ros.call(GetLessons, 'lessons/get', GetLessons.Request(task=QUESTION))
        assert [g.lesson for g in given.lessons] == [LESSON]
    finally:
        server.close()


def closed_task(ledger: TaskLedger, what: str, certificate: JudgeVerdict | None) -> str:
    task_id = ledger.begin(TaskGoal(GoalModality.TEXT, what), 'test')
    opened = ledger.open_task(task_id)
    record = TaskRecord.for_task(
        opened,
        opened.started_ns + 1,
        claim=Claim.COMPLETE,
        claim_evidence='stopped facing the red cylinder by the wall',
        certificate=certificate,
        places=('charging spot',),
    )
    ledger.close(record)
    return task_id


def test_a_task_the_judge_verified_is_reflected_on_once_and_an_unverified_one_not(
    ros, launch, tmp_path
):
    bank(ros, launch, tmp_path)
    ledger = TaskLedger(tmp_path / 'tasks' / 'ledger')
    seen = JudgeVerdict(VerdictKind.COMPLETE, evidence='a red cylinder fills the view')
    certified = closed_task(ledger, 'find the fire extinguisher', seen)
    claimed = closed_task(ledger, 'find the ladder', None)
    del ledger  # the runner that wrote this history is gone; task_node writes now
    launch('task_node', data_dir=str(tmp_path / 'tasks'))
    model = Model()
    server = ScriptedLLMServer(model)
    try:
        reasoner(launch, server, tmp_path)
        reflections = ros.latest_json('lessons/reflections')

        def reflect(task_id: str) -> ReflectOnTask.Response:
            request = ReflectOnTask.Request(task_id=task_id)
            return ros.call(ReflectOnTask, 'lessons/reflect_task', request, timeout_s=30)

        queued = reflect(certified)
        assert queued.success and 'reflection queued' in queued.message, queued.message
        wait_until(lambda: reflections.get('written') == 1, 60, 'the lesson was not written')
        [request] = server.requests
        shown = request['messages'][1]['content']
        assert 'find the fire extinguisher' in shown and 'a red cylinder fills the view' in shown
        assert 'claimed complete; stopped facing the red cylinder' in shown
        again = reflect(certified)
        assert again.success and 'reflected before' in again.message, again.message
        for refused, why in (
            (reflect(claimed), 'not verified by the judge'),
            (reflect('no-such-task'), 'no task'),
        ):
            assert not refused.success and why in refused.message, refused.message
        assert model.reflections == 1 and reflections['queued'] == 1
    finally:
        server.close()
