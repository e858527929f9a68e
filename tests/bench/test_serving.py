"""`make serving`'s sweep in its --quick mode against the real servers, and the figures and goals it computes.

``python -m bench.load.serving --quick`` runs in a child process (locust patches the standard library for gevent
when imported): this tree's server, the per-request decoding of commit 7295841 (a git worktree under .bench/serving,
made once; skipped, saying so, where the history lacks the commit) and the CTranslate2 server, on the shipped bundle,
1 and 4 clients, 6 requests a point of each kind; about 50-80 s on 2 busy cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.load import ctranslate2_server, serving_servers
from bench.load.served_function import RssSample
from bench.load.serving_figures import (
    CTRANSLATE2,
    ERROR,
    GOOD,
    LOAD_MIX_KIND,
    ONE_SENTENCE,
    PER_REQUEST,
    REFUSED,
    THIS_TREE,
    Answer,
    Measured,
    Point,
    ahead_goals,
    judge,
    point_figures,
    robustness_goals,
    scaling_goals,
    with_ratios,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.shipped_model
def test_quick_sweep_against_the_three_servers(tmp_path: Path) -> None:
    report = tmp_path / "serving.json"
    run = subprocess.run(
        [sys.executable, "-m", "bench.load.serving", "--quick", "--server-venv", sys.prefix, "--json", str(report)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "issue 44's goals" in run.stdout and "(goal >= 2.5x): not measured" in run.stdout  # 8 clients: not run
    (bundle,) = json.loads(report.read_text(encoding="utf-8"))["bundles"]
    servers = bundle["servers"]
    assert "title" in servers[THIS_TREE] and "title" in servers[CTRANSLATE2]
    assert "title" in servers[PER_REQUEST] or "lacks commit" in servers[PER_REQUEST]["skipped"]
    measured = {key for key, server in servers.items() if "title" in server}
    points = {(p["server"], p["kind"], p["clients"]): p["figures"] for p in bundle["points"]}
    assert set(points) == {(key, kind, n) for key in measured for kind in (ONE_SENTENCE, LOAD_MIX_KIND) for n in (1, 4)}
    for (_, _, clients), figures in points.items():
        assert figures["requests"] == figures["good"] == 6 and figures["errors"] == figures["refused"] == 0
        assert 0 < figures["p50_ms"] <= figures["p95_ms"] <= figures["p99_ms"] <= figures["max_ms"]
        assert figures["characters_per_s"] > 0 and figures["mean_output_chars"] > 0
        assert figures["rss_peak_mb"] > 50  # the worker that holds the model
        assert figures["vs_one_client"] == pytest.approx(1.0) if clients == 1 else figures["vs_one_client"] > 0
    load_mix = points[(THIS_TREE, LOAD_MIX_KIND, 1)]["by_class"]
    assert set(load_mix) == {"word", "sentence", "paragraph", "document", "limit"}  # every class, limit 300


# --- what counts as good, refused or an error ---------------------------------------------------------------


def test_an_answer_is_good_refused_or_an_error() -> None:
    assert judge(200, None, b'{"translation": "Hello"}') == (GOOD, "", 5)
    assert judge(429, "3", b'{"error": {"code": "busy"}}')[0] == REFUSED
    assert judge(503, "10", b"")[0] == REFUSED
    verdict, detail, _ = judge(429, None, b"")
    assert verdict == ERROR and "without Retry-After" in detail  # a refusal must say when to come back
    assert judge(500, "1", b"boom")[0] == ERROR  # Retry-After makes only 429 and 503 refusals
    assert "not JSON" in judge(200, None, b"<html>")[1]
    assert "no translation" in judge(200, None, b'{"translations": ["a"]}')[1]


def _answer(size_class: str, seconds: float, verdict: str = GOOD, status: int = 200, chars: int = 10) -> Answer:
    return Answer(size_class, chars, seconds, verdict, status, "" if verdict != ERROR else "HTTP 500", 7)


def test_a_points_figures_count_good_answers_refusals_and_errors_apart() -> None:
    answers = [_answer("word", s / 100, chars=2) for s in range(1, 21)]  # 10-200 ms
    answers += [_answer("sentence", s, chars=40) for s in range(1, 11)]  # 1-10 s
    answers += [_answer("sentence", 0.05, REFUSED, 429), _answer("sentence", 2.5, REFUSED, 503)]
    answers += [_answer("paragraph", 0.3, ERROR, 500, chars=500), _answer("paragraph", 0.3, ERROR, 0, chars=500)]
    rss = [RssSample(0.0, 0, 100.0), RssSample(0.5, 10, 180.0), RssSample(1.0, 34, 150.0)]
    figures = point_figures(Point("default", THIS_TREE, LOAD_MIX_KIND, 8, answers, 10.0, rss))
    assert (figures["requests"], figures["good"], figures["refused"], figures["errors"]) == (34, 30, 2, 2)
    assert figures["slow_refusals"] == 1 and figures["server_errors"] == 1  # status 0 is an error, not a 5xx
    assert figures["characters"] == 20 * 2 + 10 * 40  # good answers only
    assert figures["characters_per_s"] == pytest.approx(44.0)
    assert figures["rss_peak_mb"] == 180.0
    word, sentence, paragraph = (figures["by_class"][name] for name in ("word", "sentence", "paragraph"))
    assert (word["p50_ms"], word["p95_ms"], word["p99_ms"]) == pytest.approx((100.0, 190.0, 200.0))
    assert (sentence["p50_ms"], sentence["p95_ms"], sentence["good"], sentence["requests"]) == (
        pytest.approx(5000.0),
        pytest.approx(10000.0),
        10,
        12,
    )
    assert "p50_ms" not in paragraph and paragraph["good"] == 0  # nothing measured: no figure
    assert figures["p50_ms"] == pytest.approx(150.0)  # nearest rank over the 30 good answers: the 15th
    assert figures["p95_over_p50"] == pytest.approx(figures["p95_ms"] / figures["p50_ms"])


def test_a_point_without_a_good_answer_has_no_latency_or_ratio() -> None:
    refused = [_answer("sentence", 0.01, REFUSED, 429)] * 3
    figures = point_figures(Point("default", THIS_TREE, ONE_SENTENCE, 1, refused, 1.0, []))
    assert figures["characters_per_s"] == 0 and "p50_ms" not in figures and "rss_peak_mb" not in figures
    (point,) = with_ratios([Measured("default", THIS_TREE, ONE_SENTENCE, 1, figures)])
    assert "vs_one_client" not in point.figures


def _measured(server: str, clients: int, chars_per_s: float, kind: str = ONE_SENTENCE, **more: float) -> Measured:
    figures = {"good": 1, "characters_per_s": chars_per_s, "p50_ms": 100.0, "p95_ms": 150.0, "p95_over_p50": 1.5}
    return Measured("default", server, kind, clients, figures | more)


def test_throughput_is_a_multiple_of_the_same_servers_one_client() -> None:
    points = with_ratios(
        [
            _measured(THIS_TREE, 1, 400.0),
            _measured(THIS_TREE, 8, 1000.0),
            _measured(CTRANSLATE2, 1, 800.0),
            _measured(CTRANSLATE2, 8, 1000.0),
            _measured(PER_REQUEST, 8, 500.0),  # no one-client point of its own: no ratio
            _measured(THIS_TREE, 8, 900.0, kind=LOAD_MIX_KIND),  # nor for another kind
        ]
    )
    ratios = [point.figures.get("vs_one_client") for point in points]
    assert ratios == [1.0, 2.5, 1.0, 1.25, None, None]


def test_the_goals_say_met_not_met_or_not_measured() -> None:
    points = with_ratios(
        [
            _measured(THIS_TREE, 1, 400.0),
            _measured(THIS_TREE, 8, 1000.0, p95_ms=250.0, p95_over_p50=2.5),
            _measured(THIS_TREE, 4, 900.0),
            _measured(CTRANSLATE2, 4, 1000.0),
        ]
    )
    lines = [goal.line() for goal in scaling_goals(points, "default")]
    assert lines == [
        "8 clients one-sentence, default: 2.50x one client (goal >= 2.5x): met",
        "8 clients one-sentence, default: p95 250 ms = 2.50x p50 100 ms (goal <= 2x): NOT MET",
        "16 clients one-sentence, default: throughput against one client (goal >= 3x): not measured",
    ]
    ahead = [goal.line() for goal in ahead_goals(points, "default", [ONE_SENTENCE])]
    assert ahead[0] == (
        "4 clients one-sentence, default: this tree 900 characters/s, CTranslate2 1,000 (0.90x) (goal: ahead): NOT MET"
    )
    assert ahead[1:] == [
        f"{n} clients one-sentence, default: this tree against CTranslate2 (goal: ahead): not measured"
        for n in (16, 64)
    ]


def test_the_64_client_goal_allows_fast_refusals_only_and_bounds_the_peak_rss() -> None:
    figures = {
        "requests": 100,
        "errors": 0,
        "refused": 5,
        "slow_refusals": 0,
        "server_errors": 0,
        "rss_peak_mb": 230.0,
    }
    point = Measured("default", THIS_TREE, LOAD_MIX_KIND, 64, figures)
    goals = robustness_goals([point], "default", 191.0, "(run 6)")
    assert [goal.met for goal in goals] == [True, True, True]
    assert goals[2].text.endswith("peak RSS 230.0 MB (goal <= 191.0 MB (run 6) + 25 % = 238.8 MB)")
    slow = Measured("default", THIS_TREE, LOAD_MIX_KIND, 64, figures | {"slow_refusals": 1, "rss_peak_mb": 240.0})
    assert [goal.met for goal in robustness_goals([slow], "default", 191.0, "(run 6)")] == [False, True, False]
    unknown = robustness_goals([point], "other", None, "")
    assert [goal.met for goal in unknown] == [None]
    assert [goal.met for goal in robustness_goals([point], "default", None, "")][-1] is None


# --- the CTranslate2 server's routes and the baseline worktree ------------------------------------------------


def test_the_ctranslate2_server_answers_translate_and_health_only() -> None:
    def answer(method: str, path: str, body: object = None) -> tuple[object, int]:
        return ctranslate2_server.answer(method, path, body, lambda text: f"<{text}>", max_chars=5)

    assert answer("POST", "/translate", {"text": "你好"}) == ({"translation": "<你好>"}, 200)
    assert answer("GET", "/healthz") == (None, 200)
    assert answer("GET", "/translate")[1] == 405 and answer("POST", "/healthz")[1] == 405
    assert answer("POST", "/nowhere", {"text": "你好"})[1] == 404
    assert answer("POST", "/translate", {"text": ""})[1] == 400 and answer("POST", "/translate", None)[1] == 400
    assert answer("POST", "/translate", {"text": "一二三四五六"})[1] == 413


def test_a_baseline_commit_missing_from_the_history_is_skipped_with_the_reason(tmp_path: Path) -> None:
    missing = serving_servers.baseline_worktree("0" * 40, serving_dir=tmp_path)
    assert isinstance(missing, serving_servers.Unavailable) and "lacks commit" in missing.reason
    assert not any(tmp_path.iterdir())


def test_ctranslate2_is_skipped_for_a_csanmt_bundle(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"family": "csanmt"}', encoding="utf-8")
    skipped = serving_servers.ctranslate2_model("csanmt", tmp_path, Path(sys.executable))
    assert isinstance(skipped, serving_servers.Unavailable) and "does not convert CSANMT" in skipped.reason
