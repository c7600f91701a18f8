# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Image size limits are checked from the header, before any pixel is decoded."""

from __future__ import annotations

import resource

import cv2
import numpy as np
import pytest

from waymark.memory.storage.image_codec import (
    ImageDecodeError,
    ImageLimits,
    ImageTooLargeError,
    check_image_limits,
    decode_image,
)
from waymark_testing.images import png_bomb


def test_small_images_pass_with_their_size():
    ok, jpeg = cv2.imencode('.jpg', np.zeros((48, 64, 3), np.uint8))
    assert ok
    assert check_image_limits(jpeg.tobytes(), ImageLimits()) == (64, 48)
    assert decode_image(jpeg.tobytes(), ImageLimits()).shape == (48, 64, 3)


def test_a_decompression_bomb_is_refused_without_decoding():
    bomb = png_bomb(12_000)  # 144 Mpx, ~430 MB as RGB
    assert len(bomb) < 200_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ImageTooLargeError, match='12000x12000 pixels'):
        decode_image(bomb, ImageLimits(max_pixels=40_000_000))
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 50_000


def test_bytes_over_the_limit_are_refused_before_the_header_is_read():
    with pytest.raises(ImageTooLargeError, match='over the limit of 10 bytes'):
        check_image_limits(b'\x00' * 11, ImageLimits(max_bytes=10))


def test_bytes_that_are_no_image_are_a_decode_error():
    with pytest.raises(ImageDecodeError, match='cannot read the image header'):
        check_image_limits(b'not an image at all', ImageLimits())


def test_pillows_own_bomb_guard_is_reported_as_too_large():
    with pytest.raises(ImageTooLargeError, match='pixel limit'):
        check_image_limits(png_bomb(18_000), ImageLimits(max_pixels=10**12))
