# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Data that flows into and out of memory, independent of ROS and of the database."""

from __future__ import annotations

import re
from dataclasses import dataclass

from waymark.geometry import Pose

# Session names become directory names and parts of frame ids ("<session>/<index>"), so
# they are restricted to characters that are safe in both: no separators, no leading dot.
SESSION_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,63}')

# Memory has two levels of entries: single keyframes, and segments (fixed time windows of
# keyframes, BinTrack) that summarise what the robot saw over a stretch of its route.
FRAME = 'frame'
SEGMENT = 'segment'
LEVELS = (FRAME, SEGMENT)


@dataclass(frozen=True)
class Keyframe:
    """A selected camera frame with the camera pose (map frame) at its acquisition time."""

    session: str
    index: int
    stamp_ns: int
    pose: Pose
    pose_valid: bool
    map_epoch: int
    image: bytes
    image_format: str = 'jpeg'
    frame_id: str = 'map'


@dataclass(frozen=True)
class FrameRecord:
    """What memory keeps about one entry besides its embeddings: a keyframe, or a segment.

    For a segment, `stamp_ns`..`end_ns` is its window, the pose is the mean position of
    its frames with valid poses (pose_valid is false when none had one), and `image_ref`
    names its 2x2 grid of frames.
    """

    session: str
    index: int
    stamp_ns: int
    x: float
    y: float
    z: float
    yaw: float
    map_epoch: int
    pose_valid: bool
    image_ref: str
    text: str = ''
    # Height of the tallest line of text read in the image, as a fraction of the image
    # height: among frames that read the same words, the larger the nearer and clearer.
    text_size: float = 0.0
    kind: str = FRAME
    # End of the time span covered; None for a frame (it covers its own stamp only).
    end_ns: int | None = None

    @property
    def id(self) -> str:
        return entry_id(self.session, self.index, self.kind)

    @property
    def end_stamp_ns(self) -> int:
        return self.stamp_ns if self.end_ns is None else self.end_ns

    @property
    def pose(self) -> Pose:
        return Pose.from_xyz_yaw(self.x, self.y, self.z, self.yaw)


@dataclass(frozen=True)
class Hit:
    """A search result: the record, how well it matched, and which view matched.

    `score` is a cosine similarity for embedding views, seconds after the requested
    time for the time view, and distance in metres for the position view.
    """

    record: FrameRecord
    score: float
    view: str


def frame_id(session: str, index: int) -> str:
    return f'{session}/{index}'


def entry_id(session: str, index: int, kind: str = FRAME) -> str:
    """ "<session>/<index>" for frames, "<session>/s<index>" for segments."""
    if kind == FRAME:
        return frame_id(session, index)
    if kind == SEGMENT:
        return f'{session}/s{index}'
    raise ValueError(f'unknown entry kind {kind!r}; expected one of {LEVELS}')


def is_session_name(name: object) -> bool:
    return isinstance(name, str) and SESSION_NAME.fullmatch(name) is not None


def check_session_name(name: str) -> str:
    if not is_session_name(name):
        raise ValueError(
            f'invalid session name {name!r}: use 1-64 letters, digits, "_", "." or "-", '
            'starting with a letter or digit'
        )
    return name
