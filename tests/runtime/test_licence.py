"""A bundle's licence and the demo notice (handler.model.licence), read from real bundle folders."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from handler.model import licence

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BUNDLE = ROOT / "model_artifacts" / "default"


def _bundle(folder: Path, manifest_licence: str | None = None, card: str | None = None) -> Path:
    """A bundle folder made from the shipped default's manifest, with the licence field and card given."""
    folder.mkdir()
    manifest = json.loads((DEFAULT_BUNDLE / licence.MANIFEST).read_text(encoding="utf-8"))
    if manifest_licence is None:
        manifest.pop("licence", None)  # a manifest written before the field existed
    else:
        manifest["licence"] = manifest_licence
    (folder / licence.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    if card is not None:
        (folder / licence.MODEL_CARD).write_text(card, encoding="utf-8")
    return folder


def test_the_shipped_default_is_a_non_commercial_demo_named_by_its_card() -> None:
    found = licence.read(DEFAULT_BUNDLE)
    assert found.name == "CC BY-NC-SA 4.0"
    assert found.commercial_use is False
    assert found.notice is not None
    assert "Non-commercial demo" in found.notice and "CC BY-NC-SA 4.0" in found.notice
    assert "make model MODEL=Helsinki-NLP/opus-mt-zh-en" in found.notice
    assert "model_artifacts/opus-mt-zh-en" in found.notice
    assert "\n" not in found.notice


@pytest.mark.parametrize("name", ["CC BY-NC-SA 4.0", "CC BY-NC 4.0", "cc-by-nc-nd-4.0", "CC-BY-NC-ND 3.0"])
def test_a_manifest_with_a_non_commercial_licence_gets_the_notice(tmp_path: Path, name: str) -> None:
    found = licence.read(_bundle(tmp_path / "nc", manifest_licence=name))
    assert (found.name, found.commercial_use) == (name, False)
    assert found.notice is not None and name in found.notice


@pytest.mark.parametrize("name", ["Apache-2.0", "apache-2.0", "CC BY 4.0", "MIT", "cc0-1.0"])
def test_a_commercial_use_licence_gets_no_notice_but_is_named(tmp_path: Path, name: str) -> None:
    found = licence.read(_bundle(tmp_path / "commercial", manifest_licence=name))
    assert found == licence.BundleLicence(name=name, commercial_use=True, notice=None)


def test_the_manifest_wins_over_the_card(tmp_path: Path) -> None:
    card = (DEFAULT_BUNDLE / licence.MODEL_CARD).read_text(encoding="utf-8")
    found = licence.read(_bundle(tmp_path / "relicensed", manifest_licence="Apache-2.0", card=card))
    assert (found.name, found.commercial_use, found.notice) == ("Apache-2.0", True, None)


def test_no_licence_anywhere_is_unknown_and_gets_no_notice(tmp_path: Path) -> None:
    assert licence.read(_bundle(tmp_path / "bare")) == licence.BundleLicence(None, None, None)
    card = "# Model card: `x`\n\n## Network\nMarianMT.\n"
    assert licence.read(_bundle(tmp_path / "silent-card", card=card)) == licence.BundleLicence(None, None, None)


@pytest.mark.parametrize(
    ("card", "name", "commercial_use"),
    [
        ("---\nlanguage: [zh, en]\nlicense: apache-2.0\n---\n# opus-mt-zh-en\n", "apache-2.0", True),
        ("---\nlicense: cc-by-nc-4.0\ntags: [translation]\n---\n# a model\n", "cc-by-nc-4.0", False),
        ("# Model\n\n**License:** CC BY-NC-ND 4.0\n", "CC BY-NC-ND 4.0", False),
        ("# Model\n\n## License\nReleased under the MIT licence.\n", "MIT", True),
        ("# M\n\n## Terms of use\nFor non-commercial research only.\n\n## Training\nCC BY 4.0 data\n", None, False),
        ("# M\n\n## Terms of use\nAll training sources permit commercial use with attribution.\n", None, True),
    ],
)
def test_model_cards_of_other_shapes(tmp_path: Path, card: str, name: str | None, commercial_use: bool) -> None:
    found = licence.read(_bundle(tmp_path / "carded", card=card))
    assert (found.name, found.commercial_use) == (name, commercial_use)
    assert (found.notice is not None) == (commercial_use is False)


def test_a_folder_without_a_manifest_is_refused_with_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(licence.LicenceError, match="no manifest.json.*make model"):
        licence.read(tmp_path)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "handler.model.licence", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_command_prints_the_notice_and_imports_nothing_heavy() -> None:
    done = _run("model_artifacts/default")
    assert done.returncode == 0, done.stderr
    assert done.stdout == licence.read(DEFAULT_BUNDLE).notice + "\n"
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "handler.model.licence" in imported or "handler.model" in imported
    heavy = sorted(name for name in imported if name.split(".")[0] in {"numpy", "onnxruntime", "sentencepiece"})
    assert heavy == []


def test_the_command_prints_nothing_for_a_commercial_bundle_and_json_on_request(tmp_path: Path) -> None:
    folder = _bundle(tmp_path / "opus", manifest_licence="Apache-2.0")
    shutil.copy(DEFAULT_BUNDLE / licence.MODEL_CARD, folder / licence.MODEL_CARD)
    plain = _run(str(folder))
    assert (plain.returncode, plain.stdout) == (0, "")
    as_json = _run("--json", str(folder))
    assert json.loads(as_json.stdout) == {"name": "Apache-2.0", "commercial_use": True, "notice": None}


def test_the_command_says_what_is_wrong_with_a_folder_that_is_no_bundle(tmp_path: Path) -> None:
    done = _run(str(tmp_path))
    assert done.returncode == 2
    assert "no manifest.json" in done.stderr and done.stdout == ""
