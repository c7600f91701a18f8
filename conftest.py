# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Fixtures shared by the node and system tests.

Every test session talks DDS on its own random domain, limited to this machine, so
parallel runs and other ROS users on the network never see each other. The core
tests never touch rclpy; it is imported only inside the ROS fixtures.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / 'test' / 'fixtures'))

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('ROS_DOMAIN_ID', str(random.SystemRandom().randint(1, 100)))
os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')


class RosHarness:
    """An rclpy node spun in a background thread, with waiting helpers for tests."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import MultiThreadedExecutor

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('waymark_test', context=self.context)
        self.executor = MultiThreadedExecutor(num_threads=2, context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def collect(self, msg_type, topic: str, qos=10) -> list:
        received: list = []
        self.node.create_subscription(msg_type, topic, received.append, qos)
        return received

    def latest_json(self, topic: str) -> dict:
        """Subscribe to a latched JSON status topic; returns a dict updated in place."""
        import json

        from std_msgs.msg import String

        from waymark_ros import qos

        state: dict = {}

        def update(msg: String) -> None:
            state.clear()
            state.update(json.loads(msg.data))

        self.node.create_subscription(String, topic, update, qos.latched())
        return state

    def call(self, srv_type, name: str, request, timeout_s: float = 30.0):
        client = self.node.create_client(srv_type, name)
        try:
            assert client.wait_for_service(timeout_sec=timeout_s), f'service {name} not available'
            future = client.call_async(request)
            wait_until(future.done, timeout_s, f'no response from {name}')
            return future.result()
        finally:
            self.node.destroy_client(client)

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()
        self._thread.join(timeout=5.0)


def wait_until(predicate, timeout_s: float, message: str = 'condition not met', period_s=0.05):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(period_s)
    raise AssertionError(f'{message} within {timeout_s:.0f} s')


@pytest.fixture
def ros():
    harness = RosHarness()
    yield harness
    harness.close()


@pytest.fixture
def launch(tmp_path, request):
    """Start node executables; stops them at teardown and prints their logs on failure."""
    from waymark_ros.processes import start_node, stop_node

    started = []

    def _start(name: str, **parameters):
        node = start_node(name, tmp_path / 'logs', parameters)
        started.append(node)
        return node

    yield _start
    for node in reversed(started):
        stop_node(node, timeout_s=30.0)
    report = getattr(request.node, 'rep_call', None)
    if report is not None and report.failed:
        for node in started:
            print(f'----- {node.name} (exit {node.process.returncode}) -----\n{node.log_tail(60)}')


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, 'rep_' + report.when, report)
    return report
