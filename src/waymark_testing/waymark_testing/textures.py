# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Textured pictures and the same picture seen from elsewhere, for the photo matcher and
the photo judge (ROS-free)."""

from __future__ import annotations

import cv2
import numpy as np


def poster(seed: int, size: tuple[int, int] = (480, 640)) -> np.ndarray:
    """A busy RGB picture (shapes and strokes of random colours) of (height, width)."""
    rng = np.random.default_rng(seed)
    height, width = size
    image = np.full((height, width, 3), 200, np.uint8)
    for _ in range(120):
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
        if rng.random() < 0.5:
            w, h = (int(v) for v in rng.integers(10, 60, 2))
            cv2.rectangle(image, (x, y), (x + w, y + h), colour, -1)
        else:
            cv2.circle(image, (x, y), int(rng.integers(5, 30)), colour, -1)
        cv2.line(image, (x, y), tuple(int(v) for v in rng.integers(0, width, 2)), colour, 2)
    return image


def moved(image: np.ndarray) -> np.ndarray:
    """The picture seen from elsewhere: a perspective warp, smaller and off-centre, on a
    plain background, as a stop view shows a sign the photo showed head-on."""
    height, width = image.shape[:2]
    corners = np.float32([[0, 0], [width, 0], [width, height], [0, height]])
    seen = np.float32([[90, 60], [520, 110], [500, 400], [110, 430]])
    homography = cv2.getPerspectiveTransform(corners, seen)
    return cv2.warpPerspective(image, homography, (width, height), borderValue=(120, 130, 140))


def encode(rgb: np.ndarray, ext: str = '.jpg') -> bytes:
    """RGB pixels as JPEG (or `ext`) bytes."""
    return cv2.imencode(ext, cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))[1].tobytes()
