"""The ONNX Runtime wrapper: cache shapes and order as in the bundle contract, normalised log-probabilities."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from handler.loader import LoadedModel
from handler.onnx_model import OnnxMarian, session_options


def test_encode_and_step_shapes_follow_the_contract(tiny_loaded: LoadedModel, source_batch: Any) -> None:
    model, spec = tiny_loaded.model, tiny_loaded.spec
    input_ids, attention_mask = source_batch
    batch, src_len = input_ids.shape
    cross = model.encode(input_ids, attention_mask)
    assert len(cross) == 2 * spec.decoder_layers
    assert {array.shape for array in cross} == {(batch, spec.attention_heads, src_len, spec.head_dim)}

    past = model.empty_past(batch)
    assert {array.shape for array in past} == {(batch, spec.attention_heads, 0, spec.head_dim)}
    tokens = np.full((batch, 1), spec.decoder_start_id, dtype=np.int64)
    for length in (1, 2, 3):
        log_probs, past = model.step(tokens, attention_mask, past, cross)
        assert log_probs.shape == (batch, spec.vocab_size) and log_probs.dtype == np.float32
        np.testing.assert_allclose(np.exp(log_probs).sum(axis=1), 1.0, rtol=1e-4)
        assert {array.shape for array in past} == {(batch, spec.attention_heads, length, spec.head_dim)}
        tokens = log_probs.argmax(axis=1)[:, None]


def test_padding_does_not_change_a_sentence_result(tiny_fp32_model: OnnxMarian, source_batch: Any) -> None:
    # the same sentence alone and inside a padded batch gives the same next-token distribution (FP32 graphs:
    # INT8 graphs quantize activations with one scale per tensor, so there a batch's rows affect each other)
    model, spec = tiny_fp32_model, tiny_fp32_model.spec
    input_ids, attention_mask = source_batch
    row = int(attention_mask.sum(axis=1).argmin())  # the most padded row
    length = int(attention_mask[row].sum())
    start = np.full((1, 1), spec.decoder_start_id, dtype=np.int64)
    alone, _ = model.step(
        start,
        attention_mask[row : row + 1, :length],
        model.empty_past(1),
        model.encode(input_ids[row : row + 1, :length], attention_mask[row : row + 1, :length]),
    )
    start_all = np.full((len(input_ids), 1), spec.decoder_start_id, dtype=np.int64)
    batched, _ = model.step(
        start_all, attention_mask, model.empty_past(len(input_ids)), model.encode(input_ids, attention_mask)
    )
    np.testing.assert_allclose(batched[row], alone[0], atol=1e-4)


def test_session_options_reject_zero_threads() -> None:
    with pytest.raises(ValueError, match="threads must be at least 1; got 0"):
        session_options(0, spinning=False)
    assert session_options(2, spinning=True).get_session_config_entry("session.intra_op.allow_spinning") == "1"
