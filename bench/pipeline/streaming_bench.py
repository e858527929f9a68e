"""What streaming costs and gains: ``python -m bench.pipeline.streaming_bench JOB.json`` (``make bench``).

For each text (``TEXTS``: about 2,000 characters, and the longest request, ``TRANSLATE_MAX_CHARS`` characters) two
kinds of fresh process, side by side in one run (``compare``, the order swapped every round), each loading the bundle
as a cold start does (``handler.coldstart.get_service``) with no translation memory (``memory_bytes=0``: nothing
answers a measured call but the model), translating one untimed short request, then:

* **streamed**: the text through ``TranslationService.translate_stream``, timed to the first ``StreamedUnit``, to
  the last and to the ``StreamFinished``; and the first unit translated alone (``translate_detailed``), in the same
  process state, as the yardstick of the first unit's time;
* **not streamed**: the same text through ``TranslationService.translate_detailed``, whose first and last segment
  arrive together with its answer.

Each process repeats its timed calls ``repeats`` times (medians), records the CPU seconds of its process during them
(``time.process_time``: less disturbed by other work on a shared machine than the wall clock) and its own peak RSS
(``VmHWM``: one figure a process, never one for both kinds) and the sha256 of the English, so that the parent can
say whether the streamed English equals the whole answer's byte for byte.

Texts come from the repository's dev set (``data/corpus/dev.zh-en.tsv.gz``): news-length sentences (30 to 120
characters, ``bench.pipeline.workload``) one after another until the length, cut at exactly that many characters.
"""

from __future__ import annotations

import hashlib
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.pipeline.memory import current_rss_mb, peak_rss_mb
from bench.pipeline.memory_bench import typing_text

STREAMED, WHOLE = "streamed", "whole"
MODES = (STREAMED, WHOLE)
MODE_NAMES = {STREAMED: "streamed", WHOLE: "not streamed"}
SHORT_TEXT_CHARS = 2_000
WARM_UP = "今天天气很好。"  # the untimed first request of every process
GOAL_FIRST_OVER_ALONE = 1.5  # the first unit of a 2,000-character text, against that unit alone
GOAL_TOTAL_RATIO = 1.05  # the whole streamed text against the whole answer
GOAL_PEAK_RATIO = 1.0  # peak RSS no higher


@dataclass(frozen=True)
class Text:
    key: str  # "short" or "longest"
    characters: int


def texts(longest_chars: int, short_chars: int = SHORT_TEXT_CHARS) -> list[Text]:
    """The two texts measured: about 2,000 characters, and the longest request."""
    return [Text("short", short_chars), Text("longest", longest_chars)]


def request_text(characters: int) -> str:
    """``characters`` characters of dev-set news sentences, one after another, cut at exactly that length."""
    from bench.pipeline.workload import NEWS_LENGTH
    from build import corpus

    low, high = NEWS_LENGTH
    news = [pair.zh for pair in corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR) if low <= len(pair.zh) <= high]
    if not news:
        raise RuntimeError(f"the dev set has no sentences of {low}-{high} characters")
    while sum(len(sentence) for sentence in news) < characters:
        news = news + news
    return "".join(typing_text(news, characters))[:characters]


# --- one process: one kind of call, measured on itself --------------------------------------------------------


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _streamed_call(service: Any, text: str) -> dict[str, Any]:
    from handler.service import StreamFinished
    from handler.streaming import StreamedUnit, StreamProgress

    cpu, began = time.process_time(), time.perf_counter()
    first = last = finished = None
    units = batches = 0
    english = ""
    for event in service.translate_stream([text]):
        now = time.perf_counter() - began
        if isinstance(event, StreamedUnit):
            first = now if first is None else first
            last, units = now, units + 1
        elif isinstance(event, StreamProgress):
            batches += 1
        elif isinstance(event, StreamFinished):
            finished, english = now, event.translations[0].text
    cpu_s = time.process_time() - cpu
    if first is None or last is None or finished is None:
        raise RuntimeError("the stream ended without a unit or without its StreamFinished event")
    return {
        "first_s": first,
        "last_s": last,
        "total_s": finished,
        "cpu_s": cpu_s,
        "units": units,
        "batches": batches,
        "sha256": _sha256(english),
    }


def _whole_call(service: Any, text: str) -> dict[str, Any]:
    cpu, began = time.process_time(), time.perf_counter()
    english = service.translate_detailed([text])[0].text
    seconds, cpu_s = time.perf_counter() - began, time.process_time() - cpu
    # the whole answer carries every segment at once: its first and last segment arrive when it does
    return {"first_s": seconds, "last_s": seconds, "total_s": seconds, "cpu_s": cpu_s, "sha256": _sha256(english)}


def first_unit(service: Any, text: str) -> str:
    """The source of the stream's first unit (the stream is closed after it: nothing more is decoded)."""
    from handler.streaming import StreamedUnit

    events = service.translate_stream([text])
    try:
        for event in events:
            if isinstance(event, StreamedUnit):
                return str(event.source)
    finally:
        events.close()
    raise RuntimeError("the stream yielded no unit")


def measure(job: dict[str, Any]) -> dict[str, Any]:
    from handler import coldstart
    from handler.config import RuntimeConfig

    mode, characters, repeats = job["mode"], job["characters"], job["repeats"]
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}; got {mode!r}")
    config = RuntimeConfig(
        bundle_dir=Path(job["bundle_dir"]), threads=job["threads"], memory_bytes=0, max_chars=max(characters, 1)
    )
    service = coldstart.get_service(config)
    text = request_text(characters)
    service.translate(WARM_UP)  # untimed: the first call's one-off costs
    after_warm_up = current_rss_mb()
    calls, alone = [], []
    unit = first_unit(service, text) if mode == STREAMED else ""
    for _ in range(repeats):
        if mode == STREAMED:
            began = time.perf_counter()
            service.translate_detailed([unit])
            alone.append(time.perf_counter() - began)
            calls.append(_streamed_call(service, text))
        else:
            calls.append(_whole_call(service, text))
    hashes = {call["sha256"] for call in calls}
    if len(hashes) != 1:
        raise RuntimeError(f"{len(hashes)} different translations of the same text in one process")
    figures: dict[str, Any] = {
        name: statistics.median(call[name] for call in calls) for name in ("first_s", "last_s", "total_s", "cpu_s")
    }
    figures |= {
        "mode": mode,
        "characters": len(text),
        "repeats": repeats,
        "sha256": hashes.pop(),
        "rss_after_warm_up_mb": after_warm_up,
        "peak_rss_mb": peak_rss_mb(),
    }
    if mode == STREAMED:
        figures |= {
            "units": calls[0]["units"],
            "batches": calls[0]["batches"],
            "first_unit_chars": len(unit),
            "alone_s": statistics.median(alone),
        }
    return figures


# --- the parent: both kinds side by side ----------------------------------------------------------------------


def compare(
    bundle_dir: Path,
    measured: Sequence[Text],
    threads: int,
    rounds: int,
    repeats: int,
    run: Callable[[dict[str, Any]], dict[str, Any]],
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Every text in ``rounds`` rounds of one streamed and one non-streamed process (``run`` starts one with its
    job and returns its figures), the order swapped every round; then ``summary`` of each text."""
    figures: dict[str, Any] = {}
    for text in measured:
        processes: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
        for round_number in range(rounds):
            for mode in MODES if round_number % 2 == 0 else MODES[::-1]:
                progress(f"  {text.characters:,} characters, {MODE_NAMES[mode]}, round {round_number + 1}")
                job = {
                    "bundle_dir": str(bundle_dir),
                    "threads": threads,
                    "characters": text.characters,
                    "mode": mode,
                    "repeats": repeats,
                }
                processes[mode].append(run(job))
        figures[text.key] = summary(processes)
    return figures


def summary(processes: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The medians over each kind's processes, and the ratios the goals speak of."""
    if not all(processes.get(mode) for mode in MODES):
        raise ValueError(f"a streamed and a non-streamed process are both needed; got {sorted(processes)}")

    def median(mode: str, name: str) -> float:
        return float(statistics.median(process[name] for process in processes[mode]))

    kinds = {
        mode: {
            name: median(mode, name)
            for name in ("first_s", "last_s", "total_s", "cpu_s", "peak_rss_mb", "rss_after_warm_up_mb")
        }
        | {"processes": len(processes[mode])}
        for mode in MODES
    }
    streamed, whole = kinds[STREAMED], kinds[WHOLE]
    streamed |= {"alone_s": median(STREAMED, "alone_s")}
    first = processes[STREAMED][0]
    return {
        "characters": first["characters"],
        "units": first["units"],
        "batches": first["batches"],
        "first_unit_chars": first["first_unit_chars"],
        "repeats": first["repeats"],
        STREAMED: streamed,
        WHOLE: whole,
        "first_over_alone": streamed["first_s"] / streamed["alone_s"],
        "first_over_whole": streamed["first_s"] / whole["total_s"],
        "total_ratio": streamed["total_s"] / whole["total_s"],
        "cpu_ratio": streamed["cpu_s"] / whole["cpu_s"],
        "peak_ratio": streamed["peak_rss_mb"] / whole["peak_rss_mb"],
        "same_english": len({p["sha256"] for mode in MODES for p in processes[mode]}) == 1,
    }


def missing(figures: dict[str, Any]) -> list[str]:
    """What a run's figures lack: a text whose streamed English differs from the whole answer's is a failure."""
    return [
        f"streaming, {text['characters']:,} characters: the streamed English differs from the whole answer's"
        for text in figures.values()
        if not text["same_english"]
    ]


# --- the report's section --------------------------------------------------------------------------------------

HEADING = "## Streaming"


def _verdict(value: float, goal: float) -> str:
    return "met" if value <= goal else "**missed**"


def _label(key: str, text: dict[str, Any]) -> str:
    if key == "longest":
        return f"the longest request ({text['characters']:,} characters)"
    return f"a {text['characters']:,}-character text"


def section_lines(models: dict[str, dict[str, Any]], titles: dict[str, str], measured_by: str) -> list[str]:
    """The Markdown section of ``docs/benchmarks.md``: ``models`` maps a model's key to ``compare``'s figures
    (keys without figures are named as not run, with ``titles[key]`` saying how to run them)."""
    lines = [
        HEADING,
        "",
        f"{measured_by} `bench.pipeline.streaming_bench`: for each text, fresh processes side by side, one streaming "
        "the text (`TranslationService.translate_stream`), one translating it whole (`translate_detailed`), "
        "the order swapped every round; each loads the bundle as a cold start does, with no translation memory "
        "(`memory_bytes=0`), translates one untimed short request, then times its calls (medians) and reads its own "
        "peak RSS (`VmHWM`, one figure per process). The texts: dev-set news sentences "
        "(`data/corpus/dev.zh-en.tsv.gz`, 30–120 characters) one after another, cut at the length; 2 threads. "
        "Not streamed, the first and the last segment arrive with the whole answer. CPU seconds: the process's CPU "
        "time during the call, all its threads (on a shared machine less disturbed than the wall clock by other work).",
        "",
        *[f"- {title}" + ("" if key in models else ": **not run this time**") for key, title in titles.items()],
        "",
        "| model, call: text | first segment | last segment | done | CPU seconds | peak RSS |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    goals: list[str] = []
    for key in titles:
        for text_key, text in models.get(key, {}).items():
            label = f"{key}: {_label(text_key, text)}"
            for mode in MODES:
                kind = text[mode]
                cells = [
                    f"{key}, {MODE_NAMES[mode]}: {_label(text_key, text)}",
                    f"{kind['first_s']:,.2f} s",
                    f"{kind['last_s']:,.2f} s",
                    f"{kind['total_s']:,.2f} s",
                    f"{kind['cpu_s']:,.2f} s",
                    f"{kind['peak_rss_mb']:,.0f} MB",
                ]
                lines.append("| " + " | ".join(cells) + " |")
            streamed = text[STREAMED]
            first_goal = (
                f"{text['first_over_alone']:.2f}x (goal <= {GOAL_FIRST_OVER_ALONE}: "
                f"{_verdict(text['first_over_alone'], GOAL_FIRST_OVER_ALONE)})"
                if text_key == "short"
                else f"{text['first_over_alone']:.2f}x"
            )
            goals.append(
                "| "
                + " | ".join(
                    [
                        label,
                        f"{text['units']} units, {text['batches']} batches",
                        f"{streamed['first_s']:,.2f} s; alone {streamed['alone_s']:,.2f} s "
                        f"({text['first_unit_chars']} characters): {first_goal}",
                        f"{text['total_ratio']:.3f}x wall clock ({_verdict(text['total_ratio'], GOAL_TOTAL_RATIO)}), "
                        f"{text['cpu_ratio']:.3f}x CPU ({_verdict(text['cpu_ratio'], GOAL_TOTAL_RATIO)}); "
                        f"goal <= {GOAL_TOTAL_RATIO}",
                        f"{text['peak_ratio']:.3f}x (goal <= {GOAL_PEAK_RATIO:.0f}: "
                        f"{_verdict(text['peak_ratio'], GOAL_PEAK_RATIO)})",
                        "yes" if text["same_english"] else "**no**",
                    ]
                )
                + " |"
            )
    if goals:
        lines += [
            "",
            f"Goals: the first segment of a {SHORT_TEXT_CHARS:,}-character text in <= {GOAL_FIRST_OVER_ALONE}x the "
            "time that unit takes alone (`translate_detailed` on it, in the streamed call's process, before each "
            f"streamed call); the whole streamed text in <= {GOAL_TOTAL_RATIO}x the time of the whole answer, judged "
            "on the wall clock and on the CPU seconds apart (on a loaded machine the wall clock of processes run one "
            "after another differs by more than 5 % for the same work); peak RSS no higher.",
            "",
            "| model: text | units | first segment, streamed (against that unit alone) | done, streamed / not "
            "streamed | peak RSS, streamed / not streamed | same English |",
            "|---|---|---|---|---|---|",
            *goals,
        ]
    return [*lines, ""]


def replace_section(report: str, lines: Sequence[str]) -> str:
    """``report`` with its streaming section replaced by ``lines`` (added before the chart, or at the end, when it
    has none): ``--only streaming`` measures this section alone and keeps the rest of the report."""
    kept = report.splitlines()
    start = next((i for i, line in enumerate(kept) if line.strip() == HEADING), None)
    if start is None:
        chart = next((i for i, line in enumerate(kept) if line.startswith("![")), len(kept))
        return "\n".join([*kept[:chart], *lines, *kept[chart:]]) + ("\n" if report.endswith("\n") else "")
    end = next(
        (i for i in range(start + 1, len(kept)) if kept[i].startswith("## ") or kept[i].startswith("![")), len(kept)
    )
    return "\n".join([*kept[:start], *lines, *kept[end:]]) + ("\n" if report.endswith("\n") else "")


def run_measuring_process(job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    from bench.pipeline.side_by_side import run_process

    try:
        return run_process("bench.pipeline.streaming_bench", job, timeout_s=timeout_s)
    except subprocess.TimeoutExpired as error:
        raise RuntimeError(f"a streaming process ran past {timeout_s:,.0f} s: {error}") from None


if __name__ == "__main__":
    from bench.pipeline.side_by_side import serve_job

    sys.exit(serve_job(measure, sys.argv[1:]))
