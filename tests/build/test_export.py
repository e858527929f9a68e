"""``build.export``: the pipeline that turns a checkpoint into a verified bundle, and its CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build.errors import ExportError
from build.export import export_bundle
from build.families.marian import load_checkpoint
from build.verify import VerificationError, VerifyThresholds
from handler.model import bundle
from handler.model.bundle import Manifest

REPO_ROOT = Path(__file__).resolve().parents[2]


def _manifest(bundle_dir: Path) -> Manifest:
    return Manifest.from_dict(json.loads((bundle_dir / bundle.MANIFEST).read_text(encoding="utf-8")))


@pytest.mark.slow
def test_the_bundle_holds_exactly_the_contract_files_with_matching_hashes(tiny_bundle_dir: Path) -> None:
    manifest = _manifest(tiny_bundle_dir)
    on_disk = {path.name for path in tiny_bundle_dir.iterdir()}
    # the graphs' weights, mapped at load (the encoder's may all be read from the decoder's file: build.compact)
    weights = {bundle.weights_file(bundle.DECODER_ONNX)} | (on_disk & {bundle.weights_file(bundle.ENCODER_ONNX)})
    joint = {bundle.SOURCE_SPM, bundle.VOCAB_JSON}  # the tiny model's vocabulary is joint: one .spm
    assert on_disk == {bundle.MANIFEST, *bundle.MODEL_FILES, *weights, *joint}
    assert set(manifest.files) == on_disk - {bundle.MANIFEST}
    for name, entry in manifest.files.items():
        assert bundle.file_entry(tiny_bundle_dir / name) == entry, name
    assert not list(tiny_bundle_dir.parent.glob(".tiny.*"))  # no staging folder left behind


@pytest.mark.slow
def test_the_manifest_describes_model_tools_and_verification(tiny_bundle_dir: Path, tiny_marian_dir: Path) -> None:
    manifest = _manifest(tiny_bundle_dir)
    config = json.loads((tiny_marian_dir / "config.json").read_text(encoding="utf-8"))
    assert manifest.name == "tiny"
    assert manifest.source_model == str(tiny_marian_dir)
    assert manifest.format_version == bundle.FORMAT_VERSION
    assert manifest.normalization == bundle.NORMALIZATION_NONE  # no training.json: a foreign checkpoint
    spec = manifest.model
    assert (spec.vocab_size, spec.d_model, spec.decoder_layers, spec.max_positions) == (
        config["vocab_size"],
        config["d_model"],
        config["decoder_layers"],
        config["max_position_embeddings"],
    )
    assert spec.pad_id == spec.decoder_start_id == spec.vocab_size - 1 and spec.eos_id == 0 and spec.unk_id == 1
    assert spec.head_dim * spec.attention_heads == spec.d_model
    figures = manifest.verification["figures"]
    assert figures["fp32_greedy_exact_match"] == 1.0 and figures["fp32_max_abs_log_prob_diff"] < 1e-3
    assert 0.0 <= figures["int8_top1_agreement"] <= 1.0
    assert set(manifest.verification["thresholds"]) == set(VerifyThresholds().to_dict())
    assert {"torch", "transformers", "onnx", "onnxruntime", "python"} <= set(manifest.tools)
    assert manifest.created_at.endswith("+00:00")


def test_an_existing_bundle_is_not_overwritten_without_force(tmp_path: Path) -> None:
    existing = tmp_path / "bundle"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    with pytest.raises(ExportError, match=r"bundle already exists; pass force=True \(--force\) to replace it"):
        export_bundle(tmp_path / "no-such-checkpoint", existing)
    assert (existing / "keep.txt").read_text() == "mine"


def test_the_cli_refuses_to_overwrite_and_exits_1(tmp_path: Path) -> None:
    existing = tmp_path / "bundle"
    existing.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "build.export", "--model", str(tmp_path / "ckpt"), "--out", str(existing)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert result.returncode == 1
    assert f"error: {existing} already exists; pass force=True (--force) to replace it" in result.stderr
    assert list(existing.iterdir()) == []


def test_a_missing_checkpoint_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"checkpoint folder .*nothing-here does not exist"):
        export_bundle(tmp_path / "nothing-here", tmp_path / "out")


def test_separate_target_vocabularies_are_refused(tiny_marian_dir: Path, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(tiny_marian_dir, tmp_path / "separate"))
    shutil.copyfile(folder / bundle.VOCAB_JSON, folder / "target_vocab.json")
    with pytest.raises(ExportError, match=r"separate target vocabulary \(target_vocab.json\); only Marian models"):
        load_checkpoint(folder)


def test_unknown_manifest_sections_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"extra_manifest may set only licence, quality, training; got files"):
        export_bundle(tmp_path / "ckpt", tmp_path / "out", extra_manifest={"files": {}})


@pytest.mark.slow
def test_a_threshold_above_what_is_achievable_fails_the_build_and_writes_nothing(
    tiny_marian_dir: Path, tmp_path: Path
) -> None:
    out_dir = tmp_path / "bundle"
    impossible = VerifyThresholds(fp32_max_abs_log_prob_diff=1e-12)
    with pytest.raises(
        VerificationError, match=r"FP32 ONNX vs PyTorch: max \|Δ log-prob\| is .*; the limit is 1e-12 \(exceeded by "
    ):
        export_bundle(tiny_marian_dir, out_dir, thresholds=impossible)
    assert list(tmp_path.iterdir()) == []  # neither the bundle nor a staging folder


@pytest.mark.slow
def test_force_replaces_a_bundle_and_our_own_checkpoints_get_nfkc_and_their_training_record(
    tiny_marian_dir: Path, tiny_bundle_dir: Path, tiny_thresholds: VerifyThresholds, tmp_path: Path
) -> None:
    checkpoint = Path(shutil.copytree(tiny_marian_dir, tmp_path / "ours"))
    training = {"steps": 12, "weights": "last checkpoint", "cooldown": {"from_step": 10, "steps": 2}}
    (checkpoint / "training.json").write_text(json.dumps(training))
    out_dir = Path(shutil.copytree(tiny_bundle_dir, tmp_path / "models" / "default"))
    (out_dir / "stale.txt").write_text("from the old bundle")
    manifest = export_bundle(
        checkpoint,
        out_dir,
        force=True,
        thresholds=tiny_thresholds,
        extra_manifest={"licence": "CC BY 4.0", "training": {"note": "tiny"}},
    )
    assert not (out_dir / "stale.txt").exists()
    assert _manifest(out_dir) == manifest
    assert manifest.name == "default"
    assert manifest.normalization == bundle.NORMALIZATION_NFKC
    assert manifest.training == {**training, "note": "tiny"}
    card = (out_dir / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert "The last 2 steps (from step 10) were a cooldown" in card
    assert manifest.licence == "CC BY 4.0"
    assert sorted(p.name for p in out_dir.parent.iterdir()) == ["default"]
    # the same weights give the same graphs
    assert manifest.files[bundle.DECODER_ONNX] == _manifest(tiny_bundle_dir).files[bundle.DECODER_ONNX]
