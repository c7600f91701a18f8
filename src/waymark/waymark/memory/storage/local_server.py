# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A Milvus standalone server on this machine, for the server test tier and benchmarks.

The `milvus` package ships the standalone binary with embedded etcd and local storage.
Its ports are picked free at start, but the embedded etcd's peer port is fixed (2380), so a
machine runs one at a time: tests share one per run, each worker in a database of its own.
A robot points `memory.uri` at a deployed server instead (docs/deployment.md).

The server process ignores SIGTERM for a long while, so it is stopped through the
package's own API, which waits briefly and then kills the process it started.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

_LOG = logging.getLogger(__name__)


class LocalMilvusUnavailableError(RuntimeError):
    """The `milvus` package is not installed, or its server did not start."""


class LocalMilvusServer:
    """Start with `with LocalMilvusServer(directory) as server:`; `server.uri` serves."""

    def __init__(self, base_dir: str | os.PathLike, start_timeout_s: float = 120.0) -> None:
        if not start_timeout_s > 0:
            raise ValueError(f'start_timeout_s must be > 0, got {start_timeout_s}')
        self.base_dir = Path(base_dir)
        self.start_timeout_s = float(start_timeout_s)
        self._server = None

    @property
    def uri(self) -> str:
        if self._server is None:
            raise LocalMilvusUnavailableError('the server is not running')
        return f'http://127.0.0.1:{self._server.listen_port}'

    def start(self) -> LocalMilvusServer:
        try:
            from milvus import MilvusServer
        except ImportError as error:
            raise LocalMilvusUnavailableError(
                'the `milvus` package (a local Milvus server) is not installed'
            ) from error
        self.base_dir.mkdir(parents=True, exist_ok=True)
        server = MilvusServer(wait_for_started=False)
        server.set_base_dir(str(self.base_dir))
        try:
            server.start()
            server.wait_started(timeout=self.start_timeout_s * 1000)
        except (OSError, RuntimeError, TimeoutError) as error:
            server.stop()
            raise LocalMilvusUnavailableError(
                f'the Milvus server did not start (see {self.base_dir / "logs"}): {error}'
            ) from error
        self._server = server
        _LOG.info('Milvus server at %s (data in %s)', self.uri, self.base_dir)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> LocalMilvusServer:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
