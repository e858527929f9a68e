"""``python -m handler translate`` as a Unix tool: progress only on a terminal, exit statuses that tell the failures
apart, Ctrl-C quiet with 130, ``--source``, ``--version``, several files or a folder into ``-O DIR``. Real processes on
the shipped model, stdout and stderr apart (and stderr on a pseudo-terminal where a person would watch it)."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from handler.coldstart import Startup
from handler.formats.plain_text import translate_text
from handler.model.loader import load_bundle
from handler.service import TranslateOptions
from tests.adapters.conftest import REPO_ROOT, subprocess_env

pytestmark = pytest.mark.slow

SHORT = "你好，世界。\n\n今天天气很好。\n"
LONG = "\n".join(f"第{i}段。我们明天早上九点在图书馆门口见面。" for i in range(45)) + "\n"  # > 1,000 characters
BAR = re.compile(r"\r\[[#.]+\] +\d+%  [\d,]+ / [\d,]+ characters")


def command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "handler", "translate", *args]


def run_cli(args: list[str], env: dict[str, str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        command(args), cwd=REPO_ROOT, env=subprocess_env(env), input=stdin, capture_output=True, timeout=300
    )


def run_on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, bytes, bytes]:
    """The command with stderr on a pseudo-terminal (as in an interactive shell): its status, stdout and what the
    terminal showed."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        command(args),
        cwd=REPO_ROOT,
        env=subprocess_env(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
    )
    os.close(terminal)
    shown: list[bytes] = []

    def read() -> None:  # as it comes, so that a full terminal buffer never blocks the process
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the process closed its end
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    stdout, _ = process.communicate(timeout=300)
    reader.join(timeout=30)
    os.close(controller)
    return process.returncode, stdout, b"".join(shown)


def expected(startup: Startup, text: str, **options: object) -> bytes:
    translate_options = TranslateOptions.from_mapping(dict(options)) if options else None
    return translate_text(startup.service, text, translate_options).encode("utf-8")  # type: ignore[arg-type]


# --- progress only where a person watches ---------------------------------------------------------------------


def test_no_progress_bar_into_a_log_file_or_pipe(tmp_path: Path, adapter_env: dict[str, str], startup: Startup) -> None:
    source = tmp_path / "long.txt"
    source.write_text(LONG, encoding="utf-8")
    result = run_cli([str(source)], adapter_env)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == expected(startup, LONG)
    assert result.stderr == b""  # stderr a pipe: no \r updates


def test_progress_bar_on_a_terminal_and_with_progress(tmp_path: Path, adapter_env: dict[str, str]) -> None:
    source = tmp_path / "long.txt"
    source.write_text(LONG, encoding="utf-8")
    status, stdout, shown = run_on_a_terminal([str(source)], adapter_env)
    assert status == 0 and stdout.count(b"\n") == LONG.count("\n")
    assert BAR.search(shown.decode()) and b"100%" in shown, shown
    forced = run_cli(["--progress", str(source)], adapter_env)
    assert forced.returncode == 0 and forced.stdout == stdout
    assert re.search(r"\] 100%  ([\d,]+) / \1 characters\n$", forced.stderr.decode()), forced.stderr
    status, _, quiet = run_on_a_terminal(["--quiet", str(source)], adapter_env)
    assert status == 0 and quiet == b""


# --- exit statuses ----------------------------------------------------------------------------------------------


def test_exit_statuses_tell_the_failures_apart(
    tmp_path: Path, adapter_env: dict[str, str], broken_bundle_dir: Path
) -> None:
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\x00\x01\x02\x03")
    bad_input = run_cli([str(binary)], adapter_env)
    assert bad_input.returncode == 1 and b"looks binary" in bad_input.stderr
    usage = run_cli(["--no-such-flag"], adapter_env)
    assert usage.returncode == 2 and usage.stderr.startswith(b"usage:")
    model = run_cli(["--bundle", str(broken_bundle_dir), "-"], adapter_env, SHORT.encode())
    assert model.returncode == 69 and b"encoder.onnx" in model.stderr and b"Traceback" not in model.stderr
    missing = run_cli(["--bundle", str(tmp_path / "nowhere"), "-"], adapter_env, SHORT.encode())
    assert missing.returncode == 69 and b"does not exist" in missing.stderr
    late = run_cli(["--timeout", "0.001", "-"], adapter_env, LONG.encode())
    assert late.returncode == 75 and b"deadline" in late.stderr and late.stdout == b""
    assert b"Traceback" not in late.stderr and late.stderr.count(b"\n") == 1


def test_help_documents_the_exit_statuses(adapter_env: dict[str, str]) -> None:
    result = run_cli(["--help"], adapter_env)
    assert result.returncode == 0
    text = " ".join(result.stdout.decode().split())
    for status in ("0 done", "1 bad input", "2 usage error", "69 the model", "75 --timeout", "130 interrupted"):
        assert status in text, text


def test_ctrl_c_exits_130_without_a_traceback(adapter_env: dict[str, str]) -> None:
    process = subprocess.Popen(
        command(["--lines"]),
        cwd=REPO_ROOT,
        env=subprocess_env({**adapter_env, "PYTHONFAULTHANDLER": "1"}),  # SIGABRT prints every thread's stack
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Ctrl-C as in a terminal: a background job of a non-interactive shell (CI's, say) starts with SIGINT
        # ignored, and a child inherits that (Python then installs no KeyboardInterrupt handler)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    process.stdin.write("你好。\n".encode())
    process.stdin.flush()
    assert process.stdout.readline().endswith(b"\n")  # the model is loaded, it waits for the next line
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)  # a process that ignored Ctrl-C: where each of its threads waits
        _, stacks = process.communicate(timeout=30)
        pytest.fail(f"still running 60 s after SIGINT; its threads:\n{stacks.decode(errors='replace')}")
    assert process.returncode == 130
    assert process.stderr.read() == b""
    process.stdin.close()


# --- --source and --version -------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["zh-Hans", "zh-Hant", "zh-TW", "zh-HK", "auto"])
def test_source_chooses_the_chinese_variant(source: str, adapter_env: dict[str, str], startup: Startup) -> None:
    text = "請問最近的捷運站在哪裡？\n"
    result = run_cli(["--source", source, "-"], adapter_env, text.encode())
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == expected(startup, text, source=source)


def test_an_unknown_source_is_a_usage_error(adapter_env: dict[str, str]) -> None:
    result = run_cli(["--source", "ja", "-"], adapter_env, SHORT.encode())
    assert result.returncode == 2 and b"zh-Hant" in result.stderr


def test_version_names_the_runtime_the_model_and_its_bundle_hash(
    adapter_env: dict[str, str], startup: Startup, tiny_bundle_dir: Path
) -> None:
    manifest = load_bundle(tiny_bundle_dir, verify_hashes=False)
    result = run_cli(["--version"], adapter_env, SHORT.encode())
    assert result.returncode == 0 and result.stderr == b""
    first, second = result.stdout.decode().splitlines()
    assert first.startswith("zh-en-translate-function 0.1.0 (Python ")  # pyproject.toml's version
    assert second.startswith(f"model {manifest.name}, bundle {manifest.bundle_hash()} ")
    assert startup.service is not None and startup.service.info()["bundle_hash"] == manifest.bundle_hash()


# --- several files, a folder, -O DIR ----------------------------------------------------------------------------


def test_several_files_into_an_output_folder(tmp_path: Path, adapter_env: dict[str, str], startup: Startup) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.txt").write_bytes(SHORT.encode("gb18030"))
    subtitles = "1\n00:00:01,000 --> 00:00:02,000\n你好，世界。\n"
    (inputs / "b.srt").write_text(subtitles, encoding="utf-8")
    out = tmp_path / "out"
    result = run_cli(["-O", str(out), str(inputs / "a.txt"), str(inputs / "b.srt")], adapter_env)
    assert result.returncode == 0 and result.stderr == b"", result.stderr.decode()
    assert sorted(path.name for path in out.iterdir()) == ["a.txt", "b.srt"]  # no temporary file left
    assert (out / "a.txt").read_bytes() == expected(startup, SHORT)
    assert (out / "b.srt").read_text(encoding="utf-8").startswith("1\n00:00:01,000 --> 00:00:02,000\n")
    assert (inputs / "a.txt").read_bytes() == SHORT.encode("gb18030")  # inputs untouched


def test_a_folder_with_a_bad_file_translates_the_rest(
    tmp_path: Path, adapter_env: dict[str, str], startup: Startup
) -> None:
    inputs = tmp_path / "in"
    (inputs / "sub").mkdir(parents=True)
    (inputs / "a.txt").write_text(SHORT, encoding="utf-8")
    (inputs / "bad.txt").write_bytes(b"\x00\x01\x02\x03")
    (inputs / "sub" / "c.txt").write_text("今天天气很好。\n", encoding="utf-8")
    (inputs / ".hidden").write_text("你好。\n", encoding="utf-8")
    out = tmp_path / "out"
    result = run_cli(["-O", str(out), str(inputs)], adapter_env)
    assert result.returncode == 1
    errors = result.stderr.decode().splitlines()
    assert len(errors) == 1 and errors[0].startswith(f"error: {inputs / 'bad.txt'}: ") and "looks binary" in errors[0]
    written = sorted(str(path.relative_to(out)) for path in out.rglob("*") if path.is_file())
    assert written == ["a.txt", os.path.join("sub", "c.txt")]
    assert (out / "a.txt").read_bytes() == expected(startup, SHORT)
    assert (out / "sub" / "c.txt").read_bytes() == expected(startup, "今天天气很好。\n")


def test_the_worst_failure_is_the_exit_status(tmp_path: Path, adapter_env: dict[str, str]) -> None:
    (tmp_path / "bad.txt").write_bytes(b"\x00\x01")
    (tmp_path / "long.txt").write_text(LONG, encoding="utf-8")
    result = run_cli(
        ["--timeout", "0.001", "-O", str(tmp_path / "out"), str(tmp_path / "bad.txt"), str(tmp_path / "long.txt")],
        adapter_env,
    )
    assert result.returncode == 75  # a missed deadline is worse than a bad file
    assert result.stderr.decode().count("error: ") == 2


@pytest.mark.parametrize(
    ("layout", "problem"),
    [
        ("same folder", "holds the input"),
        ("input folder", "is the input folder"),
        ("several without -O", "several files need an output folder"),
        ("folder without -O", "is a folder: give an output folder with -O DIR"),
        ("stdin", "stdin (-) has no name there"),
        ("with -o", "-o does not go with it"),
        ("same names", "would both be written to"),
    ],
)
def test_output_folders_that_could_overwrite_or_confuse_are_refused(
    layout: str, problem: str, tmp_path: Path, adapter_env: dict[str, str]
) -> None:
    inputs = tmp_path / "in"
    (inputs / "other").mkdir(parents=True)
    (inputs / "a.txt").write_text(SHORT, encoding="utf-8")
    (inputs / "other" / "a.txt").write_text(SHORT, encoding="utf-8")
    a, out = str(inputs / "a.txt"), str(tmp_path / "out")
    args = {
        "same folder": ["-O", str(inputs), a],
        "input folder": ["-O", str(inputs), str(inputs)],
        "several without -O": [a, str(inputs / "other" / "a.txt")],
        "folder without -O": [str(inputs)],
        "stdin": ["-O", out, "-"],
        "with -o": ["-O", out, "-o", str(tmp_path / "x.txt"), a],
        "same names": ["-O", out, a, str(inputs / "other" / "a.txt")],
    }[layout]
    before = sorted((str(path), path.read_bytes()) for path in inputs.rglob("*.txt"))
    result = run_cli(args, adapter_env)
    assert result.returncode == 2 and problem in result.stderr.decode(), result.stderr.decode()
    assert sorted((str(path), path.read_bytes()) for path in inputs.rglob("*.txt")) == before
    assert not (tmp_path / "out").exists()


def test_scores_into_an_output_folder_are_json_lines(tmp_path: Path, adapter_env: dict[str, str]) -> None:
    (tmp_path / "a.txt").write_text(SHORT, encoding="utf-8")
    result = run_cli(["--scores", "-O", str(tmp_path / "out"), str(tmp_path / "a.txt")], adapter_env)
    assert result.returncode == 0, result.stderr.decode()
    lines = (tmp_path / "out" / "a.txt").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[-1])["segments"] == len(lines) - 1
