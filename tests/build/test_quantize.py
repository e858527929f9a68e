"""Quantization settings, and what quantization leaves in the bundle's graphs."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from build.families.marian.graphs import export_graphs
from build.quantize import DEFAULT_QUANTIZATION, QuantizationSettings
from handler.model import bundle

QUANTIZED_MATMULS = {"MatMulInteger", "DynamicQuantizeMatMul", "MatMulIntegerToFloat"}


def test_default_preset_is_per_channel_reduced_range_with_int8_embeddings() -> None:
    assert DEFAULT_QUANTIZATION == QuantizationSettings(
        per_channel=True, reduce_range=True, weight_type="qint8", op_types=("MatMul", "Gather")
    )
    assert DEFAULT_QUANTIZATION.quantizes_embeddings
    assert DEFAULT_QUANTIZATION.to_dict() == {
        "per_channel": True,
        "reduce_range": True,
        "weight_type": "qint8",
        "op_types": ["MatMul", "Gather"],
        "share_tied_embedding": True,
        "activations": "per-row",
        "method": "onnxruntime.quantization.quantize_dynamic",
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weight_type": "int4"}, r"weight_type must be one of qint8, quint8; got 'int4'"),
        ({"op_types": ("MatMul", "Conv")}, r"op_types may hold only MatMul, Gather; got Conv"),
        ({"op_types": ("Gather",)}, r"op_types must include MatMul"),
        ({"op_types": ("MatMul", "MatMul")}, r"op_types lists an operator twice"),
        ({"op_types": ("MatMul",)}, r"share_tied_embedding needs Gather in op_types"),
        ({"activations": "per-batch"}, r"activations must be one of per-row, per-tensor; got 'per-batch'"),
    ],
)
def test_invalid_settings_are_refused_with_the_allowed_values(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        QuantizationSettings(**kwargs)


def _initializer_names(model: onnx.ModelProto) -> set[str]:
    return {tensor.name for tensor in model.graph.initializer}


def _count(model: onnx.ModelProto, op_types: set[str]) -> int:
    return sum(node.op_type in op_types for node in model.graph.node)


@pytest.mark.slow
def test_every_weight_matmul_is_quantized_in_both_graphs(
    tiny_marian_dir: Path, tiny_bundle_dir: Path, tmp_path: Path
) -> None:
    """The known optimum pitfall (a quantizer that silently quantizes nothing) cannot happen unnoticed."""
    from build.families.marian import load_checkpoint

    fp32 = export_graphs(load_checkpoint(tiny_marian_dir).model, tmp_path)
    for fp32_path, name in zip(fp32, (bundle.ENCODER_ONNX, bundle.DECODER_ONNX), strict=True):
        reference = onnx.load(str(fp32_path))
        weights = _initializer_names(reference)
        weight_matmuls = sum(n.op_type == "MatMul" and n.input[1] in weights for n in reference.graph.node)
        quantized = onnx.load(str(tiny_bundle_dir / name))
        assert _count(quantized, QUANTIZED_MATMULS) == weight_matmuls > 0, name
        int8_weights = _initializer_names(quantized)
        left_fp32 = [n.name for n in quantized.graph.node if n.op_type == "MatMul" and n.input[1] in int8_weights]
        assert left_fp32 == [], name
        # the embedding table is stored as 8-bit integers
        gathers = [n for n in quantized.graph.node if n.op_type == "Gather" and n.input[0] in int8_weights]
        tables = {t.name: t for t in quantized.graph.initializer}
        assert any(tables[n.input[0]].data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8) for n in gathers)


@pytest.mark.slow
def test_the_bundle_records_settings_and_is_under_half_the_fp32_size(tiny_bundle_dir: Path) -> None:
    manifest = json.loads((tiny_bundle_dir / bundle.MANIFEST).read_text(encoding="utf-8"))
    recorded = manifest["quantization"]
    assert {k: recorded[k] for k in DEFAULT_QUANTIZATION.to_dict()} == DEFAULT_QUANTIZATION.to_dict()
    graph_files = [*bundle.MODEL_FILES, *map(bundle.weights_file, bundle.MODEL_FILES), bundle.SHARED_EMBEDDING]
    graph_bytes = sum(manifest["files"][name]["bytes"] for name in graph_files if name in manifest["files"])
    assert recorded["int8_graph_bytes"] == graph_bytes
    # tiny graphs carry fixed overhead (node names, shapes); the default model is ~27% of its FP32 size
    assert recorded["int8_graph_bytes"] < 0.5 * recorded["fp32_graph_bytes"]


@pytest.mark.slow
def test_a_tied_embedding_is_stored_once_in_the_decoder_and_computes_the_same(
    tiny_marian_dir: Path, tmp_path: Path
) -> None:
    import numpy as np
    import torch

    from build import verify
    from build.families.marian import load_checkpoint
    from build.quantize import find_tied_embedding, quantize_graph
    from handler.model.families.marian.sessions import OnnxMarian

    checkpoint = load_checkpoint(tiny_marian_dir)
    model = checkpoint.model
    with torch.no_grad():  # the fixture's output projection is its own; tie it as in OPUS-MT and our model
        model.lm_head.weight = model.model.shared.weight
    encoder, decoder = export_graphs(model, tmp_path / "fp32")
    assert find_tied_embedding(decoder) == ("embed_tokens", "lm_head_t")
    assert find_tied_embedding(encoder) is None  # the encoder has no output projection
    shared = quantize_graph(decoder, tmp_path / "shared" / bundle.DECODER_ONNX, DEFAULT_QUANTIZATION)
    unshared_settings = QuantizationSettings(share_tied_embedding=False)
    twice = quantize_graph(decoder, tmp_path / "twice" / bundle.DECODER_ONNX, unshared_settings)

    graph = onnx.load(str(shared))
    vocab, d_model = model.config.vocab_size, model.config.d_model
    tables = [t.name for t in graph.graph.initializer if list(t.dims) in ([vocab, d_model], [d_model, vocab])]
    assert tables == ["lm_head_t_quantized"]
    assert twice.stat().st_size - shared.stat().st_size > 0.95 * vocab * d_model  # one INT8 copy fewer

    encoder_int8 = quantize_graph(encoder, tmp_path / "shared" / bundle.ENCODER_ONNX, DEFAULT_QUANTIZATION)
    batch = verify.SourceBatch.encode(checkpoint.tokenizer, verify.VERIFY_SENTENCES[:6], checkpoint.spec.max_positions)
    decoder_inputs = np.random.default_rng(1).integers(2, vocab - 1, size=(6, 10))
    decoder_inputs[:, 0] = checkpoint.spec.decoder_start_id
    reference = verify.pytorch_log_probs(model, batch, decoder_inputs)
    with_shared = verify.onnx_log_probs(OnnxMarian(encoder_int8, shared, checkpoint.spec), batch, decoder_inputs)
    with_twice = verify.onnx_log_probs(OnnxMarian(encoder_int8, twice, checkpoint.spec), batch, decoder_inputs)
    # the shared lookup is as close to FP32 as the separate INT8 table (per-row scales vs one per-tensor scale)
    shared_error = np.abs(with_shared - reference).mean()
    twice_error = np.abs(with_twice - reference).mean()
    assert shared_error < 1.5 * twice_error
    assert (with_shared.argmax(-1) == reference.argmax(-1)).mean() > 0.9


@pytest.mark.slow
def test_per_row_activations_make_each_row_independent_of_its_batch(tiny_marian_dir: Path, tmp_path: Path) -> None:
    """A sentence's encoder output and next-token scores are bit for bit the same alone and beside others.

    Per-tensor activation scales (quantize_dynamic's own) take the largest value of the whole batch, so the
    same row comes out differently with other neighbours: the control that shows this test can fail.
    """
    import numpy as np

    from build import verify
    from build.families.marian import load_checkpoint
    from build.quantize import quantize_graph
    from handler.model.families.marian.sessions import OnnxMarian

    checkpoint = load_checkpoint(tiny_marian_dir)
    encoder, decoder = export_graphs(checkpoint.model, tmp_path / "fp32")
    spec = checkpoint.spec
    batch = verify.SourceBatch.encode(checkpoint.tokenizer, verify.VERIFY_SENTENCES[:8], spec.max_positions)
    ids, mask = batch.input_ids, batch.attention_mask
    ids[3] = np.where(mask[3] == 1, ids[3], spec.pad_id)

    def scores(model: OnnxMarian, rows: slice) -> tuple[np.ndarray, np.ndarray]:
        cross = model.encode(ids[rows], mask[rows])
        start = np.full((ids[rows].shape[0], 1), spec.decoder_start_id, dtype=np.int64)
        log_probs, _ = model.step(start, mask[rows], model.empty_past(start.shape[0]), cross)
        return cross[0], log_probs

    differs = {}
    for scheme in ("per-row", "per-tensor"):
        settings = QuantizationSettings(activations=scheme)
        folder = tmp_path / scheme
        model = OnnxMarian(
            quantize_graph(encoder, folder / bundle.ENCODER_ONNX, settings),
            quantize_graph(decoder, folder / bundle.DECODER_ONNX, settings),
            spec,
        )
        cross_all, log_probs_all = scores(model, slice(None))
        alone = [scores(model, slice(row, row + 1)) for row in range(ids.shape[0])]
        differs[scheme] = sum(
            not (np.array_equal(cross_all[row], cross[0]) and np.array_equal(log_probs_all[row], log_probs[0]))
            for row, (cross, log_probs) in enumerate(alone)
        )
        graph = onnx.load(str(folder / bundle.DECODER_ONNX))
        dynamic = _count(graph, {"DynamicQuantizeLinear"})
        assert (dynamic == 0) if scheme == "per-row" else (dynamic > 0)
    assert differs == {"per-row": 0, "per-tensor": differs["per-tensor"]}
    assert differs["per-tensor"] > 0


@pytest.mark.slow
def test_a_tied_embedding_is_stored_once_for_both_graphs(tiny_marian_dir: Path, tmp_path: Path) -> None:
    """Encoder lookup, decoder lookup and output projection read one INT8 table in ``embedding.bin``."""
    import numpy as np
    import torch

    from build import verify
    from build.families.marian import load_checkpoint
    from build.quantize import QuantizationSettings, quantize_pair
    from handler.model.families.marian.sessions import OnnxMarian

    checkpoint = load_checkpoint(tiny_marian_dir)
    model = checkpoint.model
    with torch.no_grad():
        model.lm_head.weight = model.model.shared.weight
    fp32 = export_graphs(model, tmp_path / "fp32")
    (tmp_path / "once").mkdir()
    (tmp_path / "twice").mkdir()
    once = quantize_pair(fp32, tmp_path / "once")
    twice = quantize_pair(fp32, tmp_path / "twice", QuantizationSettings(share_tied_embedding=False))
    vocab, d_model = model.config.vocab_size, model.config.d_model
    shared = tmp_path / "once" / bundle.SHARED_EMBEDDING
    assert shared.stat().st_size == vocab * d_model  # one INT8 byte per weight
    assert not (tmp_path / "twice" / bundle.SHARED_EMBEDDING).exists()
    for graph_path in once:
        graph = onnx.load(str(graph_path), load_external_data=False)
        tables = [t for t in graph.graph.initializer if list(t.dims) in ([vocab, d_model], [d_model, vocab])]
        assert [(t.name, t.data_location, t.external_data[0].value) for t in tables] == [
            (bundle.SHARED_EMBEDDING_INITIALIZER, onnx.TensorProto.EXTERNAL, bundle.SHARED_EMBEDDING)
        ]
    size = sum(p.stat().st_size for p in (*once, shared))
    # two INT8 copies fewer (the encoder holds a copy of the per-token scales, V floats, which the table had too)
    assert sum(p.stat().st_size for p in twice) - size > 1.8 * vocab * d_model

    batch = verify.SourceBatch.encode(checkpoint.tokenizer, verify.VERIFY_SENTENCES[:6], checkpoint.spec.max_positions)
    decoder_inputs = np.random.default_rng(1).integers(2, vocab - 1, size=(6, 10))
    decoder_inputs[:, 0] = checkpoint.spec.decoder_start_id
    reference = verify.pytorch_log_probs(model, batch, decoder_inputs)
    with_once = verify.onnx_log_probs(OnnxMarian(*once, checkpoint.spec), batch, decoder_inputs)
    with_twice = verify.onnx_log_probs(OnnxMarian(*twice, checkpoint.spec), batch, decoder_inputs)
    # per-token scales of the shared table are at least as close to FP32 as the encoder's own INT8 table
    assert np.abs(with_once - reference).mean() < 1.5 * np.abs(with_twice - reference).mean()
    assert (with_once.argmax(-1) == reference.argmax(-1)).mean() > 0.9


def test_a_shared_embedding_of_the_wrong_size_is_refused_naming_the_file(tiny_bundle_dir: Path, tmp_path: Path) -> None:
    import shutil

    from handler.errors import BundleError
    from handler.model.families.marian.sessions import OnnxMarian

    folder = tmp_path / "bundle"
    shutil.copytree(tiny_bundle_dir, folder)
    (folder / bundle.SHARED_EMBEDDING).write_bytes(b"\0" * 1000)
    spec = bundle.Manifest.from_dict(json.loads((folder / bundle.MANIFEST).read_text(encoding="utf-8"))).model
    with pytest.raises(BundleError, match=r"embedding\.bin holds 1,000 bytes, but an INT8 embedding of"):
        OnnxMarian(folder / bundle.ENCODER_ONNX, folder / bundle.DECODER_ONNX, spec)
