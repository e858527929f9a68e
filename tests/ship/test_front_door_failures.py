"""Clear failures at the front door (issue 35): ``make image`` when the base image cannot be pulled, and ``make model``
with a hub id this machine cannot download, each saying what to do instead, before anything large is installed.

No network is needed: the engine is a stand-in that answers as docker or buildah answer when the registry is out of
reach, and the hub is a closed loopback port or a small server on loopback.
"""

from __future__ import annotations

import http.server
import os
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ship.dockerfile_model import REPO_ROOT

HUB_ID = "Helsinki-NLP/opus-mt-zh-en"
DOWNLOAD_ELSEWHERE = "download it where you have network and pass MODEL=<folder>"


# ---- make image without a reachable base image ---------------------------------------------------------------
# what the engines answer when the registry cannot be reached (BuildKit's docker build, buildah/podman)
DOCKER_PULL_FAILED = (
    "ERROR: failed to solve: python:3.11-slim: failed to resolve source metadata for "
    'docker.io/library/python:3.11-slim: failed to do request: Head "https://registry-1.docker.io/v2/library/python/'
    'manifests/3.11-slim": dial tcp: lookup registry-1.docker.io: no such host'
)
BUILDAH_PULL_FAILED = (
    "Error: creating build container: initializing source docker://python:3.11-slim: pinging container registry "
    'registry-1.docker.io: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host'
)
STEP_FAILED = (
    'ERROR: failed to solve: process "/bin/sh -c pip install -r requirements.txt" did not complete: exit code: 1'
)


def _engine(folder: Path, name: str, build_answer: str) -> dict[str, str]:
    """An environment whose only container engine is ``name``, failing every build with ``build_answer``."""
    folder.mkdir()
    script = folder / name
    script.write_text(
        f'#!/bin/bash\n[[ "$1" == info ]] && exit 0\necho "STEP 1/9: FROM python:3.11-slim"\n'
        f"echo {shlex.quote(build_answer)} >&2\nexit 1\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return {"PATH": f"{folder}:/usr/bin:/bin", "HOME": str(folder), "LANG": "C.UTF-8"}


def _make(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO_ROOT), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("engine", "answer", "target"),
    [("docker", DOCKER_PULL_FAILED, "image"), ("buildah", BUILDAH_PULL_FAILED, "image-gcp")],
)
def test_make_image_without_a_reachable_base_names_base_image_and_the_stand_in(
    tmp_path: Path, engine: str, answer: str, target: str
) -> None:
    result = _make(target, f"CONTAINER={engine}", env=_engine(tmp_path / "bin", engine, answer))
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert answer in output, "the engine's own message is kept"
    assert f"image.sh: {engine} could not pull the base image python:3.11-slim" in result.stderr
    assert f"make {target} BASE_IMAGE=<image>" in result.stderr
    assert "bash tests/journey/stand_in_base.sh" in result.stderr
    assert f"make {target} BASE_IMAGE=localhost/stand-in-python:3.11-slim" in result.stderr


def test_the_base_named_with_base_image_is_the_one_reported(tmp_path: Path) -> None:
    answer = BUILDAH_PULL_FAILED.replace("python:3.11-slim", "mirror.example/python:3.11-slim")
    environ = _engine(tmp_path / "bin", "buildah", answer)
    result = _make("image", "CONTAINER=buildah", "BASE_IMAGE=mirror.example/python:3.11-slim", env=environ)
    assert result.returncode != 0
    assert "could not pull the base image mirror.example/python:3.11-slim" in result.stderr


def test_a_build_failing_for_another_reason_is_not_blamed_on_the_base(tmp_path: Path) -> None:
    result = _make("image", "CONTAINER=docker", env=_engine(tmp_path / "bin", "docker", STEP_FAILED))
    assert result.returncode != 0
    assert STEP_FAILED in result.stdout + result.stderr
    assert "BASE_IMAGE" not in result.stderr


# ---- make model with a hub id that cannot be downloaded here --------------------------------------------------
def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when the block ends: connections are refused


class _Hub(http.server.BaseHTTPRequestHandler):
    known = {f"/api/models/{HUB_ID}"}

    def do_GET(self) -> None:  # noqa: N802 - the handler's protocol
        found = self.path in self.known
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"id": "Helsinki-NLP/opus-mt-zh-en"}' if found else b'{"error": "Repository not found"}')

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture
def hub() -> Iterator[str]:
    """A hub on loopback that knows one model."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _hub_env(tmp_path: Path, **environ: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HOME": str(tmp_path / "hf"), **environ}


def _check(model: str, environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "build.hub_check", model, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
    )


def test_make_model_with_an_unreachable_hub_says_how_to_build_from_a_folder_before_installing(tmp_path: Path) -> None:
    venv = tmp_path / "venv"  # the build environment make model would install: it must not be
    environ = _hub_env(tmp_path, HF_ENDPOINT=f"http://127.0.0.1:{_closed_port()}")
    result = _make("model", f"MODEL={HUB_ID}", f"VENV={venv}", env=environ)
    assert result.returncode != 0
    assert not venv.exists(), "the build environment was installed before the hub was asked"
    assert f"make model: MODEL={HUB_ID}: cannot reach the Hugging Face hub at http://127.0.0.1:" in result.stderr
    assert DOWNLOAD_ELSEWHERE in result.stderr
    assert f"hf download {HUB_ID} --local-dir opus-mt-zh-en" in result.stderr
    assert "make model MODEL=opus-mt-zh-en NAME=opus-mt-zh-en" in result.stderr
    assert "installing requirements" not in result.stdout


def test_a_hub_id_the_hub_does_not_know_is_named_so(tmp_path: Path, hub: str) -> None:
    result = _check("Helsinki-NLP/opus-mt-zh-xx", _hub_env(tmp_path, HF_ENDPOINT=hub))
    assert result.returncode == 2
    assert "has no model 'Helsinki-NLP/opus-mt-zh-xx' this machine may read (HTTP 404)" in result.stderr
    assert DOWNLOAD_ELSEWHERE in result.stderr


def test_a_hub_id_the_hub_answers_for_goes_on(tmp_path: Path, hub: str) -> None:
    result = _check(HUB_ID, _hub_env(tmp_path, HF_ENDPOINT=hub))
    assert result.returncode == 0, result.stderr


def test_a_hub_id_in_the_cache_goes_on_without_the_hub(tmp_path: Path) -> None:
    snapshot = tmp_path / "hf" / "hub" / "models--Helsinki-NLP--opus-mt-zh-en" / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}", encoding="utf-8")
    closed = f"http://127.0.0.1:{_closed_port()}"
    assert _check(HUB_ID, _hub_env(tmp_path, HF_ENDPOINT=closed)).returncode == 0
    assert _check(HUB_ID, _hub_env(tmp_path, HF_HUB_OFFLINE="1")).returncode == 0


def test_offline_mode_without_the_model_in_the_cache_says_so(tmp_path: Path) -> None:
    result = _check(HUB_ID, _hub_env(tmp_path, HF_HUB_OFFLINE="1"))
    assert result.returncode == 2
    assert "HF_HUB_OFFLINE is set" in result.stderr and DOWNLOAD_ELSEWHERE in result.stderr


def test_a_folder_skips_the_check_and_a_missing_one_is_named(tmp_path: Path) -> None:
    environ = _hub_env(tmp_path, HF_ENDPOINT=f"http://127.0.0.1:{_closed_port()}")
    assert _check("model_artifacts/training-checkpoint", environ).returncode == 0
    assert _check(str(tmp_path), environ).returncode == 0
    missing = _check("./opus-mt-zh-en", environ)
    assert missing.returncode == 2 and "MODEL=./opus-mt-zh-en: no such folder" in missing.stderr


def test_a_csanmt_id_is_sent_to_modelscope(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{_closed_port()}"
    environ = _hub_env(tmp_path, HF_ENDPOINT=closed, MODELSCOPE_ENDPOINT=closed)  # tests/build/: a ModelScope stand-in
    result = _check("damo/nlp_csanmt_translation_zh2en", environ)
    assert result.returncode == 2
    assert "modelscope download damo/nlp_csanmt_translation_zh2en --local-dir DIR" in result.stderr
    assert _check("someone/marian-like", environ, "--family", "csanmt").returncode == 2


def test_the_check_needs_only_the_standard_library() -> None:
    # make model runs it with the system python3, before any environment exists
    heavy = "('numpy', 'torch', 'transformers', 'huggingface_hub')"
    code = f"import sys, build.hub_check; print(sorted(m for m in {heavy} if m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, env={**os.environ}, timeout=60
    )
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stdout + result.stderr
