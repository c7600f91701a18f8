# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Connecting to the memory's Milvus: a server address, or a Milvus Lite file, which one
process at a time may open (a second is told who holds it rather than a gRPC error)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from pymilvus import MilvusClient, MilvusException

from waymark.memory.storage.errors import MemoryStoreError, MemoryStoreLockedError


def lite_path(uri: str) -> Path | None:
    """The Milvus Lite database a `.db` uri names; None for a server address."""
    return Path(uri).expanduser().resolve() if uri.endswith('.db') else None


def connect(uri: str, token: str = '') -> MilvusClient:
    """A client of the Milvus at `uri`: a server address, or a Milvus Lite file (`.db`),
    which clients in one process share."""
    path = lite_path(uri)
    if path is None:
        try:
            return MilvusClient(uri=uri, token=token)
        except MilvusException as error:
            raise MemoryStoreError(f'cannot connect to Milvus at {uri}: {error}') from error
    if not path.parent.is_dir():
        raise MemoryStoreError(f'cannot open memory database {path}: {path.parent} does not exist')
    try:
        return MilvusClient(str(path))
    except MilvusException as error:
        if _held_by_other_process(path):
            raise MemoryStoreLockedError(
                f'memory database {path} is open in another process (Milvus Lite allows one '
                'process per database): stop that process, or serve the database with '
                '`milvus-lite server` and point memory.uri at it'
            ) from error
        raise MemoryStoreError(f'cannot open memory database {path}: {error}') from error


def release_lite(path: Path) -> None:
    """Stop the embedded server of a Milvus Lite database once its client is closed."""
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(str(path))


def _held_by_other_process(path: Path) -> bool:
    """Whether Milvus Lite's advisory lock on the database directory is taken."""
    from milvus_lite.db import LOCK_FILENAME

    lock = path / LOCK_FILENAME
    if not lock.exists():
        return False
    descriptor = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return False
    finally:
        os.close(descriptor)
