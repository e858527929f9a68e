"""``make bench``'s report beyond the figures: the INT8 GEMM peak and each batched figure's MACs
(``bench.pipeline.gemm_peak``), the goal beside every ratio, and the figures that moved the wrong way since the
previous report (``bench.pipeline.report``, ``bench.pipeline.runtime_bench.since_last_run``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from bench.pipeline import gemm_peak, report, runtime_bench
from bench.pipeline.engines import FIGURES
from bench.pipeline.side_by_side import CTRANSLATE2, RUNTIME, TRANSFORMERS, Setup, SetupResult, Workload

REPO_ROOT = Path(__file__).resolve().parents[2]


# --- the MACs a graph does ------------------------------------------------------------------------------------


def _encoder_like(tmp_path: Path) -> Path:
    """Tokens [B, S, 8] -> an INT8 product with a [8, 16] weight (per token) -> the same through a transposed
    [4, 16] table, a product of two activations (attention), and a sum over the tokens -> a [16, 2] product
    (per sentence)."""
    init = [
        numpy_helper.from_array(np.zeros((8, 16), dtype=np.int8), "w_quantized"),
        numpy_helper.from_array(np.ones(16, dtype=np.float32), "w_scale"),
        numpy_helper.from_array(np.zeros(16, dtype=np.int8), "w_zero_point"),
        numpy_helper.from_array(np.array(1.0, dtype=np.float32), "a_scale"),
        numpy_helper.from_array(np.array(128, dtype=np.uint8), "a_zero_point"),
        numpy_helper.from_array(np.zeros((4, 16), dtype=np.float32), "table"),
        numpy_helper.from_array(np.zeros((16, 2), dtype=np.float32), "pooling"),
    ]
    nodes = [
        helper.make_node(
            "MatMulIntegerToFloat",
            ["x_quantized", "w_quantized", "a_scale", "w_scale", "a_zero_point", "w_zero_point"],
            ["hidden"],
            domain="com.microsoft",
        ),
        helper.make_node("Transpose", ["table"], ["table_t"], perm=[1, 0]),
        helper.make_node("MatMul", ["hidden", "table_t"], ["projected"]),  # 16 x 4 per token
        helper.make_node("Transpose", ["hidden"], ["hidden_t"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["hidden", "hidden_t"], ["scores"]),  # two activations: not counted
        helper.make_node("ReduceSum", ["hidden", "axes"], ["pooled"], keepdims=1),
        helper.make_node("MatMul", ["pooled", "pooling"], ["semantic"]),  # 16 x 2 once per sentence
    ]
    init.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "axes"))
    graph = helper.make_graph(
        nodes,
        "encoder",
        [helper.make_tensor_value_info("x_quantized", TensorProto.UINT8, ["B", "S", 8])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in ("projected", "scores", "semantic")],
        initializer=init,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    path = tmp_path / "encoder.onnx"
    onnx.save(model, str(path))
    return path


def test_graph_macs_count_weight_products_per_token_and_per_sentence(tmp_path: Path) -> None:
    counted = gemm_peak.graph_macs(_encoder_like(tmp_path))
    assert counted == {"per_token": 8 * 16 + 16 * 4, "per_sentence": 16 * 2, "products": 3}


def test_call_macs_follow_the_hand_computation() -> None:
    macs = {"encoder": {"per_token": 100, "per_sentence": 7}, "decoder": {"per_token": 1_000, "per_sentence": 0}}
    # 16 sentences of 10.5 tokens through the encoder, then 40 steps of 16 x 4 rows
    assert gemm_peak.call_macs(macs, 16, 10.5, 40, 4) == 16 * (10.5 * 100 + 7) + 16 * 4 * 40 * 1_000
    assert gemm_peak.call_macs(macs, 16, 10.5, 40, 1) == 16 * (10.5 * 100 + 7) + 16 * 40 * 1_000


@pytest.mark.shipped_model
def test_the_default_bundles_macs_are_its_layers_products() -> None:
    """d_model 256, FFN 1024, 6 encoder and 3 decoder layers, vocabulary 16,001 (manifest.json)."""
    manifest = json.loads((REPO_ROOT / "model_artifacts/default/manifest.json").read_text(encoding="utf-8"))["model"]
    d, ffn, vocab = manifest["d_model"], 4 * manifest["d_model"], manifest["vocab_size"]
    encoder_layer = 4 * d * d + 2 * d * ffn  # q, k, v, out; the FFN's two
    cross_key_value = 2 * d * d  # per decoder layer, computed once by the encoder
    decoder_layer = 4 * d * d + 2 * d * d + 2 * d * ffn  # self q, k, v, out; cross q, out; the FFN's two
    counted = gemm_peak.bundle_macs(REPO_ROOT / "model_artifacts/default")
    encoder_total = manifest["encoder_layers"] * encoder_layer + manifest["decoder_layers"] * cross_key_value
    assert counted["encoder"]["per_token"] == encoder_total
    assert counted["encoder"]["per_sentence"] == 0
    assert counted["decoder"]["per_token"] == manifest["decoder_layers"] * decoder_layer + vocab * d  # + projection


def test_the_gemm_microbenchmark_runs_our_op_pattern_on_onnx_runtime() -> None:
    for op in ("MatMulIntegerToFloat", "MatMulInteger"):
        figure = gemm_peak.measure_shape(64, 128, 32, threads=1, seconds=0.02, op=op)
        assert figure.calls >= 3 and figure.best_gmac_s >= figure.median_gmac_s > 0
    measured = gemm_peak.measure(1, shapes=[(32, 64, 64), (64, 64, 64)], seconds=0.02)
    assert measured["peak_gmac_s"] == max(shape["best_gmac_s"] for shape in measured["shapes"])
    assert measured["peak_shape"] in ([32, 64, 64], [64, 64, 64])
    with pytest.raises(ValueError, match="MatMulIntegerToFloat or MatMulInteger"):
        gemm_peak.gemm_graph(8, 8, op="Gemm")


def test_cpu_isa_names_the_int8_instruction_sets_offered() -> None:
    assert [name for name, _ in gemm_peak.cpu_isa({"sse4_2", "avx2", "avx512f", "avx512_vnni"})] == [
        "AVX2",
        "AVX-512",
        "AVX-512 VNNI",
    ]
    assert [name for name, _ in gemm_peak.cpu_isa({"avx2", "avx_vnni", "amx_int8", "amx_tile"})] == [
        "AVX2",
        "AVX-VNNI",
        "AMX-INT8",
    ]
    assert gemm_peak.cpu_isa(set()) == []


# --- goals ----------------------------------------------------------------------------------------------------


def _figures(scale: float, **extra: float) -> dict[str, float]:
    return {name: scale * (index + 1) for index, name in enumerate(FIGURES)} | extra


def _result(key: str, runs: dict[str, list[dict[str, float]]], **extra: object) -> SetupResult:
    reference = Path("ct2") if CTRANSLATE2 in runs else None
    checkpoint = Path("hf") if TRANSFORMERS in runs else None
    setup = Setup(key, f"model {key}", Path("bundle"), ctranslate2_dir=reference, checkpoint_dir=checkpoint)
    return SetupResult(
        setup,
        Workload(),
        1,
        {engine: 1 for engine in runs},
        runs,
        {engine: [] for engine in runs},
        {RUNTIME: 10.0, CTRANSLATE2: 5.0},
        12.0,
        extra=dict(extra),
    )


def test_goal_text_and_verdict() -> None:
    at_most = report.Goal(1.0, at_most=True, unit="×")
    assert (at_most.text(), at_most.verdict(1.0), at_most.verdict(1.01), at_most.verdict(None)) == (
        "≤ 1.00×",
        "met",
        "**missed**",
        "—",
    )
    at_least = report.Goal(440.0, at_most=False, unit="tok/s")
    assert (at_least.text(), at_least.verdict(440.0), at_least.verdict(439.9)) == ("≥ 440 tok/s", "met", "**missed**")


def test_every_ratio_to_ctranslate2_has_its_goal_beside_it() -> None:
    table = report.side_by_side_table(_result("default", {RUNTIME: [_figures(1.0)], CTRANSLATE2: [_figures(2.0)]}))
    assert table[0].endswith("| ratio (runtime / CTranslate2) | goal | met? |")
    assert (
        "| cold start, process start → first translation | 1.00 s | 2.00 s | 0.50× (better) | ≤ 1.00× | met |" in table
    )
    assert "| batch-16 greedy | 5 tok/s | 10 tok/s | 0.50× (worse) | ≥ 1.00× | **missed** |" in table
    assert "| model files on disk | 10.0 MB | 5.0 MB | 2.00× (worse) | ≤ 1.00× | **missed** |" in table


def test_the_full_size_csanmt_is_held_to_its_own_goals() -> None:
    parts = {"cold_start_part_import_s": 0.3, "cold_start_part_load_s": 0.6, "cold_start_part_warmup_s": 0.2}
    runs = {RUNTIME: [_figures(1.0, batch_beam4_tok_s=450.0, **parts)]}
    longest = {"characters": 20_000, "max_chars": 20_000, "seconds": 360.0, "peak_rss_mb": 990.0}
    result = _result(report.CSANMT_FULL_SIZE, runs, longest_request=longest)
    table = report.side_by_side_table(result)
    assert table[0] == "| figure | this runtime (ONNX Runtime INT8) | goal | met? |"
    assert "| batch-16 beam 4 | 450 tok/s | ≥ 440 tok/s | met |" in table
    assert "| cold start, process start → first translation | 1.00 s | ≤ 1.5 s | met |" in table
    assert "| batch-1 greedy, 40 tokens | 3.0 ms | — | — |" in table
    lines = report.csanmt_goal_lines(result)
    assert any(line.startswith("- Goal: ready (import + load + warm-up") and "1.10 s, met." in line for line in lines)
    assert "- Goal: the longest request (20,000 characters): seconds ≤ 350 s: 360 s, **missed**." in lines
    assert "- Goal: the longest request (20,000 characters): peak RSS ≤ 1,000 MB: 990 MB, met." in lines
    summary = report.missed_goal_lines([result])
    assert summary[0] == "Goals (issue 34): 4 met, 1 missed."
    assert summary[1] == f"- missed: model {report.CSANMT_FULL_SIZE}: the longest request (20,000 characters): " + (
        "seconds: 360 s (goal ≤ 350 s)"
    )
    shorter = _result(report.CSANMT_FULL_SIZE, runs, longest_request=longest | {"characters": 4_000})
    assert report.csanmt_goal_lines(shorter)[-1].endswith(
        "this run's longest request was 4,000 characters (`--csanmt-request-chars`)."
    )


def test_each_batched_figure_is_put_beside_the_gemm_peak() -> None:
    runs = {RUNTIME: [_figures(1.0, batch_greedy_tok_s=640.0)], CTRANSLATE2: [_figures(1.0, batch_greedy_tok_s=320.0)]}
    runs[TRANSFORMERS] = [_figures(1.0)]  # FP32: no share of an INT8 peak
    result = _result("default", runs)
    macs = {
        "encoder": {"per_token": 1_000_000, "per_sentence": 0},
        "decoder": {"per_token": 2_000_000, "per_sentence": 0},
    }
    lines = report.compute_table(result, macs, peak_gmac_s=100.0)
    # a call: 16 x 12.0 source tokens x 1 M + 16 rows x 40 steps x 2 M = 1.472 G; 640 tok/s = 1 s per call of 640
    row = next(line for line in lines if line.startswith("| greedy"))
    assert row == "| greedy (16 rows × 40 steps) | 1.47 G | 1.5 GMAC/s | **1%** | 0.7 GMAC/s | **1%** |"
    assert "padding not counted" in lines[0] and "the output projection included" in lines[0]
    assert "transformers" not in "\n".join(lines)


# --- what moved the wrong way ---------------------------------------------------------------------------------


def test_regressions_name_each_figure_that_moved_the_wrong_way_past_the_margin() -> None:
    tracked = {
        "latency": report.Tracked("a :: b :: c", 106.0, "ms", True),  # 6 % slower: named
        "memory": report.Tracked("a :: b :: c", 104.0, "MB", True),  # 4 % more: within the margin
        "speed": report.Tracked("a :: b :: c", 90.0, "tok/s", False),  # 10 % slower: named
        "faster": report.Tracked("a :: b :: c", 150.0, "tok/s", False),  # better: not named
        "new": report.Tracked("a :: b :: c", 1.0, "s", True),  # nothing to compare with
    }
    previous = {"latency": 100.0, "memory": 100.0, "speed": 100.0, "faster": 100.0}
    moved = report.regressions(tracked, previous)
    assert [regression.name for regression in moved] == ["latency", "speed"]
    assert moved[1].line() == "speed: 100 tok/s → 90.0 tok/s (-10.0%; higher is better)"
    lines = report.regression_lines(moved, len(previous), "the previous report")
    assert "more than 5%" in lines[0] and lines[1:] == [f"- **{regression.line()}**" for regression in moved]
    assert report.regression_lines([], 4, "x")[1] == "- None moved the wrong way by more than that."
    assert "No figure" in report.regression_lines([], 0, "x")[0]


def _report_text(result: SetupResult) -> str:
    lines = ["# Benchmarks", "", "Written by `make bench` on 2026-12-03 08:26 UTC in 17.5 minutes.", ""]
    lines += ["## Environment", "", "- CPU: Some Other CPU", ""]
    lines += [f"## {result.setup.title}", "", *report.side_by_side_table(result), ""]
    return "\n".join(lines)


def test_the_previous_figures_are_read_from_the_json_copy_or_else_from_the_markdown(tmp_path: Path) -> None:
    before = _result("default", {RUNTIME: [_figures(1.0)], CTRANSLATE2: [_figures(1.0)]})
    # this run: batch-16 greedy 5 -> 4 tok/s (worse), peak RSS 7 -> 7.7 MB (worse), cold start 1.0 -> 0.5 s (better)
    now = _result(
        "default",
        {
            RUNTIME: [_figures(1.0, batch_greedy_tok_s=4.0, peak_rss_mb=7.7, cold_start_s=0.5)],
            CTRANSLATE2: [_figures(1.0)],
        },
    )
    tracked = report.tracked_figures([now], {"default": {"chars_per_s": 80.0}})
    from_markdown = report.previous_values(tracked, None, _report_text(before))
    assert from_markdown["model default: batch-16 greedy"] == 5.0
    assert from_markdown["model default: batch-16 greedy, ratio to CTranslate2"] == 1.0
    assert from_markdown["model default: model files on disk"] == 10.0
    assert "model default: the service's characters/s" not in from_markdown  # the old report has no such table
    moved = {regression.name for regression in report.regressions(tracked, from_markdown)}
    assert moved == {
        "model default: batch-16 greedy",
        "model default: batch-16 greedy, ratio to CTranslate2",
        "model default: peak RSS",
        "model default: peak RSS, ratio to CTranslate2",
    }
    copy = {"tracked": {"model default: batch-16 greedy": {"value": 4.1}}}
    assert report.previous_values(tracked, copy, _report_text(before)) == {"model default: batch-16 greedy": 4.1}

    out = tmp_path / "benchmarks.md"
    out.write_text(_report_text(before), encoding="utf-8")
    env = {"CPU": "This CPU"}
    lines, moved_now = runtime_bench.since_last_run(out, tracked, env)
    assert len(moved_now) == 4 and "(written 2026-12-03 08:26 UTC; its tables)" in lines[0]
    assert "another CPU (Some Other CPU; this one: This CPU)" in lines[0]
    assert "- **model default: batch-16 greedy: 5.00 tok/s → 4.00 tok/s (-20.0%; higher is better)**" in lines
    runtime_bench.figures_copy(out).write_text(
        json.dumps({"environment": env, "tracked": runtime_bench.tracked_json(tracked)}), encoding="utf-8"
    )
    lines, moved_now = runtime_bench.since_last_run(out, tracked, env)  # the same figures again: nothing moved
    assert moved_now == [] and "its JSON copy" in lines[0] and "another CPU" not in lines[0]
    assert runtime_bench._shown(Path("docs/benchmarks.md")) == "docs/benchmarks.md"  # relative to the checkout


def test_the_gemm_section_says_the_peak_its_passes_and_the_instruction_sets() -> None:
    shape = {"m": 512, "k": 1024, "n": 1024, "calls": 100, "best_gmac_s": 420.4, "median_gmac_s": 410.0}
    gemm = {"op": "MatMulIntegerToFloat", "threads": 2, "peak_gmac_s": 420.4, "peak_shape": [512, 1024, 1024]}
    gemm |= {"shapes": [shape], "isa": ["AVX2", "AVX-512 VNNI"], "passes": [300.0, 420.4], "seconds": 0.6}
    text = "\n".join(report.gemm_peak_lines(gemm))
    assert "512×1024×1024 420 (median 410)" in text
    assert "- Peak: **420 GMAC/s** (M=512, K=1024, N=1024)" in text
    assert "the better of 2 passes, at the start and at the end of the run: 300, 420 GMAC/s" in text
    assert "AVX2 (vpmaddubsw" in text and "AVX-512 VNNI (vpdpbusd on 512-bit registers)" in text
