# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Refusing input from outside memory: the error that names why, and the checks that
keyframes (ingest/admission.py) and searches (search_query.py) share.

Each refusal names its reason so that memory_node can count refusals by kind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from waymark.memory.entries import check_session_name
from waymark.memory.storage.image_codec import ImageLimits, ImageTooLargeError, check_image_limits


class RefusedError(ValueError):
    """Input memory does not take; `reason` is a short key for counting."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def shown(text: str, limit: int = 80) -> str:
    """A string from outside as it may appear in an error: quoted, escaped, clipped."""
    return repr(text[:limit]) + ('...' if len(text) > limit else '')


def check_session(reason: str, name: str) -> None:
    try:
        check_session_name(name)
    except ValueError:
        raise RefusedError(
            reason,
            f'invalid session name {shown(name)}: use 1-64 letters, digits, "_", "." or "-", '
            'starting with a letter or digit',
        ) from None


def check_position(position: Sequence[float], max_coordinate_m: float, what: str) -> None:
    if not all(math.isfinite(value) for value in position):
        raise RefusedError('position', f'{what} is not finite: {list(position)}')
    if max(abs(value) for value in position) > max_coordinate_m:
        raise RefusedError(
            'position',
            f'{what} {list(position)} is farther than max_coordinate_m={max_coordinate_m:g} '
            'from the map origin',
        )


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
