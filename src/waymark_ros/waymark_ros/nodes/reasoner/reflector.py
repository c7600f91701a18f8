# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""reasoner_node's reflection worker: a verified outcome becomes a lesson card (SMA).

The feedback service queues a job on disk (`ReflectionQueue`) and answers at once; one
worker thread, outside the executor, asks the answering model for the lesson (`reflect`:
strict JSON, the leak check, one re-prompt) and hands it to memory_node's `lessons/add`.
The model or memory_node away: the job waits and is tried again, so a verified outcome is
never lost to an outage or a kill. A rejected lesson or a bank that refuses (read-only):
the job ends, counted. Counts go to the latched `lessons/reflections` topic as JSON.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import String

from waymark.agent.llm import ChatClient
from waymark.lessons.leakage import LeakContext
from waymark.lessons.reflect import Pending, reflect
from waymark.lessons.reflection import Rejected
from waymark.lessons.reflection_queue import ReflectionJob, ReflectionQueue
from waymark.parameters.reasoner import LessonsParameters
from waymark_interfaces.srv import AddLesson
from waymark_ros.ros import qos
from waymark_ros.ros.service_call import call_within

RUN = 'robot'  # the provenance run of cards written on the robot
STOP_WAIT_S = 1.0


class Reflector:
    def __init__(
        self,
        node: Node,
        chat: ChatClient,
        queue: ReflectionQueue,
        add_service: str,
        timeout_s: float,
        reflect_timeout_s: float,
        max_tokens: int,
        poll_s: float = 1.0,
    ) -> None:
        self._logger = node.get_logger()
        self._chat, self.queue = chat, queue
        self.timeout_s, self.reflect_timeout_s = float(timeout_s), float(reflect_timeout_s)
        self._max_tokens, self._poll_s = max_tokens, poll_s
        self._add = node.create_client(
            AddLesson,
            add_service,
            qos_profile=qos.responses(),
            callback_group=ReentrantCallbackGroup(),
        )
        self._publisher = node.create_publisher(String, 'lessons/reflections', qos.latched())
        self._wake, self._stopping = threading.Event(), threading.Event()
        for damage in queue.damage:
            self._logger.error(f'reflection job set aside: {damage}')
        self._thread = threading.Thread(target=self._run, name='reflector', daemon=True)
        self._thread.start()
        self._publish()

    def submit(self, job: ReflectionJob) -> tuple[str, str]:
        """Queues the job (durably): the queue's word ('queued', 'queued before', 'reflected
        before', 'full', or 'failed' when the disk refused) and a line for the answer."""
        try:
            said = self.queue.put(job)
        except OSError as error:
            return 'failed', f'reflection not queued: {error}'
        self._wake.set()
        self._publish()
        if said == 'full':
            return said, f'reflection not queued: {self.queue.max_jobs} already wait'
        return said, f'reflection {said}'

    def stop(self) -> None:
        """Ends the worker without waiting out a reflection in flight: its job stays queued."""
        self._stopping.set()
        self._wake.set()
        self._thread.join(timeout=STOP_WAIT_S)

    def _run(self) -> None:
        while not self._stopping.is_set():
            for job in self.queue.due():
                if self._stopping.is_set():
                    return
                try:
                    self._work(job)
                except Exception as error:  # a bug must not end the worker: log, retry later
                    self._logger.error(f'reflection on {job.key} failed: {error!r}')
                    self._postpone(job, 'error')
                if not self._stopping.is_set():
                    self._publish()
            self._wake.wait(self._poll_s)
            self._wake.clear()

    def _work(self, job: ReflectionJob) -> None:
        context = LeakContext.of(job.known_names, job.answers)
        deadline = time.monotonic() + self.reflect_timeout_s
        written = reflect(self._chat, job.item, context, self._max_tokens, deadline)
        if isinstance(written, Pending):
            self._postpone(job, 'llm', written.reason)
            return
        if isinstance(written, Rejected):
            self.queue.finish(job.key, f'rejected_{written.reason}')
            self._logger.warning(f'lesson from {job.key} rejected: {written.detail}')
            return
        request = AddLesson.Request(
            task=job.item.task,
            summary=written.summary,
            lesson=written.lesson,
            run=RUN,
            task_id=job.key,
            model=self._chat.config.model[:128],
        )
        response, missing = call_within(self._add, request, self.timeout_s)
        if response is None:
            self._postpone(job, 'memory', f'lessons/add: {missing} in {self.timeout_s:g} s')
        elif response.success:
            self.queue.finish(job.key, 'merged' if response.merged else 'written')
            self._logger.info(f'lesson from {job.key}: {response.message}')
        else:
            self.queue.finish(job.key, 'refused')
            self._logger.warning(f'lesson from {job.key} refused: {response.message}')

    def _postpone(self, job: ReflectionJob, why: str, detail: str = '') -> None:
        again = self.queue.postpone(job.key, why)
        self._logger.warning(
            f'reflection on {job.key} '
            + ('postponed' if again else f'given up after {self.queue.max_attempts} attempts')
            + (f': {detail}' if detail else '')
        )

    def _publish(self) -> None:
        self._publisher.publish(String(data=json.dumps(self.queue.stats(), sort_keys=True)))


def reflector_for(
    node: Node, lessons: LessonsParameters, chat: ChatClient | None
) -> Reflector | None:
    """The reflector `lessons.reflect` asks for, its queue opened; None when reflection is
    off, or on without a model to reflect with (said in the log)."""
    if not lessons.reflect:
        return None
    if chat is None:
        node.get_logger().warning('lessons.reflect is on but there is no LLM: reflection off')
        return None
    queue = ReflectionQueue(
        Path(lessons.reflect_dir).expanduser(),
        lessons.reflect_max_pending,
        lessons.reflect_max_attempts,
        lessons.reflect_retry_s,
    )
    return Reflector(
        node,
        chat,
        queue,
        lessons.add_service,
        lessons.timeout_s,
        lessons.reflect_timeout_s,
        lessons.reflect_max_tokens,
    )
