"""A length limit per row keeps decoding batch invariant: each row of a batch comes out as it does alone with its
own limit, whether it ends with ``</s>`` or runs to that limit, in greedy search, Marian's beam search and CSANMT's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from handler.model.decoding import Hypothesis, beam_hypotheses, greedy_hypotheses, row_limits
from handler.model.families.csanmt.beam_search import csanmt_beam_search
from tests.runtime.step_models import LoopingModel, PrefixModel

pytestmark = pytest.mark.slow


def alone(search: Any, source: tuple[np.ndarray, np.ndarray], limits: list[int]) -> list[Hypothesis]:
    input_ids, mask = source
    return [search(input_ids[row : row + 1], mask[row : row + 1], limit)[0] for row, limit in enumerate(limits)]


@pytest.mark.parametrize("beam_size", [1, 3])
def test_each_row_decodes_as_alone_with_its_own_limit(tiny_fp32_model: Any, source_batch: Any, beam_size: int) -> None:
    # GIVEN a batch whose rows get limits from 2 to 30 (the random tiny model often runs to its limit)
    rows = source_batch[0].shape[0]
    limits = [2 + (7 * row) % 29 for row in range(rows)]

    def search(input_ids: np.ndarray, mask: np.ndarray, limit: Any) -> list[Hypothesis]:
        return beam_hypotheses(tiny_fp32_model, input_ids, mask, limit, beam_size=beam_size)

    # WHEN the batch is decoded once with one limit per row
    together = search(*source_batch, np.array(limits))
    # THEN every row equals its own decoding alone, ids, score and guard flag
    single = alone(search, source_batch, limits)
    assert [h.ids for h in together] == [h.ids for h in single]
    for found, expected, limit in zip(together, single, limits, strict=True):
        assert found.log_prob == pytest.approx(expected.log_prob, abs=1e-3)
        assert found.scored_tokens == expected.scored_tokens and found.guard_fired == expected.guard_fired
        assert len(found.ids) <= limit - 1
    assert any(len(h.ids) == limit - 1 for h, limit in zip(together, limits, strict=True))  # some ran to it


def test_a_looping_row_stops_at_its_own_limit_not_its_neighbours() -> None:
    model = LoopingModel({token: 7 for token in range(24)})  # never ends by itself
    source = (np.array([[5, 6, 0], [7, 0, 23]], np.int64), np.array([[1, 1, 1], [1, 1, 0]], np.int64))
    for search in (
        lambda limits: greedy_hypotheses(model, *source, limits),
        lambda limits: beam_hypotheses(model, *source, limits, beam_size=2, repetition_guard=False),
    ):
        short, long = search(np.array([4, 9]))
        assert short.ids == [7, 7, 7] and len(long.ids) == 8
        assert short.scored_tokens == 4 and long.scored_tokens == 9


def test_csanmt_rows_stop_at_their_own_maximum_length() -> None:
    # "2 2 2 ..." with </s> less likely than 2 at every step: each row runs to its own maximum length
    model = PrefixModel({(2,) * n: {2: 0.9, 0: 0.001} for n in range(12)})
    source = (np.ones((2, 1), np.int64), np.ones((2, 1), np.int64))
    result = csanmt_beam_search(model, *source, beam_size=2, max_length=np.array([3, 7]), alpha=0.6)
    single = [
        csanmt_beam_search(model, source[0][:1], source[1][:1], beam_size=2, max_length=limit, alpha=0.6)
        for limit in (3, 7)
    ]
    assert result.best == [single[0].best[0], single[1].best[0]]
    assert [len(ids) for ids in result.best] == [len(single[0].best[0]), len(single[1].best[0])]
    assert len(result.best[0]) < len(result.best[1])
    hypotheses, expected = result.best_hypotheses(), [s.best_hypotheses()[0] for s in single]
    for found, want in zip(hypotheses, expected, strict=True):
        assert found.log_prob == pytest.approx(want.log_prob, abs=1e-4)


def test_row_limits_broadcast_and_refuse_zero() -> None:
    assert row_limits(5, 3).tolist() == [5, 5, 5]
    assert row_limits([1, 2], 2).tolist() == [1, 2]
    with pytest.raises(ValueError, match="at least 1"):
        row_limits([3, 0], 2)


def test_each_row_is_handed_back_as_soon_as_it_stops() -> None:
    """The process's decoder answers a request as soon as its rows are done, not when the batch's longest is."""
    model = LoopingModel({token: 7 for token in range(24)})  # never ends by itself: each row runs to its limit
    source = (np.array([[5, 6, 0], [7, 0, 23]], np.int64), np.array([[1, 1, 1], [1, 1, 0]], np.int64))
    events: list[Any] = []
    step = model.step

    def counted(*args: Any) -> Any:
        events.append("step")
        return step(*args)

    model.step = counted  # type: ignore[method-assign]
    for search in (
        lambda limits, on_row: greedy_hypotheses(model, *source, limits, on_row=on_row),
        lambda limits, on_row: beam_hypotheses(
            model, *source, limits, beam_size=2, repetition_guard=False, on_row=on_row
        ),
    ):
        events.clear()
        found = search(np.array([4, 9]), lambda row, hypothesis: events.append((row, hypothesis)))
        handed = [event for event in events if event != "step"]
        assert handed == [(0, found[0]), (1, found[1])]  # each row once, what the search returns
        assert events[events.index(handed[0]) :].count("step") >= 4, "the short row came back before the long ended"
