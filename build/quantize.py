"""INT8 dynamic quantization of the bundle's graphs, with its settings as a validated, recorded dataclass.

Weights become 8-bit initializers; activations are quantized per call by ONNX Runtime (``quantize_dynamic``),
so no calibration data is needed. Only ``MatMul`` nodes whose weight is an initializer are quantized (the
attention score/context products stay FP32), and, when ``Gather`` is listed, the token embedding tables.

Default preset: per-channel, reduced range, INT8 embeddings, tied embedding stored once. Decided by
``python -m build.quantize --measure [--checkpoint DIR]`` on the default model's shape (d_model 256,
6 encoder / 3 decoder layers, 4 heads, FFN 1024, vocab 16,001, tied embeddings), AMD EPYC with AVX2 but no
VNNI, 1 intra-op thread, on a busy machine (step times are the best of 200; differences under ~20% are
noise). Agreement is INT8 vs FP32 on ``build.verify.VERIFY_SENTENCES``, for the partly trained default model
(step 778, 2026-11-30); a random model agreed 100% under every preset, which decides nothing.

    preset (bytes: both graphs)                       MB    top-1   greedy exact   step ms b1 / b16
    FP32                                              82.0    -          -          1.75 / 5.13
    per-tensor                                        21.7  99.2%       80%         0.37 / 2.94
    per-tensor, reduced range                         21.7  99.2%       75%         0.36 / 3.00
    per-channel                                       21.9  98.5%       65%         0.47 / 2.97
    per-channel, reduced range                        21.9  99.6%       95%         0.46 / 2.92
    per-channel, reduced range, FP32 embeddings       46.4  99.4%       95%         0.48 / 3.22
    ... + tied embedding stored once (the default)    17.8  99.8%       95%         (not timed)

Full-range per-channel weights lose agreement to int16 saturation in the u8 x s8 kernels (no VNNI);
reduced range fixes that, and per-channel scales then beat per-tensor ones clearly on greedy outputs for
a ~25% slower batch-1 step. FP32 embeddings more than double the size for no gain. Storing the tied
embedding once saves V x d bytes (4.1 MB here, 33 MB for opus-mt-zh-en's shape) at equal or better
accuracy (each embedding row gets its own scale).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

WEIGHT_TYPES = ("qint8", "quint8")
QUANTIZABLE_OPS = ("MatMul", "Gather")


@dataclass(frozen=True)
class QuantizationSettings:
    """How ``quantize_graph`` quantizes: recorded verbatim in the bundle's manifest."""

    per_channel: bool = True  # one scale per output column: a few large rows do not coarsen all the others
    # 7-bit weights: on AVX2 CPUs without VNNI, ONNX Runtime's u8 x s8 kernels add pairs of products in int16
    # (vpmaddubsw), which can saturate with full-range 8-bit weights
    reduce_range: bool = True
    weight_type: str = "qint8"
    op_types: tuple[str, ...] = ("MatMul", "Gather")  # "Gather": the token embeddings are stored as INT8 too
    # a graph that holds a tied embedding twice (decoder: Gather table [V, d] and output projection [d, V])
    # keeps only the quantized output projection and looks embeddings up in it (needs "Gather")
    share_tied_embedding: bool = True

    def __post_init__(self) -> None:
        if self.weight_type not in WEIGHT_TYPES:
            raise ValueError(f"weight_type must be one of {', '.join(WEIGHT_TYPES)}; got {self.weight_type!r}")
        unknown = [op for op in self.op_types if op not in QUANTIZABLE_OPS]
        if unknown:
            raise ValueError(f"op_types may hold only {', '.join(QUANTIZABLE_OPS)}; got {', '.join(unknown)}")
        if "MatMul" not in self.op_types:
            raise ValueError("op_types must include MatMul: the projections hold nearly all of the weights")
        if len(set(self.op_types)) != len(self.op_types):
            raise ValueError(f"op_types lists an operator twice: {self.op_types}")
        if self.share_tied_embedding and "Gather" not in self.op_types:
            raise ValueError("share_tied_embedding needs Gather in op_types (an FP32 table cannot share INT8 weights)")

    @property
    def quantizes_embeddings(self) -> bool:
        return "Gather" in self.op_types

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["op_types"] = list(self.op_types)
        record["method"] = "onnxruntime.quantization.quantize_dynamic"
        return record


DEFAULT_QUANTIZATION = QuantizationSettings()


def quantize_graph(src: Path, dst: Path, settings: QuantizationSettings = DEFAULT_QUANTIZATION) -> Path:
    """Write the dynamically INT8-quantized ``src`` graph to ``dst``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    weight_type = QuantType.QInt8 if settings.weight_type == "qint8" else QuantType.QUInt8
    dst.parent.mkdir(parents=True, exist_ok=True)
    quantize_dynamic(
        model_input=src,
        model_output=dst,
        op_types_to_quantize=list(settings.op_types),
        per_channel=settings.per_channel,
        reduce_range=settings.reduce_range,
        weight_type=weight_type,
        extra_options={"MatMulConstBOnly": True},
    )
    if settings.share_tied_embedding:
        tied = find_tied_embedding(src)
        if tied is not None:
            share_tied_embedding(dst, *tied)
    return dst


def find_tied_embedding(graph_path: Path) -> tuple[str, str] | None:
    """(embedding table, output projection) initializer names when the FP32 graph holds one tied embedding twice.

    That is a ``Gather`` table ``E`` [V, d] and a ``MatMul`` weight equal to ``E`` transposed.
    """
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(graph_path))
    weights = {tensor.name: tensor for tensor in model.graph.initializer}
    tables = [n.input[0] for n in model.graph.node if n.op_type == "Gather" and n.input[0] in weights]
    projections = [n.input[1] for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    for table in tables:
        shape = list(weights[table].dims)
        for projection in projections:
            if list(weights[projection].dims) != shape[::-1]:
                continue
            if np.array_equal(numpy_helper.to_array(weights[table]).T, numpy_helper.to_array(weights[projection])):
                return table, projection
    return None


def share_tied_embedding(quantized_path: Path, table: str, projection: str) -> None:
    """Rewrite a quantized graph so the embedding lookup reads the quantized output projection.

    ``Gather(table_q, ids) -> DequantizeLinear`` becomes ``Gather(projection_q, ids, axis=1)`` (an INT8 column
    per token), cast, transposed to [.., d] and scaled by that column's own scale (per-channel) or the
    tensor's scale; the table's INT8 copy is dropped. Symmetric INT8 weights have zero points of 0; other zero
    points are subtracted.
    """
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(quantized_path))
    graph = model.graph
    weights = {tensor.name: tensor for tensor in graph.initializer}
    table_q, projection_q = f"{table}_quantized", f"{projection}_quantized"
    scale, zero_point = f"{projection}_scale", f"{projection}_zero_point"
    missing = [name for name in (table_q, projection_q, scale, zero_point) if name not in weights]
    if missing:
        raise RuntimeError(f"{quantized_path}: quantization did not produce {', '.join(missing)}; cannot share")
    lookups = [n for n in graph.node if n.op_type == "Gather" and n.input[0] == table_q]
    dequantize = {n.input[0]: n for n in graph.node if n.op_type == "DequantizeLinear"}
    if len(lookups) != 1 or lookups[0].output[0] not in dequantize:
        raise RuntimeError(f"{quantized_path}: expected one Gather of {table_q} followed by DequantizeLinear")
    lookup = lookups[0]
    old = dequantize[lookup.output[0]]
    ids, result = lookup.input[1], old.output[0]
    prefix = f"{table}_shared"
    per_column = len(weights[scale].dims) == 1
    nodes = [
        helper.make_node("Gather", [projection_q, ids], [f"{prefix}_columns"], axis=1),  # [d, *ids.shape]
        helper.make_node("Cast", [f"{prefix}_columns"], [f"{prefix}_float"], to=onnx.TensorProto.FLOAT),
    ]
    values = f"{prefix}_float"
    if np.any(numpy_helper.to_array(weights[zero_point])):
        if per_column:
            nodes.append(helper.make_node("Gather", [zero_point, ids], [f"{prefix}_zp"], axis=0))
        else:
            nodes.append(helper.make_node("Identity", [zero_point], [f"{prefix}_zp"]))
        nodes.append(helper.make_node("Cast", [f"{prefix}_zp"], [f"{prefix}_zp_float"], to=onnx.TensorProto.FLOAT))
        nodes.append(helper.make_node("Sub", [values, f"{prefix}_zp_float"], [f"{prefix}_centred"]))
        values = f"{prefix}_centred"
    # ids are [batch, 1] in the decoder: columns [d, batch, 1] -> [batch, 1, d]
    nodes.append(helper.make_node("Transpose", [values], [f"{prefix}_rows"], perm=[1, 2, 0]))
    if per_column:
        graph.initializer.append(numpy_helper.from_array(np.array([-1], dtype=np.int64), f"{prefix}_last_axis"))
        nodes.append(helper.make_node("Gather", [scale, ids], [f"{prefix}_row_scale"], axis=0))  # [batch, 1]
        nodes.append(helper.make_node("Unsqueeze", [f"{prefix}_row_scale", f"{prefix}_last_axis"], [f"{prefix}_s"]))
        nodes.append(helper.make_node("Mul", [f"{prefix}_rows", f"{prefix}_s"], [result]))
    else:
        nodes.append(helper.make_node("Mul", [f"{prefix}_rows", scale], [result]))
    position = min(index for index, node in enumerate(graph.node) if node in (lookup, old))
    for node in (lookup, old):
        graph.node.remove(node)
    for offset, node in enumerate(nodes):
        graph.node.insert(position + offset, node)
    still_used = {name for node in graph.node for name in node.input}
    for name in (table_q, f"{table}_scale", f"{table}_zero_point"):
        if name in weights and name not in still_used:
            graph.initializer.remove(weights[name])
    onnx.checker.check_model(model)
    onnx.save(model, str(quantized_path))


# ------------------------------------------------------------------------------------------- measurement
CANDIDATES: dict[str, QuantizationSettings] = {
    "per-tensor": QuantizationSettings(per_channel=False, reduce_range=False),
    "per-tensor, reduced range, tied embedding stored twice": QuantizationSettings(
        per_channel=False, reduce_range=True, share_tied_embedding=False
    ),
    "per-tensor, reduced range": QuantizationSettings(per_channel=False, reduce_range=True),
    "per-channel": QuantizationSettings(per_channel=True, reduce_range=False),
    "per-channel, reduced range": QuantizationSettings(per_channel=True, reduce_range=True),
    "per-channel, reduced range, tied embedding stored twice": QuantizationSettings(
        per_channel=True, reduce_range=True, share_tied_embedding=False
    ),
    "per-channel, reduced range, FP32 embeddings": QuantizationSettings(
        per_channel=True, reduce_range=True, op_types=("MatMul",), share_tied_embedding=False
    ),
}


def measure(checkpoint: Path | None, work: Path, repeats: int = 200) -> list[dict[str, Any]]:
    """Size, INT8-vs-FP32 agreement and decoder-step time of every candidate preset (one intra-op thread).

    ``checkpoint``: a Marian checkpoint folder; ``None`` builds a random model of the default model's shape
    with ``build.train.build_model`` and the tokenizer in ``model_artifacts/training-checkpoint``.
    """
    import time

    import numpy as np

    from build import verify
    from build.export import load_checkpoint
    from build.onnx_graphs import export_graphs
    from handler.onnx_model import OnnxMarian

    if checkpoint is None:
        from build import train

        checkpoint = work / "random-default-shape"
        tokenizer_dir = train.TRACKED_CHECKPOINT_DIR
        model = train.build_model(train.TrainConfig(), train.vocab.marian_vocab_size(tokenizer_dir)).eval()
        model.save_pretrained(checkpoint)
        for name in ("source.spm", "target.spm", "vocab.json", "tokenizer_config.json"):
            (checkpoint / name).write_bytes((tokenizer_dir / name).read_bytes())
    loaded = load_checkpoint(checkpoint)
    fp32 = export_graphs(loaded.model, work / "fp32")
    spec = loaded.spec
    batch = verify.SourceBatch.encode(loaded.tokenizer, verify.VERIFY_SENTENCES, spec.max_positions)

    def speed(paths: tuple[Path, Path]) -> dict[str, float]:
        """Decoder steps per second at batch 1 and 16 (past of 20 tokens); best of many runs, robust to load."""
        model = OnnxMarian(*paths, spec, threads=1)
        figures = {}
        for rows in (1, 16):
            ids, mask = batch.input_ids[:rows], batch.attention_mask[:rows]
            cross = model.encode(ids, mask)
            past = [np.repeat(array[:, :, :1, :], 20, axis=2) * 0.1 for array in cross]
            token = np.full((rows, 1), 5, dtype=np.int64)
            best = float("inf")
            for _ in range(repeats):
                started = time.perf_counter()
                model.step(token, mask, past, cross)
                best = min(best, time.perf_counter() - started)
            figures[f"batch{rows}_step_ms"] = round(best * 1000, 2)
        return figures

    results: list[dict[str, Any]] = [{"preset": "fp32", "bytes": sum(p.stat().st_size for p in fp32), **speed(fp32)}]
    print(json.dumps(results[0]), flush=True)
    for name, settings in CANDIDATES.items():
        folder = work / name.replace(" ", "").replace(",", "-")
        int8 = (
            quantize_graph(fp32[0], folder / "encoder.onnx", settings),
            quantize_graph(fp32[1], folder / "decoder.onnx", settings),
        )
        figures = verify.compare_int8_with_fp32(fp32, int8, loaded.tokenizer, spec)
        row = {"preset": name, "bytes": sum(p.stat().st_size for p in int8), **figures.to_dict(), **speed(int8)}
        results.append(row)
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m build.quantize", description="compare quantization presets")
    parser.add_argument("--measure", action="store_true", required=True)
    parser.add_argument("--checkpoint", type=Path, help="Marian checkpoint folder (default: random default shape)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="quantize-measure-") as work:
        measure(args.checkpoint, Path(work))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
