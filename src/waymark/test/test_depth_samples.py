# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import math
import time

import numpy as np
import pytest

from waymark.memory.ingest.depth import DepthGrid, depth_image


def grid_of(samples) -> np.ndarray:
    return np.asarray(samples.metres).reshape(samples.rows, samples.columns)


def test_each_cell_is_the_median_of_its_valid_pixels():
    depth = np.zeros((4, 6), dtype=np.float32)
    depth[:2, :3] = [[1.0, 2.0, 9.0], [1.5, np.nan, 0.0]]  # median of 1, 1.5, 2, 9 = 1.75
    depth[:2, 3:] = np.inf  # nothing measured
    depth[2:, :3] = 3.0
    depth[2:, 3:] = [[4.0, 50.0, 4.0], [4.0, 0.05, 4.0]]  # out of range: 50 and 0.05
    samples = DepthGrid(columns=2, rows=2, min_range_m=0.2, max_range_m=20.0).reduce(depth)
    cells = grid_of(samples)
    assert cells[0, 0] == pytest.approx(1.75)
    assert math.isnan(cells[0, 1])
    assert cells[1, 0] == pytest.approx(3.0)
    assert cells[1, 1] == pytest.approx(4.0)


def test_millimetres_become_metres_and_zero_is_unknown():
    pixels = np.array([[0, 1500], [2500, 0]], dtype=np.uint16)
    data = pixels.astype('<u2').tobytes()
    image, scale = depth_image('16UC1', 2, 2, 4, data)
    samples = DepthGrid(columns=2, rows=1).reduce(image, scale)
    assert grid_of(samples)[0].tolist() == pytest.approx([2.5, 1.5])


def test_row_padding_and_byte_order_are_honoured():
    pixels = np.array([[1.0, 2.0], [3.0, 4.0]], dtype='>f4')
    padded = b''.join(row.tobytes() + b'\x00' * 4 for row in pixels)
    image, scale = depth_image('32FC1', 2, 2, 12, padded, big_endian=True)
    assert scale == 1.0
    assert image.tolist() == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize(
    'encoding, width, height, step, size',
    [
        ('rgb8', 2, 2, 6, 12),  # not a depth image
        ('32FC1', 2, 2, 8, 12),  # short data
        ('16UC1', 4, 2, 4, 8),  # step shorter than a row
        ('32FC1', 0, 2, 0, 0),
    ],
)
def test_bad_depth_images_are_refused_with_a_reason(encoding, width, height, step, size):
    with pytest.raises(ValueError):
        depth_image(encoding, width, height, step, bytes(size))


def test_an_image_smaller_than_the_grid_or_not_2d_is_refused():
    with pytest.raises(ValueError, match='smaller'):
        DepthGrid(columns=16, rows=12).reduce(np.ones((8, 8), dtype=np.float32))
    with pytest.raises(ValueError, match='2-D'):
        DepthGrid().reduce(np.ones((48, 64, 3), dtype=np.float32))


@pytest.mark.parametrize(
    'config',
    [
        dict(columns=0),
        dict(rows=1000),
        dict(min_range_m=5.0, max_range_m=5.0),
        dict(min_range_m=-1.0),
        dict(max_range_m=math.inf),
        dict(max_pixels_per_cell=0),
    ],
)
def test_grid_parameters_are_validated(config):
    with pytest.raises(ValueError):
        DepthGrid(**config)


def test_uneven_cells_cover_every_pixel():
    # 10 columns into 3 cells: every column lands in exactly one cell.
    depth = np.tile(np.arange(1, 11, dtype=np.float32), (3, 1))
    samples = DepthGrid(columns=3, rows=1, max_range_m=20.0).reduce(depth)
    low, middle, high = grid_of(samples)[0]
    assert low < middle < high
    assert low == pytest.approx(2.0) and high == pytest.approx(9.0)


def test_a_full_resolution_image_is_reduced_quickly():
    rng = np.random.default_rng(1)
    depth = rng.uniform(0.5, 10.0, size=(720, 1280)).astype(np.float32)
    depth[rng.random(depth.shape) < 0.2] = np.nan
    grid = DepthGrid()
    start = time.perf_counter()
    samples = grid.reduce(depth)
    elapsed = time.perf_counter() - start
    assert np.all(np.isfinite(samples.metres))
    assert elapsed < 1.0, f'{elapsed:.3f} s for one 1280x720 image'
