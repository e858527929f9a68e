"""Engines measured side by side: fresh processes, interleaved rounds, medians, ratios against CTranslate2.

``run_setup`` takes one model (``Setup``: this runtime's bundle, and where there is one, the CTranslate2 folder
and the transformers checkpoint of the same model), makes the token ids once with the bundle's own tokenizer,
and starts one ``bench.pipeline.engines`` process per engine per round, the engine order rotated every round (round 1:
A B C, round 2: B C A, ...), so that a slow spell of a shared machine falls on every engine alike. ``summarise``
turns the rounds into a median and a min-max per figure, and ``missing`` lists every figure that some engine did
not deliver in every round: the caller fails on any.
"""

from __future__ import annotations

import compileall
import json
import math
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

from bench.pipeline.engines import FIGURES, SPAWNED_AT
from handler.config import ENV_BUNDLE_DIR, REPO_ROOT

RUNTIME, CTRANSLATE2, TRANSFORMERS = "runtime", "ctranslate2", "transformers"
ENGINE_NAMES = {
    RUNTIME: "this runtime (ONNX Runtime INT8)",
    CTRANSLATE2: "CTranslate2 int8",
    TRANSFORMERS: "transformers FP32",
}
DISK = "disk_mb"  # measured by the parent: bytes of the engine's model folder


@dataclass(frozen=True)
class Workload:
    """What every engine decodes: ``forced_tokens`` output tokens per hypothesis, beam 4 or greedy."""

    forced_tokens: int = 40
    batch1_sentences: int = 4  # batch-1 latency: each of these sentences, ``repeats`` times
    batch_size: int = 16
    repeats: int = 3
    beam_size: int = 4


@dataclass(frozen=True)
class Setup:
    """One model as each engine loads it."""

    key: str
    title: str
    bundle_dir: Path
    ctranslate2_dir: Path | None = None
    checkpoint_dir: Path | None = None
    notes: tuple[str, ...] = ()

    def engines(self) -> list[tuple[str, Path]]:
        found = [(RUNTIME, self.bundle_dir)]
        if self.ctranslate2_dir is not None:
            found.append((CTRANSLATE2, self.ctranslate2_dir))
        if self.checkpoint_dir is not None:
            found.append((TRANSFORMERS, self.checkpoint_dir))
        return found


@dataclass
class SetupResult:
    setup: Setup
    workload: Workload
    rounds: int
    engine_rounds: dict[str, int]  # processes each engine was started in (transformers: fewer, see run_setup)
    runs: dict[str, list[dict[str, Any]]]  # engine -> one figures dict per process that succeeded
    errors: dict[str, list[str]]  # engine -> what each failed process said
    disk_mb: dict[str, float]
    source_tokens: float
    extra: dict[str, Any] = field(default_factory=dict)


def folder_bytes(folder: Path) -> int:
    """Bytes of every file in ``folder`` (not hidden ones, not in subfolders)."""
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file() and not path.name.startswith("."))


def bench_sentences(count: int = 16) -> list[str]:
    """Chinese sentences of everyday length (12-40 characters) from the repository's dev set."""
    from build import corpus

    chosen = [pair.zh for pair in corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR) if 12 <= len(pair.zh) <= 40]
    if len(chosen) < count:
        raise RuntimeError(f"the dev set has {len(chosen)} sentences of 12-40 characters; the benchmark needs {count}")
    return chosen[:count]


def encode_with_bundle(bundle_dir: Path, sentences: Sequence[str]) -> list[list[int]]:
    """The source ids this runtime feeds its model (its own tokenizer of the bundle), end of sentence included."""
    from handler.model.families import family_named
    from handler.model.loader import load_bundle

    manifest = load_bundle(bundle_dir, verify_hashes=False)
    tokenizer = family_named(manifest.family).load_tokenizer(bundle_dir, manifest)
    return tokenizer.encode_batch(list(sentences))


def child_environment() -> dict[str, str]:
    # transformers would import TensorFlow (installed for the CSANMT converter) unless told not to; every engine's
    # process gets the images' MALLOC_ARENA_MAX (Dockerfile), so that memory is measured as the function runs
    return dict(
        os.environ,
        PYTHONPATH=str(REPO_ROOT),
        USE_TF="0",
        TRANSFORMERS_NO_TF="1",
        TOKENIZERS_PARALLELISM="0",
        MALLOC_ARENA_MAX="2",
    )


COMPILED_PACKAGES = ("handler", "bench")  # the modules a measured process imports from the checkout


def compile_bytecode() -> None:
    """Byte-compile the checkout's modules, as the images do (``python -m compileall -q handler`` in the
    Dockerfile), so that a measured cold start imports compiled modules as a deployed function does. Where
    ``PYTHONDONTWRITEBYTECODE`` is set (this machine's environment) the interpreter never writes them, and every
    fresh process would compile the sources again: measured, importing the service took 140 ms instead of 75 ms.
    The other engines' packages were compiled when pip installed them."""
    for package in COMPILED_PACKAGES:
        if not compileall.compile_dir(REPO_ROOT / package, quiet=1):
            raise RuntimeError(f"python -m compileall {package} failed: a module of the checkout does not compile")


def run_process(
    module: str, job: dict[str, Any], timeout_s: float = 1800, preexec_fn: Callable[[], None] | None = None
) -> dict[str, Any]:
    """Start ``python -m module JOB.json`` in a fresh process (the checkout's modules compiled first:
    ``compile_bytecode``); its last stdout line is its figures (JSON). ``preexec_fn`` runs in the child before the
    program (``bench.studies.cpu_quota``: into a CPU-limited cgroup)."""
    compile_bytecode()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as handle:
        json.dump(job, handle)
        job_path = handle.name
    try:
        environment = child_environment() | {SPAWNED_AT: repr(time.time())}
        if job.get("engine") == RUNTIME and "model_dir" in job:  # in the environment, as a deployed function has it
            environment[ENV_BUNDLE_DIR] = str(job["model_dir"])
        completed = subprocess.run(
            [sys.executable, "-m", module, job_path],
            cwd=REPO_ROOT,
            env=environment,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout_s,
            preexec_fn=preexec_fn,
        )
    finally:
        os.unlink(job_path)
    return figures_printed(completed, f"{module} ({job.get('engine', '')})")


def serve_job(measure: Callable[[dict[str, Any]], dict[str, Any]], argv: Sequence[str]) -> int:
    """A measuring process's entry point, ``python -m MODULE JOB.json``: ``measure(job)`` printed as one JSON line,
    the figures ``run_process`` reads."""
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    print(json.dumps(measure(job)))
    return 0


def measure_once(
    measure: Callable[[], dict[str, Any]],
    engine: str,
    round_number: int,
    runs: dict[str, list[dict[str, Any]]],
    errors: dict[str, list[str]],
    progress: Callable[[str], None],
) -> None:
    """One process's figures into ``runs[engine]`` (with its round), or its failure into ``errors[engine]``."""
    began = time.perf_counter()
    try:
        figures = measure()
    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as error:
        errors[engine].append(str(error))
        progress(f"    FAILED: {error}")
        return
    figures["round"] = round_number + 1
    runs[engine].append(figures)
    progress(f"    {time.perf_counter() - began:.0f} s")


def figures_printed(completed: subprocess.CompletedProcess[str], name: str) -> dict[str, Any]:
    """A measuring process's figures, its last stdout line (JSON); ``RuntimeError`` with its errors' tail if it
    failed or printed nothing."""
    if completed.returncode != 0:
        tail = "\n".join(completed.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"{name} exited with {completed.returncode}:\n{tail}")
    lines = completed.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"{name} printed no figures")
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def rotated(items: Sequence[Any], round_number: int) -> list[Any]:
    shift = round_number % len(items)
    return list(items[shift:]) + list(items[:shift])


def workload_job(bundle_dir: Path, workload: Workload) -> tuple[list[list[int]], dict[str, Any]]:
    """The source ids of the benchmark's sentences (this runtime's tokenizer of ``bundle_dir``) and the part of a
    measuring process's job (``bench.pipeline.engines``) every engine shares: the texts, ids and workload."""
    sentences = bench_sentences(max(workload.batch_size, workload.batch1_sentences))
    ids = encode_with_bundle(bundle_dir, sentences)
    return ids, {
        "cold_text": sentences[0],
        "batch1": ids[: workload.batch1_sentences],
        "batch": ids[: workload.batch_size],
        "forced_tokens": workload.forced_tokens,
        "beam_size": workload.beam_size,
        "repeats": workload.repeats,
    }


def run_setup(
    setup: Setup,
    workload: Workload,
    rounds: int,
    threads: int,
    progress: Callable[[str], None] = print,
    transformers_rounds: int | None = None,
) -> SetupResult:
    """``rounds`` processes per engine, except transformers (the slow FP32 reference, not a target): it runs in the
    first ``transformers_rounds`` rounds only (default: all), with one timed call per figure on one batch-1
    sentence."""
    ids, common = workload_job(setup.bundle_dir, workload)
    common["threads"] = threads
    engines = setup.engines()
    light = {"repeats": 1, "batch1": common["batch1"][:1]}
    engine_rounds = {
        engine: rounds if engine != TRANSFORMERS or transformers_rounds is None else min(rounds, transformers_rounds)
        for engine, _ in engines
    }
    runs: dict[str, list[dict[str, Any]]] = {engine: [] for engine, _ in engines}
    errors: dict[str, list[str]] = {engine: [] for engine, _ in engines}
    for round_number in range(rounds):
        for engine, folder in rotated(engines, round_number):
            if round_number >= engine_rounds[engine]:
                continue
            job = common | {"engine": engine, "model_dir": str(folder)}
            if engine == TRANSFORMERS and transformers_rounds is not None:
                job |= light
            progress(f"  {setup.key}: round {round_number + 1}/{rounds}, {ENGINE_NAMES[engine]}")
            measure_once(
                lambda job=job: run_process("bench.pipeline.engines", job), engine, round_number, runs, errors, progress
            )
    return SetupResult(
        setup=setup,
        workload=workload,
        rounds=rounds,
        engine_rounds=engine_rounds,
        runs=runs,
        errors=errors,
        disk_mb={engine: folder_bytes(folder) / 1e6 for engine, folder in engines},
        source_tokens=statistics.mean(len(row) for row in ids[: workload.batch_size]),
    )


@dataclass(frozen=True)
class Spread:
    median: float
    low: float
    high: float
    count: int


def _usable(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def summarise(result: SetupResult) -> dict[str, dict[str, Spread]]:
    """engine -> figure -> median and min-max over the rounds (figures some round lacks are left out)."""
    summary: dict[str, dict[str, Spread]] = {}
    for engine, runs in result.runs.items():
        figures: dict[str, Spread] = {}
        for name in FIGURES:
            values = [run[name] for run in runs if _usable(run.get(name))]
            if values:
                figures[name] = Spread(statistics.median(values), min(values), max(values), len(values))
        disk = result.disk_mb.get(engine)
        if disk is not None and _usable(disk):
            figures[DISK] = Spread(disk, disk, disk, 1)
        summary[engine] = figures
    return summary


def missing(result: SetupResult) -> list[str]:
    """Every figure some engine did not measure in every round, with the reason where a process failed."""
    problems = []
    summary = summarise(result)
    for engine, _ in result.setup.engines():
        for message in result.errors.get(engine, []):
            problems.append(f"{result.setup.key}: {ENGINE_NAMES[engine]}: a process failed: {message}")
        figures = summary.get(engine, {})
        for name in (*FIGURES, DISK):
            spread = figures.get(name)
            expected = 1 if name == DISK else result.engine_rounds.get(engine, result.rounds)
            if spread is None or spread.count < expected:
                got = 0 if spread is None else spread.count
                problems.append(
                    f"{result.setup.key}: {ENGINE_NAMES[engine]}: {name} measured in {got} of {expected} processes"
                )
    return problems
