# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Map epochs: a remembered target is trusted only in the map epoch it was seen in.

capture_node reports the current session and map epoch in its stats (JSON); a target from
memory carries those of its evidence. No alignment between two epochs is known, so a
target from another epoch than the current one is stale, not merely far.
"""

from __future__ import annotations

import json

MapEpoch = tuple[str, int]  # (session, map epoch)


def parse_epoch(stats_json: str) -> MapEpoch | None:
    """The current epoch in capture_node's stats; None while it has no session yet (no
    image seen). ValueError when the stats do not say it."""
    try:
        stats = json.loads(stats_json)
        session, epoch = stats['session'], stats['map_epoch']
    except (KeyError, TypeError) as error:  # not JSON at all is a ValueError already
        raise ValueError(str(error)) from None
    if not (isinstance(session, str) and type(epoch) is int and epoch >= 0):
        raise ValueError(f'session {session!r}, map_epoch {epoch!r}')
    return (session, epoch) if session else None


def stale_reason(evidence: MapEpoch, current: MapEpoch | None) -> str:
    """Why a target seen in `evidence` cannot be driven to in `current`; empty when it can
    (same epoch, or the current one not known)."""
    if current is None or current == evidence:
        return ''
    return (
        f'target is from session {evidence[0]} map epoch {evidence[1]}, the map is now '
        f'session {current[0]} epoch {current[1]}; no alignment between them is known'
    )
