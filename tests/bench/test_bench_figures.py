"""The side-by-side benchmark's arithmetic: weight bytes per step, missing figures, ratios, costs (fast)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from bench.pipeline import cost, engines, report
from bench.pipeline.side_by_side import CTRANSLATE2, RUNTIME, Setup, SetupResult, Workload, missing, rotated, summarise


def _graph(tmp_path: Path) -> Path:
    """A decoder step: a tied INT8-sized table read by Gather and MatMul, a positions table only sliced, a matrix."""
    table = numpy_helper.from_array(np.zeros((100, 8), dtype=np.int8), "table")  # 800 bytes, shared
    positions = numpy_helper.from_array(np.zeros((50, 8), dtype=np.float32), "positions")  # rows of 32 bytes
    matrix = numpy_helper.from_array(np.zeros((8, 8), dtype=np.float32), "matrix")  # 256 bytes
    unused = numpy_helper.from_array(np.zeros((1000,), dtype=np.float32), "unused")
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["embedded"]),
        helper.make_node("Slice", ["positions", "start", "end"], ["position"]),
        helper.make_node("MatMul", ["embedded_f", "matrix"], ["hidden"]),
        helper.make_node("MatMulInteger", ["hidden_q", "table"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        "step",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 1])],
        [helper.make_tensor_value_info("logits", TensorProto.INT32, [1, 100])],
        initializer=[table, positions, matrix, unused],
    )
    path = tmp_path / "decoder.onnx"
    onnx.save(helper.make_model(graph), str(path))
    return path


def test_step_bytes_count_shared_tables_whole_and_lookups_by_row(tmp_path: Path) -> None:
    from bench.pipeline.bandwidth import decoder_step_weight_bytes

    counted = decoder_step_weight_bytes(_graph(tmp_path))
    assert counted == {"total": 800 + 256 + 32, "whole": 800 + 256, "rows": 32, "tensors": 3}
    assert decoder_step_weight_bytes(_graph(tmp_path), batch_size=4)["rows"] == 4 * 32


def _result(runs: dict[str, list[dict[str, float]]], rounds: int) -> SetupResult:
    setup = Setup("m", "model", Path("bundle"), ctranslate2_dir=Path("ct2"))
    return SetupResult(
        setup,
        Workload(),
        rounds,
        {RUNTIME: rounds, CTRANSLATE2: rounds},
        runs,
        {RUNTIME: [], CTRANSLATE2: []},
        {RUNTIME: 10.0, CTRANSLATE2: 5.0},
        12.0,
    )


def _figures(scale: float) -> dict[str, float]:
    return {name: scale * (index + 1) for index, name in enumerate(engines.FIGURES)}


def test_every_figure_present_in_every_round_is_not_missing() -> None:
    result = _result({RUNTIME: [_figures(1.0), _figures(3.0)], CTRANSLATE2: [_figures(2.0), _figures(2.0)]}, 2)
    assert missing(result) == []
    spread = summarise(result)[RUNTIME]["cold_start_s"]
    assert (spread.median, spread.low, spread.high, spread.count) == (2.0, 1.0, 3.0, 2)


def test_a_figure_lacking_in_one_round_or_not_finite_is_reported() -> None:
    lacking = _figures(1.0)
    del lacking["peak_rss_mb"]
    broken = _figures(1.0) | {"b1_greedy_ms": float("nan")}
    result = _result({RUNTIME: [_figures(1.0), lacking], CTRANSLATE2: [broken, _figures(1.0)]}, 2)
    problems = missing(result)
    assert any("this runtime" in p and "peak_rss_mb measured in 1 of 2" in p for p in problems), problems
    assert any("CTranslate2" in p and "b1_greedy_ms measured in 1 of 2" in p for p in problems), problems
    assert len(problems) == 2


def test_a_failed_process_is_reported_with_its_message() -> None:
    result = _result({RUNTIME: [_figures(1.0)], CTRANSLATE2: []}, 1)
    result.errors[CTRANSLATE2].append("bench.pipeline.engines (ctranslate2) exited with 1: boom")
    problems = missing(result)
    assert any("a process failed" in p and "boom" in p for p in problems)
    assert sum("CTranslate2" in p for p in problems) == 1 + len(engines.FIGURES)


def test_ratio_says_better_or_worse_by_the_figures_direction() -> None:
    result = _result({RUNTIME: [_figures(1.0)], CTRANSLATE2: [_figures(2.0)]}, 1)
    table = "\n".join(report.side_by_side_table(result))
    assert "| cold start, process start → first translation | 1.00 s | 2.00 s | 0.50× (better) |" in table
    assert "| batch-16 greedy | 5 tok/s | 10 tok/s | 0.50× (worse) |" in table
    assert "| model files on disk | 10.0 MB | 5.0 MB | 2.00× (worse) |" in table


def test_engine_order_rotates_every_round() -> None:
    assert [rotated("ABC", n) for n in range(4)] == [list("ABC"), list("BCA"), list("CAB"), list("ABC")]


def test_wrong_output_length_is_an_error() -> None:
    assert engines._checked([[1, 2, 3]], 1, 3, "x") == [[1, 2, 3]]
    with pytest.raises(engines.WrongLength, match="lengths \\[2\\]"):
        engines._checked([[1, 2]], 1, 3, "x")


def test_serverless_costs_follow_the_prices() -> None:
    x86, arm, run = cost.serverless_costs(measured_chars_per_s=1000.0, chars_per_request=1e6)
    lambda_seconds = 1e6 / (1000.0 * 2048 / 1769 / 2)
    assert x86.usd_per_million_chars == pytest.approx(lambda_seconds * 2 * 0.0000166667 + 0.20e-6)
    assert arm.usd_per_million_chars == pytest.approx(lambda_seconds * 2 * 0.0000133334 + 0.20e-6)
    run_seconds = 1e6 / (1000.0 * 1 / 2)  # Cloud Run at infra/gcp/deploy.sh's 1 vCPU, the 2-thread speed halved
    assert run.usd_per_million_chars == pytest.approx(run_seconds * (1 * 0.000024 + 2 * 0.0000025) + 0.40e-6)
    with pytest.raises(ValueError):
        cost.serverless_costs(0.0, 1.0)


def test_an_engine_started_in_fewer_rounds_is_expected_in_those_only() -> None:
    from bench.pipeline.side_by_side import TRANSFORMERS

    result = _result({RUNTIME: [_figures(1.0)] * 2, CTRANSLATE2: [_figures(1.0)] * 2}, 2)
    result = SetupResult(
        Setup("m", "model", Path("bundle"), ctranslate2_dir=Path("ct2"), checkpoint_dir=Path("hf")),
        result.workload,
        2,
        {RUNTIME: 2, CTRANSLATE2: 2, TRANSFORMERS: 1},
        result.runs | {TRANSFORMERS: [_figures(9.0)]},
        {RUNTIME: [], CTRANSLATE2: [], TRANSFORMERS: []},
        result.disk_mb | {TRANSFORMERS: 50.0},
        12.0,
    )
    assert missing(result) == []
    result.engine_rounds[TRANSFORMERS] = 2
    assert len(missing(result)) == len(engines.FIGURES)


def test_measured_processes_import_the_checkout_compiled() -> None:
    """Every module of the packages a measured process imports has bytecode current with its source (the pyc's
    header holds the source's mtime and size), as in the images, even where PYTHONDONTWRITEBYTECODE is set."""
    import importlib.util
    import struct

    from bench.pipeline.side_by_side import COMPILED_PACKAGES, compile_bytecode
    from handler.config import REPO_ROOT

    compile_bytecode()
    sources = [path for package in COMPILED_PACKAGES for path in sorted((REPO_ROOT / package).rglob("*.py"))]
    assert len(sources) > 50
    for source in sources:
        cached = Path(importlib.util.cache_from_source(str(source)))
        assert cached.is_file(), f"{source} has no bytecode"
        flags, mtime, size = struct.unpack("<III", cached.read_bytes()[4:16])
        stat = source.stat()
        assert (flags, mtime, size) == (0, int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF), source


def test_a_floor_process_imports_the_engines_libraries_and_no_model() -> None:
    from bench.pipeline.side_by_side import run_process

    figures = run_process("bench.pipeline.engines", {"engine": RUNTIME, "floor": True})
    assert figures["libraries"] == ["onnxruntime", "sentencepiece"]
    # the interpreter with numpy and ONNX Runtime: tens of MB; seconds from the parent's clock, so above zero
    assert 20 < figures["rss_mb"] < 200 and 0 < figures["import_s"] < 30, figures


def _floor_bundle(tmp_path: Path, weights: int) -> Path:
    (tmp_path / "encoder.onnx.data").write_bytes(b"\0" * (weights // 2))
    (tmp_path / "decoder.onnx.data").write_bytes(b"\0" * (weights - weights // 2 - 1024))
    (tmp_path / "embedding.bin").write_bytes(b"\0" * 1024)
    (tmp_path / "source.spm").write_bytes(b"\0" * 4096)  # a tokenizer file: not a weight
    (tmp_path / "encoder.onnx").write_bytes(b"\0" * 512)  # the graph's own small tensors: left out (a lower bound)
    return tmp_path


def test_the_floor_bound_counts_the_weights_and_judges_the_reference_rss(tmp_path: Path) -> None:
    from dataclasses import replace

    from bench.pipeline.floor import MIB, Floor, weight_bytes

    bundle = _floor_bundle(tmp_path, 10 * MIB)
    assert weight_bytes(bundle) == 10 * MIB
    floors = {
        RUNTIME: Floor(RUNTIME, ("onnxruntime", "sentencepiece"), 50.0, 0.09, 3),
        CTRANSLATE2: Floor(CTRANSLATE2, ("ctranslate2", "sentencepiece"), 30.0, 0.05, 3),
    }
    reference = {"rss_after_load_mb": 57.0, "cold_start_s": 0.15}
    result = _result({RUNTIME: [_figures(1.0)], CTRANSLATE2: [_figures(1.0) | reference]}, 1)
    result = replace(result, setup=replace(result.setup, bundle_dir=bundle))
    (line,) = report.floor_lines(result, floors)
    assert "**60.0 MB**, above CTranslate2's RSS after load (57 MB): no runtime" in line
    assert "The imports alone take 60% of CTranslate2's whole cold start (0.15 s)" in line
    roomy = {RUNTIME: [_figures(1.0)], CTRANSLATE2: [_figures(1.0) | reference | {"rss_after_load_mb": 64.0}]}
    (line,) = report.floor_lines(replace(_result(roomy, 1), setup=result.setup), floors)
    assert "**60.0 MB**, 4.0 MB below CTranslate2's RSS after load (64 MB): the room" in line
    assert report.floor_lines(result, {RUNTIME: floors[RUNTIME]}) == []  # CTranslate2's floor not measured
