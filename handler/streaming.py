"""Streaming a translation: what a streamed request yields, and the windows its units are decoded in.

A streamed call (``TranslationService.translate_stream``) answers a request unit by unit, in source order: a unit is
a sentence-sized segment of plain text, or a whole block (a text node, an attribute, a Markdown paragraph) of HTML
and Markdown, whose English only exists once all its segments are done. The units are cut into **windows** of
consecutive units (``plan_windows``): the first unit alone, so that the first English arrives after one small batch;
then the rest in one window when it fits in ``WHOLE_REST_BATCHES`` full batches of source tokens, else in windows of
``FIRST_WINDOW_BATCHES`` batches, each twice the last, up to ``MAX_WINDOW_BATCHES``. Inside a window the service plans
length-sorted batches exactly as for a whole request and decodes them one at a time in the order of their earliest
unit (a ``StreamProgress`` after each, which is also where a client that hung up is noticed); after each batch every
unit whose inputs are all decoded, and every unit before it, is yielded.

What it costs: the batches of a window are cut from fewer sentences than a whole request's, so a window's last batch
is often part-full, and the first unit is decoded alone; a window of length-sorted batches wastes least. Measured
(``make bench``, docs/benchmarks.md, with the alternatives tried in docs/decisions.md): the windows below keep the
streamed call within a few per cent of the whole call's CPU time. Because every row's output is independent of the
batch it is decoded in (``handler.model.batching``'s batch invariance), the English is the same byte for byte as
the whole request's, and peak memory can only be lower (smaller batches at most as wide).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from handler.model.confidence import ScoredSegment

WHOLE_REST_BATCHES = 4  # after the first unit, a rest of at most this many full batches is one window
FIRST_WINDOW_BATCHES = 2  # else the windows start at this many full batches of source tokens
MAX_WINDOW_BATCHES = 8  # and double up to this many


@dataclass(frozen=True)
class StreamedUnit:
    """One unit's English, yielded once it and every unit before it are done."""

    text: int  # which of the request's texts it belongs to (0 for a single text)
    index: int  # its position among the request's units, from 0
    source: str  # the unit's source text (in the model's script)
    source_span: tuple[int, int] | None  # its character offsets in the text as given; None where not found as written
    translation: str
    segments: tuple[ScoredSegment, ...] = ()  # with ``scores``: its segments, offsets within ``translation``


@dataclass(frozen=True)
class StreamProgress:
    """Sent after every decoded batch: how many of the request's source characters (every occurrence) are done."""

    done: int
    total: int


def plan_windows(unit_tokens: Sequence[int], batch_source_tokens: int) -> list[range]:
    """Consecutive ranges of unit positions covering every unit once: the first unit alone; then the rest as one
    window if it holds at most ``WHOLE_REST_BATCHES`` times ``batch_source_tokens`` (one full batch of source tokens),
    else windows of at least ``FIRST_WINDOW_BATCHES`` batches' tokens, doubling up to ``MAX_WINDOW_BATCHES``. A window
    closes on the unit that reaches its budget, so no window is empty and none is cut inside a unit."""
    if batch_source_tokens < 1:
        raise ValueError(f"batch_source_tokens must be positive; got {batch_source_tokens}")
    count = len(unit_tokens)
    if not count:
        return []
    windows = [range(0, 1)]
    if sum(unit_tokens[1:]) <= WHOLE_REST_BATCHES * batch_source_tokens:
        return windows + ([range(1, count)] if count > 1 else [])
    start = 1
    budget = FIRST_WINDOW_BATCHES * batch_source_tokens
    while start < count:
        end = start
        tokens = 0
        while end < count and tokens < budget:
            tokens += unit_tokens[end]
            end += 1
        windows.append(range(start, end))
        start = end
        budget = min(2 * budget, MAX_WINDOW_BATCHES * batch_source_tokens)
    return windows
