"""Load and soak test of `make run`'s real server with locust (a benchmark script, `make loadtest`; not a test).

    python -m bench.load.loadtest [--bundle default] [--bundle random-opus] [--requests 2000] [--soak-requests 20000]
                             [--concurrency 8] [--max-chars N] [--server-venv .venv-run] [--quick] [--json FILE]

For each bundle (``default``: model_artifacts/default; ``random-opus``: the random Marian of opus-mt-zh-en's size
that ``bench.pipeline.runtime_bench`` builds and exports with ``build.export``, cached in ``.bench/runtime/``; or a
bundle folder), this process starts infra/local/run.sh (functions-framework, exactly as ``make run`` starts it) and,
from here, a second process on loopback, drives it with locust (headless, as a library: ``FastHttpUser``s with
no wait time) through two phases in the same warm server process:

* load: ``--requests`` ``POST /translate`` requests, ``--concurrency`` at a time, sizes from one word to the
  server's character limit (``bench.load.load_mix.LOAD_MIX``);
* soak: ``--soak-requests`` more (``bench.load.load_mix.SOAK_MIX``, mostly short ones so that the count is feasible).

Every answer must be 200 with a string ``translation``: any error is printed and the script exits 1. It prints
p50/p95/p99 latency, throughput (requests/s, characters/s) and the RSS of the gunicorn worker (the process that
holds the model and answers), sampled every second by psutil; for the soak, the RSS after warm-up (the first
``--warmup-share`` of its requests) against its end: a growth of ``--max-growth-mb`` (30 MB) or more exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import gevent
import locust  # patches the standard library for gevent on import, before this module opens a socket or thread

from bench.load.closed_loop import STOP, Reply, drive
from bench.load.load_figures import (
    SETTLE_SAMPLES,
    Outcome,
    PhaseResult,
    check_answer,
    phase_figures,
    soak_figures,
)
from bench.load.load_mix import LOAD_MIX, SOAK_MIX, SizeMix, plan_texts
from bench.load.served_function import REPO_ROOT, RssSampler, ServedFunction

DEFAULT_BUNDLE = "default"
RANDOM_OPUS = "random-opus"
BUNDLES = {DEFAULT_BUNDLE: REPO_ROOT / "model_artifacts" / "default"}
REQUESTS = 2_000
SOAK_REQUESTS = 20_000
CONCURRENCY = 8
WARMUP_SHARE = 0.10
MAX_GROWTH_MB = 30.0
QUICK = {"requests": 40, "soak_requests": 40, "max_chars": 300}


# --- driving the server ---------------------------------------------------------------------------------------


def run_phase(
    name: str, base_url: str, worker_pid: int, texts: list[tuple[str, str]], mix: SizeMix, concurrency: int
) -> PhaseResult:
    """``texts`` posted by ``concurrency`` locust users at once, each taking the next text when it has an answer."""
    outcomes: list[Outcome | None] = [None] * len(texts)
    done = [0]
    phase_began = time.perf_counter()

    def on_reply(reply: Reply) -> None:
        error = reply.error or check_answer(reply.status, reply.content)
        outcomes[reply.index] = Outcome(reply.size_class, reply.characters, reply.seconds, error)
        done[0] += 1
        if done[0] % max(1, len(texts) // 10) == 0:
            rss = sampler.samples[-1].rss_mb if sampler.samples else float("nan")
            seconds = time.perf_counter() - phase_began
            print(
                f"   {name}: {done[0]:,} of {len(texts):,} done, {seconds:,.0f} s, "
                f"errors {sum(o is not None and o.error is not None for o in outcomes)}, worker RSS {rss:.1f} MB",
                flush=True,
            )

    sampler = RssSampler(worker_pid, lambda: done[0])
    with sampler:
        wall_s = drive(base_url, texts, concurrency, on_reply)
        for _ in range(SETTLE_SAMPLES):
            time.sleep(1.0)
            sampler.sample()
    finished = [outcome for outcome in outcomes if outcome is not None]
    if len(finished) != len(texts) and not STOP.is_set():
        raise RuntimeError(f"{name}: {len(texts) - len(finished)} requests have no outcome")
    return PhaseResult(name, mix.name, concurrency, finished, wall_s, list(sampler.samples), planned=len(texts))


def format_phase(figures: dict[str, Any]) -> list[str]:
    lines = [
        f"  requests {figures['requests']:,} ({figures['concurrency']} concurrent), errors {figures['errors']}, "
        f"characters {figures['characters']:,}, wall {figures['wall_s']:,.1f} s",
        f"  throughput {figures['requests_per_s']:.2f} requests/s, {figures['characters_per_s']:,.0f} characters/s",
        f"  latency p50 {figures['p50_ms']:,.0f} ms, p95 {figures['p95_ms']:,.0f} ms, p99 {figures['p99_ms']:,.0f} ms, "
        f"max {figures['max_ms']:,.0f} ms, mean {figures['mean_ms']:,.0f} ms",
        f"  worker RSS start {figures['rss_start_mb']:.1f} MB, peak {figures['rss_peak_mb']:.1f} MB, "
        f"end {figures['rss_end_mb']:.1f} MB ({figures['rss_samples']} samples, 1 s apart)",
        "  by size class: requests, mean characters, p50 / p95 / max latency",
    ]
    for size_class, row in figures["by_class"].items():
        lines.append(
            f"    {size_class:<10} {row['requests']:>6,} {row['mean_chars']:>9,.0f} chars  "
            f"{row['p50_ms']:>9,.0f} / {row['p95_ms']:>9,.0f} / {row['max_ms']:>9,.0f} ms"
        )
    return lines


def format_soak(soak: dict[str, Any], max_growth_mb: float) -> list[str]:
    verdict = "PASS" if soak["growth_mb"] < max_growth_mb else "FAIL"
    curve = ", ".join(f"{point['done']:,}: {point['rss_mb']:.1f}" for point in soak["curve"])
    return [
        f"  RSS after warm-up ({soak['warmup_requests']:,} requests) {soak['rss_after_warmup_mb']:.1f} MB, "
        f"at the end {soak['rss_end_mb']:.1f} MB: growth {soak['growth_mb']:+.1f} MB "
        f"(limit {max_growth_mb:g} MB) {verdict}",
        f"  after warm-up: min {soak['min_after_warmup_mb']:.1f} MB, peak {soak['peak_after_warmup_mb']:.1f} MB",
        f"  RSS curve (requests done: MB): {curve}",
    ]


# --- bundles and the run --------------------------------------------------------------------------------------


def resolve_bundle(name: str) -> Path:
    if name in BUNDLES:
        return BUNDLES[name]
    if name == RANDOM_OPUS:
        # built (once) in a child process: torch must not start under gevent's patched threads
        code = (
            "from bench.pipeline.runtime_bench import BENCH_DIR, build_bundle; build_bundle(BENCH_DIR, rebuild=False)"
        )
        subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True)
        from bench.pipeline.runtime_bench import BENCH_DIR, BUNDLE

        return BENCH_DIR / BUNDLE
    return Path(name).resolve()


def default_server_venv() -> Path:
    """``.venv-run`` (what ``make run`` serves from) when it exists, else this interpreter's environment."""
    run_venv = REPO_ROOT / ".venv-run"
    return run_venv if (run_venv / "bin" / "functions-framework").exists() else Path(sys.prefix)


def environment_lines(venv: Path) -> list[str]:
    load = os.getloadavg()
    cpu = platform.processor() or platform.machine()
    try:
        model = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        model = cpu
    return [
        f"machine: {os.cpu_count()} CPUs ({model}), Python {platform.python_version()}, locust {locust.__version__}",
        f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; server environment {venv}",
    ]


def run_bundle(bundle: str, args: argparse.Namespace, log_dir: Path) -> tuple[list[str], dict[str, Any], bool]:
    bundle_dir = resolve_bundle(bundle)
    settings = {"TRANSLATE_MAX_CHARS": str(args.max_chars)} if args.max_chars else {}
    print(f"== bundle {bundle} ({bundle_dir}): starting infra/local/run.sh", flush=True)
    served = ServedFunction.start(args.server_venv, bundle_dir, settings, log_dir / f"server-{bundle}.log")
    lines: list[str] = []
    try:
        health = served.health()
        limit = int(health["limits"]["max_chars"])
        worker = served.worker_pid()
        lines.append(
            f"== bundle {bundle}: {health.get('model')} ({bundle_dir}); beam {health['limits']['default_beam_size']}, "
            f"ONNX Runtime threads {health.get('threads')}; "
            f"{served.cold_start_line()}; character limit {limit:,}; gunicorn worker pid {worker} "
            f"(arbiter {served.process.pid})"
        )
        results: dict[str, Any] = {"bundle": bundle, "bundle_dir": str(bundle_dir), "limit": limit}
        ok = True
        for name, count, mix, seed in (
            ("load", args.requests, LOAD_MIX, args.seed),
            ("soak", args.soak_requests, SOAK_MIX, args.seed + 1),
        ):
            if count <= 0:
                continue
            texts = plan_texts(count, mix, limit, seed)
            print(f"   {name}: {count:,} requests, {args.concurrency} concurrent ({mix.describe(limit)})", flush=True)
            phase = run_phase(name, served.base_url, worker, texts, mix, args.concurrency)
            figures = phase_figures(phase)
            lines += [f"-- {name} ({mix.describe(limit)})", *format_phase(figures)]
            if name == "soak":
                figures["soak"] = soak_figures(phase, args.warmup_share)
                lines += format_soak(figures["soak"], args.max_growth_mb)
                ok &= figures["soak"]["growth_mb"] < args.max_growth_mb
            figures["rss_curve"] = [asdict(sample) for sample in phase.rss]
            results[name] = figures
            if phase.errors:
                ok = False
                lines.append(f"  FAIL: {len(phase.errors)} of {len(phase.outcomes)} requests failed; the first ones:")
                lines += [f"    [{e.size_class}, {e.chars} chars] {e.error}" for e in phase.errors[:10]]
            if phase.stopped_early:
                ok = False
                lines.append(f"  STOPPED EARLY (signal): {len(phase.outcomes):,} of {phase.planned:,} requests done")
            print("\n".join(lines[-len(format_phase(figures)) - 1 :]), flush=True)
            if STOP.is_set():
                break
    finally:
        served.stop()
    return lines, results, ok


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", action="append", help=f"{DEFAULT_BUNDLE}, {RANDOM_OPUS} or a folder; repeatable")
    parser.add_argument("--requests", type=int, default=REQUESTS, help="requests of the load phase")
    parser.add_argument("--soak-requests", type=int, default=SOAK_REQUESTS, help="requests of the soak (0: none)")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY)
    parser.add_argument("--max-chars", type=int, help="TRANSLATE_MAX_CHARS for the server (default: its default)")
    parser.add_argument("--warmup-share", type=float, default=WARMUP_SHARE, help="soak requests counted as warm-up")
    parser.add_argument("--max-growth-mb", type=float, default=MAX_GROWTH_MB)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--server-venv", type=Path, default=None, help="environment of the server (.venv-run)")
    parser.add_argument("--quick", action="store_true", help=f"a smoke run: {QUICK}, the default bundle")
    parser.add_argument("--json", type=Path, help="write every figure and RSS sample to this file")
    parser.add_argument("--log-dir", type=Path, help="keep the servers' output here (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            if getattr(args, key) == parser.get_default(key):
                setattr(args, key, value)
    args.bundle = args.bundle or ([DEFAULT_BUNDLE] if args.quick else [DEFAULT_BUNDLE, RANDOM_OPUS])
    args.server_venv = (args.server_venv or default_server_venv()).resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    for number in (signal.SIGINT, signal.SIGTERM):  # stop early, with the figures of what was done
        gevent.signal_handler(number, STOP.set)
    command = "python -m bench.load.loadtest " + " ".join(sys.argv[1:] if argv is None else argv)
    header = [f"$ {command}", *environment_lines(args.server_venv)]
    print("\n".join(header), flush=True)
    began = time.monotonic()
    report, everything, ok = list(header), [], True
    with tempfile.TemporaryDirectory(prefix="loadtest-") as scratch:
        for bundle in args.bundle:
            lines, results, bundle_ok = run_bundle(bundle, args, args.log_dir or Path(scratch))
            report += lines
            everything.append(results)
            ok &= bundle_ok
            if STOP.is_set():
                break
    report.append(f"total {time.monotonic() - began:,.0f} s; {'PASS' if ok else 'FAIL'}")
    print("\n==== summary\n" + "\n".join(report), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"command": command, "bundles": everything}, indent=1), encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
