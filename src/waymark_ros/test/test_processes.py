# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Nodes started by the tools never outlive the run that started them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.dds

PARENT = """
import os, sys, time
from pathlib import Path
from waymark_ros.tools.processes import start_node
node = start_node('navigator_node', Path(sys.argv[1]))
print(node.process.pid, flush=True)
if sys.argv[2] == 'at-once':
    os._exit(0)  # gone before the node has started
time.sleep(600)  # the parent lives on until the test kills it
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by init) counts as gone.
    with open(f'/proc/{pid}/stat') as stat:
        return stat.read().split(') ')[1][0] != 'Z'


def test_a_node_stops_when_the_process_that_started_it_is_killed(tmp_path):
    parent = subprocess.Popen(
        [sys.executable, '-c', PARENT, str(tmp_path), 'later'], stdout=subprocess.PIPE, text=True
    )
    node_pid = int(parent.stdout.readline())
    # Up and spinning (it asked to die with its parent before it built the node).
    log = tmp_path / 'navigator_node.log'
    deadline = time.monotonic() + 60
    while 'active: goals are driven' not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert 'active: goals are driven' in log.read_text(), 'the node did not come up'
    assert alive(node_pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    deadline = time.monotonic() + 30
    while alive(node_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(node_pid), 'the node outlived its killed parent'


def test_a_node_whose_parent_died_before_it_started_exits(tmp_path):
    parent = subprocess.Popen(
        [sys.executable, '-c', PARENT, str(tmp_path), 'at-once'], stdout=subprocess.PIPE, text=True
    )
    node_pid = int(parent.stdout.readline())
    parent.wait(timeout=10)
    deadline = time.monotonic() + 60
    while alive(node_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(node_pid), 'an orphan from the start kept running'
