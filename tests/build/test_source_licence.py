"""The licence the build writes into a new bundle's manifest (build.source_licence, through build.export)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from build.source_licence import CHECKPOINT_CARD, source_licence
from build.verify import VerifyThresholds
from handler.model import licence

DEFAULT_MANIFEST = Path(__file__).resolve().parents[2] / "model_artifacts" / "default" / "manifest.json"


def test_our_checkpoint_trained_on_non_commercial_sources_takes_their_licence(tmp_path: Path) -> None:
    training = json.loads(DEFAULT_MANIFEST.read_text(encoding="utf-8"))["training"]  # the shipped default's record
    assert source_licence(tmp_path, training) == "CC BY-NC-SA 4.0"


def test_our_checkpoint_trained_on_commercial_sources_only_states_none(tmp_path: Path) -> None:
    training = {"data": {"tatoeba_cmn": {"pairs": 10, "licence": "CC BY 2.0 FR"}, "tico19": {"pairs": 5}}}
    assert source_licence(tmp_path, training) == ""


def test_a_foreign_checkpoint_takes_its_model_cards_license(tmp_path: Path) -> None:
    (tmp_path / CHECKPOINT_CARD).write_text("---\nlanguage:\n- zh\n- en\nlicense: apache-2.0\n---\n# opus-mt-zh-en\n")
    assert source_licence(tmp_path, {}) == "apache-2.0"


def test_a_foreign_checkpoint_without_a_card_states_none(tmp_path: Path) -> None:
    assert source_licence(tmp_path, {}) == ""


@pytest.mark.slow
def test_export_writes_the_checkpoints_licence_and_the_runtime_reads_it(
    tiny_marian_dir: Path, tiny_thresholds: VerifyThresholds, tmp_path: Path
) -> None:
    from build.export import export_bundle

    checkpoint = Path(shutil.copytree(tiny_marian_dir, tmp_path / "checkpoint"))
    (checkpoint / CHECKPOINT_CARD).write_text("---\nlicense: cc-by-nc-4.0\n---\n# a research model\n")
    manifest = export_bundle(checkpoint, tmp_path / "bundle", thresholds=tiny_thresholds)
    assert manifest.licence == "cc-by-nc-4.0"
    written = json.loads((tmp_path / "bundle" / "manifest.json").read_text(encoding="utf-8"))
    assert written["licence"] == "cc-by-nc-4.0"
    read = licence.read(tmp_path / "bundle")
    assert (read.name, read.commercial_use) == ("cc-by-nc-4.0", False) and read.notice
