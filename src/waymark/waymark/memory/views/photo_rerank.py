# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Re-ranking a photo search's best hits by geometric verification.

The views rank by how alike two pictures look overall (an embedding, or colour and edge
histograms), so a place with the same colours can outrank the one that shows the thing
photographed. The local-feature matcher (photo_match: ORB, ratio test, RANSAC) counts the
correspondences that agree on one geometry between the photo and each of the first `top`
hits' stored pictures; those with at least `min_inliers` show the same thing and go
first, most inliers first, and the rest keep the views' order. A hit keeps its view and
score (a count of inliers is on no view's scale); a verified one gets its `region`, where
the correspondences lie in its picture, which localisation looks along.
Bounded: `top` pictures are read (each at most the image store's read limit), each matched
at the matcher's `max_side_px`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from waymark.memory.entries import FrameRecord, Hit
from waymark.memory.storage.image_codec import ImageDecodeError
from waymark.memory.views.photo_match import Match, PhotoMatcher, PhotoMatchParams

# Most hits one search re-ranks: each costs a picture read and an ORB match (~10 ms at 640x480).
MAX_TOP = 100


@dataclass(frozen=True)
class PhotoRerankParams:
    """`top`: hits re-ranked (0: none); `match`: how pictures are compared."""

    top: int = 10
    match: PhotoMatchParams = field(default_factory=PhotoMatchParams)

    def __post_init__(self) -> None:
        if not 0 <= self.top <= MAX_TOP:
            raise ValueError(f'top must be in [0, {MAX_TOP}], got {self.top}')


class PhotoReranker:
    """Orders a photo search's hits so that geometrically verified ones come first."""

    def __init__(
        self, params: PhotoRerankParams, pictures: Callable[[FrameRecord], bytes | None]
    ) -> None:
        """`pictures`: the stored picture of an entry (None: it has none)."""
        self.params = params
        self.matcher = PhotoMatcher(params.match)
        self._pictures = pictures

    def rows(self, k: int) -> int:
        """Hits to ask the views for, so that a verified one below the k-th can rise."""
        return max(k, self.params.top)

    def _matches(self, photo: np.ndarray, records: Sequence[FrameRecord]) -> list[Match | None]:
        """The photo compared with each record's stored picture; None where the photo or
        the picture is too small or unreadable to match."""
        try:
            goal = self.matcher.image_features(photo)
        except ImageDecodeError:
            return [None] * len(records)
        matches: list[Match | None] = []
        for record in records:
            data = self._pictures(record)
            try:
                view = self.matcher.features(data) if data else None
            except ValueError:  # a damaged or oversized file: not verified, not fatal
                view = None
            matches.append(None if view is None else self.matcher.compare(goal, view))
        return matches

    def rerank(self, hits: Sequence[Hit], photo: np.ndarray) -> list[Hit]:
        """`hits` with the verified among the first `top` moved to the front."""
        head, tail = list(hits[: self.params.top]), list(hits[self.params.top :])
        if not head:
            return list(hits)
        matches = self._matches(photo, [hit.record for hit in head])
        counts = [match.inliers if match else 0 for match in matches]
        least = self.params.match.min_inliers
        verified = sorted(
            (i for i, count in enumerate(counts) if count >= least), key=lambda i: -counts[i]
        )
        rest = [head[i] for i, count in enumerate(counts) if count < least]
        # A verified hit says where in its picture the photographed thing is.
        shown = [dataclasses.replace(head[i], region=matches[i].region) for i in verified]
        return shown + rest + tail
