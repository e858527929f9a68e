"""`python -m bench.pipeline.runtime_bench --quick`: every figure measured for every engine, and the report written.

On the shipped default bundle, with CTranslate2 and transformers on the training checkpoint (converted into a
temporary folder), one round, 8 output tokens, a batch of 4. About 35 s of CPU (an idle 2-core machine: under a
minute); bounded by a 300 s timeout on a busy one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.pipeline.engines import FIGURES
from bench.pipeline.side_by_side import DISK, ENGINE_NAMES, REPO_ROOT, child_environment

pytestmark = [pytest.mark.slow, pytest.mark.shipped_model]


def test_quick_mode_measures_every_figure_of_every_engine(tmp_path: Path) -> None:
    out, figures_json = tmp_path / "benchmarks.md", tmp_path / "figures.json"
    command = [sys.executable, "-m", "bench.pipeline.runtime_bench", "--quick", "--work-dir", str(tmp_path / "work")]
    completed = subprocess.run(
        [*command, "--out", str(out), "--figures-json", str(figures_json)],
        cwd=REPO_ROOT,
        env=child_environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    measured = json.loads(figures_json.read_text(encoding="utf-8"))
    assert set(measured["default"]) == set(ENGINE_NAMES)
    for engine, figures in measured["default"].items():
        for name in (*FIGURES, DISK):
            assert figures.get(name, 0) > 0, f"{engine}: {name} missing or not positive: {figures}"
    assert measured["workload"]["default"]["chars_per_s"] > 0
    assert measured["bandwidth"]["dram_bytes_per_s"] > 0
    text = out.read_text(encoding="utf-8")
    assert "not measured" not in text
    for line in ("| peak RSS |", "| batch-1 beam 4, 8 tokens |", "of the bound", "| AWS Lambda 2048 MB arm64 |"):
        assert line in text
    assert "| Amazon Translate (standard, real-time) | $15.00" in text
    memory = measured["translation_memory"]
    assert memory["typing"]["edited_s"] > 0 and memory["typing"]["sentence_alone_s"] > 0
    assert memory["subtitles"]["with_memory_chars_per_s"] > 0 and memory["subtitles"]["without_memory_chars_per_s"] > 0
    assert 0 < memory["bulk"]["redelivered_s"] < memory["bulk"]["first_s"]  # a redelivered part is answered from memory
    assert "## The sentence translation memory" in text and "the sentence alone (goal <= 1.3)" in text
    streaming = measured["streaming"]["default"]
    for key in ("short", "longest"):  # a streamed and a whole process per text, each its own figures
        figures = streaming[key]
        assert figures["same_english"], figures
        assert 0 < figures["streamed"]["first_s"] < figures["streamed"]["total_s"], figures
        assert figures["whole"]["first_s"] == figures["whole"]["total_s"] > 0, figures
        assert figures["streamed"]["peak_rss_mb"] > 0 and figures["whole"]["peak_rss_mb"] > 0, figures
    assert "## Streaming" in text and "| default, not streamed: a 300-character text |" in text
    assert "`csanmt-full-size`: " in text and "**not run this time**" in text
