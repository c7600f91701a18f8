# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""From a depth image to the coarse grid of depths memory keeps (DepthSamples).

Localisation only needs the range to what a text box or image region covers, so a
keyframe carries the median depth of each cell of a small grid instead of the image:
a few hundred numbers, not megabytes. The median ignores the speckle and the edges a
stereo or structured-light camera produces; pixels the camera could not measure (0, NaN,
inf) or outside its working range do not count, and a cell without any valid pixel is NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from waymark.memory.entries import DepthSamples

# Depth encodings of sensor_msgs/Image and the factor from their unit to metres:
# float32 metres (ZED, simulators), uint16 millimetres (RealSense, OpenNI).
DEPTH_ENCODINGS = {'32FC1': 1.0, '16UC1': 1e-3, 'mono16': 1e-3}


@dataclass(frozen=True)
class DepthGrid:
    """How a depth image is reduced: a columns x rows grid, depths kept within range."""

    columns: int = 16
    rows: int = 12
    min_range_m: float = 0.2
    max_range_m: float = 20.0
    # Cells of a large image are read with a pixel stride so that each counts at most
    # about this many pixels: the median of a few hundred is as good, and far cheaper.
    max_pixels_per_cell: int = 1024

    def __post_init__(self) -> None:
        if not (1 <= self.columns <= 256 and 1 <= self.rows <= 256):
            raise ValueError(
                f'depth grid must be 1..256 cells each way, got {self.columns}x{self.rows}'
            )
        low, high = self.min_range_m, self.max_range_m
        if not (math.isfinite(low) and math.isfinite(high) and 0.0 <= low < high):
            raise ValueError(
                f'depth range must satisfy 0 <= min_range_m < max_range_m, got [{low}, {high}]'
            )
        if self.max_pixels_per_cell < 1:
            raise ValueError(f'max_pixels_per_cell must be >= 1, got {self.max_pixels_per_cell}')

    def reduce(self, depth: np.ndarray, scale: float = 1.0) -> DepthSamples:
        """The grid's samples of a 2-D depth image whose values times `scale` are metres.

        The image must have at least one pixel per cell; cells split it as evenly as the
        pixel counts allow.
        """
        if depth.ndim != 2:
            raise ValueError(f'a depth image is 2-D, got shape {depth.shape}')
        height, width = depth.shape
        if width < self.columns or height < self.rows:
            raise ValueError(
                f'depth image {width}x{height} is smaller than the {self.columns}x{self.rows} grid'
            )
        per_cell = height * width / (self.rows * self.columns)
        stride = max(1, math.ceil(math.sqrt(per_cell / self.max_pixels_per_cell)))
        metres = depth[::stride, ::stride].astype(np.float32) * np.float32(scale)
        height, width = metres.shape
        with np.errstate(invalid='ignore'):
            valid = (metres >= self.min_range_m) & (metres <= self.max_range_m)
        # Invalid pixels become +inf, so that sorting puts each cell's valid ones first.
        metres = np.where(valid, metres, np.inf)
        row_edges = _edges(height, self.rows)
        column_edges = _edges(width, self.columns)
        cell_h = int(np.diff(row_edges).max())
        cell_w = int(np.diff(column_edges).max())
        # Each cell's pixels in one row of a padded array: one sort does all cells.
        cells = np.full((self.rows, self.columns, cell_h, cell_w), np.inf, dtype=np.float32)
        for r in range(self.rows):
            top, bottom = row_edges[r], row_edges[r + 1]
            for c in range(self.columns):
                left, right = column_edges[c], column_edges[c + 1]
                cells[r, c, : bottom - top, : right - left] = metres[top:bottom, left:right]
        flat = np.sort(cells.reshape(self.rows * self.columns, cell_h * cell_w), axis=1)
        counts = np.isfinite(flat).sum(axis=1)
        rows = np.arange(flat.shape[0])
        low = flat[rows, np.maximum(counts - 1, 0) // 2].astype(np.float64)
        high = flat[rows, counts // 2 - (counts == 0)].astype(np.float64)
        medians = np.where(counts > 0, (low + high) / 2.0, np.nan)
        return DepthSamples(self.columns, self.rows, tuple(float(v) for v in medians))


def depth_of_message(msg) -> tuple[np.ndarray, float]:
    """depth_image of a sensor_msgs/Image as rclpy or rosbags hands it over (both have
    the same fields)."""
    return depth_image(
        msg.encoding,
        msg.width,
        msg.height,
        msg.step,
        bytes(msg.data),
        big_endian=bool(msg.is_bigendian),
    )


def depth_image(
    encoding: str, width: int, height: int, step: int, data: bytes, big_endian: bool = False
) -> tuple[np.ndarray, float]:
    """A sensor_msgs/Image's depth pixels and the factor from their unit to metres.

    Raises ValueError on an encoding that is not depth, or data that does not fill the
    stated size.
    """
    scale = DEPTH_ENCODINGS.get(encoding)
    if scale is None:
        raise ValueError(
            f'depth encoding {encoding!r} not supported; expected one of {sorted(DEPTH_ENCODINGS)}'
        )
    dtype = np.dtype(np.float32 if encoding == '32FC1' else np.uint16)
    dtype = dtype.newbyteorder('>' if big_endian else '<')
    row_bytes = width * dtype.itemsize
    if width <= 0 or height <= 0 or step < row_bytes or len(data) < step * height:
        raise ValueError(
            f'depth image data ({len(data)} bytes, step {step}) does not fill {width}x{height} '
            f'{encoding}'
        )
    rows = np.frombuffer(data, dtype=np.uint8, count=step * height).reshape(height, step)
    pixels = rows[:, :row_bytes].copy().view(dtype).reshape(height, width)
    return pixels, scale


def _edges(length: int, parts: int) -> np.ndarray:
    """Boundaries that split `length` pixels into `parts` cells of near-equal size."""
    return np.linspace(0, length, parts + 1).round().astype(int)
