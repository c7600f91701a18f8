# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Relocation: after a restart or a SLAM reset, where the robot is and how the new map
lines up with the old one.

The robot turns in place and takes views; each is matched against the named places' views
and against memory. Two answers come out, kept apart because they fail differently:

- the belief, which named place most views agree on. It needs only recognition, so it is
  reported even when the maps cannot be aligned;
- the alignment, an SE(2) transform from the new map epoch to an old one. Each match pairs
  the view's pose in the new epoch with the matched view's pose in the old one (a view
  that matches was taken from about the same spot, facing about the same way), and a
  consensus over those pairs keeps the ones that agree. It is accepted only when enough
  matches from more than one heading agree: one heading alone cannot tell a turn of the
  map from a look-alike wall.

A view whose best match is barely better than a match somewhere else (a look-alike room)
matches nothing: a wrong match costs more than a missing one. Goals from an old epoch are
driven to only through an accepted alignment (`goal_allowed`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from waymark.navigation.epochs import MapEpoch
from waymark.navigation.follower import wrap_angle
from waymark.tasks.places import NamedPlace, PlacePose
from waymark.tasks.stop_views import HEADING_BUCKETS, heading_bucket

# Bounds on the parameters themselves.
VIEWS_CAP = 64
HITS_CAP = 64
REFERENCES_CAP = 4096
VECTORS_CAP = 16
# Refinement rounds: refit, recount the inliers, refit once more if they changed.
REFINE_ROUNDS = 2


@dataclass(frozen=True)
class RelocationParams:
    """How strict matching and alignment are; defaults suit image embeddings (cosine) of
    indoor views and a legged base's drift."""

    # Cosine similarity a view's best match must reach.
    min_similarity: float = 0.8
    # How far the best match must lead the best match elsewhere (another place).
    min_margin: float = 0.05
    # Two candidates of one epoch closer than this are the same spot, not rivals (m).
    same_spot_m: float = 1.5
    # A pose pair agrees with a transform within these tolerances.
    distance_tolerance_m: float = 0.5
    angle_tolerance_rad: float = math.radians(15.0)
    # An alignment needs this many agreeing matches, from this many heading buckets.
    min_agreeing: int = 3
    min_headings: int = 2
    # Bounds: views in one relocation, memory hits kept per view, place views compared,
    # embedding vectors per view.
    max_views: int = 16
    max_hits_per_view: int = 8
    max_reference_views: int = 1024
    max_vectors_per_view: int = 4

    def __post_init__(self) -> None:
        _check_range('min_similarity', self.min_similarity, -1.0, 1.0)
        _check_range('min_margin', self.min_margin, 0.0, 2.0)
        _check_range('same_spot_m', self.same_spot_m, 0.0, 100.0)
        _check_range('distance_tolerance_m', self.distance_tolerance_m, 1e-3, 100.0)
        _check_range('angle_tolerance_rad', self.angle_tolerance_rad, 1e-3, math.pi)
        _check_count('min_agreeing', self.min_agreeing, 2, VIEWS_CAP)
        _check_count('min_headings', self.min_headings, 1, HEADING_BUCKETS)
        _check_count('max_views', self.max_views, 1, VIEWS_CAP)
        _check_count('max_hits_per_view', self.max_hits_per_view, 0, HITS_CAP)
        _check_count('max_reference_views', self.max_reference_views, 1, REFERENCES_CAP)
        _check_count('max_vectors_per_view', self.max_vectors_per_view, 1, VECTORS_CAP)
        if self.min_agreeing > self.max_views:
            raise ValueError(
                f'min_agreeing ({self.min_agreeing}) cannot exceed max_views ({self.max_views})'
            )


def _check_range(name: str, value: float, low: float, high: float) -> None:
    if not (isinstance(value, int | float) and not isinstance(value, bool)):
        raise ValueError(f'{name} must be a number, got {value!r}')
    if not low <= value <= high:
        raise ValueError(f'{name} must be in [{low}, {high}], got {value}')


def _check_count(name: str, value: int, low: int, high: int) -> None:
    if type(value) is not int or not low <= value <= high:
        raise ValueError(f'{name} must be an integer in [{low}, {high}], got {value!r}')


@dataclass(frozen=True)
class SE2:
    """A planar rigid transform: rotate by `yaw`, then shift by (x, y)."""

    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0

    @classmethod
    def between(cls, source: PlacePose, target: PlacePose) -> SE2:
        """The transform that carries `source` onto `target`."""
        yaw = wrap_angle(target.yaw - source.yaw)
        cos, sin = math.cos(yaw), math.sin(yaw)
        return cls(
            target.x - (cos * source.x - sin * source.y),
            target.y - (sin * source.x + cos * source.y),
            yaw,
        )

    def apply(self, pose: PlacePose) -> PlacePose:
        cos, sin = math.cos(self.yaw), math.sin(self.yaw)
        return PlacePose(
            self.x + cos * pose.x - sin * pose.y,
            self.y + sin * pose.x + cos * pose.y,
            wrap_angle(self.yaw + pose.yaw),
        )

    def inverse(self) -> SE2:
        cos, sin = math.cos(self.yaw), math.sin(self.yaw)
        return SE2(-(cos * self.x + sin * self.y), sin * self.x - cos * self.y, -self.yaw)

    def after(self, inner: SE2) -> SE2:
        """This transform applied after `inner`."""
        moved = self.apply(PlacePose(inner.x, inner.y, inner.yaw))
        return SE2(moved.x, moved.y, moved.yaw)


Vector = Sequence[float]


@dataclass(frozen=True)
class MemoryCandidate:
    """A memory entry one view was searched against: its pose in the epoch it was seen
    in and the search's cosine similarity."""

    entry_id: str
    pose: PlacePose
    epoch: MapEpoch
    similarity: float

    def __post_init__(self) -> None:
        if not isinstance(self.entry_id, str) or not self.entry_id:
            raise ValueError('a memory candidate needs an entry id')
        if not isinstance(self.pose, PlacePose):
            raise TypeError(f'pose must be a PlacePose, got {type(self.pose).__name__}')
        _check_range('similarity', self.similarity, -1.0, 1.0)


@dataclass(frozen=True)
class CurrentView:
    """A view taken while turning in place: camera heading and base pose in the new
    epoch, its embedding vector(s) and, optionally, what memory returned for it."""

    heading: float
    pose: PlacePose
    vectors: tuple[Vector, ...]
    memory: tuple[MemoryCandidate, ...] = ()

    def __post_init__(self) -> None:
        if not (isinstance(self.heading, int | float) and math.isfinite(self.heading)):
            raise ValueError(f'a view heading must be finite, got {self.heading!r}')
        if not isinstance(self.pose, PlacePose):
            raise TypeError(f'pose must be a PlacePose, got {type(self.pose).__name__}')


@dataclass(frozen=True)
class ReferenceView:
    """A named place's view with its embedding vector(s), pose in the place's epoch."""

    place: str
    image_ref: str
    heading: float
    pose: PlacePose
    epoch: MapEpoch
    vectors: tuple[Vector, ...]


def place_references(
    places: Iterable[NamedPlace], embeddings: Mapping[str, Sequence[Vector]]
) -> tuple[tuple[ReferenceView, ...], tuple[str, ...]]:
    """The places' views that can be compared, and the image refs of those that cannot
    (no embedding known for the image)."""
    references, missing = [], []
    for place in places:
        for view in place.views:
            vectors = embeddings.get(view.image_ref)
            if not vectors:
                missing.append(view.image_ref)
                continue
            references.append(
                ReferenceView(
                    place.name,
                    view.image_ref,
                    view.heading,
                    view.pose,
                    place.epoch,
                    tuple(vectors),
                )
            )
    return tuple(references), tuple(missing)


@dataclass(frozen=True)
class _Candidate:
    """Something a view may match: a place view (`place` set) or a memory entry."""

    label: str
    place: str | None
    pose: PlacePose  # x, y of the base and the camera heading as yaw
    epoch: MapEpoch


@dataclass(frozen=True)
class ViewMatch:
    """One view's accepted match. `target` is the place name or the memory entry id;
    `margin` the lead over the best match elsewhere (None when there was none)."""

    view_index: int
    bucket: int
    new_pose: PlacePose
    target: str
    place: str | None
    old_pose: PlacePose
    epoch: MapEpoch
    similarity: float
    margin: float | None


@dataclass(frozen=True)
class ViewRejection:
    """A view that matched nothing, and why."""

    view_index: int
    reason: str


@dataclass(frozen=True)
class Belief:
    """The named place most matched views agree on: how many agree, their share of all
    views taken and their mean similarity."""

    place: str
    agreeing: int
    share: float
    mean_similarity: float


@dataclass(frozen=True)
class Alignment:
    """The new epoch's transform onto an old one, or why there is none. Residuals are per
    inlier: position (m) and heading (rad) after refinement."""

    aligned: bool
    reason: str
    source_epoch: MapEpoch
    target_epoch: MapEpoch | None = None
    transform: SE2 | None = None
    inliers: int = 0
    matches: int = 0
    headings: int = 0
    position_residuals_m: tuple[float, ...] = ()
    angle_residuals_rad: tuple[float, ...] = ()


@dataclass(frozen=True)
class Relocation:
    """What one relocation found."""

    matches: tuple[ViewMatch, ...]
    rejections: tuple[ViewRejection, ...]
    belief: Belief | None
    belief_reason: str
    alignment: Alignment
    views: int


def relocate(
    views: Sequence[CurrentView],
    references: Sequence[ReferenceView],
    current_epoch: MapEpoch,
    params: RelocationParams | None = None,
) -> Relocation:
    """Match the views, say where the robot believes it is, and align the current epoch to
    the old epoch most matches agree on."""
    params = params or RelocationParams()
    matches, rejections = match_views(views, references, params)
    belief, belief_reason = believe(matches, len(views))
    alignment = align(matches, current_epoch, params)
    return Relocation(
        tuple(matches), tuple(rejections), belief, belief_reason, alignment, len(views)
    )


# -- matching ----------------------------------------------------------------------------


def match_views(
    views: Sequence[CurrentView],
    references: Sequence[ReferenceView],
    params: RelocationParams,
) -> tuple[list[ViewMatch], list[ViewRejection]]:
    """Each view's best match above the similarity floor with the margin over the best
    match elsewhere; a view that has none is rejected with the reason."""
    if len(views) > params.max_views:
        raise ValueError(f'{len(views)} views given, at most max_views={params.max_views}')
    if len(references) > params.max_reference_views:
        raise ValueError(
            f'{len(references)} place views given, at most '
            f'max_reference_views={params.max_reference_views}'
        )
    _check_vectors(views, references, params)
    reference_matrix = [_unit_rows(r.vectors, f'place view {r.image_ref!r}') for r in references]
    reference_candidates = [
        _Candidate(r.place, r.place, PlacePose(r.pose.x, r.pose.y, r.heading), r.epoch)
        for r in references
    ]
    matches, rejections = [], []
    for index, view in enumerate(views):
        rows = _unit_rows(view.vectors, f'view {index}')
        scored = [
            (float(np.max(rows @ other.T)), candidate)
            for other, candidate in zip(reference_matrix, reference_candidates, strict=True)
        ]
        hits = sorted(view.memory, key=lambda hit: hit.similarity, reverse=True)
        scored += [
            (hit.similarity, _Candidate(hit.entry_id, None, hit.pose, hit.epoch))
            for hit in hits[: params.max_hits_per_view]
        ]
        outcome = _best_match(index, view, scored, params)
        (matches if isinstance(outcome, ViewMatch) else rejections).append(outcome)
    return matches, rejections


def _best_match(
    index: int,
    view: CurrentView,
    scored: list[tuple[float, _Candidate]],
    params: RelocationParams,
) -> ViewMatch | ViewRejection:
    if not scored:
        return ViewRejection(index, 'nothing to compare with: no place views, no memory hits')
    scored.sort(key=lambda item: item[0], reverse=True)
    similarity, best = scored[0]
    if similarity < params.min_similarity:
        return ViewRejection(
            index,
            f'best match {best.label!r} has similarity {similarity:.3f}, '
            f'below {params.min_similarity:.3f}',
        )
    rival = next(
        ((score, c) for score, c in scored[1:] if _elsewhere(best, c, params.same_spot_m)), None
    )
    margin = None if rival is None else similarity - rival[0]
    if rival is not None and margin < params.min_margin:
        return ViewRejection(
            index,
            f'ambiguous: {best.label!r} {similarity:.3f} and {rival[1].label!r} '
            f'{rival[0]:.3f} differ by less than {params.min_margin:.3f}',
        )
    new_pose = PlacePose(view.pose.x, view.pose.y, view.heading)
    return ViewMatch(
        index,
        heading_bucket(view.heading),
        new_pose,
        best.label,
        best.place,
        best.pose,
        best.epoch,
        similarity,
        margin,
    )


def _elsewhere(best: _Candidate, other: _Candidate, same_spot_m: float) -> bool:
    """Whether `other` stands for another spot than `best`. In one epoch poses compare; across
    epochs they do not, so only two different place names are known to be apart."""
    if best.epoch == other.epoch:
        return math.hypot(best.pose.x - other.pose.x, best.pose.y - other.pose.y) > same_spot_m
    return best.place is not None and other.place is not None and best.place != other.place


def _check_vectors(
    views: Sequence[CurrentView], references: Sequence[ReferenceView], params: RelocationParams
) -> None:
    """Every view has 1 to max_vectors_per_view vectors, all of one size: a cosine between
    two embedding models means nothing."""
    dimensions = set()
    for name, vectors in [
        *((f'view {i}', v.vectors) for i, v in enumerate(views)),
        *((f'place view {r.image_ref!r}', r.vectors) for r in references),
    ]:
        if not 1 <= len(vectors) <= params.max_vectors_per_view:
            raise ValueError(
                f'{name} has {len(vectors)} embedding vectors, '
                f'1 to max_vectors_per_view={params.max_vectors_per_view} allowed'
            )
        dimensions.update(len(vector) for vector in vectors)
    if len(dimensions) > 1:
        raise ValueError(f'embedding vectors of different sizes {sorted(dimensions)} given')


def _unit_rows(vectors: Sequence[Vector], name: str) -> np.ndarray:
    rows = np.asarray(vectors, dtype=float)
    if rows.ndim != 2 or rows.shape[1] == 0:
        raise ValueError(f'{name}: embedding vectors must be non-empty lists of numbers')
    if not np.all(np.isfinite(rows)):
        raise ValueError(f'{name}: an embedding vector is not finite')
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    if np.any(norms < 1e-12):
        raise ValueError(f'{name}: an embedding vector is zero')
    return rows / norms


# -- belief ------------------------------------------------------------------------------


def believe(matches: Sequence[ViewMatch], views: int) -> tuple[Belief | None, str]:
    """The named place most matches agree on (ties: higher mean similarity, then name)."""
    named = [match for match in matches if match.place is not None]
    if not named:
        return None, f'none of the {views} views matched a named place'
    counts = Counter(match.place for match in named)

    def mean_similarity(place: str) -> float:
        return float(np.mean([m.similarity for m in named if m.place == place]))

    place = min(counts, key=lambda p: (-counts[p], -mean_similarity(p), p))
    belief = Belief(place, counts[place], counts[place] / views, mean_similarity(place))
    others = len(named) - counts[place]
    reason = f'{counts[place]} of {views} views match {place!r}'
    if others:
        reason += f', {others} match other places'
    return belief, reason


# -- alignment ---------------------------------------------------------------------------


def align(
    matches: Sequence[ViewMatch], current_epoch: MapEpoch, params: RelocationParams
) -> Alignment:
    """The transform from `current_epoch` to the old epoch whose matches agree best.
    Matches in the current epoch itself say nothing about another one and are left out."""
    by_epoch: dict[MapEpoch, list[ViewMatch]] = {}
    for match in matches:
        if match.epoch != current_epoch:
            by_epoch.setdefault(match.epoch, []).append(match)
    if not by_epoch:
        return Alignment(
            False,
            'no view matched a place or memory entry of an earlier map epoch',
            current_epoch,
        )
    results = [
        _align_epoch(group, current_epoch, epoch, params) for epoch, group in by_epoch.items()
    ]
    return max(
        results,
        key=lambda a: (a.aligned, a.inliers, a.headings, -_rms(a.position_residuals_m)),
    )


def _align_epoch(
    matches: list[ViewMatch], source: MapEpoch, target: MapEpoch, params: RelocationParams
) -> Alignment:
    best_transform, best_inliers = None, []
    best_key = None
    for match in matches:
        transform = SE2.between(match.new_pose, match.old_pose)
        inliers = _inliers(transform, matches, params)
        key = (len(inliers), _headings(inliers), -_cost(transform, inliers, params))
        if best_key is None or key > best_key:
            best_transform, best_inliers, best_key = transform, inliers, key
    transform, inliers = best_transform, best_inliers
    for _ in range(REFINE_ROUNDS):
        transform = _refine(transform, inliers, params)
        recounted = _inliers(transform, matches, params)
        if recounted == inliers:
            break
        inliers = recounted
    positions, angles = _residuals(transform, inliers)
    headings = _headings(inliers)
    outcome = dict(
        source_epoch=source,
        target_epoch=target,
        inliers=len(inliers),
        matches=len(matches),
        headings=headings,
        position_residuals_m=positions,
        angle_residuals_rad=angles,
    )
    if len(inliers) < params.min_agreeing:
        reason = (
            f'not aligned: {len(inliers)} of {len(matches)} matches to epoch {target} agree, '
            f'{params.min_agreeing} needed'
        )
        return Alignment(False, reason, **outcome)
    if headings < params.min_headings:
        reason = (
            f'not aligned: the {len(inliers)} agreeing matches come from {headings} heading(s), '
            f'{params.min_headings} needed'
        )
        return Alignment(False, reason, **outcome)
    reason = (
        f'aligned to epoch {target}: {len(inliers)} of {len(matches)} matches agree '
        f'from {headings} headings'
    )
    return Alignment(True, reason, transform=transform, **outcome)


def _inliers(
    transform: SE2, matches: Sequence[ViewMatch], params: RelocationParams
) -> list[ViewMatch]:
    positions, angles = _residuals(transform, matches)
    return [
        match
        for match, distance, angle in zip(matches, positions, angles, strict=True)
        if distance <= params.distance_tolerance_m and angle <= params.angle_tolerance_rad
    ]


def _residuals(
    transform: SE2, matches: Sequence[ViewMatch]
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    predicted = [transform.apply(match.new_pose) for match in matches]
    positions = tuple(
        math.hypot(p.x - m.old_pose.x, p.y - m.old_pose.y)
        for p, m in zip(predicted, matches, strict=True)
    )
    angles = tuple(
        abs(wrap_angle(p.yaw - m.old_pose.yaw)) for p, m in zip(predicted, matches, strict=True)
    )
    return positions, angles


def _cost(transform: SE2, matches: Sequence[ViewMatch], params: RelocationParams) -> float:
    positions, angles = _residuals(transform, matches)
    return sum(d / params.distance_tolerance_m for d in positions) + sum(
        a / params.angle_tolerance_rad for a in angles
    )


def _refine(transform: SE2, matches: Sequence[ViewMatch], params: RelocationParams) -> SE2:
    """Least squares over the inliers: position errors in metres, heading errors scaled so
    a tolerance's worth of either weighs the same."""
    scale = params.distance_tolerance_m / params.angle_tolerance_rad
    new = np.array([(m.new_pose.x, m.new_pose.y, m.new_pose.yaw) for m in matches])
    old = np.array([(m.old_pose.x, m.old_pose.y, m.old_pose.yaw) for m in matches])

    def residuals(parameters: np.ndarray) -> np.ndarray:
        x, y, yaw = parameters
        cos, sin = math.cos(yaw), math.sin(yaw)
        ex = x + cos * new[:, 0] - sin * new[:, 1] - old[:, 0]
        ey = y + sin * new[:, 0] + cos * new[:, 1] - old[:, 1]
        eyaw = np.angle(np.exp(1j * (yaw + new[:, 2] - old[:, 2])))
        return np.concatenate([ex, ey, scale * eyaw])

    solution = least_squares(residuals, [transform.x, transform.y, transform.yaw])
    x, y, yaw = solution.x
    return SE2(float(x), float(y), wrap_angle(float(yaw)))


def _headings(matches: Iterable[ViewMatch]) -> int:
    return len({match.bucket for match in matches})


def _rms(values: Sequence[float]) -> float:
    return math.sqrt(sum(v * v for v in values) / len(values)) if values else 0.0


# -- goals -------------------------------------------------------------------------------


@dataclass(frozen=True)
class GoalDecision:
    """Whether a goal from `goal_epoch` may be driven to now; `transform` carries its pose
    into the current epoch when it may."""

    allowed: bool
    reason: str
    transform: SE2 | None = None


def goal_allowed(
    goal_epoch: MapEpoch, current_epoch: MapEpoch | None, alignments: Iterable[Alignment]
) -> GoalDecision:
    """A goal is allowed in its own epoch, or in another through accepted alignments: one
    between the two (either way round), or two that carry both onto a third epoch (two
    relocations against the same memory). Otherwise it is refused with the reason."""
    if current_epoch is None:
        return GoalDecision(False, 'the current map epoch is not known yet')
    if goal_epoch == current_epoch:
        return GoalDecision(True, 'the goal is from the current map epoch', SE2())
    alignments = list(alignments)
    refused = []
    for alignment in alignments:
        ends = (alignment.source_epoch, alignment.target_epoch)
        if ends not in ((current_epoch, goal_epoch), (goal_epoch, current_epoch)):
            continue
        if not alignment.aligned or alignment.transform is None:
            refused.append(alignment.reason)
            continue
        # An alignment maps its source epoch onto its target; a goal travels the other way.
        forward = alignment.source_epoch == goal_epoch
        transform = alignment.transform if forward else alignment.transform.inverse()
        return GoalDecision(
            True, f'the goal is carried over from epoch {goal_epoch}: {alignment.reason}', transform
        )
    onto = _onto_shared(goal_epoch, current_epoch, alignments)
    if onto is not None:
        return onto
    reason = f'the goal is from map epoch {goal_epoch}, the map is now {current_epoch}'
    if refused:
        return GoalDecision(False, f'{reason}; the last relocation failed ({refused[-1]})')
    current_failed = [
        a.reason for a in alignments if a.source_epoch == current_epoch and not a.aligned
    ]
    if current_failed:
        return GoalDecision(False, f'{reason}; the last relocation failed ({current_failed[-1]})')
    return GoalDecision(False, f'{reason}; no alignment between them is known')


def _onto_shared(
    goal_epoch: MapEpoch, current_epoch: MapEpoch, alignments: list[Alignment]
) -> GoalDecision | None:
    """Goal and current epoch both aligned onto one third epoch: goal -> third -> current."""
    accepted = [a for a in alignments if a.aligned and a.transform is not None]
    from_goal = {a.target_epoch: a for a in accepted if a.source_epoch == goal_epoch}
    for alignment in reversed(accepted):
        if alignment.source_epoch != current_epoch or alignment.target_epoch not in from_goal:
            continue
        transform = alignment.transform.inverse().after(from_goal[alignment.target_epoch].transform)
        return GoalDecision(
            True,
            f'the goal is carried over from epoch {goal_epoch} through epoch '
            f'{alignment.target_epoch}, onto which both were aligned',
            transform,
        )
    return None
