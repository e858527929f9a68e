"""`make run`'s server (infra/local/run.sh: functions-framework on main.py) started for a fault test.

``LocalRun.start`` runs the script with the test environment's virtual environment and extra variables, and a
thread collects everything it prints. ``wait_for_verdict`` waits for the watcher's verdict: its JSON line with
"event" "ready" (message "ready in ...") or "start_failed" (message "START FAILED ..."); ``call`` sends one HTTP
request; ``stop`` sends Ctrl+C (SIGINT to the process group) as a user would, and kills the group if it has not
stopped within its grace time (gunicorn itself waits up to 30 s for an idle worker).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.load.served_function import READY_EVENT, START_FAILED_EVENT, run_events
from tests.local_run import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]


class _Verdict:
    """Finds run.sh's verdict line, a JSON object of logger handler.run with ``event`` "ready" or "start_failed"
    (``search(printed)``: the record, or None); a START FAILED record's ``code`` and ``message`` (the reason)."""

    def __init__(self, event: str, message_start: str) -> None:
        self.event, self.message_start = event, message_start

    def search(self, printed: str) -> dict[str, Any] | None:
        for record in run_events(printed):
            if record.get("event") == self.event:
                assert str(record.get("message", "")).startswith(self.message_start), record
                return {**record, "message": record.get("reason", record.get("message"))}
        return None


READY = _Verdict(READY_EVENT, "ready in ")
START_FAILED = _Verdict(START_FAILED_EVENT, "START FAILED after ")


class LocalRun:
    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process = process
        self.port = port
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def start(cls, variables: Mapping[str, str]) -> LocalRun:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSLATE_")}
        env.update({"PORT": str(port), "PYTHONUNBUFFERED": "1", **variables})
        process = subprocess.Popen(
            ["bash", str(REPO_ROOT / "infra" / "local" / "run.sh"), str(Path(sys.executable).parent.parent)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal
        )
        return cls(process, port)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for_verdict(self, within_s: float = 120.0) -> str:
        """The printed output once it says "ready in" or "START FAILED" (AssertionError after ``within_s``)."""
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            printed = self.output
            if READY.search(printed) or START_FAILED.search(printed):
                time.sleep(0.2)  # the line after the verdict
                return self.output
            assert self.process.poll() is None or self._reader.is_alive(), f"run.sh exited:\n{printed}"
            time.sleep(0.1)
        raise AssertionError(f"run.sh printed no verdict within {within_s} s:\n{self.output}")

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            data = None if body is None else json.dumps(body).encode("utf-8")
            headers = {"Content-Type": "application/json"} if data is not None else {}
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            return response.status, json.loads(response.read())
        finally:
            connection.close()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def interrupt(self) -> None:
        """Ctrl+C, without waiting (``stop`` waits): several servers then stop at the same time."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)

    def stop(self, grace_s: float = 60.0) -> None:
        """Ctrl+C, then SIGKILL to the group if it still runs after ``grace_s`` seconds."""
        self.interrupt()
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._reader.join(timeout=5)
