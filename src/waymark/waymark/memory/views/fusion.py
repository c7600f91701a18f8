# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Merging the rankings of several embedding views into one.

Views embedded by one model (OCR text and the three caption views all go through the
sentence embedder) share a cosine scale, so they merge by each entry's best cosine, as
BinTrack ranks its caption views jointly. Views from different models (the image view)
do not, so the merged rankings are fused by reciprocal rank. A fused hit keeps the raw
cosine of the view it ranked best in: scores of hits from different views are not on one
scale, and whoever compares them must first put them on one (`per_view_zscores`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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


def per_view_zscores(hits: Sequence[Hit]) -> list[float]:
    """Each hit's score as a z-score among the hits of its own view, in the given order.

    Cosines of different encoders live on different scales (SigLIP's text-to-image cosines
    sit near 0.1, MiniLM's text cosines near 0.5), so a raw max or mean over a mixed list
    follows the encoder, not the match. A z-score says how far a hit stands out among what
    its own view returned for the same query; unlike min-max it keeps the gap between a
    view's best and its runner-up, and unlike ranks it keeps how close two hits are. Scores
    are comparable only within one call: pass every list that will be compared (both
    halves of a split) together. A view with one hit, or with all hits equal, gives 0.
    """
    scores = np.array([hit.score for hit in hits], dtype=np.float64)
    views = np.array([hit.view for hit in hits], dtype=object)
    normalised = np.zeros(len(hits))
    for view in set(views.tolist()):
        mask = views == view
        spread = scores[mask].std()
        if spread > 1e-9:
            normalised[mask] = (scores[mask] - scores[mask].mean()) / spread
    return normalised.tolist()
