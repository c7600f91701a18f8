# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Photo matcher calibration: verified inliers between a goal photo and stop views.

Generated worlds of `CALIBRATION_SEEDS` (size small), which no scored evaluation uses:
the task evaluation scores worlds 0 to 7 (`task-eval --worlds 0 ... 7`) and the standard
suite seeds 0 and 1. For every landmark a goal photo is taken as the task evaluation
takes one (facing the landmark from a free viewpoint 1.5-3 m off, at the tour frames'
320x240), and stop views as the runner takes them (640x480, from other free viewpoints
at least `MIN_BASELINE_M` from the photo's, the landmark anywhere in the field of view):

- same: stop views that see the photographed landmark;
- other: views of other landmarks that see neither it nor a look-alike (same label);
- look-alike: views of a look-alike that do not see the landmark itself. Identical
  objects look identical; the matcher cannot tell them apart and is not asked to.

Printed: for each inlier threshold, the share of same pairs matched (true) and of other
and look-alike pairs matched (false); how many views are textured; and the threshold
chosen, the least one whose false match rate on other pairs is at most `MAX_FALSE_RATE`.
"""

from __future__ import annotations

import io
import math

import numpy as np
from PIL import Image

from waymark.benchmarks.common import table
from waymark.evaluation.task_geometry import Camera, FreeSpace, viewpoints
from waymark.geometry import Pose
from waymark.memory.views.photo_match import PhotoMatcher, PhotoMatchParams
from waymark.sim.generate import generate_world
from waymark.sim.landmarks import Landmark, landmarks, visible_landmarks
from waymark.sim.render import render as render_view

CALIBRATION_SEEDS = (100, 101, 102, 103, 104)
QUICK_SEEDS = (100,)
WORLD_SIZE = 'small'
PHOTO_SIZE = (320, 240)
VIEW_SIZE = (640, 480)
PHOTO_DISTANCE_M = (1.5, 3.0)
VIEW_DISTANCE_M = (1.0, 4.0)
MIN_BASELINE_M = 0.5  # a stop view stands at least this far from where the photo was taken
VIEWS_PER_KIND = 3  # same, other and look-alike views per photo
QUICK_LANDMARKS = 3
THRESHOLDS = (6, 8, 10, 12, 15, 20, 25, 30, 40)
TEXTURED_KEYPOINTS = (100, 200, 300, 400, 500, 600, 800)
MAX_WRONG_RULE_OUT = 0.05  # views of the right thing taken for a wrong stop
MAX_FALSE_RATE = 0.0  # a false match certifies a wrong stop: none is allowed
KINDS = ('same', 'other', 'look-alike')


def run(quick: bool = False, params: PhotoMatchParams | None = None) -> dict:
    matcher = PhotoMatcher(params)
    camera = Camera()
    rng = np.random.default_rng(0)
    pairs: dict[str, list[int]] = {kind: [] for kind in KINDS}
    keypoints: dict[str, list[int]] = {kind: [] for kind in KINDS}
    photos = 0
    for seed in QUICK_SEEDS if quick else CALIBRATION_SEEDS:
        world = generate_world(seed, WORLD_SIZE)
        space = FreeSpace(world)
        marks = landmarks(world)
        seats = {mark.id: viewpoints(space, mark.id, mark.position[:2], camera) for mark in marks}
        for mark in marks[:QUICK_LANDMARKS] if quick else marks:
            photo = _photo(world, mark, seats[mark.id], camera, rng)
            if photo is None:
                continue
            photos += 1
            goal = matcher.features(_png(render_view(world, photo, *PHOTO_SIZE, camera.hfov_deg)))
            twins = {m.id for m in marks if m.label == mark.label and m.id != mark.id}
            for kind, pose in _views(world, marks, mark, twins, seats, photo, camera, rng):
                image = render_view(world, pose, *VIEW_SIZE, camera.hfov_deg)
                view = matcher.features(_png(image))
                keypoints[kind].append(view.count)
                pairs[kind].append(matcher.compare(goal, view).inliers)
    result = {
        'benchmark': 'photo_match',
        'quick': quick,
        'seeds': list(QUICK_SEEDS if quick else CALIBRATION_SEEDS),
        'size': WORLD_SIZE,
        'photos': photos,
        'params': {
            'detector': matcher.params.detector,
            'features': matcher.params.features,
            'ratio': matcher.params.ratio,
            'ransac_px': matcher.params.ransac_px,
            'max_side_px': matcher.params.max_side_px,
        },
        'min_inliers': matcher.params.min_inliers,
        'inliers': pairs,
        'view_keypoints': keypoints,
        'rates': {str(t): {kind: _rate(pairs[kind], t) for kind in KINDS} for t in THRESHOLDS},
        'chosen_min_inliers': _chosen(pairs['other']),
        'rule_out': {
            str(k): _rule_out(pairs, keypoints, matcher.params.min_inliers, k)
            for k in TEXTURED_KEYPOINTS
        },
    }
    result['chosen_textured_keypoints'] = next(
        (
            k
            for k in TEXTURED_KEYPOINTS
            if (result['rule_out'][str(k)]['same'] or 0.0) <= MAX_WRONG_RULE_OUT
        ),
        None,
    )
    return result


def render(result: dict) -> str:
    rows = [[t, *(_percent(result['rates'][str(t)][kind]) for kind in KINDS)] for t in THRESHOLDS]
    counts = ', '.join(f'{len(result["inliers"][kind])} {kind}' for kind in KINDS)
    lines = [
        table(
            f'photo matcher, worlds {result["seeds"]} ({result["size"]}): {result["photos"]} '
            f'photos; pairs: {counts}; share matched at each inlier threshold',
            ['min inliers', *KINDS],
            rows,
        )
    ]
    for kind in KINDS:
        values = np.asarray(result['inliers'][kind], dtype=float)
        if values.size:
            p = np.percentile(values, [5, 50, 95])
            lines.append(
                f'{kind}: inliers p5 {p[0]:.0f}, median {p[1]:.0f}, p95 {p[2]:.0f}, '
                f'max {values.max():.0f}'
            )
    kp = np.asarray([n for kind in KINDS for n in result['view_keypoints'][kind]], dtype=float)
    if kp.size:
        p = np.percentile(kp, [5, 50])
        lines.append(f'view keypoints: p5 {p[0]:.0f}, median {p[1]:.0f}')
    lines.append(
        f'least threshold with at most {MAX_FALSE_RATE:.0%} false matches on other pairs: '
        f'{result["chosen_min_inliers"]}'
    )
    rows = [
        [
            k,
            _percent(result['rule_out'][str(k)]['same']),
            _percent(result['rule_out'][str(k)]['other']),
        ]
        for k in TEXTURED_KEYPOINTS
    ]
    lines.append(
        table(
            f'views textured and unmatched at min_inliers {result["min_inliers"]} (ruling '
            'the stop out): wrongly for same pairs, rightly for other pairs',
            ['textured keypoints', 'same', 'other'],
            rows,
        )
    )
    lines.append(
        f'least textured keypoints with at most {MAX_WRONG_RULE_OUT:.0%} of same views '
        f'ruling the stop out: {result["chosen_textured_keypoints"]}'
    )
    return '\n'.join(lines)


def _photo(world, mark: Landmark, seats: np.ndarray, camera: Camera, rng) -> Pose | None:
    """A goal photo's camera: a free viewpoint 1.5-3 m off, facing the landmark."""
    near = _near(seats, mark, PHOTO_DISTANCE_M)
    if not len(near):
        return None
    x, y = near[rng.integers(len(near))]
    return _facing(x, y, mark.position[:2], 0.0, camera)


def _views(world, marks, mark, twins, seats, photo: Pose, camera: Camera, rng):
    """(kind, camera pose) of up to `VIEWS_PER_KIND` stop views of each kind."""
    found: list[tuple[str, Pose]] = []
    for kind in KINDS:
        if kind == 'same':
            subjects = [mark]
        else:
            subjects = [m for m in marks if (m.id in twins) == (kind == 'look-alike')]
            subjects = [m for m in subjects if m.id != mark.id]
        candidates = [
            (subject, seat)
            for subject in subjects
            for seat in _near(seats[subject.id], subject, VIEW_DISTANCE_M)
            if math.dist(seat, photo.position[:2]) >= MIN_BASELINE_M
        ]
        order = rng.permutation(len(candidates))
        kept = 0
        for index in order:
            if kept == VIEWS_PER_KIND:
                break
            subject, (x, y) = candidates[index]
            # A stop turns through four headings: one has the subject within 45 degrees.
            pose = _facing(x, y, subject.position[:2], rng.uniform(-0.7, 0.7), camera)
            seen = set(visible_landmarks(world, pose, camera.hfov_deg, vfov_deg=camera.vfov_deg))
            if subject.id not in seen:
                continue
            if kind != 'same' and (mark.id in seen or (kind == 'other' and seen & twins)):
                continue
            found.append((kind, pose))
            kept += 1
    return found


def _near(seats: np.ndarray, mark: Landmark, band: tuple[float, float]) -> np.ndarray:
    """The viewpoints whose distance to the landmark is within `band` metres."""
    distance = np.hypot(seats[:, 0] - mark.position[0], seats[:, 1] - mark.position[1])
    return seats[(distance >= band[0]) & (distance <= band[1])]


def _facing(x: float, y: float, target, offset: float, camera: Camera) -> Pose:
    yaw = math.atan2(target[1] - y, target[0] - x) + offset
    return Pose.from_xyz_yaw(float(x), float(y), camera.height_m, yaw)


def _png(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.asarray(pixels)).save(buffer, format='PNG')
    return buffer.getvalue()


def _rate(inliers: list[int], threshold: int) -> float | None:
    return float(np.mean(np.asarray(inliers) >= threshold)) if inliers else None


def _rule_out(pairs: dict, keypoints: dict, min_inliers: int, textured: int) -> dict:
    """Per kind, the share of views with `textured` keypoints or more and no match."""
    shares = {}
    for kind in ('same', 'other'):
        inliers, counts = np.asarray(pairs[kind]), np.asarray(keypoints[kind])
        ruled = (counts >= textured) & (inliers < min_inliers)
        shares[kind] = float(ruled.mean()) if ruled.size else None
    return shares


def _chosen(other: list[int]) -> int | None:
    """The least threshold whose false match rate on other pairs is within the bound."""
    return next((t for t in THRESHOLDS if (_rate(other, t) or 0.0) <= MAX_FALSE_RATE), None)


def _percent(rate: float | None) -> str:
    return '-' if rate is None else f'{100.0 * rate:.1f} %'
