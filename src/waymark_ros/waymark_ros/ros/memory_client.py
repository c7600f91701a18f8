# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The agent's memory over ROS: the SearchMemory service of memory_node.

`MemoryClient` implements the agent's `MemoryBackend` protocol with one service call per
search. Each call polls its future (`service_call.wait_done`), never spinning and never
relying on a done callback, so it may be made from any thread: a plain one, or a callback
of a MultiThreadedExecutor while another thread of that executor takes the response (the
client has a callback group of its own, so a busy callback group never holds the response
back). Every wait is bounded: by the client's timeout, and within `memory_deadline(d)` by
the instant `d` as well, so a question's searches end by the question's deadline.

Errors keep the protocol's meaning: a request memory_node refuses (success=false) raises
ValueError with its message, which the agent shows to the model; no service, a timeout or
no response raise MemoryUnavailableError.

The pictures of the entries are read through memory's own `ImageStoreReader`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import cv2
import numpy as np
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from waymark.agent.memory_api import MemoryUnavailableError
from waymark.memory.entries import FRAME, LEVELS, SEGMENT, Hit
from waymark.memory.storage.image_codec import encode_jpeg
from waymark_interfaces.srv import SearchMemory
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import hit_from_msg, ns_to_stamp
from waymark_ros.ros.service_call import wait_done

Request = SearchMemory.Request

UINT32_MAX = 2**32 - 1
UINT64_MAX = 2**64 - 1
# A range search without k asks for this many; memory_node caps it at its max_top_k.
RANGE_ALL = 1000
# Longest wait for the service to appear before a search counts memory as away.
SERVICE_WAIT_S = 2.0
# Quality of a photo sent for an image search (the embedder resizes it anyway).
QUERY_JPEG_QUALITY = 90

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

    def search_text(
        self,
        query: str,
        k: int,
        sessions: Sequence[str] | None = None,
        level: str = FRAME,
        views: Sequence[str] | None = None,
        index_range: tuple[int, int] | None = None,
    ) -> list[Hit]:
        if index_range is not None:
            if not sessions or len(set(sessions)) != 1:
                raise ValueError('a text search over an index range needs exactly one session')
            first, last = index_range
            return self.search_index_range(
                next(iter(sessions)), first, last, k, level, query, views
            )
        request = self._request(Request.MODE_TEXT, k, sessions, level)
        request.text = query
        request.views = list(views or [])
        return self._search(request)

    def search_image(
        self,
        image: np.ndarray,
        k: int,
        sessions: Sequence[str] | None = None,
        level: str = FRAME,
        index_range: tuple[int, int] | None = None,
    ) -> list[Hit]:
        """`image` is RGB uint8, as the agent holds the question's photo."""
        if index_range is not None:
            raise ValueError('memory_node does not search images over an index range')
        rgb = np.asarray(image)
        if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3 or not rgb.size:
            raise ValueError(f'image search needs an RGB uint8 image, got {rgb.dtype} {rgb.shape}')
        request = self._request(Request.MODE_IMAGE, k, sessions, level)
        request.image.format = 'jpeg'
        request.image.data = encode_jpeg(cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), QUERY_JPEG_QUALITY)
        return self._search(request)

    def search_time(
        self, stamp_ns: int, k: int, sessions: Sequence[str] | None = None, level: str = FRAME
    ) -> list[Hit]:
        if stamp_ns < 0:
            raise ValueError('a time search needs a time after 1970')
        request = self._request(Request.MODE_TIME, k, sessions, level)
        request.stamp = ns_to_stamp(stamp_ns)
        return self._search(request)

    def search_position(
        self,
        x: float,
        y: float,
        z: float,
        k: int,
        sessions: Sequence[str] | None = None,
        level: str = FRAME,
    ) -> list[Hit]:
        request = self._request(Request.MODE_POSITION, k, sessions, level)
        request.position.x, request.position.y, request.position.z = float(x), float(y), float(z)
        return self._search(request)

    def search_range(
        self,
        x: float,
        y: float,
        radius: float,
        sessions: Sequence[str] | None = None,
        k: int | None = None,
        level: str = FRAME,
    ) -> list[Hit]:
        request = self._request(Request.MODE_RANGE, RANGE_ALL if k is None else k, sessions, level)
        request.position.x, request.position.y = float(x), float(y)
        request.radius = float(radius)
        return self._search(request)

    def search_index_range(
        self,
        session: str,
        first: int,
        last: int,
        k: int,
        level: str = SEGMENT,
        text: str = '',
        views: Sequence[str] | None = None,
    ) -> list[Hit]:
        if not 0 <= first <= UINT64_MAX or not 0 <= last <= UINT64_MAX:
            raise ValueError(f'index range {first}..{last} has a negative or too large index')
        if last < first:
            raise ValueError(f'index range ends ({last}) before it starts ({first})')
        request = self._request(Request.MODE_INDEX_RANGE, k, [session], level)
        request.first_index, request.last_index = int(first), int(last)
        request.text = text
        request.views = list(views or [])
        return self._search(request)

    # -- beyond the protocol -------------------------------------------------------------

    def count(self, sessions: Sequence[str] | None = None, level: str = FRAME) -> int:
        """Entries memory holds for `sessions` (all when None) at `level`."""
        request = self._request(Request.MODE_TIME, 1, sessions, level)
        return int(self._call(request).total_entries)

    # -- the service call ----------------------------------------------------------------

    def _request(self, mode: str, k: int, sessions: Sequence[str] | None, level: str) -> Request:
        if level not in LEVELS:
            raise ValueError(f'unknown level {level!r}; use one of {", ".join(LEVELS)}')
        if not 1 <= int(k) <= UINT32_MAX:
            raise ValueError(f'k must be a positive number of hits, got {k}')
        request = Request(mode=mode, level=level, top_k=int(k))
        request.sessions = list(sessions or [])
        request.robots = list(self.robots)
        return request

    def _search(self, request: Request) -> list[Hit]:
        hits = []
        for msg in self._call(request).hits:
            try:
                hits.append(hit_from_msg(msg))
            except ValueError as error:  # not from memory_node as we know it: leave it out
                self._logger.warning(f'ignored a malformed memory hit: {error}')
        return hits

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
