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


def test_a_grown_heap_is_returned_and_a_small_growth_is_left_alone() -> None:
    memory.release_free_heap(grown_bytes=0)  # a known starting point
    grown = _grow_and_free_the_heap(64)
    assert grown > 48 * 2**20, grown  # the freed blocks still count: glibc kept them
    assert not memory.release_free_heap(grown_bytes=grown + 2**30)  # grown by less than asked: no trim
    before = memory.resident_bytes() or 0
    assert memory.release_free_heap(grown_bytes=16 * 2**20)
    returned = before - (memory.resident_bytes() or 0)
    assert returned > 48 * 2**20, returned
    assert not memory.release_free_heap(grown_bytes=16 * 2**20)  # nothing grew since: the next call is free


def test_the_rss_is_still_read_after_its_descriptor_was_closed_behind_its_back() -> None:
    import os

    rss = memory.resident_bytes()
    assert rss is not None and memory._statm is not None
    os.close(memory._statm)  # what a library that closes descriptors it does not own would do
    assert (memory.resident_bytes() or 0) > 0  # a new descriptor, not None (None turned every trim off)
