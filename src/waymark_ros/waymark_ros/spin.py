# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The life of a node process: start, spin until Ctrl-C or shutdown, clean up."""

from __future__ import annotations

from collections.abc import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node

EXIT_START_FAILED = 2


def run_node(make_node: Callable[[], Node], name: str, args=None, threads: int = 1) -> None:
    """Run one node. A node that cannot start (a bad parameter, a locked database, a
    model that does not load) logs one line saying why and exits with status 2."""
    rclpy.init(args=args)
    node = None
    try:
        try:
            node = make_node()
        except Exception as error:
            rclpy.logging.get_logger(name).fatal(f'cannot start: {error}')
            raise SystemExit(EXIT_START_FAILED) from None
        executor = (
            MultiThreadedExecutor(num_threads=threads) if threads > 1 else SingleThreadedExecutor()
        )
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
