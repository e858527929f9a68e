"""Group source sentences into decoding batches of similar length, and pad a batch into model input.

Sentences are sorted by token count (longest first) and cut into consecutive runs, so a batch wastes little
work on padding. A batch's cost is ``rows x padded source length``, where every sentence takes ``beam_size``
rows; it stays within a token budget (``RuntimeConfig.batch_tokens``) and a row cap. Because the output is
bounded by the source length (``max_length_ratio``), the budget also bounds the decoder's KV cache, the
largest memory a batch needs. A sentence longer than the budget on its own gets a batch of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

MAX_ROWS = 64  # decoder rows per batch (sentences x beams); more rows add memory, hardly any speed

T = TypeVar("T")


@dataclass(frozen=True)
class Batch:
    """Positions (in the caller's list) of the sentences decoded together, and their padded length."""

    indices: tuple[int, ...]
    width: int

    @property
    def size(self) -> int:
        return len(self.indices)


def plan_batches(
    lengths: Sequence[int], *, max_tokens: int, beam_size: int = 1, max_rows: int = MAX_ROWS
) -> list[Batch]:
    """Batches covering every position of ``lengths`` once, longest sentences first.

    Each batch keeps ``size * beam_size * width <= max_tokens`` and ``size * beam_size <= max_rows``, except a
    batch holding one sentence that exceeds the budget alone.
    """
    if max_tokens < 1 or beam_size < 1 or max_rows < 1:
        raise ValueError(
            f"max_tokens, beam_size and max_rows must be positive; got {max_tokens}, {beam_size}, {max_rows}"
        )
    order = sorted(range(len(lengths)), key=lambda index: (-lengths[index], index))
    batches: list[Batch] = []
    current: list[int] = []
    width = 0
    for index in order:
        rows = (len(current) + 1) * beam_size
        # sorted longest first: the first sentence of a batch sets its width
        if current and (rows * width > max_tokens or rows > max_rows):
            batches.append(Batch(tuple(current), width))
            current = []
        if not current:
            width = lengths[index]
        current.append(index)
    if current:
        batches.append(Batch(tuple(current), width))
    return batches


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded int64 ``input_ids`` and ``attention_mask`` (1 = token) for ``sequences``."""
    if not sequences:
        raise ValueError("cannot pad an empty batch")
    width = max(len(ids) for ids in sequences)
    input_ids = np.full((len(sequences), width), pad_id, dtype=np.int64)
    attention_mask = np.zeros((len(sequences), width), dtype=np.int64)
    for row, ids in enumerate(sequences):
        input_ids[row, : len(ids)] = ids
        attention_mask[row, : len(ids)] = 1
    return input_ids, attention_mask


def restore_order(batches: Sequence[Batch], outputs: Sequence[Sequence[T]], count: int) -> list[T]:
    """Per-position results from per-batch ``outputs`` (``outputs[b][i]`` belongs to ``batches[b].indices[i]``)."""
    results: list[T | None] = [None] * count
    for batch, batch_outputs in zip(batches, outputs, strict=True):
        if len(batch_outputs) != batch.size:
            raise ValueError(f"a batch of {batch.size} sentences produced {len(batch_outputs)} outputs")
        for index, output in zip(batch.indices, batch_outputs, strict=True):
            results[index] = output
    missing = [index for index, result in enumerate(results) if result is None]
    if missing:
        raise ValueError(f"no output for positions {missing[:10]}")
    return [result for result in results if result is not None]
