# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""An rclpy node for tests, spun in the background, with helpers to wait and call."""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager

import rclpy
from rclpy.executors import MultiThreadedExecutor
from std_msgs.msg import String

from waymark_ros.ros import qos

# Discovery is not symmetric: a new endpoint can see its peer a moment before the peer has
# matched it back, and what is sent in that moment is dropped (a service response: Fast DDS
# logs "failed to send response"; a topic message: a volatile reader skips it). Tests wait
# this long after discovery before the first message that must arrive.
MATCH_SETTLE_S = 1.0


class RosHarness:
    """An rclpy node spun in a background thread, with waiting helpers for tests."""

    def __init__(self) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('waymark_test', context=self.context)
        # Threads to spare: a test's action server may hold one for a whole goal.
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    @contextmanager
    def paused(self):
        """The node out of the executor while action clients and servers are made on it:
        rclpy adds one to its node's wait set before it is fully built, and an executor
        spinning the node meanwhile can call into the half-built object."""
        self.executor.remove_node(self.node)
        try:
            yield self.node
        finally:
            self.executor.add_node(self.node)

    def collect(self, msg_type, topic: str, qos=10) -> list:
        received: list = []
        self.node.create_subscription(msg_type, topic, received.append, qos)
        return received

    def latest_json(self, topic: str) -> dict:
        """Subscribe to a latched JSON status topic; returns a dict updated in place."""
        state: dict = {}

        def update(msg: String) -> None:
            state.clear()
            state.update(json.loads(msg.data))

        self.node.create_subscription(String, topic, update, qos.latched())
        return state

    def call(
        self,
        srv_type,
        name: str,
        request,
        timeout_s: float = 30.0,
        resend_after_s: float | None = None,
    ):
        """Call `name` with a new client; `resend_after_s` is for requests that may be
        repeated (reads): the request goes again when no response came in that long."""
        client = self.node.create_client(srv_type, name)
        try:
            assert client.wait_for_service(timeout_sec=timeout_s), f'service {name} not available'
            # Under load the server can take longer than MATCH_SETTLE_S to match us back.
            time.sleep(MATCH_SETTLE_S)
            deadline = time.monotonic() + timeout_s
            while True:
                future = client.call_async(request)
                give_up = min(deadline, time.monotonic() + (resend_after_s or timeout_s))
                while not future.done() and time.monotonic() < give_up:
                    time.sleep(0.05)
                if future.done():
                    return future.result()
                client.remove_pending_request(future)
                if time.monotonic() >= deadline:
                    raise AssertionError(f'no response from {name} within {timeout_s:.0f} s')
        finally:
            self.node.destroy_client(client)

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()
        self._thread.join(timeout=5.0)


def wait_for_subscriber(publisher, what: str, timeout_s: float = 30.0) -> None:
    """Until `publisher` has a subscriber that has matched it back (see MATCH_SETTLE_S)."""
    wait_until(lambda: publisher.get_subscription_count() > 0, timeout_s, f'no {what}')
    time.sleep(MATCH_SETTLE_S)


def wait_until(predicate, timeout_s: float, message: str = 'condition not met', period_s=0.05):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(period_s)
    raise AssertionError(f'{message} within {timeout_s:.0f} s')
