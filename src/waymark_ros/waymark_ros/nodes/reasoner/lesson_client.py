# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The agent's lesson source over ROS: memory_node's `lessons/get`.

One bounded call per question (`call_within`), so it may be made from any executor
thread; its responses only complete futures, so the client's callback group is
reentrant. The task sent is the question's lesson task (`lesson_task`: a task's goal, or
the question's first line), never over the service's limit. Lessons help and never hold a
question up: no service or a timeout raise (the agent logs them and notes them in the
answer); a refusal gives no lessons with the reason as the answer's note, logged when it
differs from the last one (a bank that is off refuses every request).
"""

from __future__ import annotations

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from waymark.agent.agent import LessonsGiven
from waymark.lessons.prompt import ShownLesson, lesson_task, lessons_given
from waymark_interfaces.srv import GetLessons
from waymark_ros.ros import qos
from waymark_ros.ros.service_call import call_within


class LessonsUnavailableError(RuntimeError):
    """memory_node's lesson service did not answer in time."""


class LessonClient:
    def __init__(self, node: Node, timeout_s: float, service: str = 'lessons/get') -> None:
        self.timeout_s = float(timeout_s)
        self._logger = node.get_logger()
        self._last_refusal = ''
        self._client = node.create_client(
            GetLessons,
            service,
            qos_profile=qos.responses(),
            callback_group=ReentrantCallbackGroup(),
        )

    def __call__(self, task: str) -> LessonsGiven:
        request = GetLessons.Request(task=lesson_task(task))
        response, missing = call_within(self._client, request, self.timeout_s)
        if response is None:
            raise LessonsUnavailableError(f'lessons/get: {missing} in {self.timeout_s:g} s')
        if not response.success:
            note = f'no lessons: lessons/get refused: {response.message}'
            if note != self._last_refusal:  # once per reason, not once per question
                self._logger.warning(note)
            self._last_refusal = note
            return LessonsGiven(note=note)
        self._last_refusal = ''
        return lessons_given([shown_lesson(msg) for msg in response.lessons])


def shown_lesson(msg) -> ShownLesson:
    return ShownLesson(msg.id, msg.task, msg.summary, msg.lesson, float(msg.similarity))
