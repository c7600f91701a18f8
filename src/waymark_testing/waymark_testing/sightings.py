# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Memory records that saw a sign, with the text box where a pinhole camera puts it:
scenes with known answers for target localisation."""

from __future__ import annotations

import math

from waymark.memory.entries import CameraModel, DepthSamples, FrameRecord, Sighting, TextBox

CAMERA = CameraModel.from_hfov(640, 480, 90.0)
SIGN = (4.0, 3.0, 1.6)  # a sign's centre in the map
CAMERA_Z = 0.5


def seeing(
    index: int,
    x: float,
    y: float,
    target=SIGN,
    text: str = 'PHARMACY',
    bearing_noise: float = 0.0,
    yaw_offset: float = 0.2,
    depth: DepthSamples | None = None,
    session: str = 'walk',
    map_epoch: int = 0,
) -> FrameRecord:
    """A keyframe at (x, y) whose camera sees `text` at `target`, turned `yaw_offset` off
    it, with the box where a pinhole camera puts it (plus `bearing_noise` rad)."""
    towards = math.atan2(target[1] - y, target[0] - x)
    yaw = towards + yaw_offset
    off_axis = towards - yaw + bearing_noise
    u = CAMERA.cx - CAMERA.fx * math.tan(off_axis)
    distance = math.hypot(target[0] - x, target[1] - y) * math.cos(off_axis)
    v = CAMERA.cy - CAMERA.fy * (target[2] - CAMERA_Z) / distance
    half_w, half_h = 30.0, 10.0
    box = TextBox(
        text,
        (u - half_w) / CAMERA.width,
        (v - half_h) / CAMERA.height,
        (u + half_w) / CAMERA.width,
        (v + half_h) / CAMERA.height,
    )
    other = TextBox('EXIT', 0.05, 0.1, 0.15, 0.15)
    return FrameRecord(
        session,
        index,
        1_000 + index,
        x,
        y,
        CAMERA_Z,
        yaw,
        map_epoch,
        True,
        f'{index}.jpg',
        text=f'EXIT {text}',
        sighting=Sighting(CAMERA, (other, box), depth),
    )


POSES = ((1.0, 0.0), (2.5, -0.5), (0.5, 1.5))  # cameras that all see SIGN
