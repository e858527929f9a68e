"""CSANMT's beam search (modelscope's rules) on synthetic step models whose probabilities a table fixes.

The comparison with modelscope itself is ``tests/csanmt_runtime/test_search_parity.py``; these tests pin each
rule on cases small enough to work out by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from handler.errors import BundleError
from handler.model.bundle import Manifest, ModelSpec
from handler.model.decoding import RepetitionGuard
from handler.model.families.base import SearchRequest
from handler.model.families.csanmt import CsanmtDecoding, CsanmtDecodingSettings
from handler.model.families.csanmt.beam_search import csanmt_beam_search, gnmt_length_penalty
from tests.runtime.step_models import LoopingModel, PrefixModel, synthetic_spec

A, B, C = 1, 2, 3
SOURCE = (np.array([[5, 6, 0]]), np.array([[1, 1, 1]]))


def lp(length: int, alpha: float = 0.6) -> float:
    return ((5 + length) / 6) ** alpha


def test_an_end_of_sentence_first_is_an_empty_output_with_its_score() -> None:
    model = PrefixModel({(): {0: 0.9, A: 0.05}})
    result = csanmt_beam_search(model, *SOURCE, beam_size=4, max_length=10)
    assert result.best == [[]]
    assert result.scores[0, 0] == pytest.approx(math.log(0.9) / lp(1), rel=1e-6)
    # the bound is met after one step: log p of the best running hypothesis / lp(10) < log 0.9; that first step
    # decodes one row per sentence (its beams are all the empty hypothesis)
    assert model.step_rows == [1]


def test_scores_are_log_probabilities_over_the_gnmt_penalty() -> None:
    model = PrefixModel({(): {A: 0.6, B: 0.3}, (A,): {B: 0.7}, (A, B): {0: 0.95}})
    result = csanmt_beam_search(model, *SOURCE, beam_size=2, max_length=10)
    assert result.best == [[A, B]]
    expected = (math.log(0.6) + math.log(0.7) + math.log(0.95)) / lp(3)
    assert result.scores[0, 0] == pytest.approx(expected, rel=1e-5)


def test_beam_one_is_modelscopes_search_not_argmax() -> None:
    """GIVEN </s> most likely first, then A followed by a certain </s> WHEN alpha rewards length (2.0)
    THEN beam 1 keeps A running while </s> waits finished, and [A] beats the empty output."""
    model = PrefixModel({(): {0: 0.5, A: 0.4}, (A,): {0: 0.99}})
    assert csanmt_beam_search(model, *SOURCE, beam_size=1, max_length=10, alpha=0.6).best == [[]]
    result = csanmt_beam_search(model, *SOURCE, beam_size=1, max_length=10, alpha=2.0)
    assert result.best == [[A]]
    assert result.scores[0, 0] == pytest.approx((math.log(0.4) + math.log(0.99)) / lp(2, 2.0), rel=1e-5)


def test_an_output_that_never_ends_stops_at_the_maximum_length_with_its_running_score() -> None:
    model = PrefixModel({(): {A: 0.9, 0: 1e-6}} | {(A,) * n: {A: 0.9, 0: 1e-6} for n in range(1, 8)})
    result = csanmt_beam_search(model, *SOURCE, beam_size=2, max_length=5)
    assert result.best == [[A] * 5]
    assert len(model.step_rows) == 5
    assert result.scores[0, 0] == pytest.approx(5 * math.log(0.9) / lp(5), rel=1e-5)


def test_sentences_that_are_done_leave_the_batch() -> None:
    model = PrefixModel({(): {0: 0.9}})  # every sentence ends at once
    input_ids = np.array([[5, 0, 0], [6, 7, 0]])
    result = csanmt_beam_search(model, input_ids, (input_ids > 0).astype(np.int64) | 1, beam_size=3, max_length=8)
    assert result.best == [[], []]
    assert model.step_rows == [2]


def test_the_minimum_length_forbids_an_early_end() -> None:
    model = PrefixModel({(): {0: 0.9, A: 0.09}, (A,): {0: 0.5, A: 0.49}, (A, A): {0: 0.99}})
    assert csanmt_beam_search(model, *SOURCE, beam_size=2, max_length=10).best == [[]]
    result = csanmt_beam_search(model, *SOURCE, beam_size=2, max_length=10, min_length=2)
    assert result.best == [[A, A]]


def test_the_repetition_guard_breaks_loops() -> None:
    model = LoopingModel({5: 5})  # token 5 wants to follow itself forever
    model.spec = synthetic_spec(LoopingModel.VOCAB, pad_id=0, unk_id=1, decoder_start_id=0)
    source = (np.full((1, 3), 5), np.ones((1, 3), np.int64))
    looping = csanmt_beam_search(model, *source, beam_size=2, max_length=12)
    guarded = csanmt_beam_search(model, *source, beam_size=2, max_length=12, repetition_guard=RepetitionGuard())
    assert max(looping.best[0].count(token) for token in set(looping.best[0])) > 3
    tokens = guarded.best[0]
    runs = [
        len(run) for run in "".join("x" if a == b else " " for a, b in zip(tokens, tokens[1:], strict=False)).split()
    ]
    assert max(runs, default=0) < 3


def test_gnmt_penalty_in_float32() -> None:
    assert gnmt_length_penalty(3, 0.6).dtype == np.float32
    assert gnmt_length_penalty(1, 0.6) == 1.0


def _manifest(decoding: dict[str, object]) -> Manifest:
    spec = ModelSpec(40, 16, 2, 8, 2, 2, 256, 0, 0, 39, 0)
    return Manifest(name="t", source_model="s", model=spec, files={}, family="csanmt", decoding=decoding)


DECODING = {"length_penalty": "gnmt", "alpha": 0.6, "max_decoded_length": 100, "eos_id": 0, "beam_size": 4}


def test_the_service_options_map_onto_modelscopes_parameters() -> None:
    from pathlib import Path

    decoding = CsanmtDecoding(CsanmtDecodingSettings.from_manifest(_manifest(DECODING), Path("manifest.json")))
    assert decoding.max_length(SearchRequest(beam_size=4, max_new_tokens=30)) == 30
    assert decoding.max_length(SearchRequest(beam_size=4, max_new_tokens=300)) == 100
    model = PrefixModel({(): {0: 0.5, A: 0.4}, (A,): {0: 0.99}})
    unset = SearchRequest(beam_size=1, max_new_tokens=10, repetition_guard=False)
    assert [h.ids for h in decoding.search(model, *SOURCE, unset)] == [[]]  # alpha 0.6 from the manifest
    longer = SearchRequest(beam_size=1, max_new_tokens=10, length_penalty=2.0, repetition_guard=False)
    assert [h.ids for h in decoding.search(model, *SOURCE, longer)] == [[A]]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"length_penalty": "average"}, r"length_penalty 'average'; this runtime's CSANMT search implements 'gnmt'"),
        ({"eos_id": 2}, r"CSANMT ends and pads sentences with id 0; found eos_id 2"),
        ({"alpha": "0.6"}, r"needs 'alpha'"),
        ({"max_decoded_length": 0}, r"max_decoded_length and beam_size at least 1"),
    ],
)
def test_a_bad_decoding_section_is_refused_with_its_reason(change: dict[str, object], message: str) -> None:
    from pathlib import Path

    with pytest.raises(BundleError, match=message):
        CsanmtDecodingSettings.from_manifest(_manifest({**DECODING, **change}), Path("manifest.json"))
