"""`make run`'s server (infra/local/run.sh: functions-framework on main.py) started for a test, and one request.

``serve_and_translate`` runs the script in the test environment with ``TRANSLATE_BUNDLE_DIR`` on a bundle, waits
for its "ready" line (JSON, as every line it prints), checks what it printed and the page, posts one
``POST /translate`` and stops the server with Ctrl+C, as a user would; it returns the JSON answer.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from bench.load.served_function import READY_EVENT, run_events
from handler import config as runtime_config

REPO_ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_and_translate(bundle_dir: Path, text: str, ready_within_s: float = 180) -> dict[str, Any]:
    port = free_port()
    server = subprocess.Popen(
        ["bash", str(REPO_ROOT / "infra" / "local" / "run.sh"), str(Path(sys.executable).parent.parent)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PORT": str(port), runtime_config.ENV_BUNDLE_DIR: str(bundle_dir)},
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal, whatever started us
    )
    base = f"http://127.0.0.1:{port}/"
    output: list[str] = []
    try:
        assert server.stdout is not None
        deadline = time.monotonic() + ready_within_s
        for line in server.stdout:
            output.append(line)
            if any(event["event"] == READY_EVENT for event in run_events(line)):
                break
            assert time.monotonic() < deadline, "".join(output)
        printed = "".join(output)
        events = {event["event"]: event for event in run_events(printed)}  # JSON lines, as every other log line
        assert events["starting"]["message"].startswith(f"starting the translation function on {base}"), printed
        ready = events[READY_EVENT]
        assert ready["severity"] == "INFO" and ready["url"] == base and ready["bundle_hash"], ready
        assert {"import_s", "load_s", "warmup_s"} <= set(ready["cold_start"]), ready
        message = ready["message"]
        assert re.search(r"cold start: import [\d.]+ s, load [\d.]+ s, warm-up [\d.]+ s", message), message
        assert message.startswith("ready in ") and f"open {base}" in message

        with urllib.request.urlopen(base, timeout=30) as page:
            assert page.headers["Content-Type"].startswith("text/html")
        request = urllib.request.Request(
            base + "translate", data=json.dumps({"text": text}).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer: dict[str, Any] = json.load(response)
    finally:
        os.killpg(server.pid, signal.SIGINT)  # Ctrl+C
        began = time.monotonic()
        try:  # gunicorn kills a worker that has not stopped after its 30 s graceful timeout
            server.wait(timeout=60)
            print(f"the local server stopped {time.monotonic() - began:.1f} s after Ctrl+C")
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
            pytest.fail("the local server did not stop within 60 s of Ctrl+C")
    with pytest.raises(OSError):
        urllib.request.urlopen(base + "healthz", timeout=5)
    return answer
