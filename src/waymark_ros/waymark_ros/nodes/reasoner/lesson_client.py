# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The agent's lesson source over ROS: memory_node's `lessons/get`.

One bounded call per question (`call_within`), so it may be made from any executor
thread; its responses only complete futures, so the client's callback group is
reentrant. Lessons help and never hold a question up: no service, a timeout or a refusal
give the question no lessons (a refusal quietly, since a bank that is off refuses every
request; the rest raise, and the agent logs them).
"""

from __future__ import annotations

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from waymark.agent.agent import LessonsGiven
from waymark.lessons.prompt import ShownLesson, lessons_given
from waymark_interfaces.srv import GetLessons
from waymark_ros.ros import qos
from waymark_ros.ros.service_call import call_within


class LessonsUnavailableError(RuntimeError):
    """memory_node's lesson service did not answer in time."""


class LessonClient:
    def __init__(self, node: Node, timeout_s: float, service: str = 'lessons/get') -> None:
        self.timeout_s = float(timeout_s)
        self._client = node.create_client(
            GetLessons,
            service,
            qos_profile=qos.responses(),
            callback_group=ReentrantCallbackGroup(),
        )

    def __call__(self, question: str) -> LessonsGiven:
        request = GetLessons.Request(task=question)
        response, missing = call_within(self._client, request, self.timeout_s)
        if response is None:
            raise LessonsUnavailableError(f'lessons/get: {missing} in {self.timeout_s:g} s')
        if not response.success:
            return LessonsGiven()
        return lessons_given([shown_lesson(msg) for msg in response.lessons])


def shown_lesson(msg) -> ShownLesson:
    return ShownLesson(msg.id, msg.task, msg.summary, msg.lesson, float(msg.similarity))
