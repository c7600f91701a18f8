# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A record's sighting as the compact JSON the database keeps, within a size bound.

Every keyframe carries one, so at a million entries each byte is a megabyte on disk and
in the process: numbers are rounded to what localisation can use (a thousandth of a
pixel, a millimetre of depth, 1e-4 of the image side), and a sighting over the bound is
trimmed rather than refused, losing what localisation misses least first: text boxes
from the end of the list, then the depth grid; the camera model is always kept.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math

from waymark.memory.entries import CameraModel, DepthSamples, Sighting, TextBox

# A sighting's JSON: a camera model (~100 bytes), 16 text boxes (~60 each) and a 16x12
# depth grid (~6 bytes a cell) fit; a larger one is trimmed (see encode).
SIGHTING_MAX_BYTES = 4096
PIXEL_DIGITS = 3
DEPTH_DIGITS = 3
BOX_DIGITS = 4
_LOG = logging.getLogger(__name__)


def encode(sighting: Sighting | None, max_bytes: int) -> str:
    """The sighting's JSON in at most `max_bytes` of UTF-8 ('' for none): rounded, then
    trimmed (boxes from the end of the list, then the depth grid) until it fits."""
    if sighting is None:
        return ''
    compact = rounded(sighting)
    text = compact.to_json()
    while len(text.encode('utf-8')) > max_bytes:
        if compact.text_boxes:
            compact = dataclasses.replace(compact, text_boxes=compact.text_boxes[:-1])
        elif compact.depth is not None:
            compact = dataclasses.replace(compact, depth=None)
        else:
            return ''
        text = compact.to_json()
    return text


def decode(text: str | None) -> Sighting | None:
    """The stored (or received) sighting; None for none (rows written before sightings
    existed read '' or null) and for one that does not parse or holds a box that is not
    one, which is logged rather than fatal: the record is still worth having without it."""
    if not text:
        return None
    try:
        sighting = Sighting.from_json(text)
        if sighting is not None:
            _check_boxes(sighting.text_boxes)
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        _LOG.warning('a stored sighting does not parse (%s); the record is kept without it', error)
        return None
    if sighting is not None and sighting.camera is not None:
        sighting = dataclasses.replace(sighting, camera=shared_camera(sighting.camera))
    return sighting


def _check_boxes(boxes: tuple[TextBox, ...]) -> None:
    """TextBox checks nothing itself; a box read back must be text with edges in [0, 1]."""
    for box in boxes:
        edges = (box.left, box.top, box.right, box.bottom)
        if not isinstance(box.text, str) or not all(
            isinstance(v, (int, float)) and 0.0 <= v <= 1.0 for v in edges
        ):
            raise ValueError(f'not a text box: {box!r}')


@functools.lru_cache(maxsize=256)
def shared_camera(camera: CameraModel) -> CameraModel:
    """One object for equal camera models: a session's frames share their camera, and a
    million copies would cost about 100 MB."""
    return camera


def rounded(sighting: Sighting) -> Sighting:
    camera = sighting.camera
    if camera is not None:
        camera = CameraModel(
            camera.width,
            camera.height,
            *(round(float(v), PIXEL_DIGITS) for v in (camera.fx, camera.fy, camera.cx, camera.cy)),
        )
    depth = sighting.depth
    if depth is not None:
        depth = DepthSamples(
            depth.columns,
            depth.rows,
            tuple(_depth(value) for value in depth.metres),
        )
    boxes = tuple(
        TextBox(
            box.text,
            *(round(float(v), BOX_DIGITS) for v in (box.left, box.top, box.right, box.bottom)),
        )
        for box in sighting.text_boxes
    )
    return Sighting(camera, boxes, depth)


def _depth(value: float) -> float:
    value = float(value)
    return round(value, DEPTH_DIGITS) if math.isfinite(value) else math.nan
