"""Marian configurations laid out like OPUS-MT's, for the models this project creates itself.

The default model (``build/training/train.py``), the tests' tiny random models and the benchmark's random model at
opus-mt-zh-en's size all follow OPUS-MT's conventions, so that they go through ``build.export`` like any
published checkpoint: the last id is ``<pad>`` and also the decoder start token, ``</s>`` is id 0, swish
activations, ``sqrt(d_model)``-scaled embeddings shared by encoder and decoder, and generation settings that
never produce ``<pad>`` and force ``</s>`` at the length limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

EOS_ID = 0


@dataclass(frozen=True)
class ModelShape:
    """A Marian shape. The default is the embedded model's: deep encoder, shallow decoder (CPU training, 1–2 vCPU
    inference)."""

    d_model: int = 256
    encoder_layers: int = 6
    decoder_layers: int = 3
    attention_heads: int = 4
    ffn_dim: int = 1024
    dropout: float = 0.1
    max_positions: int = 512


def marian_config(vocab_size: int, shape: ModelShape, *, tie_word_embeddings: bool = True) -> Any:
    """A ``transformers.MarianConfig`` of ``shape`` over ``vocab_size`` ids, ``<pad>`` (= decoder start) last."""
    from transformers import MarianConfig

    pad = vocab_size - 1
    return MarianConfig(
        vocab_size=vocab_size,
        decoder_vocab_size=vocab_size,
        d_model=shape.d_model,
        encoder_layers=shape.encoder_layers,
        decoder_layers=shape.decoder_layers,
        encoder_attention_heads=shape.attention_heads,
        decoder_attention_heads=shape.attention_heads,
        encoder_ffn_dim=shape.ffn_dim,
        decoder_ffn_dim=shape.ffn_dim,
        max_position_embeddings=shape.max_positions,
        dropout=shape.dropout,
        attention_dropout=0.0,
        activation_dropout=0.0,
        activation_function="swish",
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=tie_word_embeddings,
        pad_token_id=pad,
        eos_token_id=EOS_ID,
        decoder_start_token_id=pad,
        forced_eos_token_id=EOS_ID,
    )


def generation_config(config: Any, num_beams: int = 4) -> Any:
    """OPUS-MT's generation settings for a model of ``config``: never ``<pad>``, ``</s>`` forced at the limit."""
    from transformers import GenerationConfig

    pad = config.pad_token_id
    return GenerationConfig(
        decoder_start_token_id=pad,
        eos_token_id=EOS_ID,
        pad_token_id=pad,
        forced_eos_token_id=EOS_ID,
        bad_words_ids=[[pad]],
        max_length=config.max_position_embeddings,
        num_beams=num_beams,
    )


def new_model(config: Any, seed: int) -> Any:
    """A randomly initialised ``MarianMTModel`` of ``config`` (reproducible from ``seed``) with its generation
    settings."""
    import torch
    from transformers import MarianMTModel

    torch.manual_seed(seed)
    model = MarianMTModel(config)
    model.generation_config = generation_config(config)
    return model
