"""``python -m handler translate [FILE|-]`` as a user runs it: a real process, stdout and stderr apart."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from handler.coldstart import Startup
from handler.formats.plain_text import translate_text
from tests.adapters.conftest import REPO_ROOT, RealHttpClient, ServerProcess, free_port, subprocess_env

pytestmark = pytest.mark.slow

SHORT = "你好，世界。\n\n今天天气很好。\n"
LONG = "\n".join(f"第{i}段。我们明天早上九点在图书馆门口见面。" for i in range(45)) + "\n"  # > 1,000 characters


def run_cli(args: list[str], env: dict[str, str], stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "handler", *args],
        cwd=REPO_ROOT,
        env=subprocess_env(env),
        input=stdin,
        capture_output=True,
        timeout=300,
    )


def expected(startup: Startup, text: str) -> bytes:
    return translate_text(startup.service, text).encode("utf-8")  # type: ignore[arg-type]


def test_translate_a_file_to_stdout(tmp_path: Path, adapter_env: dict[str, str], startup: Startup) -> None:
    source = tmp_path / "short.txt"
    source.write_bytes(SHORT.encode("gb18030"))  # any supported encoding, as for uploads
    result = run_cli(["translate", str(source)], adapter_env)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == expected(startup, SHORT)
    assert result.stderr == b""  # short input: no progress bar


def test_translate_stdin_to_stdout(adapter_env: dict[str, str], startup: Startup) -> None:
    result = run_cli(["translate", "-"], adapter_env, stdin=SHORT.encode("utf-8"))
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == expected(startup, SHORT)


def test_long_input_shows_a_progress_bar_on_stderr_only(
    tmp_path: Path, adapter_env: dict[str, str], startup: Startup
) -> None:
    source = tmp_path / "long.txt"
    source.write_text(LONG, encoding="utf-8")
    # stderr is a pipe here: --progress draws the bar anyway (a terminal gets it unasked: test_cli_unix)
    result = run_cli(["translate", "--progress", str(source)], adapter_env)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == expected(startup, LONG)
    stderr = result.stderr.decode()
    assert stderr.endswith("\n") and re.search(r"\] 100%  ([\d,]+) / \1 characters\n$", stderr), stderr
    assert b"%" not in result.stdout and b"[#" not in result.stdout


def test_quiet_hides_the_progress_bar(tmp_path: Path, adapter_env: dict[str, str]) -> None:
    source = tmp_path / "long.txt"
    source.write_text(LONG, encoding="utf-8")
    result = run_cli(["translate", "--quiet", "--progress", str(source)], adapter_env)
    assert result.returncode == 0 and result.stderr == b""


def test_errors_are_one_line_on_stderr(tmp_path: Path, adapter_env: dict[str, str]) -> None:
    missing = run_cli(["translate", str(tmp_path / "missing.txt")], adapter_env)
    assert missing.returncode == 1 and b"missing.txt" in missing.stderr and b"Traceback" not in missing.stderr
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\x00\x01\x02\x03")
    refused = run_cli(["translate", str(binary)], adapter_env)
    assert refused.returncode == 1 and b"looks binary" in refused.stderr
    bad_beam = run_cli(["translate", "--beam-size", "9", "-"], adapter_env, stdin=b"hi")
    assert bad_beam.returncode == 1 and b"beam_size" in bad_beam.stderr


def test_a_broken_bundle_is_reported(broken_bundle_dir: Path, adapter_env: dict[str, str]) -> None:
    result = run_cli(["translate", "--bundle", str(broken_bundle_dir), "-"], adapter_env, stdin=SHORT.encode())
    assert result.returncode == 69  # EX_UNAVAILABLE: an unusable model, not bad input
    assert b"encoder.onnx" in result.stderr and b"Traceback" not in result.stderr


def test_serve_answers_on_the_given_port(adapter_env: dict[str, str], tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "handler", "serve", "--port", str(port)]
    server = ServerProcess(command, subprocess_env(adapter_env), tmp_path / "serve.log")
    try:
        server.wait_http(f"http://127.0.0.1:{port}")
        health = RealHttpClient("serve", f"http://127.0.0.1:{port}").call("GET", "/healthz")
        assert health.status == 200 and health.json()["warm"] is True
        log = server.log()
        assert f"serving on http://127.0.0.1:{port}/" in log and "translator ready: model" in log
    finally:
        server.stop()
