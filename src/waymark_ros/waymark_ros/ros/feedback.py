# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""reasoner_node's `feedback` service: a person's word on an answer or a task counts, as a
verified outcome, for the lessons the answer was given.

A query's lessons are read from its trace (the answer's trace_id), a task's from its ledger
record (task_node's get_task). Every path answers explicitly; nothing is counted unless
memory_node acknowledged it. An answer or task counts once per lesson, however often its
feedback is sent and whether or not the judge counted the task already: the outcome key
('query <id>', 'task <id>') is the same for both.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from waymark.agent.trace import TraceWriter
from waymark.lessons.cards import check_outcome_key
from waymark.lessons.rewards import feedback_reward
from waymark.tasks.records import RecordFormatError, TaskRecord
from waymark_interfaces.srv import Feedback, GetTask
from waymark_ros.ros import qos
from waymark_ros.ros.lesson_calibration import LessonCalibrator
from waymark_ros.ros.service_call import call_within

MAX_LESSON_IDS = 64


class FeedbackDesk:
    def __init__(
        self,
        node: Node,
        traces: Callable[[], TraceWriter | None],
        calibrator: LessonCalibrator,
        get_task: str,
        timeout_s: float,
    ) -> None:
        self._logger = node.get_logger()
        self._traces = traces
        self._calibrator = calibrator
        self.timeout_s = float(timeout_s)
        self._get_task = node.create_client(
            GetTask,
            get_task,
            qos_profile=qos.requests(10),
            callback_group=ReentrantCallbackGroup(),
        )

    def answer(self, request: Feedback.Request, response: Feedback.Response):
        try:
            lesson_ids, about = self._lessons_of(request)
        except ValueError as error:
            response.success, response.message = False, str(error)
            return response
        if not lesson_ids:
            response.success, response.message = True, f'{about} was given no lessons'
            return response
        outcome = f'feedback on {about}: {"correct" if request.correct else "wrong"}'
        if request.has_true_position:
            p, frame = request.true_position.point, request.true_position.header.frame_id
            outcome += f', truly at ({p.x:.2f}, {p.y:.2f}) in {frame or "an unnamed frame"}'
        reward = feedback_reward(request.correct)
        done = self._calibrator.calibrate(lesson_ids, reward, outcome, key=about)
        response.success, response.calibrated = done.counted, done.cards if done.counted else 0
        response.message = f'{outcome}: {done.message}'
        if done.counted:
            self._logger.info(response.message)
        else:
            self._logger.warning(response.message)
        return response

    def _lessons_of(self, request: Feedback.Request) -> tuple[list[str], str]:
        """The lesson ids of the answer or task named, and how to name it; ValueError says
        why there are none to count."""
        if bool(request.query_id) == bool(request.task_id):
            raise ValueError('name exactly one of query_id and task_id')
        if request.has_true_position:
            p = request.true_position.point
            if not all(math.isfinite(v) for v in (p.x, p.y, p.z)):
                raise ValueError('the true position is not finite')
        # The outcome's key: checked before any lookup, so a bad id costs no trace read or call.
        if request.query_id:
            about = check_outcome_key(f'query {request.query_id}')
            return self._of_query(request.query_id), about
        about = check_outcome_key(f'task {request.task_id}')
        return self._of_task(request.task_id), about

    def _of_query(self, query_id: str) -> list[str]:
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
        return ids[:MAX_LESSON_IDS]

    def _of_task(self, task_id: str) -> list[str]:
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
        return list(record.lesson_ids)
