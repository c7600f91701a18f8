# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node's store_place service answered from a MemoryService. A bad request is
refused with a one-line reason and changes nothing; an error inside memory is reported,
never raised into the executor."""

from __future__ import annotations

from collections import Counter

from waymark.memory.ingest.admission import check_stamp
from waymark.memory.places import PlaceInput, PlaceViewImage, place_entry_id
from waymark.memory.refusal import check_position
from waymark.memory.search_query import SearchRules
from waymark.memory.service import MemoryService
from waymark_interfaces.srv import StorePlace
from waymark_ros.ros.conversions import pose_from_msg


def place_from_request(
    request: StorePlace.Request, map_frame: str, rules: SearchRules
) -> PlaceInput:
    """The place a request describes; ValueError when its pose, frame or views are wrong
    (the name and images are checked by memory itself)."""
    header = request.pose.header
    if header.frame_id != map_frame:
        raise ValueError(f'place pose is in frame {header.frame_id!r}, expected {map_frame!r}')
    pose = pose_from_msg(request.pose.pose)
    check_position(pose.position, rules.max_coordinate_m, 'place position')
    if len(request.views) != len(request.view_yaws):
        raise ValueError(f'{len(request.views)} views but {len(request.view_yaws)} view yaws')
    views = tuple(
        PlaceViewImage(bytes(view.data), float(yaw), view.format or 'jpeg')
        for view, yaw in zip(request.views, request.view_yaws, strict=True)
    )
    return PlaceInput(
        name=request.name,
        pose=pose,
        map_epoch=int(request.map_epoch),
        stamp_ns=check_stamp(header.stamp.sec, header.stamp.nanosec, 'place stamp'),
        room=request.room,
        views=views,
    )


def answer_store_place(
    memory: MemoryService,
    rules: SearchRules,
    map_frame: str,
    request: StorePlace.Request,
    response: StorePlace.Response,
    counts: Counter[str],
) -> bool:
    """Fill `response`; True when memory changed."""
    try:
        if request.remove:
            response.removed = memory.places.remove(request.name)
            response.message = f'removed {response.removed} places named {request.name!r}'
            counts['places_removed'] += response.removed
        else:
            stored, response.removed = memory.places.put(
                place_from_request(request, map_frame, rules)
            )
            response.entry_id = place_entry_id(stored.name)
            response.message = (
                f'stored place {stored.name!r} with {len(stored.view_refs)} views'
                + (f', replacing {response.removed}' if response.removed else '')
            )
            counts['places_stored'] += 1
    except ValueError as error:
        response.success, response.message = False, str(error)
        counts['places_refused'] += 1
        return False
    except Exception as error:  # never let one request take the service down
        response.success = False
        response.message = f'store_place failed: {type(error).__name__}: {error}'
        counts['places_failed'] += 1
        return False
    response.success = True
    return bool(response.removed) or not request.remove
