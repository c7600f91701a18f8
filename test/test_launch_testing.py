# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The launch files, run by launch_testing: robot (also with a memory_node that cannot be
configured), replay and demo (test/launch_tests).

launch_testing's pytest plugin does not register with pytest 9, so each launch test runs
as `python -m launch_testing.launch_test FILE` in a subprocess and its JUnit report is read
back: every test in it ran and passed, none was skipped. launch_testing comes from the ROS 2
install where there is one, else from ../shared/vendor/ros2 (beside the checkout, as in CI)
through its activate.sh, which only the tests use; skipped with the reason where neither
exists. test_launch_files.py checks the launch files statically with the same launch_plan.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from waymark_testing import standins

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_TESTS = ROOT / 'test' / 'launch_tests'
VENDOR = ROOT.parent / 'shared' / 'vendor' / 'ros2' / 'activate.sh'
# One launch test, set-up included; the waits inside it are shorter. The demo took 7 min
# on 2 busy cores.
TIMEOUT_S = 600
DEMO_TIMEOUT_S = 900

pytestmark = pytest.mark.dds


def launch_test_command(test_file: Path, report: Path) -> list[str]:
    """The launch test's command line, or a skip saying why it cannot run here."""
    run = [sys.executable, '-m', 'launch_testing.launch_test', str(test_file)]
    run += ['--junit-xml', str(report)]
    if importlib.util.find_spec('launch_testing') is not None:
        return run
    run_with = [str(VENDOR), *run]
    if VENDOR.is_file():
        # activate.sh builds composition_interfaces once into build/vendor_ros2
        return ['bash', '-c', 'source "$1" >&2 || exit 1; shift; exec "$@"', 'launch', *run_with]
    pytest.skip(f'ROS 2 launch_testing is neither installed nor vendored at {VENDOR}')


def run_launch_test(
    name: str, tmp_path: Path, env: dict[str, str] | None = None, timeout_s: float = TIMEOUT_S
) -> None:
    report = tmp_path / f'{name}.xml'
    command = launch_test_command(LAUNCH_TESTS / f'{name}.py', report)
    environment = {
        **os.environ,
        'PATH': os.pathsep.join([str(Path(sys.executable).parent), os.environ.get('PATH', '')]),
        'PYTHONUNBUFFERED': '1',
        'WAYMARK_LAUNCH_TEST_DIR': str(tmp_path / 'scratch'),
        **(env or {}),
    }
    done = subprocess.run(
        command,
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout_s,
    )
    output = done.stdout[-20000:]
    assert report.is_file(), f'no report (exit {done.returncode}):\n{output}'
    suites = ET.parse(report).getroot().findall('testsuite')
    counts = {
        key: sum(int(suite.get(key, '0')) for suite in suites)
        for key in ('tests', 'failures', 'errors', 'skipped')
    }
    assert counts['tests'] > 0, output
    # Why each test failed first: the processes' output after it can fill the tail.
    failed = [
        f'{case.get("name")}: {(problem.get("message") or "")[:500]}\n'
        f'{(problem.text or "")[-2000:]}'
        for suite in suites
        for case in suite.iter('testcase')
        for problem in case
        if problem.tag in ('failure', 'error')
    ]
    why = '\n'.join(failed)
    assert counts | {'tests': 0} == dict.fromkeys(counts, 0), f'{counts}:\n{why}\n{output}'
    assert done.returncode == 0, output


@pytest.mark.timeout(TIMEOUT_S + 120)
def test_the_robot_launch_brings_up_every_preset_and_backend_and_shuts_down_cleanly(tmp_path):
    prefix = standins.build('nav2_msgs')  # for the nav2 backend; never installed
    run_launch_test('robot', tmp_path, standins.child_environment(prefix))


@pytest.mark.timeout(TIMEOUT_S + 120)
def test_a_memory_node_that_cannot_be_configured_ends_the_robot_launch_with_the_reason(tmp_path):
    run_launch_test('lifecycle_failure', tmp_path)


@pytest.mark.timeout(TIMEOUT_S + 120)
def test_a_replayed_bag_fills_the_memory_and_ends_the_replay_launch(tmp_path):
    run_launch_test('replay', tmp_path)


@pytest.mark.timeout(DEMO_TIMEOUT_S + 120)
def test_the_demo_launch_runs_end_to_end_and_writes_its_report(tmp_path):
    run_launch_test('demo', tmp_path, timeout_s=DEMO_TIMEOUT_S)
