# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The agent's memory over ROS: the SearchMemory service of memory_node.

`MemoryClient` implements the agent's `MemoryBackend` protocol with one service call per
search, the `SearchQuery` carried whole by its request (`query_to_msg`). Each call polls
its future (`service_call.wait_done`), never spinning and never relying on a done
callback, so it may be made from any thread: a plain one, or a callback of a
MultiThreadedExecutor while another thread of that executor takes the response (the
client has a callback group of its own, so a busy callback group never holds the response
back). Every wait is bounded: by the client's timeout, and within `memory_deadline(d)` by
the instant `d` as well, so a question's searches end by the question's deadline.

Errors keep the protocol's meaning: a request memory_node refuses (success=false) raises
ValueError with its message, which the agent shows to the model; no service, a timeout or
no response raise MemoryUnavailableError.

The pictures of the entries are read through memory's own `ImageStoreReader`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from waymark.agent.memory_api import MemoryUnavailableError
from waymark.memory.entries import FRAME, Hit
from waymark.memory.search_query import Mode, SearchQuery
from waymark_interfaces.srv import SearchMemory
from waymark_ros.ros import qos
from waymark_ros.ros.memory_msgs import hit_from_msg
from waymark_ros.ros.search_msgs import query_to_msg
from waymark_ros.ros.service_call import wait_done

Request = SearchMemory.Request

# Longest wait for the service to appear before a search counts memory as away.
SERVICE_WAIT_S = 2.0

# The time.monotonic() instant by which searches made in this context must end, if any.
_DEADLINE: ContextVar[float | None] = ContextVar('memory_deadline', default=None)


@contextmanager
def memory_deadline(deadline: float) -> Iterator[None]:
    """Searches made in this block (on this thread) wait no later than `deadline`."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


class MemoryClient:
    """MemoryBackend over memory_node's SearchMemory service; safe to share between
    threads."""

    def __init__(
        self,
        node: Node,
        timeout_s: float,
        service: str = 'search_memory',
        robots: Sequence[str] = (),
    ) -> None:
        """`robots`: every search keeps to these robots' sessions (empty: every robot)."""
        if not timeout_s > 0:
            raise ValueError(f'timeout_s must be positive, got {timeout_s}')
        self.timeout_s = float(timeout_s)
        self.robots = tuple(robots)
        self._logger = node.get_logger()
        self._client = node.create_client(
            SearchMemory,
            service,
            qos_profile=qos.responses(),  # concurrent questions search at once
            callback_group=MutuallyExclusiveCallbackGroup(),
        )

    def ready(self, timeout_s: float | None = None) -> bool:
        """Whether memory_node serves searches, waiting at most `timeout_s` for it."""
        wait = min(self._wait_s(), SERVICE_WAIT_S) if timeout_s is None else timeout_s
        return self._client.wait_for_service(timeout_sec=max(0.0, wait))

    def _wait_s(self) -> float:
        """The longest wait allowed now: the timeout, cut by the context's deadline."""
        deadline = _DEADLINE.get()
        if deadline is None:
            return self.timeout_s
        return min(self.timeout_s, deadline - time.monotonic())

    # -- MemoryBackend -------------------------------------------------------------------

    def search(self, query: SearchQuery) -> list[Hit]:
        """The query's hits; a query naming no robots keeps to this client's `robots`."""
        if not query.robots and self.robots:
            query = dataclasses.replace(query, robots=self.robots)
        hits = []
        for msg in self._call(query_to_msg(query)).hits:
            try:
                hits.append(hit_from_msg(msg))
            except ValueError as error:  # not from memory_node as we know it: leave it out
                self._logger.warning(f'ignored a malformed memory hit: {error}')
        return hits

    # -- beyond the protocol -------------------------------------------------------------

    def count(self, sessions: Sequence[str] | None = None, level: str = FRAME) -> int:
        """Entries memory holds for `sessions` (all when None) at `level`."""
        query = SearchQuery(Mode.TIME, 1, sessions=sessions, robots=self.robots, level=level)
        return int(self._call(query_to_msg(query)).total_entries)

    # -- the service call ----------------------------------------------------------------

    def _call(self, request: Request) -> SearchMemory.Response:
        if self._wait_s() <= 0:
            raise MemoryUnavailableError(
                f'no time left before the deadline for a {request.mode} search'
            )
        if not self.ready():
            raise MemoryUnavailableError('memory_node is not running (no search_memory service)')
        future = self._client.call_async(request)
        wait = self._wait_s()
        if not wait_done(future, max(0.0, wait)):
            future.cancel()
            self._client.remove_pending_request(future)
            raise MemoryUnavailableError(
                f'memory_node did not answer a {request.mode} search within {wait:.1f} s'
            )
        response = future.result()
        if response is None:
            raise MemoryUnavailableError(f'memory_node gave no response to a {request.mode} search')
        if not response.success:
            raise ValueError(response.message or f'memory_node refused the {request.mode} search')
        return response
