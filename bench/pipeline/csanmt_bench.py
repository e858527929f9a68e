"""Memory and speed of a full-size CSANMT bundle in this runtime (a script, not a test).

    python -m bench.pipeline.csanmt_bench --bundle DIR [--threads 2] [--repeats 2] [--request-chars 20000] [--quick]

``DIR`` is a bundle built by ``make model`` from a CSANMT checkpoint, normally the random one with the real
model's shapes that ``python -m bench.pipeline.csanmt_full_size make CHECKPOINT`` writes in the real TF checkpoint
layout (``make bench-csanmt`` does both, then this). Every figure comes from a fresh process that measures itself:

* **bundle**: bytes on disk of every file;
* **cold start**: process start → service ready (import, load, warm-up, as ``handler.coldstart`` does them at a
  cold start), and the process's RSS after it;
* **speed**: batch-1 and batch-16 tokens/s, greedy and beam 4, each output forced to at least ``FORCED_TOKENS``
  tokens (end of sentence banned until then; the tokens counted are those produced) on the same sentences of the
  repository's dev set, with where the time went: the encoder call(s), the decoder steps (ONNX Runtime) and the
  rest, the search's own Python work (choosing the candidates, reordering the caches);
* **longest request**: peak RSS (``VmHWM`` of that process, ``bench/pipeline/memory.py``) and seconds while the service
  translates one request of ``--request-chars`` characters (default ``TRANSLATE_MAX_CHARS``, the longest an HTTP
  request may be) with its default options (beam 4, its own splitting and batching). A random model never
  chooses the end of sentence early, so every sentence runs to its maximum length: the worst case for memory.
  Nor does it keep a protected span (a number, a Latin word), so every segment holding one is decoded again in
  the spans' later rounds; the seconds of the first pass over every segment are reported beside the total.

It prints one table with the targets of a 2048 MB function (peak RSS <= 1,500 MB, cold start <= 3 s, bundle
<= 700 MB) and exits non-zero when a figure could not be measured. The random weights' outputs are meaningless.
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

from bench.pipeline.memory import current_rss_mb, peak_rss_mb
from handler.config import REPO_ROOT

FORCED_TOKENS = 40
BATCH_SIZES = (1, 16)
BEAM_SIZES = (1, 4)
FUNCTION_MB = 2048
TARGETS = {"peak_rss_mb": 1500.0, "cold_start_s": 3.0, "bundle_mb": 700.0}


def bench_sentences(count: int = 16) -> list[str]:
    """Everyday-length Chinese sentences from the repository's dev set, the same for every measurement."""
    from build import corpus

    chosen = [pair.zh for pair in corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR) if 12 <= len(pair.zh) <= 40]
    return chosen[:count]


def long_request(characters: int) -> str:
    """``characters`` characters of dev-set paragraphs (ten sentences each), cut at the exact length."""
    from build import corpus

    pairs = corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR)
    paragraphs = ["".join(pair.zh for pair in pairs[i : i + 10]) for i in range(0, len(pairs), 10)]
    text = "\n\n".join(paragraphs)
    while len(text) < characters:
        text = text + "\n\n" + text
    return text[:characters]


def _config(bundle_dir: Path, threads: int) -> Any:
    from handler.config import RuntimeConfig

    return RuntimeConfig(bundle_dir=bundle_dir, threads=threads)


# --- measurements, each in its own process --------------------------------------------------------------------


def measure_cold_start(bundle_dir: Path, threads: int) -> dict[str, Any]:
    began = time.perf_counter()
    from handler import coldstart

    imported = time.perf_counter()
    service = coldstart.get_service(_config(bundle_dir, threads))
    ready = time.perf_counter()
    timings = service.model.timings
    return {
        "import_s": imported - began,
        "load_s": timings["load_s"],
        "warmup_s": timings["warmup_s"],
        "cold_start_s": ready - began,
        "rss_after_load_mb": current_rss_mb(),
        "peak_rss_mb": peak_rss_mb(),
    }


def measure_speed(bundle_dir: Path, threads: int, repeats: int) -> dict[str, Any]:
    from handler import coldstart
    from handler.model.families.base import SearchRequest

    service = coldstart.get_service(_config(bundle_dir, threads))
    loaded = service.model
    spent = _time_model_calls(loaded.model)
    encoded = loaded.tokenizer.encode_batch(bench_sentences())
    steps = FORCED_TOKENS + 1  # FORCED_TOKENS tokens, then the end of sentence
    result: dict[str, Any] = {"source_tokens": statistics.mean(len(ids) for ids in encoded)}
    for batch_size in BATCH_SIZES:
        rows = encoded[:batch_size]
        for beam in BEAM_SIZES:
            request = SearchRequest(beam, steps, repetition_guard=False, min_new_tokens=FORCED_TOKENS)
            times, produced = [], 0
            parts: dict[str, list[float]] = {"encode": [], "step": []}
            for _ in range(repeats):
                spent.update(encode=0.0, step=0.0)
                started = time.perf_counter()
                outputs = [hypothesis.ids for hypothesis in loaded.search(rows, request)]
                times.append(time.perf_counter() - started)
                for part in parts:
                    parts[part].append(spent[part])
                # a family whose maximum length excludes the end of sentence (CSANMT) stops at FORCED_TOKENS + 1
                produced = sum(len(tokens) for tokens in outputs)
                if min(len(tokens) for tokens in outputs) < FORCED_TOKENS:
                    raise RuntimeError(f"batch {batch_size} beam {beam}: an output is shorter than {FORCED_TOKENS}")
            seconds = statistics.median(times)
            result[f"b{batch_size}_beam{beam}_tokens_per_s"] = produced / seconds
            result[f"b{batch_size}_beam{beam}_s"] = seconds
            result[f"b{batch_size}_beam{beam}_encode_s"] = statistics.median(parts["encode"])
            result[f"b{batch_size}_beam{beam}_steps_s"] = statistics.median(parts["step"])
            result[f"b{batch_size}_beam{beam}_python_s"] = statistics.median(
                total - encode - step for total, encode, step in zip(times, parts["encode"], parts["step"], strict=True)
            )
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def _time_model_calls(model: Any) -> dict[str, float]:
    """Seconds spent in ``model.encode`` and ``model.step`` since the caller last reset them (this process only)."""
    spent = {"encode": 0.0, "step": 0.0}

    def timed(part: str, call: Any) -> Any:
        def run(*args: Any) -> Any:
            began = time.perf_counter()
            try:
                return call(*args)
            finally:
                spent[part] += time.perf_counter() - began

        return run

    model.encode = timed("encode", model.encode)
    model.step = timed("step", model.step)
    return spent


def measure_longest_request(bundle_dir: Path, threads: int, characters: int) -> dict[str, Any]:
    from handler import coldstart

    service = coldstart.get_service(_config(bundle_dir, threads))
    text = long_request(characters)
    service.translate(text[:10])  # the request path once, before the clock starts
    after_load = current_rss_mb()
    started = time.perf_counter()
    first_pass: list[float] = []

    def progress(done: int, total: int) -> None:  # on stderr, so a run stopped early still shows its figures
        elapsed = time.perf_counter() - started
        print(f"{elapsed:.0f} s: {done:,} of {total:,} characters, peak RSS {peak_rss_mb():,.0f} MB", file=sys.stderr)
        sys.stderr.flush()
        if done >= total and not first_pass:
            first_pass.append(elapsed)

    # the request's path with a progress report after each batch (translate() is translate_document without it)
    translation = service.translate_document(text, progress=progress)
    seconds = time.perf_counter() - started
    # the progress counts the first decoding of every segment; what follows it is the protected spans' later rounds
    # (handler.text.spans.translate_protected: a random model keeps no span, so every segment with one is decoded
    # again with placeholders, then in pieces)
    first_pass_seconds = first_pass[0] if first_pass else seconds
    print(f"{seconds:.0f} s: translated (first pass over every segment: {first_pass_seconds:.0f} s)", file=sys.stderr)
    return {
        "characters": len(text),
        "source_tokens": service.model.tokenizer.count_tokens(text),
        "translated_characters": len(translation),
        "seconds": seconds,
        "first_pass_seconds": first_pass_seconds,
        "rss_after_load_mb": after_load,
        "peak_rss_mb": peak_rss_mb(),
        "rss_after_mb": current_rss_mb(),
        "batch_tokens": service.config.batch_tokens,
    }


def run_child(args: list[str], timeout_s: float) -> dict[str, Any]:
    from bench.pipeline.side_by_side import compile_bytecode

    compile_bytecode()  # as the images compile it
    completed = subprocess.run(
        [sys.executable, "-m", "bench.pipeline.csanmt_bench", *args],
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), MALLOC_ARENA_MAX="2"),  # as the images run (Dockerfile)
        stdout=subprocess.PIPE,
        stderr=None,  # progress lines pass through
        text=True,
        check=False,
        timeout=timeout_s,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"benchmark process {args} failed (exit {completed.returncode}); its errors are above")
    return json.loads(completed.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# --- report ---------------------------------------------------------------------------------------------------


def _verdict(value: float, target: float) -> str:
    return f"{'PASS' if value <= target else 'FAIL'} (target <= {target:,.0f})"


def report(bundle_dir: Path, threads: int, figures: dict[str, dict[str, Any]]) -> str:
    manifest = json.loads((bundle_dir / "manifest.json").read_text(encoding="utf-8"))
    bundle_mb = sum(path.stat().st_size for path in bundle_dir.iterdir() if path.is_file()) / 1e6
    spec = manifest["model"]
    cold, speed, longest = figures["cold start"], figures["speed"], figures["longest request"]
    peak = max(entry["peak_rss_mb"] for entry in figures.values())
    lines = [
        f"bundle {bundle_dir} ({manifest.get('name')}, family {manifest.get('family')}): d_model {spec['d_model']}, "
        f"{spec['encoder_layers']} + {spec['decoder_layers']} layers, {spec['attention_heads']} heads, "
        f"target vocabulary {spec['vocab_size']:,}; {threads} intra-op threads; {os.cpu_count()} CPUs",
        "",
        "| figure | measured | target |",
        "|---|---|---|",
        f"| bundle on disk | {bundle_mb:,.1f} MB | {_verdict(bundle_mb, TARGETS['bundle_mb'])} MB |",
        f"| cold start (import + load + warm-up) | {cold['cold_start_s']:.2f} s ({cold['import_s']:.2f} + "
        f"{cold['load_s']:.2f} + {cold['warmup_s']:.2f}) | "
        f"{_verdict(cold['cold_start_s'], TARGETS['cold_start_s'])} s |",
        f"| RSS after load | {cold['rss_after_load_mb']:,.0f} MB | |",
        f"| peak RSS, longest request ({longest['characters']:,} characters, "
        f"{longest['source_tokens']:,} source tokens, beam 4, {longest['seconds']:.0f} s, of which "
        f"{longest.get('first_pass_seconds', longest['seconds']):.0f} s the first pass of every segment) | "
        f"{longest['peak_rss_mb']:,.0f} MB | "
        f"{_verdict(longest['peak_rss_mb'], TARGETS['peak_rss_mb'])} MB |",
        f"| peak RSS of any measurement | {peak:,.0f} MB; {FUNCTION_MB - peak:,.0f} MB of {FUNCTION_MB} MB left | |",
    ]
    for batch_size in BATCH_SIZES:
        for beam in BEAM_SIZES:
            name = "greedy" if beam == 1 else f"beam {beam}"
            key = f"b{batch_size}_beam{beam}"
            split = (
                f": encoder {speed[key + '_encode_s']:.2f}, decoder steps {speed[key + '_steps_s']:.2f}, "
                f"Python {speed[key + '_python_s']:.2f}"
                if key + "_encode_s" in speed
                else ""
            )
            lines.append(
                f"| batch {batch_size}, {name}, {FORCED_TOKENS} forced tokens | "
                f"{speed[key + '_tokens_per_s']:,.1f} tokens/s ({speed[key + '_s']:.2f} s{split}) | |"
            )
    lines.append("")
    lines.append(f"source tokens per speed sentence: {speed['source_tokens']:.1f}; raw figures: {json.dumps(figures)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline.csanmt_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", type=Path, required=True, help="a CSANMT bundle folder")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2, help="runs per speed figure; the median counts")
    parser.add_argument(
        "--request-chars", type=int, default=0, help="longest-request size (default: TRANSLATE_MAX_CHARS)"
    )
    parser.add_argument("--quick", action="store_true", help="one repeat and a 2,000-character request (smoke test)")
    parser.add_argument("--child", choices=("cold", "speed", "longest"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    bundle_dir = args.bundle.resolve()
    if args.child == "cold":
        print(json.dumps(measure_cold_start(bundle_dir, args.threads)))
        return 0
    if args.child == "speed":
        print(json.dumps(measure_speed(bundle_dir, args.threads, args.repeats)))
        return 0
    if args.child == "longest":
        print(json.dumps(measure_longest_request(bundle_dir, args.threads, args.request_chars)))
        return 0

    from handler.config import RuntimeConfig

    characters = args.request_chars or (2_000 if args.quick else RuntimeConfig.from_env().max_chars)
    repeats = 1 if args.quick else args.repeats
    common = ["--bundle", str(bundle_dir), "--threads", str(args.threads)]
    figures: dict[str, dict[str, Any]] = {}
    for name, child in (
        ("cold start", ["--child", "cold"]),
        ("speed", ["--child", "speed", "--repeats", str(repeats)]),
        ("longest request", ["--child", "longest", "--request-chars", str(characters)]),
    ):
        print(f"measuring {name} in a fresh process", flush=True)
        figures[name] = run_child([*common, *child], timeout_s=4 * 3600)
    print(report(bundle_dir, args.threads, figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
