"""The sentence translation memory: a segment the model already translated in this warm process is answered from
memory, exactly, without touching the model.

**What is remembered.** The service's model step (``TranslationService._model_translate``) turns each model input,
a segment as the span protection hands it to the model, into a cleaned English string and the search's
``Hypothesis`` (its scores, for ``"scores": true``). That step is a function of the bundle, the input and four
decoding options only (beam size, length penalty, length ratio, repetition guard), because decoding is batch
invariant: each segment is decoded under its own length limit (``decoding.row_limits``), so its output does not
depend on the other segments of its batch (``bench.quality.batch_invariance``; ``tests`` compare whole dev-set
runs with and without the memory byte for byte). So the key is exactly those: ``(bundle hash, beam size, length
penalty, max length ratio, repetition guard, model input)``. Everything else a request can set (its glossary,
span protection, markup format, Chinese variant) acts before this step (choosing the input: a glossary term or a
placeholder is part of it) or after it (checking and restoring spans, rebuilding the markup), and still runs on
every request, so it needs no place in the key.

**Bounded by bytes**, least recently used first out (``TRANSLATE_MEMORY_BYTES``, 16 MiB by default; 0 turns it
off): an entry is charged its input and output in UTF-8, 8 bytes per token id and a fixed overhead for the
Python objects. An entry larger than an eighth of the bound is not kept (one huge segment must not empty it).
**Thread-safe** (one lock around dictionary operations). **Shared** by every route and adapter of a warm process,
because they share the service.

**Visible**: ``stats()`` goes into ``/healthz`` (hits, misses, entries, bytes, evictions), and ``WorkCounts`` tell
the access log how many segments of a request came from memory and how many were decoded (never the text).
"""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict
from dataclasses import dataclass

from handler.model.decoding import Hypothesis

ENTRY_OVERHEAD_BYTES = 400  # the key, the entry, the Hypothesis and the ids list as Python objects
LARGEST_SHARE = 8  # an entry larger than max_bytes / this is not kept


@dataclass(frozen=True)
class MemoryKey:
    """Everything the model step's output depends on."""

    bundle_hash: str
    beam_size: int
    length_penalty: float | None
    max_length_ratio: float
    repetition_guard: bool
    model_input: str


@dataclass(frozen=True)
class Remembered:
    """A model input's cleaned English, its hypothesis and its source token count."""

    translation: str
    hypothesis: Hypothesis
    source_tokens: int


def entry_bytes(key: MemoryKey, entry: Remembered) -> int:
    text = len(key.model_input.encode("utf-8", "surrogatepass")) + len(
        entry.translation.encode("utf-8", "surrogatepass")
    )
    return ENTRY_OVERHEAD_BYTES + text + 8 * len(entry.hypothesis.ids)


@dataclass
class WorkCounts:
    """What one request or event asked of the service: how its distinct segments reached the model (answered from
    memory, or decoded), the characters it asked to translate, and its time in the decoder (``handler.metrics``
    reports them)."""

    from_memory: int = 0
    decoded: int = 0
    characters: int = 0  # the texts' characters (handler.service) or a file's (handler.storage)
    queue_wait_s: float = 0.0  # from each decoder call's arrival to the start of its first batch
    decode_s: float = 0.0  # from that start to its last answer (or its end: a failure, a closed stream)

    def decoder_done(self, arrived: float, began: float | None, ended: float) -> None:
        """One decoder call's times (``time.monotonic()`` values; ``began`` None: no batch of its own began, every
        input joined a batch already under way). The decoder calls it from the request's thread."""
        start = arrived if began is None else min(max(began, arrived), ended)
        self.queue_wait_s += start - arrived
        self.decode_s += ended - start


# set by an adapter's request handling (handler.api.router) and event handling (handler.metrics.measuring) for the
# access log and the metrics; the service and the decoder add to it
current_work: contextvars.ContextVar[WorkCounts | None] = contextvars.ContextVar("work_counts", default=None)


class TranslationMemory:
    """A least-recently-used map from ``MemoryKey`` to ``Remembered``, at most ``max_bytes`` in all."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be at least 0; got {max_bytes}")
        self.max_bytes = max_bytes
        self._entries: OrderedDict[MemoryKey, tuple[Remembered, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0
        self._evictions = 0

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def get(self, key: MemoryKey) -> Remembered | None:
        if not self.enabled:
            return None
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self._misses += 1
                return None
            self._entries.move_to_end(key)
            self._hits += 1
            return found[0]

    def put(self, key: MemoryKey, entry: Remembered) -> bool:
        """Remember ``entry``, evicting the least recently used; False when it is not kept (off, or too large)."""
        size = entry_bytes(key, entry)
        if not self.enabled or size * LARGEST_SHARE > self.max_bytes:
            return False
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (entry, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted
                self._evictions += 1
        return True

    def __len__(self) -> int:
        return len(self._entries)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "hits": self._hits,
                "misses": self._misses,
                "entries": len(self._entries),
                "bytes": self._bytes,
                "max_bytes": self.max_bytes,
                "evictions": self._evictions,
            }
