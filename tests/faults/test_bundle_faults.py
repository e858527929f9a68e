"""A corrupt, truncated or mismatched bundle, and a bad setting, through the real local server (`make run`'s
infra/local/run.sh, functions-framework on main.py):

* the cold start fails at once, and run.sh prints "START FAILED" with a message naming the file (or the
  variable), never "ready";
* the server stays up and answers ``POST /translate`` 503 ``bundle_invalid`` (a bad setting: 500
  ``configuration_error``) with that message, and ``GET /healthz`` 503, request after request;
* nothing crash-loops: the process keeps running and the load is attempted once, not once per request.

All the servers start at once (one module-scoped fixture) so that their cold starts overlap: about 20 s on
2 busy cores for the eight of them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from handler.config import ENV_BUNDLE_DIR, ENV_MAX_CHARS, ENV_THREADS
from handler.model import bundle
from tests.faults.run_script import READY, START_FAILED, LocalRun

pytestmark = pytest.mark.slow


def _rewrite_manifest(folder: Path, change: Callable[[dict], None]) -> None:  # type: ignore[type-arg]
    path = folder / bundle.MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    change(manifest)
    path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def _replace_listed_file(folder: Path, name: str, data: bytes) -> None:
    """Replace a bundle file and record its new hash and size: only loading it can tell it is bad."""
    (folder / name).write_bytes(data)
    entry = bundle.file_entry(folder / name)

    def record(manifest: dict) -> None:  # type: ignore[type-arg]
        manifest["files"][name] = {"sha256": entry.sha256, "bytes": entry.bytes}

    _rewrite_manifest(folder, record)


def flip_a_byte(folder: Path) -> None:
    path = folder / bundle.DECODER_ONNX
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def truncate_encoder(folder: Path) -> None:
    path = folder / bundle.ENCODER_ONNX
    path.write_bytes(path.read_bytes()[:1000])


def future_format(folder: Path) -> None:
    _rewrite_manifest(folder, lambda manifest: manifest.update(format_version=bundle.FORMAT_VERSION + 1))


def remove_decoder_weights(folder: Path) -> None:
    (folder / bundle.weights_file(bundle.DECODER_ONNX)).unlink()


def truncate_manifest(folder: Path) -> None:
    path = folder / bundle.MANIFEST
    path.write_bytes(path.read_bytes()[:200])


def garbage_encoder_graph(folder: Path) -> None:
    _replace_listed_file(folder, bundle.ENCODER_ONNX, b"this is not an ONNX graph\n" * 40)


def garbage_source_tokenizer(folder: Path) -> None:
    _replace_listed_file(folder, bundle.SOURCE_SPM, b"\x00\x01 not a SentencePiece model " * 20)


@dataclass(frozen=True)
class Case:
    corrupt: Callable[[Path], None]
    named_file: str
    says: str  # a phrase of the message


CASES = {
    "hash mismatch": Case(flip_a_byte, bundle.DECODER_ONNX, "was modified or corrupted"),
    "truncated graph": Case(truncate_encoder, bundle.ENCODER_ONNX, "truncated"),
    "format version": Case(future_format, bundle.MANIFEST, "format version"),
    "missing file": Case(remove_decoder_weights, bundle.weights_file(bundle.DECODER_ONNX), "missing"),
    "manifest not JSON": Case(truncate_manifest, bundle.MANIFEST, "cannot be read"),
    "graph does not load": Case(garbage_encoder_graph, bundle.ENCODER_ONNX, "ONNX"),
    "tokenizer does not load": Case(garbage_source_tokenizer, bundle.SOURCE_SPM, "SentencePiece"),
}
BAD_SETTING = "bad setting"


@pytest.fixture(scope="module")
def servers(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LocalRun]]:
    started: dict[str, LocalRun] = {}
    try:
        for name, case in CASES.items():
            folder = tmp_path_factory.mktemp("bad-bundle") / "bundle"
            shutil.copytree(tiny_bundle_dir, folder)
            case.corrupt(folder)
            started[name] = LocalRun.start({ENV_BUNDLE_DIR: str(folder), ENV_THREADS: "1"})
        started[BAD_SETTING] = LocalRun.start(
            {ENV_BUNDLE_DIR: str(tiny_bundle_dir), ENV_THREADS: "1", ENV_MAX_CHARS: "abc"}
        )
        for server in started.values():
            server.wait_for_verdict()
        yield started
    finally:
        for server in started.values():
            server.interrupt()
        for server in started.values():
            server.stop(grace_s=5)  # these tests are about the start, not about Ctrl+C (tests/ship has that)


@pytest.mark.parametrize("name", list(CASES))
def test_a_bad_bundle_fails_the_start_naming_the_file_and_answers_503(servers: dict[str, LocalRun], name: str) -> None:
    case, server = CASES[name], servers[name]
    printed = server.output
    # run.sh says why, naming the file, and never says "ready"
    verdict = START_FAILED.search(printed)
    assert verdict is not None and not READY.search(printed), printed
    assert "ready" not in printed.lower(), printed
    assert verdict["code"] == "bundle_invalid" and verdict["severity"] == "ERROR" and verdict["status"] == 503, printed
    assert case.named_file in verdict["message"] and case.says in verdict["message"], printed
    # every request gets the same reason, and the server stays up
    for _ in range(3):
        status, answer = server.call("POST", "/translate", {"text": "你好"})
        assert status == 503, answer
        assert answer["error"]["code"] == "bundle_invalid"
        assert case.named_file in answer["error"]["message"]
        assert "Traceback" not in json.dumps(answer)
    status, health = server.call("GET", "/healthz")
    assert status == 503 and health["warm"] is False
    assert health["error"]["code"] == "bundle_invalid" and case.named_file in health["error"]["message"]
    assert server.alive, "the server exited: a platform would restart it in a loop"
    # the load was tried once at the cold start, not once per request
    assert server.output.count("model did not load") == 1, server.output


def test_a_bad_setting_fails_the_start_naming_the_variable_and_answers_500(servers: dict[str, LocalRun]) -> None:
    server = servers[BAD_SETTING]
    printed = server.output
    verdict = START_FAILED.search(printed)
    assert verdict is not None and "ready" not in printed.lower(), printed
    assert verdict["code"] == "configuration_error" and verdict["severity"] == "ERROR" and verdict["status"] == 500
    assert verdict["message"] == f"{ENV_MAX_CHARS}='abc' is not an integer"
    status, answer = server.call("POST", "/translate", {"text": "你好"})
    assert status == 500, answer
    assert answer["error"] == {"code": "configuration_error", "message": f"{ENV_MAX_CHARS}='abc' is not an integer"}
    status, health = server.call("GET", "/healthz")
    assert status == 503 and health["error"]["code"] == "configuration_error"
    assert server.alive
