"""`make run`'s banner (infra/local/run.sh) and `python -m handler serve` say when the served bundle is a
non-commercial demo (the shipped default, CC BY-NC-SA 4.0) and how to build a production model; a bundle that
states no non-commercial licence gets no such line. Bound: two run.sh starts and one serve start, ~20 s."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.load.served_function import READY_EVENT, run_events
from handler.config import DEFAULT_BUNDLE_DIR
from handler.model import licence
from tests.adapters.conftest import ServerProcess, free_port, function_env, subprocess_env
from tests.faults.run_script import READY, LocalRun
from tests.fuzz.shipped import NEEDS_SHIPPED_BUNDLE

pytestmark = pytest.mark.slow

NOTICE_EVENT = "licence_notice"


def banner(bundle_dir: Path) -> list[dict[str, object]]:
    """The JSON lines run.sh's watcher printed up to and including its verdict, serving ``bundle_dir``."""
    run = LocalRun.start({"TRANSLATE_BUNDLE_DIR": str(bundle_dir), "TRANSLATE_THREADS": "1"})
    try:
        printed = run.wait_for_verdict()
        assert READY.search(printed), printed
    finally:
        run.stop(grace_s=10)
    return run_events(printed)


def needs_shipped_bundle(test: Callable[..., None]) -> Callable[..., None]:
    for mark in NEEDS_SHIPPED_BUNDLE:
        test = mark(test)
    return test


@needs_shipped_bundle
def test_make_run_says_the_default_bundle_is_a_non_commercial_demo_just_above_ready() -> None:
    events = banner(DEFAULT_BUNDLE_DIR)
    names = [event["event"] for event in events]
    assert names == ["starting", NOTICE_EVENT, READY_EVENT], events
    notice = events[1]
    expected = licence.read(DEFAULT_BUNDLE_DIR)
    assert notice["severity"] == "WARNING" and notice["message"] == expected.notice
    assert notice["licence"] == {"name": "CC BY-NC-SA 4.0", "commercial_use": False, "notice": expected.notice}
    message = str(notice["message"])
    assert "non-commercial" in message.lower() and "make model MODEL=Helsinki-NLP/opus-mt-zh-en" in message
    assert "model_artifacts/opus-mt-zh-en" in message and "\n" not in message


def test_make_run_prints_no_notice_for_a_bundle_without_a_non_commercial_licence(tiny_bundle_dir: Path) -> None:
    assert json.loads((tiny_bundle_dir / "manifest.json").read_text(encoding="utf-8"))["licence"] == ""
    events = banner(tiny_bundle_dir)
    assert [event["event"] for event in events] == ["starting", READY_EVENT], events


@needs_shipped_bundle
def test_python_m_handler_serve_prints_the_notice_too(tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "handler", "serve", "--port", str(port)]
    env = subprocess_env(function_env(DEFAULT_BUNDLE_DIR, TRANSLATE_STATE_DIR=str(tmp_path / "state")))
    server = ServerProcess(command, env, tmp_path / "serve.log")
    try:
        server.wait_http(f"http://127.0.0.1:{port}")
        log = server.log()
    finally:
        server.stop()
    assert f"{licence.read(DEFAULT_BUNDLE_DIR).notice}\nserving on http://127.0.0.1:{port}/" in log, log
