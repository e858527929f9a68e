"""A CSANMT bundle served by the same loader and service as Marian, chosen by its manifest's family.

GIVEN the verified INT8 bundle ``build.export`` writes for the tiny CSANMT
WHEN the runtime loads it
THEN the manifest's family picks the CSANMT tokenizer, graph contract and search; the service translates with
them (its options mapped onto modelscope's search); and a bundle the runtime cannot serve is refused with a
message naming what is wrong and how to fix it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from handler.config import RuntimeConfig
from handler.errors import BundleError
from handler.model import bundle
from handler.model.batching import pad_batch
from handler.model.families import csanmt
from handler.model.families.base import SearchRequest
from handler.model.families.csanmt.beam_search import csanmt_beam_search
from handler.model.families.csanmt.tokenizer import CsanmtTokenizer
from handler.model.loader import LoadedModel, load_bundle, load_model
from handler.model.sessions import OnnxEncoderDecoder
from handler.service import TranslateOptions, TranslationService
from handler.text.cleaning import clean_translation

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
TEXTS = ["我们喜欢机器翻译。", "你好，世界！", "他在 2024 年去了北京。", "今天天气很好，我们去公园散步吧。"]


@pytest.fixture(scope="module")
def loaded(csanmt_ending_bundle_dir: Path) -> LoadedModel:
    return load_model(RuntimeConfig(bundle_dir=csanmt_ending_bundle_dir, threads=1))


def test_the_manifest_picks_the_csanmt_family(loaded: LoadedModel) -> None:
    assert loaded.manifest.family == loaded.family.name == "csanmt"
    assert isinstance(loaded.tokenizer, CsanmtTokenizer)
    assert isinstance(loaded.decoding, csanmt.CsanmtDecoding)
    assert loaded.model.contract == csanmt.graph_contract(loaded.spec.decoder_layers)
    assert set(loaded.timings) == {"check_s", "tokenizer_s", "sessions_s", "warmup_s", "load_s"}


@pytest.mark.parametrize("beam_size", [4, 1])
def test_the_service_translates_with_modelscopes_search(loaded: LoadedModel, beam_size: int) -> None:
    """The service's result is exactly: tokenize, modelscope's search (guard off), detokenize, clean.

    One text per call (INT8 graphs quantize activations per batch: a batch's outputs depend on its company) and
    protect_spans off (placeholders would change what the model reads)."""
    config = RuntimeConfig(bundle_dir=loaded.bundle_dir, threads=1)
    service = TranslationService(loaded, config)
    options = TranslateOptions(beam_size=beam_size, repetition_guard=False, protect_spans=False)
    found = [service.translate(text, options) for text in TEXTS]
    settings = loaded.decoding.settings  # type: ignore[attr-defined]
    expected = []
    for text in TEXTS:
        ids = loaded.tokenizer.encode_batch([text])
        input_ids, mask = pad_batch(ids, 0)
        max_length = min(service.max_new_tokens(len(ids[0]), options), settings.max_decoded_length)
        result = csanmt_beam_search(
            loaded.model, input_ids, mask, beam_size=beam_size, max_length=max_length, alpha=settings.alpha
        )
        expected.append(clean_translation(loaded.tokenizer.decode(result.best[0])))
    assert found == expected
    assert service.info()["family"] == "csanmt"


def test_a_batch_searched_in_parts_finds_what_one_search_finds(loaded: LoadedModel) -> None:
    """``handler.model.parallel_search`` on CSANMT's search: 8 sentences as 1, 2 and 3 parts side by side."""
    rows = loaded.tokenizer.encode_batch(TEXTS + [text + text for text in TEXTS])
    request = SearchRequest(beam_size=4, max_new_tokens=tuple(2 * len(row) + 5 for row in rows))
    alone = replace(loaded, streams=1).search(rows, request, width_multiple=16)
    for streams in (2, 3):
        assert replace(loaded, streams=streams).search(rows, request, width_multiple=16) == alone


def _copy(bundle_dir: Path, tmp_path: Path, change: dict[str, object], drop_file: str | None = None) -> Path:
    copy = tmp_path / "bundle"
    shutil.copytree(bundle_dir, copy)
    path = copy / bundle.MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest.update(change)
    if drop_file:
        del manifest["files"][drop_file]
    path.write_text(json.dumps(manifest), encoding="utf-8")
    return copy


def test_an_unknown_family_is_refused_naming_the_supported_ones(csanmt_ending_bundle_dir: Path, tmp_path: Path) -> None:
    copy = _copy(csanmt_ending_bundle_dir, tmp_path, {"family": "nllb"})
    with pytest.raises(BundleError, match=r"names model family 'nllb', .* supported families: csanmt, marian"):
        load_bundle(copy)


def test_a_csanmt_bundle_must_list_its_tokenizer_files(csanmt_ending_bundle_dir: Path, tmp_path: Path) -> None:
    copy = _copy(csanmt_ending_bundle_dir, tmp_path, {}, drop_file="bpe.zh")
    with pytest.raises(BundleError, match=r"does not list bpe\.zh, which the runtime needs"):
        load_bundle(copy)


def test_a_csanmt_bundle_needs_its_tokenizer_section(csanmt_ending_bundle_dir: Path, tmp_path: Path) -> None:
    copy = _copy(csanmt_ending_bundle_dir, tmp_path, {"tokenizer": {}})
    with pytest.raises(BundleError, match=r"has no 'tokenizer' section, which a CSANMT bundle needs"):
        load_model(RuntimeConfig(bundle_dir=copy, threads=1))


def test_graphs_of_another_family_are_refused(loaded: LoadedModel) -> None:
    from handler.model.families import marian

    spec = loaded.spec
    with pytest.raises(BundleError, match=r"does not match bundle format 1 for a marian model .*semantic_bias\.0"):
        OnnxEncoderDecoder(
            loaded.bundle_dir / bundle.ENCODER_ONNX,
            loaded.bundle_dir / bundle.DECODER_ONNX,
            spec,
            marian.graph_contract(spec.decoder_layers),
        )


PROBE = """
import sys
sys.modules["jieba"] = None  # as in an image without requirements/csanmt.txt
from handler.config import RuntimeConfig
from handler.errors import BundleError
from handler.model.loader import load_model
try:
    load_model(RuntimeConfig(bundle_dir=sys.argv[1], threads=1))
except BundleError as error:
    print(error)
"""


def test_missing_tokenizer_libraries_say_what_to_install(csanmt_ending_bundle_dir: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, str(csanmt_ending_bundle_dir)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "needs jieba, subword-nmt and sacremoses" in completed.stdout
    assert "pip install --require-hashes -r requirements/csanmt.txt" in completed.stdout


def test_the_int8_search_agrees_with_fp32(loaded: LoadedModel, csanmt_ending_fp32: OnnxEncoderDecoder) -> None:
    """Stated and bounded: the INT8 bundle's translations (beam 4) on the test sentences vs the FP32 graphs'."""
    rows = loaded.tokenizer.encode_batch(TEXTS)
    input_ids, mask = pad_batch(rows, 0)
    settings = loaded.decoding.settings  # type: ignore[attr-defined]
    arguments = {"beam_size": 4, "max_length": settings.max_decoded_length, "alpha": settings.alpha}
    int8 = csanmt_beam_search(loaded.model, input_ids, mask, **arguments)
    fp32 = csanmt_beam_search(csanmt_ending_fp32, input_ids, mask, **arguments)
    same = np.mean([a == b for a, b in zip(int8.best, fp32.best, strict=True)])
    print(f"\nINT8 = FP32 beam-4 output on {same:.0%} of {len(TEXTS)} sentences")
    assert same >= 0.5


def test_make_runs_server_serves_a_csanmt_bundle(csanmt_ending_bundle_dir: Path, loaded: LoadedModel) -> None:
    """`make run` with TRANSLATE_BUNDLE_DIR on the tiny CSANMT bundle: the real server answers POST /translate."""
    from tests.local_run import serve_and_translate

    answer = serve_and_translate(csanmt_ending_bundle_dir, "我们喜欢机器翻译。")
    assert answer["model"] == load_bundle(csanmt_ending_bundle_dir).name
    assert isinstance(answer["translation"], str) and "\ufffd" not in answer["translation"]
    service = TranslationService(loaded, RuntimeConfig(bundle_dir=csanmt_ending_bundle_dir))
    assert answer["translation"] == service.translate("我们喜欢机器翻译。")  # the same as the service in-process
