"""CSANMT beside ModelScope's TensorFlow pipeline (``bench.pipeline.csanmt_tensorflow``), end to end on a tiny model.

A tiny random CSANMT folder written by modelscope's own model code (``tests.csanmt.oracle``), the INT8 bundle
``build.export`` makes of it, then one fresh process per engine: every figure measured, by two other processes, and
the table of ``make bench`` with its rows and ratios. About a minute on 2 cores (TensorFlow's imports dominate).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from bench.pipeline import csanmt_tensorflow
from bench.pipeline.csanmt_tensorflow import BATCH_SIZE, FIGURE_KEYS, FIGURES, MODELSCOPE, RUNTIME, SECTION_TITLE
from tests.csanmt import oracle
from tests.csanmt.conftest import tiny_request

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(ModelScope folder, the bundle built from it) of a tiny random CSANMT."""
    from build.export import export_bundle

    work = tmp_path_factory.mktemp("csanmt-tensorflow")
    checkpoint, bundle = work / "tiny-csanmt", work / "bundle"
    oracle.make_tiny(checkpoint, tiny_request())
    export_bundle(checkpoint, bundle, name="tiny-csanmt")
    return checkpoint, bundle


def test_both_engines_are_measured_each_in_its_own_process(tiny_pair: tuple[Path, Path]) -> None:
    checkpoint, bundle = tiny_pair
    comparison = csanmt_tensorflow.compare(checkpoint, bundle, threads=1, repeats=1, batch1_sentences=1)
    assert csanmt_tensorflow.missing(comparison) == []
    cap = json.loads((checkpoint / "configuration.json").read_text(encoding="utf-8"))["model"]["max_decoded_trg_len"]
    settings = comparison.settings
    assert (settings["beam_size"], settings["lp_rate"], settings["max_length"]) == (4, 0.6, cap)
    modelscope, runtime = comparison.runs[MODELSCOPE][0], comparison.runs[RUNTIME][0]
    for figures in (modelscope, runtime):
        assert all(figures[key] > 0 for key in FIGURE_KEYS), figures
        parts = figures["import_s"] + figures["load_s"] + figures["first_translation_s"]
        assert figures["cold_start_s"] == pytest.approx(parts)
        assert figures["peak_rss_mb"] >= figures["rss_after_load_mb"] > 50
        assert len(figures["batch_output_tokens"]) == BATCH_SIZE
        assert all(0 <= length <= cap for length in figures["batch_output_tokens"] + figures["b1_output_tokens"])
        assert sum(figures["batch_output_tokens"]) > 0
    # two fresh processes, neither of them this one; TensorFlow (and the torch modelscope imports) weigh more
    assert len({modelscope["pid"], runtime["pid"], os.getpid()}) == 3
    assert modelscope["rss_after_load_mb"] > runtime["rss_after_load_mb"]
    assert modelscope["versions"]["modelscope"] and modelscope["versions"]["tensorflow"]

    lines = csanmt_tensorflow.section_lines(comparison)
    text = "\n".join(lines)
    assert lines[0] == f"## {SECTION_TITLE}"
    header = "| figure | ModelScope TF pipeline | this runtime (ONNX Runtime INT8) | ratio (runtime / ModelScope) |"
    assert header in lines
    rows = [line for line in lines[lines.index(header) + 2 :] if line.startswith("| ")]
    assert len(rows) == len(FIGURES) + 1  # and the model files on disk
    for (_, label, *_), row in zip(FIGURES, rows[:-1], strict=True):
        assert row.startswith(f"| {label} |") and "× (" in row, row
    assert rows[-1].startswith("| model files on disk |")
    assert "not measured" not in text and f"at most {cap} output tokens" in text
    medians = csanmt_tensorflow.medians(comparison)
    assert medians[MODELSCOPE]["batch_tok_s"] == modelscope["batch_tok_s"]


def test_a_bundle_of_another_checkpoint_is_refused(tiny_pair: tuple[Path, Path], tmp_path: Path) -> None:
    checkpoint, bundle = tiny_pair
    other = tmp_path / "other"
    other.mkdir()
    config = json.loads((checkpoint / "configuration.json").read_text(encoding="utf-8"))
    config["model"]["num_decoder_layers"] += 1
    (other / "configuration.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ValueError, match="was not built from"):
        csanmt_tensorflow.check_pair(other, bundle)
    shutil.copy(checkpoint / "configuration.json", other / "configuration.json")
    csanmt_tensorflow.check_pair(other, bundle)


def test_make_bench_wants_the_bundle_with_the_checkpoint(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.pipeline import runtime_bench

    with pytest.raises(SystemExit):
        runtime_bench.main(["--csanmt-checkpoint", "somewhere"])
    assert "--csanmt-checkpoint needs --csanmt-bundle" in capsys.readouterr().err
