# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Tiny, randomly initialised models for tests: no image-text weights ship on PyPI.

The tiny SigLIP has the real architecture and file layout, so the production loader
(AutoModel/AutoProcessor from a local path, offline) is what the tests exercise; only its
embeddings are meaningless.
"""

from __future__ import annotations

from pathlib import Path

# Words the tests' queries and signs use; anything else maps to <unk>.
_VOCABULARY_TEXT = [
    'a photo of a coffee shop',
    'the pharmacy sign next to the bakery',
    'red door blue chair green plant kitchen office hallway exit stairs',
    'where is the library bank cafe restaurant station',
]


def build_tiny_siglip(directory: str | Path, seed: int = 0) -> str:
    """Save a tiny SigLIP (32-d, 2 layers, 32 px images, 8 px patches) and its processor.

    Returns the absolute directory, loadable by AutoModel/AutoProcessor with
    HF_HUB_OFFLINE=1. The same seed gives the same weights.
    """
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        SiglipConfig,
        SiglipImageProcessor,
        SiglipModel,
        SiglipProcessor,
    )

    target = Path(directory).resolve()
    target.mkdir(parents=True, exist_ok=True)

    tokenizer = Tokenizer(models.WordLevel(unk_token='<unk>'))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    special = ['<pad>', '<unk>', '</s>']
    tokenizer.train_from_iterator(
        _VOCABULARY_TEXT, trainers.WordLevelTrainer(special_tokens=special, show_progress=False)
    )
    text_length = 16
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token='<pad>',
        unk_token='<unk>',
        eos_token='</s>',
        model_max_length=text_length,
    )

    config = SiglipConfig(
        text_config={
            'vocab_size': tokenizer.get_vocab_size(),
            'hidden_size': 32,
            'intermediate_size': 64,
            'num_hidden_layers': 2,
            'num_attention_heads': 2,
            'max_position_embeddings': text_length,
            'pad_token_id': tokenizer.token_to_id('<pad>'),
            'bos_token_id': tokenizer.token_to_id('</s>'),
            'eos_token_id': tokenizer.token_to_id('</s>'),
        },
        vision_config={
            'hidden_size': 32,
            'intermediate_size': 64,
            'num_hidden_layers': 2,
            'num_attention_heads': 2,
            'image_size': 32,
            'patch_size': 8,
        },
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = SiglipModel(config)
    model.save_pretrained(target)
    image_processor = SiglipImageProcessor(size={'height': 32, 'width': 32})
    SiglipProcessor(image_processor=image_processor, tokenizer=wrapped).save_pretrained(target)
    return str(target)
