# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A stand-in for twist_mux (ros-teleop/twist_mux), run on the test's own node.

What it keeps of the real one, as its ROS 2 source reads (src/twist_mux.cpp,
TwistMux::hasPriority and getLockPriority; include/twist_mux/topic_handle.hpp,
TopicHandle_::hasExpired, VelocityTopicHandle::callback, LockTopicHandle::isLocked): it
publishes nothing of its own, no timer and no zero on silence. Each input message is passed
on to `cmd_vel_out` at once, unchanged, when its input has the highest priority among the
inputs that are not masked; an input is masked when it has expired (its last message older
than its timeout; a timeout of 0 never expires, and an input that never sent has expired
unless its timeout is 0) or its priority is below the highest engaged lock. A lock is
engaged while its last Bool is true or while it has expired (so a lock with a timeout that
never sent is engaged). A masked input's messages are dropped (`pub_zero_if_locked` off, the
default). So a silent teleop hands the base back to waymark only after its timeout, and an
engaged lock makes the mux fall silent instead of sending zeros.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from geometry_msgs.msg import Twist
from rclpy.node import Node
from std_msgs.msg import Bool

OUTPUT = 'cmd_vel_out'


@dataclass
class _Input:
    name: str
    timeout_s: float
    priority: int
    stamp: float | None = None
    value: bool = False  # locks only

    def expired(self, now: float) -> bool:
        if self.timeout_s <= 0.0:
            return False
        return self.stamp is None or now - self.stamp > self.timeout_s


class TwistMuxStandIn:
    def __init__(self, node: Node, parameters: dict, output_topic: str = OUTPUT) -> None:
        self._inputs: list[_Input] = []
        self._locks: list[_Input] = []
        self._output = node.create_publisher(Twist, output_topic, 10)
        self.passed = 0
        for name, spec in parameters.get('topics', {}).items():
            entry = _Input(name, float(spec['timeout']), int(spec['priority']))
            self._inputs.append(entry)
            node.create_subscription(
                Twist, spec['topic'], lambda msg, e=entry: self._on_twist(e, msg), 10
            )
        for name, spec in parameters.get('locks', {}).items():
            entry = _Input(name, float(spec['timeout']), int(spec['priority']))
            self._locks.append(entry)
            node.create_subscription(
                Bool, spec['topic'], lambda msg, e=entry: self._on_lock(e, msg), 10
            )

    def _lock_priority(self, now: float) -> int:
        engaged = [lock.priority for lock in self._locks if lock.value or lock.expired(now)]
        return max(engaged, default=0)

    def _on_twist(self, entry: _Input, msg: Twist) -> None:
        now = time.monotonic()
        entry.stamp = now
        floor = self._lock_priority(now)
        live = [i for i in self._inputs if not i.expired(now) and i.priority >= floor]
        if live and max(live, key=lambda i: i.priority) is entry:
            self._output.publish(msg)
            self.passed += 1

    def _on_lock(self, entry: _Input, msg: Bool) -> None:
        entry.stamp, entry.value = time.monotonic(), bool(msg.data)
