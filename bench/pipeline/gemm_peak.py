"""The compute bound of batched decoding: the machine's INT8 GEMM peak through ONNX Runtime, and the MACs a call does.

* ``measure(threads)`` builds, in memory, a graph of one INT8 matrix product in the op pattern of our quantized
  graphs (``build.quantize``: ``com.microsoft.MatMulIntegerToFloat``, uint8 activations with a zero point of 128,
  int8 weights ``[K, N]`` in the reduced range -64..64 with a per-column scale and a zero point of 0, so ONNX
  Runtime pre-packs them as it does the bundle's), runs it on ``threads`` intra-op threads for a few large,
  compute-bound shapes (``SHAPES``), and reports each shape's best and median multiply-accumulates per second; the
  peak is the best shape's best call (a busy machine slows some calls, never speeds one up).
* ``cpu_isa()`` names the instruction sets ``/proc/cpuinfo`` offers for INT8 products (AVX2, AVX-VNNI,
  AVX-512 VNNI, AMX), so the reader knows which of ONNX Runtime's MLAS kernels can apply.
* ``graph_macs(graph)`` counts, from an ONNX graph, the multiply-accumulates its matrix products with a weight
  (an initializer ``[K, N]``, reached directly or through ``Transpose`` / ``DequantizeLinear`` / ``Cast``) do per
  row: ``K × N`` each. Products of two activations (attention's scores and context, FP32) are not counted. A product
  whose input was reduced over the sequence axis (CSANMT's pooled semantic vector and the terms made from it) runs
  once per sentence, not per token: the count keeps the two apart (``per_token`` and ``per_sentence``).
* ``call_macs(...)`` is what a batched call does: the encoder's per-token MACs over the real source tokens (padding
  not counted) plus its per-sentence MACs, and the decoder's per-row MACs (the output projection included) for
  every step of every row (``sentences × beam`` rows).

    python -m bench.pipeline.gemm_peak [--threads 2] [--graphs BUNDLE_DIR ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OP = "MatMulIntegerToFloat"
SHAPES = ((512, 1024, 1024), (1024, 1024, 4096), (512, 4096, 1024), (1024, 2048, 2048))  # (M, K, N)
SECONDS_PER_SHAPE = 0.6
ACTIVATION_ZERO_POINT = 128
WEIGHT_RANGE = 64  # reduce_range: 7-bit weights, as build.quantize writes them
MATRIX_PRODUCTS = {"MatMul", "MatMulInteger", "MatMulIntegerToFloat", "Gemm", "DynamicQuantizeMatMul"}
WEIGHT_PATHS = {"Transpose", "DequantizeLinear", "Cast", "Identity"}  # what may lie between a weight and its product
REDUCTIONS = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2"}
SEQUENCE_AXES = {1, -2}  # of [batch, sequence, hidden]
STATIC, PER_SENTENCE, PER_TOKEN = 0, 1, 2  # what a tensor depends on, in rising order

# (flag in /proc/cpuinfo, what it is, the u8s8 kernel it allows); MLAS picks the newest one offered at run time
ISA_FLAGS = (
    ("avx2", "AVX2", "vpmaddubsw, whose 16-bit sums are why the weights are 7-bit"),
    ("avx_vnni", "AVX-VNNI", "vpdpbusd on 256-bit registers"),
    ("avx512f", "AVX-512", "512-bit registers"),
    ("avx512_vnni", "AVX-512 VNNI", "vpdpbusd on 512-bit registers"),
    ("amx_int8", "AMX-INT8", "tile products"),
)


@dataclass(frozen=True)
class ShapeFigure:
    m: int
    k: int
    n: int
    calls: int
    best_gmac_s: float
    median_gmac_s: float


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The first CPU's ``flags`` (Linux); empty where the system does not say."""
    if not cpuinfo.is_file():
        return set()
    for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_isa(flags: set[str] | None = None) -> list[tuple[str, str]]:
    """(instruction set, the kernel it allows) for every INT8-relevant set the CPU offers, oldest first."""
    offered = cpu_flags() if flags is None else flags
    return [(name, kernel) for flag, name, kernel in ISA_FLAGS if flag in offered]


def gemm_graph(k: int, n: int, op: str = OP) -> bytes:
    """One ``[M, K] x [K, N]`` INT8 product in our graphs' pattern, serialized (``M`` is the input's free axis)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    weights = np.random.default_rng(0).integers(-WEIGHT_RANGE, WEIGHT_RANGE + 1, size=(k, n), dtype=np.int8)
    initializers = [
        numpy_helper.from_array(weights, "weight_quantized"),
        numpy_helper.from_array(np.zeros(n, dtype=np.int8), "weight_zero_point"),
        numpy_helper.from_array(np.array(ACTIVATION_ZERO_POINT, dtype=np.uint8), "activation_zero_point"),
    ]
    if op == "MatMulIntegerToFloat":
        initializers += [
            numpy_helper.from_array(np.array(1.0, dtype=np.float32), "activation_scale"),
            numpy_helper.from_array(np.full(n, 0.01, dtype=np.float32), "weight_scale"),
        ]
        inputs = ["a", "weight_quantized", "activation_scale", "weight_scale", "activation_zero_point"]
        node = helper.make_node(op, [*inputs, "weight_zero_point"], ["y"], domain="com.microsoft")
        output = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", n])
    elif op == "MatMulInteger":
        inputs = ["a", "weight_quantized", "activation_zero_point", "weight_zero_point"]
        node = helper.make_node(op, inputs, ["y"])
        output = helper.make_tensor_value_info("y", TensorProto.INT32, ["M", n])
    else:
        raise ValueError(f"no INT8 GEMM graph for {op!r}: MatMulIntegerToFloat or MatMulInteger")
    graph = helper.make_graph(
        [node], "int8_gemm", [helper.make_tensor_value_info("a", TensorProto.UINT8, ["M", k])], [output], initializers
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


def measure_shape(
    m: int, k: int, n: int, threads: int, seconds: float = SECONDS_PER_SHAPE, op: str = OP
) -> ShapeFigure:
    """Calls of one shape for about ``seconds`` after an untimed one; multiply-accumulates per second."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    session = ort.InferenceSession(gemm_graph(k, n, op), options, providers=["CPUExecutionProvider"])
    activations = {"a": np.random.default_rng(1).integers(0, 256, size=(m, k), dtype=np.uint8)}
    session.run(None, activations)
    durations: list[float] = []
    began = time.perf_counter()
    while time.perf_counter() - began < seconds or len(durations) < 3:
        start = time.perf_counter()
        session.run(None, activations)
        durations.append(time.perf_counter() - start)
    macs = m * k * n
    return ShapeFigure(m, k, n, len(durations), macs / min(durations) / 1e9, macs / statistics.median(durations) / 1e9)


def measure(
    threads: int, shapes: Sequence[tuple[int, int, int]] = SHAPES, seconds: float = SECONDS_PER_SHAPE, op: str = OP
) -> dict[str, Any]:
    """The INT8 GEMM peak on ``threads`` threads: ``{"peak_gmac_s", "shapes", "op", "threads", "isa"}``."""
    figures = [measure_shape(m, k, n, threads, seconds, op) for m, k, n in shapes]
    best = max(figures, key=lambda figure: figure.best_gmac_s)
    return {
        "op": op,
        "threads": threads,
        "peak_gmac_s": best.best_gmac_s,
        "peak_shape": [best.m, best.k, best.n],
        "shapes": [vars(figure) for figure in figures],
        "isa": [name for name, _ in cpu_isa()],
    }


# --- the MACs a graph does ---------------------------------------------------------------------------------------


def _reduces_sequence(node: Any, constants: dict[str, Any]) -> bool:
    from onnx import helper, numpy_helper

    axes: list[int] = []
    for attribute in node.attribute:
        if attribute.name == "axes":
            axes = list(helper.get_attribute_value(attribute))
    if not axes and len(node.input) > 1 and node.input[1] in constants:  # opset 18: axes is an input
        axes = [int(axis) for axis in numpy_helper.to_array(constants[node.input[1]]).ravel()]
    return bool(set(axes) & SEQUENCE_AXES)


def graph_macs(graph_path: Path) -> dict[str, int]:
    """Multiply-accumulates of the weight products per row: ``{"per_token", "per_sentence", "products"}``."""
    from bench.pipeline.bandwidth import graph_and_constants

    graph, tensors = graph_and_constants(graph_path)
    producer = {output: node for node in graph.node for output in node.output}
    # what each tensor depends on: weights and shapes only (static), one row per sentence, or one per token
    state = {value.name: PER_TOKEN for value in graph.input}
    for node in graph.node:  # ONNX graphs are topologically sorted
        if node.op_type in ("Shape", "Constant", "ConstantOfShape", "Size"):
            outcome = STATIC
        else:
            outcome = max((state.get(name, STATIC) for name in node.input if name), default=STATIC)
            if outcome == PER_TOKEN and node.op_type in REDUCTIONS and _reduces_sequence(node, tensors):
                outcome = PER_SENTENCE
        for output in node.output:
            state[output] = outcome
    per_token = per_sentence = products = 0
    for node in graph.node:
        if node.op_type not in MATRIX_PRODUCTS or len(node.input) < 2:
            continue
        weight = node.input[1]
        while weight not in tensors and weight in producer and producer[weight].op_type in WEIGHT_PATHS:
            weight = producer[weight].input[0]
        if weight not in tensors or len(tensors[weight].dims) != 2:
            continue  # a product of two activations (attention), not counted
        k, n = tensors[weight].dims
        if node.op_type == "Gemm" and any(a.name == "transB" and a.i for a in node.attribute):
            k, n = n, k
        products += 1
        if state.get(node.input[0], PER_TOKEN) == PER_SENTENCE:
            per_sentence += int(k) * int(n)
        else:
            per_token += int(k) * int(n)
    return {"per_token": per_token, "per_sentence": per_sentence, "products": products}


def bundle_macs(bundle_dir: Path) -> dict[str, dict[str, int]]:
    """``graph_macs`` of the bundle's encoder and decoder step."""
    return {part: graph_macs(bundle_dir / f"{part}.onnx") for part in ("encoder", "decoder")}


def call_macs(
    macs: dict[str, dict[str, int]], sentences: int, source_tokens: float, steps: int, beam_size: int
) -> float:
    """Multiply-accumulates of one batched call: ``sentences`` sentences of ``source_tokens`` real tokens on
    average (padding not counted) through the encoder, then ``steps`` decoder steps for each of the
    ``sentences × beam_size`` rows (every row runs every step: the bench forces the output length)."""
    encoder, decoder = macs["encoder"], macs["decoder"]
    encoded = sentences * (source_tokens * encoder["per_token"] + encoder["per_sentence"])
    decoded = sentences * beam_size * steps * (decoder["per_token"] + decoder["per_sentence"])
    return encoded + decoded


# --- the command ----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline.gemm_peak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads (default 2, as make bench)")
    parser.add_argument("--seconds", type=float, default=SECONDS_PER_SHAPE, help="timed seconds per shape")
    parser.add_argument("--op", default=OP, choices=("MatMulIntegerToFloat", "MatMulInteger"))
    parser.add_argument("--graphs", type=Path, nargs="*", default=[], help="bundles whose MACs per row to print")
    args = parser.parse_args(argv)
    offered = cpu_isa()
    print("INT8 instruction sets offered: " + ("; ".join(f"{name} ({kernel})" for name, kernel in offered) or "none"))
    figures = measure(args.threads, seconds=args.seconds, op=args.op)
    for shape in figures["shapes"]:
        print(
            f"  M={shape['m']} K={shape['k']} N={shape['n']}: best {shape['best_gmac_s']:,.1f} GMAC/s, "
            f"median {shape['median_gmac_s']:,.1f} ({shape['calls']} calls)"
        )
    print(f"{args.op} on {args.threads} thread(s): peak {figures['peak_gmac_s']:,.1f} GMAC/s")
    for bundle_dir in args.graphs:
        for part, counted in bundle_macs(bundle_dir).items():
            print(
                f"{bundle_dir / part}.onnx: {counted['per_token']:,} MACs per token, {counted['per_sentence']:,} per "
                f"sentence ({counted['products']} weight products)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
