"""The lock files in requirements/ are complete, hashed, current with the .in files, and keep the runtime lean."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.ship.dockerfile_model import REPO_ROOT

REQUIREMENTS = REPO_ROOT / "requirements"
# lock file -> the .in files it is compiled from (the Makefile's `lock` target)
LOCKS = {
    "runtime-aws.txt": ["aws.in"],
    "runtime-gcp.txt": ["gcp.in"],
    "build.txt": ["build.in"],
    "dev.txt": ["build.in", "dev.in", "aws.in", "gcp.in"],
}
BUILD_ONLY = ("torch", "transformers", "optimum", "optimum-onnx", "onnx", "tokenizers", "safetensors")

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins_in(in_file: Path, seen: set[Path] | None = None) -> dict[str, str]:
    """Exact pins of an .in file and of the files it includes with ``-r``."""
    seen = seen if seen is not None else set()
    if in_file in seen:
        return {}
    seen.add(in_file)
    pins: dict[str, str] = {}
    for line in in_file.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            pins.update(_pins_in(in_file.parent / line[3:].strip(), seen))
        elif line:
            match = _PIN.match(line)
            assert match, f"{in_file.name}: '{line}' is not an exact == pin"
            pins[_normalise(match.group(1))] = match.group(2)
    return pins


def _locked(lock: Path) -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of a pip-compile --generate-hashes file."""
    locked: dict[str, tuple[str, int]] = {}
    current = None
    for line in lock.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _PIN.match(stripped)
        if match and not line.startswith(" "):
            current = _normalise(match.group(1))
            locked[current] = (match.group(2), 0)
        elif stripped.startswith("--hash=sha256:") and current:
            version, hashes = locked[current]
            locked[current] = (version, hashes + 1)
    return locked


@pytest.mark.parametrize("lock_name", sorted(LOCKS))
def test_lock_file_is_current_with_its_in_files(lock_name: str) -> None:
    lock = REQUIREMENTS / lock_name
    assert lock.exists(), f"{lock_name} is missing: run `make lock`"
    locked = _locked(lock)
    wanted: dict[str, str] = {}
    for in_name in LOCKS[lock_name]:
        wanted.update(_pins_in(REQUIREMENTS / in_name))
    stale = {
        name: (version, locked.get(name, ("missing", 0))[0])
        for name, version in wanted.items()
        if locked.get(name, ("missing", 0))[0].split("+")[0] != version.split("+")[0]
    }
    assert not stale, f"{lock_name} is out of date with {LOCKS[lock_name]} (wanted, locked): {stale}; run `make lock`"


@pytest.mark.parametrize("lock_name", sorted(LOCKS))
def test_every_locked_package_is_hashed(lock_name: str) -> None:
    locked = _locked(REQUIREMENTS / lock_name)
    assert locked, f"{lock_name} pins nothing"
    unhashed = sorted(name for name, (_, hashes) in locked.items() if hashes == 0)
    assert not unhashed, f"{lock_name} has packages without hashes: {unhashed}"


@pytest.mark.parametrize("lock_name", ["runtime-aws.txt", "runtime-gcp.txt"])
def test_runtime_locks_hold_no_build_time_packages(lock_name: str) -> None:
    locked = _locked(REQUIREMENTS / lock_name)
    assert not set(locked) & set(BUILD_ONLY), f"{lock_name} pulls in {sorted(set(locked) & set(BUILD_ONLY))}"
    assert {"numpy", "onnxruntime", "sentencepiece"} <= set(locked)


def test_each_runtime_lock_holds_its_adapter() -> None:
    aws, gcp = _locked(REQUIREMENTS / "runtime-aws.txt"), _locked(REQUIREMENTS / "runtime-gcp.txt")
    assert {"awslambdaric", "boto3"} <= set(aws) and "functions-framework" not in aws
    assert {"functions-framework", "google-cloud-storage"} <= set(gcp) and "awslambdaric" not in gcp


def test_dev_lock_takes_the_cpu_torch_wheel() -> None:
    version, _ = _locked(REQUIREMENTS / "dev.txt")["torch"]
    assert version == "2.13.0+cpu", "PyPI's plain torch is the multi-GB CUDA build"
