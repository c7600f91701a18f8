# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""reasoner_node's `feedback` service: a person's word on an answer or a task counts, as a
verified outcome, for the lessons the answer was given.

A query's lessons are read from its trace (the answer's trace_id), a task's from its ledger
record (task_node's get_task). Only the lessons an answer may be credited with count: none
for an answer that used the fallback or was cancelled (the model's reasoning, which the
lessons guided, was not what was checked), and the response says so. Every path answers
explicitly; nothing is counted unless memory_node acknowledged it. An answer or task
counts once per lesson, however often its feedback is sent (outcome key 'query <id>' or
'feedback task <id>'). A person's word on a task the judge decided replaces the judge's
verdict ('task <id>') on the cards that counted it, so a wrong verdict does not stay in
the bank, and the judge's calibration arriving later counts nothing.

With a reflector (`lessons.reflect`), each verified outcome is also queued for reflection,
whether or not its answer was given lessons: that is how the bank gets its cards. The
reflecting model sees the verified target; what the answer showed (sign texts, places) and
said is what its lesson must not carry.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from waymark.agent.trace import TraceWriter
from waymark.lessons.cards import Superseded, check_outcome_key
from waymark.lessons.reflect import ReflectionInput, names_shown, record_of
from waymark.lessons.reflection_queue import ReflectionJob
from waymark.lessons.rewards import (
    feedback_reward,
    person_task_outcome_key,
    task_outcome_key,
    task_reward,
)
from waymark.tasks.records import RecordFormatError, TaskRecord
from waymark_interfaces.srv import Feedback, GetTask, ReflectOnTask
from waymark_ros.nodes.reasoner.reflector import Reflector
from waymark_ros.ros import qos
from waymark_ros.ros.lesson_calibration import LessonCalibrator
from waymark_ros.ros.service_call import call_within

MAX_LESSON_IDS = 64


@dataclass(frozen=True)
class Verified:
    """What a person's word is about: its key, the lessons it was given, and what a
    reflection on it needs."""

    about: str  # what the word is on ('query <id>', 'task <id>'), the reflection's key
    lesson_ids: list[str]  # those that may be credited
    task: str  # the question or the task's goal; '' when there is none to reflect on
    record: str
    answer: str = ''
    names: tuple[str, ...] = ()
    judged: tuple[float, str] | None = None  # the judge's reward and finding, when verified
    key: str = ''  # the calibration's outcome key; '' : `about`
    replaces: Superseded | None = None  # the judge's verdict, which a person's word replaces
    uncredited: str = ''  # why lessons that were shown are not credited


class FeedbackDesk:
    def __init__(
        self,
        node: Node,
        traces: Callable[[], TraceWriter | None],
        calibrator: LessonCalibrator,
        get_task: str,
        timeout_s: float,
        reflector: Reflector | None = None,
    ) -> None:
        self._logger = node.get_logger()
        self._traces = traces
        self._calibrator = calibrator
        self._reflector = reflector
        self.timeout_s = float(timeout_s)
        self._get_task = node.create_client(
            GetTask,
            get_task,
            qos_profile=qos.responses(),
            callback_group=ReentrantCallbackGroup(),
        )

    def answer(self, request: Feedback.Request, response: Feedback.Response):
        try:
            verified = self._lookup(request)
        except ValueError as error:
            response.success, response.message = False, str(error)
            return response
        outcome = f'feedback on {verified.about}: {"correct" if request.correct else "wrong"}'
        if request.has_true_position:
            p, frame = request.true_position.point, request.true_position.header.frame_id
            outcome += f', truly at ({p.x:.2f}, {p.y:.2f}) in {frame or "an unnamed frame"}'
        reward = feedback_reward(request.correct)
        queued, said = self._reflect(verified, request, reward)
        response.reflection_queued = queued == 'queued'
        if not verified.lesson_ids:
            response.success, response.calibrated = True, 0
            why = verified.uncredited or 'it was given no lessons to credit'
            response.message = f'{verified.about} credits no lessons ({why}); {said}'
            return response
        done = self._calibrator.calibrate(
            verified.lesson_ids, reward, outcome, verified.key or verified.about, verified.replaces
        )
        response.success, response.calibrated = done.counted, done.cards if done.counted else 0
        response.message = f'{outcome}: {done.message}; {said}'
        if done.counted:
            self._logger.info(response.message)
        else:
            self._logger.warning(response.message)
        return response

    def reflect_on_task(self, request: ReflectOnTask.Request, response):
        """task_node's word that a task closed: queued when its judge verified it."""
        try:
            about = check_outcome_key(task_outcome_key(request.task_id))
            if self._reflector is None:
                raise ValueError('reflection off (lessons.reflect)')
            verified = self._of_task(request.task_id, about)
        except ValueError as error:
            response.success, response.message = False, str(error)
            return response
        if verified.judged is None:
            response.success = False
            response.message = f'{about} was not verified by the judge: nothing to reflect on'
            return response
        reward, finding = verified.judged
        queued, said = self._queue(verified, finding, reward)
        response.success = queued in ('queued', 'queued before', 'reflected before')
        response.message = f'{about}: {said}'
        return response

    def _reflect(
        self, verified: Verified, request: Feedback.Request, reward: float
    ) -> tuple[str, str]:
        """What became of the outcome's reflection: the queue's word and a line saying it."""
        if self._reflector is None:
            return 'off', 'reflection off'
        if request.correct:
            target = f'the answer given was right: {verified.answer or "(no words)"}'
        elif request.has_true_position:
            p, frame = request.true_position.point, request.true_position.header.frame_id
            target = f'the answer given was wrong; the thing is at x={p.x:.2f} y={p.y:.2f}'
            target += f' ({frame})' if frame else ''
        else:
            target = 'the answer given was wrong; the right one was not given'
        return self._queue(verified, target, reward)

    def _queue(self, verified: Verified, target: str, reward: float) -> tuple[str, str]:
        if not verified.task:
            return 'nothing', 'nothing to reflect on (a photo goal without words)'
        job = ReflectionJob(
            verified.about,
            ReflectionInput(verified.task, verified.record, target, reward),
            known_names=verified.names,
            answers=(verified.answer,) if verified.answer else (),
        )
        return self._reflector.submit(job)

    def _lookup(self, request: Feedback.Request) -> Verified:
        """The answer or task named; ValueError says why it cannot be counted."""
        if bool(request.query_id) == bool(request.task_id):
            raise ValueError('name exactly one of query_id and task_id')
        if request.has_true_position:
            p = request.true_position.point
            if not all(math.isfinite(v) for v in (p.x, p.y, p.z)):
                raise ValueError('the true position is not finite')
        # The outcome's key: checked before any lookup, so a bad id costs no trace read or call.
        if request.query_id:
            about = check_outcome_key(f'query {request.query_id}')
            return self._of_query(request.query_id, about)
        about = check_outcome_key(task_outcome_key(request.task_id))
        key = check_outcome_key(person_task_outcome_key(request.task_id))
        return replace(self._of_task(request.task_id, about), key=key)

    def _of_query(self, query_id: str, about: str) -> Verified:
        traces = self._traces()
        if traces is None:
            raise ValueError('traces are off (traces.dir): no query can be looked up')
        try:
            trace = traces.read(query_id)
        except FileNotFoundError:
            raise ValueError(f'no trace of query {query_id} (pruned, or never answered)') from None
        except (OSError, ValueError) as error:  # a bad id, an unreadable or damaged trace
            raise ValueError(f'cannot read the trace of query {query_id}: {error}') from None
        ids = trace.get('lesson_ids', [])
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            raise ValueError(f'the trace of query {query_id} lists its lessons wrongly')
        answer = trace.get('answer') if isinstance(trace.get('answer'), dict) else {}
        uncredited = ''
        shown = ids or trace.get('lessons_shown')
        if shown and (trace.get('used_fallback') or trace.get('cancelled')):
            # The model's answer is what lessons guide: a fallback's outcome says nothing of
            # them (a trace written before answers kept the two apart lists them all).
            reason = str(trace.get('fallback_reason') or 'no reason kept')
            uncredited = (
                'the answer was cancelled'
                if trace.get('cancelled')
                else f'the answer used the fallback: {reason}'
            )
            ids = []
        return Verified(
            about,
            ids[:MAX_LESSON_IDS],
            str(trace.get('question') or ''),
            record_of(trace),
            str(answer.get('text') or ''),
            tuple(names_shown(trace)),
            uncredited=uncredited,
        )

    def _of_task(self, task_id: str, about: str) -> Verified:
        request = GetTask.Request(task_id=task_id)
        found, missing = call_within(self._get_task, request, self.timeout_s)
        if found is None:
            raise ValueError(f'task_node get_task: {missing} in {self.timeout_s:g} s')
        if not found.found:
            raise ValueError(f'no task {task_id}: {found.message}')
        try:
            record = TaskRecord.from_json(found.record_json)
        except RecordFormatError as error:
            raise ValueError(f'task {task_id} is not closed or not readable: {error}') from None
        said = f'claimed {record.claim}' if record.claim else f'stopped: {record.stop_reason}'
        how = '; '.join(filter(None, (said, record.claim_evidence, *record.recovery_notes)))
        reward, certificate = task_reward(record.status), record.certificate
        judged = None
        if reward is not None and certificate is not None:
            found = 'saw the thing at the stop' if reward else 'did not see the thing at the stop'
            judged = (reward, f'the judge {found}: {certificate.evidence or "(no words)"}')
        names = (*record.places, *(certificate.places_searched if certificate else ()))
        ids = list(record.lesson_ids)
        # What task_node's calibration counted for the judge's verdict, if anything.
        replaces = Superseded(about, reward) if reward is not None else None
        return Verified(
            about, ids, record.goal.text, how, names=names, judged=judged, replaces=replaces
        )
