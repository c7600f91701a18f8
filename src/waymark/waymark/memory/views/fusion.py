# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Merging the rankings of several embedding views into one.

Views embedded by one model (OCR text and the three caption views all go through the
sentence embedder) share a cosine scale, so they merge by each entry's best cosine, as
BinTrack ranks its caption views jointly. Views from different models (the image view)
do not, so the merged rankings are fused by reciprocal rank.
"""

from __future__ import annotations

from collections.abc import Sequence

from waymark.memory.entries import Hit

# The usual reciprocal-rank-fusion constant: damps the weight of the very first ranks.
RRF_K = 60
# Cosines equal to this many decimals count as the same match.
SCORE_DECIMALS = 3


def best_per_entry(rankings: Sequence[Sequence[Hit]]) -> list[Hit]:
    """One ranking from several on one scale: each entry once, by its best score (equal
    scores: the nearest reading first, then by id)."""
    best: dict[str, Hit] = {}
    for ranking in rankings:
        for hit in ranking:
            kept = best.get(hit.record.id)
            if kept is None or hit.score > kept.score:
                best[hit.record.id] = hit
    return nearest_reading_first(sorted(best.values(), key=lambda hit: hit.record.id))


def nearest_reading_first(hits: Sequence[Hit]) -> list[Hit]:
    """Frames that read the same words score the same; of those, the one that saw the
    text largest (nearest, most legible) is the better answer, so it goes first."""
    return sorted(hits, key=lambda h: (-round(h.score, SCORE_DECIMALS), -h.record.text_size))


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Hit]]) -> list[Hit]:
    """Fuse rankings by reciprocal rank; each hit keeps the view where it ranked best and
    its score there. Ties keep the higher score, then the id, for a stable order."""
    fused: dict[str, float] = {}
    best: dict[str, tuple[int, Hit]] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            key = hit.record.id
            fused[key] = fused.get(key, 0.0) + 1.0 / (RRF_K + rank)
            kept = best.get(key)
            if kept is None or (rank, -hit.score) < (kept[0], -kept[1].score):
                best[key] = (rank, hit)
    order = sorted(fused, key=lambda key: (-fused[key], -best[key][1].score, key))
    return [best[key][1] for key in order]
