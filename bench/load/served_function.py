"""`make run`'s real server for a benchmark: infra/local/run.sh (functions-framework, gunicorn) on loopback.

``ServedFunction.start`` runs the script as ``make run`` does, with ``TRANSLATE_BUNDLE_DIR`` and any other settings
in its environment, its output in a log file, and waits for its "ready" line (a JSON line, ``run_events``).
functions-framework serves with gunicorn (``handler.adapters.gunicorn_server``: keep-alive 75 s): the arbiter loads and
warms the model at import, then forks one worker (``WORKERS``, default 1) with ``THREADS`` threads (default 4 per
CPU), and the worker answers every request with the model it inherited and reopened. ``worker_pid`` is that
worker: the process that holds the model while it serves. ``RssSampler`` samples a process's resident set once a
second.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from handler.config import REPO_ROOT

RUN_SCRIPT = REPO_ROOT / "infra" / "local" / "run.sh"
MB = 1024 * 1024
RUN_LOGGER = "handler.run"  # run.sh's watcher: its JSON lines say "starting", then "ready" or "start_failed"
READY_EVENT, START_FAILED_EVENT = "ready", "start_failed"
COLD_START_TIMINGS = (("import_s", "import"), ("load_s", "load"), ("warmup_s", "warm-up"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServedFunction:
    def __init__(self, process: subprocess.Popen[bytes], base_url: str, log_path: Path) -> None:
        self.process = process
        self.base_url = base_url
        self.log_path = log_path

    @classmethod
    def start(
        cls,
        venv: Path,
        bundle_dir: Path,
        settings: dict[str, str],
        log_path: Path,
        ready_within_s: float = 600,
        root: Path = REPO_ROOT,
    ) -> ServedFunction:
        """``root``'s infra/local/run.sh (this checkout's, or a ``git worktree`` of another commit) serving
        ``bundle_dir`` from ``venv``, once its watcher has printed "ready"."""
        port = free_port()
        env = _server_environment(settings, port)
        env["TRANSLATE_BUNDLE_DIR"] = str(bundle_dir)
        command = ["bash", str(root / RUN_SCRIPT.relative_to(REPO_ROOT)), str(venv)]
        served = cls(_spawn(command, root, env, log_path), f"http://127.0.0.1:{port}", log_path)
        deadline = time.monotonic() + ready_within_s
        while (verdict := served.verdict()) is None:
            served._check_alive(deadline)
            time.sleep(0.2)
        if verdict["event"] != READY_EVENT:
            served.stop()
            raise RuntimeError(f"the server is up but its model is not ({verdict['message']}):\n{served.log()}")
        return served

    @classmethod
    def start_app(
        cls,
        venv: Path,
        source: Path,
        target: str,
        settings: dict[str, str],
        log_path: Path,
        ready_within_s: float = 600,
    ) -> ServedFunction:
        """Another function (``source``'s ``target``) behind the same server as run.sh's: functions-framework's
        gunicorn through ``handler.adapters.gunicorn_server``, with run.sh's ``MALLOC_ARENA_MAX`` and the same
        ``WORKERS``/``THREADS``; ready once its ``GET /healthz`` answers 200 (the function loads its model then)."""
        port = free_port()
        env = _server_environment(settings, port)
        env.setdefault("MALLOC_ARENA_MAX", "2")  # as infra/local/run.sh exports it
        command = [str(venv / "bin" / "python"), "-m", "handler.adapters.gunicorn_server", "--source", str(source)]
        command += ["--target", target, "--host", "127.0.0.1", "--port", str(port)]
        served = cls(_spawn(command, REPO_ROOT, env, log_path), f"http://127.0.0.1:{port}", log_path)
        deadline = time.monotonic() + ready_within_s
        while True:
            served._check_alive(deadline)
            try:
                served.health()
                return served
            except (OSError, ValueError):  # not listening yet, or 503 while it loads
                time.sleep(0.2)

    def _check_alive(self, deadline: float) -> None:
        if self.process.poll() is not None or time.monotonic() > deadline:
            self.stop()
            raise RuntimeError(f"the server did not become ready:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def health(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.base_url + "/healthz", timeout=30) as response:
            health: dict[str, Any] = json.load(response)
        return health

    def verdict(self) -> dict[str, Any] | None:
        """run.sh's "ready" or "start_failed" line (a JSON object), or None while it has printed neither."""
        return next((e for e in run_events(self.log()) if e.get("event") in (READY_EVENT, START_FAILED_EVENT)), None)

    def cold_start_line(self) -> str:
        """The cold-start timings of the "ready" line: "cold start: import 1.16 s, load 0.49 s, warm-up 0.05 s"."""
        cold_start = (self.verdict() or {}).get("cold_start") or {}
        parts = [f"{label} {cold_start[key]:.2f} s" for key, label in COLD_START_TIMINGS if key in cold_start]
        return "cold start: " + (", ".join(parts) if parts else "(not printed)")

    def worker_pid(self) -> int:
        """The gunicorn worker: the arbiter's (this script's process's) child that runs functions-framework (named
        ``gunicorn: worker`` where setproctitle is installed)."""
        arbiter = psutil.Process(self.process.pid)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            workers = [child for child in arbiter.children() if _is_server(_command_line(child))]
            if len(workers) == 1:
                return workers[0].pid
            time.sleep(0.2)
        raise RuntimeError(f"expected one gunicorn worker under process {arbiter.pid}; found {arbiter.children()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)  # Ctrl+C, as make run is stopped
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def _server_environment(settings: dict[str, str], port: int) -> dict[str, str]:
    """This process's environment without its ``TRANSLATE_*`` settings, plus ``settings``, on loopback."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("TRANSLATE_")}
    env.update(settings, HOST="127.0.0.1", PORT=str(port))
    return env


def _spawn(command: list[str], cwd: Path, env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        return subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def run_events(printed: str) -> list[dict[str, Any]]:
    """The JSON lines run.sh's watcher printed (logger ``handler.run``): "starting", "ready", "start_failed"."""
    events = []
    for line in printed.splitlines():
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("logger") == RUN_LOGGER:
                events.append(record)
    return events


def _command_line(process: psutil.Process) -> str:
    """The command line, or "" for a child gone or not yet reaped (run.sh's watcher, once it has printed)."""
    try:
        return " ".join(process.cmdline())
    except (psutil.ZombieProcess, psutil.NoSuchProcess, psutil.AccessDenied):
        return ""


def _is_server(command_line: str) -> bool:
    servers = ("handler.adapters.gunicorn_server", "functions-framework", "gunicorn: worker")
    return any(name in command_line for name in servers)


@dataclass(frozen=True)
class RssSample:
    seconds: float  # since the sampler started
    done: int  # requests finished when the sample was taken
    rss_mb: float


@dataclass
class RssSampler:
    """Samples ``pid``'s RSS every ``interval_s`` in a background thread, with the progress ``done()`` reports."""

    pid: int
    done: Callable[[], int]
    interval_s: float = 1.0
    samples: list[RssSample] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._process = psutil.Process(self.pid)
        self._stop = threading.Event()
        self._began = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def sample(self) -> RssSample:
        sample = RssSample(time.monotonic() - self._began, self.done(), self._process.memory_info().rss / MB)
        self.samples.append(sample)
        return sample

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
