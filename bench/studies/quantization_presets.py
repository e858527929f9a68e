"""Size, INT8-vs-FP32 agreement and decoder-step speed of every quantization preset (a study, not a test).

    python -m bench.studies.quantization_presets [--checkpoint DIR]

Decided the default preset of ``build.quantize`` (the figures of its run: ``docs/decisions.md``). Without
``--checkpoint`` it builds a random model of the default model's shape, which agrees 100 % under every preset and
so decides nothing: give a trained checkpoint.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from build.quantize import QuantizationSettings, quantize_graph

CANDIDATES: dict[str, QuantizationSettings] = {
    "per-channel, reduced range, per-tensor activations": QuantizationSettings(activations="per-tensor"),
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
    with ``build.training.train.build_model`` and the tokenizer in ``model_artifacts/training-checkpoint``.
    """
    import time

    import numpy as np

    from build import verify
    from build.families.marian import load_checkpoint
    from build.families.marian.graphs import export_graphs
    from handler.model.families.marian.sessions import OnnxMarian

    if checkpoint is None:
        from build.training import train

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
    parser = argparse.ArgumentParser(
        prog="python -m bench.studies.quantization_presets", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--checkpoint", type=Path, help="Marian checkpoint folder (default: random default shape)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="quantize-measure-") as work:
        measure(args.checkpoint, Path(work))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
