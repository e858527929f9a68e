"""Our CSANMT beam search = modelscope's beam search (ids and scores), on modelscope's own steps and on ONNX.

GIVEN a tiny CSANMT whose searches end at every length (``csanmt_ending_dir``: empty outputs, short ones, and
outputs that reach ``max_decoded_trg_len``) and random source sentences, alone and as one padded batch
WHEN modelscope's ``CsanmtForTranslation.beam_search`` runs (the graph its pipeline runs), and our
``csanmt_beam_search`` runs over modelscope's own one-step decoder (``TensorflowStepModel``) and over the
converted FP32 ONNX sessions, for beam 4 and beam 1
THEN every beam's ids are modelscope's and the scores agree (1e-5 on modelscope's steps, 1e-4 on ONNX); in the
padded batch (where modelscope keeps stepping finished sentences) beam 0, the translation, and its score agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from handler.model.batching import pad_batch
from handler.model.families.csanmt.beam_search import csanmt_beam_search, gnmt_length_penalty
from tests.csanmt_runtime import oracle

pytestmark = pytest.mark.slow

BEAM_SIZES = [4, 1]
SINGLES = 10
SAME_STEPS_TOLERANCE = 1e-5
ONNX_TOLERANCE = 1e-4


def _config(folder: Path) -> dict[str, Any]:
    import json

    return dict(json.loads((folder / "configuration.json").read_text(encoding="utf-8"))["model"])


def _sources(folder: Path) -> list[list[int]]:
    rng = np.random.default_rng(7)
    vocab = _config(folder)["src_vocab_size"]
    return [rng.integers(1, vocab, size=int(rng.integers(1, 10))).tolist() for _ in range(SINGLES)]


@pytest.fixture(scope="module")
def searches(csanmt_ending_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    sources = _sources(csanmt_ending_dir)
    batches = [[source] for source in sources] + [sources]
    return oracle.search(csanmt_ending_dir, batches, BEAM_SIZES, tmp_path_factory.mktemp("csanmt-search"))


def _assert_same(ours: dict[str, Any], theirs: dict[str, Any], tolerance: float, all_beams: bool, what: str) -> None:
    if all_beams:
        assert ours["beams"] == theirs["beams"], what
        np.testing.assert_allclose(ours["scores"], theirs["scores"], rtol=0, atol=tolerance, err_msg=what)
    else:
        assert [row[0] for row in ours["beams"]] == [row[0] for row in theirs["beams"]], what
        found, expected = np.asarray(ours["scores"])[:, 0], np.asarray(theirs["scores"])[:, 0]
        np.testing.assert_allclose(found, expected, rtol=0, atol=tolerance, err_msg=what)


def test_the_cases_cover_empty_short_and_maximal_outputs(
    searches: list[dict[str, Any]], csanmt_ending_dir: Path
) -> None:
    longest = _config(csanmt_ending_dir)["max_decoded_trg_len"]
    for beam_size in BEAM_SIZES:
        lengths = {
            len(entry["modelscope"]["beams"][0][0])
            for entry in searches
            if entry["beam_size"] == beam_size and len(entry["sources"]) == 1
        }
        assert 0 in lengths and longest in lengths, (beam_size, lengths)
    assert any(0 < length < longest for entry in searches for length in map(len, entry["modelscope"]["beams"][0]))


def test_our_search_on_modelscopes_steps_is_modelscopes(searches: list[dict[str, Any]]) -> None:
    for entry in searches:
        single = len(entry["sources"]) == 1
        what = f"beam {entry['beam_size']}, sources {entry['sources']}"
        _assert_same(entry["ours"], entry["modelscope"], SAME_STEPS_TOLERANCE, single, what)


def test_our_search_on_the_onnx_sessions_is_modelscopes(
    searches: list[dict[str, Any]], csanmt_ending_fp32: Any, csanmt_ending_dir: Path
) -> None:
    config = _config(csanmt_ending_dir)
    for entry in searches:
        input_ids, mask = pad_batch([[*source, 0] for source in entry["sources"]], 0)
        result = csanmt_beam_search(
            csanmt_ending_fp32,
            input_ids,
            mask,
            beam_size=entry["beam_size"],
            max_length=config["max_decoded_trg_len"],
            alpha=config["lp_rate"],
        )
        ours = {"beams": result.beams, "scores": result.scores.tolist()}
        single = len(entry["sources"]) == 1
        what = f"beam {entry['beam_size']}, sources {entry['sources']}"
        _assert_same(ours, entry["modelscope"], ONNX_TOLERANCE, single, what)


def test_the_gnmt_penalty_is_modelscopes_formula() -> None:
    assert gnmt_length_penalty(1, 0.6) == np.float32(1.0)
    assert gnmt_length_penalty(7, 0.6) == pytest.approx(2.0**0.6, rel=1e-7)
    assert gnmt_length_penalty(95, 1.0) == pytest.approx(100 / 6, rel=1e-7)
