"""Memory hygiene on glibc: give freed heap memory back to the system (``malloc_trim``).

Without ONNX Runtime's CPU arena (``handler.model.sessions``), every decoder step mallocs its key/value caches and
logits and frees them again. glibc keeps freed memory inside the process: the RSS after a request stays near its
peak although the memory is free. ``release_free_heap`` returns it once the RSS has grown by more than
``RETAIN_BYTES`` since the last trim: the loader calls it after the warm-up, the service after each decoding batch
and each request. (Large blocks are not forced into mappings of their own: every step's fresh mapping costs page
faults, which made a full-size CSANMT decode at half speed; docs/decisions.md.)

A trim costs a few milliseconds, so it runs only once the RSS has grown by ``RETAIN_BYTES`` (docs/decisions.md).
Elsewhere than glibc (musl, macOS) ``malloc_trim`` is absent and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

RETAIN_BYTES = 16 * 1024 * 1024  # RSS growth left untrimmed: below this, a trim is not worth its milliseconds


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_lock = threading.Lock()  # one trim at a time: concurrent requests finishing together need only one
_rss_after_trim = 0
_statm: int | None = None  # /proc/self/statm, opened once per process: a request opens no file


def _open_statm(close_the_old: bool = True) -> None:
    """Open this process's ``/proc/self/statm`` (again in a forked child: the parent's names the parent)."""
    global _statm
    if _statm is not None and close_the_old:
        os.close(_statm)
    try:
        _statm = os.open("/proc/self/statm", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        _statm = None


_open_statm()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_open_statm)


def resident_bytes() -> int | None:
    """This process's resident set size (``/proc/self/statm``, re-read each call); None where there is no ``/proc``."""
    for attempt in range(2):
        if _statm is None:
            return None
        try:
            return int(os.pread(_statm, 256, 0).split()[1]) * _PAGE_BYTES
        except (OSError, ValueError, IndexError):
            if attempt:
                return None
            # the descriptor was closed behind our back (a library or a test closing descriptors it does not own),
            # or its number now names another file: open a new one, and never close the old number (not ours now)
            _open_statm(close_the_old=False)
    return None


def release_free_heap(grown_bytes: int = RETAIN_BYTES) -> bool:
    """Return the free heap to the system if the RSS grew by more than ``grown_bytes`` since the last trim, or since
    the lowest RSS a call saw after it (the first call always trims); whether a trim ran."""
    global _rss_after_trim
    resident = resident_bytes()
    if _LIBC is None or resident is None:
        return False
    # the RSS fell since the last trim (large blocks unmapped, a model closed): growth counts from the low point, or
    # the heap could grow back by all that fell, untrimmed
    _rss_after_trim = min(_rss_after_trim, resident)
    if resident - _rss_after_trim <= grown_bytes:
        return False
    if not _lock.acquire(blocking=False):
        return False
    try:
        _LIBC.malloc_trim(0)
        _rss_after_trim = resident_bytes() or 0
    finally:
        _lock.release()
    return True
