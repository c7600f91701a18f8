# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node's services answered from a MemoryService: search_memory, list_sessions,
delete_session and thin_memory. Every request gets an explicit answer: a bad one is refused with a
one-line reason, and an error inside memory is reported, never raised into the executor."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from waymark.memory.entries import Hit
from waymark.memory.refusal import RefusedError
from waymark.memory.retention import RetentionPolicy
from waymark.memory.search_query import SearchRules
from waymark.memory.service import MemoryService
from waymark_interfaces.msg import SessionInfo
from waymark_interfaces.srv import DeleteSession, ListSessions, SearchMemory, ThinMemory
from waymark_ros.ros.conversions import ns_to_stamp
from waymark_ros.ros.memory_msgs import hit_to_msg
from waymark_ros.ros.search_msgs import query_from_msg

Request = SearchMemory.Request


@dataclass(frozen=True)
class SearchLimits:
    rules: SearchRules
    default_k: int  # hits when a request asks for 0
    max_k: int  # most hits one request gets


def answer_search(
    memory: MemoryService,
    limits: SearchLimits,
    request: Request,
    response: SearchMemory.Response,
    frame_id: str,
    counts: Counter[str],
) -> list[Hit] | None:
    """Fill `response`; returns the hits, None when the search was refused or failed."""
    k = min(request.top_k or limits.default_k, limits.max_k)
    try:
        query = query_from_msg(request, k, limits.rules)
        hits = memory.search(query)
        total = memory.count(query)
    except ValueError as error:
        response.success, response.message = False, str(error)
        counts['searches_refused'] += 1
        if isinstance(error, RefusedError):
            counts[f'searches_refused_{error.reason}'] += 1
        return None
    except Exception as error:  # never let one request take the service down
        response.success = False
        response.message = f'search failed: {type(error).__name__}: {error}'
        counts['searches_failed'] += 1
        return None
    response.success = True
    response.hits = [hit_to_msg(hit, frame_id) for hit in hits]
    response.total_entries = total
    response.message = f'{len(hits)} hits among {total} entries' + (
        f' (top_k capped at max_top_k={limits.max_k})' if request.top_k > limits.max_k else ''
    )
    counts['searches'] += 1
    return hits


def answer_list_sessions(memory: MemoryService, response: ListSessions.Response) -> None:
    try:
        listed = memory.sessions()
    except Exception as error:
        response.success, response.message = False, f'{type(error).__name__}: {error}'
        return
    for name, summary, segments, robot in listed:
        response.sessions.append(
            SessionInfo(
                name=name,
                robot=robot,
                frames=summary.frames,
                segments=segments,
                frames_with_pose=summary.with_pose,
                start_stamp=ns_to_stamp(summary.start_ns),
                end_stamp=ns_to_stamp(summary.end_ns),
                last_map_epoch=max(0, min(summary.last_map_epoch, 2**32 - 1)),
            )
        )
    response.success = True
    response.message = f'{len(listed)} sessions'


def answer_delete_session(
    memory: MemoryService,
    allow_delete: bool,
    request: DeleteSession.Request,
    response: DeleteSession.Response,
    counts: Counter[str],
) -> bool:
    """Fill `response`; True when the session was deleted."""
    refusal = None
    if not allow_delete:
        refusal = 'deletion is disabled on this robot (memory_node allow_delete: false)'
    elif request.confirm != request.session:
        refusal = f'not deleted: confirm must repeat the session name {request.session!r}'
    if refusal is not None:
        counts['deletions_refused'] += 1
        response.success, response.message = False, refusal
        return False
    try:
        frames, segments = memory.delete_session(request.session)
    except ValueError as error:
        response.success, response.message = False, str(error)
        return False
    except Exception as error:
        response.success, response.message = False, f'{type(error).__name__}: {error}'
        return False
    response.success = True
    response.frames_deleted, response.segments_deleted = frames, segments
    response.message = f'deleted {frames} frames and {segments} segments of {request.session}'
    return True


def answer_thin_memory(
    memory: MemoryService,
    policy: RetentionPolicy,
    allow_delete: bool,
    request: ThinMemory.Request,
    response: ThinMemory.Response,
    now_ns: int,
) -> bool:
    """Fill `response` with the plan for now, applying it when asked and confirmed;
    True when vectors were dropped."""
    try:
        plan = memory.plan_thinning(policy, now_ns)
    except Exception as error:
        response.success, response.message = False, f'{type(error).__name__}: {error}'
        return False
    response.frames, response.sessions = len(plan.ids), len(plan.sessions)
    response.token = plan.token
    if not request.apply:
        response.success = True
        response.message = (
            f'{len(plan.ids)} frames in {len(plan.sessions)} sessions would lose their vectors'
            if policy.thin_after_days > 0
            else 'retention is off (retention.thin_after_days: 0)'
        )
        return False
    refusal = None
    if not allow_delete:
        refusal = 'thinning is disabled on this robot (memory_node allow_delete: false)'
    elif policy.thin_after_days <= 0:
        refusal = 'retention is off (retention.thin_after_days: 0)'
    elif request.confirm != plan.token:
        refusal = (
            f'not applied: confirm {request.confirm!r} is not the token of the plan for now '
            f'({plan.token}); look at the plan again'
        )
    if refusal is not None:
        response.success, response.message = False, refusal
        return False
    try:
        removed = memory.thin(plan)
    except Exception as error:
        response.success, response.message = False, f'{type(error).__name__}: {error}'
        return False
    response.success, response.view_rows_removed = True, removed
    response.message = f'{len(plan.ids)} frames in {len(plan.sessions)} sessions thinned'
    return True
