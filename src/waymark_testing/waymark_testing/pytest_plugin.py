# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Fixtures shared by the node and system tests, as a pytest plugin (the package's pytest11
entry point): every pytest run that sees this package has them, whether `make test` runs
the workspace's suite or `colcon test` one package's tests.

Every test session talks DDS on its own random domain (each pytest-xdist worker on its
own), limited to this machine, so parallel runs and other ROS users on the network never
see each other. Under Fast DDS it talks UDP on the loopback and never shared memory (see
fastdds_loopback.xml: the suite's own kill -9 tests can leave the machine's one
shared-memory port damaged, and other nodes then hang). The core tests never touch rclpy;
it is imported only inside the ROS fixtures.
"""

from __future__ import annotations

import importlib.util
import os
import random
from pathlib import Path

import pytest

LOOPBACK_PROFILE = 'fastdds_loopback.xml'
if os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp') == 'rmw_fastrtps_cpp':
    os.environ['FASTDDS_DEFAULT_PROFILES_FILE'] = str(Path(__file__).with_name(LOOPBACK_PROFILE))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'SYSTEM_DEFAULT'  # the profile's transports
else:
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
    from waymark_testing.ros_harness import RosHarness

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
        if name == 'navigator_node':  # navigation tests run without safety_node; tests of
            # the command chain start it and set the navigator's check to its default
            parameters.setdefault('safety_state_timeout_s', 0.0)
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


# The server tier shares one local Milvus server per test run: its embedded etcd listens on
# a fixed port, so a machine runs one at a time. The run's controller (the only process
# without xdist) starts it in the background at configure and stops it at unconfigure;
# tests (on any worker) wait for the address it writes.
_MILVUS_DIR = 'WAYMARK_TEST_MILVUS_DIR'
_MILVUS_WAIT_S = 180.0
_milvus_controller: dict = {}


def pytest_configure(config):
    deselected = 'not milvus_server' in (config.option.markexpr or '')
    if os.environ.get('PYTEST_XDIST_WORKER') or deselected:
        return
    import tempfile
    import threading

    directory = Path(tempfile.mkdtemp(prefix='waymark-milvus-'))
    os.environ[_MILVUS_DIR] = str(directory)
    thread = threading.Thread(
        target=_start_test_milvus, args=(directory,), name='milvus-server', daemon=True
    )
    _milvus_controller.update(directory=directory, thread=thread)
    thread.start()


def pytest_unconfigure(config):
    thread = _milvus_controller.pop('thread', None)
    if thread is None:
        return
    thread.join(timeout=_MILVUS_WAIT_S)
    server = _milvus_controller.pop('server', None)
    if server is not None:
        server.stop()
    import shutil

    shutil.rmtree(_milvus_controller.pop('directory'), ignore_errors=True)


def _start_test_milvus(directory: Path) -> None:
    from waymark.memory.storage.local_server import LocalMilvusServer, LocalMilvusUnavailableError

    server = LocalMilvusServer(directory / 'data', start_timeout_s=_MILVUS_WAIT_S - 30)
    try:
        server.start()
    except LocalMilvusUnavailableError as error:
        (directory / 'error').write_text(str(error))
        return
    _milvus_controller['server'] = server
    (directory / 'uri.tmp').write_text(server.uri)
    os.replace(directory / 'uri.tmp', directory / 'uri')


@pytest.fixture(scope='session')
def milvus_server() -> str:
    """The address of this run's local Milvus server (the server tier).

    Skipped, with the reason, where the `milvus` package is not installed; the bootstrap
    installs it, so `make test` runs the tier, and a server that does not start fails.
    """
    import time

    if _MILVUS_DIR not in os.environ:
        pytest.skip('Milvus server tier: deselected (-m "not milvus_server")')
    directory = Path(os.environ[_MILVUS_DIR])
    deadline = time.monotonic() + _MILVUS_WAIT_S
    while time.monotonic() < deadline:
        if (directory / 'uri').exists():
            return (directory / 'uri').read_text()
        if (directory / 'error').exists():
            reason = f'Milvus server tier: {(directory / "error").read_text()}'
            if importlib.util.find_spec('milvus') is None:
                pytest.skip(reason)  # not installed here: a tier this machine lacks
            pytest.fail(reason)  # installed and did not start: a failure, not a skip
        time.sleep(0.2)
    pytest.fail(f'the local Milvus server gave no address in {_MILVUS_WAIT_S:.0f} s')


@pytest.fixture
def milvus_uri(milvus_server) -> str:
    """An address on the local server of a database for this test worker alone, emptied
    of every collection a previous test left."""
    from pymilvus import MilvusClient

    database = os.environ.get('PYTEST_XDIST_WORKER') or 'main'
    uri = f'{milvus_server}/{database}'
    client = MilvusClient(uri=milvus_server)
    try:
        if database not in client.list_databases():
            client.create_database(database)
    finally:
        client.close()
    client = MilvusClient(uri=uri)
    try:
        for name in client.list_collections():
            client.drop_collection(name)
    finally:
        client.close()
    return uri
