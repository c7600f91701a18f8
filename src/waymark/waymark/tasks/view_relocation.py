# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Relocation against memory: the views of a turn in place, each searched in memory by
image and verified by local features, aligned to the map epoch the verified entries were
seen in.

A verified match says that the view and the remembered picture show the same thing, not
that they were taken from the same spot or facing the same way: on the calibration worlds
(seeds 100-103, small, never scored) a verified pair stood 0-3 m apart and differed by up
to 60 degrees in heading. The heading is corrected by where the shared thing lies in each
picture (its inliers' centre, turned into a bearing with each camera's field of view), so
both poses face the thing; what remains is the distance between the two cameras, which
the alignment's tolerance absorbs. Every verified hit of a view is a candidate pair (a
thing seen from two tour frames gives two), and the consensus in `relocation.align`
keeps the pairs that agree; it needs them from more than one heading.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from waymark.memory.entries import CameraModel, FrameRecord, TextBox
from waymark.memory.storage.image_codec import ImageLimits, decode_image
from waymark.memory.views.photo_match import Match, PhotoMatcher, PhotoMatchParams
from waymark.navigation.epochs import MapEpoch
from waymark.navigation.follower import wrap_angle
from waymark.tasks.places import PlacePose
from waymark.tasks.relocation import (
    HITS_CAP,
    Relocation,
    RelocationParams,
    ViewMatch,
    ViewRejection,
    align,
)
from waymark.tasks.stop_views import StopView, heading_bucket

MAX_SEARCHED = 50
# Matches of earlier relocations in the same epoch that one relocation pools.
MAX_POOLED = 64


class RelocationUnavailableError(RuntimeError):
    """Memory could not be searched (away, or without a view that embeds photos): no
    relocation can be made now, however the robot turns."""


class Relocator(Protocol):
    def relocalise(
        self, views: Sequence[StopView], current: MapEpoch, earlier: Sequence[ViewMatch] = ()
    ) -> Relocation:
        """Where the views put the robot in an earlier map epoch, if anywhere. `earlier`
        are the matches of relocations before this one in the same epoch, pooled with the
        new views' (their `view_index` is -1): views from two spots of one map add
        headings that one spot could not give."""
        ...


def _alignment_defaults() -> RelocationParams:
    # Calibrated on seeds 100-103 (small): the cameras of a verified pair stand up to
    # ~1.5 m apart, and the corrected headings differ by up to ~25 degrees.
    return RelocationParams(
        distance_tolerance_m=1.5,
        angle_tolerance_rad=math.radians(25.0),
        min_agreeing=3,
        min_headings=2,
    )


@dataclass(frozen=True)
class ViewRelocationParams:
    """`searched`: memory hits per view that are verified by local features (each one
    picture read and matched); `hfov_deg`: the robot camera's field of view, for the
    views' bearings (a remembered picture uses its own camera model); `alignment`: the
    consensus's tolerances (its similarity floor and margin do not apply: verification
    decides a match here)."""

    searched: int = 8
    hfov_deg: float = 70.0
    match: PhotoMatchParams = field(default_factory=PhotoMatchParams)
    alignment: RelocationParams = field(default_factory=_alignment_defaults)
    image_limits: ImageLimits = field(default_factory=ImageLimits)

    def __post_init__(self) -> None:
        if type(self.searched) is not int or not 1 <= self.searched <= MAX_SEARCHED:
            raise ValueError(f'searched must be an integer in [1, {MAX_SEARCHED}]: {self}')
        if not 1.0 <= self.hfov_deg <= 179.0:
            raise ValueError(f'hfov_deg must be in [1, 179], got {self.hfov_deg}')


# The k entries most alike a picture; RelocationUnavailableError when memory cannot say.
SimilarImages = Callable[[np.ndarray, int], Sequence[FrameRecord]]
Pictures = Callable[[FrameRecord], bytes | None]


class MemoryRelocator:
    """Relocation by memory's image search (the photo view or an image model) and the
    local-feature matcher; `similar(image, k)` returns the k most alike entries,
    `pictures(record)` an entry's stored picture."""

    def __init__(
        self,
        similar: SimilarImages,
        pictures: Pictures,
        params: ViewRelocationParams | None = None,
    ) -> None:
        self.params = params or ViewRelocationParams()
        self._similar = similar
        self._pictures = pictures
        self._matcher = PhotoMatcher(self.params.match)

    def relocalise(
        self, views: Sequence[StopView], current: MapEpoch, earlier: Sequence[ViewMatch] = ()
    ) -> Relocation:
        params = self.params
        limit = params.alignment.max_views
        if len(views) > limit:
            raise ValueError(f'{len(views)} views given, at most max_views={limit}')
        pooled = [m for m in earlier if m.epoch != current][-MAX_POOLED:]
        matches = [dataclasses.replace(match, view_index=-1) for match in pooled]
        rejections: list[ViewRejection] = []
        for index, view in enumerate(views):
            found = self._view_matches(index, view)
            if isinstance(found, ViewRejection):
                rejections.append(found)
            else:
                matches.extend(found)
        alignment = align(matches, current, params.alignment)
        belief_reason = (
            f'{len(matches) - len(pooled)} verified matches in memory from {len(views)} views'
        )
        if pooled:
            belief_reason += f', with {len(pooled)} from earlier views in this map'

        return Relocation(
            tuple(matches), tuple(rejections), None, belief_reason, alignment, len(views)
        )

    def _view_matches(self, index: int, view: StopView) -> list[ViewMatch] | ViewRejection:
        if view.pose is None:
            return ViewRejection(index, 'the view has no pose')
        try:
            image = decode_image(view.image, self.params.image_limits)
            features = self._matcher.image_features(image)
        except ValueError as error:
            return ViewRejection(index, f'the view does not decode: {error}')
        height, width = image.shape[:2]
        robot = CameraModel.from_hfov(width, height, self.params.hfov_deg)
        x, y, _ = view.pose.position
        matches = []
        for record in self._similar(image, self.params.searched)[:HITS_CAP]:
            if not record.pose_valid:
                continue
            data = self._pictures(record)
            try:
                remembered = self._matcher.features(data) if data else None
            except ValueError:
                remembered = None
            if remembered is None:
                continue
            match = self._matcher.compare(features, remembered)
            if not self._matcher.is_match(match) or match.goal_region is None:
                continue
            new_yaw = view.heading + _bearing(match.goal_region, robot)
            old = _remembered_pose(record, match, robot)
            matches.append(
                ViewMatch(
                    view_index=index,
                    bucket=heading_bucket(view.heading),
                    new_pose=PlacePose(x, y, wrap_angle(new_yaw)),
                    target=record.id,
                    place=None,
                    old_pose=old,
                    epoch=(record.session, record.map_epoch),
                    similarity=1.0,
                    margin=None,
                )
            )
        if not matches:
            return ViewRejection(index, 'no remembered picture verified against the view')
        return matches


def _bearing(region: TextBox, camera: CameraModel) -> float:
    """Where the shared thing lies in a picture, as a bearing off that camera's axis."""
    return camera.bearing(region.centre[0] * camera.width)


def _remembered_pose(record: FrameRecord, match: Match, robot: CameraModel) -> PlacePose:
    """The remembered camera's position, turned to face the shared thing; a record without
    a camera model was taken with the robot's own camera."""
    camera = record.sighting.camera if record.sighting is not None else None
    bearing = _bearing(match.region, camera or robot)
    x, y, _ = record.pose.position
    return PlacePose(x, y, wrap_angle(record.pose.yaw + bearing))
