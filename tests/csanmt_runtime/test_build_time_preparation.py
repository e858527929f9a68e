"""What the build prepares so that a cold start does not: optimized graphs and jieba's prefix dictionary.

GIVEN the tiny CSANMT's bundle as ``build.export`` writes it
WHEN the runtime opens it
THEN its graphs are ONNX Runtime's extended-level optimization of the INT8 graphs (fewer nodes, the shared embedding
still one external file), opened with load-time optimization off, and they compute exactly what the unoptimized INT8
graphs computed with load-time optimization on; the tokenizer reads the bundle's jieba dictionary instead of
building one, and cuts every sentence as jieba's own dictionary does; a dictionary it cannot read falls back to
jieba's own, with a warning.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from handler.config import RuntimeConfig
from handler.model import bundle
from handler.model.families import csanmt
from handler.model.families.csanmt.tokenizer import CsanmtTokenizer
from handler.model.loader import load_model
from handler.model.sessions import OnnxEncoderDecoder, ort

pytestmark = pytest.mark.slow

SENTENCES = ("今天天气很好，我们去公园散步吧。", "他在北京大学读书。", "你好！")


def _manifest(folder: Path) -> bundle.Manifest:
    return bundle.Manifest.from_dict(json.loads((folder / bundle.MANIFEST).read_text(encoding="utf-8")))


def _log_probs(model: OnnxEncoderDecoder, steps: int = 4) -> tuple[list[np.ndarray], np.ndarray]:
    ids = np.array([[5, 9, 13, 0], [7, 0, 0, 0]], dtype=np.int64)
    mask = (np.arange(4)[None, :] < np.array([[4], [2]])).astype(np.int64)
    cross = model.encode(ids, mask)
    past, token, found = model.empty_past(2), np.zeros((2, 1), dtype=np.int64), []
    for step in range(steps):
        log_probs, past = model.step(token, mask, past, cross)
        found.append(np.array(log_probs))
        token = np.array([[3 + step], [11 - step]], dtype=np.int64)
    return cross, np.stack(found)


def test_the_shipped_graphs_are_optimized_and_compute_what_load_time_optimization_did(
    csanmt_ending_bundle_dir: Path, csanmt_ending_checkpoint: object, tmp_path: Path
) -> None:
    from build.quantize import quantize_pair

    manifest = _manifest(csanmt_ending_bundle_dir)
    spec, contract = manifest.model, csanmt.graph_contract(manifest.model.decoder_layers)
    assert manifest.graph_optimization == bundle.GRAPHS_OPTIMIZED_OFFLINE
    # the INT8 graphs as they were before this step: the same FP32 export, quantized the same way
    fp32 = csanmt_ending_checkpoint.export_graphs(tmp_path / "fp32")  # type: ignore[attr-defined]
    (tmp_path / "int8").mkdir()
    unoptimized = quantize_pair(fp32, tmp_path / "int8")
    for name in bundle.MODEL_FILES:
        before = onnx.load(str(tmp_path / "int8" / name), load_external_data=False).graph
        after = onnx.load(str(csanmt_ending_bundle_dir / name), load_external_data=False).graph
        assert len(after.node) < len(before.node) * 0.8, name  # fused: far fewer nodes to run per call
        external = [t for t in after.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
        assert [(t.name, t.external_data[0].value) for t in external] == [
            (bundle.SHARED_EMBEDDING_INITIALIZER, bundle.SHARED_EMBEDDING)
        ]  # the tied table is still stored once, in embedding.bin

    shipped = OnnxEncoderDecoder(
        csanmt_ending_bundle_dir / bundle.ENCODER_ONNX,
        csanmt_ending_bundle_dir / bundle.DECODER_ONNX,
        spec,
        contract,
        optimized_offline=True,
    )
    before_step = OnnxEncoderDecoder(*unoptimized, spec, contract)
    options = shipped.encoder.get_session_options()
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    assert before_step.encoder.get_session_options().graph_optimization_level == (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    )
    (cross_after, after), (cross_before, before) = _log_probs(shipped), _log_probs(before_step)
    assert all(np.array_equal(a, b) for a, b in zip(cross_after, cross_before, strict=True))
    assert np.array_equal(after, before)  # bit for bit: the same kernels on the same fused graph


def test_the_loader_opens_optimized_graphs_without_optimizing_them_again(csanmt_ending_bundle_dir: Path) -> None:
    loaded = load_model(RuntimeConfig(bundle_dir=csanmt_ending_bundle_dir, threads=1))
    assert loaded.model.optimized_offline
    for session in (loaded.model.encoder, loaded.model.decoder):
        assert session.get_session_options().graph_optimization_level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    assert loaded.tokenizer.dictionary_from_bundle  # type: ignore[attr-defined]


def _tokenizer(folder: Path, cache: Path | None, temp_dir: Path) -> CsanmtTokenizer:
    return CsanmtTokenizer(
        folder / bundle.CSANMT_BPE_CODES,
        folder / bundle.CSANMT_SOURCE_VOCAB,
        folder / bundle.CSANMT_TARGET_VOCAB,
        source_unk_id=_manifest(folder).model.unk_id,
        temp_dir=str(temp_dir),
        dictionary_cache=cache,
    )


def test_the_bundles_jieba_dictionary_cuts_as_jiebas_own(csanmt_ending_bundle_dir: Path, tmp_path: Path) -> None:
    own_temp, bundle_temp = tmp_path / "own", tmp_path / "bundle"
    own_temp.mkdir(), bundle_temp.mkdir()
    own = _tokenizer(csanmt_ending_bundle_dir, None, own_temp)
    cache = csanmt_ending_bundle_dir / bundle.CSANMT_DICTIONARY_CACHE
    prepared = _tokenizer(csanmt_ending_bundle_dir, cache, bundle_temp)
    assert prepared.dictionary_from_bundle and not own.dictionary_from_bundle
    assert list(bundle_temp.iterdir()) == []  # nothing built, nothing written
    assert (own_temp / "jieba.cache").is_file()  # jieba's own way: built and cached in the temporary folder
    for sentence in SENTENCES:
        assert list(prepared._jieba.cut(sentence)) == list(own._jieba.cut(sentence))
        assert prepared.encode(sentence) == own.encode(sentence)


def test_a_dictionary_that_cannot_be_read_falls_back_to_jiebas_own(
    csanmt_ending_bundle_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "bundle"
    shutil.copytree(csanmt_ending_bundle_dir, folder)
    broken = folder / bundle.CSANMT_DICTIONARY_CACHE
    broken.write_bytes(b"not marshal data")
    (tmp_path / "temp").mkdir()
    with caplog.at_level(logging.WARNING):
        tokenizer = _tokenizer(folder, broken, tmp_path / "temp")
    assert not tokenizer.dictionary_from_bundle
    assert f"{broken} cannot be read" in caplog.text and "jieba builds its dictionary instead" in caplog.text
    assert tokenizer.encode(SENTENCES[0]) == _tokenizer(folder, None, tmp_path / "temp").encode(SENTENCES[0])
    assert broken.read_bytes() == b"not marshal data"  # nothing is ever written into the bundle


def test_a_bundle_built_before_the_step_is_optimized_in_place(
    csanmt_ending_bundle_dir: Path, csanmt_ending_checkpoint: object, tmp_path: Path
) -> None:
    from dataclasses import asdict

    from build.optimize import main as optimize_main
    from build.quantize import quantize_pair
    from handler.model.loader import load_bundle

    # GIVEN the bundle as build.export wrote it before this step: unoptimized INT8 graphs, no graph_optimization
    folder = tmp_path / "older"
    shutil.copytree(csanmt_ending_bundle_dir, folder)
    fp32 = csanmt_ending_checkpoint.export_graphs(tmp_path / "fp32")  # type: ignore[attr-defined]
    (tmp_path / "int8").mkdir()
    for path in quantize_pair(fp32, tmp_path / "int8"):
        shutil.copyfile(path, folder / path.name)
    record = json.loads((folder / bundle.MANIFEST).read_text(encoding="utf-8"))
    record["graph_optimization"] = ""
    for name in bundle.MODEL_FILES:
        record["files"][name] = asdict(bundle.file_entry(folder / name))
    (folder / bundle.MANIFEST).write_text(json.dumps(record), encoding="utf-8")
    before = load_model(RuntimeConfig(bundle_dir=folder, threads=1))
    assert not before.model.optimized_offline
    # WHEN python -m build.optimize runs on it
    assert optimize_main([str(folder)]) == 0
    # THEN its manifest says so, every hash matches, and it computes what it computed before
    manifest = load_bundle(folder, verify_hashes=True)
    assert manifest.graph_optimization == bundle.GRAPHS_OPTIMIZED_OFFLINE
    after = load_model(RuntimeConfig(bundle_dir=folder, threads=1))
    assert after.model.optimized_offline
    assert np.array_equal(_log_probs(after.model)[1], _log_probs(before.model)[1])
    assert optimize_main([str(folder)]) == 0  # a second run leaves it as it is
    assert load_bundle(folder, verify_hashes=True).files == manifest.files
