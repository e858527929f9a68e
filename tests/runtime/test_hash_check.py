"""The sha256 check of a bundle's files, hashed side by side and begun before the imports, still refuses every
damaged file before a start ends.

GIVEN a copy of the tiny bundle with files changed in place (same size)
WHEN the files are hashed on one thread or several, largest first, or begun early (``file_hashes.begin``, as
``handler.coldstart`` does for the environment's bundle before its imports)
THEN the refusal names the same file whatever the thread count (the first damaged one by name); a weight changed in
a way ONNX Runtime accepts (one byte of an initializer) still fails ``load_model``, which without the check loads it;
a digest begun early is used once, never for a file changed after it was begun, and never in a forked child (which
hashes again instead of waiting for its parent's threads); a cold start whose environment names a damaged bundle
fails with the hash's reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import onnx
import pytest

from handler.config import RuntimeConfig
from handler.errors import BundleError
from handler.model import bundle, file_hashes
from handler.model.loader import load_bundle, load_model, verify_file_hashes

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.fixture
def bundle_copy(tiny_bundle_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(tiny_bundle_dir, tmp_path / "bundle"))


def _flip_a_byte(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def _inside_the_largest_weight(graph: Path) -> int:
    """An offset in ``graph`` inside its largest initializer's bytes: changed there, the graph still loads."""
    model = onnx.load(str(graph), load_external_data=False)
    largest = max(model.graph.initializer, key=lambda tensor: len(tensor.raw_data))
    start = graph.read_bytes().find(largest.raw_data)
    assert start > 0 and len(largest.raw_data) > 64
    return start + len(largest.raw_data) // 2


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_the_first_damaged_file_by_name_is_named_whatever_the_threads(bundle_copy: Path, threads: int) -> None:
    manifest = load_bundle(bundle_copy, verify_hashes=False)
    verify_file_hashes(bundle_copy, manifest, threads=threads)  # the untouched copy passes
    names = sorted(manifest.files)
    for name in (names[-1], names[0]):  # the last and the first by name, both changed
        _flip_a_byte(bundle_copy / name, (bundle_copy / name).stat().st_size // 2)
    with pytest.raises(BundleError, match=rf"{names[0]} has sha256 [0-9a-f]{{64}}, but manifest\.json expects"):
        verify_file_hashes(bundle_copy, manifest, threads=threads)


def test_a_changed_weight_onnx_runtime_accepts_still_fails_the_start(bundle_copy: Path) -> None:
    encoder = bundle_copy / bundle.ENCODER_ONNX
    _flip_a_byte(encoder, _inside_the_largest_weight(encoder))
    load_model(RuntimeConfig(bundle_dir=bundle_copy, threads=1, verify_hashes=False))  # ONNX Runtime runs it
    with pytest.raises(BundleError, match=r"encoder\.onnx has sha256 [0-9a-f]{64}, but manifest\.json expects"):
        load_model(RuntimeConfig(bundle_dir=bundle_copy, threads=1))


@pytest.mark.parametrize(
    "size", [0, 1, file_hashes.WINDOW_BYTES - 1, file_hashes.WINDOW_BYTES, 2 * file_hashes.WINDOW_BYTES + 7]
)
def test_a_file_hashed_window_by_window_has_its_sha256(tmp_path: Path, size: int) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    (tmp_path / "file").write_bytes(data)
    assert file_hashes.sha256_of(tmp_path / "file") == hashlib.sha256(data).hexdigest()


def _wait_for_begun(folder: Path) -> None:
    for path, (_, future) in list(file_hashes._begun.items()):
        if path.parent == folder.resolve():
            future.result(timeout=60)


def test_digests_begun_early_are_used_once_and_never_for_a_changed_file(
    bundle_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = load_bundle(bundle_copy, verify_hashes=False)
    names = sorted(manifest.files)
    assert file_hashes.begin(bundle_copy) == len(names)
    _wait_for_begun(bundle_copy)
    # a file changed after its hash was begun (same size): hashed again, its new digest is what is judged
    changed = bundle_copy / bundle.ENCODER_ONNX
    _flip_a_byte(changed, _inside_the_largest_weight(changed))
    hashed_now: list[str] = []
    real = file_hashes.sha256_of

    def counted(path: Path) -> str:
        hashed_now.append(path.name)
        return real(path)

    monkeypatch.setattr(file_hashes, "sha256_of", counted)
    found = file_hashes.sha256s(bundle_copy, names)
    assert hashed_now == [bundle.ENCODER_ONNX]  # the others came from the early hashes
    assert found == {name: real(bundle_copy / name) for name in names}
    assert found[bundle.ENCODER_ONNX] != manifest.files[bundle.ENCODER_ONNX].sha256
    hashed_now.clear()
    file_hashes.sha256s(bundle_copy, names)
    assert sorted(hashed_now) == names  # used once: a second check hashes everything again


def test_a_forked_child_hashes_again_instead_of_waiting_for_its_parents_threads(bundle_copy: Path) -> None:
    names = sorted(load_bundle(bundle_copy, verify_hashes=False).files)
    never = Future[str]()  # a hash its thread was still computing when the process forked
    for name in names:
        path = (bundle_copy / name).resolve()
        file_hashes._begun[path] = (file_hashes._identity(path), never)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        signal.alarm(30)  # a child that waits for the parent's threads would wait forever
        os.close(read_end)
        os.write(write_end, json.dumps(file_hashes.sha256s(bundle_copy, names)).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        found = json.loads(pipe.read() or b"{}")
    os.waitpid(child, 0)
    assert found == {name: file_hashes.sha256_of(bundle_copy / name) for name in names}
    file_hashes._begun.clear()


def test_a_hash_begun_early_but_not_started_is_taken_back_and_done_now(bundle_copy: Path) -> None:
    names = sorted(load_bundle(bundle_copy, verify_hashes=False).files)
    waiting = {name: Future[str]() for name in names}  # queued behind the early thread, not started
    for name in names:
        path = (bundle_copy / name).resolve()
        file_hashes._begun[path] = (file_hashes._identity(path), waiting[name])
    pool = ThreadPoolExecutor(max_workers=1)
    try:  # it returns: it does not wait for them
        found = pool.submit(file_hashes.sha256s, bundle_copy, names).result(timeout=30)
    finally:
        pool.shutdown(wait=False)
    assert found == {name: file_hashes.sha256_of(bundle_copy / name) for name in names}
    assert all(future.cancelled() for future in waiting.values()) and not file_hashes._begun


COLD_START_OF_THE_ENVIRONMENTS_BUNDLE = """
import json
from handler.model import file_hashes
from handler import coldstart
begun = len(file_hashes._begun)
startup = coldstart.start()
print(json.dumps({"begun": begun, "left": len(file_hashes._begun), "error": str(startup.error or "")}))
"""


@pytest.mark.parametrize("damaged", [False, True])
def test_a_cold_start_hashes_the_environments_bundle_early_and_still_refuses_a_damaged_one(
    bundle_copy: Path, damaged: bool
) -> None:
    if damaged:
        encoder = bundle_copy / bundle.ENCODER_ONNX
        _flip_a_byte(encoder, _inside_the_largest_weight(encoder))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TRANSLATE_BUNDLE_DIR": str(bundle_copy)}
    env.pop("TRANSLATE_VERIFY_HASHES", None)
    completed = subprocess.run(
        [sys.executable, "-c", COLD_START_OF_THE_ENVIRONMENTS_BUNDLE],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    found = json.loads(completed.stdout.strip().splitlines()[-1])
    assert found["begun"] == len(load_bundle(bundle_copy, verify_hashes=False).files)  # before the imports
    assert found["left"] == 0  # all used by the loader's check
    if damaged:
        assert "encoder.onnx has sha256" in found["error"] and "manifest.json expects" in found["error"]
    else:
        assert found["error"] == ""
