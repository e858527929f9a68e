"""Export a transformers ``MarianMTModel`` to the bundle's two ONNX graphs (see ``handler/model/bundle.py``).

The graphs are computed by small modules of our own that read the Hugging Face module's weights and redo
Marian's forward pass functionally (post-LN layers, ``sqrt(d_model)`` embedding scale, sinusoidal positions,
``final_logits_bias``), instead of tracing transformers' decoder with its cache classes:

* ``encoder.onnx`` runs the encoder and projects its output with every decoder layer's cross-attention key
  and value weights, so the decoder never re-projects the (constant) encoder output per step.
* ``decoder.onnx`` is one decoding step with a self-attention KV cache; the first step passes a past of
  length 0, so one graph serves every step (no merged ``If`` graph that quantization would not see into).

Every projection is written as ``x @ W_t`` with a pre-transposed weight, so each one is a ``MatMul`` whose
second input is an initializer (what ``onnxruntime.quantization.quantize_dynamic`` quantizes), and the
token embeddings are a ``Gather`` on an initializer. The export uses the TorchScript-based exporter
(``dynamo=False``): it handles the dynamic batch/source/past axes, including a past of length 0, without
the extra ``onnxscript`` dependency the dynamo exporter needs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from torch import nn

from handler.model import bundle
from handler.model.families import marian as marian_family

OPSET = 17


def _transposed(linear: nn.Linear) -> nn.Parameter:
    return nn.Parameter(linear.weight.detach().t().contiguous(), requires_grad=False)


def _bias(linear: nn.Linear, width: int) -> nn.Parameter:
    bias = linear.bias.detach() if linear.bias is not None else torch.zeros(width)
    return nn.Parameter(bias.clone(), requires_grad=False)


class _Projection(nn.Module):
    """``x @ W_t + b``: exported as ``MatMul`` (initializer weight) followed by ``Add``."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.weight_t = _transposed(linear)
        self.bias = _bias(linear, linear.out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(x, self.weight_t) + self.bias


class _LayerNorm(nn.Module):
    def __init__(self, norm: nn.LayerNorm) -> None:
        super().__init__()
        self.weight = nn.Parameter(norm.weight.detach().clone(), requires_grad=False)
        self.bias = nn.Parameter(norm.bias.detach().clone(), requires_grad=False)
        self.eps = norm.eps
        self.shape = norm.normalized_shape

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.layer_norm(x, self.shape, self.weight, self.bias, self.eps)


def _split_heads(x: torch.Tensor, heads: int, head_dim: int) -> torch.Tensor:
    """[batch, length, heads * head_dim] -> [batch, heads, length, head_dim]"""
    return x.reshape(x.shape[0], x.shape[1], heads, head_dim).transpose(1, 2)


def _merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[batch, heads, length, head_dim] -> [batch, length, heads * head_dim]"""
    x = x.transpose(1, 2)
    return x.reshape(x.shape[0], x.shape[1], x.shape[2] * x.shape[3])


def _attend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """Scaled dot-product attention; ``query`` is already multiplied by ``head_dim ** -0.5``."""
    scores = torch.matmul(query, key.transpose(2, 3))
    if bias is not None:
        scores = scores + bias
    return torch.matmul(torch.softmax(scores, dim=-1), value)


def _padding_bias(mask: torch.Tensor) -> torch.Tensor:
    """int64 [batch, src_len] (1 = token) -> float [batch, 1, 1, src_len]: 0 for tokens, float32 min for padding."""
    inverted = 1.0 - mask.to(torch.float32)
    return (inverted * torch.finfo(torch.float32).min)[:, None, None, :]


class _SelfAttention(nn.Module):
    def __init__(self, attention: nn.Module) -> None:
        super().__init__()
        self.heads = attention.num_heads
        self.head_dim = attention.head_dim
        self.scaling = attention.scaling
        self.q = _Projection(attention.q_proj)
        self.k = _Projection(attention.k_proj)
        self.v = _Projection(attention.v_proj)
        self.out = _Projection(attention.out_proj)

    def projected(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        query = _split_heads(self.q(x) * self.scaling, self.heads, self.head_dim)
        key = _split_heads(self.k(x), self.heads, self.head_dim)
        return query, key, _split_heads(self.v(x), self.heads, self.head_dim)


class _EncoderLayer(nn.Module):
    def __init__(self, layer: nn.Module, activation: nn.Module) -> None:
        super().__init__()
        self.attention = _SelfAttention(layer.self_attn)
        self.attention_norm = _LayerNorm(layer.self_attn_layer_norm)
        self.fc1 = _Projection(layer.fc1)
        self.fc2 = _Projection(layer.fc2)
        self.final_norm = _LayerNorm(layer.final_layer_norm)
        self.activation = activation

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        query, key, value = self.attention.projected(x)
        x = self.attention_norm(x + self.attention.out(_merge_heads(_attend(query, key, value, bias))))
        return self.final_norm(x + self.fc2(self.activation(self.fc1(x))))


class _DecoderLayer(nn.Module):
    def __init__(self, layer: nn.Module, activation: nn.Module) -> None:
        super().__init__()
        self.self_attention = _SelfAttention(layer.self_attn)
        self.self_norm = _LayerNorm(layer.self_attn_layer_norm)
        cross = layer.encoder_attn
        self.heads, self.head_dim, self.scaling = cross.num_heads, cross.head_dim, cross.scaling
        self.cross_q = _Projection(cross.q_proj)
        self.cross_out = _Projection(cross.out_proj)
        self.cross_norm = _LayerNorm(layer.encoder_attn_layer_norm)
        self.fc1 = _Projection(layer.fc1)
        self.fc2 = _Projection(layer.fc2)
        self.final_norm = _LayerNorm(layer.final_layer_norm)
        self.activation = activation

    def forward(
        self,
        x: torch.Tensor,
        past_key: torch.Tensor,
        past_value: torch.Tensor,
        cross_key: torch.Tensor,
        cross_value: torch.Tensor,
        cross_bias: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        query, key, value = self.self_attention.projected(x)
        key = torch.cat([past_key, key], dim=2)
        value = torch.cat([past_value, value], dim=2)
        # one new token attends to every earlier position: no causal mask is needed
        x = self.self_norm(x + self.self_attention.out(_merge_heads(_attend(query, key, value, None))))
        query = _split_heads(self.cross_q(x) * self.scaling, self.heads, self.head_dim)
        x = self.cross_norm(x + self.cross_out(_merge_heads(_attend(query, cross_key, cross_value, cross_bias))))
        x = self.final_norm(x + self.fc2(self.activation(self.fc1(x))))
        return x, key, value


def _activation(config: Any) -> nn.Module:
    from transformers.activations import ACT2FN

    return ACT2FN[config.activation_function]


def _check_supported(model: nn.Module) -> None:
    config = model.config
    if getattr(config, "normalize_before", False):
        raise ValueError("pre-LN Marian variants (normalize_before=True) are not supported; OPUS-MT models are post-LN")
    if getattr(config, "add_final_layer_norm", False) or getattr(model.model.decoder, "layer_norm", None) is not None:
        raise ValueError("Marian variants with a final decoder layer norm are not supported")
    if getattr(model.model.encoder, "layernorm_embedding", None) is not None:
        raise ValueError("Marian variants with an embedding layer norm are not supported")
    if config.d_model % config.decoder_attention_heads or config.d_model % config.encoder_attention_heads:
        raise ValueError(f"d_model {config.d_model} is not divisible by the attention head count")


class EncoderGraph(nn.Module):
    """input_ids, attention_mask -> cross_key.i, cross_value.i for every decoder layer i."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        _check_supported(model)
        config = model.config
        encoder = model.model.encoder
        self.embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.embed_tokens = nn.Parameter(encoder.embed_tokens.weight.detach().clone(), requires_grad=False)
        self.positions = nn.Parameter(encoder.embed_positions.weight.detach().clone(), requires_grad=False)
        activation = _activation(config)
        self.layers = nn.ModuleList(_EncoderLayer(layer, activation) for layer in encoder.layers)
        self.heads = config.decoder_attention_heads
        self.head_dim = config.d_model // self.heads
        self.cross_k = nn.ModuleList(_Projection(layer.encoder_attn.k_proj) for layer in model.model.decoder.layers)
        self.cross_v = nn.ModuleList(_Projection(layer.encoder_attn.v_proj) for layer in model.model.decoder.layers)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x = nn.functional.embedding(input_ids, self.embed_tokens) * self.embed_scale
        x = x + self.positions[: input_ids.shape[1]]
        bias = _padding_bias(attention_mask)
        for layer in self.layers:
            x = layer(x, bias)
        outputs: list[torch.Tensor] = []
        for key, value in zip(self.cross_k, self.cross_v, strict=True):
            outputs.append(_split_heads(key(x), self.heads, self.head_dim))
            outputs.append(_split_heads(value(x), self.heads, self.head_dim))
        return tuple(outputs)


class DecoderStepGraph(nn.Module):
    """One decoding step: (input_ids, encoder_attention_mask, past K/V..., cross K/V...) -> log_probs, present K/V.

    Positional arguments after the mask are ``past_key.0, past_value.0, past_key.1, ...`` followed by
    ``cross_key.0, cross_value.0, ...``; outputs are ``log_probs, present_key.0, present_value.0, ...``.
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        _check_supported(model)
        config = model.config
        decoder = model.model.decoder
        self.embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.embed_tokens = nn.Parameter(decoder.embed_tokens.weight.detach().clone(), requires_grad=False)
        self.positions = nn.Parameter(decoder.embed_positions.weight.detach().clone(), requires_grad=False)
        activation = _activation(config)
        self.layers = nn.ModuleList(_DecoderLayer(layer, activation) for layer in decoder.layers)
        self.lm_head_t = _transposed(model.lm_head)
        self.final_logits_bias = nn.Parameter(model.final_logits_bias.detach()[0].clone(), requires_grad=False)

    def forward(
        self, input_ids: torch.Tensor, encoder_attention_mask: torch.Tensor, *caches: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        count = len(self.layers)
        past, cross = caches[: 2 * count], caches[2 * count :]
        past_len = past[0].shape[2]
        x = nn.functional.embedding(input_ids, self.embed_tokens) * self.embed_scale
        x = x + self.positions[past_len : past_len + 1]
        cross_bias = _padding_bias(encoder_attention_mask)
        presents: list[torch.Tensor] = []
        for index, layer in enumerate(self.layers):
            x, key, value = layer(
                x, past[2 * index], past[2 * index + 1], cross[2 * index], cross[2 * index + 1], cross_bias
            )
            presents += [key, value]
        logits = torch.matmul(x[:, 0, :], self.lm_head_t) + self.final_logits_bias
        return (torch.log_softmax(logits, dim=-1), *presents)


def encoder_io_names(decoder_layers: int) -> tuple[list[str], list[str]]:
    """The encoder's input and output names: the Marian family's graph contract, declared once in the runtime."""
    contract = marian_family.graph_contract(decoder_layers)
    return list(contract.encoder_inputs), list(contract.encoder_outputs)


def decoder_io_names(decoder_layers: int) -> tuple[list[str], list[str]]:
    """The one-step decoder's input and output names, from the same contract."""
    contract = marian_family.graph_contract(decoder_layers)
    return list(contract.decoder_inputs), list(contract.decoder_outputs)


def export_graphs(model: nn.Module, out_dir: Path) -> tuple[Path, Path]:
    """Write ``encoder.onnx`` and ``decoder.onnx`` (FP32) for ``model`` into ``out_dir``; returns their paths."""
    model = model.eval()
    config = model.config
    layers = config.decoder_layers
    heads = config.decoder_attention_heads
    head_dim = config.d_model // heads
    out_dir.mkdir(parents=True, exist_ok=True)
    encoder_path, decoder_path = out_dir / bundle.ENCODER_ONNX, out_dir / bundle.DECODER_ONNX

    batch, src_len, past_len = 2, 5, 3  # example sizes; every one of these axes is dynamic in the graphs
    input_ids = torch.full((batch, src_len), 3, dtype=torch.long)
    attention_mask = torch.ones((batch, src_len), dtype=torch.long)
    attention_mask[1, -2:] = 0

    encoder = EncoderGraph(model).eval()
    enc_inputs, enc_outputs = encoder_io_names(layers)
    kv_axes = {0: "batch", 2: "src_len"}
    with torch.no_grad():
        torch.onnx.export(
            encoder,
            (input_ids, attention_mask),
            str(encoder_path),
            input_names=enc_inputs,
            output_names=enc_outputs,
            dynamic_axes={
                bundle.INPUT_IDS: {0: "batch", 1: "src_len"},
                bundle.ATTENTION_MASK: {0: "batch", 1: "src_len"},
                **{name: kv_axes for name in enc_outputs},
            },
            opset_version=OPSET,
            dynamo=False,
            do_constant_folding=True,
        )
        cross = encoder(input_ids, attention_mask)

    decoder = DecoderStepGraph(model).eval()
    dec_inputs, dec_outputs = decoder_io_names(layers)
    past = [torch.zeros((batch, heads, past_len, head_dim)) for _ in range(2 * layers)]
    step_ids = torch.full((batch, 1), 3, dtype=torch.long)
    dynamic_axes: dict[str, dict[int, str]] = {
        bundle.INPUT_IDS: {0: "batch"},
        bundle.ENCODER_ATTENTION_MASK: {0: "batch", 1: "src_len"},
        bundle.LOG_PROBS: {0: "batch"},
    }
    for i in range(layers):
        for name in (bundle.past_key(i), bundle.past_value(i)):
            dynamic_axes[name] = {0: "batch", 2: "past_len"}
        for name in (bundle.present_key(i), bundle.present_value(i)):
            dynamic_axes[name] = {0: "batch", 2: "present_len"}
        for name in (bundle.cross_key(i), bundle.cross_value(i)):
            dynamic_axes[name] = {0: "batch", 2: "src_len"}
    with torch.no_grad():
        torch.onnx.export(
            decoder,
            (step_ids, attention_mask, *past, *cross),
            str(decoder_path),
            input_names=dec_inputs,
            output_names=dec_outputs,
            dynamic_axes=dynamic_axes,
            opset_version=OPSET,
            dynamo=False,
            do_constant_folding=True,
        )
    return encoder_path, decoder_path
