# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What a judge is shown: the views taken at the stop and a sample of the frames before it.

At a stop the base turns in place and keeps one view per heading bucket, so the judge sees
around the robot rather than only where the drive happened to end facing. Earlier frames
add context (what the robot passed on the way) but never crowd out a stop view: the stop
views take their places first, the rest are sampled evenly over the earlier frames, and
all are shown in the order they were taken, as a person would replay them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from waymark.geometry import Pose

HEADING_BUCKETS = 4
# The judge sees at most this many pictures in one check.
MAX_JUDGE_FRAMES = 12
# A bound on the parameter: more pictures than this no VLM call should carry.
FRAME_LIMIT_CAP = 64


@dataclass(frozen=True)
class StopView:
    """A picture with where the robot faced when it was taken: one of the views turned for
    at the stop, or an earlier frame. `image` is JPEG or PNG bytes, `heading` radians in
    the map frame, `stamp_ns` nanoseconds (UTC), `pose` the base pose if it was known."""

    image: bytes
    heading: float
    stamp_ns: int
    pose: Pose | None = None

    def __post_init__(self) -> None:
        if not self.image:
            raise ValueError('a view needs image bytes')
        if not math.isfinite(self.heading):
            raise ValueError(f'a view needs a finite heading, got {self.heading}')


@dataclass(frozen=True)
class SelectedFrame:
    """A picture chosen for the judge, and whether it was taken at the stop."""

    view: StopView
    at_stop: bool


def heading_bucket(heading: float, buckets: int = HEADING_BUCKETS) -> int:
    """The bucket of a heading: bucket 0 is centred on heading 0, the next ones follow
    counter-clockwise, each `2 pi / buckets` wide."""
    if buckets < 1:
        raise ValueError(f'buckets must be at least 1, got {buckets}')
    if not math.isfinite(heading):
        raise ValueError(f'heading must be finite, got {heading}')
    width = 2.0 * math.pi / buckets
    return math.floor(heading / width + 0.5) % buckets


def latest_per_bucket(views: Sequence[StopView], buckets: int = HEADING_BUCKETS) -> list[StopView]:
    """One view per heading bucket, the latest taken in it, in the order taken: a turn that
    passes a heading twice keeps what it saw last."""
    latest: dict[int, StopView] = {}
    for view in views:
        bucket = heading_bucket(view.heading, buckets)
        kept = latest.get(bucket)
        if kept is None or view.stamp_ns >= kept.stamp_ns:
            latest[bucket] = view
    return sorted(latest.values(), key=lambda view: view.stamp_ns)


def select_frames(
    stop_views: Sequence[StopView],
    earlier: Sequence[StopView],
    max_frames: int = MAX_JUDGE_FRAMES,
) -> list[SelectedFrame]:
    """At most `max_frames` pictures for the judge, in the order they were taken.

    The stop views come first: all of them when they fit, else the latest. The places
    left go to earlier frames sampled evenly over their time order (the middle of each of
    equal shares, so neither end is favoured).
    """
    if not 1 <= max_frames <= FRAME_LIMIT_CAP:
        raise ValueError(f'max_frames must be in [1, {FRAME_LIMIT_CAP}], got {max_frames}')
    stops = sorted(stop_views, key=lambda view: view.stamp_ns)[-max_frames:]
    before = sorted(earlier, key=lambda view: view.stamp_ns)
    room = max_frames - len(stops)
    if len(before) > room:
        before = [before[int((i + 0.5) * len(before) / room)] for i in range(room)]
    chosen = [SelectedFrame(view, True) for view in stops]
    chosen += [SelectedFrame(view, False) for view in before]
    return sorted(chosen, key=lambda frame: frame.view.stamp_ns)
