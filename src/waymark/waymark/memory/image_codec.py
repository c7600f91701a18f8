# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Camera images to JPEG bytes, rejecting what cannot be decoded.

Shared by capture_node and the offline tools so that both store the same bytes.
"""

from __future__ import annotations

import cv2
import numpy as np

# Channels and the conversion to BGR for each raw encoding accepted.
RAW_ENCODINGS: dict[str, tuple[int, int | None]] = {
    'rgb8': (3, cv2.COLOR_RGB2BGR),
    'bgr8': (3, None),
    'rgba8': (4, cv2.COLOR_RGBA2BGR),
    'bgra8': (4, cv2.COLOR_BGRA2BGR),
    'mono8': (1, None),
}


class ImageDecodeError(ValueError):
    """The image cannot be turned into a picture."""


class UnsupportedEncodingError(ImageDecodeError):
    """A raw image encoding waymark does not read."""


def compressed_to_jpeg(fmt: str, data: bytes, quality: int) -> bytes:
    """Validate a compressed image; JPEG passes through, other codecs are re-encoded."""
    buffer = np.frombuffer(data, dtype=np.uint8)
    image = cv2.imdecode(buffer, cv2.IMREAD_COLOR) if buffer.size else None
    if image is None:
        raise ImageDecodeError(
            f'undecodable compressed image (format {fmt!r}, {buffer.size} bytes)'
        )
    if 'jpeg' in fmt.lower() or 'jpg' in fmt.lower():
        return bytes(data)
    return encode_jpeg(image, quality)


def raw_to_jpeg(
    encoding: str, width: int, height: int, step: int, data: bytes, quality: int
) -> bytes:
    check_encoding(encoding)
    channels, conversion = RAW_ENCODINGS[encoding.lower()]
    if height == 0 or width == 0 or step < width * channels or len(data) < step * height:
        raise ImageDecodeError(
            f'raw image of {len(data)} bytes does not match '
            f'{width}x{height}, step {step}, {encoding}'
        )
    rows = np.frombuffer(data, dtype=np.uint8)[: step * height].reshape(height, step)
    image = rows[:, : width * channels].reshape(height, width, channels)
    if conversion is not None:
        image = cv2.cvtColor(image, conversion)
    return encode_jpeg(image, quality)


def check_encoding(encoding: str) -> None:
    if encoding.lower() not in RAW_ENCODINGS:
        raise UnsupportedEncodingError(
            f'unsupported image encoding {encoding!r} (supported: {", ".join(RAW_ENCODINGS)})'
        )


def encode_jpeg(bgr: np.ndarray, quality: int) -> bytes:
    ok, buffer = cv2.imencode('.jpg', bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ImageDecodeError('JPEG encoding failed')
    return buffer.tobytes()
