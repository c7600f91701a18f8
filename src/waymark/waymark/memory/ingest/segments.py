# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Fixed time windows of stored frames (BinTrack segments), and the images made from them.

A segment summarises a short stretch of the route, so that search and the route-bounded
Binary Tracking can work on a few thousand entries instead of every keyframe. Each
session's trajectory is cut into non-overlapping windows of `window_s` starting at its
first frame; every window that holds at least one frame becomes a segment, numbered
densely (0, 1, 2...) in time order, so that "the segments between two anchors" is an
index range.

The segmenter holds one open window per session and closes it when a frame past its end
arrives (or on `flush`). It keeps no images and no vectors: those stay with the caller,
keyed by the frames it hands back.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import cv2
import numpy as np

from waymark.memory.entries import SEGMENT, FrameRecord, entry_id

T = TypeVar('T')

# BinTrack reports that windows of 1 to 3 s perform alike; shorter ones localise more
# finely but make more entries (and three VLM captions each).
DEFAULT_WINDOW_S = 1.5
# Width, height of one tile of a segment grid: four of them make a 640x480 picture, the
# size of a common camera frame, which a 7B VLM reads without tiling it further.
TILE_SIZE = (320, 240)


@dataclass(frozen=True)
class Segment:
    """One closed window of a session's frames."""

    session: str
    index: int
    start_ns: int
    end_ns: int
    frames: tuple[FrameRecord, ...]

    @property
    def id(self) -> str:
        return entry_id(self.session, self.index, SEGMENT)

    def record(self, image_ref: str = '', text: str = '') -> FrameRecord:
        """The segment as a memory entry.

        Positions from different map epochs are in different frames, so only one epoch's
        frames are averaged: the latest epoch that has a frame with a valid pose (the
        latest epoch overall when no frame has one). The yaw is that of the valid frame
        nearest the middle of the window, since yaws do not average meaningfully.

        A segment has no sighting: its picture is a grid of its frames, so no box or depth
        cell in it belongs to one camera pose. Localising what a segment matched uses its
        frames' sightings (stored with each frame).
        """
        if not self.frames:
            raise ValueError(f'segment {self.id} has no frames')
        valid = [f for f in self.frames if f.pose_valid]
        epoch = max(f.map_epoch for f in (valid or self.frames))
        used = [f for f in valid if f.map_epoch == epoch]
        x = y = z = yaw = 0.0
        if used:
            x = math.fsum(f.x for f in used) / len(used)
            y = math.fsum(f.y for f in used) / len(used)
            z = math.fsum(f.z for f in used) / len(used)
            middle = (self.start_ns + self.end_ns) // 2
            yaw = min(used, key=lambda f: abs(f.stamp_ns - middle)).yaw
        return FrameRecord(
            session=self.session,
            index=self.index,
            stamp_ns=self.start_ns,
            x=x,
            y=y,
            z=z,
            yaw=yaw,
            map_epoch=epoch,
            pose_valid=bool(used),
            image_ref=image_ref,
            text=text,
            text_size=max(f.text_size for f in self.frames),
            kind=SEGMENT,
            end_ns=self.end_ns,
        )


@dataclass(frozen=True)
class SegmenterState:
    """What a session's segmentation needs to continue after a restart.

    `origin_ns` is the session's first frame stamp, `next_index` the index the next
    segment gets, `closed_until_ns` the end of the last closed window (frames before it
    are late).
    """

    origin_ns: int
    next_index: int
    closed_until_ns: int


@dataclass
class _Window:
    number: int  # windows since the session's grid anchor
    start_ns: int
    end_ns: int
    frames: list[FrameRecord] = field(default_factory=list)
    arrivals: int = 0
    stride: int = 1  # keep every stride-th arriving frame once thinning began


@dataclass
class _Session:
    origin_ns: int
    anchor_ns: int  # where the window grid starts: the origin, or the resume point
    next_index: int
    closed_until_ns: int
    open: _Window | None = None


class Segmenter:
    """Groups each session's frames into fixed windows as they arrive.

    Frames may arrive slightly out of order within the open window. A frame from before
    the open window (already closed, or skipped because it was empty) is late: it is
    counted in `counts['late_frames']` and belongs to no segment; the caller keeps the
    frame itself. A clock that jumps back in the middle of a session (a replayed bag, a
    reset simulator) is seen the same way: its frames are late until the stamps pass the
    last closed window again. Start a new session after a time reset instead.

    Memory is bounded by `max_open_frames` per open window: beyond it, every other frame
    of the window is dropped and only every 2nd (then 4th...) arriving frame is kept, so
    the frames kept stay evenly spread over the window (counted in
    `counts['frames_thinned']`). With keyframes at a few Hz this never triggers.
    """

    def __init__(self, window_s: float = DEFAULT_WINDOW_S, max_open_frames: int = 64) -> None:
        if not (math.isfinite(window_s) and window_s > 0):
            raise ValueError(f'window_s must be a positive number of seconds, got {window_s}')
        if max_open_frames < 4:
            raise ValueError(f'max_open_frames must be at least 4, got {max_open_frames}')
        self.window_ns = round(window_s * 1e9)
        if self.window_ns < 1:
            raise ValueError(f'window_s {window_s} is shorter than a nanosecond')
        self.max_open_frames = max_open_frames
        self.counts: Counter[str] = Counter()
        self._sessions: dict[str, _Session] = {}

    def resume(self, session: str, state: SegmenterState) -> None:
        """Continue a session from a saved state (before any of its new frames are added).

        Windows continue on a grid that starts at `closed_until_ns`, the same grid when
        the window length is unchanged, and one that cannot overlap the stored segments
        when it was changed.
        """
        if state.next_index < 0 or state.closed_until_ns < state.origin_ns:
            raise ValueError(f'inconsistent segmenter state for {session!r}: {state}')
        current = self._sessions.get(session)
        if current is not None and current.open is not None:
            raise ValueError(f'session {session!r} has an open window: resume before adding')
        self._sessions[session] = _Session(
            origin_ns=state.origin_ns,
            anchor_ns=state.closed_until_ns,
            next_index=state.next_index,
            closed_until_ns=state.closed_until_ns,
        )

    def add(self, frame: FrameRecord) -> list[Segment]:
        """Place a frame in its session's open window; returns the segments it closes."""
        session = self._sessions.get(frame.session)
        if session is None:
            session = _Session(frame.stamp_ns, frame.stamp_ns, 0, frame.stamp_ns)
            self._sessions[frame.session] = session
        window = session.open
        earliest = window.start_ns if window is not None else session.closed_until_ns
        if frame.stamp_ns < earliest:
            self.counts['late_frames'] += 1
            return []
        number = (frame.stamp_ns - session.anchor_ns) // self.window_ns
        closed = []
        if window is not None and number != window.number:
            closed.append(self._close(frame.session, session))
            window = None
        if window is None:
            start = session.anchor_ns + number * self.window_ns
            window = _Window(number, start, start + self.window_ns)
            session.open = window
        self._put(window, frame)
        return closed

    def flush(self, session: str | None = None, before_ns: int | None = None) -> list[Segment]:
        """Close open windows: of one session or all, and with `before_ns` only those that
        end at or before it (an idle timeout: the robot stood still, no frames came)."""
        names = list(self._sessions) if session is None else [session]
        closed = []
        for name in names:
            state = self._sessions.get(name)
            if state is None or state.open is None:
                continue
            if before_ns is None or state.open.end_ns <= before_ns:
                closed.append(self._close(name, state))
        return closed

    def forget(self, session: str) -> None:
        """Drop everything about a session (it was deleted; its name may be used again)."""
        self._sessions.pop(session, None)

    def state(self, session: str) -> SegmenterState | None:
        state = self._sessions.get(session)
        if state is None:
            return None
        return SegmenterState(state.origin_ns, state.next_index, state.closed_until_ns)

    def open_frames(self, session: str) -> int:
        """Frames waiting in a session's open window."""
        state = self._sessions.get(session)
        return len(state.open.frames) if state is not None and state.open is not None else 0

    def _put(self, window: _Window, frame: FrameRecord) -> None:
        window.arrivals += 1
        if (window.arrivals - 1) % window.stride:
            self.counts['frames_thinned'] += 1
            return
        bisect.insort(window.frames, frame, key=lambda f: f.stamp_ns)
        if len(window.frames) > self.max_open_frames:
            kept = window.frames[::2]
            self.counts['frames_thinned'] += len(window.frames) - len(kept)
            window.frames = kept
            window.stride *= 2

    def _close(self, name: str, state: _Session) -> Segment:
        window = state.open
        assert window is not None
        frames = tuple(window.frames)
        segment = Segment(name, state.next_index, window.start_ns, window.end_ns, frames)
        state.next_index += 1
        state.closed_until_ns = window.end_ns
        state.open = None
        self.counts['segments_closed'] += 1
        return segment


def pick_evenly(items: Sequence[T], count: int = 4) -> list[T]:
    """`count` items spread evenly over the sequence (the middle of each of `count` equal
    stretches), all of them when there are no more than `count`."""
    if count < 1:
        raise ValueError(f'count must be at least 1, got {count}')
    n = len(items)
    if n <= count:
        return list(items)
    return [items[(2 * i + 1) * n // (2 * count)] for i in range(count)]


def tile_grid(images: Sequence[np.ndarray], tile_size: tuple[int, int] = TILE_SIZE) -> np.ndarray:
    """Up to four images tiled 2x2 in reading order: an RGB uint8 array of twice the tile
    size (`tile_size` is width, height).

    The grid is always 2x2 so that every segment picture has the same layout and size; a
    segment with fewer than four frames leaves the remaining tiles black. Each image is
    scaled to fit its tile with its aspect ratio kept (black borders), since a stretched
    picture misleads the VLM about shapes.
    """
    if not 1 <= len(images) <= 4:
        raise ValueError(f'tile_grid takes 1 to 4 images, got {len(images)}')
    width, height = tile_size
    if width < 1 or height < 1:
        raise ValueError(f'tile size must be positive, got {tile_size}')
    grid = np.zeros((2 * height, 2 * width, 3), dtype=np.uint8)
    for position, image in enumerate(images):
        tile = _fit(_as_rgb(image), width, height)
        top = (position // 2) * height + (height - tile.shape[0]) // 2
        left = (position % 2) * width + (width - tile.shape[1]) // 2
        grid[top : top + tile.shape[0], left : left + tile.shape[1]] = tile
    return grid


def center_crop(image: np.ndarray, fraction: float = 0.5) -> np.ndarray:
    """The middle `fraction` of the image's width and height: what lies straight ahead,
    which the centre caption view reads up close (text, signs, small objects)."""
    if not 0 < fraction <= 1:
        raise ValueError(f'fraction must be in (0, 1], got {fraction}')
    height, width = image.shape[:2]
    crop_h = max(1, round(height * fraction))
    crop_w = max(1, round(width * fraction))
    top = (height - crop_h) // 2
    left = (width - crop_w) // 2
    return np.ascontiguousarray(image[top : top + crop_h, left : left + crop_w])


def _as_rgb(image: np.ndarray) -> np.ndarray:
    """An image as 3-channel uint8: grey is repeated, an alpha channel dropped."""
    image = np.asarray(image)
    if image.dtype != np.uint8:
        raise ValueError(f'expected a uint8 image, got {image.dtype}')
    if image.ndim == 2:
        image = image[:, :, None]
    if image.ndim != 3 or image.shape[2] not in (1, 3, 4) or 0 in image.shape[:2]:
        raise ValueError(f'expected an RGB, RGBA or grey image, got shape {image.shape}')
    if image.shape[2] == 1:
        return np.repeat(image, 3, axis=2)
    return image[:, :, :3]


def _fit(image: np.ndarray, width: int, height: int) -> np.ndarray:
    scale = min(width / image.shape[1], height / image.shape[0])
    size = (
        min(width, max(1, round(image.shape[1] * scale))),
        min(height, max(1, round(image.shape[0] * scale))),
    )
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    return cv2.resize(np.ascontiguousarray(image), size, interpolation=interpolation)
