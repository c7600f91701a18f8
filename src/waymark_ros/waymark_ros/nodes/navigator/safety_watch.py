# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Whether safety_node is there to stop the base: navigator_node drives only while its
state comes.

safety_node publishes its state on every change and at least every `state_period_s`
(0.2 s). With safety_node dead, its watchdog, e-stop and limits are gone and the Go1's
driver walks on at the last command it got, so a navigator that kept driving would be the
last thing deciding how the robot moves. Receipt is timed on this process's monotonic
clock: a sender's stamp from another clock (or a paused sim clock) cannot make it fresh.
"""

from __future__ import annotations

import time

from rclpy.node import Node
from std_msgs.msg import String

from waymark.parameters.navigator import NavigatorParameters
from waymark_ros.ros import qos

SAFETY_SILENT = 'no state from safety_node'
_POLL_S = 0.05


class SafetyWatch:
    def __init__(self, node: Node, settings: NavigatorParameters) -> None:
        self._settings = settings
        self._logger = node.get_logger()
        self._heard: float | None = None  # monotonic time of the last state
        node.create_subscription(String, settings.safety_state_topic, self._on_state, qos.latched())

    def use(self, settings: NavigatorParameters) -> None:
        self._settings = settings

    def _on_state(self, _msg: String) -> None:
        if self._heard is None:
            self._logger.info('safety_node is up: goals may drive')
        self._heard = time.monotonic()

    def silence(self) -> str:
        """Why safety_node cannot be relied on now; '' while its state is fresh (or the
        check is off)."""
        timeout_s, heard = self._settings.safety_state_timeout_s, self._heard
        if timeout_s <= 0.0:
            return ''
        topic = self._settings.safety_state_topic
        if heard is None:
            return f'{SAFETY_SILENT} on {topic} yet'
        silent_s = time.monotonic() - heard
        return '' if silent_s <= timeout_s else f'{SAFETY_SILENT} on {topic} for {silent_s:.1f} s'

    def wait_fresh(self, timeout_s: float) -> None:
        """Until a fresh state came or `timeout_s` passed: a goal sent as the system starts,
        or as safety_node restarts, may come before its state does."""
        deadline = time.monotonic() + timeout_s
        while self.silence() and time.monotonic() < deadline:
            time.sleep(_POLL_S)
