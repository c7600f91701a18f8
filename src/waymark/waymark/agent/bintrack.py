# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Binary Tracking: find a target between two route anchors with one verifier call.

Verifying a candidate costs about a second of VLM time while a retrieval costs tens of
milliseconds, so instead of verifying every segment between the anchors we halve the
interval by retrieval evidence alone and ask the verifier once, at the leaf. Also here:
the anchor-aware verifier pool, and the lock-on-Y rerank for "Z nearest to Y" questions.

Everything is plain Python over callables that return `Hit`s, so the agent can bind it to
index range searches of memory (see route.py) and tests can bind it to fakes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from waymark.memory.entries import Hit
from waymark.memory.views.fusion import per_view_zscores
from waymark.settings import setting

# retrieve(first, last, k): segment hits of one session with first <= index <= last, best
# first, scored by cosine similarity to the target description.
Retrieve = Callable[[int, int, int], list[Hit]]
# verify(candidates): one verifier call; the candidate that shows the target, or None.
Verify = Callable[[list[Hit]], Hit | None]
# near(x, y, first, last, k): segment hits in first..last nearest to (x, y), nearest first.
Near = Callable[[float, float, int, int, int], list[Hit]]

LEFT = 'left'
RIGHT = 'right'


@dataclass(frozen=True)
class BinTrackParams:
    """Knobs of Binary Tracking.

    Stopping rule: we halve while the interval holds more than `k_leaf` segments
    (`last - first + 1 > k_leaf`), so a leaf never holds more than `k_leaf`. With floor
    midpoints the kept half has at most ceil(len/2) segments, hence an interval of n
    segments takes at most ceil(log2(n / k_leaf)) iterations, exactly that many when
    n = k_leaf * 2**j, and none when n <= k_leaf. `max_iterations` only guards against a
    runaway loop; if it is ever reached, the current interval becomes the leaf.
    """

    # evid(H) = alpha * mean + beta * max of the half's hit scores; alpha=0, beta=1 is the
    # max rule under which the paper's correctness argument holds.
    alpha: float = setting(
        0.5,
        'Weight of the mean hit score of a half (evid = alpha mean + beta max).',
        low=0.0,
        high=10.0,
    )
    beta: float = setting(0.5, 'Weight of the best hit score of a half.', low=0.0, high=10.0)
    k_leaf: int = setting(16, 'Halving stops at this many segments.', low=1, high=100_000)
    # Hits asked of every retrieval, per half and at the leaf.
    top_k: int = setting(40, 'Hits per interval search.', low=1, high=1000)
    verifier_pool: int = setting(
        12, 'Candidates shown to the verifier in its one call.', low=1, high=64
    )
    max_iterations: int = 64

    def __post_init__(self) -> None:
        for name in ('alpha', 'beta'):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f'{name} must be a finite number >= 0, got {value}')
        if self.alpha == 0 and self.beta == 0:
            raise ValueError('alpha and beta are both 0: every half would score the same')
        for name in ('k_leaf', 'top_k', 'verifier_pool'):
            if getattr(self, name) < 1:
                raise ValueError(f'{name} must be >= 1, got {getattr(self, name)}')
        if self.max_iterations < 0:
            raise ValueError(f'max_iterations must be >= 0, got {self.max_iterations}')


@dataclass(frozen=True)
class Split:
    """One halving step: where the interval was cut and which half survived."""

    mid: int
    left_evidence: float
    right_evidence: float
    kept: str


@dataclass
class TrackResult:
    """What one Binary Tracking run did, for the answer and for latency accounting.

    `retrievals` counts the halving retrievals only (two per split); `leaf_retrievals`
    counts those made at the leaf (the semantic one, plus the anchor-proximity one when an
    anchor pose was given). `leaf` is None, and nothing was retrieved, when no segment lies
    strictly between the anchors.
    """

    chosen: Hit | None
    leaf: tuple[int, int] | None
    intervals: list[tuple[int, int]] = field(default_factory=list)
    splits: list[Split] = field(default_factory=list)
    retrievals: int = 0
    leaf_retrievals: int = 0
    verifier_calls: int = 0
    candidates: list[Hit] = field(default_factory=list)

    @property
    def iterations(self) -> int:
        return len(self.splits)


def evidence(scores: Sequence[float], alpha: float, beta: float) -> float:
    """How strongly a half shows the target. A half with no hits scores -inf, so it never
    beats a half with hits, and two empty halves tie (which keeps the left)."""
    if not scores:
        return -math.inf
    return alpha * sum(scores) / len(scores) + beta * max(scores)


def segment_scores(hits: Sequence[Hit], scores: Sequence[float] | None = None) -> list[float]:
    """One score per segment, its best over views, so that a segment matched by several
    caption views does not weigh more in the mean than one matched by a single view.
    `scores` replaces the hits' own (the per-view normalised ones), in the same order."""
    values = [hit.score for hit in hits] if scores is None else scores
    best: dict[str, float] = {}
    for hit, score in zip(hits, values, strict=True):
        key = hit.record.id
        best[key] = max(best.get(key, -math.inf), score)
    return list(best.values())


def split_evidence(
    left: Sequence[Hit], right: Sequence[Hit], alpha: float, beta: float
) -> tuple[float, float]:
    """Evidence of the two halves of a split, each hit's score normalised within its view
    over both halves together (`per_view_zscores`): raw cosines of different encoders
    never meet, while the halves stay comparable. Within one view the normalisation is an
    increasing affine map, which would not change which half wins, so hits that all come
    from one view keep their cosines (the paper's evidence, readable in traces)."""
    hits = [*left, *right]
    if len({hit.view for hit in hits}) <= 1:
        return (
            evidence(segment_scores(left), alpha, beta),
            evidence(segment_scores(right), alpha, beta),
        )
    normalised = per_view_zscores(hits)
    left_scores = segment_scores(left, normalised[: len(left)])
    right_scores = segment_scores(right, normalised[len(left) :])
    return evidence(left_scores, alpha, beta), evidence(right_scores, alpha, beta)


def nearest_index(positions: Sequence[tuple[float, float]], point: tuple[float, float]) -> int:
    """Index of the position closest to `point` (the earliest one on ties)."""
    if not positions:
        raise ValueError('no positions to choose an anchor from')
    return min(range(len(positions)), key=lambda i: _dist(positions[i], point))


def initial_interval(i_x: int, i_y: int) -> tuple[int, int]:
    """Segments strictly between the two anchors; the anchors themselves are not the
    target. Empty (last < first) when the anchors are equal or adjacent."""
    return min(i_x, i_y) + 1, max(i_x, i_y) - 1


def anchor_aware_pool(semantic: Sequence[Hit], near_anchor: Sequence[Hit], size: int) -> list[Hit]:
    """Verifier candidates: half the best semantic matches and half the segments nearest a
    known anchor, so that a true answer with a borderline score near the anchor still gets
    seen. Duplicates (by entry id) keep their first occurrence; any room left is filled from
    the remaining semantic, then near-anchor hits. Without near-anchor hits this is just the
    semantic top-`size`."""
    if size < 0:
        raise ValueError(f'pool size must be >= 0, got {size}')
    half = size // 2
    ordered = [
        *semantic[:half],
        *near_anchor[: size - half],
        *semantic[half:],
        *near_anchor[size - half :],
    ]
    pool: list[Hit] = []
    seen: set[str] = set()
    for hit in ordered:
        if len(pool) == size:
            break
        if hit.record.id not in seen:
            seen.add(hit.record.id)
            pool.append(hit)
    return pool


class BinaryTracker:
    """Halves the interval between two anchor segments by retrieval evidence, then asks
    the verifier once about the leaf's best candidates."""

    def __init__(
        self,
        retrieve: Retrieve,
        verify: Verify,
        params: BinTrackParams | None = None,
        near: Near | None = None,
    ) -> None:
        self.retrieve = retrieve
        self.verify = verify
        self.params = params or BinTrackParams()
        self.near = near

    def track(
        self, i_x: int, i_y: int, anchor_xy: tuple[float, float] | None = None
    ) -> TrackResult:
        """Find the target between anchor segments `i_x` and `i_y` (either order).

        With `anchor_xy` the verifier pool mixes in the leaf segments nearest that pose.
        When the leaf yields no candidate at all the verifier is not called: there is
        nothing it could pick, and the call would cost a second for a certain None.
        """
        if anchor_xy is not None and self.near is None:
            raise ValueError('an anchor pose needs a near() retrieval given to the tracker')
        p = self.params
        first, last = initial_interval(i_x, i_y)
        if last < first:
            return TrackResult(chosen=None, leaf=None)
        result = TrackResult(chosen=None, leaf=None, intervals=[(first, last)])
        while last - first + 1 > p.k_leaf and result.iterations < p.max_iterations:
            mid = (first + last) // 2
            left, right = split_evidence(
                self.retrieve(first, mid, p.top_k),
                self.retrieve(mid + 1, last, p.top_k),
                p.alpha,
                p.beta,
            )
            result.retrievals += 2
            if left >= right:
                last, kept = mid, LEFT
            else:
                first, kept = mid + 1, RIGHT
            result.splits.append(Split(mid, left, right, kept))
            result.intervals.append((first, last))
        result.leaf = (first, last)

        semantic = self.retrieve(first, last, p.top_k)
        result.leaf_retrievals += 1
        near_anchor: list[Hit] = []
        if anchor_xy is not None and self.near is not None:
            near_anchor = self.near(anchor_xy[0], anchor_xy[1], first, last, p.verifier_pool)
            result.leaf_retrievals += 1
        result.candidates = anchor_aware_pool(semantic, near_anchor, p.verifier_pool)
        if not result.candidates:
            return result
        picked = self.verify(list(result.candidates))
        result.verifier_calls += 1
        result.chosen = _trusted(picked, result.candidates)
        return result


def _trusted(picked: Hit | None, candidates: Sequence[Hit]) -> Hit | None:
    """The verifier's pick as the candidate we showed it; anything else counts as no pick,
    so a model that invents an entry or a pose cannot move the answer."""
    if picked is None:
        return None
    return next((c for c in candidates if c.record.id == picked.record.id), None)


# -- lock-on-Y ---------------------------------------------------------------------------

DEFAULT_PLACE_NOUNS = (
    'lakeside',
    'cafeteria',
    'entrance',
    'lobby',
    'rooftop',
    'reception',
    'kitchen',
    'parking lot',
    'station',
    'exit',
)

# Y runs to the next clause punctuation or the end of the sentence.
_Y = r'(?P<y>[^?!.,;:]+)'
# In "nearest Z to Y" the Z cannot start with an article or "to": "nearest the fountain"
# means "nearest to the fountain".
_Z_START = r'(?!(?:to|the|a|an)\b)'
_PROXIMITY = [
    re.compile(rf'\b(?:nearest|closest)\s+{_Z_START}[^?!.,;:]+?\s+to\s+{_Y}', re.I),
    # Without "to" only before an article: "the nearest cafe" names no Y.
    re.compile(rf'\b(?:nearest|closest)\s+(?:to\s+|(?=(?:the|a|an)\s)){_Y}', re.I),
    re.compile(rf'\bnear\s+(?:to\s+)?{_Y}', re.I),
    re.compile(rf'\b(?:next|close)\s+to\s+{_Y}', re.I),
]
# Route questions name two anchors for Binary Tracking, not a place to be near.
_ROUTE = re.compile(
    r'\bon\s+the\s+way\b|\balong\s+the\s+(?:way|route)\b|\bbetween\b.+\band\b|\bfrom\b.+\bto\b',
    re.I,
)
_LEADING_ARTICLE = re.compile(r'^(?:the|a|an)\s+', re.I)
# Places relative to the speaker, which memory cannot retrieve as a landmark.
_DEICTIC = frozenset({'me', 'us', 'you', 'here', 'there', 'it'})
_SENTENCE_END = re.compile(r'(?<=[.!?])\s+')


def secondary_anchor(question: str, place_nouns: Sequence[str] = DEFAULT_PLACE_NOUNS) -> str | None:
    """The Y of a "Z near/closest to Y" question, or None.

    First the question sentence's own phrasing; failing that, a known place noun in the
    sentence just before it ("We were in the lobby. Where was the bin?"). Route questions
    ("between X and Y", "on the way from X to Y") get None: their anchors bound an
    interval for Binary Tracking rather than a place the target is near.
    """
    sentences = [s for s in _SENTENCE_END.split(question.strip()) if s.strip()]
    if not sentences or _ROUTE.search(question):
        return None
    asked = sentences[-1]
    for pattern in _PROXIMITY:
        match = pattern.search(asked)
        if match:
            y = _LEADING_ARTICLE.sub('', match.group('y').strip()).strip()
            if y and y.lower() not in _DEICTIC:
                return y
    if len(sentences) < 2:
        return None
    before = sentences[-2]
    found = []
    for noun in place_nouns:
        match = re.search(rf'\b{re.escape(noun)}\b', before, re.I)
        if match:
            found.append((match.start(), noun))
    return min(found)[1] if found else None


# Where a "Z near Y" phrase turns from the target to the place it is near.
_TOWARDS_Y = re.compile(r'\s+(?:nearest|closest|near|next|close)\s+(?:to\s+)?', re.I)


def primary_target(query: str, anchor: str | None) -> str:
    """The Z of a "Z near Y" search, for the verifier to look for: the query up to where
    it turns to Y ("red bin near the lobby" -> "red bin"); the whole query otherwise."""
    if anchor is None:
        return query
    head = _TOWARDS_Y.split(query, maxsplit=1)[0].strip()
    return head or query


def lock_on_rerank(
    z_verified: Sequence[Hit], y_verified: Sequence[Hit], min_distinct_m: float = 1.0
) -> tuple[list[Hit], bool]:
    """Order verified Z candidates by distance to their nearest verified Y pose.

    Applied only when at least two distinct Y poses (farther apart than `min_distinct_m`)
    passed verification and the order's top-1 changes: a single Y may itself be a false
    positive, and a rerank that keeps the top-1 changes no answer. Returns the order to use
    and whether the rerank was applied. Z candidates without a valid pose sort last.
    """
    if min_distinct_m < 0:
        raise ValueError(f'min_distinct_m must be >= 0, got {min_distinct_m}')
    original = list(z_verified)
    y_poses = [(h.record.x, h.record.y) for h in y_verified if h.record.pose_valid]
    distinct: list[tuple[float, float]] = []
    for pose in y_poses:
        if all(_dist(pose, other) > min_distinct_m for other in distinct):
            distinct.append(pose)
    if len(distinct) < 2 or not original:
        return original, False

    def to_nearest_y(hit: Hit) -> float:
        if not hit.record.pose_valid:
            return math.inf
        return min(_dist((hit.record.x, hit.record.y), pose) for pose in y_poses)

    reranked = sorted(original, key=to_nearest_y)
    if reranked[0].record.id == original[0].record.id:
        return original, False
    return reranked, True


def resolve_anchor_by_position(
    segments: Sequence[Hit], x: float, y: float, after_index: int | None = None
) -> int | None:
    """Segment index of an anchor given as a position: the nearest segment of the pass,
    scanning in time order so that ties go to the earlier one. With `after_index` only
    later segments count, so that on a round trip the second anchor is looked up on the
    pass after the first rather than on the way back. Segments without a valid pose are
    skipped; None when no segment qualifies."""
    if len({h.record.session for h in segments}) > 1:
        raise ValueError('anchor segments must come from one session')
    eligible = sorted(
        (
            h.record
            for h in segments
            if h.record.pose_valid and (after_index is None or h.record.index > after_index)
        ),
        key=lambda r: r.index,
    )
    if not eligible:
        return None
    return min(eligible, key=lambda r: _dist((r.x, r.y), (x, y))).index


def _dist(a: tuple[float, float], b: tuple[float, float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])
