"""CSANMT in this runtime beside ModelScope's own TensorFlow pipeline, every figure from a fresh process (a script).

    python -m bench.pipeline.csanmt_tensorflow --checkpoint CKPT --bundle BUNDLE [--threads 2] [--rounds 1]
                                               [--repeats 1] [--batch1-sentences 2] [--json FILE]

``CKPT`` is a CSANMT folder in ModelScope's layout (``configuration.json``, ``tf_ckpts/ckpt-0``, ``bpe.zh``,
vocabularies; the random full-size one ``bench.pipeline.csanmt_full_size`` writes, or the published model) and
``BUNDLE`` the bundle ``make model`` built from it (checked: the manifest's model configuration must be the
checkpoint's). ``make bench BENCH_ARGS="--csanmt-bundle BUNDLE --csanmt-checkpoint CKPT"`` adds the table to
``docs/benchmarks.md`` (``bench.pipeline.runtime_bench``).

Two engines, each in fresh processes (``python -m bench.pipeline.csanmt_tensorflow --child JOB.json``), ``--rounds``
rounds with the order swapped every round:

* **ModelScope TF pipeline**: modelscope's ``TranslationPipeline`` (modelscope 1.40.2, tensorflow-cpu, graph mode)
  on ``CKPT``, offline as the tests' oracle runs it (``bench.pipeline.modelscope_offline``: the ``msdatasets``
  stand-in, ``MODELSCOPE_CACHE`` in a scratch folder, CPU only), TensorFlow on ``--threads`` intra-op threads and one
  inter-op thread;
* **this runtime**: the bundle loaded by ``handler.coldstart.get_service`` (load, hash checks and warm-up, as a
  function's cold start does them), ``--threads`` intra-op threads, decoding through the service's model
  (``LoadedModel.search``).

Both decode with the pipeline's own settings from ``configuration.json``: beam ``beam_size`` (4), GNMT length
penalty ``lp_rate`` (0.6), at most ``max_decoded_trg_len`` (100) output tokens for every sentence, no repetition
guard: this runtime gets that cap of 100 through the search request's ``max_new_tokens`` (the service would cap at
``min(ratio x source tokens + 10, max_decoded_length)``, less than 100 for short sentences), so both run
modelscope's search on the same limit. A random model almost never picks the end of sentence, so outputs run to
the cap; either engine may still end a row early (INT8 and FP32 pick different tokens), so the speed figures count
the tokens each engine actually produced (the chosen beam up to its end of sentence): batch-1 milliseconds per
output token = the summed seconds of the timed calls ÷ their summed output tokens, batch-16 tokens/s = a call's
output tokens ÷ its seconds (the median of the timed calls). Each process measures, in this order:

* ``cold_start_s``: process start (the parent's clock just before it starts the process) → the first translation
  done (sentence 1 of the bench sentences, text in, text out: the pipeline's ``__call__``; this runtime: its
  tokenizer, search and detokenizer), split into ``import_s`` (interpreter start and the engine's imports),
  ``load_s`` (ModelScope: ``Model.from_pretrained`` + ``TranslationPipeline``, which builds the graph and restores
  the checkpoint; this runtime: ``get_service``, load + warm-up) and ``first_translation_s``;
* ``rss_after_load_mb``: ``VmRSS`` right after that first translation;
* ``b1_ms_per_token``: ``--batch1-sentences`` sentences one at a time, ``--repeats`` times each, after one untimed
  call; the source ids made beforehand by each engine's own tokenizer (ModelScope: ``preprocess``; timed:
  ``forward``, the session run of the whole search);
* ``batch_tok_s``: the 16 bench sentences in one call (ModelScope: joined with ``<SENT_SPLIT>``, which its
  ``preprocess`` splits into one padded batch; this runtime: one ``search`` over the 16 rows), ``--repeats`` timed
  calls after an untimed one;
* ``peak_rss_mb``: ``VmHWM`` of the process at the end (its own high-water mark, ``bench/pipeline/memory.py``).

The sentences are ``bench.pipeline.csanmt_bench.bench_sentences()``, those of this runtime's CSANMT bench. Only the
standard library is imported at module level, so that a child's cold start counts its engine's imports alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.pipeline.memory import current_rss_mb, peak_rss_mb

MODELSCOPE, RUNTIME = "modelscope", "runtime"
ENGINES = (MODELSCOPE, RUNTIME)
ENGINE_NAMES = {MODELSCOPE: "ModelScope TF pipeline", RUNTIME: "this runtime (ONNX Runtime INT8)"}
SPAWNED_AT = "BENCH_SPAWNED_AT"
SENT_SPLIT = "<SENT_SPLIT>"  # modelscope's pipeline splits its input here into one batch
BATCH_SIZE = 16
SECTION_TITLE = "CSANMT beside ModelScope's TensorFlow pipeline"
CHILD_TIMEOUT_S = 3 * 3600
# the figures each child reports, in the table's order: (key, label, unit, lower is better, digits)
FIGURES = (
    ("cold_start_s", "cold start, process start → first translation", "s", True, 2),
    ("import_s", "… of which interpreter start + imports", "s", True, 2),
    ("load_s", "… of which loading the model (this runtime: + warm-up)", "s", True, 2),
    ("first_translation_s", "… of which the first translation", "s", True, 2),
    ("rss_after_load_mb", "RSS after load (and the first translation)", "MB", True, 0),
    ("peak_rss_mb", "peak RSS (VmHWM, after the batch-16 runs)", "MB", True, 0),
    ("b1_ms_per_token", "batch-1 latency per output token", "ms/token", True, 1),
    ("batch_tok_s", f"batch-{BATCH_SIZE} output tokens/s", "tok/s", False, 1),
)
FIGURE_KEYS = tuple(key for key, *_ in FIGURES)


# --- the children: one engine in one fresh process ------------------------------------------------------------


@dataclass
class Engine:
    """One loaded engine: ``translate`` text → text; ``prepare`` texts → its model input; ``decode`` that input →
    the output tokens of each row (the chosen beam, end of sentence excluded)."""

    translate: Callable[[str], str]
    prepare: Callable[[Sequence[str]], Any]
    decode: Callable[[Any], list[int]]
    imported_at: float = 0.0
    loaded_at: float = 0.0
    versions: dict[str, str] = field(default_factory=dict)


def _modelscope(job: dict[str, Any]) -> Engine:
    from bench.pipeline import modelscope_offline

    modelscope_offline.install_stand_in()
    modelscope_offline.graph_mode()
    import modelscope
    import numpy as np
    import tensorflow as tf
    from modelscope.models.base import Model
    from modelscope.pipelines.nlp.translation_pipeline import TranslationPipeline

    imported = time.time()
    pipeline = TranslationPipeline(model=Model.from_pretrained(job["checkpoint"]))
    loaded = time.time()

    def translate(text: str) -> str:
        return str(pipeline(text)["translation"])

    def prepare(texts: Sequence[str]) -> Any:
        return pipeline.preprocess(SENT_SPLIT.join(texts))

    def decode(prepared: Any) -> list[int]:
        outputs = pipeline.forward(prepared)
        lengths = []
        for row in np.asarray(outputs["output_seqs"]):  # [batch, beam, time]; postprocess reads beam 0 up to 0
            ids = [*row[0].tolist(), 0]
            lengths.append(ids.index(0))
        return lengths

    versions = {"modelscope": modelscope.__version__, "tensorflow": tf.__version__}
    return Engine(translate, prepare, decode, imported, loaded, versions)


def _runtime(job: dict[str, Any]) -> Engine:
    import onnxruntime

    from handler import coldstart
    from handler.config import RuntimeConfig
    from handler.model import memory
    from handler.model.families.base import SearchRequest

    imported = time.time()
    service = coldstart.get_service(RuntimeConfig(bundle_dir=Path(job["bundle"]), threads=job["threads"]))
    loaded_at = time.time()
    model = service.model
    # the pipeline's search: its beam, its length penalty, its fixed cap (not the service's ratio cap), no guard
    request = SearchRequest(
        beam_size=job["beam_size"],
        max_new_tokens=job["max_length"],
        length_penalty=job["lp_rate"],
        repetition_guard=False,
    )

    def translate(text: str) -> str:
        hypotheses = model.search(model.tokenizer.encode_batch([text]), request)
        english = model.tokenizer.decode(hypotheses[0].ids)
        memory.release_free_heap()  # as the service does at the end of every request (handler.model.memory)
        return english

    def prepare(texts: Sequence[str]) -> Any:
        return model.tokenizer.encode_batch(list(texts))

    def decode(rows: Any) -> list[int]:
        return [len(hypothesis.ids) for hypothesis in model.search(rows, request)]

    return Engine(translate, prepare, decode, imported, loaded_at, {"onnxruntime": onnxruntime.__version__})


LOADERS: dict[str, Callable[[dict[str, Any]], Engine]] = {MODELSCOPE: _modelscope, RUNTIME: _runtime}


def measure(job: dict[str, Any], spawned_at: float) -> dict[str, Any]:
    """Every figure of one engine in this process (see the module's docstring)."""
    engine = LOADERS[job["engine"]](job)
    sentences: list[str] = job["sentences"]
    first = engine.translate(sentences[0])
    done = time.time()
    figures: dict[str, Any] = {
        "cold_start_s": done - spawned_at,
        "import_s": engine.imported_at - spawned_at,
        "load_s": engine.loaded_at - engine.imported_at,
        "first_translation_s": done - engine.loaded_at,
        "rss_after_load_mb": current_rss_mb(),
    }
    repeats = job["repeats"]
    singles = [engine.prepare([sentence]) for sentence in sentences[: job["batch1_sentences"]]]
    engine.decode(singles[0])  # untimed
    seconds, tokens, lengths = 0.0, 0, []
    for _ in range(repeats):
        for single in singles:
            began = time.perf_counter()
            produced = engine.decode(single)
            seconds += time.perf_counter() - began
            tokens += sum(produced)
            lengths += produced
    figures["b1_ms_per_token"] = 1000 * seconds / tokens if tokens else float("nan")
    figures["b1_output_tokens"] = lengths
    batch = engine.prepare(sentences[:BATCH_SIZE])
    engine.decode(batch)  # untimed
    rates, batch_lengths = [], []
    for _ in range(repeats):
        began = time.perf_counter()
        batch_lengths = engine.decode(batch)
        rates.append(sum(batch_lengths) / (time.perf_counter() - began))
    figures["batch_tok_s"] = statistics.median(rates)
    figures["batch_output_tokens"] = batch_lengths
    figures["peak_rss_mb"] = peak_rss_mb()
    figures["pid"] = os.getpid()
    figures["first_translation"] = first[:80]
    figures["versions"] = engine.versions
    return figures


def child_main(job_path: Path) -> int:
    spawned_at = float(os.environ.get(SPAWNED_AT, "nan"))
    if spawned_at != spawned_at:
        print(f"{SPAWNED_AT} is not set: the parent sets it to time.time() before starting this", file=sys.stderr)
        return 2
    job = json.loads(job_path.read_text(encoding="utf-8"))
    print(json.dumps(measure(job, spawned_at)))
    return 0


# --- the parent: the jobs, the rounds, the table --------------------------------------------------------------


@dataclass
class Comparison:
    """What ``compare`` measured: the processes' figures per engine, and what it needs to say how."""

    checkpoint: Path
    bundle: Path
    settings: dict[str, Any]  # beam_size, lp_rate, max_length, threads, repeats, batch1_sentences, rounds
    runs: dict[str, list[dict[str, Any]]]
    errors: dict[str, list[str]]
    disk_mb: dict[str, float]
    source_tokens: float  # this runtime's tokenizer, the 16 sentences' mean (end of sentence included)


def pipeline_settings(checkpoint: Path) -> dict[str, Any]:
    """The decoding settings of modelscope's pipeline: ``configuration.json``'s beam, length penalty and cap."""
    model = json.loads((checkpoint / "configuration.json").read_text(encoding="utf-8"))["model"]
    return {
        "beam_size": int(model["beam_size"]),
        "lp_rate": float(model["lp_rate"]),
        "max_length": int(model["max_decoded_trg_len"]),
    }


def check_pair(checkpoint: Path, bundle: Path) -> None:
    """Raise ``ValueError`` unless ``bundle`` holds the model of ``checkpoint`` (shapes and decoding settings)."""
    config = json.loads((checkpoint / "configuration.json").read_text(encoding="utf-8"))["model"]
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    if manifest.get("family") != "csanmt":
        raise ValueError(f"{bundle} is a {manifest.get('family')!r} bundle, not a CSANMT one")
    spec, decoding = manifest["model"], manifest.get("decoding", {})
    pairs = {
        "hidden_size / d_model": (config["hidden_size"], spec["d_model"]),
        "num_encoder_layers / encoder_layers": (config["num_encoder_layers"], spec["encoder_layers"]),
        "num_decoder_layers / decoder_layers": (config["num_decoder_layers"], spec["decoder_layers"]),
        "trg_vocab_size / vocab_size": (config["trg_vocab_size"], spec["vocab_size"]),
        "max_decoded_trg_len / max_decoded_length": (config["max_decoded_trg_len"], decoding.get("max_decoded_length")),
    }
    source = manifest.get("source_model_config")
    if isinstance(source, dict):
        pairs |= {key: (config.get(key), value) for key, value in source.items()}
    differing = [f"{name}: {ours} vs {theirs}" for name, (ours, theirs) in pairs.items() if ours != theirs]
    if differing:
        raise ValueError(f"{bundle} was not built from {checkpoint}: " + "; ".join(differing))


def folder_mb(folder: Path, pattern: str = "*") -> float:
    return sum(path.stat().st_size for path in folder.glob(pattern) if path.is_file()) / 1e6


def run_child(job: dict[str, Any], scratch: Path, timeout_s: float = CHILD_TIMEOUT_S) -> dict[str, Any]:
    """One engine in a fresh process; its last stdout line is its figures."""
    from bench.pipeline import modelscope_offline
    from bench.pipeline.side_by_side import child_environment, compile_bytecode, figures_printed

    compile_bytecode()
    job_path = scratch / f"job-{job['engine']}.json"
    job_path.write_text(json.dumps(job, ensure_ascii=False), encoding="utf-8")
    environment = modelscope_offline.environment(scratch / "modelscope-cache", job["threads"], child_environment())
    environment[SPAWNED_AT] = repr(time.time())
    completed = subprocess.run(
        [sys.executable, "-m", "bench.pipeline.csanmt_tensorflow", "--child", str(job_path)],
        cwd=Path(__file__).resolve().parents[2],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout_s,
    )
    return figures_printed(completed, ENGINE_NAMES[job["engine"]])


def compare(
    checkpoint: Path,
    bundle: Path,
    *,
    threads: int = 2,
    rounds: int = 1,
    repeats: int = 1,
    batch1_sentences: int = 2,
    progress: Callable[[str], None] = print,
) -> Comparison:
    """Both engines, ``rounds`` fresh processes each (the order swapped every round); a failed process is recorded
    in ``errors`` (``missing`` names it), not raised."""
    from bench.pipeline.csanmt_bench import bench_sentences
    from bench.pipeline.side_by_side import encode_with_bundle, measure_once

    checkpoint, bundle = checkpoint.resolve(), bundle.resolve()
    check_pair(checkpoint, bundle)
    sentences = bench_sentences(BATCH_SIZE)
    if len(sentences) < BATCH_SIZE:
        raise RuntimeError(f"the dev set gave {len(sentences)} bench sentences; the batch needs {BATCH_SIZE}")
    settings = pipeline_settings(checkpoint) | {
        "threads": threads,
        "repeats": repeats,
        "batch1_sentences": batch1_sentences,
        "rounds": rounds,
    }
    job = settings | {"checkpoint": str(checkpoint), "bundle": str(bundle), "sentences": sentences}
    runs: dict[str, list[dict[str, Any]]] = {engine: [] for engine in ENGINES}
    errors: dict[str, list[str]] = {engine: [] for engine in ENGINES}
    with tempfile.TemporaryDirectory(prefix="csanmt-tensorflow-") as scratch:
        for round_number in range(rounds):
            order = ENGINES if round_number % 2 == 0 else ENGINES[::-1]
            for engine in order:
                progress(f"  CSANMT beside TensorFlow: round {round_number + 1}/{rounds}, {ENGINE_NAMES[engine]}")
                measure_once(
                    lambda engine=engine: run_child(job | {"engine": engine}, Path(scratch)),
                    engine,
                    round_number,
                    runs,
                    errors,
                    progress,
                )
    ids = encode_with_bundle(bundle, sentences)
    return Comparison(
        checkpoint=checkpoint,
        bundle=bundle,
        settings=settings,
        runs=runs,
        errors=errors,
        # what each engine reads: the TF checkpoint's files (with the optimizer slots a training checkpoint holds,
        # as the published one does) and the configuration; the bundle's files
        disk_mb={MODELSCOPE: folder_mb(checkpoint / "tf_ckpts") + folder_mb(checkpoint), RUNTIME: folder_mb(bundle)},
        source_tokens=statistics.mean(len(row) for row in ids),
    )


def _usable(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value and value > 0


def summary(comparison: Comparison) -> dict[str, dict[str, Any]]:
    """engine -> figure key -> ``Spread`` (median, min-max over the rounds) of the figures every process measured."""
    from bench.pipeline.side_by_side import Spread

    found: dict[str, dict[str, Any]] = {}
    for engine, runs in comparison.runs.items():
        found[engine] = {}
        for key in FIGURE_KEYS:
            values = [run[key] for run in runs if _usable(run.get(key))]
            if values:
                found[engine][key] = Spread(statistics.median(values), min(values), max(values), len(values))
    return found


def missing(comparison: Comparison) -> list[str]:
    """Every figure some engine did not measure in every round, with the reason where a process failed."""
    problems = [
        f"CSANMT beside TensorFlow: {ENGINE_NAMES[engine]}: a process failed: {message}"
        for engine, messages in comparison.errors.items()
        for message in messages
    ]
    found = summary(comparison)
    rounds = comparison.settings["rounds"]
    for engine in ENGINES:
        for key in FIGURE_KEYS:
            spread = found[engine].get(key)
            if spread is None or spread.count < rounds:
                got = 0 if spread is None else spread.count
                name = ENGINE_NAMES[engine]
                problems.append(f"CSANMT beside TensorFlow: {name}: {key} measured in {got} of {rounds} processes")
    return problems


def _lengths(comparison: Comparison, engine: str, key: str) -> str:
    values = [length for run in comparison.runs[engine] for length in run.get(key, [])]
    if not values:
        return "not measured"
    return f"{min(values)}–{max(values)} (mean {statistics.mean(values):.1f})"


def section_lines(comparison: Comparison, heading: str = "##") -> list[str]:
    """The Markdown section: how it was measured, then figure | ModelScope | this runtime | ratio."""
    from bench.pipeline import report

    settings = comparison.settings
    found = summary(comparison)
    rows = []
    for key, label, unit, lower_is_better, digits in FIGURES:
        figure = report.Figure(key, label, unit, lower_is_better, digits)
        rows.append((figure, found[MODELSCOPE].get(key), found[RUNTIME].get(key)))
    disk = report.Figure("disk_mb", "model files on disk", "MB", True, 1)
    rows.append((disk, _spread(comparison.disk_mb[MODELSCOPE]), _spread(comparison.disk_mb[RUNTIME])))
    versions = next((run["versions"] for run in comparison.runs[MODELSCOPE]), {})
    cap = settings["max_length"]
    return [
        f"{heading} {SECTION_TITLE}",
        "",
        f"- ModelScope's own `TranslationPipeline` ({', '.join(f'{k} {v}' for k, v in versions.items())}; "
        f"graph mode, offline, `bench.pipeline.modelscope_offline`) on the TF checkpoint `{comparison.checkpoint}`, "
        f"beside this runtime on the bundle built from it, `{comparison.bundle}` (`bench.pipeline.csanmt_tensorflow`): "
        f"each engine in {settings['rounds']} fresh process(es) that measure themselves, the order swapped every "
        f"round; {settings['threads']} intra-op threads, 1 inter-op thread each (TensorFlow: "
        "`TF_NUM_INTRAOP_THREADS` / `TF_NUM_INTEROP_THREADS`).",
        f"- The same search in both: the pipeline's `configuration.json` settings, beam {settings['beam_size']}, "
        f"GNMT length penalty {settings['lp_rate']}, at most {cap} output tokens (`max_decoded_trg_len`) for every "
        "sentence, no repetition guard. This runtime gets that cap through the search request's `max_new_tokens` "
        f"(its service would cap at min(ratio × source tokens + 10, {cap})), so both run to the same limit.",
        "- Output lengths: random weights almost never choose the end of sentence, so rows run to the cap, but INT8 "
        "and FP32 choose different tokens and either may end a row early; so each engine's speed counts the tokens "
        "it produced (the chosen beam up to its end of sentence). Batch-1: "
        f"{settings['batch1_sentences']} sentence(s) × {settings['repeats']} timed call(s) after an untimed one, "
        "ms/token = their summed seconds ÷ their summed output tokens; output tokens per call: ModelScope "
        f"{_lengths(comparison, MODELSCOPE, 'b1_output_tokens')}, this runtime "
        f"{_lengths(comparison, RUNTIME, 'b1_output_tokens')}. Batch-{BATCH_SIZE}: the {BATCH_SIZE} sentences in one "
        f"call (ModelScope: joined with `{SENT_SPLIT}`, which its `preprocess` turns into one padded batch), "
        f"output tokens ÷ seconds, the median of {settings['repeats']} timed call(s) after an untimed one; "
        f"output tokens per row: ModelScope {_lengths(comparison, MODELSCOPE, 'batch_output_tokens')}, this runtime "
        f"{_lengths(comparison, RUNTIME, 'batch_output_tokens')}.",
        f"- Sentences: `bench.pipeline.csanmt_bench.bench_sentences()` (dev set, 12–40 characters), "
        f"{comparison.source_tokens:.1f} source tokens on average (this runtime's tokenizer, end of sentence "
        "included). Timed calls start from source ids made by each engine's own tokenizer (ModelScope: `forward`, "
        "its session run of the whole search; this runtime: `LoadedModel.search`).",
        "- Cold start: the parent's clock just before it starts the process → the first translation (the first "
        "sentence, text in, text out: the pipeline's `__call__`; this runtime: tokenizer, search, detokenizer). "
        "Loading: ModelScope `Model.from_pretrained` + `TranslationPipeline` (builds the graph, restores "
        "`tf_ckpts/ckpt-0`); this runtime `handler.coldstart.get_service` (load, hash checks, warm-up). RSS: the "
        "process's own `VmRSS` after the first translation and `VmHWM` at the end.",
        "- Model files: ModelScope reads `tf_ckpts/` (the checkpoint holds Adam slots, as a training checkpoint and "
        "the published one do) and the folder's configuration, BPE codes and vocabularies; this runtime its bundle.",
        "- A cell is the median over the processes, (min–max) when more than one; the ratio is this runtime's "
        "median over ModelScope's.",
        "",
        *report.reference_table(rows, ENGINE_NAMES[MODELSCOPE], ENGINE_NAMES[RUNTIME], "ModelScope"),
    ]


def _spread(value: float) -> Any:
    from bench.pipeline.side_by_side import Spread

    return Spread(value, value, value, 1)


def medians(comparison: Comparison) -> dict[str, Any]:
    """engine -> figure -> median, plus the settings (for ``--figures-json``)."""
    found = summary(comparison)
    return {
        "settings": comparison.settings,
        "disk_mb": comparison.disk_mb,
        **{engine: {key: spread.median for key, spread in figures.items()} for engine, figures in found.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.pipeline.csanmt_tensorflow", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--checkpoint", type=Path, help="the CSANMT folder in ModelScope's layout")
    parser.add_argument("--bundle", type=Path, help="this runtime's bundle built from it")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1, help="fresh processes per engine (default 1)")
    parser.add_argument("--repeats", type=int, default=1, help="timed calls per figure in a process (default 1)")
    parser.add_argument("--batch1-sentences", type=int, default=2, help="sentences of the batch-1 latency")
    parser.add_argument("--json", type=Path, help="also write every process's figures here")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        return child_main(args.child)
    if args.checkpoint is None or args.bundle is None:
        parser.error("--checkpoint and --bundle are required")
    comparison = compare(
        args.checkpoint,
        args.bundle,
        threads=args.threads,
        rounds=args.rounds,
        repeats=args.repeats,
        batch1_sentences=args.batch1_sentences,
        progress=lambda line: print(line, flush=True),
    )
    print("\n".join(section_lines(comparison)))
    if args.json is not None:
        record = {"medians": medians(comparison), "runs": comparison.runs, "errors": comparison.errors}
        args.json.write_text(json.dumps(record, indent=1, ensure_ascii=False), encoding="utf-8")
    problems = missing(comparison)
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
