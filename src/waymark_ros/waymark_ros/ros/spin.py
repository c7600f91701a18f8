# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The life of a node process: start, spin until Ctrl-C or shutdown, clean up, exit.

The exit is bounded. Once a node has said its last words (destroy_node) and ROS is shut
down, the process leaves at once: the interpreter's own exit would first join the
executor's worker threads (a callback still running there, such as a goal's execute
callback, holds it for as long as it runs) and then tear every module down, which takes
seconds on a loaded machine. Whatever shutdown still has not finished `EXIT_CAP_S` after it
began (plus the node's own stated allowance, `shutdown_s`) is cut short with a log line
naming each thread's stack, and exit status EXIT_SHUTDOWN_OVERRAN. A shutdown stuck in C
code that holds the interpreter lock (a DDS participant torn down while its transport
hangs) stops that log line's thread too; faulthandler's watchdog, a C thread, ends it
`BACKSTOP_S` later all the same, with every thread's stack and exit status 1.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import faulthandler
import gc
import os
import signal
import sys
import threading
from collections.abc import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

EXIT_START_FAILED = 2
EXIT_SHUTDOWN_OVERRAN = 3
# From the stop signal to the exit: the hard cap past a node's own allowance. Under the
# 10 s in which every driving node must be gone after Ctrl-C; a node that reaches it has
# a shutdown bug, which its log then shows.
EXIT_CAP_S = 8.0
# After the cap, the watchdog that needs no interpreter lock.
BACKSTOP_S = 2.0
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
    shutdown_s: float | Callable[[Node], float] = 0.0,
) -> None:
    """Run one node; never returns. A node that cannot start (a bad parameter, a locked
    database, a model that does not load) logs one line saying why and exits with status 2.
    `threads` may be read from the node made (its parameters say how many it needs), and
    so may `shutdown_s`: how long its destroy_node may take on purpose (memory_node
    ingests what is queued), on top of EXIT_CAP_S.

    rclpy's own signal handler shuts the context down as SIGINT or SIGTERM arrives, before
    the node is destroyed, so nothing can be published on the way out. With `last_words`
    the signals only stop spinning and the node's destroy_node still talks (a node that
    commands a base sends its last stop there); a second signal while it does (a terminal's
    Ctrl-C and the launcher's SIGINT both arrive) is logged and does not cut it short."""
    _interrupt_when_parent_dies()
    if last_words:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        signal.signal(signal.SIGTERM, _raise_interrupt)  # SIGINT raises it by default
    else:
        rclpy.init(args=args)
    node, status = None, 0
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
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # a crash: its traceback, and the bounded exit all the same
        sys.excepthook(*sys.exc_info())
        status = 1
    finally:
        logger = rclpy.logging.get_logger(name)
        if last_words:
            _ignore_stop_signals(logger)
        allowance = 0.0
        if node is not None:  # read now: memory_node's shutdown_wait_s is a live parameter
            allowance = shutdown_s(node) if callable(shutdown_s) else shutdown_s
        _Cap(logger, EXIT_CAP_S + allowance).start()
        faulthandler.dump_traceback_later(EXIT_CAP_S + allowance + BACKSTOP_S, exit=True)
        try:
            if node is not None:
                node.destroy_node()
        except Exception:  # its traceback; ROS is still shut down and the process leaves
            sys.excepthook(*sys.exc_info())
            status = status or 1
        rclpy.try_shutdown()  # rclpy's handlers, where it had them, are gone now
        _ignore_stop_signals(logger)
    _exit(status)


def _raise_interrupt(_signum, _frame) -> None:
    raise KeyboardInterrupt


def _ignore_stop_signals(logger) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _Ignored(logger))


class _Ignored:
    """A stop signal that comes while the node is already stopping: said, not obeyed."""

    def __init__(self, logger) -> None:
        self._logger = logger

    def __call__(self, signum, _frame) -> None:
        self._logger.info(f'{signal.Signals(signum).name} again: already stopping')


class _Cap(threading.Thread):
    """Ends the process `cap_s` after shutdown began, whatever it is still waiting for."""

    def __init__(self, logger, cap_s: float) -> None:
        super().__init__(name='exit-cap', daemon=True)
        self._logger, self._cap_s = logger, cap_s

    def run(self) -> None:
        threading.Event().wait(self._cap_s)
        self._logger.error(
            f'shutdown still running {self._cap_s:g} s after it began: exiting now with '
            f'status {EXIT_SHUTDOWN_OVERRAN}; the threads it left:'
        )
        _flush()
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        _flush()
        os._exit(EXIT_SHUTDOWN_OVERRAN)


def _exit(status: int) -> None:
    """Leave now: exit handlers that libraries registered run (an in-process database
    closes), the executor's threads are not joined and modules are not torn down."""
    atexit._run_exitfuncs()
    _flush()
    os._exit(status)


def _flush() -> None:
    """Python's and C's buffered output (ROS logging writes through C stdio)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed or gone: nothing to keep
            stream.flush()
    ctypes.CDLL(None).fflush(None)
