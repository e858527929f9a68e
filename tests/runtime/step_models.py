"""Step models for decoding tests: a counting wrapper around a real model, and a model stuck in a loop."""

from __future__ import annotations

from typing import Any

import numpy as np

from handler.model.bundle import ModelSpec


class CountingModel:
    """Wraps a step model and records the rows of every encoder call and decoder step."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.spec = model.spec
        self.step_rows: list[int] = []
        self.encoded_rows: list[int] = []

    def __getattr__(self, name: str) -> Any:  # threads, encoder, decoder, ... of the wrapped model
        return getattr(self.model, name)

    def encode(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> list[np.ndarray]:
        self.encoded_rows.append(input_ids.shape[0])
        return self.model.encode(input_ids, attention_mask)  # type: ignore[no-any-return]

    def empty_past(self, batch_size: int) -> list[np.ndarray]:
        return self.model.empty_past(batch_size)  # type: ignore[no-any-return]

    def step(self, input_ids: np.ndarray, mask: np.ndarray, past: list[np.ndarray], cross: list[np.ndarray]) -> Any:
        self.step_rows.append(input_ids.shape[0])
        return self.model.step(input_ids, mask, past, cross)


def synthetic_spec(vocab: int, *, pad_id: int, unk_id: int, decoder_start_id: int) -> ModelSpec:
    """The spec of a synthetic step model: one tiny layer each side, end-of-sentence id 0."""
    return ModelSpec(
        vocab_size=vocab,
        d_model=4,
        attention_heads=1,
        head_dim=4,
        encoder_layers=1,
        decoder_layers=1,
        max_positions=512,
        pad_id=pad_id,
        eos_id=0,
        unk_id=unk_id,
        decoder_start_id=decoder_start_id,
    )


class LoopingModel:
    """A step model stuck in a loop: after token t it prefers ``following[t]``, then ids in order of closeness.

    ``</s>`` is the least likely token, so only a ban on every other token could end an output early.
    """

    VOCAB = 24

    def __init__(self, following: dict[int, int]) -> None:
        pad = self.VOCAB - 1
        self.spec = synthetic_spec(self.VOCAB, pad_id=pad, unk_id=1, decoder_start_id=pad)
        self.following = following

    def encode(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> list[np.ndarray]:
        shape = (input_ids.shape[0], 1, input_ids.shape[1], 4)
        return [np.zeros(shape, np.float32), np.zeros(shape, np.float32)]

    def empty_past(self, batch_size: int) -> list[np.ndarray]:
        return [np.zeros((batch_size, 1, 0, 4), np.float32) for _ in range(2)]

    def step(self, input_ids: np.ndarray, mask: np.ndarray, past: list[np.ndarray], cross: list[np.ndarray]) -> Any:
        ids = np.arange(self.VOCAB)
        scores = np.empty((input_ids.shape[0], self.VOCAB), np.float32)
        for row, token in enumerate(input_ids[:, 0]):
            preferred = self.following.get(int(token), 2)
            scores[row] = -np.abs(ids - preferred).astype(np.float32)
        scores[:, self.spec.eos_id] = -50.0
        log_probs = scores - np.log(np.exp(scores).sum(axis=1, keepdims=True))
        present = [np.concatenate([array, np.zeros_like(array[:, :, :1])], axis=2) for array in past]
        return log_probs.astype(np.float32), present


class PrefixModel:
    """A step model whose next-token probabilities depend on the tokens chosen so far, as a table says.

    ``table[prefix]`` maps tokens to probabilities after ``prefix`` (a tuple of chosen ids); the rest of the mass
    is spread evenly over the other tokens. The first step's input id is ignored (as CSANMT's decoder does); the
    "past" carries the chosen tokens and a step counter, so searches reorder it like a real KV cache.
    """

    def __init__(self, table: dict[tuple[int, ...], dict[int, float]], vocab: int = 8) -> None:
        self.table = table
        self.vocab = vocab
        self.spec = synthetic_spec(vocab, pad_id=0, unk_id=vocab - 1, decoder_start_id=0)  # CSANMT's ids
        self.step_rows: list[int] = []

    def encode(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> list[np.ndarray]:
        return [np.zeros((input_ids.shape[0], 1, input_ids.shape[1], 4), np.float32)]

    def empty_past(self, batch_size: int) -> list[np.ndarray]:
        return [np.zeros((batch_size, 0), np.int64), np.zeros((batch_size, 0), np.int64)]

    def probabilities(self, prefix: tuple[int, ...]) -> np.ndarray:
        given = self.table.get(prefix, {})
        rest = (1.0 - sum(given.values())) / (self.vocab - len(given))
        return np.array([given.get(token, rest) for token in range(self.vocab)], dtype=np.float64)

    def step(self, input_ids: np.ndarray, mask: np.ndarray, past: list[np.ndarray], cross: list[np.ndarray]) -> Any:
        self.step_rows.append(input_ids.shape[0])
        chosen, counter = past
        if counter.shape[1]:
            chosen = np.concatenate([chosen, input_ids.astype(np.int64)], axis=1)
        log_probs = np.log(np.stack([self.probabilities(tuple(row)) for row in chosen.tolist()])).astype(np.float32)
        return log_probs, [chosen, np.zeros((counter.shape[0], counter.shape[1] + 1), np.int64)]
