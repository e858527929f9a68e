"""The loader refuses bundles that differ from their manifest, and loads + warms a good one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from handler.errors import BundleError
from handler.model import bundle
from handler.model.loader import LoadedModel, load_bundle


@pytest.fixture
def bundle_copy(tiny_bundle_dir: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny bundle that a test may damage."""
    return Path(shutil.copytree(tiny_bundle_dir, tmp_path / "bundle"))


def _manifest(folder: Path) -> dict[str, object]:
    return json.loads((folder / bundle.MANIFEST).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _write_manifest(folder: Path, data: dict[str, object]) -> None:
    (folder / bundle.MANIFEST).write_text(json.dumps(data), encoding="utf-8")


def test_a_good_bundle_loads(tiny_bundle_dir: Path) -> None:
    manifest = load_bundle(tiny_bundle_dir)
    # the tiny model's vocabulary is joint: its one SentencePiece model serves both sides
    assert {*bundle.MODEL_FILES, bundle.SOURCE_SPM, bundle.VOCAB_JSON} <= set(manifest.files)
    assert manifest.tokenizer == {bundle.TARGET_SPM_KEY: bundle.SOURCE_SPM}
    assert manifest.format_version == bundle.FORMAT_VERSION


def test_a_bundle_without_target_spm_must_say_its_vocabulary_is_joint(bundle_copy: Path) -> None:
    data = _manifest(bundle_copy)
    del data["tokenizer"]
    _write_manifest(bundle_copy, data)
    with pytest.raises(BundleError, match=r"manifest\.json does not list target\.spm, which the runtime needs"):
        load_bundle(bundle_copy)


def test_a_tampered_file_is_named_with_expected_and_found_hashes(bundle_copy: Path) -> None:
    # GIVEN a vocabulary file changed without changing its size
    vocab = bundle_copy / bundle.VOCAB_JSON
    data = bytearray(vocab.read_bytes())
    data[10] = ord("X") if data[10] != ord("X") else ord("Y")
    vocab.write_bytes(bytes(data))
    expected = _manifest(bundle_copy)["files"][bundle.VOCAB_JSON]["sha256"]  # type: ignore[index]
    # THEN the loader names the file, both hashes and the command that rebuilds the bundle
    with pytest.raises(
        BundleError, match=rf"vocab\.json has sha256 [0-9a-f]{{64}}, but manifest\.json expects {expected}"
    ) as error:
        load_bundle(bundle_copy)
    assert "python -m build.export --model" in str(error.value) and "--force" in str(error.value)


def test_a_truncated_model_is_caught_by_its_size_even_without_hashes(bundle_copy: Path) -> None:
    decoder = bundle_copy / bundle.DECODER_ONNX
    size = decoder.stat().st_size
    with decoder.open("r+b") as handle:
        handle.truncate(size - 100)
    with pytest.raises(
        BundleError, match=rf"decoder\.onnx is {size - 100:,} bytes, but manifest\.json expects {size:,}"
    ):
        load_bundle(bundle_copy, verify_hashes=False)


def test_hashes_are_skipped_only_when_asked(bundle_copy: Path) -> None:
    source = bundle_copy / bundle.SOURCE_SPM
    data = bytearray(source.read_bytes())
    data[-1] ^= 0xFF
    source.write_bytes(bytes(data))
    load_bundle(bundle_copy, verify_hashes=False)  # same size: accepted without hashing
    with pytest.raises(BundleError, match=r"source\.spm has sha256"):
        load_bundle(bundle_copy)


def test_a_missing_file_is_named(bundle_copy: Path) -> None:
    (bundle_copy / bundle.ENCODER_ONNX).unlink()
    with pytest.raises(BundleError, match=r"encoder\.onnx is missing \(listed in manifest\.json\); rebuild it with"):
        load_bundle(bundle_copy)


def test_a_required_file_the_manifest_does_not_list(bundle_copy: Path) -> None:
    data = _manifest(bundle_copy)
    del data["files"][bundle.SOURCE_SPM]  # type: ignore[attr-defined]
    _write_manifest(bundle_copy, data)
    with pytest.raises(BundleError, match=r"manifest\.json does not list source\.spm, which the runtime needs"):
        load_bundle(bundle_copy)


def test_a_manifest_may_not_point_outside_the_bundle(bundle_copy: Path) -> None:
    data = _manifest(bundle_copy)
    data["files"]["../secret"] = {"sha256": "0" * 64, "bytes": 1}  # type: ignore[index]
    _write_manifest(bundle_copy, data)
    with pytest.raises(BundleError, match=r"lists '\.\./secret', which is not a file name inside the bundle"):
        load_bundle(bundle_copy)


def test_another_format_version_is_refused(bundle_copy: Path) -> None:
    data = _manifest(bundle_copy)
    data["format_version"] = bundle.FORMAT_VERSION + 1
    _write_manifest(bundle_copy, data)
    with pytest.raises(
        BundleError,
        match=rf"has format version {bundle.FORMAT_VERSION + 1}, but this runtime reads format version "
        rf"{bundle.FORMAT_VERSION}",
    ):
        load_bundle(bundle_copy)


def test_a_malformed_manifest_is_refused(bundle_copy: Path) -> None:
    (bundle_copy / bundle.MANIFEST).write_text("{not json", encoding="utf-8")
    with pytest.raises(BundleError, match=r"manifest\.json cannot be read"):
        load_bundle(bundle_copy)
    _write_manifest(bundle_copy, {"format_version": bundle.FORMAT_VERSION, "name": "x"})
    with pytest.raises(BundleError, match=r"manifest\.json is incomplete or malformed \(KeyError"):
        load_bundle(bundle_copy)


def test_a_folder_without_manifest_or_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=r"manifest\.json is missing, so .* is not a model bundle"):
        load_bundle(tmp_path)
    with pytest.raises(
        BundleError, match=r"does not exist; build one with python -m build\.export .*TRANSLATE_BUNDLE_DIR"
    ):
        load_bundle(tmp_path / "nowhere")


def test_onnx_graphs_with_other_names_are_refused(bundle_copy: Path) -> None:
    from handler.model.families.marian.sessions import OnnxMarian

    manifest = load_bundle(bundle_copy)
    # the decoder graph where the encoder belongs: wrong inputs and outputs
    with pytest.raises(
        BundleError, match=r"does not match bundle format 1 .* expected inputs \['input_ids', 'attention_mask'\]"
    ):
        OnnxMarian(bundle_copy / bundle.DECODER_ONNX, bundle_copy / bundle.DECODER_ONNX, manifest.model)


def test_load_model_records_its_timings_and_warms_up(tiny_loaded: LoadedModel) -> None:
    assert set(tiny_loaded.timings) == {"check_s", "tokenizer_s", "sessions_s", "warmup_s", "load_s"}
    assert all(seconds > 0 for seconds in tiny_loaded.timings.values())
    assert tiny_loaded.model.threads == 1
    assert tiny_loaded.spec == tiny_loaded.manifest.model


def test_sessions_use_the_configured_threads_and_no_spinning(tiny_loaded: LoadedModel) -> None:
    for session in (tiny_loaded.model.encoder, tiny_loaded.model.decoder):
        options = session.get_session_options()
        assert options.intra_op_num_threads == 1
        assert options.inter_op_num_threads == 1
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
        assert not options.optimized_model_filepath


def _garble_keeping_the_size(path: Path) -> None:
    path.write_bytes(b"not an ONNX graph. " * (path.stat().st_size // 19) + b"!" * (path.stat().st_size % 19))


def test_load_model_reports_a_damaged_graph_by_its_hash_not_by_what_onnx_runtime_makes_of_it(
    bundle_copy: Path,
) -> None:
    from handler.config import RuntimeConfig
    from handler.model.loader import load_model

    # GIVEN a graph overwritten with the same number of bytes (the hashes run beside the sessions, which fail too)
    _garble_keeping_the_size(bundle_copy / bundle.ENCODER_ONNX)
    # THEN the start fails with the hash's reason, naming the file
    with pytest.raises(BundleError, match=r"encoder\.onnx has sha256 [0-9a-f]{64}, but manifest\.json expects"):
        load_model(RuntimeConfig(bundle_dir=bundle_copy, threads=1))
    # AND without the hash check ONNX Runtime's refusal is what names it
    with pytest.raises(BundleError, match=r"ONNX Runtime cannot load .*encoder\.onnx"):
        load_model(RuntimeConfig(bundle_dir=bundle_copy, threads=1, verify_hashes=False))


def test_only_the_decoder_keeps_pre_packed_weights(tiny_loaded: LoadedModel) -> None:
    encoder = tiny_loaded.model.encoder.get_session_options()
    assert encoder.get_session_config_entry("session.disable_prepacking") == "1"
    decoder = tiny_loaded.model.decoder.get_session_options()
    with pytest.raises(RuntimeError, match="does not have configuration"):  # pre-packing on: the per-token steps
        decoder.get_session_config_entry("session.disable_prepacking")
