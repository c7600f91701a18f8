# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Counting a verified outcome for the lessons that guided it, over memory_node's
`lessons/calibrate`.

Only the two verified task statuses pay (CERTIFIED 1, NOT DONE 0: `task_reward`); the call
is bounded and never raises, because a task's record and result never depend on the
lesson bank. A read-only bank refuses, which is normal on a deployed robot."""

from __future__ import annotations

from dataclasses import dataclass

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from waymark.lessons.cards import Superseded
from waymark.lessons.rewards import task_outcome_key, task_reward
from waymark.tasks.records import TaskRecord
from waymark_interfaces.srv import CalibrateLessons
from waymark_ros.ros import qos
from waymark_ros.ros.service_call import call_within


@dataclass(frozen=True)
class Calibrated:
    """What memory_node said: `counted` only when it acknowledged (durable then)."""

    counted: bool
    cards: int
    message: str


class LessonCalibrator:
    def __init__(self, node: Node, service: str, timeout_s: float) -> None:
        self.timeout_s = float(timeout_s)
        self._logger = node.get_logger()
        self._client = node.create_client(
            CalibrateLessons,
            service,
            qos_profile=qos.responses(),
            callback_group=ReentrantCallbackGroup(),  # answered while a caller waits
        )

    def calibrate(
        self,
        lesson_ids: list[str],
        reward: float,
        outcome: str,
        key: str,
        replaces: Superseded | None = None,
    ) -> Calibrated:
        """Counts the outcome named `key` ('task <id>', 'feedback task <id>', 'query
        <id>') at most once per lesson, however often it is sent; in place of `replaces`
        on the cards that counted it."""
        if not lesson_ids:
            return Calibrated(False, 0, 'no lessons guided it')
        request = CalibrateLessons.Request(
            lesson_ids=lesson_ids, reward=reward, outcome=outcome, outcome_key=key
        )
        if replaces is not None:
            request.replaces_key, request.replaces_reward = replaces.key, replaces.reward
        response, missing = call_within(self._client, request, self.timeout_s)
        if response is None:
            return Calibrated(False, 0, f'lessons/calibrate: {missing} in {self.timeout_s:g} s')
        return Calibrated(bool(response.success), int(response.calibrated), response.message)

    def on_task_closed(self, record: TaskRecord) -> None:
        """The runner's hook: a verified task calibrates its answers' lessons."""
        reward = task_reward(record.status)
        if reward is None or not record.lesson_ids:
            return
        key = task_outcome_key(record.task_id)
        done = self.calibrate(list(record.lesson_ids), reward, key, key)
        said = f'lessons of task {record.task_id} ({record.status}): {done.message}'
        if done.counted:
            self._logger.info(said)
        else:
            self._logger.warning(said)
