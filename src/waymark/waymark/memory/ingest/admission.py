# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What memory accepts from outside: keyframes and search arguments, checked before any
decoding, embedding or writing.

Everything here is cheap (header reads and comparisons), so a hostile or broken sender
costs memory a refusal and a count, never gigabytes or a wrong entry. Each refusal names
its reason so that memory_node can count refusals by kind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from waymark.memory.entries import FrameRecord, Keyframe, check_session_name
from waymark.memory.storage.image_codec import ImageLimits, ImageTooLargeError, check_image_limits
from waymark.memory.storage.session_owners import ROBOT_NAME

NS_PER_S = 1_000_000_000
MAX_INDEX = 2**63 - 1


class RefusedError(ValueError):
    """Input memory does not take; `reason` is a short key for counting."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class KeyframeRules:
    """What a keyframe must satisfy before it is journaled."""

    map_frame: str = 'map'
    # Farthest a stored position may be from the map origin: beyond it a pose is a bug
    # or an attack, not a place the robot went.
    max_coordinate_m: float = 100_000.0
    # How far the quaternion's norm may be from 1: SLAM publishes unit quaternions, so
    # more than rounding means the numbers are not a rotation.
    quaternion_tolerance: float = 0.01
    image: ImageLimits = field(default_factory=ImageLimits)


def shown(text: str, limit: int = 80) -> str:
    """A string from outside as it may appear in an error: quoted, escaped, clipped."""
    return repr(text[:limit]) + ('...' if len(text) > limit else '')


def _check_session(reason: str, name: str) -> None:
    try:
        check_session_name(name)
    except ValueError:
        raise RefusedError(
            reason,
            f'invalid session name {shown(name)}: use 1-64 letters, digits, "_", "." or "-", '
            'starting with a letter or digit',
        ) from None


def check_stamp(sec: int, nanosec: int, what: str = 'stamp') -> int:
    """A message time in UTC nanoseconds; refuses negative times and nanosec >= 1 s (two
    different stamps would otherwise name the same instant)."""
    if sec < 0 or not 0 <= nanosec < NS_PER_S:
        raise RefusedError('stamp', f'{what} sec={sec}, nanosec={nanosec} is not a valid time')
    return sec * NS_PER_S + nanosec


def check_position(position: Sequence[float], max_coordinate_m: float, what: str) -> None:
    if not all(math.isfinite(value) for value in position):
        raise RefusedError('position', f'{what} is not finite: {list(position)}')
    if max(abs(value) for value in position) > max_coordinate_m:
        raise RefusedError(
            'position',
            f'{what} {list(position)} is farther than max_coordinate_m={max_coordinate_m:g} '
            'from the map origin',
        )


def check_keyframe_input(
    rules: KeyframeRules,
    *,
    session: str,
    frame_id: str,
    position: Sequence[float],
    orientation: Sequence[float],
    pose_valid: bool,
    image: bytes,
) -> None:
    """Refuse a keyframe memory must not store, before its image is decoded.

    A pose marked invalid (tracking lost) is stored without a position, so its numbers
    are not checked; its frame still is: a sender in another frame is misconfigured.
    """
    _check_session('session', session)
    if frame_id != rules.map_frame:
        raise RefusedError(
            'frame',
            f'keyframe in frame {shown(frame_id)}, memory stores poses in {rules.map_frame!r}',
        )
    if pose_valid:
        check_position(position, rules.max_coordinate_m, 'keyframe position')
        if not all(math.isfinite(value) for value in orientation):
            raise RefusedError('orientation', f'keyframe orientation is not finite: {orientation}')
        norm = math.sqrt(sum(value * value for value in orientation))
        if abs(norm - 1.0) > rules.quaternion_tolerance:
            raise RefusedError(
                'orientation',
                f'keyframe orientation {list(orientation)} has norm {norm:.3g}, not 1 '
                f'(within {rules.quaternion_tolerance:g})',
            )
    check_image('keyframe image', image, rules.image)


@dataclass(frozen=True)
class SearchRules:
    """Bounds on one search request."""

    max_coordinate_m: float = 100_000.0
    max_radius_m: float = 1_000.0
    max_query_chars: int = 1_000
    max_sessions: int = 100
    image: ImageLimits = field(default_factory=ImageLimits)


def check_search_text(rules: SearchRules, text: str) -> None:
    if len(text) > rules.max_query_chars:
        raise RefusedError(
            'text',
            f'query text of {len(text)} characters is over max_query_chars={rules.max_query_chars}',
        )


def check_search_sessions(rules: SearchRules, sessions: Sequence[str]) -> None:
    """Session names in a request must be valid ones: a bad name is a caller's bug that an
    empty result would hide."""
    if len(sessions) > rules.max_sessions:
        raise RefusedError(
            'sessions', f'{len(sessions)} sessions named, at most max_sessions={rules.max_sessions}'
        )
    for name in sessions:
        _check_session('sessions', name)


def check_search_robots(rules: SearchRules, robots: Sequence[str]) -> None:
    """Robot ids in a request: as many as sessions may be named, each a valid id."""
    if len(robots) > rules.max_sessions:
        raise RefusedError(
            'robots', f'{len(robots)} robots named, at most max_sessions={rules.max_sessions}'
        )
    for robot in robots:
        if not robot or not ROBOT_NAME.fullmatch(robot):
            raise RefusedError('robots', f'invalid robot id {shown(robot)}')


def check_search_radius(rules: SearchRules, radius: float) -> None:
    if not (math.isfinite(radius) and 0.0 < radius <= rules.max_radius_m):
        raise RefusedError(
            'radius', f'range search needs a radius in (0, {rules.max_radius_m:g}] m, got {radius}'
        )


def check_search_image(rules: SearchRules, data: bytes) -> None:
    """Image search needs an image within the limits; checked on its header alone."""
    check_image('query image', data, rules.image)


def check_image(what: str, data: bytes, limits: ImageLimits) -> None:
    """Refuses an empty image, one over `limits` (reason image_too_large) or one whose
    header is not an image's, before any pixel is decoded."""
    if not data:
        raise RefusedError('image', f'{what}: no image data')
    try:
        check_image_limits(data, limits)
    except ImageTooLargeError as error:
        raise RefusedError('image_too_large', f'{what} refused: {error}') from error
    except ValueError as error:
        raise RefusedError('image', f'{what} refused: {error}') from error


def check_interval(start_ns: int, end_ns: int) -> None:
    if end_ns < start_ns:
        raise RefusedError('interval', 'interval search needs end_stamp >= stamp')


def check_index_range(first: int, last: int) -> None:
    """Entry indices are int64 in the store: larger ones cannot exist and would overflow."""
    if not 0 <= first <= last <= MAX_INDEX:
        raise RefusedError(
            'index_range', f'index range {first}..{last} must be ordered and within 0..{MAX_INDEX}'
        )


def same_keyframe(stored: FrameRecord, keyframe: Keyframe, image_ref: str) -> bool:
    """Whether `keyframe` is the one `stored` was made from (a resend or a replay).

    Compared is what memory keeps: the image (by its content address), the position and
    yaw, pose validity and map epoch. The sender's index is not kept (memory numbers its
    entries itself), so it cannot be compared. An entry stored without its image (full
    image disk) cannot be shown identical and so counts as different.
    """
    if not stored.image_ref or stored.image_ref != image_ref:
        return False
    x, y, z = keyframe.pose.position if keyframe.pose_valid else (0.0, 0.0, 0.0)
    yaw = keyframe.pose.yaw if keyframe.pose_valid else 0.0
    return (
        stored.pose_valid == keyframe.pose_valid
        and stored.map_epoch == keyframe.map_epoch
        and (stored.x, stored.y, stored.z, stored.yaw) == (x, y, z, yaw)
    )
