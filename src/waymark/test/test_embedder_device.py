# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Where the embedders run: 'auto' takes a CUDA GPU when torch sees one, 'cuda' without
one fails at load with a clear error, and half precision is chosen only on the GPU.
These run on the CPU; torch's CUDA check is replaced where a test needs a GPU answer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from waymark.memory.factory import load_models
from waymark.memory.views.embedders import (
    EmbedderLoadError,
    ImageTextEmbedder,
    SentenceEmbedder,
    half_precision,
    resolve_device,
)
from waymark.memory.views.image import ImageView
from waymark.memory.views.registry import ViewSettings
from waymark.memory.views.text import TextView


def gpu():
    return True


def no_gpu():
    return False


@pytest.mark.parametrize(
    ('requested', 'has_gpu', 'runs_on'),
    [
        ('auto', gpu, 'cuda'),
        ('auto', no_gpu, 'cpu'),
        ('cpu', gpu, 'cpu'),
        ('cpu', no_gpu, 'cpu'),
        ('cuda', gpu, 'cuda'),
    ],
)
def test_the_device_a_model_runs_on(requested, has_gpu, runs_on):
    assert resolve_device(requested, has_gpu) == runs_on


def test_cuda_without_a_gpu_is_a_clear_error():
    with pytest.raises(EmbedderLoadError, match="device 'cuda' was asked for, but torch sees no"):
        resolve_device('cuda', no_gpu)


def test_an_unknown_device_is_refused_when_the_embedder_is_made():
    with pytest.raises(ValueError, match="device must be one of auto, cpu, cuda, got 'gpu'"):
        ImageTextEmbedder('some/model', device='gpu')
    with pytest.raises(ValueError, match="got 'cuda:0'"):
        SentenceEmbedder(device='cuda:0')


def test_half_precision_only_on_the_gpu():
    assert half_precision('cuda')
    assert not half_precision('cpu')


@pytest.fixture
def torch_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, 'is_available', no_gpu)


def test_auto_runs_on_the_cpu_in_fp32_without_a_gpu(tiny_siglip, torch_without_cuda):
    embedder = ImageTextEmbedder(tiny_siglip, device='auto', batch_size=2)
    vectors = embedder.embed_images([np.full((32, 32, 3), 90, dtype=np.uint8)])
    assert next(embedder._model.parameters()).dtype == torch.float32
    assert next(embedder._model.parameters()).device.type == 'cpu'
    assert vectors.dtype == np.float32
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0, abs=1e-5)


def test_cpu_gives_the_same_vectors_as_auto_without_a_gpu(tiny_siglip, torch_without_cuda):
    texts = ['a pharmacy sign']
    np.testing.assert_allclose(
        ImageTextEmbedder(tiny_siglip, device='cpu').embed_texts(texts),
        ImageTextEmbedder(tiny_siglip, device='auto').embed_texts(texts),
        atol=1e-6,
    )


def test_cuda_without_a_gpu_fails_at_load_for_both_embedders(tiny_siglip, torch_without_cuda):
    with pytest.raises(EmbedderLoadError, match="device 'cuda'"):
        ImageTextEmbedder(tiny_siglip, device='cuda').load()
    with pytest.raises(EmbedderLoadError, match="device 'cuda'"):
        SentenceEmbedder(device='cuda').load()


def test_the_memory_parameter_reaches_every_embedder(tiny_siglip):
    views = load_models(ViewSettings(image_model=tiny_siglip, embedder_device='cpu', ocr=False))
    devices = {type(view): view.embedder.device for view in views}
    assert devices == {ImageView: 'cpu', TextView: 'cpu'}
