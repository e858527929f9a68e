"""The sha256 check of a bundle's files, hashed side by side, still refuses every damaged file before a start ends.

GIVEN a copy of the tiny bundle with files changed in place (same size)
WHEN the files are hashed on one thread or several, largest first
THEN the refusal names the same file whatever the thread count (the first damaged one by name); a weight changed in
a way ONNX Runtime accepts (one byte of an initializer) still fails ``load_model``, which without the check loads it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx
import pytest

from handler.config import RuntimeConfig
from handler.errors import BundleError
from handler.model import bundle
from handler.model.loader import load_bundle, load_model, verify_file_hashes

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
