# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A node whose shutdown hangs in C code holding the interpreter lock still leaves.

The hang is what a DDS participant does when its transport stalls on the way out: the
main thread sits in a C call that never returns and never releases the lock, so no other
Python thread (run_node's own exit cap included) runs and no signal handler is reached.
libc's sleep called through ctypes.PyDLL keeps the lock held in the same way.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from waymark_ros.ros.spin import BACKSTOP_S, EXIT_CAP_S

pytestmark = pytest.mark.dds

STUCK_NODE = textwrap.dedent(
    """
    import ctypes
    import sys

    from rclpy.node import Node

    from waymark_ros.ros.spin import run_node


    class StuckNode(Node):
        def __init__(self):
            super().__init__('stuck_node')
            self._said = False
            self.create_timer(0.05, self._say_spinning)

        def _say_spinning(self):
            if not self._said:
                self._said = True
                print('spinning', flush=True)

        def destroy_node(self):
            ctypes.PyDLL(None).sleep(300)  # the interpreter lock stays held
            super().destroy_node()


    run_node(StuckNode, 'stuck_node', last_words=sys.argv[1] == 'last_words')
    """
)
START_S = 120.0  # rclpy's import and the first spin on a busy machine
# The watchdog fires at EXIT_CAP_S + BACKSTOP_S; the rest is a loaded machine's slack.
EXIT_WAIT_S = EXIT_CAP_S + BACKSTOP_S + 20.0


@pytest.mark.parametrize('mode', ['last_words', 'rclpy_signals'])
def test_a_shutdown_stuck_holding_the_interpreter_lock_ends_with_every_stack(mode):
    child = subprocess.Popen(
        [sys.executable, '-c', STUCK_NODE, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _first_line(child, START_S) == 'spinning'
        child.send_signal(signal.SIGINT)
        try:
            _, stderr = child.communicate(timeout=EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f'still running {EXIT_WAIT_S:g} s after SIGINT')
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 1, stderr
    # faulthandler's dump names the frame that hung
    assert 'most recent call first' in stderr, stderr
    assert 'in destroy_node' in stderr, stderr


def _first_line(child: subprocess.Popen, timeout_s: float) -> str:
    """The child's first stdout line, or a failure after timeout_s."""
    import selectors

    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        if not selector.select(timeout_s):
            pytest.fail(f'the node did not spin within {timeout_s:g} s')
    return child.stdout.readline().strip()
