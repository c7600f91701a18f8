# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Where the thing a hit matched is: depth, else triangulation, else one bearing, else
the viewpoint, each with the uncertainty it honestly has."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

import numpy as np

from waymark.localisation.bearing import Ray, best_box, ray, same_reading
from waymark.localisation.estimate import (
    BEARING,
    DEPTH,
    TRIANGULATED,
    VIEWPOINT,
    TargetEstimate,
)
from waymark.localisation.params import LocalisationParams
from waymark.localisation.triangulation import triangulate
from waymark.memory.entries import DepthSamples, FrameRecord, TextBox


def locate(
    record: FrameRecord,
    query: str,
    others: Iterable[FrameRecord] = (),
    params: LocalisationParams | None = None,
    region: TextBox | None = None,
) -> TargetEstimate:
    """The target of `record`, a hit for `query`, helped by `others` (other hits shown for
    the same question) that read the same words.

    The region looked along is `region` when given (where a goal photo matched the
    record's picture), else the record's text box best matching the query, else the
    image centre. Only keyframes of the record's session and map epoch are combined:
    poses of other maps are not comparable. A record without a valid pose or without a
    sighting (stored before sightings were kept) or without the camera's intrinsics gives
    its viewpoint.
    """
    params = params or LocalisationParams()
    if not record.pose_valid or record.sighting is None or record.sighting.camera is None:
        # Without the camera model no region can be turned into a bearing, and a range
        # guessed along the heading would move the goal by a guess: the viewpoint it is.
        return _viewpoint(record, params)
    box = region or best_box(record, query, params.min_text_score)
    primary = ray(record, box)
    depth = record.sighting.depth
    if depth is not None:
        found = _ranged(record, primary, depth, params)
        if found is not None:
            return found
    if box is not None and region is None:  # other entries reading the same words
        rays = [primary, *_same_words(record, box, query, others, params)]
        meeting = triangulate(rays, params)
        if meeting is not None:
            used = meeting.rays
            z = statistics.fmean(
                r.z + r.rise * math.hypot(meeting.x - r.x, meeting.y - r.y) for r in used
            )
            return TargetEstimate(
                meeting.x,
                meeting.y,
                z,
                meeting.sigma_m,
                TRIANGULATED,
                record.map_epoch,
                record.session,
                residual_m=meeting.residual_m,
                sources=tuple(r.record_id for r in used),
            )
    return _along(record, primary, params.assumed_range_m, params.assumed_range_sigma_m, BEARING)


def _same_words(
    record: FrameRecord,
    box: TextBox,
    query: str,
    others: Iterable[FrameRecord],
    params: LocalisationParams,
) -> list[Ray]:
    rays, seen = [], {record.id}
    for other in others:
        if (
            other.id in seen
            or not other.pose_valid
            or other.session != record.session
            or other.map_epoch != record.map_epoch
        ):
            continue
        seen.add(other.id)
        match = best_box(other, query, params.min_text_score)
        if match is not None and same_reading(match.text, box.text, params.same_text_ratio):
            rays.append(ray(other, match))
    return rays


def _ranged(
    record: FrameRecord, primary: Ray, depth: DepthSamples, params: LocalisationParams
) -> TargetEstimate | None:
    """Along the ray at the depth under the box (the centre cell for the image centre).
    Depth is along the optical axis; the horizontal range is that over cos(offset)."""
    samples = _under(depth, primary.box)
    samples = samples[(samples >= params.min_range_m) & (samples <= params.max_range_m)]
    if not len(samples):
        return None
    along_axis = float(np.median(samples))
    offset = math.remainder(primary.angle - record.yaw, math.tau)
    distance = along_axis / max(math.cos(offset), 1e-3)
    if distance > params.max_range_m:
        return None
    spread = float(np.subtract(*np.percentile(samples, [75, 25]))) / 1.349
    bearing = distance * math.radians(params.bearing_sigma_deg)
    sigma = max(params.depth_sigma_m, math.hypot(spread, bearing))
    return _along(record, primary, distance, sigma, DEPTH)


def _under(depth: DepthSamples, box: TextBox | None) -> np.ndarray:
    grid = np.asarray(depth.metres, dtype=float).reshape(depth.rows, depth.columns)
    left, top, right, bottom = (
        (box.left, box.top, box.right, box.bottom) if box else (0.5, 0.5, 0.5, 0.5)
    )
    c0, c1 = _cells(left, right, depth.columns)
    r0, r1 = _cells(top, bottom, depth.rows)
    cells = grid[r0:r1, c0:c1].ravel()
    return cells[np.isfinite(cells)]


def _cells(low: float, high: float, count: int) -> tuple[int, int]:
    """Grid cells a normalised span touches (at least one, clipped to the grid)."""
    first = min(count - 1, max(0, math.floor(min(low, high) * count)))
    last = min(count, max(first + 1, math.ceil(max(low, high) * count)))
    return first, last


def _along(
    record: FrameRecord, primary: Ray, distance: float, sigma: float, method: str
) -> TargetEstimate:
    dx, dy = primary.direction
    return TargetEstimate(
        record.x + distance * dx,
        record.y + distance * dy,
        record.z + primary.rise * distance,
        sigma,
        method,
        record.map_epoch,
        record.session,
        sources=(record.id,),
    )


def _viewpoint(record: FrameRecord, params: LocalisationParams) -> TargetEstimate:
    return TargetEstimate(
        record.x,
        record.y,
        record.z,
        params.viewing_range_m,
        VIEWPOINT,
        record.map_epoch,
        record.session,
        sources=(record.id,),
    )
