"""The bandwidth bound of batch-1 decoding: weight bytes one decoder step reads ÷ the machine's read bandwidth.

* ``decoder_step_weight_bytes(graph)`` counts, from the ONNX decoder step graph, the bytes of every initializer
  (and every ``Constant`` tensor) a step reads: a tensor read by any operator other than a row lookup counts
  whole; a table used only as the data of ``Gather`` or ``Slice`` (embedding rows, positions) counts one row per
  sentence of the batch. A table that a ``Gather`` and a ``MatMul`` share (the tied output projection) counts
  once, whole. The cross-attention keys and values the encoder computed and the key/value cache are activations,
  not weights, and are not counted: the bound is an upper limit on tokens/s.
* ``read_bandwidth(threads, buffer_bytes)`` is the best of ``repeats`` passes of ``numpy.max`` over a float32
  buffer, split in ``threads`` equal parts read by that many Python threads at once (numpy releases the GIL
  inside the reduction). With a buffer far larger than the last-level cache, it is the memory's read bandwidth.

The bound in tokens/s is ``bandwidth / bytes per token``; an engine that decodes faster than it is reading part
of the weights from cache (they exceed the last-level cache, but not by much).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

ROW_LOOKUPS = {("Gather", 0), ("Slice", 0)}  # (operator, input index) that read rows of a table, not all of it
MIN_BUFFER_BYTES = 256 * 2**20
CACHE_MULTIPLE = 16  # the buffer holds this many last-level caches


def _tensor_bytes(tensor: Any) -> tuple[int, int]:
    """(bytes of the tensor, bytes of one row along its first axis)."""
    import numpy as np
    from onnx import helper

    itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    elements = int(np.prod(tensor.dims)) if len(tensor.dims) else 1
    total = elements * itemsize
    rows = int(tensor.dims[0]) if len(tensor.dims) else 1
    return total, total // max(1, rows)


def graph_and_constants(graph_path: Path) -> tuple[Any, dict[str, Any]]:
    """An ONNX file's main graph (its external weights not read) and its constant tensors by name: the
    initializers and the values of its ``Constant`` nodes (``onnx.TensorProto``)."""
    import onnx

    graph = onnx.load(str(graph_path), load_external_data=False).graph
    tensors = {tensor.name: tensor for tensor in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            for attribute in node.attribute:
                if attribute.name == "value" and attribute.type == onnx.AttributeProto.TENSOR:
                    tensors[node.output[0]] = attribute.t
    return graph, tensors


def decoder_step_weight_bytes(graph_path: Path, batch_size: int = 1) -> dict[str, int]:
    """Weight bytes one step of the decoder graph reads: ``{"total", "whole", "rows", "tensors"}``."""
    import onnx

    graph, tensors = graph_and_constants(graph_path)
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                raise ValueError(f"{graph_path}: {node.op_type} has a subgraph; this count reads the main graph only")
    uses: dict[str, set[tuple[str, int]]] = {name: set() for name in tensors}
    for node in graph.node:
        for index, name in enumerate(node.input):
            if name in uses:
                uses[name].add((node.op_type, index))
    whole = rows = counted = 0
    for name, tensor in tensors.items():
        if not uses[name]:
            continue
        total, row = _tensor_bytes(tensor)
        counted += 1
        if uses[name] <= ROW_LOOKUPS:
            rows += row * batch_size
        else:
            whole += total
    return {"total": whole + rows, "whole": whole, "rows": rows, "tensors": counted}


def last_level_cache_bytes() -> int | None:
    """The largest cache of CPU 0 (Linux sysfs), or None when the system does not say."""
    sizes = []
    for size_file in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = size_file.read_text(encoding="ascii").strip()
        units = {"K": 2**10, "M": 2**20, "G": 2**30}
        sizes.append(int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text))
    return max(sizes) if sizes else None


def default_buffer_bytes() -> int:
    cache = last_level_cache_bytes() or 32 * 2**20
    return max(MIN_BUFFER_BYTES, CACHE_MULTIPLE * cache)


def read_bandwidth(threads: int, buffer_bytes: int, repeats: int = 5) -> float:
    """Bytes per second that ``threads`` threads read from a ``buffer_bytes`` float32 buffer (best pass)."""
    import numpy as np

    buffer = np.ones(buffer_bytes // 4, dtype=np.float32)
    parts = np.array_split(buffer, threads)
    best = 0.0
    for _ in range(repeats + 1):  # the first pass faults the pages in and is not counted
        workers = [threading.Thread(target=np.max, args=(part,)) for part in parts]
        began = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        seconds = time.perf_counter() - began
        if _ > 0:
            best = max(best, buffer.nbytes / seconds)
    return best
