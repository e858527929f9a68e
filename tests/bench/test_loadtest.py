"""`make loadtest`'s script in its --quick mode against the real server, and the figures it computes.

``python -m bench.load.loadtest --quick`` runs in a child process (locust patches the standard library for gevent
when imported, which must not happen inside pytest): infra/local/run.sh serves the shipped bundle with a
300-character limit, locust sends 40 requests, 8 at a time, then a 40-request soak; about 30-60 s on 2 busy cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.load.load_figures import Outcome, PhaseResult, check_answer, percentile, soak_figures
from bench.load.served_function import RssSample

REPO_ROOT = Path(__file__).resolve().parents[2]
QUICK_LIMIT = 300


@pytest.mark.slow
@pytest.mark.shipped_model
def test_quick_load_and_soak_against_the_local_server(tmp_path: Path) -> None:
    report = tmp_path / "figures.json"
    run = subprocess.run(
        [sys.executable, "-m", "bench.load.loadtest", "--quick", "--server-venv", sys.prefix, "--json", str(report)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "PASS" in run.stdout and "latency p50" in run.stdout and "RSS curve" in run.stdout
    (bundle,) = json.loads(report.read_text(encoding="utf-8"))["bundles"]
    assert bundle["limit"] == QUICK_LIMIT
    for phase, count in (("load", 40), ("soak", 40)):
        figures = bundle[phase]
        assert figures["requests"] == count and figures["errors"] == 0
        assert 0 < figures["p50_ms"] <= figures["p95_ms"] <= figures["p99_ms"] <= figures["max_ms"]
        assert figures["characters_per_s"] > 0 and figures["rss_samples"] >= 4
        assert figures["rss_peak_mb"] > 50  # the worker that holds the model, not the load generator's shell
    by_class = bundle["load"]["by_class"]
    assert set(by_class) == {"word", "sentence", "paragraph", "document", "limit"}
    assert by_class["limit"]["mean_chars"] == QUICK_LIMIT  # a request of exactly the limit is accepted
    assert by_class["word"]["mean_chars"] <= 4
    assert abs(bundle["soak"]["soak"]["growth_mb"]) < 30


def test_an_answer_is_good_only_when_it_is_200_with_a_translation() -> None:
    assert check_answer(200, b'{"translation": "Hello"}') is None
    assert "HTTP 413" in (check_answer(413, b'{"error": {"code": "request_too_large"}}') or "")
    assert "HTTP 500" in (check_answer(500, b"") or "")
    assert "not JSON" in (check_answer(200, b"<html>") or "")
    assert "no translation" in (check_answer(200, b'{"translations": ["a"]}') or "")


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 99)) == (50.0, 95.0, 99.0)
    assert percentile([3.0], 99) == 3.0


def test_soak_growth_is_the_settled_end_against_the_rss_after_warm_up() -> None:
    # 100 requests; warm-up = the first 10; RSS climbs to 200 MB during warm-up, then leaks 1 MB per 2 requests
    samples = [RssSample(float(i), i, 100 + 10 * i) for i in range(11)]
    samples += [RssSample(float(i), i, 200 + (i - 10) / 2) for i in range(11, 101)]
    samples += [RssSample(101.0 + i, 100, 245.0) for i in range(3)]  # settled after the last answer
    phase = PhaseResult("soak", "soak mix", 8, [Outcome("word", 2, 0.1, None)] * 100, 100.0, samples)
    figures = soak_figures(phase, 0.10)
    assert figures["warmup_requests"] == 10
    assert figures["rss_after_warmup_mb"] == pytest.approx(200.0, abs=1.0)
    assert figures["growth_mb"] == pytest.approx(45.0, abs=1.0)
    assert figures["curve"][0]["done"] == 0 and figures["curve"][-1]["done"] == 100
