"""Batch planning: every sentence once, similar lengths together, budgets kept, order restored."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from handler.model.batching import MAX_ROWS, Batch, kv_cache_bytes_per_row, pad_batch, plan_batches, restore_order


@given(
    lengths=st.lists(st.integers(min_value=1, max_value=300), max_size=200),
    max_tokens=st.integers(min_value=64, max_value=4096),
    beam_size=st.integers(min_value=1, max_value=8),
)
def test_plan_covers_every_sentence_once_within_budget(lengths: list[int], max_tokens: int, beam_size: int) -> None:
    batches = plan_batches(lengths, max_tokens=max_tokens, beam_size=beam_size)
    positions = [index for batch in batches for index in batch.indices]
    assert sorted(positions) == list(range(len(lengths)))
    for batch in batches:
        assert batch.width == max(lengths[index] for index in batch.indices)
        rows = batch.size * beam_size
        if batch.size > 1:  # a single sentence may exceed the budget on its own
            assert rows * batch.width <= max_tokens
            assert rows <= MAX_ROWS
    # longest first, and batches do not interleave lengths
    widths = [batch.width for batch in batches]
    assert widths == sorted(widths, reverse=True)
    for earlier, later in zip(batches, batches[1:], strict=False):
        assert min(lengths[i] for i in earlier.indices) >= max(lengths[i] for i in later.indices)


def test_similar_lengths_share_a_batch_and_fill_it() -> None:
    lengths = [10, 200, 12, 11, 198, 9]
    batches = plan_batches(lengths, max_tokens=400, beam_size=1)
    assert [set(batch.indices) for batch in batches] == [{1, 4}, {2, 3, 0, 5}]
    assert [batch.width for batch in batches] == [200, 12]


def test_beams_count_as_rows() -> None:
    lengths = [20] * 10
    assert [batch.size for batch in plan_batches(lengths, max_tokens=200, beam_size=1)] == [10]
    assert [batch.size for batch in plan_batches(lengths, max_tokens=200, beam_size=4)] == [2, 2, 2, 2, 2]
    assert [batch.size for batch in plan_batches([1] * 100, max_tokens=10_000, beam_size=4)] == [16] * 6 + [4]


def test_a_sentence_over_the_budget_gets_a_batch_of_its_own() -> None:
    batches = plan_batches([500, 20, 20], max_tokens=256, beam_size=1)
    assert batches == [Batch((0,), 500), Batch((1, 2), 20)]


def test_restore_order_puts_outputs_back_by_position() -> None:
    lengths = [3, 9, 1, 7, 5]
    batches = plan_batches(lengths, max_tokens=16, beam_size=1)
    outputs = [[f"out{index}" for index in batch.indices] for batch in batches]
    assert restore_order(batches, outputs, len(lengths)) == [f"out{index}" for index in range(5)]
    with pytest.raises(ValueError, match="produced 0 outputs"):
        restore_order(batches, [[] for _ in batches], len(lengths))


def test_pad_batch_right_pads_with_a_mask() -> None:
    input_ids, attention_mask = pad_batch([[5, 6, 0], [7, 0]], pad_id=99)
    assert input_ids.tolist() == [[5, 6, 0], [7, 0, 99]]
    assert attention_mask.tolist() == [[1, 1, 1], [1, 1, 0]]
    assert input_ids.dtype == attention_mask.dtype == np.int64


def test_pad_batch_rounds_the_width_up_to_the_multiple_but_not_past_the_model() -> None:
    from handler.model.batching import WIDTH_MULTIPLE, padded_width

    input_ids, attention_mask = pad_batch([[5] * 11, [7] * 3], pad_id=99, max_width=512, multiple=WIDTH_MULTIPLE)
    assert input_ids.shape == attention_mask.shape == (2, 16)
    assert attention_mask.sum(axis=1).tolist() == [11, 3]
    assert (input_ids[0, 11:] == 99).all()
    assert [padded_width(n, 512) for n in (1, 16, 17, 500, 511, 512)] == [16, 16, 32, 512, 512, 512]
    assert padded_width(20, max_width=18) == 20  # never narrower than the longest sequence
    assert padded_width(7, multiple=1) == 7


def test_plan_rejects_non_positive_budgets() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        plan_batches([1], max_tokens=0)


@given(
    lengths=st.lists(st.integers(min_value=1, max_value=120), min_size=1, max_size=150),
    beam_size=st.integers(min_value=1, max_value=8),
    megabytes=st.integers(min_value=1, max_value=64),
)
def test_a_batch_keeps_its_decoder_memory_within_the_budget(lengths: list[int], beam_size: int, megabytes: int) -> None:
    def row_bytes(width: int) -> int:  # a model of 2 decoder layers of 64, 2 output tokens per source token + 10
        return kv_cache_bytes_per_row(2, 64, width, 2 * width + 10)

    budget = megabytes * 1_000_000 // 16
    batches = plan_batches(lengths, max_tokens=100_000, beam_size=beam_size, row_bytes=row_bytes, max_bytes=budget)
    assert sorted(index for batch in batches for index in batch.indices) == list(range(len(lengths)))
    for batch in batches:
        if batch.size > 1:
            assert batch.size * beam_size * row_bytes(batch.width) <= budget


def test_a_full_size_csanmt_batch_has_fewer_rows_than_a_small_models() -> None:
    # 32-token sentences, 74 output tokens: CSANMT's decoder (6 x 1,024) needs 8.8 MB of caches per row
    assert kv_cache_bytes_per_row(6, 1024, 32, 74) == 4 * 2 * 6 * 1024 * (32 + 2 * 74)
    lengths = [32] * 64
    for layers, d_model, rows in ((6, 1024, 28), (6, 512, 60), (3, 256, 64)):
        batches = plan_batches(
            lengths,
            max_tokens=100_000,
            beam_size=4,
            row_bytes=lambda width, layers=layers, d_model=d_model: kv_cache_bytes_per_row(layers, d_model, width, 74),
        )
        assert batches[0].size * 4 == rows
