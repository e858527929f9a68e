"""INT8 dynamic quantization of the bundle's graphs, with its settings as a validated, recorded dataclass.

Weights become 8-bit initializers; activations are quantized per call by ONNX Runtime (``quantize_dynamic``),
so no calibration data is needed. Only ``MatMul`` nodes whose weight is an initializer are quantized (the
attention score/context products stay FP32), and, when ``Gather`` is listed, the token embedding tables.

Default preset, decided by measurement (``python -m build.quantize --measure``; a random Marian of the default
model's shape: d_model 256, 6 encoder / 3 decoder layers, 4 heads, FFN 1024, vocab 16,001, tied embeddings;
AMD EPYC with AVX2 but no VNNI, 1 intra-op thread). See ``MEASUREMENT`` below for the figures.
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
    return dst


# ------------------------------------------------------------------------------------------- measurement
CANDIDATES: dict[str, QuantizationSettings] = {
    "per-tensor": QuantizationSettings(per_channel=False, reduce_range=False),
    "per-tensor, reduced range": QuantizationSettings(per_channel=False, reduce_range=True),
    "per-channel": QuantizationSettings(per_channel=True, reduce_range=False),
    "per-channel, reduced range": QuantizationSettings(per_channel=True, reduce_range=True),
    "per-channel, reduced range, FP32 embeddings": QuantizationSettings(
        per_channel=True, reduce_range=True, op_types=("MatMul",)
    ),
}


def measure(checkpoint: Path | None, work: Path, forced_tokens: int = 40) -> list[dict[str, Any]]:
    """Size, INT8-vs-FP32 agreement and greedy speed of every candidate preset (one intra-op thread).

    ``checkpoint``: a Marian checkpoint folder; ``None`` builds a random model of the default model's shape
    with ``build.train.build_model`` and the tokenizer in ``model_artifacts/training-checkpoint``.
    """
    import time

    import numpy as np

    from build import verify
    from build.export import load_checkpoint
    from build.onnx_graphs import export_graphs
    from handler.decoding import greedy_search
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
        model = OnnxMarian(*paths, spec, threads=1)
        figures = {}
        for rows in (1, 16):
            ids, mask = batch.input_ids[:rows], batch.attention_mask[:rows]
            greedy_search(model, ids, mask, 4, min_new_tokens=3)  # warm-up
            started = time.perf_counter()
            greedy_search(model, ids, mask, forced_tokens + 1, min_new_tokens=forced_tokens)
            figures[f"batch{rows}_tokens_per_s"] = round(rows * forced_tokens / (time.perf_counter() - started), 1)
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
