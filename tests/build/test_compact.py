"""build.compact: what a bundle need not store (position tables, zero biases, a second copy of a tied embedding or of a
joint vocabulary's SentencePiece model) is not stored, and the graphs compute what they computed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from build.compact import compact_bundle, compute_sinusoidal_positions, drop_zero_bias, tied_tables
from handler.model import bundle


def marian_table(rows: int, width: int) -> np.ndarray:
    """transformers' MarianSinusoidalPositionalEmbedding._init_weight, as written there (FP64, then FP32)."""
    position_enc = np.array(
        [[pos / np.power(10000, 2 * (j // 2) / width) for j in range(width)] for pos in range(rows)]
    )
    table = np.empty((rows, width), dtype=np.float32)
    table[:, : width // 2] = np.sin(position_enc[:, 0::2])
    table[:, width // 2 :] = np.cos(position_enc[:, 1::2])
    return table


def slice_graph(path: Path, table: np.ndarray) -> Path:
    """start [1], end [1] -> Slice(table, start, end, axes=[0], steps=[1]) -> Identity -> rows."""
    nodes = [
        helper.make_node("Slice", ["table", "start", "end", "axes", "steps"], ["rows_sliced"]),
        helper.make_node("Identity", ["rows_sliced"], ["rows"]),
    ]
    graph = helper.make_graph(
        nodes,
        "positions",
        [helper.make_tensor_value_info(name, TensorProto.INT64, [1]) for name in ("start", "end")],
        [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [None, table.shape[1]])],
        [
            numpy_helper.from_array(table, "table"),
            numpy_helper.from_array(np.array([0], dtype=np.int64), "axes"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "steps"),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def run(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, feeds)[0])


def test_computed_positions_are_the_stored_table_bit_for_bit(tmp_path: Path) -> None:
    table = marian_table(512, 64)
    stored = slice_graph(tmp_path / "stored.onnx", table)
    computed = slice_graph(tmp_path / "computed.onnx", table)
    assert compute_sinusoidal_positions(computed)
    graph = onnx.load(str(computed))
    assert "table" not in {tensor.name for tensor in graph.graph.initializer}
    assert computed.stat().st_size < stored.stat().st_size / 50
    for start, end in ((0, 1), (0, 40), (37, 38), (500, 512), (0, 512)):
        feeds = {"start": np.array([start]), "end": np.array([end])}
        assert np.array_equal(run(computed, feeds), run(stored, feeds)), (start, end)


def test_a_learned_position_table_is_kept(tmp_path: Path) -> None:
    table = marian_table(64, 16)
    table[5, 3] += 0.01  # one trained entry: not the sinusoid any more
    path = slice_graph(tmp_path / "learned.onnx", table)
    assert not compute_sinusoidal_positions(path)
    assert "table" in {tensor.name for tensor in onnx.load(str(path)).graph.initializer}


def bias_graph(path: Path, columns: int, bias: np.ndarray) -> Path:
    """x [n, 4] -> MatMul(W [4, columns]) -> Add(bias) -> LogSoftmax -> y."""
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["product"]),
        helper.make_node("Add", ["product", "bias"], ["biased"]),
        helper.make_node("LogSoftmax", ["biased"], ["y"], axis=-1),
    ]
    weights = np.random.default_rng(0).normal(size=(4, columns)).astype(np.float32)
    graph = helper.make_graph(
        nodes,
        "bias",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])],
        [numpy_helper.from_array(weights, "W"), numpy_helper.from_array(bias, "bias")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_an_all_zero_bias_is_dropped_and_the_output_is_the_same(tmp_path: Path) -> None:
    x = {"x": np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)}
    path = bias_graph(tmp_path / "zero.onnx", 6, np.zeros(6, dtype=np.float32))
    before = run(path, x)
    assert drop_zero_bias(path)
    graph = onnx.load(str(path)).graph
    assert [node.op_type for node in graph.node] == ["MatMul", "LogSoftmax"]
    assert "bias" not in {tensor.name for tensor in graph.initializer}
    assert np.array_equal(run(path, x), before)


@pytest.mark.parametrize(
    ("columns", "bias"),
    [(6, np.full(6, 0.5, dtype=np.float32)), (1, np.zeros(6, dtype=np.float32))],
    ids=["not zero", "broadcasts a column to six"],
)
def test_a_bias_that_changes_the_output_is_kept(tmp_path: Path, columns: int, bias: np.ndarray) -> None:
    path = bias_graph(tmp_path / "kept.onnx", columns, bias)
    assert not drop_zero_bias(path)
    assert run(path, {"x": np.ones((2, 4), dtype=np.float32)}).shape == (2, 6)


def test_the_export_stores_positions_and_a_joint_tokenizer_once(tiny_bundle_dir: Path) -> None:
    from handler.config import RuntimeConfig
    from handler.model.loader import load_model

    manifest = json.loads((tiny_bundle_dir / bundle.MANIFEST).read_text(encoding="utf-8"))
    assert bundle.weights_file(bundle.DECODER_ONNX) in manifest["files"]  # mapped at load, hashed like the graph
    for name in bundle.MODEL_FILES:
        graph = onnx.load(str(tiny_bundle_dir / name), load_external_data=False).graph
        assert "positions" not in {tensor.name for tensor in graph.initializer}, name
        assert any(node.op_type == "Sin" for node in graph.node), name
    # the tiny model's final_logits_bias is not zero (its </s> probe): it stays
    decoder = onnx.load(str(tiny_bundle_dir / bundle.DECODER_ONNX), load_external_data=False).graph
    assert "final_logits_bias" in {tensor.name for tensor in decoder.initializer}
    assert manifest["tokenizer"] == {bundle.TARGET_SPM_KEY: bundle.SOURCE_SPM}
    assert not (tiny_bundle_dir / bundle.TARGET_SPM).exists() and bundle.TARGET_SPM not in manifest["files"]
    loaded = load_model(RuntimeConfig(bundle_dir=tiny_bundle_dir, threads=1))
    assert loaded.tokenizer.decode(loaded.tokenizer.encode("你好")[:-1]).strip()


def test_compacting_an_older_bundle_shares_what_it_stored_twice(tiny_marian_dir: Path, tmp_path: Path) -> None:
    """An INT8 bundle written before these rewrites (tied embedding twice, positions stored, two .spm files) comes
    out compact, loads with its hashes checked, and compacting again changes nothing."""
    import torch

    from build.families.marian import load_checkpoint
    from build.families.marian.graphs import export_graphs
    from build.quantize import QuantizationSettings, quantize_graph
    from handler.config import RuntimeConfig
    from handler.model.families.base import SearchRequest
    from handler.model.loader import load_bundle, load_model

    checkpoint = load_checkpoint(tiny_marian_dir)
    with torch.no_grad():
        checkpoint.model.lm_head.weight = checkpoint.model.model.shared.weight  # tied, as the default model is
    fp32 = export_graphs(checkpoint.model, tmp_path / "fp32")
    old = tmp_path / "old"
    old.mkdir()
    settings = QuantizationSettings(share_tied_embedding=False)
    for source, name in zip(fp32, bundle.MODEL_FILES, strict=True):
        quantize_graph(source, old / name, settings)
    for name in bundle.TOKENIZER_FILES:
        shutil.copyfile(tiny_marian_dir / name, old / name)
    manifest = bundle.Manifest(
        name="old",
        source_model=str(tiny_marian_dir),
        model=checkpoint.spec,
        files={path.name: bundle.file_entry(path) for path in sorted(old.iterdir())},
    )
    manifest.write(old / bundle.MANIFEST)
    assert tied_tables(*(old / name for name in bundle.MODEL_FILES)) is not None
    before_bytes = sum(path.stat().st_size for path in old.iterdir())

    record = compact_bundle(old)

    # embedding shared, positions x 2, joint .spm (the bias is not zero); a tiny graph's weights are too small to
    # leave it, except where the encoder's copy of the per-token scales was (now read from the decoder's file)
    assert [rewrite.split(":")[0] for rewrite in record["rewrites"]] == [
        "tied embedding stored once (embedding.bin)",
        "encoder.onnx",
        "decoder.onnx",
        "decoder.onnx",
        "joint vocabulary",
    ], record
    weights = [bundle.weights_file(bundle.DECODER_ONNX)]
    assert sorted(path.name for path in old.iterdir()) == sorted(
        [*bundle.MODEL_FILES, *weights, bundle.SHARED_EMBEDDING, bundle.SOURCE_SPM, bundle.VOCAB_JSON, bundle.MANIFEST]
    )
    vocab, d_model = checkpoint.spec.vocab_size, checkpoint.spec.d_model
    saved = before_bytes - sum(path.stat().st_size for path in old.iterdir())
    assert saved > vocab * d_model  # the second INT8 table at least
    compacted = load_bundle(old)  # every file's size and sha256 against the new manifest
    assert compacted.tokenizer == {bundle.TARGET_SPM_KEY: bundle.SOURCE_SPM}
    assert compacted.quantization["compacted"]["by"] == "python -m build.compact"
    loaded = load_model(RuntimeConfig(bundle_dir=old, threads=1))
    assert (
        len(loaded.search(loaded.tokenizer.encode_batch(["你好。"]), SearchRequest(beam_size=2, max_new_tokens=8))) == 1
    )
    hashes = {name: entry.sha256 for name, entry in compacted.files.items()}
    assert compact_bundle(old) == record  # nothing left to do
    assert {name: entry.sha256 for name, entry in load_bundle(old).files.items()} == hashes


def test_a_zero_bias_inside_the_network_is_kept(tmp_path: Path) -> None:
    """Only the output logits' bias goes: a zero bias before another product is a trained parameter's value."""
    path = bias_graph(tmp_path / "inner.onnx", 6, np.zeros(6, dtype=np.float32))
    graph = onnx.load(str(path))
    graph.graph.node[2].CopyFrom(helper.make_node("Relu", ["biased"], ["y"]))
    onnx.save(graph, str(path))
    assert not drop_zero_bias(path)


def weights_graph(path: Path, weights: np.ndarray, name: str = "W") -> Path:
    """x [n, 128] -> MatMul(W [128, 256]) -> y: one initializer of 128 KiB."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", name], ["y"])],
        "weights",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 128])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 256])],
        [numpy_helper.from_array(weights, name), numpy_helper.from_array(np.ones(4, dtype=np.float32), "small")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_weights_move_to_an_aligned_file_beside_the_graph_and_compute_the_same(tmp_path: Path) -> None:
    from build.compact import externalize_weights

    rng = np.random.default_rng(2)
    weights = rng.normal(size=(128, 256)).astype(np.float32)
    path = weights_graph(tmp_path / "decoder.onnx", weights)
    x = {"x": rng.normal(size=(3, 128)).astype(np.float32)}
    before, inline_bytes = run(path, x), path.stat().st_size
    assert externalize_weights(path)
    assert not externalize_weights(path)  # nothing left inline
    data = tmp_path / bundle.weights_file("decoder.onnx")
    assert data.stat().st_size == weights.nbytes and path.stat().st_size < inline_bytes / 100
    tensors = {tensor.name: tensor for tensor in onnx.load(str(path), load_external_data=False).graph.initializer}
    entries = {entry.key: entry.value for entry in tensors["W"].external_data}
    assert entries["location"] == data.name and int(entries.get("offset", 0)) % bundle.WEIGHTS_ALIGNMENT == 0
    assert tensors["small"].data_location == TensorProto.DEFAULT  # small initializers stay in the graph
    assert np.array_equal(run(path, x), before)


def test_a_weight_both_graphs_hold_is_stored_once(tmp_path: Path) -> None:
    from build.compact import externalize_weights

    rng = np.random.default_rng(3)
    shared, own = (rng.normal(size=(128, 256)).astype(np.float32) for _ in range(2))
    decoder = weights_graph(tmp_path / "decoder.onnx", shared, "scales")
    same = weights_graph(tmp_path / "encoder.onnx", shared, "scales")
    x = {"x": rng.normal(size=(2, 128)).astype(np.float32)}
    expected = run(same, x)
    assert externalize_weights(decoder) and externalize_weights(same, reuse=decoder)
    assert not (tmp_path / bundle.weights_file("encoder.onnx")).exists()  # all it held is in the decoder's file
    assert np.array_equal(run(same, x), expected)
    other = weights_graph(tmp_path / "other.onnx", own, "scales")  # same name, other values: its own copy
    assert externalize_weights(other, reuse=decoder)
    assert (tmp_path / bundle.weights_file("other.onnx")).stat().st_size == own.nbytes


def test_an_output_taken_from_a_length_one_axis_is_squeezed_not_gathered(tmp_path: Path) -> None:
    from build.compact import squeeze_output_gather

    graph = helper.make_graph(
        [
            helper.make_node("LogSoftmax", ["x"], ["scores"], axis=-1),
            helper.make_node("Gather", ["scores", "first"], ["y"], axis=1),
        ],
        "output",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, None, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 7])],
        [numpy_helper.from_array(np.array(0, dtype=np.int64), "first")],
    )
    path = tmp_path / "decoder.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    x = {"x": np.random.default_rng(4).normal(size=(3, 1, 7)).astype(np.float32)}
    before = run(path, x)
    assert squeeze_output_gather(path)
    assert [node.op_type for node in onnx.load(str(path)).graph.node] == ["LogSoftmax", "Squeeze"]
    assert np.array_equal(run(path, x), before)
    with pytest.raises(Exception, match="(?i)squeeze"):  # a longer axis fails loudly, never answers differently
        run(path, {"x": np.ones((3, 2, 7), dtype=np.float32)})


def pooling_graph(path: Path) -> Path:
    """CSANMT's pooled semantic vector as exported: x [rows, width, d], attention_mask [rows, width] ->
    ReduceSum(x * mask[..., None], axes=[1], keepdims=1) / ReduceSum(mask[..., None], axes=[1], keepdims=1)."""
    nodes = [
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask", "last"], ["mask_column"]),
        helper.make_node("Mul", ["x", "mask_column"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "sequence"], ["summed"], keepdims=1),
        helper.make_node("ReduceSum", ["mask_column", "sequence"], ["count"], keepdims=1),
        helper.make_node("Div", ["summed", "count"], ["pooled"]),
    ]
    graph = helper.make_graph(
        nodes,
        "pooling",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, None, 1024]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [None, None]),
        ],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [None, 1, 1024])],
        [
            numpy_helper.from_array(np.array([2], dtype=np.int64), "last"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "sequence"),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_a_masked_sum_over_the_sequence_is_the_same_for_a_row_alone_and_in_a_batch(tmp_path: Path) -> None:
    from build.compact import masked_sums_as_products

    rng = np.random.default_rng(7)
    lengths = [29, 7, 48, 16, 33, 64, 1, 40]
    x = rng.normal(size=(len(lengths), 64, 1024)).astype(np.float32)
    mask = (np.arange(64)[None, :] < np.array(lengths)[:, None]).astype(np.int64)
    path = pooling_graph(tmp_path / "encoder.onnx")
    before = run(path, {"x": x, "attention_mask": mask})
    assert masked_sums_as_products(path)
    ops = [node.op_type for node in onnx.load(str(path)).graph.node]
    assert ops.count("MatMul") == 1 and ops.count("ReduceSum") == 1  # the mask's count stays a sum (of 0s and 1s)
    assert not masked_sums_as_products(path)  # nothing left to rewrite
    # as the export saves it too: optimized by ONNX Runtime at build time (Transpose + MatMul -> FusedMatMul)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    for graph in (path, tmp_path / "optimized.onnx"):
        batch = run(graph, {"x": x, "attention_mask": mask})
        np.testing.assert_allclose(batch, before, rtol=1e-5, atol=1e-5)
        for row, length in enumerate(lengths):  # each row alone, at its own width: bit for bit its row of the batch
            width = -(-length // 16) * 16
            alone = run(graph, {"x": x[row : row + 1, :width], "attention_mask": mask[row : row + 1, :width]})
            assert np.array_equal(alone[0], batch[row]), f"{graph.name}: row {row} (length {length})"
