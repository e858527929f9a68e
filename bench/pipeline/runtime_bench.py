"""`make bench`: this runtime beside CTranslate2 and transformers, measured side by side (a script, not a test).

    python -m bench.pipeline.runtime_bench [--rounds 3] [--transformers-rounds 1] [--threads 2] [--repeats 3]
                                  [--rebuild] [--quick] [--out docs/benchmarks.md]
                                  [--csanmt-bundle DIR | --csanmt-build] [--csanmt-checkpoint DIR]
                                  [--figures-json FILE] [--streaming-rounds 2] [--only streaming]

Models (built once, cached in ``.bench/runtime/``):

* **opus-mt-sized**: a random MarianMTModel with opus-mt-zh-en's dimensions (d_model 512, 6 + 6 layers, 8 heads,
  FFN 2048, vocabulary 65,001, swish, tied embeddings) and a SentencePiece tokenizer trained on the repository's
  dev set (its vocabulary padded with filler entries to 65,001 ids); this runtime gets the bundle
  ``build.export.export_bundle`` writes from it (verification thresholds for a random model, below), CTranslate2
  the same checkpoint converted by its Transformers converter (int8, ``bench.pipeline.ctranslate2_model``), transformers
  the checkpoint itself (FP32);
* **default**: the shipped bundle ``model_artifacts/default`` for this runtime; CTranslate2 and transformers get
  the same architecture from ``model_artifacts/training-checkpoint`` (``bench.pipeline.default_checkpoint``);
* **CSANMT full size** (``--csanmt-bundle DIR``, or ``--csanmt-build`` to build the random one with
  ``bench.pipeline.csanmt_full_size`` and ``build.export``: minutes and ~8 GB): this runtime alone, as no other engine
  converts CSANMT; with ``--csanmt-checkpoint DIR`` (the ModelScope folder the bundle was built from; known already
  with ``--csanmt-build``) also beside ModelScope's own TensorFlow ``TranslationPipeline`` on that folder
  (``bench.pipeline.csanmt_tensorflow``: its own section and table).

Each engine runs in fresh processes (``bench.pipeline.engines``), ``--rounds`` rounds with the engine order rotated per
round, on the same token ids with exactly 40 output tokens; each process measures its own memory. The run also measures
the machine's memory read bandwidth on the same threads (``bench.pipeline.bandwidth``) for the bandwidth bound, the INT8
GEMM peak through ONNX Runtime (``bench.pipeline.gemm_peak``, at the start and at the end, the better pass counting) for
each batched figure's share of the compute bound, and the characters/s of news-length sentences through
``TranslationService`` (``bench.pipeline.workload``) for the cost table (``bench.pipeline.cost``), the translation
memory's figures (``bench.pipeline.memory_bench``) and streaming's (``bench.pipeline.streaming_bench``: the first and
last segment, streamed against not streamed, on the default model and the CSANMT). It prints the tables, writes them to
``--out`` (default ``docs/benchmarks.md``, with the chart ``docs/benchmarks.png``) and exits 1, naming each, when any
figure could not be measured (nothing is written then). Every ratio has issue 34's goal beside it
(``bench.pipeline.report.goal_for``). Beside the report it writes its figures as JSON (``docs/benchmarks.json``), and
before overwriting a report it names, in the report ("Since the last run") and in the printed summary, every figure of
this runtime that moved the wrong way by more than 5 % since then (read from that JSON copy, or from the old report's
tables when there is none). Writing ``docs/benchmarks.md``, it also rewrites the figures README.md and docs/ quote from
it (``bench.pipeline.quoted``). ``--quick`` (the smoke test): the default model only, one round, 8 output tokens, a
batch of 4, one repeat, a few sentences for the workload; it writes to ``.bench/quick/benchmarks.md`` unless ``--out``
says otherwise. ``--only streaming`` measures the streaming figures alone (the default model, and the CSANMT given with
``--csanmt-bundle``) and replaces that section of the existing report, keeping the rest. The random models' outputs are
meaningless; only speed, memory and size are measured.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from bench.pipeline import (
    bandwidth,
    cost,
    csanmt_tensorflow,
    ctranslate2_model,
    default_checkpoint,
    gemm_peak,
    memory_bench,
    quoted,
    report,
    streaming_bench,
)
from bench.pipeline.floor import Floor, measure_floors
from bench.pipeline.side_by_side import (
    CTRANSLATE2,
    RUNTIME,
    Setup,
    SetupResult,
    Workload,
    missing,
    run_process,
    run_setup,
    summarise,
)
from handler.config import REPO_ROOT

BENCH_DIR = REPO_ROOT / ".bench" / "runtime"  # holds checkpoint/, bundle/, ctranslate2-int8/ and default/
CHECKPOINT = "checkpoint"
BUNDLE = "bundle"
CTRANSLATE2_DIR = "ctranslate2-int8"
DEFAULT_BUNDLE = REPO_ROOT / "model_artifacts" / "default"
DOCS_OUT = REPO_ROOT / "docs" / "benchmarks.md"
QUICK_OUT = REPO_ROOT / ".bench" / "quick" / "benchmarks.md"

FORCED_TOKENS = 40
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
FULL = Workload(forced_tokens=FORCED_TOKENS, batch1_sentences=2, batch_size=16, repeats=3, beam_size=BEAM_SIZE)
QUICK = Workload(forced_tokens=8, batch1_sentences=1, batch_size=4, repeats=1, beam_size=BEAM_SIZE)
WORKLOAD_SENTENCES = {"full": 32, "quick": 2}
# the translation memory's situations (bench.pipeline.memory_bench), on the default model
MEMORY_JOB = {
    "full": {
        "repeats": 3,
        "typing_chars": 2000,
        "subtitle_lines": 600,
        "stock_share": 0.3,
        "lines_per_request": 20,
        "part_chars": 20000,
    },
    "quick": {
        "repeats": 1,
        "typing_chars": 2000,
        "subtitle_lines": 60,
        "stock_share": 0.3,
        "lines_per_request": 20,
        "part_chars": 1000,
    },
}
REQUEST_TEXTS = 32  # texts per request of the cost workload
# streaming (bench.pipeline.streaming_bench): quick mode's short stand-ins for 2,000 characters and the longest
QUICK_STREAMING_CHARS = {"short": 300, "longest": 600}
STREAMING_TITLES = {
    "default": "`default`: the shipped default model (`model_artifacts/default`)",
    "csanmt-full-size": "`csanmt-full-size`: the random CSANMT of the damo/nlp_csanmt_translation_zh2en shape, with "
    "`--csanmt-bundle DIR` (its longest request: `--csanmt-request-chars`, default TRANSLATE_MAX_CHARS)",
}

# --- building the model ---------------------------------------------------------------------------------------


def build_checkpoint(out_dir: Path) -> None:
    from build import corpus
    from build.families.marian.configs import ModelShape, marian_config, new_model
    from build.training import vocab

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
    from handler.model import bundle

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


# --- the models each engine loads -----------------------------------------------------------------------------


def opus_mt_setup(work_dir: Path, rebuild: bool) -> tuple[Setup, dict[str, Any]]:
    sizes = build_bundle(work_dir, rebuild)
    print("converting the checkpoint for CTranslate2 (int8)", flush=True)
    ct2 = ctranslate2_model.convert(work_dir / CHECKPOINT, work_dir / CTRANSLATE2_DIR, force=rebuild)
    setup = Setup(
        key="opus-mt-sized",
        title="random Marian, opus-mt-zh-en shape",
        bundle_dir=work_dir / BUNDLE,
        ctranslate2_dir=ct2,
        checkpoint_dir=work_dir / CHECKPOINT,
        notes=(
            "d_model 512, 6 + 6 layers, 8 heads, FFN 2048, vocabulary 65,001, tied embeddings, random weights; "
            "every engine loads the same checkpoint (this runtime: the bundle `build.export` writes from it)",
        ),
    )
    return setup, sizes


def default_setup(work_dir: Path, rebuild: bool) -> Setup:
    print("writing the default model's transformers folder and converting it for CTranslate2", flush=True)
    checkpoint = default_checkpoint.write(work_dir / "default" / CHECKPOINT, force=rebuild)
    ct2 = ctranslate2_model.convert(checkpoint, work_dir / "default" / CTRANSLATE2_DIR, force=rebuild)
    step = default_checkpoint.training_step()
    return Setup(
        key="default",
        title="shipped default model (d_model 256, 6 + 3 layers)",
        bundle_dir=DEFAULT_BUNDLE,
        ctranslate2_dir=ct2,
        checkpoint_dir=checkpoint,
        notes=(
            "this runtime: the shipped bundle `model_artifacts/default`; CTranslate2 and transformers: "
            f"`model_artifacts/training-checkpoint` (the same architecture and vocabulary, main-run step {step}, "
            "not the cooldown weights the bundle holds: with forced output lengths the figures depend on the "
            "shapes, not the values)",
        ),
    )


def csanmt_setup(work_dir: Path, bundle_dir: Path | None, build: bool) -> Setup | None:
    if bundle_dir is None and not build:
        return None
    if bundle_dir is None:
        checkpoint, bundle_dir = work_dir / "csanmt" / CHECKPOINT, work_dir / "csanmt" / BUNDLE
        if not (bundle_dir / "manifest.json").is_file():
            print("building the full-size random CSANMT checkpoint (minutes, ~8 GB) and its bundle", flush=True)
            for command in (
                [sys.executable, "-m", "bench.pipeline.csanmt_full_size", "make", str(checkpoint)],
                [
                    sys.executable,
                    "-m",
                    "build.export",
                    "--model",
                    str(checkpoint),
                    "--out",
                    str(bundle_dir),
                    "--family",
                    "csanmt",
                    "--force",
                ],
            ):
                subprocess.run(command, cwd=REPO_ROOT, check=True)
    return Setup(
        key="csanmt-full-size",
        title="random CSANMT, damo/nlp_csanmt_translation_zh2en shape",
        bundle_dir=bundle_dir.resolve(),
        notes=(
            "hidden 1024, 24 encoder / 6 decoder layers, 16 heads, vocabularies of 50,000, random weights "
            f"(`bench.pipeline.csanmt_full_size`); bundle `{bundle_dir}`; this runtime alone: CTranslate2 has no "
            "CSANMT converter and transformers no CSANMT model",
        ),
    )


def csanmt_longest_request(setup: Setup, args: argparse.Namespace) -> dict[str, Any]:
    """Peak RSS and seconds of the longest request through the service, in a fresh process (``csanmt_bench``)."""
    from bench.pipeline import csanmt_bench
    from handler.config import RuntimeConfig

    max_chars = RuntimeConfig.from_env().max_chars
    characters = args.csanmt_request_chars or (2_000 if args.quick else max_chars)
    figures = csanmt_bench.run_child(
        ["--bundle", str(setup.bundle_dir), "--threads", str(args.threads), "--child", "longest"]
        + ["--request-chars", str(characters)],
        timeout_s=4 * 3600,
    )
    return {**figures, "max_chars": max_chars}


def measure_streaming(setup: Setup, args: argparse.Namespace) -> dict[str, Any]:
    """Streamed against not streamed on ``setup``'s bundle, for about 2,000 characters and the longest request."""
    from handler.config import RuntimeConfig

    csanmt = setup.key == "csanmt-full-size"
    if args.quick:
        measured = streaming_bench.texts(QUICK_STREAMING_CHARS["longest"], QUICK_STREAMING_CHARS["short"])
    else:
        max_chars = RuntimeConfig.from_env().max_chars
        measured = streaming_bench.texts((args.csanmt_request_chars or max_chars) if csanmt else max_chars)
    rounds = 1 if args.quick else min(args.streaming_rounds, args.csanmt_rounds) if csanmt else args.streaming_rounds
    timeout_s = 4 * 3600 if csanmt else 1800  # a random CSANMT runs every sentence to its maximum length
    return streaming_bench.compare(
        setup.bundle_dir,
        measured,
        args.threads,
        rounds,
        1 if args.quick or csanmt else args.repeats,
        run=lambda job: streaming_bench.run_measuring_process(job, timeout_s),
        progress=lambda line: print(line, flush=True),
    )


def measure_streaming_on(setups: list[Setup], args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    """``measure_streaming`` on each setup: the figures by model key, and what could not be measured."""
    streaming, problems = {}, []
    for setup in setups:
        print(f"measuring streaming on {setup.title}", flush=True)
        try:
            streaming[setup.key] = measure_streaming(setup, args)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as error:
            problems.append(f"{setup.key}: the streaming figures failed: {error}")
    problems += [problem for figures in streaming.values() for problem in streaming_bench.missing(figures)]
    return streaming, problems


def streaming_section(
    streaming: dict[str, dict[str, Any]], command: str, started: datetime.datetime, loads: tuple[str, str]
) -> list[str]:
    measured_by = (
        f"Measured by `{command}` on {started:%Y-%m-%d %H:%M} UTC (load average at the start {loads[0]}, at the "
        f"end {loads[1]}) with"
    )
    return streaming_bench.section_lines(streaming, STREAMING_TITLES, measured_by)


def only_streaming(args: argparse.Namespace, out: Path, command: str, started: datetime.datetime) -> int:
    """``--only streaming``: measure the streaming figures and replace that section of the report at ``out``."""
    if not out.is_file():
        print(
            f"{out} does not exist: --only streaming replaces a section of the report make bench writes",
            file=sys.stderr,
        )
        return 1
    start_load = load_average()
    setups = [Setup(key="default", title="shipped default model", bundle_dir=DEFAULT_BUNDLE)]
    csanmt = csanmt_setup(args.work_dir, args.csanmt_bundle, args.csanmt_build)
    streaming, problems = measure_streaming_on(setups + ([] if csanmt is None else [csanmt]), args)
    lines = streaming_section(streaming, command, started, (start_load, load_average()))
    print("\n".join(lines))
    if problems:
        print(f"\nFAILED: {len(problems)} figure(s) could not be measured; nothing was written:", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    out.write_text(streaming_bench.replace_section(out.read_text(encoding="utf-8"), lines), encoding="utf-8")
    print(f"\nreplaced the streaming section of {out}")
    if out.resolve() == DOCS_OUT.resolve():
        for page in quoted.fill_pages(REPO_ROOT, out):
            print(f"updated the figures {page.relative_to(REPO_ROOT)} quotes from it")
    if args.figures_json is not None:
        args.figures_json.write_text(json.dumps({"streaming": streaming}, indent=1), encoding="utf-8")
    return 0


# --- the run --------------------------------------------------------------------------------------------------


def figures_copy(out: Path) -> Path:
    """The JSON copy of the report's figures, next to it (``docs/benchmarks.json``)."""
    return out.with_suffix(".json")


def _shown(path: Path) -> str:
    resolved = path.resolve()
    return str(resolved.relative_to(REPO_ROOT)) if resolved.is_relative_to(REPO_ROOT) else str(path)


def tracked_json(tracked: dict[str, report.Tracked]) -> dict[str, dict[str, Any]]:
    return {name: asdict(figure) for name, figure in tracked.items()}


def since_last_run(
    out: Path, tracked: dict[str, report.Tracked], env: dict[str, str]
) -> tuple[list[str], list[report.Regression]]:
    """What moved the wrong way since the report at ``out`` (about to be overwritten): its JSON copy's figures
    where there is one, else the figures read from its Markdown; the lines for the report, and the moves."""
    previous_report = out.read_text(encoding="utf-8") if out.is_file() else ""
    previous_json = None
    if figures_copy(out).is_file():
        try:
            previous_json = json.loads(figures_copy(out).read_text(encoding="utf-8"))
        except ValueError:
            previous_json = None
    previous = report.previous_values(tracked, previous_json, previous_report)
    moved = report.regressions(tracked, previous)
    written = re.search(r" on (\d{4}-\d\d-\d\d \d\d:\d\d) UTC", previous_report)
    source = f"its JSON copy `{_shown(figures_copy(out))}`" if isinstance(previous_json, dict) else "its tables"
    since = f"the previous `{_shown(out)}`" + (f" (written {written.group(1)} UTC; {source})" if written else "")
    cpu = None
    if isinstance(previous_json, dict):
        cpu = previous_json.get("environment", {}).get("CPU")
    elif previous_report:
        try:
            cpu = quoted.figure(previous_report, "Environment :: CPU :: /CPU: (.*)/").strip()
        except quoted.QuoteError:
            cpu = None
    note = ""
    if cpu and cpu != env.get("CPU"):
        note = f"The previous run was on another CPU ({cpu}; this one: {env.get('CPU')}): its speeds are another's."
    return report.regression_lines(moved, len(previous), since, note), moved


def measure_bandwidth(threads: int, setups: list[Setup]) -> dict[str, float]:
    steps = {setup.key: bandwidth.decoder_step_weight_bytes(setup.bundle_dir / "decoder.onnx") for setup in setups}
    largest = max(step["total"] for step in steps.values())
    dram_buffer = bandwidth.default_buffer_bytes()
    return {
        "threads": threads,
        "dram_buffer_bytes": dram_buffer,
        "dram_bytes_per_s": bandwidth.read_bandwidth(threads, dram_buffer),
        "weights_buffer_bytes": largest,
        "weights_bytes_per_s": bandwidth.read_bandwidth(threads, largest),
        "last_level_cache_bytes": bandwidth.last_level_cache_bytes() or 0,
    }


def measure_workload(setup: Setup, threads: int, sentences: list[str]) -> dict[str, Any]:
    job = {
        "bundle_dir": str(setup.bundle_dir),
        "threads": threads,
        "sentences": sentences,
        "request_texts": REQUEST_TEXTS,
    }
    return run_process("bench.pipeline.workload", job)


def environment() -> dict[str, str]:
    import ctranslate2
    import numpy
    import onnxruntime
    import torch
    import transformers

    model = platform.processor() or "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "CPU": model,
        "cores": f"{usable} usable ({os.cpu_count()} online)",
        "last-level cache": f"{(bandwidth.last_level_cache_bytes() or 0) / 2**20:.0f} MiB",
        "Python": platform.python_version(),
        "onnxruntime": onnxruntime.__version__,
        "ctranslate2": ctranslate2.__version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "numpy": numpy.__version__,
        "system": platform.platform(),
    }


def command_line(argv: list[str] | None) -> str:
    args = sys.argv[1:] if argv is None else argv
    command = "python -m bench.pipeline.runtime_bench" + ("" if not args else " " + shlex.join(args))
    if os.environ.get("MAKELEVEL"):
        command = "make bench" + (f" BENCH_ARGS={shlex.quote(shlex.join(args))}" if args else "") + f"  ({command})"
    return command


def load_average() -> str:
    try:
        return " / ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


# --- the document ---------------------------------------------------------------------------------------------


def _workload_lines(workloads: dict[str, dict[str, Any]], titles: dict[str, str]) -> list[str]:
    lines = [
        "| model (this runtime, 2 threads) | sentences | characters | seconds | characters/s | peak RSS |",
        "|---|---|---|---|---|---|",
    ]
    for key, figures in workloads.items():
        lines.append(
            f"| {titles[key]} | {figures['sentences']} | {figures['characters']:,} | {figures['seconds']:.1f} | "
            f"{figures['chars_per_s']:,.1f} | {figures['peak_rss_mb']:,.0f} MB |"
        )
    return lines


def document(
    results: list[SetupResult],
    sizes: dict[str, Any] | None,
    band: dict[str, float],
    workloads: dict[str, dict[str, Any]],
    env: dict[str, str],
    command: str,
    started: datetime.datetime,
    seconds: float,
    loads: tuple[str, str],
    quick: bool,
    transformers_rounds: int,
    memory: dict[str, Any] | None = None,
    csanmt_beside_tensorflow: list[str] | None = None,
    streaming: list[str] | None = None,
    gemm: dict[str, Any] | None = None,
    since_last_run: list[str] | None = None,
    floors: Mapping[str, Floor] | None = None,
) -> str:
    from handler.config import RuntimeConfig

    workload = results[0].workload
    lines = [
        "# Benchmarks" + (" (quick mode: a smoke test, not figures to quote)" if quick else ""),
        "",
        f"Written by `{command}` on {started:%Y-%m-%d %H:%M} UTC in {seconds / 60:.1f} minutes. Do not edit by hand:"
        " run `make bench` again.",
        "",
        "## Environment",
        "",
        *[f"- {name}: {value}" for name, value in env.items()],
        f"- load average (1 / 5 / 15 min) at the start: {loads[0]}; at the end: {loads[1]} (a shared machine: "
        "the engines run interleaved, so that noise falls on all of them; compare the ratios)",
        "",
        *(["## Since the last run", "", *since_last_run, ""] if since_last_run is not None else []),
        "## How it is measured",
        "",
        f"- Every engine on {workload.batch_size} sentences of the repository's dev set (12–40 characters), the "
        f"same token ids for all (this runtime's tokenizer of the bundle), exactly {workload.forced_tokens} output "
        "tokens per hypothesis (end of sentence banned before, length capped there), no repetition guard, "
        "threads: 2 intra-op, 1 inter-op (CTranslate2 `intra_threads=2, inter_threads=1`, int8; transformers "
        "`torch.set_num_threads(2)`, FP32 `generate`; this runtime `TRANSLATE_THREADS=2`).",
        f"- Each engine in fresh processes (`bench.pipeline.engines`), {results[0].rounds} round(s) "
        "(CSANMT: its own count, below), the engine order rotated "
        "every round; a cell is the median over the processes, (min–max) in brackets. transformers (the slow FP32 "
        f"reference, not a target) runs in {transformers_rounds} round(s) only, one timed call per figure and one "
        "batch-1 sentence.",
        "- Cold start: from the parent's clock just before it starts the process to the first translation done "
        "(text in, text out with the engine's own tokenizer, beam 4, the forced length): interpreter start, "
        "imports (the checkout's modules byte-compiled beforehand, as the images compile them), loading, this "
        "runtime's warm-up and hash checks included. RSS after load: the process's own "
        "`VmRSS` right then (this runtime's text-in, text-out call ends, as every service request does, by "
        "returning the freed heap to the system: `handler.model.memory`); peak RSS: its own `VmHWM` at the end (after "
        "the batch beam-4 runs).",
        f"- Batch-1 latency: the median over {workload.batch1_sentences} sentence(s) × {workload.repeats} "
        f"repeat(s) after one untimed call; batch-{workload.batch_size} tokens/s: {workload.batch_size} × "
        f"{workload.forced_tokens} output tokens ÷ the median of {workload.repeats} call(s) after an untimed one.",
        "- Model files on disk: every file of the folder the engine loads (this runtime: the bundle; "
        "CTranslate2: `model.bin`, its vocabulary, config and the two SentencePiece models; transformers: the "
        "checkpoint folder).",
        "- Goals (issue 34), in each table beside the ratio: every figure at or ahead of CTranslate2 on the Marian "
        "models (ratio ≤ 1.00 where lower is better, ≥ 1.00 for tokens/s); the full-size CSANMT: batch-16 beam 4 "
        f"≥ {report.CSANMT_GOALS['batch_beam4_tok_s'].bound:,.0f} tok/s, the first translation ≤ "
        f"{report.CSANMT_GOALS['cold_start_s'].bound} s after the process starts, ready ≤ "
        f"{report.CSANMT_READY.bound} s, "
        f"the longest request ({RuntimeConfig.from_env().max_chars:,} characters) ≤ "
        f"{report.CSANMT_LONGEST_SECONDS.bound:,.0f} s with a peak ≤ {report.CSANMT_LONGEST_PEAK.bound:,.0f} MB.",
        "",
    ]
    if sizes is not None:
        fp32, int8 = sizes.get("fp32_graph_bytes"), sizes.get("int8_graph_bytes")
        if fp32 and int8:
            lines += [
                f"The opus-mt-sized bundle: INT8 graphs {int8 / 1e6:,.1f} MB, {int8 / fp32:.1%} of the FP32 graphs "
                f"({fp32 / 1e6:,.1f} MB); the PyTorch checkpoint's weights {sizes['checkpoint_bytes'] / 1e6:,.1f} MB; "
                f"verification figures of `build.export`: {sizes['verification']}.",
                "",
            ]
    for result in results:
        lines += [
            f"## {result.setup.title}",
            "",
            *[f"- {note}" for note in result.setup.notes],
            f"- {result.source_tokens:.1f} source tokens per sentence on average",
            "",
        ]
        lines += report.side_by_side_table(result)
        lines += ["", *report.cold_start_parts_line(result)]
        lines += report.floor_lines(result, floors or {})
        longest = result.extra.get("longest_request")
        if longest:
            lines.append(
                f"- The longest request, through the service with its defaults (beam 4, its own splitting and "
                f"batching; a fresh process, `bench.pipeline.csanmt_bench`): {longest['characters']:,} characters "
                f"({longest['source_tokens']:,} source tokens) in {longest['seconds']:,.0f} s, RSS "
                f"{longest['rss_after_load_mb']:,.0f} MB after load, **peak {longest['peak_rss_mb']:,.0f} MB**"
                + (
                    f" (the longest a request may be is {longest['max_chars']:,} characters)"
                    if longest["characters"] < longest["max_chars"]
                    else ""
                )
                + "."
            )
        lines += report.csanmt_goal_lines(result)
        if "decoder_step_bytes" in result.extra:
            lines += ["", "Bandwidth bound at batch 1:", "", *report.bandwidth_table(result, band)]
        if gemm is not None and "macs" in result.extra:
            lines += [
                "",
                f"Compute bound at batch {result.workload.batch_size}: the INT8 GEMM peak "
                f"({gemm['peak_gmac_s']:,.0f} GMAC/s, below) and each batched figure's share of it:",
                "",
                *report.compute_table(result, result.extra["macs"], gemm["peak_gmac_s"]),
            ]
        lines.append("")
    if csanmt_beside_tensorflow:
        lines += [*csanmt_beside_tensorflow, ""]
    lines += [
        "## Memory read bandwidth",
        "",
        f"- {band['threads']} threads reading a {band['dram_buffer_bytes'] / 2**20:,.0f} MiB float32 buffer "
        f"(`numpy.max`, one half per thread, best of 5 passes; the last-level cache is "
        f"{band['last_level_cache_bytes'] / 2**20:,.0f} MiB): **{band['dram_bytes_per_s'] / 1e9:,.1f} GB/s**, "
        "the figure the bounds above use",
        "- the same over a buffer the size of the largest decoder's weights "
        f"({band['weights_buffer_bytes'] / 1e6:,.1f} MB, part of it cache-resident): "
        f"{band['weights_bytes_per_s'] / 1e9:,.1f} GB/s. "
        "A share above 100 % means that engine reads part of the weights from the cache, faster than memory.",
        "",
    ]
    if gemm is not None:
        lines += ["## INT8 GEMM peak", "", *report.gemm_peak_lines(gemm), ""]
    titles = {result.setup.key: result.setup.title for result in results}
    if workloads:
        lines += [
            "## What a user pays",
            "",
            "Characters/s of news-length Chinese sentences from `data/corpus/dev.zh-en.tsv.gz` (30–120 "
            f"characters) sent in requests of {REQUEST_TEXTS} texts through `handler.service.TranslationService` "
            "with its default options (beam 4, repetition guard, protected spans) and its own batching, 2 threads, "
            "one fresh process per model (`bench.pipeline.workload`). The random opus-mt-sized model never ends a "
            "sentence early, so it decodes to the length limit: more work per character than a trained model of that "
            "size.",
            "",
            *_workload_lines(workloads, titles),
            "",
            *cost.section_lines(workloads, titles, REQUEST_TEXTS),
            "",
        ]
    if memory is not None:
        lines += memory_bench.lines(memory, titles.get("default", "default"))
    if streaming is not None:
        lines += streaming
    if not quick:
        lines += ["![This runtime vs CTranslate2](benchmarks.png)", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.pipeline.runtime_bench", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per engine (default 3)")
    parser.add_argument(
        "--transformers-rounds", type=int, default=1, help="rounds transformers (slow, FP32) runs in (default 1)"
    )
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads for every engine (default 2)")
    parser.add_argument("--repeats", type=int, default=FULL.repeats, help="timed calls per figure in a process")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached checkpoints, bundle, conversions")
    parser.add_argument("--quick", action="store_true", help="smoke test: default model, one short round")
    parser.add_argument("--out", type=Path, help=f"the Markdown to write (default {DOCS_OUT}; quick: {QUICK_OUT})")
    parser.add_argument("--csanmt-bundle", type=Path, help="also measure this full-size CSANMT bundle (runtime only)")
    parser.add_argument(
        "--opus-bundle", type=Path, help="this runtime's bundle of the opus-mt-sized checkpoint (default: build one)"
    )
    parser.add_argument("--csanmt-rounds", type=int, default=1, help="rounds for the CSANMT model (default 1)")
    parser.add_argument("--csanmt-build", action="store_true", help="build the full-size random CSANMT and measure it")
    parser.add_argument(
        "--csanmt-request-chars",
        type=int,
        default=0,
        help="the CSANMT longest request's size (default TRANSLATE_MAX_CHARS; a random model takes minutes)",
    )
    parser.add_argument(
        "--csanmt-checkpoint",
        type=Path,
        help="the ModelScope folder --csanmt-bundle was built from: also measure ModelScope's TF pipeline on it",
    )
    parser.add_argument(
        "--transformers-on",
        default="opus-mt-sized,default",
        help="models transformers runs on, comma-separated (default both: opus-mt-sized,default; '' = none)",
    )
    parser.add_argument("--figures-json", type=Path, help="also write every engine's medians as JSON here")
    parser.add_argument(
        "--streaming-rounds", type=int, default=2, help="rounds of a streamed and a whole process per text (default 2)"
    )
    parser.add_argument(
        "--only",
        choices=("streaming",),
        help="measure this section alone and replace it in the existing report (--out), keeping the rest",
    )
    parser.add_argument("--work-dir", type=Path, default=BENCH_DIR, help=f"model cache (default {BENCH_DIR})")
    args = parser.parse_args(argv)
    if args.csanmt_checkpoint is not None and args.csanmt_bundle is None and not args.csanmt_build:
        parser.error("--csanmt-checkpoint needs --csanmt-bundle (the bundle built from it)")
    started, began = datetime.datetime.now(datetime.UTC), time.perf_counter()
    command, start_load = command_line(argv), load_average()
    workload = QUICK if args.quick else replace(FULL, repeats=args.repeats)
    rounds = 1 if args.quick else args.rounds
    out = args.out or (QUICK_OUT if args.quick else DOCS_OUT)
    if args.only == "streaming":
        return only_streaming(args, out, command, started)

    setups: list[Setup] = []
    sizes = None
    if not args.quick:
        opus, sizes = opus_mt_setup(args.work_dir, args.rebuild)
        if args.opus_bundle is not None:
            note = f"this runtime's bundle: `{args.opus_bundle}` (`--opus-bundle`), exported from the same checkpoint"
            opus = replace(opus, bundle_dir=args.opus_bundle.resolve(), notes=opus.notes + (note,))
            sizes = None
        setups.append(opus)
    setups.append(default_setup(args.work_dir, args.rebuild))
    with_transformers = {key.strip() for key in args.transformers_on.split(",") if key.strip()}
    skipped = ("transformers was not run on this model (`--transformers-on`)",)
    setups = [
        setup if setup.key in with_transformers else replace(setup, checkpoint_dir=None, notes=setup.notes + skipped)
        for setup in setups
    ]
    csanmt = csanmt_setup(args.work_dir, args.csanmt_bundle, args.csanmt_build)
    if csanmt is not None:
        setups.append(csanmt)
    print(f"measuring the memory read bandwidth on {args.threads} threads", flush=True)
    band = measure_bandwidth(args.threads, setups)
    print(f"measuring the INT8 GEMM peak through ONNX Runtime on {args.threads} threads", flush=True)
    gemm_passes = [gemm_peak.measure(args.threads)]

    floors = None
    if any(setup.ctranslate2_dir is not None for setup in setups):  # the Marian models, measured beside CTranslate2
        print(f"measuring each engine's floor (its libraries, no model) in {rounds} round(s)", flush=True)
        floors = measure_floors([RUNTIME, CTRANSLATE2], rounds, run_process)

    results = []
    problems_before: list[str] = []
    for setup in setups:
        print(f"measuring {setup.title}", flush=True)
        result = run_setup(
            setup,
            workload,
            min(rounds, args.csanmt_rounds) if setup is csanmt else rounds,
            args.threads,
            progress=lambda line: print(line, flush=True),
            transformers_rounds=None if args.quick else args.transformers_rounds,
        )
        result.extra["decoder_step_bytes"] = bandwidth.decoder_step_weight_bytes(setup.bundle_dir / "decoder.onnx")
        result.extra["macs"] = gemm_peak.bundle_macs(setup.bundle_dir)
        if setup is csanmt:
            print(f"measuring the longest request on {setup.title}", flush=True)
            try:
                result.extra["longest_request"] = csanmt_longest_request(setup, args)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as error:
                problems_before.append(f"{setup.key}: the longest request failed: {error}")
        results.append(result)

    from bench.pipeline.workload import news_sentences

    sentences = news_sentences(WORKLOAD_SENTENCES["quick" if args.quick else "full"])
    workloads: dict[str, dict[str, Any]] = {}
    problems = [*problems_before, *(problem for result in results for problem in missing(result))]
    for setup in setups[:2] if not args.quick else setups[:1]:
        print(f"measuring the service's characters/s on {setup.title}", flush=True)
        try:
            workloads[setup.key] = measure_workload(setup, args.threads, sentences)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as error:
            problems.append(f"{setup.key}: the service workload failed: {error}")

    tensorflow = None
    if csanmt is not None and (args.csanmt_checkpoint is not None or args.csanmt_bundle is None):
        # with --csanmt-build (and no --csanmt-bundle) the checkpoint is the one csanmt_setup built
        checkpoint = args.csanmt_checkpoint or args.work_dir / "csanmt" / CHECKPOINT
        print(f"measuring CSANMT beside ModelScope's TensorFlow pipeline on {checkpoint}", flush=True)
        try:
            tensorflow = csanmt_tensorflow.compare(
                checkpoint,
                csanmt.bundle_dir,
                threads=args.threads,
                rounds=min(rounds, args.csanmt_rounds),
                repeats=1 if args.quick else args.repeats,
                batch1_sentences=1 if args.quick else 2,
                progress=lambda line: print(line, flush=True),
            )
            problems += csanmt_tensorflow.missing(tensorflow)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError, OSError, KeyError) as error:
            problems.append(f"CSANMT beside ModelScope's TensorFlow pipeline failed: {error}")

    memory = None
    default = next(setup for setup in setups if setup.key == "default")
    print(f"measuring the translation memory on {default.title}", flush=True)
    try:
        job = {"bundle_dir": str(default.bundle_dir), "threads": args.threads}
        memory = run_process("bench.pipeline.memory_bench", job | MEMORY_JOB["quick" if args.quick else "full"])
    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as error:
        problems.append(f"the translation memory figures failed: {error}")

    streaming, streaming_problems = measure_streaming_on([default] + ([] if csanmt is None else [csanmt]), args)
    problems += streaming_problems
    print("measuring the INT8 GEMM peak again (the better of the two passes counts)", flush=True)
    gemm_passes.append(gemm_peak.measure(args.threads))
    gemm = max(gemm_passes, key=lambda figures: figures["peak_gmac_s"]) | {
        "passes": [figures["peak_gmac_s"] for figures in gemm_passes],
        "seconds": gemm_peak.SECONDS_PER_SHAPE,
    }

    env = environment()
    tracked = report.tracked_figures(results, workloads)
    since_lines, moved = since_last_run(out, tracked, env)
    text = document(
        results,
        sizes,
        band,
        workloads,
        env,
        command,
        started,
        time.perf_counter() - began,
        (start_load, load_average()),
        args.quick,
        1 if args.quick else args.transformers_rounds,
        memory,
        None if tensorflow is None else csanmt_tensorflow.section_lines(tensorflow),
        streaming_section(streaming, command, started, (start_load, load_average())),
        gemm,
        since_lines,
        floors,
    )
    print()
    print(text)
    if band["dram_bytes_per_s"] <= 0:
        problems.append("the memory read bandwidth could not be measured")
    if problems:
        print(f"\nFAILED: {len(problems)} figure(s) could not be measured; nothing was written:", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    if not args.quick:
        report.chart(results, out.with_suffix(".png"))
    print(f"\nwrote {out}" + ("" if args.quick else f" and {out.with_suffix('.png')}"))
    if out.resolve() == DOCS_OUT.resolve():  # the pages quote the report: their figures follow this run
        for page in quoted.fill_pages(REPO_ROOT, out):
            print(f"updated the figures {page.relative_to(REPO_ROOT)} quotes from it")
    medians = {
        result.setup.key: {
            engine: {name: spread.median for name, spread in figures.items()}
            for engine, figures in summarise(result).items()
        }
        for result in results
    }
    medians["workload"] = workloads
    medians["translation_memory"] = memory or {}
    medians["streaming"] = streaming
    medians["bandwidth"] = band
    if tensorflow is not None:
        medians["csanmt_beside_tensorflow"] = csanmt_tensorflow.medians(tensorflow)
    medians["gemm_peak"] = gemm
    medians["floors"] = {engine: vars(floor) for engine, floor in (floors or {}).items()}
    medians["macs"] = {result.setup.key: result.extra["macs"] for result in results}
    if args.figures_json is not None:
        args.figures_json.write_text(json.dumps(medians, indent=1), encoding="utf-8")
    copy = figures_copy(out)
    copy.write_text(json.dumps(medians | {"environment": env, "tracked": tracked_json(tracked)}, indent=1), "utf-8")
    print(f"wrote {_shown(copy)} (the figures the next run compares with)")
    print("\nSummary:")
    for line in report.missed_goal_lines(results):
        print(line)
    print(f"Since the last run ({len(moved)} figure(s) moved the wrong way):")
    for line in since_lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
