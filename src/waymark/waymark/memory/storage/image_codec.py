# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Camera images to JPEG bytes and keyframe thumbnails, rejecting what cannot be decoded.

Shared by capture_node and the offline tools so that both store the same bytes.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image

# Width, height of the grayscale thumbnails the keyframe image criterion compares: small
# enough that noise averages out and a comparison costs nothing, large enough to see a
# person or a door in view.
THUMBNAIL_SIZE = (32, 24)

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


class ImageTooLargeError(ImageDecodeError):
    """An image over the size limits, refused before any pixel is decoded."""


@dataclass(frozen=True)
class ImageLimits:
    """What an image from outside may cost: a small PNG can decode to gigabytes."""

    max_bytes: int = 20_000_000
    max_pixels: int = 40_000_000


def check_image_limits(data: bytes, limits: ImageLimits) -> tuple[int, int]:
    """Width and height of compressed image bytes, read from the header alone.

    Raises ImageTooLargeError over either limit and ImageDecodeError when the header is not
    an image's, so that nothing is decoded that could exhaust memory.
    """
    if len(data) > limits.max_bytes:
        raise ImageTooLargeError(
            f'image of {len(data)} bytes is over the limit of {limits.max_bytes} bytes'
        )
    try:
        with Image.open(io.BytesIO(data)) as header:
            width, height = header.size
    except Image.DecompressionBombError as error:  # Pillow's own, far higher limit
        raise ImageTooLargeError(f'image is over the pixel limit: {error}') from error
    except (OSError, ValueError) as error:
        raise ImageDecodeError(f'cannot read the image header ({len(data)} bytes)') from error
    if width * height > limits.max_pixels:
        raise ImageTooLargeError(
            f'image of {width}x{height} pixels is over the limit of {limits.max_pixels} pixels'
        )
    return width, height


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
    return encode_jpeg(raw_to_bgr(encoding, width, height, step, data), quality)


def raw_to_bgr(encoding: str, width: int, height: int, step: int, data: bytes) -> np.ndarray:
    """A raw image as a BGR (or, for mono8, single-channel) array."""
    image, conversion = _raw_pixels(encoding, width, height, step, data)
    return image if conversion is None else cv2.cvtColor(image, conversion)


def _raw_pixels(
    encoding: str, width: int, height: int, step: int, data: bytes
) -> tuple[np.ndarray, int | None]:
    """The pixels as stored (height, width, channels) and the conversion to BGR."""
    check_encoding(encoding)
    channels, conversion = RAW_ENCODINGS[encoding.lower()]
    if height == 0 or width == 0 or step < width * channels or len(data) < step * height:
        raise ImageDecodeError(
            f'raw image of {len(data)} bytes does not match '
            f'{width}x{height}, step {step}, {encoding}'
        )
    rows = np.frombuffer(data, dtype=np.uint8)[: step * height].reshape(height, step)
    return rows[:, : width * channels].reshape(height, width, channels), conversion


def compressed_thumbnail(data: bytes) -> np.ndarray:
    """The grayscale thumbnail of a compressed image, values in [0, 1].

    JPEG is decoded at 1/8 scale straight from its DCT coefficients, several times
    cheaper than the full decode a stored keyframe needs.
    """
    buffer = np.frombuffer(data, dtype=np.uint8)
    gray = cv2.imdecode(buffer, cv2.IMREAD_REDUCED_GRAYSCALE_8) if buffer.size else None
    if gray is None:
        raise ImageDecodeError(f'undecodable compressed image ({buffer.size} bytes)')
    return _thumbnail(gray)


def raw_thumbnail(encoding: str, width: int, height: int, step: int, data: bytes) -> np.ndarray:
    """The grayscale thumbnail of a raw image, values in [0, 1].

    The pixels are shrunk first, so the colour conversion runs on 768 pixels, not millions.
    """
    image, conversion = _raw_pixels(encoding, width, height, step, data)
    small = cv2.resize(image, THUMBNAIL_SIZE, interpolation=cv2.INTER_AREA)
    if small.ndim == 3:
        small = cv2.cvtColor(small, conversion) if conversion is not None else small
        small = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
    return small.astype(np.float32) / 255.0


def _thumbnail(gray: np.ndarray) -> np.ndarray:
    small = cv2.resize(gray, THUMBNAIL_SIZE, interpolation=cv2.INTER_AREA)
    return small.astype(np.float32) / 255.0


def check_encoding(encoding: str) -> None:
    if encoding.lower() not in RAW_ENCODINGS:
        raise UnsupportedEncodingError(
            f'unsupported image encoding {encoding!r} (supported: {", ".join(RAW_ENCODINGS)})'
        )


def decode_image(data: bytes, limits: ImageLimits | None = None) -> np.ndarray:
    """JPEG or PNG bytes to an RGB uint8 array; ImageDecodeError (a ValueError) when they
    do not decode, ImageTooLargeError before decoding when `limits` are given and exceeded."""
    if limits is not None:
        check_image_limits(data, limits)
    buffer = np.frombuffer(data, dtype=np.uint8)
    bgr = cv2.imdecode(buffer, cv2.IMREAD_COLOR) if buffer.size else None
    if bgr is None:
        raise ImageDecodeError(f'cannot decode image ({len(data)} bytes)')
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def encode_jpeg(bgr: np.ndarray, quality: int) -> bytes:
    ok, buffer = cv2.imencode('.jpg', bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ImageDecodeError('JPEG encoding failed')
    return buffer.tobytes()
