"""A batched beam search as parts side by side: the padded batch's sentences split into ``streams`` parts, each
searched on its own thread, the results put back in the batch's order.

A step of a batched beam search alternates ONNX Runtime's decoder call with Python's candidate search between
calls (a fifth of the time at 16 sentences x 4 beams). One search leaves a core idle during the Python part and
runs the decoder's many small nodes one after another; two searches of half the sentences each overlap one's
Python with the other's decoder call (ONNX Runtime and numpy release the GIL). Measured on 2 vCPUs, 2 intra-op
threads, batch 16 x beam 4: +22 % tokens/s on the opus-mt-sized model, +35 % on the default one, +7 % on the
full-size CSANMT; greedy search gains nothing, nor does a batch of 2 sentences (docs/decisions.md). So only a beam
search splits, and only into parts of ``MIN_SENTENCES_PER_PART`` sentences or more.

The outputs are those of one search over the whole batch: every part is a slice of the batch padded once, and a
row's search never depends on the other rows of its batch (``handler.model.batching``, ``decoding.row_limits``).
The threads belong to the process that made them: a forked child (a gunicorn worker) makes its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import TypeVar

import numpy as np

from handler.model.families.base import SearchRequest

R = TypeVar("R")

MIN_SENTENCES_PER_PART = 2

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_pid = 0  # the process whose threads _pool holds
_pool_workers = 0


def part_count(sentences: int, request: SearchRequest, streams: int) -> int:
    """How many parts a search of ``sentences`` runs as: 1 for greedy search or a small batch."""
    if request.beam_size < 2:
        return 1
    return max(1, min(streams, sentences // MIN_SENTENCES_PER_PART))


def split_rows(sentences: int, parts: int) -> list[np.ndarray]:
    """The batch's row indices of each part, interleaved (row ``i`` goes to part ``i % parts``): a batch sorted by
    length (``handler.model.batching``) gives every part its share of long and short sentences, so the parts end
    together."""
    return [np.arange(start, sentences, parts) for start in range(parts)]


def request_for(request: SearchRequest, rows: np.ndarray) -> SearchRequest:
    """``request`` for a part: its rows' own length limits where the request has one per row."""
    if isinstance(request.max_new_tokens, int):
        return request
    limits = request.max_new_tokens
    return replace(request, max_new_tokens=tuple(limits[row] for row in rows.tolist()))


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_pid, _pool_workers
    with _lock:
        if _pool is None or _pool_pid != os.getpid() or _pool_workers < workers:
            if _pool is not None and _pool_pid == os.getpid():
                _pool.shutdown(wait=False)  # too few threads: its idle ones end, the parts it still runs finish
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="decode-part")
            _pool_pid, _pool_workers = os.getpid(), workers
        return _pool


def search_in_parts(
    input_ids: np.ndarray,
    attention_mask: np.ndarray,
    request: SearchRequest,
    streams: int,
    search: Callable[[np.ndarray, np.ndarray, SearchRequest, Callable[[int, R], None] | None], list[R]],
    on_row: Callable[[int, R], None] | None = None,
) -> list[R]:
    """``search(input_ids, attention_mask, request, on_row)``'s per-row results, computed as ``part_count`` parts
    side by side (this thread searches the first); an error of a part is raised once every part has ended. A part's
    ``on_row`` calls come from its own thread, with the row's place in the whole batch."""
    sentences = input_ids.shape[0]
    parts = part_count(sentences, request, streams)
    if parts == 1:
        return search(input_ids, attention_mask, request, on_row)
    row_sets = split_rows(sentences, parts)

    def run(rows: np.ndarray) -> list[R]:
        part_on_row = None if on_row is None else lambda row, found: on_row(int(rows[row]), found)
        return search(input_ids[rows], attention_mask[rows], request_for(request, rows), part_on_row)

    pool = _executor(parts - 1)
    others: list[Future[list[R]]] = [pool.submit(run, rows) for rows in row_sets[1:]]
    try:
        first = run(row_sets[0])
    finally:
        wait(others)  # every part has ended before this search returns or raises
    found = [first, *(future.result() for future in others)]  # a part's error is raised here
    results: dict[int, R] = {}
    for rows, part in zip(row_sets, found, strict=True):
        results.update(zip(rows.tolist(), part, strict=True))
    return [results[row] for row in range(sentences)]
