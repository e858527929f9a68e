"""``handler.model.memory``: the heap a request freed goes back to the system, and only when there is enough of it."""

from __future__ import annotations

import ctypes

import pytest

from handler.model import memory

pytestmark = pytest.mark.skipif(memory.resident_bytes() is None or memory._LIBC is None, reason="glibc and /proc")


def _grow_and_free_the_heap(megabytes: int) -> int:
    """Allocate ``megabytes`` in 64 KiB blocks (below glibc's mmap threshold: from the heap), touch and free them,
    keeping the last block so the heap's top cannot shrink on its own; the RSS grown by it, in bytes."""
    before = memory.resident_bytes() or 0
    blocks = [ctypes.create_string_buffer(b"x" * 65536, 65536) for _ in range(megabytes * 16)]
    last = blocks[-1]
    del blocks
    grown = (memory.resident_bytes() or 0) - before
    _grow_and_free_the_heap.keep = last  # type: ignore[attr-defined]
    return grown


def _trim_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """A known starting point, whatever earlier tests in this process left: the heap trimmed, its RSS recorded."""
    monkeypatch.setattr(memory, "_rss_after_trim", 0)
    assert memory.release_free_heap(grown_bytes=0)


def test_a_grown_heap_is_returned_and_a_small_growth_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    _trim_now(monkeypatch)
    grown = _grow_and_free_the_heap(64)
    assert grown > 48 * 2**20, grown  # the freed blocks still count: glibc kept them
    assert not memory.release_free_heap(grown_bytes=grown + 2**30)  # grown by less than asked: no trim
    before = memory.resident_bytes() or 0
    assert memory.release_free_heap(grown_bytes=16 * 2**20)
    returned = before - (memory.resident_bytes() or 0)
    assert returned > 48 * 2**20, returned
    assert not memory.release_free_heap(grown_bytes=16 * 2**20)  # nothing grew since: the next call is free


def test_growth_counts_from_the_lowest_rss_seen_since_the_last_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    _trim_now(monkeypatch)
    # the last trim ran when the process was far larger (a big request, since unmapped): the RSS is below it now
    monkeypatch.setattr(memory, "_rss_after_trim", (memory.resident_bytes() or 0) + 2**30)
    assert not memory.release_free_heap(grown_bytes=16 * 2**20)  # nothing grew: no trim, the low point is kept
    grown = _grow_and_free_the_heap(64)
    assert grown > 48 * 2**20, grown
    before = memory.resident_bytes() or 0
    assert memory.release_free_heap(grown_bytes=16 * 2**20)  # 64 MB above the low point, though 1 GB below the old
    assert before - (memory.resident_bytes() or 0) > 48 * 2**20


def test_the_rss_is_still_read_after_its_descriptor_was_closed_behind_its_back() -> None:
    import os

    rss = memory.resident_bytes()
    assert rss is not None and memory._statm is not None
    os.close(memory._statm)  # what a library that closes descriptors it does not own would do
    assert (memory.resident_bytes() or 0) > 0  # a new descriptor, not None (None turned every trim off)
