"""The serving sweep's figures and goals (``bench.load.serving``): kept apart from the sweep, which imports locust
(and with it gevent's patching of the standard library), so that they can be computed and tested anywhere.

An answer is **good** (200 with a string ``translation``), a **refusal** (429 or 503 with ``Retry-After``: the
server said at once that it is busy, and when to come back) or an **error** (anything else: another status, a
429/503 without ``Retry-After``, no HTTP answer, a 200 without a translation); a 5xx that is not a refusal is also
counted as a server error. A point's throughput counts the characters of the good answers only; its latencies are
the good answers' (nearest rank, client side, so including the wait for one of gunicorn's threads and in the
decoder's queue), overall and by size class; the refusals' own latencies say whether they were fast.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bench.load.load_figures import percentile
from bench.load.served_function import RssSample

GOOD, REFUSED, ERROR = "good", "refused", "error"
REFUSAL_STATUSES = (429, 503)
FAST_REFUSAL_S = 1.0  # a refusal answered within this is "fast"
PERCENTILES = (50, 95, 99)

# the servers and request kinds of the sweep, by key
THIS_TREE, PER_REQUEST, CTRANSLATE2 = "this-tree", "per-request", "ctranslate2"
SERVERS = (THIS_TREE, PER_REQUEST, CTRANSLATE2)
ONE_SENTENCE, LOAD_MIX_KIND = "one-sentence", "load-mix"
KINDS = (ONE_SENTENCE, LOAD_MIX_KIND)

# issue 44's goals
HEADLINE_CLIENTS, HEADLINE_RATIO, HEADLINE_TAIL = 8, 2.5, 2.0
WIDE_CLIENTS, WIDE_RATIO = 16, 3.0
AHEAD_CLIENTS = (4, 16, 64)
ROBUST_CLIENTS, RSS_MARGIN = 64, 0.25


@dataclass(frozen=True)
class Answer:
    size_class: str
    chars: int
    seconds: float
    verdict: str  # GOOD, REFUSED or ERROR
    status: int  # 0: no HTTP answer
    detail: str = ""  # what was wrong, for an error
    output_chars: int = 0  # the translation's characters, for a good answer


@dataclass(frozen=True)
class Point:
    """One server under one load: ``clients`` closed-loop clients sending ``kind`` requests."""

    bundle: str
    server: str
    kind: str
    clients: int
    answers: list[Answer]
    wall_s: float
    rss: list[RssSample]
    load_average: float | None = None  # the machine's 1-minute load average as the point ended


def judge(status: int, retry_after: str | None, body: bytes | None) -> tuple[str, str, int]:
    """(verdict, what was wrong, the translation's characters) of one HTTP answer."""
    if status in REFUSAL_STATUSES and retry_after:
        return REFUSED, "", 0
    if status != 200:
        without = " without Retry-After" if status in REFUSAL_STATUSES else ""
        return ERROR, f"HTTP {status}{without}: {(body or b'')[:300]!r}", 0
    try:
        answer = json.loads(body or b"")
    except ValueError:
        return ERROR, f"not JSON: {(body or b'')[:300]!r}", 0
    translation = answer.get("translation") if isinstance(answer, dict) else None
    if not isinstance(translation, str):
        return ERROR, f"no translation in {str(answer)[:300]}", 0
    return GOOD, "", len(translation)


def latency_figures(seconds: list[float]) -> dict[str, float]:
    """p50/p95/p99 and max in ms, and p95 over p50; empty when nothing was measured."""
    if not seconds:
        return {}
    figures = {f"p{share}_ms": 1000 * percentile(seconds, share) for share in PERCENTILES}
    figures["max_ms"] = 1000 * max(seconds)
    figures["p95_over_p50"] = figures["p95_ms"] / figures["p50_ms"] if figures["p50_ms"] > 0 else float("inf")
    return figures


def point_figures(point: Point) -> dict[str, Any]:
    good = [answer for answer in point.answers if answer.verdict == GOOD]
    refused = [answer for answer in point.answers if answer.verdict == REFUSED]
    errors = [answer for answer in point.answers if answer.verdict == ERROR]
    chars = sum(answer.chars for answer in good)
    by_class: dict[str, dict[str, Any]] = {}
    for size_class in dict.fromkeys(answer.size_class for answer in point.answers):
        chosen = [answer for answer in good if answer.size_class == size_class]
        by_class[size_class] = {"requests": sum(a.size_class == size_class for a in point.answers)}
        by_class[size_class] |= {"good": len(chosen), **latency_figures([a.seconds for a in chosen])}
    rss = [sample.rss_mb for sample in point.rss]
    figures: dict[str, Any] = {
        "requests": len(point.answers),
        "good": len(good),
        "refused": len(refused),
        "slow_refusals": sum(answer.seconds > FAST_REFUSAL_S for answer in refused),
        "errors": len(errors),
        "server_errors": sum(answer.status >= 500 for answer in errors),
        "first_errors": [f"[{a.size_class}, {a.chars} chars] {a.detail}" for a in errors[:5]],
        "characters": chars,
        "wall_s": point.wall_s,
        "characters_per_s": chars / point.wall_s if point.wall_s > 0 else 0.0,
        "requests_per_s": len(good) / point.wall_s if point.wall_s > 0 else 0.0,
        **latency_figures([answer.seconds for answer in good]),
        "by_class": by_class,
    }
    if good:
        figures["mean_output_chars"] = sum(answer.output_chars for answer in good) / len(good)
    if refused:
        figures["refusal_max_ms"] = 1000 * max(answer.seconds for answer in refused)
    if rss:
        figures |= {"rss_peak_mb": max(rss), "rss_samples": len(rss)}
    if point.load_average is not None:
        figures["load_average"] = point.load_average
    return figures


@dataclass(frozen=True)
class Measured:
    """A point's figures with where it belongs."""

    bundle: str
    server: str
    kind: str
    clients: int
    figures: dict[str, Any]

    def key(self) -> tuple[str, str, str, int]:
        return self.bundle, self.server, self.kind, self.clients


def with_ratios(points: Iterable[Measured]) -> list[Measured]:
    """Each point's throughput as a multiple of the same server's, bundle's and kind's 1-client point (when there
    is one with good answers: no ratio otherwise)."""
    points = list(points)
    alone = {p.key()[:3]: p.figures["characters_per_s"] for p in points if p.clients == 1 and p.figures["good"]}
    done = []
    for point in points:
        figures = dict(point.figures)
        one = alone.get(point.key()[:3])
        if one:
            figures["vs_one_client"] = figures["characters_per_s"] / one
        done.append(Measured(point.bundle, point.server, point.kind, point.clients, figures))
    return done


# --- the goals ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Goal:
    text: str  # what was measured against what was asked, or why it was not measured
    met: bool | None  # None: not measured in this run

    def line(self) -> str:
        verdict = {True: "met", False: "NOT MET", None: "not measured"}[self.met]
        return f"{self.text}: {verdict}"


def _find(points: list[Measured], bundle: str, server: str, kind: str, clients: int) -> Measured | None:
    return next((p for p in points if p.key() == (bundle, server, kind, clients)), None)


def _where(clients: int, kind: str, bundle: str) -> str:
    return f"{clients} clients {kind}, {bundle}"


def scaling_goals(points: list[Measured], bundle: str) -> list[Goal]:
    """One-sentence requests on this tree's server: 8 clients >= 2.5x one client and p95 <= 2x p50; 16 >= 3x."""
    goals = []
    for clients, ratio in ((HEADLINE_CLIENTS, HEADLINE_RATIO), (WIDE_CLIENTS, WIDE_RATIO)):
        where = _where(clients, ONE_SENTENCE, bundle)
        point = _find(points, bundle, THIS_TREE, ONE_SENTENCE, clients)
        measured = point.figures.get("vs_one_client") if point else None
        if measured is None:
            goals.append(Goal(f"{where}: throughput against one client (goal >= {ratio:g}x)", None))
        else:
            goals.append(Goal(f"{where}: {measured:.2f}x one client (goal >= {ratio:g}x)", measured >= ratio))
        if clients == HEADLINE_CLIENTS:
            if point is None or "p50_ms" not in point.figures:
                goals.append(Goal(f"{where}: p95 against p50 (goal <= {HEADLINE_TAIL:g}x)", None))
            else:
                f = point.figures
                text = f"{where}: p95 {f['p95_ms']:,.0f} ms = {f['p95_over_p50']:.2f}x p50 {f['p50_ms']:,.0f} ms"
                goals.append(Goal(f"{text} (goal <= {HEADLINE_TAIL:g}x)", f["p95_over_p50"] <= HEADLINE_TAIL))
    return goals


def ahead_goals(points: list[Measured], bundle: str, kinds: Iterable[str]) -> list[Goal]:
    """This tree's server ahead of the CTranslate2 server (characters/s) at 4, 16 and 64 clients."""
    goals = []
    for kind in kinds:
        for clients in AHEAD_CLIENTS:
            where = _where(clients, kind, bundle)
            ours = _find(points, bundle, THIS_TREE, kind, clients)
            theirs = _find(points, bundle, CTRANSLATE2, kind, clients)
            if ours is None or theirs is None:
                goals.append(Goal(f"{where}: this tree against CTranslate2 (goal: ahead)", None))
                continue
            a, b = ours.figures["characters_per_s"], theirs.figures["characters_per_s"]
            ratio = f" ({a / b:.2f}x)" if b > 0 else ""
            text = f"{where}: this tree {a:,.0f} characters/s, CTranslate2 {b:,.0f}{ratio}"
            goals.append(Goal(f"{text} (goal: ahead)", a > b))
    return goals


def robustness_goals(points: list[Measured], bundle: str, previous_peak_mb: float | None, source: str) -> list[Goal]:
    """64 clients with the load mix on this tree's server: no failure but fast 429/503 with Retry-After, no 5xx,
    the worker's peak RSS within the load test's previous peak + 25 %."""
    where = _where(ROBUST_CLIENTS, LOAD_MIX_KIND, bundle)
    point = _find(points, bundle, THIS_TREE, LOAD_MIX_KIND, ROBUST_CLIENTS)
    if point is None:
        return [Goal(f"{where}: failures, 5xx and peak RSS (goal: none but fast refusals; RSS within +25 %)", None)]
    f = point.figures
    refusals = f"{f['refused']} refusals ({f['slow_refusals']} slower than {FAST_REFUSAL_S:g} s)"
    goals = [
        Goal(
            f"{where}: {f['errors']} errors, {refusals} of {f['requests']} (goal: no failure but fast refusals)",
            f["errors"] == 0 and f["slow_refusals"] == 0,
        ),
        Goal(f"{where}: {f['server_errors']} 5xx other than refusals (goal: none)", f["server_errors"] == 0),
    ]
    if "rss_peak_mb" not in f or previous_peak_mb is None:
        why = "no previous peak known for this bundle" if previous_peak_mb is None else "no RSS sample"
        goals.append(Goal(f"{where}: peak RSS within the previous peak + 25 % ({why})", None))
    else:
        bound = previous_peak_mb * (1 + RSS_MARGIN)
        text = f"{where}: peak RSS {f['rss_peak_mb']:.1f} MB (goal <= {previous_peak_mb:.1f} MB {source} + 25 %"
        goals.append(Goal(f"{text} = {bound:.1f} MB)", f["rss_peak_mb"] <= bound))
    return goals
