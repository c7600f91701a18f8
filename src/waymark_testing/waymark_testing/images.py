# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Hostile images for the size limits (ROS-free: core tests import it too)."""

from __future__ import annotations

import io

from PIL import Image


def png_bomb(side: int) -> bytes:
    """A black PNG of side x side pixels: a few hundred kB that decode to side² x 3 bytes."""
    buffer = io.BytesIO()
    Image.new('1', (side, side)).save(buffer, format='PNG', optimize=True)
    return buffer.getvalue()
