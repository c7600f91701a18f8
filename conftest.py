# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Fixtures shared by the node and system tests.

Every test session talks DDS on its own random domain (each pytest-xdist worker on its
own), limited to this machine, so parallel runs and other ROS users on the network never
see each other. The core tests never touch rclpy; it is imported only inside the ROS
fixtures.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

# test/ shares its name with the standard library's `test` package, so its helpers are
# imported from inside it, as `support`.
ROOT = Path(__file__).resolve().parent
if str(ROOT / 'test') not in sys.path:
    sys.path.insert(0, str(ROOT / 'test'))

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('ROS_DOMAIN_ID', str(random.SystemRandom().randint(1, 100)))
# pytest-xdist workers (gw0, gw1, ...) inherit the session's domain: each moves on by its
# index, within the domains DDS maps to ports on Linux (0-101), so two workers' nodes
# never meet.
if (_worker := os.environ.get('PYTEST_XDIST_WORKER', '')).startswith('gw'):
    _base = int(os.environ['ROS_DOMAIN_ID'])
    os.environ['ROS_DOMAIN_ID'] = str(1 + (_base - 1 + int(_worker[2:])) % 101)
os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')


@pytest.fixture
def ros():
    from support.ros_harness import RosHarness

    harness = RosHarness()
    yield harness
    harness.close()


@pytest.fixture
def launch(tmp_path, request):
    """Start node executables; stops them at teardown and prints their logs on failure."""
    from waymark_ros.tools.processes import start_node, stop_node

    started = []

    def _start(name: str, params_file=None, **parameters):
        if name == 'capture_node':  # its saved session and outbox stay with the test
            parameters.setdefault('state_dir', str(tmp_path / 'capture'))
        node = start_node(name, tmp_path / 'logs', parameters, params_file=params_file)
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
