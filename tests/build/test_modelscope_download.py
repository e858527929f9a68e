"""``make model MODEL=damo/nlp_csanmt_translation_zh2en``: the id is checked with ModelScope, then downloaded with
modelscope's own ``snapshot_download``, offline, against a stand-in of the hub on loopback.

GIVEN a stand-in ModelScope hub (``http.server`` in a thread) that answers the two calls modelscope's
``snapshot_download`` makes (``GET /api/v1/models/<id>/repo/files`` for the file list, then
``GET /api/v1/models/<id>/repo?Revision=...&FilePath=...`` for each file) with a tiny random CSANMT folder
WHEN make model's two steps run with ``MODELSCOPE_ENDPOINT`` pointing at it (``build.hub_check``, then
``python -m build.export --model damo/nlp_csanmt_translation_zh2en``)
THEN every file is fetched from the stand-in, the bundle is written, declares the CSANMT family and loads; an id
the hub does not know and a hub that cannot be reached are refused with what to do instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import pytest

from tests.csanmt import oracle
from tests.csanmt.conftest import tiny_request

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL_ID = "damo/nlp_csanmt_translation_zh2en"
MODELS_API = "/api/v1/models/"


@dataclass
class StandInHub:
    """Serves one ModelScope model (``model_id``) from ``folder``; records every path asked for."""

    model_id: str
    folder: Path
    requests: list[str] = field(default_factory=list)

    def files(self) -> list[dict[str, object]]:
        return [
            {
                "Path": path.relative_to(self.folder).as_posix(),
                "Name": path.name,
                "Type": "blob",
                "Size": path.stat().st_size,
                "Sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            }
            for path in sorted(self.folder.rglob("*"))
            if path.is_file()
        ]

    def answer(self, url: str) -> tuple[int, bytes, str]:
        """(status, body, content type) for a GET."""
        parsed = urlparse(url)
        query = parse_qs(parsed.query)
        route = unquote(parsed.path)
        model_prefix = f"{MODELS_API}{self.model_id}/"
        if not route.startswith(model_prefix):
            return 404, b'{"Code": 404, "Message": "model not found"}', "application/json"
        action = route[len(model_prefix) :]
        if action == "repo/files":
            body = {"Code": 200, "Success": True, "Data": {"Files": self.files()}}
            return 200, json.dumps(body).encode(), "application/json"
        if action == "repo" and "FilePath" in query:
            path = (self.folder / query["FilePath"][0]).resolve()
            if path.is_file() and self.folder.resolve() in path.parents:
                return 200, path.read_bytes(), "application/octet-stream"
        return 404, b'{"Code": 404, "Message": "file not found"}', "application/json"


@pytest.fixture(scope="module")
def tiny_csanmt_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random CSANMT folder in ModelScope's layout, written by modelscope's own model code."""
    folder = tmp_path_factory.mktemp("modelscope-repo") / "nlp_csanmt_translation_zh2en"
    oracle.make_tiny(folder, tiny_request())
    return folder


@pytest.fixture
def hub(tiny_csanmt_folder: Path) -> Iterator[tuple[str, StandInHub]]:
    """(endpoint, stand-in) of a ModelScope hub on loopback that holds ``MODEL_ID``."""
    stand_in = StandInHub(MODEL_ID, tiny_csanmt_folder)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            stand_in.requests.append(self.path)
            status, body, content_type = stand_in.answer(self.path)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", stand_in
    finally:
        server.shutdown()
        server.server_close()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _environ(tmp_path: Path, endpoint: str) -> dict[str, str]:
    """No Hugging Face hub and no user files: only the stand-in, with modelscope's cache and home in ``tmp_path``."""
    return {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "MODELSCOPE_ENDPOINT": endpoint,
        "MODELSCOPE_CACHE": str(tmp_path / "modelscope-cache"),
        "HF_ENDPOINT": f"http://127.0.0.1:{_closed_port()}",
        "HF_HUB_OFFLINE": "1",
        "HUB_CHECK_TIMEOUT_S": "5",
    }


def _run(module: str, *args: str, environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=environ,
        timeout=600,
    )


def test_make_models_steps_download_a_modelscope_id_and_write_a_bundle_that_loads(
    hub: tuple[str, StandInHub], tiny_csanmt_folder: Path, tmp_path: Path
) -> None:
    from handler.config import RuntimeConfig
    from handler.model.loader import load_model

    endpoint, stand_in = hub
    environ = _environ(tmp_path, endpoint)
    checked = _run("build.hub_check", MODEL_ID, environ=environ)
    assert checked.returncode == 0, checked.stderr
    assert _run("build.families", MODEL_ID, environ=environ).stdout.strip() == "csanmt"  # the image build's choice

    out_dir = tmp_path / "bundle"
    exported = _run("build.export", "--model", MODEL_ID, "--out", str(out_dir), environ=environ)
    assert exported.returncode == 0, exported.stdout[-3000:] + exported.stderr[-3000:]
    assert f"loading {MODEL_ID} (csanmt)" in exported.stdout

    fetched = {parse_qs(urlparse(path).query)["FilePath"][0] for path in stand_in.requests if "FilePath=" in path}
    assert fetched == {entry["Path"] for entry in stand_in.files()}
    downloaded = list((tmp_path / "modelscope-cache").rglob("configuration.json"))  # modelscope's own cache
    assert len(downloaded) == 1
    assert downloaded[0].read_bytes() == (tiny_csanmt_folder / "configuration.json").read_bytes()

    manifest = json.loads((out_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["family"] == "csanmt" and manifest["source_model"] == MODEL_ID
    loaded = load_model(RuntimeConfig(bundle_dir=out_dir, threads=1))
    assert loaded.manifest.family == "csanmt"


def test_an_id_the_hub_does_not_know_is_refused_before_installing_and_by_the_export(
    hub: tuple[str, StandInHub], tmp_path: Path
) -> None:
    endpoint, _ = hub
    environ = _environ(tmp_path, endpoint)
    unknown = "damo/nlp_csanmt_translation_xx2en"
    checked = _run("build.hub_check", unknown, environ=environ)
    assert checked.returncode == 2
    assert f"ModelScope ({endpoint}) has no model {unknown!r} this machine may read (HTTP 404)" in checked.stderr
    assert f"modelscope download {unknown} --local-dir DIR" in checked.stderr

    exported = _run("build.export", "--model", unknown, "--out", str(tmp_path / "bundle"), environ=environ)
    assert exported.returncode == 1
    assert f"error: cannot download {unknown!r} from ModelScope" in exported.stderr
    assert f"modelscope download {unknown} --local-dir DIR" in exported.stderr
    assert "Traceback" not in exported.stderr and not (tmp_path / "bundle").exists()


def test_an_unreachable_modelscope_is_named(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{_closed_port()}"
    checked = _run("build.hub_check", MODEL_ID, environ=_environ(tmp_path, closed))
    assert checked.returncode == 2
    assert f"make model: MODEL={MODEL_ID}: cannot reach ModelScope at {closed}" in checked.stderr
    assert "Nothing was installed" in checked.stderr
