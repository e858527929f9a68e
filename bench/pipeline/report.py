"""The benchmark's tables (Markdown, printed and written to ``docs/benchmarks.md``) and its chart (PNG).

Each figure's cell holds the median over the rounds and, in brackets, the lowest and highest of them. The ratio
is this runtime's median over CTranslate2's, with "better" or "worse" by the figure's direction (lower
latency, memory and bytes are better; higher tokens/s are better).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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
    if TRANSFORMERS in engines:
        header += [ENGINE_NAMES[TRANSFORMERS]]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for figure in figures(result):
        ours = summary[RUNTIME].get(figure.key)
        row = [figure.label, cell(ours, figure)]
        if has_reference:
            reference = summary[CTRANSLATE2].get(figure.key)
            row += [cell(reference, figure), ratio(ours, reference, figure)[1]]
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
