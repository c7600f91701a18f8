# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What memory accepts from outside as keyframes, checked before any decoding,
embedding or writing (search arguments: see search_query.py).

Everything here is cheap (header reads and comparisons), so a hostile or broken sender
costs memory a refusal and a count, never gigabytes or a wrong entry. Each refusal names
its reason (see refusal.py) so that memory_node can count refusals by kind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from waymark.memory.entries import FrameRecord, Keyframe
from waymark.memory.refusal import (
    RefusedError,
    check_image,
    check_position,
    check_session,
    shown,
)
from waymark.memory.storage.image_codec import ImageLimits

NS_PER_S = 1_000_000_000


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


def check_stamp(sec: int, nanosec: int, what: str = 'stamp') -> int:
    """A message time in UTC nanoseconds; refuses negative times and nanosec >= 1 s (two
    different stamps would otherwise name the same instant)."""
    if sec < 0 or not 0 <= nanosec < NS_PER_S:
        raise RefusedError('stamp', f'{what} sec={sec}, nanosec={nanosec} is not a valid time')
    return sec * NS_PER_S + nanosec


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
    check_session('session', session)
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
