"""The streaming figures of ``make bench`` (``bench.pipeline.streaming_bench``): computed from what each process
measured, the two kinds side by side, the goals judged on the figures, the report's section replaced in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.pipeline import quoted, streaming_bench
from bench.pipeline.streaming_bench import STREAMED, WHOLE, Text


def _process(mode: str, total_s: float, peak_mb: float, sha: str = "same", **extra: float) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "mode": mode,
        "first_s": extra.get("first_s", total_s),
        "last_s": total_s,
        "total_s": total_s,
        "cpu_s": extra.get("cpu_s", 2 * total_s),
        "peak_rss_mb": peak_mb,
        "rss_after_warm_up_mb": 100.0,
        "characters": 2000,
        "repeats": 3,
        "sha256": sha,
    }
    if mode == STREAMED:
        figures |= {"units": 60, "batches": 9, "first_unit_chars": 31, "alone_s": extra.get("alone_s", 0.1)}
    return figures


def test_ratios_are_the_medians_of_each_kinds_processes() -> None:
    processes = {
        STREAMED: [
            _process(STREAMED, 10.0, 150.0, first_s=0.12, alone_s=0.1, cpu_s=20.0),
            _process(STREAMED, 12.0, 170.0, first_s=0.30, alone_s=0.1, cpu_s=22.0),
            _process(STREAMED, 11.0, 160.0, first_s=0.14, alone_s=0.1, cpu_s=21.0),
        ],
        WHOLE: [_process(WHOLE, 10.0, 200.0, cpu_s=20.0), _process(WHOLE, 12.0, 180.0, cpu_s=20.0)],
    }
    figures = streaming_bench.summary(processes)
    assert figures[STREAMED]["total_s"] == 11.0 and figures[WHOLE]["total_s"] == 11.0
    assert figures[STREAMED]["first_s"] == 0.14
    assert figures["first_over_alone"] == pytest.approx(1.4)
    assert figures["total_ratio"] == pytest.approx(1.0)
    assert figures["cpu_ratio"] == pytest.approx(21.0 / 20.0)
    assert figures["peak_ratio"] == pytest.approx(160.0 / 190.0)
    assert figures[STREAMED]["processes"] == 3 and figures[WHOLE]["processes"] == 2
    assert figures["same_english"] and streaming_bench.missing({"short": figures}) == []


def test_english_that_differs_between_the_kinds_is_a_failure() -> None:
    processes = {STREAMED: [_process(STREAMED, 1.0, 1.0, sha="a")], WHOLE: [_process(WHOLE, 1.0, 1.0, sha="b")]}
    figures = streaming_bench.summary(processes)
    assert not figures["same_english"]
    assert streaming_bench.missing({"short": figures}) == [
        "streaming, 2,000 characters: the streamed English differs from the whole answer's"
    ]
    with pytest.raises(ValueError, match="both needed"):
        streaming_bench.summary({STREAMED: processes[STREAMED], WHOLE: []})


def test_each_text_gets_a_streamed_and_a_whole_process_every_round_in_swapped_order() -> None:
    jobs: list[dict[str, Any]] = []

    def run(job: dict[str, Any]) -> dict[str, Any]:
        jobs.append(job)
        return _process(job["mode"], 1.0, 100.0)

    texts = [Text("short", 2000), Text("longest", 20000)]
    figures = streaming_bench.compare(Path("bundle"), texts, threads=2, rounds=3, repeats=4, run=run)
    assert [(job["characters"], job["mode"]) for job in jobs] == [
        (2000, STREAMED),
        (2000, WHOLE),
        (2000, WHOLE),
        (2000, STREAMED),
        (2000, STREAMED),
        (2000, WHOLE),
        (20000, STREAMED),
        (20000, WHOLE),
        (20000, WHOLE),
        (20000, STREAMED),
        (20000, STREAMED),
        (20000, WHOLE),
    ]
    assert {(job["bundle_dir"], job["threads"], job["repeats"]) for job in jobs} == {("bundle", 2, 4)}
    assert set(figures) == {"short", "longest"} and figures["short"][STREAMED]["processes"] == 3


def _section(first_s: float, streamed_s: float, streamed_peak: float, cpu_s: float = 20.0) -> str:
    processes = {
        STREAMED: [_process(STREAMED, streamed_s, streamed_peak, first_s=first_s, alone_s=0.1, cpu_s=cpu_s)],
        WHOLE: [_process(WHOLE, 10.0, 200.0, cpu_s=20.0)],
    }
    figures = {"short": streaming_bench.summary(processes)}
    titles = {"default": "`default`: the shipped model", "csanmt-full-size": "`csanmt-full-size`: with --csanmt-bundle"}
    return "\n".join(streaming_bench.section_lines({"default": figures}, titles, "Measured by a test with"))


def test_the_goals_are_judged_on_the_figures_and_a_model_not_run_is_named() -> None:
    met = _section(first_s=0.15, streamed_s=10.5, streamed_peak=199.0)
    assert "1.50x (goal <= 1.5: met)" in met and "1.050x wall clock (met), 1.000x CPU (met); goal <= 1.05" in met
    assert "0.995x (goal <= 1: met)" in met and "**missed**" not in met
    assert "`csanmt-full-size`: with --csanmt-bundle: **not run this time**" in met
    assert "`default`: the shipped model\n" in met
    missed = _section(first_s=0.16, streamed_s=10.6, streamed_peak=201.0, cpu_s=21.2)
    assert "1.60x (goal <= 1.5: **missed**)" in missed
    assert "1.060x wall clock (**missed**), 1.060x CPU (**missed**)" in missed
    assert "1.005x (goal <= 1: **missed**)" in missed


def test_a_page_can_quote_the_section() -> None:
    section = _section(first_s=0.15, streamed_s=10.5, streamed_peak=199.0)
    report = f"# Benchmarks\n\n## Environment\n\n- CPU: x\n\n{section}\n"
    assert quoted.figure(report, "Streaming :: default, streamed: a 2,000 :: first segment") == "0.15 s"
    assert quoted.figure(report, "Streaming :: default, not streamed: a 2,000 :: done") == "10.00 s"
    assert quoted.figure(report, "Streaming :: default: a 2,000 :: /([\\d.]+x) wall clock/") == "1.050x"
    assert quoted.figure(report, "Streaming :: default: a 2,000 :: /([\\d.]+x) CPU/") == "1.000x"
    assert quoted.figure(report, "Streaming :: default: a 2,000 :: first segment") == "0.15 s; alone 0.10 s"


def test_the_section_is_replaced_in_place_and_added_before_the_chart_when_absent() -> None:
    before = "# Benchmarks\n\n## Memory\n\nmemory figures\n\n![chart](benchmarks.png)\n"
    added = streaming_bench.replace_section(before, ["## Streaming", "", "first", ""])
    assert added == "# Benchmarks\n\n## Memory\n\nmemory figures\n\n## Streaming\n\nfirst\n\n![chart](benchmarks.png)\n"
    replaced = streaming_bench.replace_section(added, ["## Streaming", "", "second", ""])
    assert replaced == added.replace("first", "second")
    at_the_end = streaming_bench.replace_section("# B\n\n## Streaming\n\nold\n", ["## Streaming", "", "new", ""])
    assert at_the_end == "# B\n\n## Streaming\n\nnew\n\n"


def test_the_texts_are_dev_set_news_cut_at_the_exact_length() -> None:
    from build import corpus

    dev = {pair.zh for pair in corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR)}
    for characters in (2000, 20000):
        text = streaming_bench.request_text(characters)
        assert len(text) == characters
        first = text.split("。")[0]
        assert first in dev or first + "。" in dev
    assert streaming_bench.request_text(2000) == streaming_bench.request_text(2000)


@pytest.mark.slow
@pytest.mark.shipped_model
def test_each_process_measures_its_own_kind_of_call_on_the_shipped_model() -> None:
    job = {"bundle_dir": str(Path("model_artifacts/default").resolve()), "threads": 2, "characters": 300, "repeats": 1}
    streamed = streaming_bench.run_measuring_process(job | {"mode": STREAMED}, timeout_s=300)
    whole = streaming_bench.run_measuring_process(job | {"mode": WHOLE}, timeout_s=300)
    assert streamed["sha256"] == whole["sha256"]  # the same English, byte for byte
    assert 0 < streamed["first_s"] < streamed["last_s"] <= streamed["total_s"]  # the first unit came first
    assert streamed["units"] > 1 and streamed["batches"] > 1 and streamed["alone_s"] > 0
    assert 0 < whole["first_s"] == whole["last_s"] == whole["total_s"]
    for figures in (streamed, whole):
        assert figures["characters"] == 300 and figures["cpu_s"] > 0
        assert figures["peak_rss_mb"] >= figures["rss_after_warm_up_mb"] > 0
