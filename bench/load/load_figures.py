"""The load test's figures: what counts as an error, latency percentiles, throughput, and RSS growth in a soak.

Kept apart from ``bench.load.loadtest`` (which imports locust, and with it gevent's patching of the standard library)
so that the figures can be computed and tested anywhere.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from typing import Any

from bench.load.served_function import RssSample

SETTLE_SAMPLES = 3  # RSS samples taken after the last answer of a phase, a second apart
PERCENTILES = (50, 95, 99)


@dataclass(frozen=True)
class Outcome:
    size_class: str
    chars: int
    seconds: float
    error: str | None


@dataclass(frozen=True)
class PhaseResult:
    name: str
    mix: str
    concurrency: int
    outcomes: list[Outcome]
    wall_s: float
    rss: list[RssSample]
    planned: int = 0  # requests planned; more than outcomes when the phase was stopped early

    @property
    def stopped_early(self) -> bool:
        return self.planned > len(self.outcomes)

    @property
    def errors(self) -> list[Outcome]:
        return [outcome for outcome in self.outcomes if outcome.error is not None]


def check_answer(status: int, body: bytes | None) -> str | None:
    """None for a good answer; otherwise what was wrong."""
    if status != 200:
        return f"HTTP {status}: {(body or b'')[:300]!r}"
    try:
        answer = json.loads(body or b"")
    except ValueError:
        return f"not JSON: {(body or b'')[:300]!r}"
    if not isinstance(answer, dict) or not isinstance(answer.get("translation"), str):
        return f"no translation in {str(answer)[:300]}"
    return None


# --- figures --------------------------------------------------------------------------------------------------


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (share in 0..100)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * share // 100))
    return ordered[int(rank) - 1]


def latency_figures(outcomes: list[Outcome]) -> dict[str, float]:
    seconds = [outcome.seconds for outcome in outcomes]
    figures = {f"p{share}_ms": 1000 * percentile(seconds, share) for share in PERCENTILES}
    figures["max_ms"] = 1000 * max(seconds)
    figures["mean_ms"] = 1000 * statistics.fmean(seconds)
    return figures


def phase_figures(phase: PhaseResult) -> dict[str, Any]:
    chars = sum(outcome.chars for outcome in phase.outcomes)
    rss = [sample.rss_mb for sample in phase.rss]
    by_class: dict[str, dict[str, float]] = {}
    for size_class in dict.fromkeys(outcome.size_class for outcome in phase.outcomes):
        chosen = [outcome for outcome in phase.outcomes if outcome.size_class == size_class]
        by_class[size_class] = {
            "requests": len(chosen),
            "mean_chars": statistics.fmean(outcome.chars for outcome in chosen),
            **latency_figures(chosen),
        }
    return {
        "requests": len(phase.outcomes),
        "errors": len(phase.errors),
        "concurrency": phase.concurrency,
        "characters": chars,
        "wall_s": phase.wall_s,
        "requests_per_s": len(phase.outcomes) / phase.wall_s,
        "characters_per_s": chars / phase.wall_s,
        **latency_figures(phase.outcomes),
        "rss_start_mb": rss[0],
        "rss_peak_mb": max(rss),
        "rss_end_mb": rss[-1],
        "rss_samples": len(rss),
        "by_class": by_class,
    }


def soak_figures(phase: PhaseResult, warmup_share: float) -> dict[str, Any]:
    """RSS after warm-up vs the end: the median of the samples around the warm-up point against the settled end."""
    samples = phase.rss
    warmup = max(1, round(warmup_share * len(phase.outcomes)))
    at = next(i for i, sample in enumerate(samples) if sample.done >= warmup)
    baseline = statistics.median(sample.rss_mb for sample in samples[max(0, at - 2) : at + 3])
    end = statistics.median(sample.rss_mb for sample in samples[-SETTLE_SAMPLES:])
    after = samples[at:]
    curve = []
    for tenth in range(0, 11):
        target = tenth * len(phase.outcomes) // 10
        sample = next((s for s in samples if s.done >= target), samples[-1])
        curve.append({"done": target, "seconds": sample.seconds, "rss_mb": sample.rss_mb})
    return {
        "warmup_requests": warmup,
        "rss_after_warmup_mb": baseline,
        "rss_end_mb": end,
        "growth_mb": end - baseline,
        "peak_after_warmup_mb": max(sample.rss_mb for sample in after),
        "min_after_warmup_mb": min(sample.rss_mb for sample in after),
        "curve": curve,
    }
