# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A SearchQuery on the wire (SearchMemory's request), both ways, in one place: the
reasoner's memory client writes it and memory_node reads it back, checked."""

from __future__ import annotations

import cv2
from builtin_interfaces.msg import Time

from waymark.memory.entries import FRAME
from waymark.memory.ingest.admission import check_stamp
from waymark.memory.search_query import Mode, SearchQuery, SearchRules
from waymark.memory.storage.image_codec import encode_jpeg
from waymark_interfaces.srv import SearchMemory
from waymark_ros.ros.conversions import NS_PER_S, ns_to_stamp

Request = SearchMemory.Request

UINT32_MAX = 2**32 - 1
INT32_MAX = 2**31 - 1  # builtin_interfaces/Time.sec
# Quality of a photo sent for an image search (the embedder resizes it anyway).
QUERY_JPEG_QUALITY = 90


def query_to_msg(query: SearchQuery) -> Request:
    """The SearchMemory request for `query`: every field whatever the mode, the photo as
    JPEG. ValueError for what the message cannot carry (a time past 2038)."""
    request = Request(
        mode=query.mode.value,
        level=query.level,
        top_k=min(query.k, UINT32_MAX),  # memory_node caps k far lower
        text=query.text,
        radius=float(query.radius),
        first_index=query.first_index,
        last_index=query.last_index,
        stamp=_stamp(query.stamp_ns),
        end_stamp=_stamp(query.end_ns),
    )
    request.position.x, request.position.y, request.position.z = map(float, query.position)
    request.sessions, request.robots = list(query.sessions), list(query.robots)
    request.views = list(query.views)
    if query.image is not None:
        request.image.format = 'jpeg'
        bgr = cv2.cvtColor(query.image, cv2.COLOR_RGB2BGR)
        request.image.data = encode_jpeg(bgr, QUERY_JPEG_QUALITY)
    return request


def _stamp(stamp_ns: int) -> Time:
    if stamp_ns // NS_PER_S > INT32_MAX:
        raise ValueError(f'time {stamp_ns} ns is past what a ROS time holds')
    return ns_to_stamp(stamp_ns)


def query_from_msg(request: Request, k: int, rules: SearchRules) -> SearchQuery:
    """The query a request carries, of `k` hits, checked against `rules`; RefusedError
    when it is malformed or over them. Only an image search's photo is decoded."""
    p = request.position
    photo = rules.decode_image(bytes(request.image.data)) if request.mode == Mode.IMAGE else None
    query = SearchQuery(
        mode=request.mode,
        k=k,
        sessions=request.sessions,
        robots=request.robots,
        level=request.level or FRAME,
        views=request.views,
        text=request.text,
        image=photo,
        stamp_ns=check_stamp(request.stamp.sec, request.stamp.nanosec),
        end_ns=check_stamp(request.end_stamp.sec, request.end_stamp.nanosec, 'end_stamp'),
        position=(p.x, p.y, p.z),
        radius=float(request.radius),
        first_index=request.first_index,
        last_index=request.last_index,
    )
    rules.check(query)
    return query
