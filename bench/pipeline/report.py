"""The benchmark's tables (Markdown, printed and written to ``docs/benchmarks.md``) and its chart (PNG).

Each figure's cell holds the median over the rounds and, in brackets, the lowest and highest of them. The ratio
is this runtime's median over CTranslate2's, with "better" or "worse" by the figure's direction (lower
latency, memory and bytes are better; higher tokens/s are better), and beside it issue 34's goal and whether the
run met it (``goal_for``: at or ahead of CTranslate2 on every figure of the Marian models; the full-size CSANMT's
absolute goals). ``compute_table`` puts each batched figure beside the INT8 GEMM peak (``bench.pipeline.gemm_peak``)
as ``bandwidth_table`` puts batch 1 beside the bandwidth bound. ``tracked_figures`` and ``regressions`` name every
figure of this runtime that moved the wrong way since the previous report (its JSON copy, or its Markdown).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.pipeline import quoted
from bench.pipeline.floor import Floor, floor_bound
from bench.pipeline.side_by_side import (
    CTRANSLATE2,
    DISK,
    ENGINE_NAMES,
    RUNTIME,
    TRANSFORMERS,
    SetupResult,
    Spread,
    summarise,
)


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: str
    lower_is_better: bool
    digits: int


def figures(result: SetupResult) -> list[Figure]:
    tokens, batch = result.workload.forced_tokens, result.workload.batch_size
    return [
        Figure("cold_start_s", "cold start, process start → first translation", "s", True, 2),
        Figure("b1_greedy_ms", f"batch-1 greedy, {tokens} tokens", "ms", True, 1),
        Figure("b1_beam4_ms", f"batch-1 beam 4, {tokens} tokens", "ms", True, 1),
        Figure("batch_greedy_tok_s", f"batch-{batch} greedy", "tok/s", False, 0),
        Figure("batch_beam4_tok_s", f"batch-{batch} beam 4", "tok/s", False, 0),
        Figure("rss_after_load_mb", "RSS after load (and the first translation)", "MB", True, 0),
        Figure("peak_rss_mb", "peak RSS", "MB", True, 0),
        Figure(DISK, "model files on disk", "MB", True, 1),
    ]


def _number(value: float, digits: int) -> str:
    return f"{value:,.{digits}f}"


def cell(spread: Spread | None, figure: Figure) -> str:
    if spread is None:
        return "**not measured**"
    text = f"{_number(spread.median, figure.digits)} {figure.unit}"
    if spread.count > 1:
        text += f" ({_number(spread.low, figure.digits)}–{_number(spread.high, figure.digits)})"
    return text


def ratio(ours: Spread | None, reference: Spread | None, figure: Figure) -> tuple[float | None, str]:
    if ours is None or reference is None:
        return None, "—"
    value = ours.median / reference.median
    better = value <= 1.0 if figure.lower_is_better else value >= 1.0
    return value, f"{value:.2f}× ({'better' if better else 'worse'})"


CSANMT_FULL_SIZE = "csanmt-full-size"  # bench.pipeline.runtime_bench's key of the full-size CSANMT


@dataclass(frozen=True)
class Goal:
    """A figure's goal: at most (or at least) ``bound``, in ``unit`` (``×`` for a ratio to CTranslate2)."""

    bound: float
    at_most: bool
    unit: str

    def met(self, value: float) -> bool:
        return value <= self.bound if self.at_most else value >= self.bound

    def text(self) -> str:
        number = f"{self.bound:,.2f}" if self.unit == "×" else f"{self.bound:,g}"
        return f"{'≤' if self.at_most else '≥'} {number}{'' if self.unit == '×' else ' '}{self.unit}"

    def verdict(self, value: float | None) -> str:
        if value is None:
            return "—"
        return "met" if self.met(value) else "**missed**"


# issue 34: the full-size CSANMT's goals (the figures of the side-by-side table; the rest in csanmt_goal_lines)
CSANMT_GOALS = {
    "batch_beam4_tok_s": Goal(440.0, at_most=False, unit="tok/s"),
    "cold_start_s": Goal(1.5, at_most=True, unit="s"),
}
CSANMT_READY = Goal(1.2, at_most=True, unit="s")
CSANMT_LONGEST_SECONDS = Goal(350.0, at_most=True, unit="s")
CSANMT_LONGEST_PEAK = Goal(1_000.0, at_most=True, unit="MB")


def goal_for(setup_key: str, figure: Figure, has_reference: bool) -> Goal | None:
    """The goal of ``figure``'s row: beside CTranslate2, a ratio at or ahead of it (≤ 1.00 when lower is better,
    ≥ 1.00 for tokens/s); the full-size CSANMT, alone, its absolute goals; None when issue 34 sets none."""
    if has_reference:
        return Goal(1.0, at_most=figure.lower_is_better, unit="×")
    if setup_key == CSANMT_FULL_SIZE:
        return CSANMT_GOALS.get(figure.key)
    return None


def goal_cells(goal: Goal | None, value: float | None) -> list[str]:
    """The "goal" and "met?" cells of a row."""
    if goal is None:
        return ["—", "—"]
    return [goal.text(), goal.verdict(value)]


def advantage(ours: Spread | None, reference: Spread | None, figure: Figure) -> float | None:
    """How many times better this runtime is (> 1) or worse (< 1), whatever the figure's direction."""
    if ours is None or reference is None:
        return None
    return reference.median / ours.median if figure.lower_is_better else ours.median / reference.median


def side_by_side_table(result: SetupResult) -> list[str]:
    summary = summarise(result)
    engines = [engine for engine, _ in result.setup.engines()]
    has_reference = CTRANSLATE2 in engines
    header = ["figure", ENGINE_NAMES[RUNTIME]]
    if has_reference:
        header += [ENGINE_NAMES[CTRANSLATE2], "ratio (runtime / CTranslate2)"]
    header += ["goal", "met?"]
    if TRANSFORMERS in engines:
        header += [ENGINE_NAMES[TRANSFORMERS]]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for figure in figures(result):
        ours = summary[RUNTIME].get(figure.key)
        row = [figure.label, cell(ours, figure)]
        goal = goal_for(result.setup.key, figure, has_reference)
        if has_reference:
            reference = summary[CTRANSLATE2].get(figure.key)
            value, text = ratio(ours, reference, figure)
            row += [cell(reference, figure), text, *goal_cells(goal, value)]
        else:
            row += goal_cells(goal, None if ours is None else ours.median)
        if TRANSFORMERS in engines:
            row += [cell(summary[TRANSFORMERS].get(figure.key), figure)]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def reference_table(
    rows: Sequence[tuple[Figure, Spread | None, Spread | None]], reference_name: str, ours_name: str, short_name: str
) -> list[str]:
    """figure | the reference engine | this runtime | ratio (this runtime's median over the reference's), one row
    per (figure, reference, ours): e.g. CSANMT beside ModelScope's pipeline (``bench.pipeline.csanmt_tensorflow``)."""
    lines = [
        f"| figure | {reference_name} | {ours_name} | ratio (runtime / {short_name}) |",
        "|---|---|---|---|",
    ]
    for figure, reference, ours in rows:
        cells = [figure.label, cell(reference, figure), cell(ours, figure), ratio(ours, reference, figure)[1]]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def bandwidth_table(result: SetupResult, bandwidth: dict[str, float]) -> list[str]:
    """Bytes per token, the bound, and each engine's batch-1 greedy tokens/s as a share of it."""
    step = result.extra["decoder_step_bytes"]
    bound = bandwidth["dram_bytes_per_s"] / step["total"]
    tokens = result.workload.forced_tokens
    summary = summarise(result)
    lines = [
        f"- weights one decoder step reads at batch 1 (from `decoder.onnx`): {step['total'] / 1e6:,.1f} MB "
        f"({step['tensors']} tensors; rows looked up: {step['rows']:,} bytes)",
        f"- bound: {bandwidth['dram_bytes_per_s'] / 1e9:,.1f} GB/s ÷ {step['total'] / 1e6:,.1f} MB = "
        f"**{bound:,.0f} tokens/s**",
    ]
    for engine, _ in result.setup.engines():
        latency = summary[engine].get("b1_greedy_ms")
        if latency is None:
            lines.append(f"- {ENGINE_NAMES[engine]}: **not measured**")
            continue
        speed = tokens / (latency.median / 1000)
        lines.append(
            f"- {ENGINE_NAMES[engine]}: {speed:,.0f} tokens/s at batch-1 greedy ({tokens} tokens ÷ the median "
            f"latency, encoder included) = **{speed / bound:.0%}** of the bound"
        )
    return lines


def chart(results: list[SetupResult], path: Path) -> None:
    """Bars: how many times better (> 1) or worse (< 1) this runtime is than CTranslate2, per figure and model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    compared = [result for result in results if CTRANSLATE2 in dict(result.setup.engines())]
    if not compared:
        raise ValueError("no model was measured with CTranslate2: nothing to chart")
    labels = [figure.label.split(",")[0].replace(" (and the first translation)", "") for figure in figures(compared[0])]
    figure_, axes = plt.subplots(figsize=(10, 4.8), dpi=100)
    width = 0.8 / len(compared)
    for index, result in enumerate(compared):
        summary = summarise(result)
        values = [
            advantage(summary[RUNTIME].get(figure.key), summary[CTRANSLATE2].get(figure.key), figure) or 0.0
            for figure in figures(result)
        ]
        positions = [position + (index - (len(compared) - 1) / 2) * width for position in range(len(values))]
        bars = axes.bar(positions, values, width, label=result.setup.title)
        axes.bar_label(bars, labels=[f"{value:.2f}" for value in values], fontsize=7, padding=2)
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_xticks(range(len(labels)))
    axes.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    axes.set_ylabel("× better than CTranslate2 int8 (> 1 = better)")
    axes.set_title("This runtime vs CTranslate2 int8, side by side (2 threads, medians)")
    axes.legend(fontsize=8)
    figure_.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure_.savefig(path)
    plt.close(figure_)


COLD_START_PARTS = (
    ("import_s", "import"),
    ("check_s", "sha256 of every file"),
    ("tokenizer_s", "tokenizer"),
    ("sessions_s", "ONNX Runtime sessions"),
    ("load_s", "load (the three above, side by side)"),
    ("warmup_s", "warm-up"),
)


def cold_start_parts_line(result: SetupResult, engine: str = "runtime") -> list[str]:
    """This runtime's cold start by parts, the medians over its processes (``bench.pipeline.engines`` records the
    loader's own timings); nothing when no process recorded them."""
    runs = result.runs.get(engine, [])
    parts = []
    for key, label in COLD_START_PARTS:
        values = [run[f"cold_start_part_{key}"] for run in runs if isinstance(run.get(f"cold_start_part_{key}"), float)]
        if values:
            parts.append(f"{label} {statistics.median(values):.2f} s")
    if not parts:
        return []
    return [f"- This runtime's cold start by parts (median of {len(runs)} process(es)): " + ", ".join(parts) + "."]


def floor_lines(result: SetupResult, floors: Mapping[str, Floor]) -> list[str]:
    """What the libraries alone cost each engine (``bench.pipeline.floor``) and whether this runtime's floor plus its
    bundle's weights leaves room under CTranslate2's RSS after load; nothing without both engines' figures."""
    summary = summarise(result)
    ours, theirs = floors.get(RUNTIME), floors.get(CTRANSLATE2)
    reference = summary.get(CTRANSLATE2, {})
    rss, cold = reference.get("rss_after_load_mb"), reference.get("cold_start_s")
    if ours is None or theirs is None or rss is None or cold is None:
        return []

    def named(floor: Floor) -> str:
        return ", ".join(floor.libraries)

    bound = floor_bound(ours, result.setup.bundle_dir, rss.median)
    verdict = (
        f"above CTranslate2's RSS after load ({rss.median:,.0f} MB): no runtime on these libraries that keeps the "
        "weights it reads in memory can meet the RSS-after-load goal on this model"
        if not bound.reachable
        else f"{rss.median - bound.bound_mb:,.1f} MB below CTranslate2's RSS after load ({rss.median:,.0f} MB): the "
        "room this runtime has for its tokenizer, sessions, pre-packed weights and modules to meet that goal"
    )
    return [
        f"- The floor under these figures (`bench.pipeline.floor`: fresh processes that import only what the engine "
        f"cannot translate without, and no model; the median of {ours.processes} each): this runtime ({named(ours)}; "
        f"onnxruntime imports numpy) **{ours.rss_mb:,.1f} MB**, {ours.import_s:.2f} s after the process starts; "
        f"CTranslate2 ({named(theirs)}) {theirs.rss_mb:,.1f} MB, {theirs.import_s:.2f} s. That floor plus the "
        f"bundle's weights ({bound.weights_mb:,.1f} MB: the graphs' weights files and the shared embedding, all of "
        f"which a translation reads) is **{bound.bound_mb:,.1f} MB**, {verdict}. The imports alone take "
        f"{ours.import_s / cold.median:.0%} of CTranslate2's whole cold start ({cold.median:.2f} s).",
    ]


def ready_seconds(result: SetupResult, engine: str = RUNTIME) -> tuple[float, str] | None:
    """This runtime's "ready" (service loaded and warm), the median over its processes, and what it sums: the
    loader's ``ready_s`` where it records one, else import + load + warm-up (from the first import of ``handler``;
    the interpreter's own start before it is not included). None when no process recorded the parts."""
    runs = result.runs.get(engine, [])
    recorded = [run["cold_start_part_ready_s"] for run in runs if isinstance(run.get("cold_start_part_ready_s"), float)]
    if recorded:
        return statistics.median(recorded), "the loader's own ready time"
    keys = ("import_s", "load_s", "warmup_s")
    sums = [
        sum(run[f"cold_start_part_{key}"] for key in keys)
        for run in runs
        if all(isinstance(run.get(f"cold_start_part_{key}"), float) for key in keys)
    ]
    if not sums:
        return None
    return statistics.median(sums), "import + load + warm-up, from the first import of `handler`"


def csanmt_goals(result: SetupResult) -> list[tuple[str, Goal, float]]:
    """The full-size CSANMT's goals outside its table, each (what, goal, this run's value): ready, and the longest
    request's seconds and peak (judged only when this run's longest request was the longest a request may be)."""
    if result.setup.key != CSANMT_FULL_SIZE:
        return []
    goals = []
    ready = ready_seconds(result)
    if ready is not None:
        goals.append((f"ready ({ready[1]}; median of the processes)", CSANMT_READY, ready[0]))
    longest = result.extra.get("longest_request")
    if longest and longest["characters"] >= longest["max_chars"]:
        request = f"the longest request ({longest['characters']:,} characters)"
        goals.append((f"{request}: seconds", CSANMT_LONGEST_SECONDS, float(longest["seconds"])))
        goals.append((f"{request}: peak RSS", CSANMT_LONGEST_PEAK, float(longest["peak_rss_mb"])))
    return goals


def csanmt_goal_lines(result: SetupResult) -> list[str]:
    """``csanmt_goals`` as the report's bullets (and why the longest request's goal is not judged, when not)."""
    lines = [
        f"- Goal: {what} {goal.text()}: {_with_unit(value, goal.unit)}, {goal.verdict(value)}."
        for what, goal, value in csanmt_goals(result)
    ]
    longest = result.extra.get("longest_request")
    if result.setup.key == CSANMT_FULL_SIZE and longest and longest["characters"] < longest["max_chars"]:
        lines.append(
            f"- Goal: the longest request ({longest['max_chars']:,} characters) in {CSANMT_LONGEST_SECONDS.text()} "
            f"with a peak {CSANMT_LONGEST_PEAK.text()}: not judged, this run's longest request was "
            f"{longest['characters']:,} characters (`--csanmt-request-chars`)."
        )
    return lines


def missed_goal_lines(results: Sequence[SetupResult]) -> list[str]:
    """For the run's printed summary: how many goals of the tables were met, and each one missed."""
    met, missed = 0, []
    for result in results:
        summary = summarise(result)
        has_reference = CTRANSLATE2 in dict(result.setup.engines())
        for figure in figures(result):
            goal = goal_for(result.setup.key, figure, has_reference)
            ours = summary[RUNTIME].get(figure.key)
            if goal is None or ours is None:
                continue
            if has_reference:
                value = ratio(ours, summary[CTRANSLATE2].get(figure.key), figure)[0]
                if value is None:
                    continue
                shown = f"{value:.2f}× CTranslate2"
            else:
                value, shown = ours.median, f"{_number(ours.median, figure.digits)} {figure.unit}"
            if goal.met(value):
                met += 1
            else:
                missed.append(f"- missed: {result.setup.title}: {figure.label}: {shown} (goal {goal.text()})")
        for what, goal, value in csanmt_goals(result):
            if goal.met(value):
                met += 1
            else:
                missed.append(
                    f"- missed: {result.setup.title}: {what}: {_with_unit(value, goal.unit)} (goal {goal.text()})"
                )
    return [f"Goals (issue 34): {met} met, {len(missed)} missed.", *missed]


# --- the compute bound ------------------------------------------------------------------------------------------


def compute_table(result: SetupResult, macs: Mapping[str, Mapping[str, int]], peak_gmac_s: float) -> list[str]:
    """The batched figures' multiply-accumulates per second, each engine's, and their share of the INT8 GEMM peak.

    ``macs``: ``bench.pipeline.gemm_peak.bundle_macs`` of the bundle (every engine runs the same shapes)."""
    from bench.pipeline.gemm_peak import call_macs

    workload, summary = result.workload, summarise(result)
    batch, tokens, beam = workload.batch_size, workload.forced_tokens, workload.beam_size
    int8 = [engine for engine, _ in result.setup.engines() if engine in (RUNTIME, CTRANSLATE2)]  # not FP32 torch
    encoder, decoder = macs["encoder"], macs["decoder"]
    per_sentence = f" + {encoder['per_sentence'] / 1e6:,.1f} M per sentence" if encoder["per_sentence"] else ""
    lines = [
        f"- Counted: the products with a weight (INT8 GEMMs) of `encoder.onnx`, {encoder['per_token'] / 1e6:,.1f} M "
        f"multiply-accumulates per source token{per_sentence}, over the real source tokens ({batch} × "
        f"{result.source_tokens:.1f} on average: padding not counted), and of `decoder.onnx`, "
        f"{decoder['per_token'] / 1e6:,.1f} M per row and step (the output projection included), for each of the "
        f"{tokens} steps of every row (rows: {batch} greedy, {batch} × {beam} beam {beam}). Not counted: attention's "
        "products of two activations (FP32), embeddings, layer norms, the search's own work.",
        "",
        f"| batch-{batch} call | MACs per call | {ENGINE_NAMES[RUNTIME]} | share of the peak |"
        + "".join(f" {ENGINE_NAMES[engine]} | share |" for engine in int8 if engine != RUNTIME),
        "|---|---|---|---|" + "---|---|" * (len(int8) - 1),
    ]
    for key, beam_size, name in (("batch_greedy_tok_s", 1, "greedy"), ("batch_beam4_tok_s", beam, f"beam {beam}")):
        work = call_macs(macs, batch, result.source_tokens, tokens, beam_size)
        row = [f"{name} ({batch * beam_size} rows × {tokens} steps)", f"{work / 1e9:,.2f} G"]
        for engine in int8:
            speed = summary[engine].get(key)
            if speed is None:
                row += ["**not measured**", "—"]
                continue
            achieved = work / (batch * tokens / speed.median) / 1e9  # MACs ÷ the seconds of one call
            row += [f"{achieved:,.1f} GMAC/s", f"**{achieved / peak_gmac_s:.0%}**"]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def gemm_peak_lines(gemm: Mapping[str, Any]) -> list[str]:
    """The INT8 GEMM microbenchmark's section body (``bench.pipeline.gemm_peak.measure``'s figures)."""
    from bench.pipeline.gemm_peak import ISA_FLAGS

    kernels = {name: kernel for _, name, kernel in ISA_FLAGS}
    offered = "; ".join(f"{name} ({kernels[name]})" for name in gemm["isa"]) or "none of AVX2, VNNI, AMX"
    shapes = ", ".join(
        f"{shape['m']}×{shape['k']}×{shape['n']} {shape['best_gmac_s']:,.0f} (median {shape['median_gmac_s']:,.0f})"
        for shape in gemm["shapes"]
    )
    m, k, n = gemm["peak_shape"]
    passes = gemm.get("passes", [])
    return [
        f"- One `{gemm['op']}` (uint8 activations, zero point 128; int8 weights `[K, N]`, 7-bit, per-column scales: "
        "the pattern of the bundles' graphs, `build.quantize`) in a graph built in memory "
        f"(`bench.pipeline.gemm_peak`), {gemm['threads']} intra-op threads, each shape timed for about "
        f"{gemm.get('seconds', 0.6):.1f} s after an untimed call. GMAC/s (M×K×N multiply-accumulates per second), "
        f"best call (median in brackets): {shapes}.",
        f"- Peak: **{gemm['peak_gmac_s']:,.0f} GMAC/s** (M={m}, K={k}, N={n}), the figure the shares above use"
        + (
            f"; the better of {len(passes)} passes, at the start and at the end of the run: "
            + ", ".join(f"{peak:,.0f}" for peak in passes)
            + " GMAC/s (other work on the machine slows a pass, never speeds one up)"
            if len(passes) > 1
            else ""
        )
        + ".",
        "- INT8 instruction sets the CPU offers (`/proc/cpuinfo`), each with the u8s8 kernel of ONNX Runtime's MLAS "
        f"it allows (MLAS picks the newest at run time): {offered}.",
    ]


# --- what moved the wrong way since the last run ----------------------------------------------------------------

REGRESSION_MARGIN = 0.05  # a figure must move more than this share the wrong way to be named


@dataclass(frozen=True)
class Tracked:
    """One figure of this runtime the next run compares with: where the report shows it (a ``bench.pipeline.quoted``
    address, so that an older report without the JSON copy still says its value), its value and direction."""

    address: str
    value: float
    unit: str
    lower_is_better: bool


@dataclass(frozen=True)
class Regression:
    name: str
    before: float
    now: float
    unit: str
    lower_is_better: bool

    def change(self) -> float:
        return self.now / self.before - 1.0

    def line(self) -> str:
        return (
            f"{self.name}: {_with_unit(self.before, self.unit)} → {_with_unit(self.now, self.unit)} "
            f"({self.change():+.1%}; {'lower' if self.lower_is_better else 'higher'} is better)"
        )


def _with_unit(value: float, unit: str) -> str:
    digits = 2 if abs(value) < 10 else 1 if abs(value) < 100 else 0
    return f"{value:,.{digits}f}×" if unit == "×" else f"{value:,.{digits}f} {unit}"


def tracked_figures(
    results: Sequence[SetupResult], workloads: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Tracked]:
    """This runtime's figures that ``regressions`` compares, by name: every row of each model's side-by-side
    table (and its ratio to CTranslate2), the longest request's seconds and peak, the service's characters/s."""
    tracked: dict[str, Tracked] = {}
    titles = {}
    for result in results:
        title = result.setup.title
        titles[result.setup.key] = title
        summary = summarise(result)
        has_reference = CTRANSLATE2 in dict(result.setup.engines())
        for figure in figures(result):
            ours = summary[RUNTIME].get(figure.key)
            if ours is None:
                continue
            name = f"{title}: {figure.label}"
            tracked[name] = Tracked(
                f"{title} :: {figure.label} :: {ENGINE_NAMES[RUNTIME]}",
                ours.median,
                figure.unit,
                figure.lower_is_better,
            )
            value = ratio(ours, summary[CTRANSLATE2].get(figure.key), figure)[0] if has_reference else None
            if value is not None:
                tracked[f"{name}, ratio to CTranslate2"] = Tracked(
                    f"{title} :: {figure.label} :: ratio", value, "×", figure.lower_is_better
                )
        longest = result.extra.get("longest_request")
        if longest:
            request = f"{title}: the longest request ({longest['characters']:,} characters)"
            found = rf"{longest['characters']:,} characters \([\d,]+ source tokens\) in ([\d,]+) s"
            tracked[f"{request}, seconds"] = Tracked(
                f"{title} :: The longest request :: /{found}/", float(f"{longest['seconds']:.0f}"), "s", True
            )
            peak = rf"{longest['characters']:,} characters .*\*\*peak ([\d,]+) MB"
            tracked[f"{request}, peak RSS"] = Tracked(
                f"{title} :: The longest request :: /{peak}/", float(f"{longest['peak_rss_mb']:.0f}"), "MB", True
            )
    for key, figures_ in (workloads or {}).items():
        title = titles.get(key, key)
        tracked[f"{title}: the service's characters/s"] = Tracked(
            f"What a user pays :: {title} :: characters/s", float(figures_["chars_per_s"]), "chars/s", False
        )
    return tracked


def _parsed_number(text: str) -> float | None:
    match = re.search(r"-?[\d,]*\.?\d+", text)
    return None if match is None else float(match.group(0).replace(",", ""))


def previous_values(
    tracked: Mapping[str, Tracked], previous_json: Any = None, previous_report: str = ""
) -> dict[str, float]:
    """The values the previous run had for ``tracked``'s figures: from its JSON copy (``"tracked"``) where it has
    one, else read from its Markdown report at each figure's address; a figure it lacks is left out."""
    found: dict[str, float] = {}
    recorded = previous_json.get("tracked", {}) if isinstance(previous_json, dict) else {}
    for name, figure in tracked.items():
        if name in recorded and isinstance(recorded[name].get("value"), int | float):
            found[name] = float(recorded[name]["value"])
            continue
        if not previous_report or recorded:
            continue
        try:
            value = _parsed_number(quoted.figure(previous_report, figure.address))
        except quoted.QuoteError:
            continue
        if value is not None:
            found[name] = value
    return found


def regressions(
    tracked: Mapping[str, Tracked], previous: Mapping[str, float], margin: float = REGRESSION_MARGIN
) -> list[Regression]:
    """Every tracked figure that moved the wrong way by more than ``margin`` (a share of the previous value)."""
    moved = []
    for name, figure in tracked.items():
        before = previous.get(name)
        if before is None or before <= 0:
            continue
        change = figure.value / before - 1.0
        if (change > margin) if figure.lower_is_better else (change < -margin):
            moved.append(Regression(name, before, figure.value, figure.unit, figure.lower_is_better))
    return moved


def regression_lines(
    moved: Sequence[Regression],
    compared: int,
    since: str,
    machine_note: str = "",
    margin: float = REGRESSION_MARGIN,
) -> list[str]:
    """The report's "Since the last run" section body (also the run's printed summary)."""
    if not compared:
        return [f"- No figure of {since} to compare with (a first run, or another workload: `--quick` or not)."]
    head = (
        f"- Compared with {since}: {compared} figure(s) of this runtime; named below, every one that moved the wrong "
        f"way by more than {margin:.0%} (the noise margin of a shared 2-core machine)."
        + (f" {machine_note}" if machine_note else "")
    )
    if not moved:
        return [head, "- None moved the wrong way by more than that."]
    return [head, *(f"- **{regression.line()}**" for regression in moved)]
