"""CSANMT's forward pass in PyTorch (from its TensorFlow weights) and its export to the bundle's two graphs.

The network is modelscope's ``models/nlp/csanmt/translation.py`` (1.40.2; T:<line> below), redone functionally:

* pre-norm Transformer layers (``layer_preproc=layer_norm``, ``layer_postproc=none``), layer-norm epsilon 1e-6
  with the biased variance (T:928), ReLU FFN (T:992), every linear ``x @ W[in, out] + b``; a final layer norm
  on the encoder, the semantic encoder and the decoder;
* self-attention with one fused ``qkv_transform`` (q, k, v in that order), cross-attention ``q_transform`` +
  ``kv_transform`` (k, v), queries scaled by ``head_dim ** -0.5``, masking bias -1e9 (T:1343-1366, 1184);
* encoder input: ``Shared_Embedding[ids] * sqrt(H)`` + tensor2tensor sinusoids ``[sin | cos]`` with
  ``inv_timescale_i = exp(-i * ln(1e4) / (H/2 - 1))`` from position 0, times the mask, then + the learned
  ``encoder_input_bias`` (so padded rows equal the bias, T:95-114); after every layer the rows are multiplied
  by the mask again (T:1041);
* the mask (T:100-105): ids with EOS 0 appended; 1 for the tokens and the first EOS, 0 for the padding after it
  (modelscope's "shifted" mask). The bundle's encoder takes that mask as ``attention_mask``;
* semantic encoder (``mini_xlm_encoder``): ``Shared_Semantic_Embedding[ids] * sqrt(H) * mask`` (no sinusoids, no
  input bias), layers with Shaw relative positions (``rpr_k``/``rpr_v`` indexed by ``clip(i - j, -R, R) + R``,
  R = ``max_relative_dis``, T:1063, 1252-1305), mask multiply after every layer, masked mean over positions
  -> ``pooling_layer`` linear -> layer norm: one ``[B, 1, H]`` vector (T:1086-1093);
* decoder: input ``Shared_Embedding[y_{t}] * sqrt(H)`` shifted right with a zero vector at position 0, plus
  the sinusoid of its position (T:474-483); every layer first adds the embedding augmentation
  ``W2 ReLU(W1 LN_l(s) + b1) + b2`` of the semantic vector s (T:1119-1123, 964-979), then self-attention,
  cross-attention and FFN; log-softmax of ``dec @ Shared_Embedding^T`` (no bias, T:510-511).

Graphs (contract: ``handler.model.families.csanmt.graph_contract``; names below):

* ``encoder.onnx``: input_ids, attention_mask -> cross_key.i, cross_value.i (``kv_transform`` of the encoder
  output, [B, heads, S, D]), semantic_bias.i (the augmentation term of decoder layer i, [B, 1, H]),
  encoder_states [B, S, H] and semantic_vector [B, 1, H]. Everything per sentence is computed here once.
* ``decoder.onnx``: one step with a KV cache; the step's position is ``past_len`` and its input is the zero
  vector when ``past_len == 0`` (the ``input_ids`` then are ignored).

Projections are ``MatMul`` on initializers (what INT8 dynamic quantization converts); the decoder holds the
shared embedding as a ``Gather`` table and, transposed, as the output projection, so ``build.quantize`` can
store it once. FP32 graphs are written with ONNX external data (the full-size encoder is close to protobuf's
2 GB limit).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from build.families.csanmt.checkpoint import ROOT, CsanmtConfig
from handler.model import bundle
from handler.model.families import csanmt as csanmt_family

OPSET = 17
LAYER_NORM_EPSILON = 1e-6
MASK_BIAS = -1e9
MAX_TIMESCALE = 1.0e4


def _parameter(array: Any) -> nn.Parameter:
    return nn.Parameter(torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32)), requires_grad=False)


class _Linear(nn.Module):
    """``x @ W + b`` with modelscope's ``[in, out]`` matrix: a MatMul on an initializer, then Add."""

    def __init__(self, weights: dict[str, Any], prefix: str) -> None:
        super().__init__()
        self.weight = _parameter(weights[f"{prefix}/matrix"])
        self.bias = _parameter(weights[f"{prefix}/bias"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(x, self.weight) + self.bias


class _LayerNorm(nn.Module):
    def __init__(self, weights: dict[str, Any], prefix: str) -> None:
        super().__init__()
        self.scale = _parameter(weights[f"{prefix}/layer_norm_scale"])
        self.offset = _parameter(weights[f"{prefix}/layer_norm_offset"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.layer_norm(x, self.scale.shape, self.scale, self.offset, LAYER_NORM_EPSILON)


class _Ffn(nn.Module):
    def __init__(self, weights: dict[str, Any], prefix: str) -> None:
        super().__init__()
        self.input = _Linear(weights, f"{prefix}/ffn_layer/input_layer/linear")
        self.output = _Linear(weights, f"{prefix}/ffn_layer/output_layer/linear")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output(torch.relu(self.input(x)))


def _split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """[B, L, H] -> [B, heads, L, H / heads]"""
    return x.reshape(x.shape[0], x.shape[1], heads, -1).transpose(1, 2)


def _merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[B, heads, L, D] -> [B, L, heads * D]"""
    x = x.transpose(1, 2)
    return x.reshape(x.shape[0], x.shape[1], -1)


def padding_bias(mask: torch.Tensor) -> torch.Tensor:
    """[B, S] (1 = attend) -> [B, 1, 1, S]: 0 or -1e9, as modelscope's ``attention_bias(..., 'masking')``."""
    return ((1.0 - mask.to(torch.float32)) * MASK_BIAS)[:, None, None, :]


def inverse_timescales(hidden: int) -> torch.Tensor:
    """tensor2tensor's ``exp(-i * ln(max/min) / (H/2 - 1))``, computed in float32 as TensorFlow does."""
    count = hidden // 2
    increment = np.float32(math.log(MAX_TIMESCALE)) / (np.float32(count) - np.float32(1.0))
    return torch.from_numpy(np.exp(np.arange(count, dtype=np.float32) * -increment).astype(np.float32))


def timing_signal(positions: torch.Tensor, inverse: torch.Tensor) -> torch.Tensor:
    """float positions [B, L] -> [B, L, H] sinusoids ``[sin | cos]``."""
    scaled = positions[..., None] * inverse
    return torch.cat([torch.sin(scaled), torch.cos(scaled)], dim=-1)


class _SelfAttention(nn.Module):
    def __init__(self, weights: dict[str, Any], prefix: str, heads: int, relative: int | None = None) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = _Linear(weights, f"{prefix}/qkv_transform")
        self.out = _Linear(weights, f"{prefix}/output_transform")
        self.relative = relative
        if relative is not None:
            self.rpr_k = _parameter(weights[f"{prefix}/rpr_k"])
            self.rpr_v = _parameter(weights[f"{prefix}/rpr_v"])

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """[B, L, H] -> scaled queries, keys, values, each [B, heads, L, D]."""
        query, key, value = torch.chunk(self.qkv(x), 3, dim=-1)
        query, key, value = (_split_heads(part, self.heads) for part in (query, key, value))
        return query * (query.shape[-1] ** -0.5), key, value

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        query, key, value = self.project(x)
        scores = torch.matmul(query, key.transpose(2, 3))
        if self.relative is None:
            return self.out(_merge_heads(torch.matmul(torch.softmax(scores + bias, dim=-1), value)))
        # Shaw et al.: per (query i, key j) the vectors rpr[clip(i - j, -R, R) + R], as modelscope's create_rpr
        length = x.shape[1]
        positions = torch.cumsum(torch.ones_like(x[0, :, 0], dtype=torch.int64), dim=0) - 1  # [L]
        distance = torch.clamp(positions[:, None] - positions[None, :] + self.relative, 0, 2 * self.relative)
        rpr_k, rpr_v = self.rpr_k[distance], self.rpr_v[distance]  # [L, L, D]
        batch, heads = query.shape[0], query.shape[1]
        by_query = query.permute(2, 0, 1, 3).reshape(length, batch * heads, -1)  # [L, B*heads, D]
        relative_scores = torch.matmul(by_query, rpr_k.transpose(1, 2))  # [L, B*heads, L]
        scores = scores + relative_scores.reshape(length, batch, heads, length).permute(1, 2, 0, 3)
        weights = torch.softmax(scores + bias, dim=-1)
        context = torch.matmul(weights, value)
        by_query_weights = weights.permute(2, 0, 1, 3).reshape(length, batch * heads, length)
        relative_context = torch.matmul(by_query_weights, rpr_v)  # [L, B*heads, D]
        context = context + relative_context.reshape(length, batch, heads, -1).permute(1, 2, 0, 3)
        return self.out(_merge_heads(context))


class _EncoderLayer(nn.Module):
    def __init__(self, weights: dict[str, Any], prefix: str, heads: int, relative: int | None = None) -> None:
        super().__init__()
        self.attention_norm = _LayerNorm(weights, f"{prefix}/layer_norm")
        self.attention = _SelfAttention(weights, f"{prefix}/encoder_self_attention", heads, relative)
        self.ffn_norm = _LayerNorm(weights, f"{prefix}/layer_norm_1")
        self.ffn = _Ffn(weights, prefix)

    def forward(self, x: torch.Tensor, bias: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), bias)
        x = x + self.ffn(self.ffn_norm(x))
        return x * mask


class _Augmentation(nn.Module):
    """Decoder layer l's embedding augmentation term ``W2 ReLU(W1 LN_l(s) + b1) + b2`` of the semantic vector."""

    def __init__(self, weights: dict[str, Any], prefix: str) -> None:
        super().__init__()
        self.norm = _LayerNorm(weights, f"{prefix}/layer_norm")
        self.input = _Linear(weights, f"{prefix}/embedding_augmentation_layer/input_layer/linear")
        self.output = _Linear(weights, f"{prefix}/embedding_augmentation_layer/output_layer/linear")

    def forward(self, semantic: torch.Tensor) -> torch.Tensor:
        return self.output(torch.relu(self.input(self.norm(semantic))))


class _DecoderLayer(nn.Module):
    def __init__(self, weights: dict[str, Any], prefix: str, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.self_norm = _LayerNorm(weights, f"{prefix}/layer_norm_1")
        self.self_attention = _SelfAttention(weights, f"{prefix}/decoder_self_attention", heads)
        self.cross_norm = _LayerNorm(weights, f"{prefix}/layer_norm_2")
        self.cross_q = _Linear(weights, f"{prefix}/encdec_attention/q_transform")
        self.cross_kv = _Linear(weights, f"{prefix}/encdec_attention/kv_transform")
        self.cross_out = _Linear(weights, f"{prefix}/encdec_attention/output_transform")
        self.ffn_norm = _LayerNorm(weights, f"{prefix}/layer_norm_3")
        self.ffn = _Ffn(weights, prefix)

    def cross_key_value(self, encoder_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        key, value = torch.chunk(self.cross_kv(encoder_states), 2, dim=-1)
        return _split_heads(key, self.heads), _split_heads(value, self.heads)

    def forward(
        self,
        x: torch.Tensor,
        augmentation: torch.Tensor,
        past_key: torch.Tensor,
        past_value: torch.Tensor,
        self_bias: torch.Tensor | None,
        cross_key: torch.Tensor,
        cross_value: torch.Tensor,
        cross_bias: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = x + augmentation
        query, key, value = self.self_attention.project(self.self_norm(x))
        key = torch.cat([past_key, key], dim=2)
        value = torch.cat([past_value, value], dim=2)
        scores = torch.matmul(query, key.transpose(2, 3))
        if self_bias is not None:
            scores = scores + self_bias
        context = torch.matmul(torch.softmax(scores, dim=-1), value)
        x = x + self.self_attention.out(_merge_heads(context))
        query = _split_heads(self.cross_q(self.cross_norm(x)), self.heads)
        query = query * (query.shape[-1] ** -0.5)
        scores = torch.matmul(query, cross_key.transpose(2, 3)) + cross_bias
        x = x + self.cross_out(_merge_heads(torch.matmul(torch.softmax(scores, dim=-1), cross_value)))
        x = x + self.ffn(self.ffn_norm(x))
        return x, key, value


class CsanmtNetwork(nn.Module):
    """The whole network from modelscope-named weights; the reference the graphs are checked against."""

    inverse: torch.Tensor  # the sinusoids' inverse timescales (a buffer)

    def __init__(self, config: CsanmtConfig, weights: dict[str, Any]) -> None:
        super().__init__()
        self.config = config
        heads, relative = config.num_heads, config.max_relative_dis
        self.embed_scale = config.hidden_size**0.5
        self.embedding = _parameter(weights[f"{ROOT}/Shared_Embedding/Weights"])
        self.input_bias = _parameter(weights[f"{ROOT}/encoder_input_bias"])
        self.encoder_layers = nn.ModuleList(
            _EncoderLayer(weights, f"{ROOT}/encoder/layer_{i}", heads) for i in range(config.num_encoder_layers)
        )
        self.encoder_norm = _LayerNorm(weights, f"{ROOT}/encoder/layer_norm")
        self.semantic_embedding = _parameter(weights[f"{ROOT}/Shared_Semantic_Embedding/Weights"])
        self.semantic_layers = nn.ModuleList(
            _EncoderLayer(weights, f"{ROOT}/mini_xlm_encoder/layer_{i}", heads, relative)
            for i in range(config.num_semantic_encoder_layers)
        )
        self.pooling = _Linear(weights, f"{ROOT}/mini_xlm_encoder/pooling_layer/linear")
        self.semantic_norm = _LayerNorm(weights, f"{ROOT}/mini_xlm_encoder/layer_norm")
        self.augmentations = nn.ModuleList(
            _Augmentation(weights, f"{ROOT}/decoder/layer_{i}") for i in range(config.num_decoder_layers)
        )
        self.decoder_layers = nn.ModuleList(
            _DecoderLayer(weights, f"{ROOT}/decoder/layer_{i}", heads) for i in range(config.num_decoder_layers)
        )
        self.decoder_norm = _LayerNorm(weights, f"{ROOT}/decoder/layer_norm")
        # the output projection: the shared embedding transposed, a separate initializer so that the quantizer
        # sees a MatMul weight (and build.quantize.share_tied_embedding can keep only its INT8 copy)
        self.projection = _parameter(weights[f"{ROOT}/Shared_Embedding/Weights"].T)
        self.register_buffer("inverse", inverse_timescales(config.hidden_size), persistent=False)

    # ------------------------------------------------------------------------------------------- encoders
    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(encoder states [B, S, H] after the final layer norm, semantic vector [B, 1, H])."""
        mask = attention_mask.to(torch.float32)[..., None]
        bias = padding_bias(attention_mask)
        positions = torch.cumsum(torch.ones_like(attention_mask, dtype=torch.float32), dim=1) - 1.0
        x = nn.functional.embedding(input_ids, self.embedding) * self.embed_scale
        x = (x + timing_signal(positions, self.inverse)) * mask + self.input_bias
        for layer in self.encoder_layers:
            x = layer(x, bias, mask)
        states = self.encoder_norm(x)
        s = nn.functional.embedding(input_ids, self.semantic_embedding) * self.embed_scale * mask
        for layer in self.semantic_layers:
            s = layer(s, bias, mask)
        pooled = s.sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True)
        return states, self.semantic_norm(self.pooling(pooled))

    def per_sentence(
        self, states: torch.Tensor, semantic: torch.Tensor
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Every decoder layer's cross K/V ``[key.0, value.0, ...]`` and augmentation term ``[bias.0, ...]``."""
        cross: list[torch.Tensor] = []
        for layer in self.decoder_layers:
            cross.extend(cast(_DecoderLayer, layer).cross_key_value(states))
        return cross, [term(semantic) for term in self.augmentations]

    # ------------------------------------------------------------------------------------------- decoder
    def decode(
        self,
        inputs: torch.Tensor,
        positions: torch.Tensor,
        past: list[torch.Tensor],
        cross: list[torch.Tensor],
        augmentations: list[torch.Tensor],
        encoder_attention_mask: torch.Tensor,
        self_bias: torch.Tensor | None,
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Decoder input vectors [B, T, H] at float ``positions`` [B, T] -> log-probs [B, T, V], presents."""
        x = inputs + timing_signal(positions, self.inverse)
        cross_bias = padding_bias(encoder_attention_mask)
        presents: list[torch.Tensor] = []
        for index, layer in enumerate(self.decoder_layers):
            x, key, value = layer(
                x,
                augmentations[index],
                past[2 * index],
                past[2 * index + 1],
                self_bias,
                cross[2 * index],
                cross[2 * index + 1],
                cross_bias,
            )
            presents += [key, value]
        logits = torch.matmul(self.decoder_norm(x), self.projection)
        return torch.log_softmax(logits, dim=-1), presents

    def empty_past(self, batch: int) -> list[torch.Tensor]:
        shape = (batch, self.config.num_heads, 0, self.config.head_dim)
        return [torch.zeros(shape) for _ in range(2 * self.config.num_decoder_layers)]

    def teacher_forced(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, targets: torch.Tensor
    ) -> torch.Tensor:
        """Log-probs [B, T, V] of every position when the decoder reads ``targets`` [B, T] shifted right.

        Position t's input is ``targets[:, t - 1]`` (position 0: the zero vector), as modelscope's training and
        prefix decoding compute it: all positions at once with a causal mask, no cache.
        """
        states, semantic = self.encode(input_ids, attention_mask)
        cross, augmentations = self.per_sentence(states, semantic)
        embedded = nn.functional.embedding(targets, self.embedding) * self.embed_scale
        inputs = nn.functional.pad(embedded, (0, 0, 1, 0))[:, :-1, :]
        length = targets.shape[1]
        positions = torch.arange(length, dtype=torch.float32)[None, :].expand(targets.shape[0], length)
        causal = torch.triu(torch.full((length, length), MASK_BIAS), diagonal=1)[None, None]
        log_probs, _ = self.decode(
            inputs, positions, self.empty_past(targets.shape[0]), cross, augmentations, attention_mask, causal
        )
        return log_probs


class EncoderGraph(nn.Module):
    """input_ids, attention_mask -> cross K/V per decoder layer, semantic biases, encoder states, semantic vector."""

    def __init__(self, network: CsanmtNetwork) -> None:
        super().__init__()
        self.network = network

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        states, semantic = self.network.encode(input_ids, attention_mask)
        cross, augmentations = self.network.per_sentence(states, semantic)
        return (*cross, *augmentations, states, semantic)


class DecoderStepGraph(nn.Module):
    """One step: (input_ids, encoder_attention_mask, past K/V..., cross K/V..., semantic biases...) -> log_probs,
    present K/V...; the position is past_len, and the input is the zero vector at position 0."""

    def __init__(self, network: CsanmtNetwork) -> None:
        super().__init__()
        self.network = network
        # the decoder's own copy of the table (the encoder graph holds another): a Gather on an initializer
        self.embedding = nn.Parameter(network.embedding.detach().clone(), requires_grad=False)

    def forward(
        self, input_ids: torch.Tensor, encoder_attention_mask: torch.Tensor, *caches: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        layers = self.network.config.num_decoder_layers
        past, cross, augmentations = caches[: 2 * layers], caches[2 * layers : 4 * layers], caches[4 * layers :]
        # past_len per row, as a tensor (so the graph keeps it dynamic): the sum of ones over the past axis
        past_len = torch.ones_like(past[0][:, 0, :, 0]).sum(dim=1, keepdim=True)  # [B, 1]
        started = torch.clamp(past_len, max=1.0)[..., None]  # 0 at position 0: the shift-right zero vector
        inputs = nn.functional.embedding(input_ids, self.embedding) * self.network.embed_scale * started
        log_probs, presents = self.network.decode(
            inputs, past_len, list(past), list(cross), list(augmentations), encoder_attention_mask, None
        )
        return (log_probs[:, 0, :], *presents)


def encoder_io_names(layers: int) -> tuple[list[str], list[str]]:
    """The encoder's names: the CSANMT family's graph contract (cross K/V, semantic biases, verification outputs)."""
    contract = csanmt_family.graph_contract(layers)
    return list(contract.encoder_inputs), list(contract.encoder_outputs)


def decoder_io_names(layers: int) -> tuple[list[str], list[str]]:
    """The one-step decoder's names, from the same contract."""
    contract = csanmt_family.graph_contract(layers)
    return list(contract.decoder_inputs), list(contract.decoder_outputs)


def _attach_weights(model: Any, weights: Mapping[str, torch.Tensor], target: Path) -> None:
    """Turn the graph inputs named like ``weights`` into initializers stored in ``<target>.data``, one at a time.

    The graph is exported without its parameters (``export_params=False``), so no in-memory copy of the weights
    is made (at full size the exporter's proto and its serialized bytes would add 2 x 1.9 GB to the 2.3 GB
    network); each weight is written straight from its PyTorch tensor into the external data file.
    """
    from onnx import TensorProto, helper

    graph = model.graph
    data = target.with_name(f"{target.name}.data")
    kept = [value for value in graph.input if value.name not in weights]
    used = [value.name for value in graph.input if value.name in weights]
    offset = 0
    with data.open("wb") as out:
        for name in used:
            array = weights[name].detach().contiguous().numpy()
            tensor = TensorProto(name=name, data_type=helper.np_dtype_to_tensor_dtype(array.dtype), dims=array.shape)
            raw = array.tobytes()
            out.write(raw)
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (("location", data.name), ("offset", str(offset)), ("length", str(len(raw)))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            graph.initializer.append(tensor)
            offset += len(raw)
            del raw, array
    del graph.input[:]
    graph.input.extend(kept)


def _export(
    module: nn.Module,
    args: tuple[torch.Tensor, ...],
    target: Path,
    names: tuple[list[str], list[str]],
    axes: dict[str, dict[int, str]],
) -> None:
    """TorchScript-based export (as ``build.families.marian.graphs``) of the structure, then the weights as external
    data."""
    import onnx

    weights = dict(module.named_parameters())
    for stale in (target, target.with_name(f"{target.name}.data")):
        stale.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="csanmt-export-", dir=target.parent) as scratch:
        raw = Path(scratch) / target.name
        torch.onnx.export(
            module,
            args,
            str(raw),
            export_params=False,
            input_names=names[0],
            output_names=names[1],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
            do_constant_folding=True,
        )
        model = onnx.load(str(raw))
    _attach_weights(model, weights, target)
    onnx.save_model(model, str(target))
    onnx.checker.check_model(str(target))


def export_graphs(network: CsanmtNetwork, out_dir: Path) -> tuple[Path, Path]:
    """Write FP32 ``encoder.onnx`` and ``decoder.onnx`` (+ ``.data`` external weights) into ``out_dir``."""
    network = network.eval()
    config = network.config
    layers, heads, head_dim, hidden = (
        config.num_decoder_layers,
        config.num_heads,
        config.head_dim,
        config.hidden_size,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    encoder_path, decoder_path = out_dir / bundle.ENCODER_ONNX, out_dir / bundle.DECODER_ONNX
    batch, src_len, past_len = 2, 5, 3  # example sizes; every one of these axes is dynamic in the graphs
    input_ids = torch.full((batch, src_len), 3, dtype=torch.long)
    input_ids[:, -1] = 0
    attention_mask = torch.ones((batch, src_len), dtype=torch.long)
    attention_mask[1, -2:] = 0

    per_sentence_axes = {0: "batch", 2: "src_len"}
    enc_axes: dict[str, dict[int, str]] = {
        bundle.INPUT_IDS: {0: "batch", 1: "src_len"},
        bundle.ATTENTION_MASK: {0: "batch", 1: "src_len"},
        bundle.ENCODER_STATES: {0: "batch", 1: "src_len"},
        bundle.SEMANTIC_VECTOR: {0: "batch"},
    }
    for i in range(layers):
        enc_axes[bundle.cross_key(i)] = enc_axes[bundle.cross_value(i)] = per_sentence_axes
        enc_axes[bundle.semantic_bias(i)] = {0: "batch"}
    dec_axes: dict[str, dict[int, str]] = {
        bundle.INPUT_IDS: {0: "batch"},
        bundle.ENCODER_ATTENTION_MASK: {0: "batch", 1: "src_len"},
        bundle.LOG_PROBS: {0: "batch"},
    }
    for i in range(layers):
        dec_axes[bundle.past_key(i)] = dec_axes[bundle.past_value(i)] = {0: "batch", 2: "past_len"}
        dec_axes[bundle.present_key(i)] = dec_axes[bundle.present_value(i)] = {0: "batch", 2: "present_len"}
        dec_axes[bundle.cross_key(i)] = dec_axes[bundle.cross_value(i)] = per_sentence_axes
        dec_axes[bundle.semantic_bias(i)] = {0: "batch"}

    with torch.no_grad():
        encoder = EncoderGraph(network).eval()
        _export(encoder, (input_ids, attention_mask), encoder_path, encoder_io_names(layers), enc_axes)
        outputs = encoder(input_ids, attention_mask)
        cross, augmentations = outputs[: 2 * layers], outputs[2 * layers : 3 * layers]
        assert augmentations[0].shape == (batch, 1, hidden)
        past = [torch.zeros((batch, heads, past_len, head_dim)) for _ in range(2 * layers)]
        step_ids = torch.full((batch, 1), 3, dtype=torch.long)
        _export(
            DecoderStepGraph(network).eval(),
            (step_ids, attention_mask, *past, *cross, *augmentations),
            decoder_path,
            decoder_io_names(layers),
            dec_axes,
        )
    return encoder_path, decoder_path
