"""CSANMT's encoder runs a batch of mixed lengths in width groups (``beam_search.encode_by_width``).

GIVEN a batch whose sentences need different widths WHEN the search encodes it THEN rows of similar width are
encoded together at their own width (a multiple of 16) where that saves more positions than a call costs, and
the decoder sees what one call over the whole batch gives at every position it reads (the padding is masked).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from handler.model.families.csanmt import beam_search
from handler.model.families.csanmt.beam_search import (
    ENCODER_CALL_POSITIONS,
    csanmt_beam_search,
    encode_by_width,
    width_groups,
)
from tests.runtime.step_models import synthetic_spec


def _as_lists(groups: list[np.ndarray]) -> list[list[int]]:
    return [group.tolist() for group in groups]


def test_rows_of_one_width_are_one_group() -> None:
    assert _as_lists(width_groups(np.array([17, 20, 32, 25]), 32)) == [[0, 1, 2, 3]]


def test_short_rows_beside_long_ones_get_their_own_group_when_it_saves_more_than_a_call() -> None:
    lengths = np.array([70, 5, 66, 9, 12, 3, 14, 80])
    # alone: 3 rows x 80 + 5 rows x 16 positions (+ 2 calls) against 8 x 80 (+ 1 call)
    assert _as_lists(width_groups(lengths, 80)) == [[0, 2, 7], [1, 3, 4, 5, 6]]


def test_a_group_that_saves_less_than_a_call_stays_with_the_wider_rows() -> None:
    lengths = np.array([40, 30])  # widths 48 and 32: apart they save 16 positions, less than a call costs
    assert 16 < ENCODER_CALL_POSITIONS
    assert _as_lists(width_groups(lengths, 40)) == [[0, 1]]


def test_groups_never_exceed_the_batch_width() -> None:
    # the batch is 35 wide: the widest rows need 35 (not 48), the others 16 and 32
    groups = width_groups(np.array([35, 2, 3, 4, 5, 6, 7, 20, 21, 22, 23, 34]), 35, call_positions=0)
    assert _as_lists(groups) == [[0, 11], [7, 8, 9, 10], [1, 2, 3, 4, 5, 6]]


class WidthSensitiveModel:
    """A step model whose encoder writes a row's token ids at its positions and the batch width into the padding;
    its decoder prefers, at step t, the source token at position t of its row (0 once past the row's length)."""

    VOCAB = 50

    def __init__(self) -> None:
        self.spec = synthetic_spec(self.VOCAB, pad_id=0, unk_id=1, decoder_start_id=0)
        self.encoded_widths: list[tuple[int, int]] = []

    def encode(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> list[np.ndarray]:
        self.encoded_widths.append(input_ids.shape)
        values = np.where(attention_mask == 1, input_ids, input_ids.shape[1]).astype(np.float32)
        keys = np.repeat(values[:, None, :, None], 4, axis=3)  # [rows, heads 1, width, head_dim 4]
        semantic = attention_mask.sum(axis=1).astype(np.float32)[:, None, None] * np.ones((1, 1, 4), np.float32)
        return [keys, keys * 2, semantic]

    def empty_past(self, batch_size: int) -> list[np.ndarray]:
        return [np.zeros((batch_size, 1, 0, 4), np.float32) for _ in range(2)]

    def step(self, input_ids: np.ndarray, mask: np.ndarray, past: list[np.ndarray], cross: list[np.ndarray]) -> Any:
        position = past[0].shape[2]
        seen = np.where(mask == 1, cross[0][:, 0, :, 0], 0.0)  # only the positions the mask lets through
        wanted = seen[:, position].astype(np.int64) if position < seen.shape[1] else np.zeros(len(mask), np.int64)
        wanted = wanted + (cross[2][:, 0, 0] * 0).astype(np.int64)  # the semantic array travels with its row
        log_probs = np.full((input_ids.shape[0], self.VOCAB), -20.0, np.float32)
        log_probs[np.arange(len(wanted)), wanted % self.VOCAB] = -0.01
        grown = [np.concatenate([array, np.zeros((len(array), 1, 1, 4), np.float32)], axis=2) for array in past]
        return log_probs, grown


def _batch(lengths: list[int], width: int) -> tuple[np.ndarray, np.ndarray]:
    ids = np.zeros((len(lengths), width), np.int64)
    mask = np.zeros_like(ids)
    for row, length in enumerate(lengths):
        ids[row, :length] = np.arange(1, length + 1) % 40 + 5
        mask[row, :length] = 1
    return ids, mask


def test_grouped_outputs_equal_one_call_where_the_mask_reads_and_zero_past_a_groups_width() -> None:
    model = WidthSensitiveModel()
    ids, mask = _batch([70, 5, 66, 9, 12, 3, 14, 80], 80)
    whole = model.encode(ids, mask)
    model.encoded_widths.clear()
    grouped = encode_by_width(model, ids, mask)
    assert model.encoded_widths == [(3, 80), (5, 16)]
    for found, expected in zip(grouped, whole, strict=True):
        assert found.shape == expected.shape
        if found.ndim == 4:
            valid = mask.astype(bool)[:, None, :, None] & np.ones(found.shape, bool)
            np.testing.assert_array_equal(found[valid], expected[valid])
            assert not found[[1, 3, 4, 5, 6], :, 16:].any()  # past the short group's width: zeros
        else:
            np.testing.assert_array_equal(found, expected)


@pytest.mark.parametrize("beam_size", [4, 1])
def test_the_search_over_grouped_encodings_is_the_search_over_one_call(
    beam_size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    lengths = [70, 5, 66, 9, 12, 3, 14, 80]
    ids, mask = _batch(lengths, 80)
    limits = np.array(lengths) + 1
    model = WidthSensitiveModel()
    grouped = csanmt_beam_search(model, ids, mask, beam_size=beam_size, max_length=limits)
    assert len(model.encoded_widths) == 2
    assert grouped.best[1] == [(i % 40) + 5 for i in range(1, 6)]  # row 1 read its own 5 tokens, then </s>

    monkeypatch.setattr(beam_search, "encode_by_width", lambda model, ids, mask: model.encode(ids, mask))
    one_call = WidthSensitiveModel()
    expected = csanmt_beam_search(one_call, ids, mask, beam_size=beam_size, max_length=limits)
    assert one_call.encoded_widths == [(8, 80)]
    assert grouped.beams == expected.beams
    np.testing.assert_array_equal(grouped.scores, expected.scores)


def test_a_row_of_padding_alone_is_encoded_at_a_width_of_its_own_not_zero() -> None:
    model = WidthSensitiveModel()
    ids, mask = _batch([0, 0, 0, 0, 80], 80)
    grouped = encode_by_width(model, ids, mask)
    assert model.encoded_widths == [(1, 80), (4, 16)]
    assert grouped[0].shape == (5, 1, 80, 4)
