"""The suite's guard against reading outside the checkout (``tests/checkout_guard.py``) really guards."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from build import corpus
from tests.checkout_guard import BESIDE_DATA, CHECKOUT, FORBIDDEN_BESIDE, GUARD, CheckoutGuard, OutsideCheckoutError


def test_opening_beside_the_checkout_raises_at_once() -> None:
    with GUARD.expecting_violation(), pytest.raises(OutsideCheckoutError, match="outside the checkout"):
        open(FORBIDDEN_BESIDE / "beside-the-checkout" / "notes.txt", "rb")  # noqa: SIM115
    with GUARD.expecting_violation(), pytest.raises(OutsideCheckoutError):
        os.listdir(FORBIDDEN_BESIDE)


def test_the_checkout_temp_folders_and_the_interpreter_stay_readable(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("ok", encoding="utf-8")
    assert (tmp_path / "x.txt").read_text(encoding="utf-8") == "ok"
    assert (CHECKOUT / "README.md").read_text(encoding="utf-8")
    assert os.listdir(sys.prefix)


def test_a_checkout_directly_in_a_broad_folder_guards_only_a_shared_folder_beside_it() -> None:
    guard = CheckoutGuard(Path("/repo"))
    assert guard.is_outside(f"/{BESIDE_DATA}/corpus/train.zh-en.tsv.gz")
    assert not guard.is_outside("/usr/lib/python3/x.py")
    assert not guard.is_outside("/repo/data/corpus/dev.zh-en.tsv.gz")


def test_the_corpus_reader_defaults_to_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(corpus.CORPUS_DIR_ENV, raising=False)
    assert corpus.corpus_dir() == CHECKOUT / "data" / "corpus"
    pairs = corpus.dev_pairs()
    assert len(pairs) == 1_550 and {p.source for p in pairs} <= set(corpus.ALLOWED_SOURCES)


@pytest.mark.slow
def test_a_session_fails_when_code_swallows_the_guards_error() -> None:
    probe = CHECKOUT / "tests" / "guard_probe" / "probe_reads_outside.py"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(probe)],
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0, result.stdout
    assert "read(s) outside the checkout" in result.stdout
    assert "1 passed" in result.stdout  # the probe's own test passed: only the guard failed the session


def test_a_checkout_made_inside_the_temporary_folder_is_still_guarded() -> None:
    import tempfile

    clone = Path(tempfile.gettempdir()) / "fresh" / "clone"
    guard = CheckoutGuard(clone)
    assert guard.is_outside(str(clone.parent / "beside-the-clone" / "notes.txt"))
    assert not guard.is_outside(str(clone / "data" / "corpus" / "dev.zh-en.tsv.gz"))
    assert not guard.is_outside(str(Path(tempfile.gettempdir()) / "pytest-of-root" / "x"))
