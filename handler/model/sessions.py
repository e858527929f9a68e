"""The two ONNX Runtime sessions of a bundle (encoder, one-step decoder) behind a small numpy interface.

One wrapper serves every model family: the family's ``GraphContract`` (``handler.model.families``) names the graphs'
inputs and outputs, the shapes are the contract in ``handler/model/bundle.py``. The encoder's per-sentence outputs (the
"cross" list: cross-attention keys and values, and whatever else the family's decoder takes) travel in the
contract's order; the self-attention cache travels per layer, key before value: ``[key.0, value.0, key.1, ...]``.
Axis 0 of every array is the batch row, so a search can reorder or drop rows with ``np.take(array, rows, axis=0)``.

Sessions run on the CPU execution provider with a fixed number of intra-op threads, one inter-op thread and
sequential execution, and write no files (no optimized-model path, no profiling). Graphs the build optimized
(``build.optimize``; the manifest says so) open with load-time optimization off (a full-size CSANMT encoder's
session opened in 0.9 s instead of 1.2 s, measured); any other graph gets every optimization at load.

ONNX Runtime (1.29 and later) starts a telemetry uploader on Linux that writes a device id under
``$HOME/.cache/Microsoft`` and sends events over the network. A function has neither a writable home nor a
reason to phone home, so importing this module sets ``ORT_DISABLE_TELEMETRY=1`` (unless the environment
already sets it) before onnxruntime is imported: nothing is written and nothing is sent.

ONNX Runtime's intra-op threads do not survive ``fork()``: a forked child (a gunicorn worker, which is how
functions-framework serves, with the model loaded in the master at import) would run every session on one thread
and hang for tens of seconds at exit, destroying a thread pool whose threads are gone. So the sessions are closed
just before a fork (in the forking thread, while their threads are alive), reopened and warmed in the child right
after it, and reopened in the parent on its next use. Forking while another thread is running the model is not
supported (no Python program can fork safely then).

Subnormal floats are flushed to zero while a session computes, in its pool threads and in the calling thread, and
nowhere else (``handler.model.subnormals``): on x86 they take a slow path, and a random full-size CSANMT's
log-softmax made most of its values subnormal.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # must precede the first onnxruntime import

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

from handler.errors import BundleError  # noqa: E402
from handler.model import bundle, subnormals  # noqa: E402
from handler.model.bundle import ModelSpec  # noqa: E402
from handler.model.families.base import GraphContract  # noqa: E402

PROVIDERS = ["CPUExecutionProvider"]
LOG_ERRORS_ONLY = 3  # ONNX Runtime severity: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal

# No session uses ONNX Runtime's CPU memory arena: it would keep the decoder's growing per-step key/value buffers.
# A bundle whose graphs are larger than this together (a full-size CSANMT's) is "lean": the
# service gives its batches a smaller key/value cache budget (handler.model.batching). The encoder never pre-packs
# its weights; the decoder pre-packs unless it alone is larger than this (with the shared embedding its output
# projection reads): pre-packed, a full-size CSANMT decoder is much faster for a little more memory. The figures:
# docs/decisions.md.
LEAN_LOADING_BYTES = 300_000_000


def session_options(
    threads: int, spinning: bool, *, lean: bool = False, optimized_offline: bool = False
) -> ort.SessionOptions:
    """Options for both sessions: ``threads`` intra-op threads that spin between calls only if ``spinning``, no CPU
    memory arena; ``lean``: also without weight pre-packing (see ``LEAN_LOADING_BYTES``); ``optimized_offline``:
    the graphs are already optimized (``build.optimize``), so ONNX Runtime does not optimize them again."""
    if threads < 1:
        raise ValueError(f"threads must be at least 1; got {threads}")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL if optimized_offline else ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    )
    options.log_severity_level = LOG_ERRORS_ONLY
    flag = "1" if spinning else "0"
    options.add_session_config_entry("session.intra_op.allow_spinning", flag)
    options.add_session_config_entry("session.inter_op.allow_spinning", flag)
    options.enable_cpu_mem_arena = False
    options.add_session_config_entry(subnormals.POOL_OPTION, "1")  # in the session's pool threads
    if lean:
        options.add_session_config_entry("session.disable_prepacking", "1")
    return options


def share_embedding(folder: Path, spec: ModelSpec, *options: ort.SessionOptions) -> ort.OrtValue | None:
    """Hand both sessions one copy of the bundle's shared embedding, if it has one (``bundle.SHARED_EMBEDDING``).

    Each session would read the external data file into its own buffer (two copies; measured in docs/decisions.md).
    Memory-mapped instead and added as a session initializer, it is one read-only copy,
    shared with every process that maps the same file (gunicorn workers, fan-out workers).
    """
    path = folder / bundle.SHARED_EMBEDDING
    if not path.is_file():
        return None
    shape = (spec.d_model, spec.vocab_size)
    if path.stat().st_size != shape[0] * shape[1]:
        raise BundleError(
            f"{path} holds {path.stat().st_size:,} bytes, but an INT8 embedding of {shape[0]} x {shape[1]} needs "
            f"{shape[0] * shape[1]:,}; re-export the bundle with python -m build.export ... --force"
        )
    table = np.memmap(path, dtype=np.int8, mode="r", shape=shape)
    value = ort.OrtValue.ortvalue_from_numpy(table)
    for each in options:
        each.add_initializer(bundle.SHARED_EMBEDDING_INITIALIZER, value)
    return value


def loads_lean(*graphs: Path) -> bool:
    """Whether graphs of this size (each with its external weights, ``bundle.graph_bytes``) open lean
    (``LEAN_LOADING_BYTES``); missing files count as empty."""
    return sum(bundle.graph_bytes(path) for path in graphs) > LEAN_LOADING_BYTES


_open_models: weakref.WeakSet[OnnxEncoderDecoder] = weakref.WeakSet()
_child_reopen_seconds: float | None = None


def _close_before_fork() -> None:
    for model in list(_open_models):
        model.close()


def _reopen_in_child() -> None:
    global _child_reopen_seconds
    began = time.perf_counter()
    for model in list(_open_models):
        model._open_lock = threading.Lock()  # a lock another parent thread held is never released in the child
        model.open(warm_up=True)
    _child_reopen_seconds = time.perf_counter() - began


def child_reopen_seconds() -> float | None:
    """Seconds this process, a forked child, spent reopening and warming its inherited models; None if not forked."""
    return _child_reopen_seconds


if hasattr(os, "register_at_fork"):  # POSIX; the parent's models reopen on their next use
    os.register_at_fork(before=_close_before_fork, after_in_child=_reopen_in_child)


class OnnxEncoderDecoder:
    """An encoder-decoder as two ONNX Runtime sessions: ``encode`` once per batch, ``step`` per token.

    ``contract`` is the model family's graph contract; a graph whose names differ is refused (``BundleError``).
    """

    def __init__(
        self,
        encoder_path: Path | str,
        decoder_path: Path | str,
        spec: ModelSpec,
        contract: GraphContract,
        *,
        threads: int = 1,
        spinning: bool = False,
        optimized_offline: bool = False,
    ) -> None:
        if contract.decoder_layers != spec.decoder_layers:
            raise ValueError(
                f"the graph contract is for {contract.decoder_layers} decoder layers, the model has "
                f"{spec.decoder_layers}"
            )
        self.spec = spec
        self.contract = contract
        self.threads = threads
        self.spinning = spinning
        self.lean = loads_lean(Path(encoder_path), Path(decoder_path))  # the service's smaller cache budget
        # The encoder never keeps pre-packed weights: it runs once per batch on many rows, where packing on the fly
        # costs nothing measurable and the packed copy costs memory; the decoder's steps are where packing pays,
        # unless the decoder alone is too large to hold twice (LEAN_LOADING_BYTES).
        self.decoder_prepacked = not loads_lean(Path(decoder_path), Path(decoder_path).parent / bundle.SHARED_EMBEDDING)
        self.optimized_offline = optimized_offline
        encoder_options = session_options(threads, spinning, lean=True, optimized_offline=optimized_offline)
        options = session_options(
            threads, spinning, lean=not self.decoder_prepacked, optimized_offline=optimized_offline
        )
        # the tied embedding both graphs read (bundle.SHARED_EMBEDDING): one copy in memory for both sessions
        self._shared_embedding = share_embedding(Path(encoder_path).parent, spec, encoder_options, options)
        self._cross_names = list(contract.per_sentence)
        self._past_names = list(contract.past)
        self._decoder_outputs = list(contract.decoder_outputs)
        self._encoder_path, self._decoder_path = Path(encoder_path), Path(decoder_path)
        self._encoder_options, self._options = encoder_options, options
        self._encoder: ort.InferenceSession | None = None
        self._decoder: ort.InferenceSession | None = None
        self._open_lock = threading.Lock()
        self.open()
        self._check_names(
            self._encoder_path,
            self.encoder,
            list(contract.encoder_inputs),
            self._cross_names,
            optional_outputs=list(contract.verification_outputs),
        )
        self._check_names(self._decoder_path, self.decoder, list(contract.decoder_inputs), self._decoder_outputs)
        _open_models.add(self)

    def open(self, *, warm_up: bool = False) -> None:
        """Create both sessions if they are closed (``warm_up``: then run one tiny step through them)."""
        with self._open_lock:
            if self._encoder is not None and self._decoder is not None:
                return
            subnormals.settle_process_mode()  # before any session of the program (handler.model.subnormals)
            # side by side: ONNX Runtime builds a session (reading, optimizing, pre-packing) without the GIL
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="open-encoder") as pool:
                encoder = pool.submit(self._open, self._encoder_path, self._encoder_options)
                decoder = self._open(self._decoder_path, self._options)
                self._encoder, self._decoder = encoder.result(), decoder
        if warm_up:
            ids = np.array([[self.spec.eos_id]], dtype=np.int64)
            start = np.array([[self.spec.decoder_start_id]], dtype=np.int64)
            self.step(start, np.ones_like(ids), self.empty_past(1), self.encode(ids, np.ones_like(ids)))

    def close(self) -> None:
        """Destroy both sessions and their threads; the next use (or ``open``) creates them again."""
        self._encoder = self._decoder = None

    @property
    def encoder(self) -> ort.InferenceSession:
        if self._encoder is None:
            self.open()
        assert self._encoder is not None
        return self._encoder

    @property
    def decoder(self) -> ort.InferenceSession:
        if self._decoder is None:
            self.open()
        assert self._decoder is not None
        return self._decoder

    @staticmethod
    def _open(path: Path, options: ort.SessionOptions) -> ort.InferenceSession:
        if not path.is_file():
            raise BundleError(f"{path} does not exist; re-export the bundle with python -m build.export ... --force")
        try:
            return ort.InferenceSession(str(path), sess_options=options, providers=PROVIDERS)
        except Exception as error:  # onnxruntime raises its own exception classes (Fail, InvalidProtobuf, ...)
            raise BundleError(
                f"ONNX Runtime cannot load {path}: {error}; "
                "re-export the bundle with python -m build.export ... --force"
            ) from error

    def _check_names(
        self,
        path: Path,
        session: ort.InferenceSession,
        inputs: list[str],
        outputs: list[str],
        optional_outputs: list[str] | None = None,
    ) -> None:
        found_inputs = [node.name for node in session.get_inputs()]
        found_outputs = [node.name for node in session.get_outputs()]
        extra_outputs = set(found_outputs) - set(outputs)
        if (
            sorted(found_inputs) != sorted(inputs)
            or not set(outputs) <= set(found_outputs)
            or not extra_outputs <= set(optional_outputs or ())
            or len(set(found_outputs)) != len(found_outputs)
        ):
            optional = f" (and optionally {optional_outputs})" if optional_outputs else ""
            raise BundleError(
                f"{path} does not match bundle format {bundle.FORMAT_VERSION} for a {self.contract.family} model "
                f"with {self.spec.decoder_layers} decoder layers: expected inputs {inputs} and outputs {outputs}"
                f"{optional}, found inputs {found_inputs} and outputs {found_outputs}; re-export the bundle with "
                "python -m build.export ... --force"
            )

    def encode(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> list[np.ndarray]:
        """int64 [batch, src_len] ids and mask -> the per-sentence arrays the decoder takes, in the contract's order
        (cross K/V ``[key.0, value.0, ...]``, each [batch, H, src_len, D], then the family's own)."""
        feeds = {
            bundle.INPUT_IDS: np.ascontiguousarray(input_ids, dtype=np.int64),
            bundle.ATTENTION_MASK: np.ascontiguousarray(attention_mask, dtype=np.int64),
        }
        with subnormals.flushed():
            return list(self.encoder.run(self._cross_names, feeds))

    def empty_past(self, batch_size: int) -> list[np.ndarray]:
        """The self-attention cache before the first step: length 0, [batch, H, 0, D] per key and value."""
        shape = (batch_size, self.spec.attention_heads, 0, self.spec.head_dim)
        return [np.zeros(shape, dtype=np.float32) for _ in self._past_names]

    def step(
        self,
        input_ids: np.ndarray,
        encoder_attention_mask: np.ndarray,
        past: list[np.ndarray],
        cross: list[np.ndarray],
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """One decoding step for every row: the newest token ids [batch, 1] -> (log_probs [batch, V], present)."""
        feeds: dict[str, np.ndarray] = {
            bundle.INPUT_IDS: np.ascontiguousarray(input_ids, dtype=np.int64),
            bundle.ENCODER_ATTENTION_MASK: np.ascontiguousarray(encoder_attention_mask, dtype=np.int64),
        }
        feeds.update(zip(self._past_names, past, strict=True))
        feeds.update(zip(self._cross_names, cross, strict=True))
        with subnormals.flushed():
            outputs = self.decoder.run(self._decoder_outputs, feeds)
        return outputs[0], list(outputs[1:])
