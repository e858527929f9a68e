"""The cold-start entry point: cached per bundle, torch-free, and independent of a writable home folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from handler import coldstart
from handler.config import RuntimeConfig
from handler.errors import BundleError
from tests.runtime.conftest import run_probe

REPO_ROOT = Path(__file__).resolve().parents[2]

TRANSLATE_IN_A_FRESH_PROCESS = """
import json, sys
from handler import coldstart
from handler.config import RuntimeConfig

service = coldstart.get_service(RuntimeConfig(bundle_dir=sys.argv[1], threads=1, beam_size=2))
translation = service.translate("你好。今天天气很好，我们去公园散步吧。")
heavy = sorted(name for name in sys.modules if name.split(".")[0] in ("torch", "transformers", "optimum"))
print(json.dumps({"translation": translation, "heavy_modules": heavy, "report": coldstart.cold_start_report()}))
"""


def run_fresh(bundle_dir: Path, home: str | None, cwd: Path) -> tuple[dict[str, object], str]:
    env = {key: value for key, value in os.environ.items() if key not in ("HOME", "ORT_DISABLE_TELEMETRY")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    if home is not None:
        env["HOME"] = home
    completed = subprocess.run(
        [sys.executable, "-c", TRANSLATE_IN_A_FRESH_PROCESS, str(bundle_dir)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1]), completed.stderr


@pytest.mark.slow
def test_translating_never_imports_torch_or_transformers_and_writes_nothing(
    tiny_bundle_dir: Path, tmp_path: Path
) -> None:
    # GIVEN an empty, writable home folder and working folder
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    # WHEN a fresh process imports the runtime, loads the bundle and translates
    result, _ = run_fresh(tiny_bundle_dir, str(home), work)
    # THEN it translated without torch, transformers or optimum, and wrote nothing to either folder
    assert result["heavy_modules"] == []
    assert isinstance(result["translation"], str) and result["translation"]
    assert list(home.iterdir()) == [] and list(work.iterdir()) == []
    report = result["report"]
    assert isinstance(report, dict) and report["warm"] is True and report["error"] is None
    assert report["import_s"] > 0 and report["load_s"] > 0 and report["warmup_s"] > 0
    assert all(report[part] > 0 for part in ("check_s", "tokenizer_s", "sessions_s"))  # the load's parts


@pytest.mark.slow
@pytest.mark.parametrize("home", ["unwritable", "unset"])
def test_a_read_only_or_missing_home_does_not_matter(tiny_bundle_dir: Path, tmp_path: Path, home: str) -> None:
    # a home folder below a regular file can never be created, whoever runs the test (root included)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    result, stderr = run_fresh(tiny_bundle_dir, str(blocker / "home") if home == "unwritable" else None, tmp_path)
    assert result["translation"]
    assert "telemetry" not in stderr.lower() and "Failed to" not in stderr


@pytest.fixture
def fresh_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's runtime state, emptied for one test and restored afterwards."""
    monkeypatch.setattr(coldstart, "_services", {})
    monkeypatch.setattr(coldstart, "_report", {"warm": False, "load_s": None, "warmup_s": None, "error": None})


@pytest.mark.usefixtures("fresh_runtime")
def test_get_service_loads_once_per_bundle(tiny_bundle_dir: Path) -> None:
    config = RuntimeConfig(bundle_dir=tiny_bundle_dir, threads=1, beam_size=2)
    first = coldstart.get_service(config)
    assert coldstart.get_service(config.with_overrides(beam_size=3)) is first  # the first configuration wins
    report = coldstart.cold_start_report()
    assert report["warm"] is True and report["error"] is None
    assert isinstance(report["process_to_import_s"], float) and report["process_to_import_s"] >= 0


@pytest.mark.usefixtures("fresh_runtime")
def test_a_missing_bundle_raises_and_is_reported(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="does not exist; build one with python -m build.export"):
        coldstart.get_service(RuntimeConfig(bundle_dir=tmp_path / "missing"))
    assert "does not exist" in str(coldstart.cold_start_report()["error"])


REPORT_FROM_A_FORKED_WORKER = """
import json, os, sys, time
time.sleep(0.3)  # the entry point's own start-up, before it imports the runtime
from handler import coldstart
from handler.config import RuntimeConfig

coldstart.get_service(RuntimeConfig(bundle_dir=sys.argv[1], threads=1, beam_size=2))  # the master loads at import
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:  # the worker gunicorn forks
    os.close(read_end)
    os.write(write_end, json.dumps(coldstart.cold_start_report()).encode())
    os._exit(0)
os.close(write_end)
chunks = []
while chunk := os.read(read_end, 65536):
    chunks.append(chunk)
os.waitpid(pid, 0)
print(json.dumps({"worker": json.loads(b"".join(chunks)), "master": coldstart.cold_start_report()}))
"""


def test_a_forked_worker_reports_the_masters_cold_start_and_its_own_reopen(tiny_bundle_dir: Path) -> None:
    reports = run_probe(REPORT_FROM_A_FORKED_WORKER, tiny_bundle_dir)
    worker, master = reports["worker"], reports["master"]
    assert master["forked_worker"] is False and master["worker_reopen_s"] is None
    assert worker["forked_worker"] is True
    assert isinstance(worker["worker_reopen_s"], float) and worker["worker_reopen_s"] > 0
    # timed from the master's start, not the fork: a worker starts after the import, which used to read as 0
    assert isinstance(master["process_to_import_s"], float) and master["process_to_import_s"] >= 0.3
    assert worker["process_to_import_s"] == master["process_to_import_s"]
    for figure in ("import_s", "load_s", "warmup_s"):
        assert worker[figure] == master[figure] and master[figure] > 0


def test_import_time_covers_the_handler_imports_whichever_module_comes_first(tiny_bundle_dir: Path) -> None:
    # an entry point imports an adapter first (main.py: handler.adapters.gcp), which pulls in onnxruntime before
    # the cold start module
    probe = (
        "import json, sys\n"
        "from handler import service\n"
        "from handler import coldstart\n"
        "print(json.dumps(coldstart.cold_start_report()))\n"
    )
    report = run_probe(probe, tiny_bundle_dir)
    assert isinstance(report["import_s"], float) and report["import_s"] >= 0.01  # it read 0.0 when timed in runtime
