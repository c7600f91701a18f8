# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Data that flows into and out of memory, independent of ROS and of the database."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from waymark.geometry import Pose

# Session names become directory names and parts of frame ids ("<session>/<index>"), so
# they are restricted to characters that are safe in both: no separators, no leading dot.
SESSION_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,63}')
# Robot ids follow session names' rules, shorter, so "<robot>-run-<UTC time>" is a valid
# session name. '' is the robot id of a memory that is not shared.
ROBOT_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,31}')
ROBOT_MAX_BYTES = 32

# Memory has two levels of entries: single keyframes, and segments (fixed time windows of
# keyframes, BinTrack) that summarise what the robot saw over a stretch of its route.
FRAME = 'frame'
SEGMENT = 'segment'
LEVELS = (FRAME, SEGMENT)
# Named places are a level of their own (see places.py): searched only when asked for,
# so a question about what the robot saw is never answered by a name someone gave.
PLACE = 'place'


@dataclass(frozen=True)
class CameraModel:
    """Pinhole intrinsics (pixels) of the image a record was taken from.

    Kept per record because a robot's camera can change between sessions, and an answer
    must turn a pixel into a bearing with the camera that took that very image.
    """

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float

    def __post_init__(self) -> None:
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f'image size must be positive, got {self.width}x{self.height}')
        numbers = (self.fx, self.fy, self.cx, self.cy)
        if not all(math.isfinite(v) for v in numbers) or self.fx <= 0 or self.fy <= 0:
            raise ValueError(f'focal lengths must be finite and positive, got {numbers}')

    @classmethod
    def from_hfov(cls, width: int, height: int, hfov_deg: float) -> CameraModel:
        """Square pixels, principal point at the centre: what a data sheet gives."""
        if not 0.0 < hfov_deg < 180.0:
            raise ValueError(f'hfov_deg must be in (0, 180), got {hfov_deg}')
        focal = 0.5 * width / math.tan(math.radians(hfov_deg) / 2.0)
        return cls(width, height, focal, focal, width / 2.0, height / 2.0)

    def bearing(self, u: float) -> float:
        """Horizontal angle (rad) of pixel column u from the optical axis, positive to the
        left, as yaw is counter-clockwise in the map."""
        return math.atan2(self.cx - u, self.fx)


@dataclass(frozen=True)
class TextBox:
    """Where one line of text was read, as fractions of the image width and height."""

    text: str
    left: float
    top: float
    right: float
    bottom: float

    @property
    def centre(self) -> tuple[float, float]:
        return (self.left + self.right) / 2.0, (self.top + self.bottom) / 2.0


@dataclass(frozen=True)
class DepthSamples:
    """Median depth (m) over a coarse grid of image cells, row-major; NaN where unknown.

    A few hundred numbers instead of the depth image: enough to range what a box covers.
    """

    columns: int
    rows: int
    metres: tuple[float, ...]

    def __post_init__(self) -> None:
        if self.columns <= 0 or self.rows <= 0 or len(self.metres) != self.columns * self.rows:
            raise ValueError(
                f'{len(self.metres)} depth samples do not fill a {self.columns}x{self.rows} grid'
            )


@dataclass(frozen=True)
class Sighting:
    """What target localisation needs of a keyframe, stored at ingest with its record."""

    camera: CameraModel | None = None
    text_boxes: tuple[TextBox, ...] = ()
    depth: DepthSamples | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                'camera': None if self.camera is None else vars(self.camera),
                'text_boxes': [vars(box) for box in self.text_boxes],
                'depth': None if self.depth is None else vars(self.depth),
            },
            separators=(',', ':'),
            allow_nan=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Sighting | None:
        """None for an empty string (a record stored before sightings existed)."""
        if not text:
            return None
        data = json.loads(text)
        camera, depth = data.get('camera'), data.get('depth')
        return cls(
            camera=None if camera is None else CameraModel(**camera),
            text_boxes=tuple(TextBox(**box) for box in data.get('text_boxes', ())),
            depth=None
            if depth is None
            else DepthSamples(depth['columns'], depth['rows'], tuple(map(float, depth['metres']))),
        )


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
    # The camera's intrinsics and a coarse depth grid, when the sensors give them.
    camera: CameraModel | None = None
    depth: DepthSamples | None = None


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
    # Camera, text boxes and depth samples for target localisation; None when unknown.
    sighting: Sighting | None = None

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
    # For a photo search, where the photo's content was verified in the entry's picture
    # (memory.views.photo_rerank); None: not verified, or not a photo search.
    region: TextBox | None = None


def frame_id(session: str, index: int) -> str:
    return f'{session}/{index}'


def entry_id(session: str, index: int, kind: str = FRAME) -> str:
    """ "<session>/<index>" for frames, "<session>/s<index>" for segments,
    "<session>/v<index>" for the rows of a place."""
    if kind == FRAME:
        return frame_id(session, index)
    if kind == SEGMENT:
        return f'{session}/s{index}'
    if kind == PLACE:
        return f'{session}/v{index}'
    raise ValueError(f'unknown entry kind {kind!r}; expected one of {(*LEVELS, PLACE)}')


def is_session_name(name: object) -> bool:
    return isinstance(name, str) and SESSION_NAME.fullmatch(name) is not None


def check_session_name(name: str) -> str:
    if not is_session_name(name):
        raise ValueError(
            f'invalid session name {name!r}: use 1-64 letters, digits, "_", "." or "-", '
            'starting with a letter or digit'
        )
    return name


def check_robot_id(robot: str) -> str:
    """`robot` when it is a valid robot id ('' included), else ValueError."""
    if not isinstance(robot, str) or (robot and not ROBOT_NAME.fullmatch(robot)):
        raise ValueError(
            f'invalid robot id {robot!r}: use 1-32 letters, digits, "_", "." or "-", starting '
            'with a letter or digit (or empty for a memory that is not shared)'
        )
    return robot
