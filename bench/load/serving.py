"""The serving sweep (`make serving`): this tree's server, the per-request decoding before the shared decoder and a
CTranslate2 server, under the same closed-loop load, side by side in one run (a benchmark script; not a test).

    python -m bench.load.serving [--bundle default] [--bundle random-opus] [--csanmt-bundle PATH]
                                 [--clients 1,4,8,16,64] [--kind one-sentence] [--kind load-mix]
                                 [--requests 200] [--mix-requests 100] [--max-chars N] [--baseline-commit 7295841]
                                 [--server ...] [--quick] [--json FILE] [--log-dir DIR]

For each bundle it starts the three servers of ``bench.load.serving_servers`` (each behind functions-framework's
gunicorn server as ``make run`` starts it, the same ``WORKERS`` and ``THREADS``), warms each with a few requests,
then, for each request kind and each number of clients, drives each server in turn (the order rotating from point
to point, so that none is always first on a machine whose load drifts) with that many closed-loop clients: locust
users with no wait time, each sending its next ``POST /translate`` when it has its answer, over its own kept-alive
connection. The kinds: ``one-sentence`` (one dev sentence per request, ``bench.load.load_mix``'s ``sentence``
class) and ``load-mix`` (``LOAD_MIX``: one word to the character limit). Every server gets the same texts at a
point. The translation memory is off in this runtime's servers (``TRANSLATE_MEMORY_BYTES=0``;
``--translation-memory`` keeps it), so that every server decodes every request.

It prints, per point: characters/s of the good answers and its multiple of the same server's one-client figure,
p50/p95/p99 latency (by size class for the load mix), p95/p50, refusals (429/503 with Retry-After) apart from
errors, and the gunicorn worker's peak RSS (psutil, every 0.5 s); then a table per bundle and kind, and issue 44's
goals beside the figures (``bench.load.serving_figures``), each met, NOT MET or not measured. A server that cannot
start is skipped with the reason, and nothing is printed for it. Exits 1 when a point had an error or a server
failed to start.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gevent
import locust  # noqa: F401 - patches the standard library for gevent on import, before any socket or thread

from bench.load import serving_servers as servers
from bench.load.closed_loop import STOP, Reply, drive
from bench.load.load_mix import LOAD_MIX, SENTENCE, SizeClass, SizeMix, plan_texts
from bench.load.loadtest import (
    DEFAULT_BUNDLE,
    RANDOM_OPUS,
    default_server_venv,
    environment_lines,
    resolve_bundle,
)
from bench.load.served_function import RssSample, RssSampler, ServedFunction
from bench.load.serving_figures import (
    ERROR,
    KINDS,
    LOAD_MIX_KIND,
    ONE_SENTENCE,
    PER_REQUEST,
    SERVERS,
    THIS_TREE,
    Answer,
    Goal,
    Measured,
    Point,
    ahead_goals,
    judge,
    point_figures,
    robustness_goals,
    scaling_goals,
    with_ratios,
)

ONE_SENTENCE_MIX = SizeMix("one dev sentence a request", (SizeClass(SENTENCE, 1),))
MIXES = {ONE_SENTENCE: ONE_SENTENCE_MIX, LOAD_MIX_KIND: LOAD_MIX}
CLIENTS = (1, 4, 8, 16, 64)
REQUESTS, MIX_REQUESTS, WARMUP_REQUESTS = 200, 100, 4
THREADS = 16  # gunicorn threads: make run's (infra/local/run.sh) and the Google Cloud HTTP services' (HTTP_CONCURRENCY)
QUICK = {"clients": (1, 4), "requests": 6, "mix_requests": 6, "max_chars": 300}
RSS_INTERVAL_S = 0.5
# the load test's peak RSS of the gunicorn worker on the current runtime (docs/loadtest.md), for the 64-client goal
PREVIOUS_PEAK_MB = {
    DEFAULT_BUNDLE: (191.0, "(docs/loadtest.md run 6)"),
    RANDOM_OPUS: (338.4, "(docs/loadtest.md run 7)"),
}


# --- one point: closed-loop clients -------------------------------------------------------------------------


def run_point(
    base_url: str, worker_pid: int, texts: list[tuple[str, str]], clients: int
) -> tuple[list[Answer], float, list[RssSample]]:
    """``texts`` posted by ``clients`` closed-loop clients (each sends its next when it has an answer): the answers
    (in the texts' order; fewer when stopped), the wall time from the first send to the last answer, RSS samples."""
    answers: list[Answer | None] = [None] * len(texts)
    done = [0]

    def on_reply(reply: Reply) -> None:
        if reply.error is None:
            verdict, detail, output_chars = judge(reply.status, reply.retry_after, reply.content)
        else:
            verdict, detail, output_chars = ERROR, reply.error, 0
        answers[reply.index] = Answer(
            reply.size_class, reply.characters, reply.seconds, verdict, reply.status, detail, output_chars
        )
        done[0] += 1

    sampler = RssSampler(worker_pid, lambda: done[0], interval_s=RSS_INTERVAL_S)
    with sampler:
        wall_s = drive(base_url, texts, clients, on_reply)
        sampler.sample()
    return [answer for answer in answers if answer is not None], wall_s, list(sampler.samples)


# --- the servers of one bundle ------------------------------------------------------------------------------


@dataclass
class Served:
    key: str
    title: str
    function: ServedFunction
    worker: int
    limit: int


@dataclass
class Lineup:
    """The servers that started for a bundle, and why the others did not."""

    running: dict[str, Served] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    failed: bool = False  # a server that should have started did not


def runtime_settings(args: argparse.Namespace) -> dict[str, str]:
    """This runtime's servers' settings: gunicorn's threads (every server alike), the memory, the limit."""
    settings = {"THREADS": str(args.threads)}
    settings |= {} if args.translation_memory else {"TRANSLATE_MEMORY_BYTES": "0"}
    return settings | ({"TRANSLATE_MAX_CHARS": str(args.max_chars)} if args.max_chars else {})


def start_one(
    key: str, bundle: str, bundle_dir: Path, args: argparse.Namespace, log_dir: Path, limit: int
) -> Served | str:
    """One server started and answering, or why it is not there."""
    log = log_dir / f"{key}-{servers._slug(bundle)}.log"
    if key == THIS_TREE:
        function = ServedFunction.start(args.server_venv, bundle_dir, runtime_settings(args), log)
        title = "this tree (one shared decoder)"
    elif key == PER_REQUEST:
        worktree = servers.baseline_worktree(args.baseline_commit)
        if isinstance(worktree, servers.Unavailable):
            return f"per-request decoding skipped: {worktree.reason}"
        function = ServedFunction.start(args.server_venv, bundle_dir, runtime_settings(args), log, root=worktree)
        title = f"per-request decoding ({args.baseline_commit}, {worktree.relative_to(servers.REPO_ROOT)})"
    else:
        model = servers.ctranslate2_model(bundle, bundle_dir, args.ctranslate2_venv / "bin" / "python")
        if isinstance(model, servers.Unavailable):
            return f"CTranslate2 skipped: {model.reason}"
        env = {
            "BENCH_CT2_MODEL_DIR": str(model),
            "BENCH_CT2_BUNDLE_DIR": str(bundle_dir),
            "BENCH_CT2_MAX_CHARS": str(limit),
            "THREADS": str(args.threads),  # the same gunicorn threads as this runtime's servers
        }
        function = ServedFunction.start_app(args.ctranslate2_venv, servers.CT2_SERVER, "serve", env, log)
        health = function.health()
        threads = f"inter_threads {health['inter_threads']}, intra_threads {health['intra_threads']}"
        where = model.relative_to(servers.REPO_ROOT)
        title = f"CTranslate2 {health['ctranslate2']} ({threads}, beam {health['beam_size']}; {where})"
    health = function.health()
    return Served(key, title, function, function.worker_pid(), int(health["limits"]["max_chars"]))


@contextmanager
def lineup(bundle: str, bundle_dir: Path, args: argparse.Namespace, log_dir: Path) -> Iterator[Lineup]:
    """The bundle's servers, started in turn (this tree's first: its character limit is given to the others),
    stopped at the end."""
    started = Lineup()
    limit = args.max_chars or 20_000
    try:
        for key in args.server:
            print(f"   starting {key}", flush=True)
            try:
                served = start_one(key, bundle, bundle_dir, args, log_dir, limit)
            except RuntimeError as error:
                started.skipped[key] = f"{key} did not start: {str(error).splitlines()[0]}"
                started.failed = True
                continue
            if isinstance(served, str):
                started.skipped[key] = served
                continue
            started.running[key] = served
            limit = served.limit if key == THIS_TREE else limit
        yield started
    finally:
        for served in started.running.values():
            served.function.stop()


# --- the sweep of one bundle --------------------------------------------------------------------------------


def point_line(point: Measured) -> str:
    """One point's figures as measured (a figure with nothing behind it is left out)."""
    f = point.figures
    parts = [f"{point.kind:<12} {point.clients:>3} clients  {point.server:<12} {f['characters_per_s']:>8,.0f} chars/s"]
    if "vs_one_client" in f:
        parts.append(f"({f['vs_one_client']:.2f}x one client)")
    if "p50_ms" in f:
        parts.append(
            f"p50 {f['p50_ms']:,.0f} / p95 {f['p95_ms']:,.0f} / p99 {f['p99_ms']:,.0f} ms "
            f"(p95/p50 {f['p95_over_p50']:.2f})"
        )
    parts.append(f"good {f['good']}, refused {f['refused']}, errors {f['errors']}")
    if "rss_peak_mb" in f:
        parts.append(f"RSS peak {f['rss_peak_mb']:.1f} MB")
    if "load_average" in f:
        parts.append(f"load {f['load_average']:.1f}")
    lines = ["   " + "  ".join(parts)]
    if len(f["by_class"]) > 1:
        for size_class, row in f["by_class"].items():
            measured = (
                f"p50 {row['p50_ms']:,.0f} / p95 {row['p95_ms']:,.0f} / p99 {row['p99_ms']:,.0f} ms"
                if "p50_ms" in row
                else "no good answer"
            )
            lines.append(f"      {size_class:<10} {row['requests']:>5} requests  {measured}")
    lines += [f"      error: {error}" for error in f["first_errors"]]
    return "\n".join(lines)


def measure_kind(bundle: str, kind: str, started: Lineup, args: argparse.Namespace) -> list[Measured]:
    """Every number of clients for one request kind, each server in turn at each."""
    count = args.requests if kind == ONE_SENTENCE else args.mix_requests
    limit = min(served.limit for served in started.running.values())
    mix = MIXES[kind]
    print(f"-- {bundle}, {kind}: {count} requests a point ({mix.describe(limit)})", flush=True)
    done: list[Measured] = []
    keys = list(started.running)
    for position, clients in enumerate(args.clients):
        texts = plan_texts(count, mix, limit, args.seed + 1_000 * position + (kind == LOAD_MIX_KIND))
        for key in keys[position % len(keys) :] + keys[: position % len(keys)]:
            served = started.running[key]
            answers, wall_s, rss = run_point(served.function.base_url, served.worker, texts, clients)
            point = Point(bundle, key, kind, clients, answers, wall_s, rss, os.getloadavg()[0])
            measured = Measured(bundle, key, kind, clients, point_figures(point))
            done = with_ratios([*done, measured])
            print(point_line(done[-1]), flush=True)
            if STOP.is_set():
                return done
    return done


def warm_up(started: Lineup, args: argparse.Namespace) -> None:
    """A few one-sentence requests to each server, not counted: sessions, caches and connections warm."""
    texts = plan_texts(WARMUP_REQUESTS, ONE_SENTENCE_MIX, 20_000, args.seed - 1)
    for served in started.running.values():
        run_point(served.function.base_url, served.worker, texts, 1)


def sweep_bundle(bundle: str, bundle_dir: Path, args: argparse.Namespace, log_dir: Path) -> tuple[dict[str, Any], bool]:
    print(f"== bundle {bundle} ({bundle_dir})", flush=True)
    result: dict[str, Any] = {"bundle": bundle, "bundle_dir": str(bundle_dir), "servers": {}, "points": []}
    with lineup(bundle, bundle_dir, args, log_dir) as started:
        for key, reason in started.skipped.items():
            print(f"   {reason}", flush=True)
            result["servers"][key] = {"skipped": reason}
        for key, served in started.running.items():
            print(
                f"   {key}: {served.title}; worker pid {served.worker}; limit {served.limit:,} characters", flush=True
            )
            result["servers"][key] = {"title": served.title, "limit": served.limit}
        if not started.running:
            return result, False
        warm_up(started, args)
        points: list[Measured] = []
        for kind in args.kind:
            points += measure_kind(bundle, kind, started, args)
            if STOP.is_set():
                break
    result["points"] = [asdict(point) for point in points]
    ok = not started.failed and all(point.figures["errors"] == 0 for point in points)
    return result, ok


# --- the report ---------------------------------------------------------------------------------------------


def table(points: list[Measured], bundle: str, kind: str, keys: list[str]) -> list[str]:
    """A markdown table: a row per number of clients, a column per server (what was measured only), and the
    machine's load average as each server's point ended."""
    chosen = [p for p in points if p.bundle == bundle and p.kind == kind]
    if not chosen:
        return []
    figures = "chars/s (x 1 client), p50 / p95 / p99 ms, refused/errors, RSS peak"
    header = "| clients | " + " | ".join(f"{key}: {figures}" for key in keys) + " | load average |"
    lines = [f"{bundle}, {kind}:", "", header, "|---|" + "---|" * (len(keys) + 1)]
    for clients in sorted({p.clients for p in chosen}):
        row = [next((p for p in chosen if p.server == key and p.clients == clients), None) for key in keys]
        cells = [table_cell(point.figures) if point else "not measured" for point in row]
        loads = [f"{point.figures['load_average']:.1f}" for point in row if point and "load_average" in point.figures]
        lines.append(f"| {clients} | " + " | ".join(cells) + f" | {' / '.join(loads)} |")
    return [*lines, ""]


def table_cell(f: dict[str, Any]) -> str:
    cell = f"{f['characters_per_s']:,.0f}"
    cell += f" ({f['vs_one_client']:.2f}x)" if "vs_one_client" in f else ""
    cell += f", {f['p50_ms']:,.0f} / {f['p95_ms']:,.0f} / {f['p99_ms']:,.0f}" if "p50_ms" in f else ", no good answer"
    cell += f", {f['refused']}/{f['errors']}"
    return cell + (f", {f['rss_peak_mb']:.0f} MB" if "rss_peak_mb" in f else "")


def goals_of(points: list[Measured], bundle: str, args: argparse.Namespace) -> list[Goal]:
    peak, source = PREVIOUS_PEAK_MB.get(bundle, (None, ""))
    if args.previous_peak_mb is not None:
        peak, source = args.previous_peak_mb, "(--previous-peak-mb)"
    mine = [p for p in points if p.bundle == bundle]
    return [
        *scaling_goals(mine, bundle),
        *ahead_goals(mine, bundle, KINDS),
        *robustness_goals(mine, bundle, peak, source),
    ]


# --- the run ------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", action="append", help=f"{DEFAULT_BUNDLE}, {RANDOM_OPUS} or a folder; repeatable")
    parser.add_argument("--csanmt-bundle", type=Path, help="a full-size CSANMT bundle (CTranslate2 skipped there)")
    parser.add_argument("--clients", type=_counts, default=CLIENTS, help="closed-loop clients per point: 1,4,8,16,64")
    parser.add_argument("--kind", action="append", choices=KINDS, help="request kind; repeatable (default both)")
    parser.add_argument("--server", action="append", choices=SERVERS, help="which servers (default all three)")
    parser.add_argument("--requests", type=int, default=REQUESTS, help="one-sentence requests a point")
    parser.add_argument("--mix-requests", type=int, default=MIX_REQUESTS, help="load-mix requests a point")
    parser.add_argument("--max-chars", type=int, help="TRANSLATE_MAX_CHARS for every server (default: its default)")
    parser.add_argument(
        "--threads", type=int, default=THREADS, help=f"gunicorn's threads in every server (make run's: {THREADS})"
    )
    parser.add_argument("--baseline-commit", default=servers.BASELINE_COMMIT, help="the per-request decoding's commit")
    parser.add_argument("--translation-memory", action="store_true", help="keep this runtime's translation memory on")
    parser.add_argument("--previous-peak-mb", type=float, help="the 64-client goal's previous peak RSS")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--server-venv", type=Path, help="environment of this runtime's servers (.venv-run)")
    parser.add_argument("--ctranslate2-venv", type=Path, help="environment of the CTranslate2 server (this one)")
    parser.add_argument("--quick", action="store_true", help=f"a smoke run: {QUICK}, the default bundle")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--log-dir", type=Path, help="keep the servers' output here (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            if getattr(args, key) == parser.get_default(key):
                setattr(args, key, value)
    args.clients = tuple(sorted(set(args.clients)))
    args.bundle = args.bundle or (
        [DEFAULT_BUNDLE] if args.quick or args.csanmt_bundle else [DEFAULT_BUNDLE, RANDOM_OPUS]
    )
    args.kind = args.kind or list(KINDS)
    args.server = [key for key in SERVERS if key in (args.server or SERVERS)]  # this tree's first: its limit
    args.server_venv = (args.server_venv or default_server_venv()).resolve()
    args.ctranslate2_venv = (args.ctranslate2_venv or servers.default_ctranslate2_venv()).resolve()
    return args


def _counts(text: str) -> tuple[int, ...]:
    counts = tuple(int(part) for part in text.split(",") if part.strip())
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("give positive numbers of clients, comma-separated: 1,4,8,16,64")
    return counts


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    for number in (signal.SIGINT, signal.SIGTERM):  # stop early, with the figures of what was done
        gevent.signal_handler(number, STOP.set)
    command = "python -m bench.load.serving " + " ".join(sys.argv[1:] if argv is None else argv)
    header = [f"$ {command}", *environment_lines(args.server_venv)]
    header.append(f"gunicorn: WORKERS {os.environ.get('WORKERS', '1')}, THREADS {args.threads}, for every server")
    print("\n".join(header), flush=True)
    began = time.monotonic()
    bundles = [(name, resolve_bundle(name)) for name in args.bundle]
    bundles += [("csanmt", args.csanmt_bundle.resolve())] if args.csanmt_bundle else []
    results, points, ok = [], [], True
    with tempfile.TemporaryDirectory(prefix="serving-") as scratch:
        for name, folder in bundles:
            result, bundle_ok = sweep_bundle(name, folder, args, args.log_dir or Path(scratch))
            results.append(result)
            points += [Measured(**point) for point in result["points"]]
            ok &= bundle_ok
            if STOP.is_set():
                break
    report, goals = list(header), []
    for result in results:
        bundle = result["bundle"]
        report += [
            f"== {bundle}: "
            + "; ".join(f"{key}: {s.get('title') or s['skipped']}" for key, s in result["servers"].items())
        ]
        keys = [key for key in args.server if key in result["servers"] and "title" in result["servers"][key]]
        for kind in args.kind:
            report += table(points, bundle, kind, keys)
        goals += goals_of(points, bundle, args)
    report += ["issue 44's goals (this tree's server):", *[f"  {goal.line()}" for goal in goals]]
    report.append(f"total {time.monotonic() - began:,.0f} s; {'no errors' if ok else 'ERRORS (see above)'}")
    print("\n==== summary\n" + "\n".join(report), flush=True)
    if args.json:
        everything = {
            "command": command,
            "environment": header[1:],
            "bundles": results,
            "goals": [asdict(g) for g in goals],
        }
        args.json.write_text(json.dumps(everything, indent=1), encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
