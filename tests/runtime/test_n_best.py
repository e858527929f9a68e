"""The n-best searches behind LibreTranslate's ``alternatives``: Marian's beam search (``beam_n_best``) and CSANMT's
(``CsanmtDecoding.search_n_best``) keep each row's finished hypotheses best first, the first being exactly what the
one-best search returns, at most ``n_best`` and at most ``beam_size`` of them."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from handler.model.bundle import Manifest, ModelSpec
from handler.model.decoding import beam_hypotheses, beam_n_best
from handler.model.families.base import SearchRequest
from handler.model.families.csanmt import CsanmtDecoding, CsanmtDecodingSettings
from handler.model.families.marian import MarianDecoding
from tests.runtime.step_models import PrefixModel, synthetic_spec

A, B, C = 1, 2, 3
SOURCE = (np.array([[5, 6, 0], [5, 0, 0]]), np.array([[1, 1, 1], [1, 1, 0]]))
# three one-token outputs of falling probability, each certain to end after its token
TABLE = {(): {A: 0.5, B: 0.3, C: 0.15}, (A,): {0: 0.99}, (B,): {0: 0.99}, (C,): {0: 0.99}}


def marian_model() -> PrefixModel:
    """The table with Marian's ids: a padding id of its own (Marian's search never emits padding)."""
    model = PrefixModel(TABLE)
    model.spec = synthetic_spec(8, pad_id=6, unk_id=7, decoder_start_id=6)
    return model


def test_marian_n_best_lists_the_finished_hypotheses_best_first() -> None:
    found = beam_n_best(marian_model(), *SOURCE, 10, beam_size=3, n_best=3, repetition_guard=False)
    assert [[h.ids for h in row] for row in found] == [[[A], [B], [C]]] * 2
    first = found[0]
    assert first[0].log_prob == pytest.approx(math.log(0.5) + math.log(0.99), abs=1e-5)
    assert first[1].log_prob == pytest.approx(math.log(0.3) + math.log(0.99), abs=1e-5)
    assert [h.scored_tokens for h in first] == [2, 2, 2]
    # the first of each row is the one-best search's choice, score included
    best = beam_hypotheses(marian_model(), *SOURCE, 10, beam_size=3, repetition_guard=False)
    assert [row[0] for row in found] == best


@pytest.mark.parametrize(("beam_size", "n_best", "count"), [(3, 1, 1), (3, 2, 2), (2, 5, 2), (1, 4, 1)])
def test_marian_n_best_is_bounded_by_n_best_and_the_beam(beam_size: int, n_best: int, count: int) -> None:
    found = beam_n_best(marian_model(), *SOURCE, 10, beam_size=beam_size, n_best=n_best, repetition_guard=False)
    assert [len(row) for row in found] == [count, count]
    assert found[0][0].ids == [A]


def test_n_best_must_ask_for_one_at_least() -> None:
    with pytest.raises(ValueError, match="n_best must be at least 1"):
        beam_n_best(marian_model(), *SOURCE, 10, beam_size=2, n_best=0)


def test_the_marian_family_searches_n_best_with_its_length_penalty() -> None:
    request = SearchRequest(beam_size=3, max_new_tokens=10, repetition_guard=False)
    rows = MarianDecoding().search_n_best(marian_model(), *SOURCE, request, 3)
    assert [[h.ids for h in row] for row in rows] == [[[A], [B], [C]]] * 2
    assert [row[0] for row in rows] == MarianDecoding().search(marian_model(), *SOURCE, request)


def _csanmt() -> CsanmtDecoding:
    decoding = {"length_penalty": "gnmt", "alpha": 0.6, "max_decoded_length": 100, "eos_id": 0, "beam_size": 4}
    spec = ModelSpec(40, 16, 2, 8, 2, 2, 256, 0, 0, 39, 0)
    manifest = Manifest(name="t", source_model="s", model=spec, files={}, family="csanmt", decoding=decoding)
    return CsanmtDecoding(CsanmtDecodingSettings.from_manifest(manifest, Path("manifest.json")))


def test_csanmt_n_best_keeps_its_final_beams_best_first() -> None:
    request = SearchRequest(beam_size=3, max_new_tokens=10, repetition_guard=False)
    rows = _csanmt().search_n_best(PrefixModel(TABLE), *SOURCE, request, 3)
    assert [[h.ids for h in row] for row in rows] == [[[A], [B], [C]]] * 2
    best = _csanmt().search(PrefixModel(TABLE), *SOURCE, request)
    assert [row[0] for row in rows] == best  # the first carries the one-best search's score and guard flag
    assert len(_csanmt().search_n_best(PrefixModel(TABLE), *SOURCE, request, 2)[0]) == 2
