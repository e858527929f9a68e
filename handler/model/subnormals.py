"""Subnormal floats flushed to zero while ONNX Runtime computes, and only then.

Floats too small for a normal float32 (subnormals, below 1.2e-38) take a slow microcode path on x86 CPUs in every
operation that makes or reads one. A log-softmax over 50,000 logits whose spread is wide (a random full-size
CSANMT's: most ``exp(x - max)`` underflow) took 6.2 ms on 64 rows with subnormals and 0.7 ms with them flushed to
zero; the full-size CSANMT's batch-16 beam-4 decoding ran a quarter faster (make bench: 291 -> 367 tokens/s),
with the same outputs token for token (docs/decisions.md, "Subnormals flushed to zero").

Two flags of each thread's MXCSR register do it: flush-to-zero (FTZ) and denormals-are-zero (DAZ).

* ONNX Runtime sets them in a session's own pool threads when its options ask (``POOL_OPTION``, which
  ``handler.model.sessions.session_options`` sets).
* The thread that calls ``run`` computes its share of the work too: ``flushed()`` sets the flags in that thread
  for the call and puts the thread's floating-point environment back after it (glibc's ``fegetenv`` and
  ``fesetenv``, through ctypes: ``fenv_t``'s MXCSR word is at byte 28 on x86-64). Outside the call, Python's own
  float arithmetic and every other library's keep IEEE subnormals (Hypothesis, for one, refuses to run in a thread
  that flushes them).
* ONNX Runtime also sets the flags, once per process, in the thread that creates the process's first session with
  that option, and leaves them set there. ``settle_process_mode()`` creates that first session on a thread of its
  own, which then ends, so that no thread of the program keeps them.

Where ``flushed()`` cannot set them (another CPU, where ONNX Runtime leaves its pool threads as they are too, or a C
library other than glibc), the calling thread computes with subnormals, as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

POOL_OPTION = "session.set_denormal_as_zero"
FENV_BYTES = 32  # sizeof(fenv_t), glibc on x86-64
MXCSR_OFFSET = 28  # fenv_t.__mxcsr
FLUSH_BITS = 0x8040  # MXCSR: FTZ (bit 15) and DAZ (bit 6)
# an ONNX graph of one Identity node ([1] float32 in and out, opset 17), the session settle_process_mode creates;
# written by onnx.helper (tests/runtime/test_subnormals.py builds it again and compares)
IDENTITY_GRAPH = (
    b'\x08\x08:E\n\x10\n\x01x\x12\x01y"\x08Identity\x12\x0fflush_denormalsZ\x0f\n\x01x\x12\n\n\x08\x08\x01\x12\x04\n\x02'
    b"\x08\x01b\x0f\n\x01y\x12\n\n\x08\x08\x01\x12\x04\n\x02\x08\x01B\x04\n\x00\x10\x11"
)


def _libm() -> ctypes.CDLL | None:
    """glibc's maths library on x86-64 Linux, where ``fenv_t`` holds MXCSR at ``MXCSR_OFFSET``; else None."""
    if sys.platform != "linux" or platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    if platform.libc_ver()[0] != "glibc":
        return None
    name = ctypes.util.find_library("m")
    return ctypes.CDLL(name) if name else None


_LIBM = _libm()
_settle = threading.Lock()
_settled = False


def supported() -> bool:
    """Whether ``flushed()`` sets the flags on this machine."""
    return _LIBM is not None


@contextmanager
def flushed() -> Iterator[None]:
    """Subnormals flushed to zero in the calling thread within the block; its floating-point environment as it was
    (flags, rounding, exception state) after it."""
    if _LIBM is None:
        yield
        return
    saved = ctypes.create_string_buffer(FENV_BYTES)
    _LIBM.fegetenv(saved)
    mxcsr = int.from_bytes(saved.raw[MXCSR_OFFSET : MXCSR_OFFSET + 4], "little") | FLUSH_BITS
    flushing = ctypes.create_string_buffer(saved.raw[:MXCSR_OFFSET] + mxcsr.to_bytes(4, "little"), FENV_BYTES)
    _LIBM.fesetenv(flushing)
    try:
        yield
    finally:
        _LIBM.fesetenv(saved)


def settle_process_mode() -> None:
    """Create this process's first ONNX Runtime session with ``POOL_OPTION`` on a short-lived thread, once, so that
    ONNX Runtime's once-per-process setting of the flags lands there and not in a thread of the program (it does
    nothing if another session was created first)."""
    import onnxruntime as ort  # here: handler.model.sessions disables its telemetry before the first import

    global _settled
    with _settle:
        if _settled:
            return
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only
        options.add_session_config_entry(POOL_OPTION, "1")
        failure: list[BaseException] = []

        def first_session() -> None:
            try:
                ort.InferenceSession(IDENTITY_GRAPH, sess_options=options, providers=["CPUExecutionProvider"])
            except BaseException as error:  # noqa: BLE001 - re-raised in the calling thread
                failure.append(error)

        thread = threading.Thread(target=first_session, name="onnxruntime-first-session")
        thread.start()
        thread.join()
        if failure:
            raise failure[0]
        _settled = True
