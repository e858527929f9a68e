"""The front door: the Makefile's targets, .ci/run, the local server script behind `make run`, and the README."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from handler import config as runtime_config
from tests.local_run import serve_and_translate
from tests.ship.dockerfile_model import REPO_ROOT

MAKEFILE = REPO_ROOT / "Makefile"
README = REPO_ROOT / "README.md"
TARGETS = (
    "run test lint model train eval bench image image-gcp image-check deploy-aws deploy-gcp deploy-cloudrun lock "
    "clean".split()
)  # issue 5's list, and issue 21's


def _make(*args: str, **environ: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO_ROOT), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **environ},
        timeout=60,
    )


def test_makefile_has_every_documented_target() -> None:
    rules = set(re.findall(r"^([A-Za-z][\w-]*):", MAKEFILE.read_text(), flags=re.MULTILINE))
    assert set(TARGETS) <= rules, f"missing targets: {sorted(set(TARGETS) - rules)}"
    help_text = _make("help").stdout
    for target in TARGETS:
        assert f"make {target}" in help_text or f"{target} " in help_text, f"`make help` does not mention {target}"


def test_make_model_without_a_model_says_how_to_call_it() -> None:
    result = _make("model")
    assert result.returncode != 0
    assert "usage: make model MODEL=<checkpoint folder or hub id>" in result.stdout


def test_make_deploy_aws_prints_the_sam_commands_without_running_them() -> None:
    result = _make("deploy-aws", INPUT_BUCKET="in-bucket", OUTPUT_BUCKET="out-bucket")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    build = "sam build --template-file infra/aws/template.yaml --parameter-overrides Bundle=model_artifacts/default"
    assert build in lines
    deploy = next(line for line in lines if line.startswith("sam deploy"))
    assert "InputBucketName=in-bucket" in deploy and "OutputBucketName=out-bucket" in deploy
    assert deploy.endswith("Bundle=model_artifacts/default")


def test_make_deploy_gcp_prints_the_gcloud_commands_without_running_them() -> None:
    result = _make("deploy-gcp", GCP_PROJECT="p", INPUT_BUCKET="in-bucket", OUTPUT_BUCKET="out-bucket")
    assert result.returncode == 0, result.stderr
    deploys = [line for line in result.stdout.splitlines() if line.startswith("gcloud functions deploy")]
    assert len(deploys) == 3  # HTTP, uploads, and the fan-out's parts


def test_make_train_preloads_jemalloc_when_present(tmp_path: Path) -> None:
    venv = tmp_path / "venv"  # a stand-in environment whose python reports how it was started
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text('#!/bin/sh\necho "LD_PRELOAD=$LD_PRELOAD python $*"\n')
    (venv / "bin" / "python").chmod(0o755)
    (venv / ".installed-dev").touch()
    jemalloc = tmp_path / "libjemalloc.so.2"
    jemalloc.touch()
    result = _make("train", f"VENV={venv}", f"JEMALLOC={jemalloc}", "TRAIN_ARGS=--finalize")
    assert result.returncode == 0, result.stderr
    assert f"LD_PRELOAD={jemalloc} python -m build.training.train --finalize" in result.stdout.splitlines()


@pytest.fixture
def fake_make(tmp_path: Path) -> Path:
    """A `make` that logs its arguments and fails for `lint`."""
    log = tmp_path / "make.log"
    fake = tmp_path / "bin" / "make"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$*" >> {log}\n[ "$1" != lint ]\n')
    fake.chmod(0o755)
    return fake


def test_ci_runs_tests_lint_and_the_image_journey_and_fails_when_one_fails(fake_make: Path) -> None:
    result = subprocess.run(
        ["bash", str(REPO_ROOT / ".ci" / "run")],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{fake_make.parent}:{os.environ['PATH']}"},
        stdin=subprocess.DEVNULL,
    )
    assert (fake_make.parent.parent / "make.log").read_text().splitlines() == ["test", "lint", "image-check"]
    assert result.returncode == 1
    assert "::: make test passed" in result.stdout and "::: make lint FAILED" in result.stdout
    assert "::: make image-check passed" in result.stdout


@pytest.mark.slow
def test_local_run_script_serves_the_page_and_translates(tiny_bundle_dir: Path) -> None:
    """`make run` = infra/local/run.sh in .venv-run; here in the test environment, with the tiny bundle."""
    answer = serve_and_translate(tiny_bundle_dir, "今天天气很好，我们去公园散步吧。")  # tiny model: "你好" ends at once
    assert answer["translation"].strip()


CONFIGURATION_PAGE = REPO_ROOT / "docs" / "configuration.md"
# read by functions-framework itself, through handler/adapters/gunicorn_server.py
FUNCTIONS_FRAMEWORK_VARIABLES = {"WORKERS", "THREADS", "GUNICORN_LOG_LEVEL"}
_READ_IN_PYTHON = re.compile(
    r"""(?:environ|env)(?:\.get|\.setdefault)?\(\s*["']([A-Z][A-Z0-9_]+)["']|environ\[["']([A-Z][A-Z0-9_]+)["']"""
)
_ENV_CONSTANT = re.compile(r"""^\w*ENV\w* = ["']([A-Z][A-Z0-9_]+)["']""", re.M)
_READ_IN_SHELL = re.compile(r"\$\{([A-Z][A-Z0-9_]+):-")


def variables_the_code_reads() -> set[str]:
    """Every environment variable handler/ and the infra scripts read (not those a script assigns itself)."""
    found = set(FUNCTIONS_FRAMEWORK_VARIABLES)
    for path in (REPO_ROOT / "handler").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        found |= {a or b for a, b in _READ_IN_PYTHON.findall(text)} | set(_ENV_CONSTANT.findall(text))
    for path in (REPO_ROOT / "infra").rglob("*.sh"):
        text = path.read_text(encoding="utf-8")
        # a script's own variable is assigned from something else; `NAME="${NAME:-default}"` reads NAME
        local = {
            name
            for name, value in re.findall(r"^\s*(?:local\s+)?([A-Z][A-Z0-9_]+)=(.*)$", text, re.M)
            if not value.startswith(f'"${{{name}:-')
        }
        found |= set(_READ_IN_SHELL.findall(text)) - local
    return found


def test_every_variable_the_code_reads_is_documented() -> None:
    page = CONFIGURATION_PAGE.read_text(encoding="utf-8")
    read = variables_the_code_reads()
    assert {value for name, value in vars(runtime_config).items() if name.startswith("ENV_")} <= read
    assert {"GUNICORN_KEEPALIVE", "MALLOC_ARENA_MAX", "ORT_DISABLE_TELEMETRY", "STAGE_DIR", "FUNCTION_TARGET"} <= read
    missing = sorted(variable for variable in read if f"`{variable}`" not in page)
    assert not missing, f"docs/configuration.md does not document {missing}"


def test_readme_is_a_front_door_naming_only_real_make_targets() -> None:
    readme = README.read_text()
    assert len(readme.splitlines()) <= 200
    rules = set(re.findall(r"^([A-Za-z][\w-]*):", MAKEFILE.read_text(), flags=re.MULTILINE))
    for page in (README, *sorted((REPO_ROOT / "docs").glob("*.md"))):
        text = page.read_text(encoding="utf-8")
        mentioned = set(re.findall(r"`make ([a-z][\w-]*)", text)) | set(re.findall(r"^make ([a-z][\w-]*)", text, re.M))
        assert mentioned <= rules, f"{page.name} mentions make targets that do not exist: {sorted(mentioned - rules)}"
    first_commands = re.findall(r"^make \w+", readme, flags=re.MULTILINE)[:2]
    assert first_commands == ["make run", "make test"], "the two quick-start commands come first"
    # every docs page the README links to exists, and every page of docs/ is linked from it
    linked = set(re.findall(r"\(docs/([\w.-]+\.md)\)", readme))
    pages = {p.name for p in (REPO_ROOT / "docs").glob("*.md")}
    assert linked == pages, f"README links missing {sorted(linked - pages)}, does not link {sorted(pages - linked)}"
