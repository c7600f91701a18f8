# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The life of a node process: start, spin until Ctrl-C or shutdown, clean up."""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import sys
from collections.abc import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

EXIT_START_FAILED = 2
# With last_words, how often spinning returns to Python, where a signal is handled.
_SIGNAL_POLL_S = 0.1
# Set by waymark_ros.tools.processes to its own pid: the node is a helper process of a demo
# or test run and must not outlive it, even when that run is killed.
EXIT_WITH_PARENT = 'WAYMARK_EXIT_WITH_PARENT'


def _interrupt_when_parent_dies() -> None:
    """Ask Linux for SIGINT when the parent dies (a clean shutdown follows). A parent that
    died before the request was made (a slow start) is noticed by its pid: the node is
    then already an orphan, and exits."""
    parent = os.environ.get(EXIT_WITH_PARENT, '')
    if not parent.isdigit() or not sys.platform.startswith('linux'):
        return
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGINT)
    if os.getppid() != int(parent):
        raise SystemExit(0)


def _construct(make_node: Callable[[], Node]) -> Node | str:
    """The node, or why it could not be built, on one line.

    A constructor that raised leaves a half-built node that rclpy still tracks, kept alive
    by the exception's frames; shutdown would then call its destroy_node on attributes it
    never set and print a second traceback. Dropping the exception and collecting the
    node first lets shutdown skip it.
    """
    try:
        return make_node()
    except Exception as error:
        reason = ' '.join(str(error).split()) or type(error).__name__
    gc.collect()
    return reason


def run_node(
    make_node: Callable[[], Node],
    name: str,
    args=None,
    threads: int | Callable[[Node], int] = 1,
    last_words: bool = False,
) -> None:
    """Run one node. A node that cannot start (a bad parameter, a locked database, a
    model that does not load) logs one line saying why and exits with status 2.
    `threads` may be read from the node made (its parameters say how many it needs).

    rclpy's own signal handler shuts the context down as SIGINT or SIGTERM arrives, before
    the node is destroyed, so nothing can be published on the way out. With `last_words`
    the signals only stop spinning and the node's destroy_node still talks (a node that
    commands a base sends its last stop there)."""
    _interrupt_when_parent_dies()
    if last_words:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        signal.signal(signal.SIGTERM, _raise_interrupt)  # SIGINT raises it by default
    else:
        rclpy.init(args=args)
    node = None
    try:
        built = _construct(make_node)
        if isinstance(built, str):
            rclpy.logging.get_logger(name).fatal(f'cannot start: {built}')
            raise SystemExit(EXIT_START_FAILED)
        node = built
        count = threads(node) if callable(threads) else threads
        executor = (
            MultiThreadedExecutor(num_threads=count) if count > 1 else SingleThreadedExecutor()
        )
        executor.add_node(node)
        if last_words:
            while rclpy.ok():  # back in Python at least every poll, to take a signal
                executor.spin_once(timeout_sec=_SIGNAL_POLL_S)
        else:
            executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()


def _raise_interrupt(_signum, _frame) -> None:
    raise KeyboardInterrupt
