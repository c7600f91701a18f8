# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A node's expected input streams, watched: a stream silent for `input_timeout_s` is said
on the console (a warning, repeated every `repeat_s` while it lasts, and a line when it
comes back) and in /diagnostics, as a status named "<node>: <input> input".

Silence is measured on the monotonic clock: a replay on simulated time that stalls is
silent too. The core's InputWatch decides what to report; the logging is throttled there,
not by rclpy, whose per-call-site throttle settings may not change while the node runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.node import Node

from waymark.input_watch import InputWatch


class InputMonitor:
    def __init__(self, node: Node, input_timeout_s: float, repeat_s: float) -> None:
        self._node = node
        self._logger = node.get_logger()
        self._watches: list[tuple[InputWatch, Callable[[], str]]] = []
        self.use(input_timeout_s, repeat_s)
        self._timer = None
        self._publisher = None

    def use(self, input_timeout_s: float, repeat_s: float) -> None:
        """New limits (live parameters), from the next check on."""
        self._timeout_s, self._repeat_s = input_timeout_s, repeat_s

    def watch(
        self, what: str, source: str, once: bool = False, detail: Callable[[], str] = str
    ) -> Callable[[], None]:
        """Watch a stream; call the returned function on each message. `detail()` may say
        why the stream is silent (a failed TF lookup); `once`: a latched map, which
        need only come once."""
        watch = InputWatch(what, source, time.monotonic(), once)
        self._watches.append((watch, detail))
        return lambda: watch.seen(time.monotonic())

    def check(self) -> list[DiagnosticStatus]:
        """Log what changed, and every stream's status."""
        now = time.monotonic()
        statuses = []
        for watch, detail in self._watches:
            report = watch.check(now, self._timeout_s, self._repeat_s)
            why = detail()
            if report is not None and report.silent:
                self._logger.warning(report.message + (f': {why}' if why else ''))
            elif report is not None:
                self._logger.info(report.message)
            ok, message = watch.status(now, self._timeout_s)
            if not ok and why:
                message += f': {why}'
            statuses.append(
                DiagnosticStatus(
                    level=DiagnosticStatus.OK if ok else DiagnosticStatus.WARN,
                    name=f'{self._node.get_name()}: {watch.what} input',
                    message=message,
                    hardware_id=watch.source,
                )
            )
        return statuses

    def start(self, period_s: float = 1.0, callback_group=None) -> None:
        """Check and publish /diagnostics every `period_s`, for a node with no diagnostics
        of its own."""
        self._publisher = self._node.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._timer = self._node.create_timer(period_s, self._publish, callback_group)

    def _publish(self) -> None:
        array = DiagnosticArray(status=self.check())
        array.header.stamp = self._node.get_clock().now().to_msg()
        self._publisher.publish(array)

    def close(self) -> None:
        if self._timer is not None:
            self._node.destroy_timer(self._timer)
        if self._publisher is not None:
            self._node.destroy_publisher(self._publisher)
        self._timer = self._publisher = None
