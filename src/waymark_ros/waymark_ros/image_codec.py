# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Turn camera messages into JPEG bytes, rejecting what cannot be decoded."""

from __future__ import annotations

import cv2
import numpy as np
from sensor_msgs.msg import CompressedImage, Image

# Channels and the conversion to BGR for each raw encoding we accept.
_RAW_ENCODINGS: dict[str, tuple[int, int | None]] = {
    'rgb8': (3, cv2.COLOR_RGB2BGR),
    'bgr8': (3, None),
    'rgba8': (4, cv2.COLOR_RGBA2BGR),
    'bgra8': (4, cv2.COLOR_BGRA2BGR),
    'mono8': (1, None),
}


class ImageDecodeError(ValueError):
    """The image message cannot be turned into a picture."""


def compressed_to_jpeg(msg: CompressedImage, quality: int) -> bytes:
    """Validate a compressed image; JPEG passes through, other codecs are re-encoded."""
    data = np.frombuffer(bytes(msg.data), dtype=np.uint8)
    image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if image is None:
        raise ImageDecodeError(
            f'undecodable compressed image (format {msg.format!r}, {data.size} bytes)'
        )
    if 'jpeg' in msg.format.lower() or 'jpg' in msg.format.lower():
        return data.tobytes()
    return encode_jpeg(image, quality)


def raw_to_jpeg(msg: Image, quality: int) -> bytes:
    encoding = msg.encoding.lower()
    if encoding not in _RAW_ENCODINGS:
        raise ImageDecodeError(
            f'unsupported image encoding {msg.encoding!r} (supported: {", ".join(_RAW_ENCODINGS)})'
        )
    channels, conversion = _RAW_ENCODINGS[encoding]
    height, width, step = int(msg.height), int(msg.width), int(msg.step)
    if height == 0 or width == 0 or step < width * channels or len(msg.data) < step * height:
        raise ImageDecodeError(
            f'raw image of {len(msg.data)} bytes does not match '
            f'{width}x{height}, step {step}, {encoding}'
        )
    rows = np.frombuffer(bytes(msg.data), dtype=np.uint8)[: step * height].reshape(height, step)
    image = rows[:, : width * channels].reshape(height, width, channels)
    if conversion is not None:
        image = cv2.cvtColor(image, conversion)
    return encode_jpeg(image, quality)


def encode_jpeg(bgr: np.ndarray, quality: int) -> bytes:
    ok, buffer = cv2.imencode('.jpg', bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ImageDecodeError('JPEG encoding failed')
    return buffer.tobytes()
