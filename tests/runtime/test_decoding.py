"""Greedy and beam search against transformers' ``generate``, token for token, and the repetition guard."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from handler.model.bundle import ModelSpec
from handler.model.decoding import (
    TRIGRAM_GUARD,
    RepetitionGuard,
    ban_repetitions,
    beam_search,
    content_ids,
    greedy_search,
)
from handler.model.families.marian.sessions import OnnxMarian
from tests.runtime.step_models import CountingModel, LoopingModel

MAX_NEW_TOKENS = 40


def hf_generate(
    checkpoint: Any, batch: tuple[np.ndarray, np.ndarray], max_new_tokens: int, **settings: Any
) -> list[list[int]]:
    """transformers ``generate`` with OPUS-MT's settings; ids after the start token, before ``</s>``.

    Settings go to ``generate`` as keyword arguments: fields of a ``GenerationConfig`` argument that equal the
    library defaults (``num_beams=1``...) would be replaced by the checkpoint's own values (``num_beams=4``).
    """
    import torch

    spec = checkpoint.spec
    with torch.inference_mode():
        output = checkpoint.model.generate(
            input_ids=torch.from_numpy(batch[0]),
            attention_mask=torch.from_numpy(batch[1]),
            decoder_start_token_id=spec.decoder_start_id,
            eos_token_id=spec.eos_id,
            pad_token_id=spec.pad_id,
            forced_eos_token_id=spec.eos_id,
            bad_words_ids=[[spec.pad_id]],
            do_sample=False,
            max_new_tokens=max_new_tokens,
            **{"num_beams": 1, "length_penalty": 1.0, "no_repeat_ngram_size": 0, **settings},
        )
    return [content_ids(row, spec) for row in output[:, 1:].numpy()]


def has_repeated_ngram(tokens: list[int], n: int) -> bool:
    ngrams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return len(ngrams) != len(set(ngrams))


def has_tandem_repeat(tokens: list[int]) -> bool:
    """Whether a stretch of two or more tokens is followed at once by itself."""
    return any(
        tokens[i : i + k] == tokens[i + k : i + 2 * k]
        for k in range(2, len(tokens) // 2 + 1)
        for i in range(len(tokens) - 2 * k + 1)
    )


def longest_run(tokens: list[int]) -> int:
    longest = run = 0
    for index, token in enumerate(tokens):
        run = run + 1 if index and token == tokens[index - 1] else 1
        longest = max(longest, run)
    return longest


def looping_batch(rows: int = 2) -> tuple[np.ndarray, np.ndarray]:
    return np.full((rows, 3), 5, dtype=np.int64), np.ones((rows, 3), dtype=np.int64)


# --- greedy ---------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_greedy_equals_transformers_generate(
    tiny_checkpoint: Any, tiny_fp32_model: OnnxMarian, source_batch: Any
) -> None:
    # GIVEN the tiny model's FP32 graphs and a padded batch of varied sentences
    # WHEN both decode greedily
    ours = greedy_search(tiny_fp32_model, *source_batch, MAX_NEW_TOKENS)
    reference = hf_generate(tiny_checkpoint, source_batch, MAX_NEW_TOKENS, num_beams=1)
    # THEN every output is identical, and the batch exercised both endings (</s> and the length limit)
    assert ours == reference
    lengths = {len(tokens) for tokens in ours}
    assert MAX_NEW_TOKENS - 1 in lengths and min(lengths) < MAX_NEW_TOKENS - 1


@pytest.mark.slow
def test_greedy_with_guard_equals_transformers_no_repeat_ngram(
    tiny_checkpoint: Any, tiny_fp32_model: OnnxMarian, source_batch: Any
) -> None:
    ours = greedy_search(tiny_fp32_model, *source_batch, MAX_NEW_TOKENS, repetition_guard=TRIGRAM_GUARD)
    reference = hf_generate(tiny_checkpoint, source_batch, MAX_NEW_TOKENS, num_beams=1, no_repeat_ngram_size=3)
    assert ours == reference
    assert not any(has_repeated_ngram(tokens, 3) for tokens in ours)


def test_greedy_drops_finished_rows_from_the_batch(tiny_fp32_model: OnnxMarian, source_batch: Any) -> None:
    counting = CountingModel(tiny_fp32_model)
    outputs = greedy_search(counting, *source_batch, MAX_NEW_TOKENS)
    # a row that ended with </s> took one step per token plus the one that chose </s>; a row cut at the limit
    # took MAX_NEW_TOKENS - 1 steps (its forced </s> needs no step)
    steps = [min(len(tokens) + 1, MAX_NEW_TOKENS - 1) for tokens in outputs]
    assert counting.step_rows == [sum(1 for taken in steps if taken > step) for step in range(max(steps))]
    assert counting.step_rows[-1] < len(outputs)


def test_greedy_never_produces_the_pad_token(
    tiny_fp32_model: OnnxMarian, source_batch: Any, tiny_spec: ModelSpec
) -> None:
    outputs = greedy_search(tiny_fp32_model, *source_batch, MAX_NEW_TOKENS)
    assert all(tiny_spec.pad_id not in tokens and tiny_spec.eos_id not in tokens for tokens in outputs)


def test_min_new_tokens_forces_the_output_length(tiny_fp32_model: OnnxMarian, source_batch: Any) -> None:
    outputs = greedy_search(tiny_fp32_model, *source_batch, 30, min_new_tokens=30)
    assert [len(tokens) for tokens in outputs] == [29] * len(outputs)  # 29 tokens, then the forced </s>


def test_max_new_tokens_counts_the_end_token(tiny_fp32_model: OnnxMarian, source_batch: Any) -> None:
    assert greedy_search(tiny_fp32_model, *source_batch, 1) == [[]] * len(source_batch[0])
    with pytest.raises(ValueError, match="max_new_tokens must be at least 1"):
        greedy_search(tiny_fp32_model, *source_batch, 0)


# --- beam search ----------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("beam_size", "length_penalty"), [(2, 1.0), (3, 1.0), (4, 1.0), (4, 0.6), (3, 2.0), (2, 0.0)])
def test_beam_search_equals_transformers_generate(
    tiny_checkpoint: Any, tiny_fp32_model: OnnxMarian, source_batch: Any, beam_size: int, length_penalty: float
) -> None:
    ours = beam_search(
        tiny_fp32_model,
        *source_batch,
        MAX_NEW_TOKENS,
        beam_size=beam_size,
        length_penalty=length_penalty,
        repetition_guard=False,
    )
    reference = hf_generate(
        tiny_checkpoint, source_batch, MAX_NEW_TOKENS, num_beams=beam_size, length_penalty=length_penalty
    )
    assert ours == reference


@pytest.mark.slow
@pytest.mark.parametrize("beam_size", [2, 4])
def test_beam_search_with_guard_equals_transformers_no_repeat_ngram(
    tiny_checkpoint: Any, tiny_fp32_model: OnnxMarian, source_batch: Any, beam_size: int
) -> None:
    ours = beam_search(
        tiny_fp32_model, *source_batch, MAX_NEW_TOKENS, beam_size=beam_size, repetition_guard=TRIGRAM_GUARD
    )
    reference = hf_generate(tiny_checkpoint, source_batch, MAX_NEW_TOKENS, num_beams=beam_size, no_repeat_ngram_size=3)
    assert ours == reference
    assert not any(has_repeated_ngram(tokens, 3) for tokens in ours)


def test_beam_size_one_is_greedy(tiny_fp32_model: OnnxMarian, source_batch: Any) -> None:
    assert beam_search(tiny_fp32_model, *source_batch, MAX_NEW_TOKENS, beam_size=1, repetition_guard=False) == (
        greedy_search(tiny_fp32_model, *source_batch, MAX_NEW_TOKENS)
    )


def test_beam_search_on_the_int8_bundle_gives_one_output_per_row(tiny_loaded: Any, source_batch: Any) -> None:
    # rows leave the batch as their sentences finish; the result stays in input order, one list per row
    counting = CountingModel(tiny_loaded.model)
    outputs = beam_search(counting, *source_batch, MAX_NEW_TOKENS, beam_size=3)
    assert len(outputs) == len(source_batch[0])
    assert all(rows % 3 == 0 for rows in counting.step_rows)
    assert counting.step_rows[0] == 3 * len(source_batch[0])


# --- repetition guard -----------------------------------------------------------------------------------------


def test_guard_stops_a_phrase_loop() -> None:
    # GIVEN a model that loops 2 3 4 2 3 4 ... without a guard
    model = LoopingModel({23: 2, 2: 3, 3: 4, 4: 2})
    loop = greedy_search(model, *looping_batch(), 20)
    assert loop[0][:9] == [2, 3, 4] * 3 and has_repeated_ngram(loop[0], 3)
    # WHEN the guard is on, greedily and in a beam
    greedy = greedy_search(model, *looping_batch(), 20, repetition_guard=True)
    beam = beam_search(model, *looping_batch(), 20, beam_size=3)
    trigram = greedy_search(model, *looping_batch(), 20, repetition_guard=TRIGRAM_GUARD)
    # THEN nothing repeats right after itself (with the 3-gram guard: no 3-gram repeats at all), and the outputs
    # keep their full length: the loop was steered, not cut short
    assert greedy[0][:5] == [2, 3, 4, 2, 3]  # the loop's first stretch is left alone until it would repeat
    for guarded in (greedy, beam):
        assert not has_tandem_repeat(guarded[0])
        assert len(guarded[0]) == 19
    assert not has_repeated_ngram(trigram[0], 3) and len(trigram[0]) == 19


def test_guard_stops_a_single_token_loop() -> None:
    model = LoopingModel({token: 7 for token in range(24)})
    assert greedy_search(model, *looping_batch(), 12) == [[7] * 11] * 2
    guarded = greedy_search(model, *looping_batch(), 12, repetition_guard=True)
    assert guarded[0][:2] == [7, 7] and longest_run(guarded[0]) <= 3


def test_max_run_alone_caps_runs_of_one_token() -> None:
    model = LoopingModel({token: 7 for token in range(24)})
    guard = RepetitionGuard(ngram_size=0, max_run=2)
    guarded = greedy_search(model, *looping_batch(), 12, repetition_guard=guard)
    assert longest_run(guarded[0]) == 2
    assert guarded[0][:3] == [7, 7, 6]  # the next most likely token


def test_ban_repetitions_bans_the_tokens_that_complete_a_seen_ngram() -> None:
    sequences = np.array([[9, 1, 2, 3, 1, 2], [9, 5, 5, 5, 0, 0]])
    log_probs = np.zeros((2, 10), np.float32)
    ban_repetitions(log_probs[:1], sequences[:1], 6, RepetitionGuard(ngram_size=3, max_run=0))
    assert np.isneginf(log_probs[0]).nonzero()[0].tolist() == [3]  # (1, 2) was followed by 3
    ban_repetitions(log_probs[1:], sequences[1:], 4, RepetitionGuard(ngram_size=0, max_run=3))
    assert np.isneginf(log_probs[1]).nonzero()[0].tolist() == [5]


def test_the_default_guard_lets_a_phrase_recur_but_not_right_after_itself() -> None:
    # "I'm sorry, I'm" -> "late" may follow: the 3 tokens of "I'm" recur after other words
    recurring = np.array([[9, 1, 2, 3, 4, 1, 2]])
    log_probs = np.zeros((1, 10), np.float32)
    ban_repetitions(log_probs, recurring, 7, RepetitionGuard())
    assert not np.isneginf(log_probs).any()
    ban_repetitions(log_probs, recurring, 7, TRIGRAM_GUARD)
    assert np.isneginf(log_probs[0]).nonzero()[0].tolist() == [3]  # the old guard forbade "I'm" again
    # a stretch about to repeat at once is stopped: (1, 2, 3) (1, 2) -> not 3
    tandem = np.array([[9, 1, 2, 3, 1, 2]])
    log_probs = np.zeros((1, 10), np.float32)
    ban_repetitions(log_probs, tandem, 6, RepetitionGuard())
    assert np.isneginf(log_probs[0]).nonzero()[0].tolist() == [3]


def test_guard_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="ngram_size must be 0 or at least 2"):
        RepetitionGuard(ngram_size=1)


@pytest.mark.parametrize("width", [24, 1_000, 65_001])
def test_candidate_columns_hold_each_rows_best_entries(width: int) -> None:
    from handler.model.decoding import candidate_columns

    generator = np.random.default_rng(width)
    log_probs = generator.normal(size=(6, width)).astype(np.float32)
    log_probs[1, :] = -np.inf  # a row where only one token is allowed
    log_probs[1, 7] = 0.0
    log_probs[2, ::2] = -np.inf  # half of a row banned
    log_probs[3, -3:] = 50.0  # the best entries in the columns after the last whole block
    for k in (2, 4, 8):
        columns = candidate_columns(log_probs, k)
        for row in range(len(log_probs)):
            best = set(np.argsort(-log_probs[row], kind="stable")[:k][np.isfinite(np.sort(-log_probs[row])[:k])])
            assert best <= set(columns[row].tolist())


@pytest.mark.parametrize("seed", range(20))
def test_reorder_rows_gives_every_row_its_parents_cache_in_place(seed: int) -> None:
    from handler.model.decoding import reorder_rows

    rng = np.random.default_rng(seed)
    rows = int(rng.integers(1, 9))
    # parents as a beam search makes them: any row may be chosen by several, swaps and cycles included
    parent_rows = rng.integers(0, rows, size=rows) if seed % 2 else rng.permutation(rows)
    arrays = [rng.standard_normal((rows, 2, int(rng.integers(0, 4)), 3)).astype(np.float32) for _ in range(3)]
    expected = [array[parent_rows] for array in arrays]
    originals = [id(array) for array in arrays]
    reordered = reorder_rows(arrays, parent_rows)
    assert [id(array) for array in reordered] == originals  # no new arrays: the step's outputs, rearranged
    for got, want in zip(reordered, expected, strict=True):
        np.testing.assert_array_equal(got, want)
