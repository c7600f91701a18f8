# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""task_node's word to reasoner_node that a judged task closed, for its lesson.

Called after the record is in the ledger and its lessons are calibrated, only for the two
verified statuses; bounded and never raising, because a task's record and result never
depend on the lesson bank, and skipped at once when the service is not up (a stack without
reasoner_node's reflection waits for nothing). reasoner_node reads the record itself and
queues it once.
"""

from __future__ import annotations

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from waymark.lessons.rewards import task_reward
from waymark.tasks.records import TaskRecord
from waymark_interfaces.srv import ReflectOnTask
from waymark_ros.ros import qos
from waymark_ros.ros.service_call import call_within


class TaskReflection:
    def __init__(self, node: Node, service: str, timeout_s: float) -> None:
        self.timeout_s = float(timeout_s)
        self._logger = node.get_logger()
        self._client = node.create_client(
            ReflectOnTask,
            service,
            qos_profile=qos.responses(),
            callback_group=ReentrantCallbackGroup(),
        )

    def on_task_closed(self, record: TaskRecord) -> None:
        if task_reward(record.status) is None:
            return
        if not self._client.service_is_ready():
            self._logger.warning(f'task {record.task_id} not reflected on: no service')
            return
        request = ReflectOnTask.Request(task_id=record.task_id)
        response, missing = call_within(self._client, request, self.timeout_s)
        line = f'reflection on task {record.task_id} ({record.status}): '
        if response is None:
            self._logger.warning(f'{line}{missing} in {self.timeout_s:g} s')
        else:  # queued, or why not (reflection off, the queue full): reasoner_node's word
            self._logger.info(line + response.message)
