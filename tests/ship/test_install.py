"""Every lock file installs the way the project installs it, with the machine's own Python and whatever pip it has.

The Makefile's environments are made by ``requirements/install.sh``, which puts the pinned installer of
``requirements/installer.txt`` into each new virtual environment before any lock file. These tests make throwaway
environments with the machine's own ``python3`` (whose ``venv`` bundles pip 23.2.1 here) by running the very recipe
lines ``make -n`` prints, and the Dockerfile's lock files through the same script, with ``DRY_RUN=1``: pip resolves
each lock file, hashes and extras included, without unpacking it. Taking the bootstrap out of the script makes the
dev environment fail as CI failed on 2026-12-07 (pip 23.2.1 reads pip-audit's ``CacheControl[filecache]`` as an
unpinned requirement of its own since cachecontrol 0.15.0 came out).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ship.dockerfile_model import REPO_ROOT
from tests.ship.test_journey_joints import GCP_DEPLOY, _bash, user_bundle  # noqa: F401 (a fixture)

INSTALLER_LOCK = REPO_ROOT / "requirements" / "installer.txt"
MACHINE_PYTHON = str(Path(sys.base_prefix) / "bin" / "python3")  # the interpreter .venv was made from


def _makefile_recipes(tmp_path: Path) -> list[str]:
    """The Makefile's install lines for each environment it makes, as ``make -n`` prints them, venvs moved to tmp."""
    venvs = {"VENV": tmp_path / "dev", "RUN_VENV": tmp_path / "run", "LOCK_VENV": tmp_path / "lock"}
    stamps = [
        venvs["VENV"] / ".installed-dev",
        venvs["RUN_VENV"] / ".installed-run",
        venvs["RUN_VENV"] / ".installed-csanmt",
        venvs["LOCK_VENV"] / ".installed-lock",
    ]
    printed = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", f"PYTHON={MACHINE_PYTHON}"]
        + [f"{name}={path}" for name, path in venvs.items()]
        + [str(stamp) for stamp in stamps],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines = re.sub(r"\\\n\s*", " ", printed).splitlines()
    return [line for line in lines if "requirements/install.sh" in line]


def _run_dry(command: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "DRY_RUN": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    environ.pop("VIRTUAL_ENV", None)
    return subprocess.run(["bash", "-c", command], cwd=REPO_ROOT, env=environ, capture_output=True, text=True)


def _errors(completed: subprocess.CompletedProcess[str]) -> str:
    """pip's output less this machine's notes about absent local index folders."""
    kept = [line for line in completed.stderr.splitlines() if not line.startswith("WARNING: Location ")]
    return "\n".join([completed.stdout, *kept])


def test_the_machine_python_bundles_an_older_pip_than_the_pinned_one() -> None:
    """The premise: the environments start with the machine's pip, not the one the lock files are read with."""
    bundled = subprocess.run(
        [MACHINE_PYTHON, "-c", "import ensurepip; print(ensurepip.version())"], capture_output=True, text=True
    ).stdout.strip()
    pinned = re.search(r"^pip==(\S+) ", INSTALLER_LOCK.read_text(encoding="utf-8"), re.MULTILINE)
    assert pinned is not None, f"{INSTALLER_LOCK} pins no pip"
    assert bundled and bundled != pinned.group(1)


def test_the_installer_lock_is_pinned_and_hashed() -> None:
    text = INSTALLER_LOCK.read_text(encoding="utf-8")
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+) \\\n((?:\s+--hash=sha256:[0-9a-f]{64}(?: \\)?\n)+)", text, re.M)
    assert [name for name, _, _ in pins] == ["pip"], pins


def test_the_makefile_makes_every_environment_through_the_installer_script(tmp_path: Path) -> None:
    recipes = _makefile_recipes(tmp_path)
    locks = sorted({word for line in recipes for word in shlex.split(line) if word.startswith("requirements/")})
    assert locks == [
        "requirements/csanmt.txt",
        "requirements/dev.txt",
        "requirements/install.sh",
        "requirements/lock.in",
        "requirements/runtime-gcp.txt",
        "requirements/tools.txt",
    ]
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    assert not re.search(r"bin/python -m pip install|-m venv", makefile), "an environment made around the script"


def test_every_makefile_environment_resolves_with_the_pinned_installer(tmp_path: Path) -> None:
    for command in _makefile_recipes(tmp_path):
        completed = _run_dry(command)
        assert completed.returncode == 0, f"{command}\n{_errors(completed)}"
    pip = subprocess.run([str(tmp_path / "dev" / "bin" / "pip"), "--version"], capture_output=True, text=True)
    assert pip.stdout.startswith("pip " + re.findall(r"^pip==(\S+)", INSTALLER_LOCK.read_text(), re.M)[0] + " ")


@pytest.mark.parametrize(
    "locks",
    [
        ("requirements/runtime-aws.txt",),
        ("requirements/runtime-gcp.txt", "requirements/csanmt.txt"),
        ("requirements/build.txt",),
    ],
)
def test_the_image_lock_files_resolve_with_the_pinned_installer(locks: tuple[str, ...], tmp_path: Path) -> None:
    """The Dockerfile's stages install the same installer first (tests/ship/test_runtime_image.py checks the order)."""
    arguments = " ".join(f"-r {lock}" for lock in locks)
    command = f"PYTHON={MACHINE_PYTHON} bash requirements/install.sh {tmp_path / 'venv'} --require-hashes {arguments}"
    completed = _run_dry(command)
    assert completed.returncode == 0, f"{command}\n{_errors(completed)}"


@pytest.mark.parametrize("family", ["marian", "csanmt"])
def test_the_staged_functions_source_resolves_with_the_machine_pip(
    family: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Cloud Functions' buildpack installs the staged requirements.txt with its own pip, which we cannot pin: the
    file must resolve under an old pip too, so it is checked with the machine's own (23.2.1 here), no bootstrap."""
    bundle = {"BUNDLE": request.getfixturevalue("user_bundle")} if family == "csanmt" else {}
    staged = _bash(GCP_DEPLOY, "stage", str(tmp_path / "stage"), OUTPUT_BUCKET="o", **bundle)
    assert staged.returncode == 0, staged.stderr
    venv = tmp_path / "venv"
    subprocess.run([MACHINE_PYTHON, "-m", "venv", str(venv)], check=True)
    requirements = tmp_path / "stage" / "source" / "requirements.txt"
    completed = _run_dry(
        f"{venv}/bin/python -m pip install --quiet --dry-run --ignore-installed --require-hashes -r {requirements}"
    )
    assert completed.returncode == 0, _errors(completed)
