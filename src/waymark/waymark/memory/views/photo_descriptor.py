# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The photo view: what a keyframe looks like, without learned weights.

A thumbnail's colours (an HSV histogram) and the directions of its edges (a histogram of
gradient orientations, weighted by their strength), over the whole picture and over a
coarse grid of cells, each histogram square-rooted and the whole L2-normalised: the cosine
of two such vectors is a Bhattacharyya-like overlap of their histograms. It is coarse on
purpose: a landmark seen from a step aside keeps its colours and most of its edges, so it
ranks its entries high, and the local-feature matcher (photo_rerank) then tells the
entry that shows the same thing from one that merely has its colours. It cannot embed a
description, so text searches leave it out.

Any machine can keep it (numpy and OpenCV, well under a millisecond per keyframe), so a
photo can be searched for where no image-text model runs; with one, both views are fused
by reciprocal rank like the other view families.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from waymark.memory.storage.image_codec import ImageDecodeError
from waymark.memory.views.image import mean_unit
from waymark.memory.views.view import Reading, View, ViewKind
from waymark.settings import setting

PHOTO_VIEW = 'photo'
# Longest vector the settings may ask for: a view row is this many floats per entry.
MAX_DIM = 2048
# OpenCV's 8-bit hue runs 0..179.
_HUE_RANGE = 180
# Vectors are padded with zeros to a multiple of this: product quantisers and a SCANN
# server split a vector into equal parts.
_DIM_MULTIPLE = 8


@dataclass(frozen=True)
class PhotoDescriptorParams:
    """How a picture becomes the photo view's vector. Changing any of these changes what
    the stored vectors mean: a memory keeps the settings it was written with (another
    vector size is refused when it opens)."""

    thumbnail_px: int = setting(
        64, 'Side of the square thumbnail the descriptor is made from.', low=16, high=256
    )
    min_side_px: int = setting(
        32,
        'Least side of a picture the photo view describes; a smaller search photo is refused '
        '(a smaller keyframe gets no photo row).',
        low=8,
        high=1024,
    )
    grid: int = setting(
        2, 'Cells per side of the grid the histograms are also taken over.', low=1, high=4
    )
    hue_bins: int = setting(8, 'Hue bins of the colour histogram.', low=2, high=32)
    saturation_bins: int = setting(3, 'Saturation bins of the colour histogram.', low=1, high=8)
    value_bins: int = setting(3, 'Brightness bins of the colour histogram.', low=1, high=8)
    orientation_bins: int = setting(
        8, 'Bins of the edge-orientation histogram (over 180 degrees).', low=2, high=36
    )
    edge_weight: float = setting(
        0.5,
        'Weight of the edge histograms against the colour histograms (0: colour alone).',
        low=0.0,
        high=4.0,
    )

    def __post_init__(self) -> None:
        if self.dim > MAX_DIM:
            raise ValueError(f'the photo view would have {self.dim} dimensions, over {MAX_DIM}')

    @property
    def dim(self) -> int:
        return -(-self.histogram_bins // _DIM_MULTIPLE) * _DIM_MULTIPLE

    @property
    def histogram_bins(self) -> int:
        colour = self.hue_bins * self.saturation_bins * self.value_bins
        return (colour + self.orientation_bins) * (1 + self.grid**2)


def describe(image: np.ndarray, params: PhotoDescriptorParams) -> np.ndarray:
    """The unit float32 descriptor of an RGB uint8 picture. ImageDecodeError (a
    ValueError) for one that is not an RGB picture or has a side under `min_side_px`."""
    if not (isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3):
        raise ImageDecodeError(f'the photo view needs an RGB uint8 picture, got {_shape(image)}')
    height, width = image.shape[:2]
    if image.shape[2] != 3 or min(height, width) < params.min_side_px:
        raise ImageDecodeError(
            f'the photo view needs an RGB picture of at least {params.min_side_px} pixels a '
            f'side, got {_shape(image)}'
        )
    side = params.thumbnail_px
    thumb = cv2.resize(image, (side, side), interpolation=cv2.INTER_AREA)
    hsv = cv2.cvtColor(thumb, cv2.COLOR_RGB2HSV)
    bins = (params.hue_bins, params.saturation_bins, params.value_bins)
    hue = np.minimum(hsv[..., 0].astype(np.int32) * bins[0] // _HUE_RANGE, bins[0] - 1)
    sat = hsv[..., 1].astype(np.int32) * bins[1] // 256
    val = hsv[..., 2].astype(np.int32) * bins[2] // 256
    colour = (hue * bins[1] + sat) * bins[2] + val

    gray = cv2.cvtColor(thumb, cv2.COLOR_RGB2GRAY).astype(np.float32)
    gx = cv2.Sobel(gray, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(gray, cv2.CV_32F, 0, 1, ksize=3)
    magnitude = np.hypot(gx, gy)
    angle = np.mod(np.arctan2(gy, gx), np.pi)  # an edge, not its sense
    orientation = np.minimum(
        (angle * params.orientation_bins / np.pi).astype(np.int32), params.orientation_bins - 1
    )

    cells = [(slice(None), slice(None))]
    edges = np.linspace(0, side, params.grid + 1).astype(int)
    cells += [
        (slice(edges[row], edges[row + 1]), slice(edges[col], edges[col + 1]))
        for row in range(params.grid)
        for col in range(params.grid)
    ]
    colour_bins = bins[0] * bins[1] * bins[2]
    parts = []
    for cell in cells:
        parts.append(_root(np.bincount(colour[cell].ravel(), minlength=colour_bins)))
        edge = np.bincount(
            orientation[cell].ravel(),
            weights=magnitude[cell].ravel(),
            minlength=params.orientation_bins,
        )
        parts.append(params.edge_weight * _root(edge))
    parts.append(np.zeros(params.dim - params.histogram_bins))
    vector = np.concatenate(parts)
    return (vector / np.linalg.norm(vector)).astype(np.float32)  # colour is never empty


def _root(histogram: np.ndarray) -> np.ndarray:
    """Square root of a histogram's shares: cosines then compare distributions (a flat
    cell, with no edges, gives zeros)."""
    total = float(histogram.sum())
    return np.sqrt(histogram / total) if total > 0 else np.zeros(len(histogram))


def _shape(image: object) -> str:
    return f'{getattr(image, "dtype", type(image).__name__)} {getattr(image, "shape", "")}'.strip()


class PhotoView(View):
    name = PHOTO_VIEW
    family = 'photo'
    pools_frames = True
    image_queries = True
    text_queries = False

    def __init__(self, params: PhotoDescriptorParams | None = None) -> None:
        self.params = params or PhotoDescriptorParams()

    @property
    def dim(self) -> int:
        return self.params.dim

    def embed_text(self, text: str) -> np.ndarray:
        raise ValueError('the photo view describes pictures and cannot embed text')

    def embed_image(self, image: np.ndarray) -> np.ndarray:
        return describe(image, self.params)

    def read_frame(self, image: np.ndarray) -> Reading:
        try:
            return Reading(describe(image, self.params))
        except ImageDecodeError:  # too small to describe: the frame keeps its other views
            return Reading(None)

    def segment_vector(self, frame_vectors: Sequence[np.ndarray], text: str) -> np.ndarray | None:
        return mean_unit(frame_vectors)


@dataclass(frozen=True)
class PhotoViewSettings:
    photo_view: bool = setting(
        False,
        'Keep the photo view (colour and edge histograms, no model) so a photo can be '
        'searched for without an image-text model; fused with the image view when both '
        'are on. Entries stored while it was off have no photo row.',
    )
    photo: PhotoDescriptorParams = field(default_factory=PhotoDescriptorParams)


def load(settings: PhotoViewSettings) -> PhotoView | None:
    return PhotoView(settings.photo) if settings.photo_view else None


KIND = ViewKind(PhotoViewSettings, load)
