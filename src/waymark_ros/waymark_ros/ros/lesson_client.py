# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The agent's lesson source over ROS: memory_node's `lessons/get`.

One bounded call per question, waited on a `threading.Event` (never by spinning), so it
may be made from any executor thread. Lessons help and never hold a question up: no
service, a timeout or a refusal give the question no lessons (a refusal quietly, since a
bank that is off refuses every request; the rest raise, and the agent logs them).
"""

from __future__ import annotations

import threading

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from waymark.agent.agent import LessonsGiven
from waymark.lessons.prompt import ShownLesson, lessons_given
from waymark_interfaces.srv import GetLessons
from waymark_ros.ros import qos

# Longest wait for the service to appear (discovery after a start) before giving up.
SERVICE_WAIT_S = 0.5


class LessonsUnavailableError(RuntimeError):
    """memory_node's lesson service did not answer in time."""


class LessonClient:
    def __init__(self, node: Node, timeout_s: float, service: str = 'lessons/get') -> None:
        self.timeout_s = float(timeout_s)
        self._client = node.create_client(
            GetLessons,
            service,
            qos_profile=qos.responses(),
            callback_group=MutuallyExclusiveCallbackGroup(),
        )

    def __call__(self, question: str) -> LessonsGiven:
        if not self._client.wait_for_service(timeout_sec=min(self.timeout_s, SERVICE_WAIT_S)):
            raise LessonsUnavailableError('memory_node serves no lessons/get')
        done = threading.Event()
        future = self._client.call_async(GetLessons.Request(task=question))
        future.add_done_callback(lambda _: done.set())
        if not done.wait(self.timeout_s):
            self._client.remove_pending_request(future)
            raise LessonsUnavailableError(f'no lessons within {self.timeout_s:g} s')
        response = future.result()
        if response is None or not response.success:
            return LessonsGiven()
        return lessons_given([shown_lesson(msg) for msg in response.lessons])


def shown_lesson(msg) -> ShownLesson:
    return ShownLesson(msg.id, msg.task, msg.summary, msg.lesson, float(msg.similarity))
