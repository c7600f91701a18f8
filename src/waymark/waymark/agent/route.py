# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`search_between`: Binary Tracking bound to memory's segments and to the verifier.

The anchors come as names or map positions. A name is the best segment retrieval finds
for it, a position the segment nearest to it; neither is shown to the verifier, whose one
call per question goes to the leaf (as in BinTrack, where the anchors' poses come from
the query parser and VERIFY runs once). The second anchor is looked up in the first
anchor's session and, for positions, on the pass after it, so that a round trip does not
pair the outbound start with the return end. All retrievals stay within that session
(BinTrack's per-recording partition).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from waymark.agent.bintrack import (
    BinaryTracker,
    BinTrackParams,
    TrackResult,
    resolve_anchor_by_position,
)
from waymark.agent.memory_api import MemoryBackend
from waymark.agent.verifier import Verifier
from waymark.memory.entries import SEGMENT, FrameRecord, Hit
from waymark.memory.search_query import Mode, SearchQuery

# Loads an entry's stored picture (JPEG), None when it has none.
ImageLoader = Callable[[FrameRecord], bytes | None]

# Segments fetched around a position anchor before picking the nearest of the pass.
ANCHOR_POSITION_CANDIDATES = 64


@dataclass
class RouteResult:
    """What search_between found, and what it cost."""

    chosen: Hit | None = None
    verified: bool = False  # the verifier picked `chosen` (else: best retrieval score)
    anchors: dict[str, Hit | None] = field(default_factory=dict)
    track: TrackResult | None = None
    retrievals: int = 0
    verifier_calls: int = 0
    message: str = ''


class RouteSearch:
    """Runs search_between for the agent; see the module docstring."""

    def __init__(
        self,
        memory: MemoryBackend,
        images: ImageLoader,
        verifier: Verifier | None = None,
        params: BinTrackParams | None = None,
    ) -> None:
        self.memory = memory
        self.images = images
        self.verifier = verifier
        self.params = params or BinTrackParams()

    def run(
        self,
        target: str,
        start: str | tuple[float, float],
        end: str | tuple[float, float],
        sessions: Sequence[str] | None,
        deadline: float | None = None,
        may_verify: bool = True,
    ) -> RouteResult:
        """Binary Tracking between the anchors; with `may_verify` False (the question's
        verifier call is spent) the leaf's best ranked candidate is the answer."""
        result = RouteResult()
        first = self._anchor(start, sessions, None, result)
        result.anchors['from'] = first
        if first is None:
            result.message = f'could not find the start of the route ({_name(start)})'
            return result
        session = first.record.session
        second = self._anchor(end, [session], first.record.index, result)
        result.anchors['to'] = second
        if second is None:
            result.message = (
                f'could not find the end of the route ({_name(end)}) in recording {session}'
            )
            return result
        verdicts: list[bool] = []

        def between(low: int, high: int, k: int, text: str = '') -> list[Hit]:
            return self.memory.search(
                SearchQuery(
                    Mode.INDEX_RANGE,
                    k,
                    sessions=(session,),
                    level=SEGMENT,
                    text=text,
                    first_index=low,
                    last_index=high,
                )
            )

        def retrieve(low: int, high: int, k: int) -> list[Hit]:
            return between(low, high, k, target)

        def near(x: float, y: float, low: int, high: int, k: int) -> list[Hit]:
            window = between(low, high, high - low + 1)
            window = [hit for hit in window if hit.record.pose_valid]
            return sorted(window, key=lambda h: (h.record.x - x) ** 2 + (h.record.y - y) ** 2)[:k]

        def verify(candidates: list[Hit]) -> Hit | None:
            picked, verified = self._verify(target, candidates, deadline, result, may_verify)
            verdicts.append(verified)
            return picked

        anchor_xy = (first.record.x, first.record.y) if first.record.pose_valid else None
        tracker = BinaryTracker(retrieve, verify, self.params, near)
        track = tracker.track(first.record.index, second.record.index, anchor_xy)
        result.track = track
        result.retrievals += track.retrievals + track.leaf_retrievals
        result.chosen = track.chosen
        result.verified = bool(verdicts and verdicts[-1])
        if track.leaf is None:
            result.message = 'no segment lies between the two anchors'
        elif track.chosen is None:
            result.message = f'nothing matching {target!r} between the anchors'
        return result

    def _anchor(
        self,
        anchor: str | tuple[float, float],
        sessions: Sequence[str] | None,
        after_index: int | None,
        result: RouteResult,
    ) -> Hit | None:
        """The segment standing for an anchor: by name (the best retrieved with a pose,
        preferring those after `after_index`), or by position (nearest segment, after
        `after_index` when given)."""
        if isinstance(anchor, str):
            hits = self.memory.search(
                SearchQuery(
                    Mode.TEXT,
                    self.params.verifier_pool,
                    sessions=sessions,
                    level=SEGMENT,
                    text=anchor,
                )
            )
            result.retrievals += 1
            hits = [hit for hit in hits if hit.record.pose_valid]
            if after_index is not None:
                later = [hit for hit in hits if hit.record.index > after_index]
                hits = later or hits
            return hits[0] if hits else None
        x, y = anchor
        hits = self.memory.search(
            SearchQuery(
                Mode.POSITION,
                ANCHOR_POSITION_CANDIDATES,
                sessions=sessions,
                level=SEGMENT,
                position=(x, y, 0.0),
            )
        )
        result.retrievals += 1
        if not hits:
            return None
        session = hits[0].record.session
        same = [hit for hit in hits if hit.record.session == session]
        index = resolve_anchor_by_position(same, x, y, after_index)
        return next((hit for hit in same if hit.record.index == index), None)

    def _verify(
        self,
        target: str,
        candidates: Sequence[Hit],
        deadline: float | None,
        result: RouteResult,
        may_verify: bool = True,
    ) -> tuple[Hit | None, bool]:
        """The candidate the verifier picks (True), or without a verifier (or with
        `may_verify` False) the best ranked one (False). A verifier that sees none of them
        as the target gives None."""
        candidates = [hit for hit in candidates if hit.record.pose_valid]
        if not candidates:
            return None, False
        if self.verifier is None or not may_verify:
            return candidates[0], False
        pictures = [(hit.record.id, self.images(hit.record) or b'') for hit in candidates]
        if not any(jpeg for _, jpeg in pictures):
            return candidates[0], False
        if deadline is not None and time.monotonic() >= deadline:
            return candidates[0], False
        verdict = self.verifier.verify(target, pictures, deadline)
        result.verifier_calls += verdict.calls
        chosen = next((hit for hit in candidates if hit.record.id == verdict.chosen), None)
        return chosen, chosen is not None


def _name(anchor: str | tuple[float, float]) -> str:
    return anchor if isinstance(anchor, str) else f'x={anchor[0]:.1f} y={anchor[1]:.1f}'
