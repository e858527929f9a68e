"""Runtime micro-benchmark on a random Marian of opus-mt-zh-en's size (a script, not a test).

    python -m bench.runtime_bench [--threads 2] [--repeats 3] [--rebuild]

Builds (once, cached in ``.bench/runtime/``) a random MarianMTModel with opus-mt-zh-en's dimensions (d_model 512,
6 + 6 layers, 8 heads, FFN 2048, vocabulary 65,001, swish, tied embeddings) and a SentencePiece tokenizer trained
on the repository's dev set (its vocabulary padded with filler entries to 65,001 ids), exports it with
``build.export.export_bundle`` (verification thresholds for a random model, below), and prints in one table:

* FP32 vs INT8 graph bytes;
* cold start of this runtime in a fresh process (import, load, warm-up) and of transformers (import, load);
* batch-1 and batch-16 greedy tokens/s with a forced output length (``FORCED_TOKENS`` tokens, ``</s>`` banned
  until then), batch-1 beam-4 latency, and each process's own peak RSS (``VmHWM``, see ``bench/memory.py``);
* this runtime with ONNX Runtime thread spinning off and on;

with the ratios and pass/fail against the targets: INT8 graphs <= 30 % of FP32, peak RSS <= 450 MB, batch-16
tokens/s >= 4x transformers FP32 ``generate``. The random model's outputs are meaningless; only speed, memory
and size are measured. Each measurement runs in its own subprocess so that imports and memory do not mix.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.memory import peak_rss_mb

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO_ROOT / ".bench" / "runtime"  # holds checkpoint/ and bundle/, built once
CHECKPOINT = "checkpoint"
BUNDLE = "bundle"

FORCED_TOKENS = 40
BATCH_SIZES = (1, 16)
BEAM_SIZE = 4
SPM_PIECES = 4_000  # what the dev set supports; the remaining ids up to 65,000 are filler entries
OPUS_MT_ZH_EN_VOCAB = 65_001
# A random model's next-token distributions are nearly flat, so near-ties flip between PyTorch and ONNX (and
# between FP32 and INT8) and change the rest of a greedy output: only the log-probability difference says
# whether the graphs compute the same function; the other figures are recorded, not enforced.
RANDOM_MODEL_THRESHOLDS = {
    "fp32_max_abs_log_prob_diff": 1e-3,
    "fp32_greedy_exact_match": 0.0,
    "int8_top1_agreement": 0.0,
    "int8_greedy_exact_match": 0.0,
}
TARGETS = {"int8_share_of_fp32": 0.30, "peak_rss_mb": 450.0, "speedup_batch16": 4.0}


# --- building the model ---------------------------------------------------------------------------------------


def bench_sentences(count: int = 16) -> list[str]:
    """Chinese sentences of everyday length from the repository's dev set (the same for every engine)."""
    from build import corpus

    chosen = [pair.zh for pair in corpus.dev_pairs() if 12 <= len(pair.zh) <= 40]
    return chosen[:count]


def build_checkpoint(out_dir: Path) -> None:
    from build import corpus, vocab
    from build.marian import ModelShape, marian_config, new_model

    pairs = corpus.dev_pairs()
    vocab.train_joint_sentencepiece([p.zh for p in pairs] + [p.en for p in pairs], out_dir, SPM_PIECES, seed=1)
    vocab_path = out_dir / vocab.VOCAB_JSON
    entries: dict[str, int] = json.loads(vocab_path.read_text(encoding="utf-8"))
    pad = OPUS_MT_ZH_EN_VOCAB - 1
    del entries[vocab.PAD]
    for filler in range(len(entries), pad):
        entries[f"<filler_{filler}>"] = filler
    entries[vocab.PAD] = pad
    vocab_path.write_text(json.dumps(entries, ensure_ascii=False, indent=0), encoding="utf-8")
    opus_mt_zh_en = ModelShape(
        d_model=512, encoder_layers=6, decoder_layers=6, attention_heads=8, ffn_dim=2_048, max_positions=512
    )
    new_model(marian_config(OPUS_MT_ZH_EN_VOCAB, opus_mt_zh_en), seed=0).eval().save_pretrained(out_dir)


def build_bundle(work_dir: Path, rebuild: bool) -> dict[str, Any]:
    from handler import bundle

    checkpoint_dir, bundle_dir = work_dir / CHECKPOINT, work_dir / BUNDLE
    if rebuild or not (checkpoint_dir / "config.json").is_file():
        print(f"building the random checkpoint in {checkpoint_dir}", flush=True)
        build_checkpoint(checkpoint_dir)
    if rebuild or not (bundle_dir / bundle.MANIFEST).is_file():
        from build.export import export_bundle
        from build.verify import VerifyThresholds

        print(f"exporting the bundle to {bundle_dir}", flush=True)
        export_bundle(
            checkpoint_dir,
            bundle_dir,
            name="bench-random-opus-mt-zh-en-size",
            force=True,
            thresholds=VerifyThresholds(**RANDOM_MODEL_THRESHOLDS),
            progress=lambda message: print(f"  {message}", flush=True),
        )
    manifest = json.loads((bundle_dir / bundle.MANIFEST).read_text(encoding="utf-8"))
    checkpoint_bytes = sum(path.stat().st_size for path in checkpoint_dir.glob("*.safetensors"))
    return dict(manifest["quantization"]) | {
        "verification": manifest["verification"]["figures"],
        "checkpoint_bytes": checkpoint_bytes,
        "bundle_bytes": sum(entry["bytes"] for entry in manifest["files"].values()),
    }


# --- measurements (each in a fresh process) ------------------------------------------------------------------


def _timed(function: Any, repeats: int) -> float:
    """Median seconds of ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        function()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def measure_runtime(work_dir: Path, threads: int, spinning: bool, repeats: int) -> dict[str, Any]:
    """This runtime: cold start through ``handler.runtime``, then forced-length decoding."""
    began = time.perf_counter()
    from handler import runtime
    from handler.batching import pad_batch
    from handler.config import RuntimeConfig
    from handler.decoding import beam_search, greedy_search

    imported = time.perf_counter()
    config = RuntimeConfig(bundle_dir=work_dir / BUNDLE, threads=threads, thread_spinning=spinning, beam_size=BEAM_SIZE)
    service = runtime.get_service(config)
    ready = time.perf_counter()
    loaded = service.model
    sentences = bench_sentences()
    encoded = loaded.tokenizer.encode_batch(sentences)
    steps = FORCED_TOKENS + 1  # FORCED_TOKENS tokens, then the forced </s> (which costs no step)
    result: dict[str, Any] = {
        "import_s": imported - began,
        "load_s": loaded.timings["load_s"],
        "warmup_s": loaded.timings["warmup_s"],
        "cold_start_s": ready - began,
        "source_tokens": statistics.mean(len(ids) for ids in encoded),
    }
    for batch_size in BATCH_SIZES:
        ids, mask = pad_batch(encoded[:batch_size], loaded.spec.pad_id)

        def greedy(ids: Any = ids, mask: Any = mask) -> None:
            outputs = greedy_search(loaded.model, ids, mask, steps, min_new_tokens=steps)
            assert all(len(tokens) == FORCED_TOKENS for tokens in outputs)

        seconds = _timed(greedy, repeats)
        result[f"batch{batch_size}_tokens_per_s"] = batch_size * FORCED_TOKENS / seconds
    ids, mask = pad_batch(encoded[:1], loaded.spec.pad_id)
    result["beam4_batch1_s"] = _timed(
        lambda: beam_search(loaded.model, ids, mask, steps, beam_size=BEAM_SIZE, min_new_tokens=steps), repeats
    )
    result["translate_s"] = _timed(lambda: service.translate_many(sentences[:4]), 1)
    result.update(measure_finished_rows(loaded, encoded, repeats))
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def measure_finished_rows(loaded: Any, encoded: list[list[int]], repeats: int) -> dict[str, float]:
    """What to do with rows that have finished: keep computing them (masking) or drop them from the batch.

    After 20 steps of a 16-row batch, half the rows finish: masking keeps stepping 16 rows, dropping steps 8 rows
    after a one-off copy of the kept rows' caches.
    """
    import numpy as np

    from handler.batching import pad_batch

    model = loaded.model
    ids, mask = pad_batch(encoded[:16], loaded.spec.pad_id)
    cross = model.encode(ids, mask)
    past = model.empty_past(16)
    tokens = np.full((16, 1), loaded.spec.decoder_start_id, dtype=np.int64)
    for _ in range(20):
        log_probs, past = model.step(tokens, mask, past, cross)
        log_probs[:, loaded.spec.eos_id] = -np.inf
        tokens = log_probs.argmax(axis=1)[:, None]
    keep = np.arange(0, 16, 2)

    def drop() -> tuple[list[Any], list[Any]]:
        return [array[keep] for array in past], [array[keep] for array in cross]

    kept_past, kept_cross = drop()
    return {
        "step16_ms": 1000 * _timed(lambda: model.step(tokens, mask, past, cross), repeats * 3),
        "step8_ms": 1000 * _timed(lambda: model.step(tokens[keep], mask[keep], kept_past, kept_cross), repeats * 3),
        "drop_copy_ms": 1000 * _timed(drop, repeats * 3),
    }


def measure_transformers(work_dir: Path, threads: int, repeats: int) -> dict[str, Any]:
    """transformers FP32 ``generate`` on the same checkpoint, the same sentences and the same forced length."""
    began = time.perf_counter()
    import torch
    from transformers import MarianMTModel, MarianTokenizer

    imported = time.perf_counter()
    torch.set_num_threads(threads)
    model = MarianMTModel.from_pretrained(str(work_dir / CHECKPOINT)).eval()
    tokenizer = MarianTokenizer.from_pretrained(str(work_dir / CHECKPOINT))
    loaded = time.perf_counter()
    sentences = bench_sentences()
    settings = {
        "do_sample": False,
        "max_new_tokens": FORCED_TOKENS,
        "min_new_tokens": FORCED_TOKENS,
        "forced_eos_token_id": None,  # FORCED_TOKENS real tokens, like the runtime's run
    }

    def generate(batch_size: int, beams: int = 1) -> None:
        inputs = tokenizer(sentences[:batch_size], return_tensors="pt", padding=True)
        with torch.inference_mode():
            output = model.generate(**inputs, num_beams=beams, **settings)
        assert output.shape[1] == FORCED_TOKENS + 1

    generate(1)  # warm-up
    warmed = time.perf_counter()
    result: dict[str, Any] = {
        "import_s": imported - began,
        "load_s": loaded - imported,
        "warmup_s": warmed - loaded,
        "cold_start_s": warmed - began,
    }
    for batch_size in BATCH_SIZES:
        seconds = _timed(lambda batch_size=batch_size: generate(batch_size), repeats)
        result[f"batch{batch_size}_tokens_per_s"] = batch_size * FORCED_TOKENS / seconds
    result["beam4_batch1_s"] = _timed(lambda: generate(1, BEAM_SIZE), repeats)
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def run_child(args: list[str]) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    completed = subprocess.run(
        [sys.executable, "-m", "bench.runtime_bench", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"benchmark process {args} failed:\n{completed.stderr}")
    return json.loads(completed.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# --- report ---------------------------------------------------------------------------------------------------


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report(sizes: dict[str, Any], engines: dict[str, dict[str, Any]], threads: int) -> str:
    fp32, int8 = sizes["fp32_graph_bytes"], sizes["int8_graph_bytes"]
    share = int8 / fp32
    ours = engines["runtime (spinning off)"]
    reference = engines["transformers FP32"]
    speedup = ours["batch16_tokens_per_s"] / reference["batch16_tokens_per_s"]
    lines = [
        f"random Marian, opus-mt-zh-en shape; {threads} intra-op threads; {FORCED_TOKENS} forced output tokens; "
        f"{ours['source_tokens']:.1f} source tokens per sentence on average",
        "",
        f"graphs on disk: FP32 {fp32 / 1e6:,.1f} MB, INT8 {int8 / 1e6:,.1f} MB = {share:.1%} of FP32 "
        f"(target <= {TARGETS['int8_share_of_fp32']:.0%}): {_verdict(share <= TARGETS['int8_share_of_fp32'])}",
        f"(the FP32 graphs hold the tied embedding three times; the PyTorch checkpoint's weights are "
        f"{sizes['checkpoint_bytes'] / 1e6:,.1f} MB, INT8 graphs = {int8 / sizes['checkpoint_bytes']:.1%} of that; "
        f"whole INT8 bundle {sizes['bundle_bytes'] / 1e6:,.1f} MB)",
        f"verification figures of the random model: {sizes['verification']}",
        "",
        f"{'engine':<26}{'import s':>9}{'load s':>8}{'warm s':>8}{'cold s':>8}{'b1 tok/s':>10}{'b16 tok/s':>11}"
        f"{'beam4 b1 s':>11}{'RSS MB':>8}",
    ]
    for name, figures in engines.items():
        lines.append(
            f"{name:<26}{figures['import_s']:>9.2f}{figures['load_s']:>8.2f}{figures['warmup_s']:>8.2f}"
            f"{figures['cold_start_s']:>8.2f}{figures['batch1_tokens_per_s']:>10.1f}"
            f"{figures['batch16_tokens_per_s']:>11.1f}{figures['beam4_batch1_s']:>11.2f}{figures['peak_rss_mb']:>8.0f}"
        )
    lines += [
        "",
        f"batch-16 speed vs transformers FP32: {speedup:.2f}x (target >= {TARGETS['speedup_batch16']:.0f}x): "
        f"{_verdict(speedup >= TARGETS['speedup_batch16'])}",
        f"batch-1 speed vs transformers FP32: {ours['batch1_tokens_per_s'] / reference['batch1_tokens_per_s']:.2f}x",
        f"peak RSS of the runtime: {ours['peak_rss_mb']:.0f} MB (target <= {TARGETS['peak_rss_mb']:.0f} MB): "
        f"{_verdict(ours['peak_rss_mb'] <= TARGETS['peak_rss_mb'])}; transformers: {reference['peak_rss_mb']:.0f} MB",
        f"cold start: runtime {ours['cold_start_s']:.2f} s vs transformers {reference['cold_start_s']:.2f} s",
    ]
    lines.append(
        f"finished rows: a step of 16 rows {ours['step16_ms']:.1f} ms (masking) vs 8 rows {ours['step8_ms']:.1f} ms "
        f"after a one-off {ours['drop_copy_ms']:.1f} ms copy (dropping, what the runtime does)"
    )
    spinning = engines["runtime (spinning on)"]
    verdicts = []
    for batch_size in BATCH_SIZES:
        off, on = ours[f"batch{batch_size}_tokens_per_s"], spinning[f"batch{batch_size}_tokens_per_s"]
        faster = "off" if off >= on else "on"
        verdicts.append(f"batch-{batch_size} {off:.1f} (off) vs {on:.1f} (on) tok/s: faster {faster}")
    lines.append(f"thread spinning: {'; '.join(verdicts)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.runtime_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads for every engine (default 2)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement; the median counts")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached checkpoint and bundle")
    parser.add_argument(
        "--work-dir", type=Path, default=BENCH_DIR, help=f"where checkpoint/ and bundle/ are kept (default {BENCH_DIR})"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        engine, *rest = args.child
        if engine == "runtime":
            figures = measure_runtime(args.work_dir, args.threads, rest == ["spinning"], args.repeats)
        else:
            figures = measure_transformers(args.work_dir, args.threads, args.repeats)
        print(json.dumps(figures))
        return 0
    sizes = build_bundle(args.work_dir, args.rebuild)
    common = ["--threads", str(args.threads), "--repeats", str(args.repeats), "--work-dir", str(args.work_dir)]
    engines: dict[str, dict[str, Any]] = {}
    for name, child in (
        ("runtime (spinning off)", ["runtime"]),
        ("runtime (spinning on)", ["runtime", "spinning"]),
        ("transformers FP32", ["transformers"]),
    ):
        print(f"measuring {name}", flush=True)
        engines[name] = run_child([*common, "--child", *child])
    print()
    print(report(sizes, engines, args.threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
