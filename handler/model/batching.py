"""Group source sentences into decoding batches of similar length, and pad a batch into model input.

Sentences are sorted by token count (longest first) and cut into consecutive runs, so a batch wastes little
work on padding. A batch's cost is ``rows x padded source length``, where every sentence takes ``beam_size``
rows; it stays within a token budget (``RuntimeConfig.batch_tokens``), a row cap and a budget for the decoder's
key/value caches, the largest memory a batch needs: the output is bounded by the source length
(``max_length_ratio``), so the cache of a row follows from the batch's width and the model's decoder size, and a
large model gets fewer rows per batch. A sentence longer than a budget on its own gets a batch of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

MAX_ROWS = 64  # decoder rows per batch (sentences x beams); more rows add memory, hardly any speed
# decoder key/value memory per batch: a large model's rows need more of it each, so its batches hold fewer rows,
# which bounds the whole process's memory (the rows each model gets and the peaks measured: docs/decisions.md)
KV_CACHE_BUDGET_BYTES = 256 * 1024 * 1024
# the budget of a bundle that opens "lean" (sessions.LEAN_LOADING_BYTES: a full-size CSANMT), so that its requests
# stay within a 2 GB function with the weights resident: fewer rows per step cost less memory than they save time
# (what each budget measured: docs/decisions.md and docs/models.md)
LARGE_MODEL_KV_CACHE_BUDGET_BYTES = 96 * 1024 * 1024
# source widths are padded up to a multiple of this: ONNX Runtime's float kernels (softmax, attention) add a row in
# vector-sized blocks, so a sentence padded to 11 tokens alone and to 16 beside a longer one summed its attention
# weights in a different order and could translate differently (1 of the first 320 dev sentences did, with
# per-row INT8 activations). With every width a whole number of 16-float blocks (an AVX-512 register; two AVX2
# ones) the masked positions only add exact zeros: measured, every dev sentence translates the same alone and in
# batches of 16 (README, "Batch invariance").
WIDTH_MULTIPLE = 16

T = TypeVar("T")


@dataclass(frozen=True)
class Batch:
    """Positions (in the caller's list) of the sentences decoded together, and their padded length."""

    indices: tuple[int, ...]
    width: int

    @property
    def size(self) -> int:
        return len(self.indices)


def kv_cache_bytes_per_row(decoder_layers: int, d_model: int, source_width: int, max_new_tokens: int) -> int:
    """Float32 key/value bytes one decoder row needs at its longest: the cross-attention cache over the source and
    the self-attention cache, counted twice because a step's past and present caches are alive together."""
    return 4 * 2 * decoder_layers * d_model * (source_width + 2 * max_new_tokens)


def plan_batches(
    lengths: Sequence[int],
    *,
    max_tokens: int,
    beam_size: int = 1,
    max_rows: int = MAX_ROWS,
    row_bytes: Callable[[int], int] | None = None,
    max_bytes: int = KV_CACHE_BUDGET_BYTES,
) -> list[Batch]:
    """Batches covering every position of ``lengths`` once, longest sentences first.

    Each batch keeps ``size * beam_size * width <= max_tokens``, ``size * beam_size <= max_rows`` and, given
    ``row_bytes`` (the decoder memory one row of a batch of that width needs), ``rows * row_bytes(width) <=
    max_bytes``; a batch holding one sentence that exceeds a budget alone is the exception.
    """
    if max_tokens < 1 or beam_size < 1 or max_rows < 1 or max_bytes < 1:
        raise ValueError(
            f"max_tokens, beam_size, max_rows and max_bytes must be positive; got {max_tokens}, {beam_size}, "
            f"{max_rows}, {max_bytes}"
        )
    order = sorted(range(len(lengths)), key=lambda index: (-lengths[index], index))
    batches: list[Batch] = []
    current: list[int] = []
    width = 0
    row_cap = max_rows
    for index in order:
        rows = (len(current) + 1) * beam_size
        # sorted longest first: the first sentence of a batch sets its width
        if current and (rows * width > max_tokens or rows > row_cap):
            batches.append(Batch(tuple(current), width))
            current = []
        if not current:
            width = lengths[index]
            row_cap = max_rows if row_bytes is None else min(max_rows, max_bytes // max(1, row_bytes(width)))
        current.append(index)
    if current:
        batches.append(Batch(tuple(current), width))
    return batches


def padded_width(longest: int, max_width: int | None = None, multiple: int = WIDTH_MULTIPLE) -> int:
    """``longest`` rounded up to a multiple of ``multiple``, but never past ``max_width`` (nor below ``longest``)."""
    rounded = -(-longest // multiple) * multiple
    return rounded if max_width is None else max(longest, min(rounded, max_width))


def pad_batch(
    sequences: Sequence[Sequence[int]], pad_id: int, max_width: int | None = None, multiple: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded int64 ``input_ids`` and ``attention_mask`` (1 = token) for ``sequences``; the width is the
    longest sequence rounded up to ``multiple`` (the service passes ``WIDTH_MULTIPLE``), at most ``max_width``."""
    if not sequences:
        raise ValueError("cannot pad an empty batch")
    width = padded_width(max(len(ids) for ids in sequences), max_width, multiple)
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
