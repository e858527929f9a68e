"""The README's quick start and client snippets, and every example of docs/*.md that shows what it prints, run as
written in a fresh clone (issues 35 and 42).

A new user clones the repository and types what the README shows, in order: ``make run``, then in a second
terminal the ``curl`` call and the command line, then the DeepL and LibreTranslate clients. The blocks are found by
the names in their info strings (```` ```sh runs=NAME ````, ``tests/ship/readme_blocks.py``) and run literally in
a ``git clone`` of this checkout with the README under test copied over it (so an edit is tested before it is
committed, and a file it names that is not committed fails). Two things differ from a user's machine, both said
here: the server listens on a free port (``PORT=... make run``, as the README offers) and the blocks'
``127.0.0.1:8080`` become that port; and the clone's ``.venv-run`` is this checkout's, made by the same
``make run-env`` that ``make run`` runs, so the test does not install the runtime a second time. ``make test`` in
the first block is this suite and is not run again. Each command must print what the comment under it shows.

The pages of ``docs/`` mark their examples the same way and are copied over the clone too, with ``examples/``: each
marked block runs against the same server, a shell block command by command (``curl`` also reporting its status,
for a shown ``400 {...}``), a Python block whole with the test environment's clients; ``...`` in a shown output
stands for any text (``tests/ship/readme_blocks.py``). Every block of ``docs/`` that calls the server is marked.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.load.served_function import READY_EVENT, START_FAILED_EVENT, free_port, run_events
from tests.ship.dockerfile_model import REPO_ROOT
from tests.ship.readme_blocks import Block, runnable_blocks, same_text, shown_json, shows

pytestmark = [pytest.mark.slow, pytest.mark.shipped_model]

README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
SHOWN_ADDRESS = "127.0.0.1:8080"
RUN_ENVIRONMENT = ".venv-run"  # what make run builds; the README's command line must work with it alone
LOCKS_OF_THE_RUN_ENVIRONMENT = ("requirements/runtime-gcp.txt", "requirements/csanmt.txt")
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def user_environment() -> dict[str, str]:
    """This process's environment without what a user's shell would not have: the suite's settings, an outer
    make's flags (``make test PYTEST_ARGS=...`` would pass its variables on), an activated environment."""
    dropped = {"MFLAGS", "PYTHONPATH", "VIRTUAL_ENV", "PORT", "HOST"}
    return {
        key: value
        for key, value in os.environ.items()
        if key not in dropped and not key.startswith(("TRANSLATE_", "MAKE"))
    }


@dataclass(frozen=True)
class FreshClone:
    root: Path
    blocks: dict[str, Block]
    port: int

    def on_our_port(self, block: Block) -> str:
        assert SHOWN_ADDRESS in block.body, f"block {block.name} no longer calls {SHOWN_ADDRESS}"
        return block.body.replace(SHOWN_ADDRESS, f"127.0.0.1:{self.port}")


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory: pytest.TempPathFactory) -> FreshClone:
    root = tmp_path_factory.mktemp("readme") / "zh-en-translate-function"
    subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(root)], check=True, timeout=300)
    shutil.copyfile(README, root / "README.md")
    shutil.copytree(DOCS, root / "docs", dirs_exist_ok=True)
    shutil.copytree(REPO_ROOT / "examples", root / "examples", dirs_exist_ok=True)
    installed = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO_ROOT), "run-env"],
        capture_output=True,
        text=True,
        env=user_environment(),
        timeout=900,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    (root / RUN_ENVIRONMENT).symlink_to(REPO_ROOT / RUN_ENVIRONMENT, target_is_directory=True)
    for lock in LOCKS_OF_THE_RUN_ENVIRONMENT:  # a clone's files are newer than the environment's stamp
        made = (REPO_ROOT / lock).stat()
        os.utime(root / lock, ns=(made.st_atime_ns, made.st_mtime_ns))
    blocks = runnable_blocks(root / "README.md")
    assert {"quick-start", "try-it", "clients"} <= set(blocks), f"marked blocks: {sorted(blocks)}"
    return FreshClone(root, blocks, free_port())


@pytest.fixture(scope="module")
def served(fresh_clone: FreshClone) -> Iterator[str]:
    """The quick start's first block: ``make run`` (``make test`` is this suite)."""
    commands = [command.text for command in fresh_clone.blocks["quick-start"].commands()]
    assert commands == ["make run", "make test"], commands
    log_path = fresh_clone.root.parent / "make-run.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            ["bash", "-c", commands[0]],
            cwd=fresh_clone.root,
            env={**user_environment(), "PORT": str(fresh_clone.port)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{fresh_clone.port}/"
    try:
        deadline = time.monotonic() + 300
        while True:
            printed = log_path.read_text(encoding="utf-8", errors="replace")
            verdicts = [event for event in run_events(printed) if event["event"] in (READY_EVENT, START_FAILED_EVENT)]
            if verdicts:
                assert verdicts[0]["event"] == READY_EVENT, printed
                assert f"open {url}" in verdicts[0]["message"], printed  # make run prints the URL
                break
            assert server.poll() is None, f"make run stopped:\n{printed}"
            assert time.monotonic() < deadline, f"make run was not ready within 300 s:\n{printed}"
            time.sleep(0.2)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGINT)  # Ctrl+C
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def test_the_quick_start_call_and_command_line_run_as_written(fresh_clone: FreshClone, served: str) -> None:
    block = fresh_clone.blocks["try-it"]
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", fresh_clone.on_our_port(block)],
        cwd=fresh_clone.root,
        capture_output=True,
        text=True,
        env=user_environment(),
        timeout=300,
    )
    assert result.returncode == 0, f"exit {result.returncode}:\n{result.stdout}\n{result.stderr}"
    curl, command_line = block.commands()
    assert curl.text.startswith("curl ") and curl.prints, "the block starts with the curl call and what it prints"
    answer = json.loads(result.stdout)  # curl's answer; the command line writes to its file
    assert shown_json(curl.prints).items() <= answer.items(), (curl.prints, answer)

    words = shlex.split(command_line.text)
    assert words[0] == f"{RUN_ENVIRONMENT}/bin/python", f"the command line runs in what make run built: {words}"
    assert words[-2] == ">", words
    source = (fresh_clone.root / words[-3]).read_text(encoding="utf-8")  # shipped: the clone has it
    english = (fresh_clone.root / words[-1]).read_text(encoding="utf-8")
    assert CJK.search(source), f"{words[-3]} is the Chinese example"
    paragraphs = [part for part in english.split("\n\n") if part.strip()]
    assert len(paragraphs) == len([part for part in source.split("\n\n") if part.strip()]), english
    assert not CJK.search(english) and all(re.search(r"[A-Za-z]{3}", part) for part in paragraphs), english


def test_the_client_snippets_print_what_they_show(fresh_clone: FreshClone, served: str) -> None:
    block = fresh_clone.blocks["clients"]
    shown = [command.prints for command in block.commands() if command.prints is not None]
    assert len(shown) >= 2, "the snippet shows what each client prints"
    result = subprocess.run(  # the unmodified clients, installed in the test environment (requirements/dev.in)
        [sys.executable, "-c", fresh_clone.on_our_port(block)],
        cwd=fresh_clone.root,
        capture_output=True,
        text=True,
        env=user_environment(),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == shown, result.stdout


# ---- the examples of docs/ ----------------------------------------------------------------------------------
_FENCED = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
CURL_STATUS = "curl() { command curl --write-out '%{stderr}HTTP_STATUS=%{http_code}\\n' \"$@\"; }\n"


def unmarked_server_examples(page: str) -> list[str]:
    """The fenced blocks of a page that call the local server without a ``runs=NAME`` to run them by."""
    return [
        match["body"][:120]
        for match in _FENCED.finditer(page)
        if SHOWN_ADDRESS in match["body"] and " runs=" not in match["info"]
    ]


def test_every_docs_example_that_calls_the_server_is_run() -> None:
    for page in sorted(DOCS.glob("*.md")):
        assert not unmarked_server_examples(page.read_text(encoding="utf-8")), page.name
    assert unmarked_server_examples("```sh\ncurl http://127.0.0.1:8080/\n```\n")


def _run_docs_block(clone: FreshClone, page: str, block: Block) -> list[str]:
    """What differs from what the block shows, each as a line for the failure message."""
    environ = user_environment()
    if block.language == "python":
        result = subprocess.run(
            [sys.executable, "-c", clone.on_our_port(block)],
            cwd=clone.root,
            capture_output=True,
            text=True,
            env=environ,
            timeout=300,
        )
        shown = "\n".join(c.prints for c in block.commands() if c.prints is not None)
        if result.returncode != 0 or not same_text(
            shown.replace(SHOWN_ADDRESS, f"127.0.0.1:{clone.port}"), result.stdout.strip()
        ):
            return [f"{page} {block.name}: exit {result.returncode}, printed\n{result.stdout}{result.stderr}"]
        return []
    problems = []
    for command in block.commands():
        text = command.text.replace(SHOWN_ADDRESS, f"127.0.0.1:{clone.port}")
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", CURL_STATUS + text],
            cwd=clone.root,
            capture_output=True,
            text=True,
            env=environ,
            timeout=300,
        )
        statuses = re.findall(r"^HTTP_STATUS=(\d{3})$", result.stderr, re.M)
        if result.returncode != 0:
            problems.append(f"{page} {block.name}: `{command.text}` exit {result.returncode}: {result.stderr}")
        elif command.prints is not None:
            shown = command.prints.replace(SHOWN_ADDRESS, f"127.0.0.1:{clone.port}")
            if not shows(shown, result.stdout, int(statuses[-1]) if statuses else None):
                problems.append(
                    f"{page} {block.name}: `{command.text}`\nshows   {shown}\nprinted {statuses} {result.stdout}"
                )
    return problems


def test_every_docs_example_prints_what_it_shows(fresh_clone: FreshClone, served: str) -> None:
    problems, ran = [], 0
    for page in sorted((fresh_clone.root / "docs").glob("*.md")):
        for block in runnable_blocks(page).values():
            problems += _run_docs_block(fresh_clone, page.name, block)
            ran += 1
    assert ran >= 8, f"only {ran} marked examples in docs/"
    assert not problems, "\n\n".join(problems)
