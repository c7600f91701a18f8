# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Do the image stamps and the pose stamps come from the same clock?

Pairing takes the pose stamped nearest an image, so it silently goes wrong when the two
streams are stamped by different clocks: a lidar without PTP stamps in its own time, a
computer without chrony in its own. An offset larger than the pairing tolerance leaves
every image without a pose or, worse, pairs it with a pose taken at another moment.

The check compares each stream's stamps with the time its messages arrive here (one
local clock for both): a stream's *lateness* is arrival minus stamp, its latency plus
its clock's offset from the local one. The difference of the two streams' median
lateness is the offset between their clocks (plus the difference of their latencies,
tens of milliseconds). Comparing each image with the nearest buffered pose instead would
find a "near" pose from the wrong moment whenever the pose buffer spans the offset, and
comparing with the newest pose mixes in the pose period and the arrival order.

Arrival time only means something for streams that arrive as they are stamped. A bag
replayed faster than recorded, or a burst of messages, has a lateness that drifts or
jumps; a stream counts as *steady* only when its recent lateness spreads (10th to 90th
percentile) by at most `max_offset_s`, and the check decides only on steady streams. It
holds its last verdict while it cannot decide.

Single messages are checked too, once the clocks were found to agree: an image whose
lateness is more than `step_s` from the steady pose stream's (or a pose from the steady
image stream's) is from the other clock, at once, before the medians move: a clock that
steps by seconds mid-run never pairs one image with a pose from the wrong moment.
`step_s` is well above `max_offset_s` because a single message's lateness also holds how
long it waited in this process's queue: on a loaded machine one image can wait half a
second without any clock being wrong, and flagging it would strip it of its pose.
Smaller offsets are decided on the medians. A bag replayed faster than recorded never looks
steady, so nothing is decided and nothing is flagged there: a replay is measured from its
recorded arrival times instead (evaluation).

Memory is bounded: each stream keeps at most `max_samples` samples, of the last
`window_s` of arrival time.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from waymark.settings import setting

NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class ClockCheckConfig:
    max_offset_s: float = setting(
        0.5,
        'Image and pose clocks disagree when their offset (measured from arrival times, '
        "so including the difference of the two streams' latencies) is above this; images "
        'then get no pose. 0: no check.',
        low=0.0,
        high=3600.0,
    )
    step_s: float = setting(
        5.0,
        'A single image or pose this far (s) from the other steady stream is from another '
        'clock at once (a clock that stepped); smaller offsets are decided on the medians, '
        'as a single message can wait in a loaded process for a while.',
        low=0.01,
        high=3600.0,
    )
    window_s: float = setting(
        2.0, 'Arrival time over which each stream is measured.', low=0.1, high=600.0
    )
    min_samples: int = setting(
        10, 'Messages of each stream within clock.window_s before deciding.', low=2, high=10_000
    )
    max_samples: int = setting(
        100,
        'Messages of each stream kept (>= clock.min_samples); a faster stream is measured '
        'over a shorter time.',
        low=2,
        high=100_000,
    )

    def __post_init__(self) -> None:
        if self.step_s < self.max_offset_s:
            raise ValueError(
                f'clock.step_s ({self.step_s}) must be >= clock.max_offset_s ({self.max_offset_s})'
            )
        if self.max_samples < self.min_samples:
            raise ValueError(
                f'clock.max_samples ({self.max_samples}) must be >= clock.min_samples '
                f'({self.min_samples})'
            )


@dataclass(frozen=True)
class Lateness:
    """One stream's arrival minus stamp: median and spread (s), over `samples` messages."""

    median_s: float
    spread_s: float
    samples: int


class _Stream:
    """Recent (arrival, lateness) samples of one stream, in ns."""

    def __init__(self, max_samples: int) -> None:
        self.samples: deque[tuple[int, int]] = deque(maxlen=max_samples)
        self._summary: Lateness | None = None

    def add(self, received_ns: int, stamp_ns: int) -> None:
        self.samples.append((received_ns, received_ns - stamp_ns))
        self._summary = None

    def prune(self, oldest_ns: int) -> None:
        while self.samples and self.samples[0][0] < oldest_ns:
            self.samples.popleft()
            self._summary = None

    def summary(self) -> Lateness | None:
        if self._summary is None and self.samples:
            values = np.fromiter((late for _, late in self.samples), float, len(self.samples))
            low, median, high = np.percentile(values, (10, 50, 90)) / NS_PER_S
            self._summary = Lateness(float(median), float(high - low), len(values))
        return self._summary


class ClockCheck:
    """The offset between the image clock and the pose clock, and whether it is too large.

    Feed it every image and pose with its stamp and arrival time (any one local clock, ns:
    only differences count). `offset_s` is image clock minus pose clock, None until it
    could be measured; `disagree` is the verdict, None until the first decision.
    """

    def __init__(self, config: ClockCheckConfig) -> None:
        self.config = config
        self._images = _Stream(config.max_samples)
        self._poses = _Stream(config.max_samples)
        self._newest_ns: int | None = None
        self.offset_s: float | None = None
        self.largest_offset_s: float | None = None  # the largest in size so far
        self.disagree: bool | None = None

    @property
    def enabled(self) -> bool:
        return self.config.max_offset_s > 0

    def add_image(self, stamp_ns: int, received_ns: int) -> bool:
        """Record an image; True when it is from another clock than the steady poses."""
        return self._add(self._images, self._poses, stamp_ns, received_ns)

    def add_pose(self, stamp_ns: int, received_ns: int) -> bool:
        """Record a pose; True when it is from another clock than the steady images."""
        return self._add(self._poses, self._images, stamp_ns, received_ns)

    def summary(self) -> dict:
        """For stats and reports (JSON): the verdict, the offsets (s) and the limit."""
        return {
            'clocks_disagree': self.disagree,
            'clock_offset_s': self.offset_s,
            'clock_largest_offset_s': self.largest_offset_s,
            'clock_max_offset_s': self.config.max_offset_s,
        }

    def lateness(self) -> tuple[Lateness | None, Lateness | None]:
        """(images, poses) as measured now."""
        return self._images.summary(), self._poses.summary()

    def _add(self, own: _Stream, other: _Stream, stamp_ns: int, received_ns: int) -> bool:
        if not self.enabled:
            return False
        if self._newest_ns is not None and received_ns < self._newest_ns:
            # The local clock went back (a new replay): what was measured is void.
            self._images.samples.clear()
            self._poses.samples.clear()
            self._newest_ns = None
        if self._newest_ns is None or received_ns > self._newest_ns:
            self._newest_ns = received_ns
            oldest = received_ns - round(self.config.window_s * NS_PER_S)
            self._images.prune(oldest)
            self._poses.prune(oldest)
        own.add(received_ns, stamp_ns)
        if own is self._images:  # decided at the image rate: poses may come at 500 Hz
            self._decide()
        reference = self._steady(other) if self.disagree is False else None
        if reference is None:  # a step needs clocks found to agree first
            return False
        return abs((received_ns - stamp_ns) / NS_PER_S - reference.median_s) > self.config.step_s

    def _steady(self, stream: _Stream) -> Lateness | None:
        summary = stream.summary()
        if summary is None or summary.samples < self.config.min_samples:
            return None
        return summary if summary.spread_s <= self.config.max_offset_s else None

    def _decide(self) -> None:
        images, poses = self._steady(self._images), self._steady(self._poses)
        if images is None or poses is None:
            return
        self.offset_s = poses.median_s - images.median_s
        if self.largest_offset_s is None or abs(self.offset_s) > abs(self.largest_offset_s):
            self.largest_offset_s = self.offset_s
        self.disagree = abs(self.offset_s) > self.config.max_offset_s
