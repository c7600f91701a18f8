# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The image view: a keyframe's SigLIP/CLIP image embedding, searched with the model's text
tower for descriptions and its image tower for photos; a segment keeps the mean direction
of its frames' embeddings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from waymark.memory.views.embedders import DeviceSettings, ImageTextEmbedder, ImageTextModel
from waymark.memory.views.view import Reading, View, ViewKind
from waymark.settings import setting

IMAGE_VIEW = 'image'


class ImageView(View):
    name = IMAGE_VIEW
    family = 'image'
    pools_frames = True
    image_queries = True

    def __init__(self, embedder: ImageTextModel) -> None:
        self.embedder = embedder

    @property
    def dim(self) -> int:
        return self.embedder.dim

    def embed_text(self, text: str) -> np.ndarray:
        return self.embedder.embed_texts([text])[0]

    def embed_image(self, image: np.ndarray) -> np.ndarray:
        return self.embedder.embed_images([image])[0]

    def read_frame(self, image: np.ndarray) -> Reading:
        return Reading(self.embed_image(image))

    def segment_vector(self, frame_vectors: Sequence[np.ndarray], text: str) -> np.ndarray | None:
        return mean_unit(frame_vectors)


def mean_unit(vectors: Sequence[np.ndarray]) -> np.ndarray | None:
    """The unit-length mean direction of some embeddings (float32), None when there are
    none or they cancel out. Each is normalised first, so no frame weighs more."""
    if len(vectors) == 0:
        return None
    stacked = np.stack([np.asarray(v, dtype=np.float64).ravel() for v in vectors])
    norms = np.linalg.norm(stacked, axis=1, keepdims=True)
    stacked = stacked[norms[:, 0] > 1e-12] / norms[norms[:, 0] > 1e-12]
    if not len(stacked):
        return None
    mean = stacked.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    if not math.isfinite(norm) or norm < 1e-6:
        return None
    return (mean / norm).astype(np.float32)


@dataclass(frozen=True)
class ImageViewSettings(DeviceSettings):
    image_model: str = setting(
        '', 'SigLIP/CLIP model id or local path for the image view; empty: off.'
    )


def load(settings: ImageViewSettings) -> ImageView | None:
    if not settings.image_model:
        return None
    return ImageView(ImageTextEmbedder(settings.image_model, device=settings.embedder_device))


KIND = ViewKind(ImageViewSettings, load)
