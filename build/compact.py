"""Store a bundle's graphs without what they need not hold: the rewrites ``build.export`` applies as it quantizes,
and this command applies to a bundle built before them (the shipped default model's FP32 weights are not kept).

    python -m build.compact BUNDLE_DIR

* ``compute_sinusoidal_positions``: a sinusoidal position table (Marian's ``positions``, [max_positions, d] FP32,
  stored in both graphs: 2 MB in an opus-mt-sized bundle) is replaced by the rows each ``Slice`` of it takes,
  computed in the graph (``Range`` -> ``Sin``/``Cos`` in FP64, rounded to FP32 as transformers rounds its table:
  the same numbers, bit for bit), a handful of small operators per call. Rewritten only when the stored table is
  that sinusoid to within ``POSITION_TOLERANCE``; a learned table stays.
* ``drop_zero_bias``: the output logits' ``Add`` of an initializer that is all zeros (Marian's
  ``final_logits_bias``, a buffer transformers never trains: 65,001 floats added to every row of logits at every
  step) is removed.
* ``squeeze_output_gather``: an output taken from a length-one axis by ``Gather`` (CSANMT's [rows, 50,000]
  log-probabilities every step) is taken by ``Squeeze`` (which ONNX Runtime copies all the same for a graph output).
* ``masked_sums_as_products``: a masked sum over the sequence (CSANMT's pooled semantic vector) computed as a
  product with the mask, so that a sentence's sum is the same alone and in a batch (``ReduceSum`` differed in the
  last bit between one row and several, and translations with it).
* ``externalize_weights``: every weight of 64 KiB and more in ``<graph>.data`` beside the graph, page-aligned, which
  ONNX Runtime maps into memory instead of copying it out of the parsed graph (``handler.model.bundle.weights_file``).
* with ``python -m build.compact``, also the tied embedding stored once for both graphs
  (``build.quantize.share_embedding_between_graphs``: the embedding lookup then reads the output projection's
  per-token INT8 columns) and a joint vocabulary's SentencePiece model stored once
  (``handler.model.bundle.TARGET_SPM_KEY``).

Each rewrite checks the graph with ``onnx.checker``; the command writes every new file beside the old ones, then
replaces them, then the manifest (hashes, a ``compacted`` record in its ``quantization`` section) last, so an
interrupted run leaves a bundle that loads as before or fails its hash check with the file named.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from build.manifest_file import rewrite_manifest

POSITION_TOLERANCE = 1e-6  # |stored - computed| allowed (measured on the default model's tables: 0, every entry)
POSITIONS_PREFIX = "computed_positions"


def sinusoid(rows: int, width: int) -> Any:
    """Marian's table (transformers' ``MarianSinusoidalPositionalEmbedding``), computed as the graph computes it:
    FP64 ``position x 10000 ** (-2i / width)``, sines in the first half of each row, cosines in the second, FP32."""
    import numpy as np

    angles = np.arange(rows, dtype=np.float64)[:, None] * inverse_frequencies(width)[None, :]
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1).astype(np.float32)


def inverse_frequencies(width: int) -> Any:
    import numpy as np

    return np.power(10000.0, -2.0 * np.arange(width // 2, dtype=np.float64) / width)


def compute_sinusoidal_positions(graph_path: Path) -> bool:
    """Replace a stored sinusoidal position table by its rows computed in the graph; whether the graph changed."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(graph_path), load_external_data=False)
    graph = model.graph
    weights = {tensor.name: tensor for tensor in graph.initializer}
    constants = _constants(graph)
    changed = False
    for table_name, tensor in list(weights.items()):
        if tensor.data_type != onnx.TensorProto.FLOAT or len(tensor.dims) != 2 or tensor.dims[1] % 2:
            continue
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            continue  # a computed table is tiny: an external one was never rewritten, and is not a sinusoid here
        users = [node for node in graph.node if table_name in node.input]
        if not users or any(not _row_slice(node, table_name, constants) for node in users):
            continue
        table = numpy_helper.to_array(tensor)
        if np.abs(table - sinusoid(*table.shape)).max() > POSITION_TOLERANCE:
            continue  # learned, or another sinusoid: kept as stored
        width = int(table.shape[1])
        prefix = f"{POSITIONS_PREFIX}_{table_name}"
        graph.initializer.remove(tensor)
        graph.initializer.extend(
            [
                numpy_helper.from_array(inverse_frequencies(width)[None, :], f"{prefix}_frequencies"),
                numpy_helper.from_array(np.array(1, dtype=np.int64), f"{prefix}_one"),
                numpy_helper.from_array(np.array([1], dtype=np.int64), f"{prefix}_column_axis"),
            ]
        )
        for index, node in enumerate(users):
            name = f"{prefix}_{index}"
            start, end = node.input[1], node.input[2]
            replacement = [
                helper.make_node("Squeeze", [start], [f"{name}_start"]),
                helper.make_node("Squeeze", [end], [f"{name}_end"]),
                helper.make_node("Range", [f"{name}_start", f"{name}_end", f"{prefix}_one"], [f"{name}_rows"]),
                helper.make_node("Cast", [f"{name}_rows"], [f"{name}_rows_double"], to=onnx.TensorProto.DOUBLE),
                helper.make_node("Unsqueeze", [f"{name}_rows_double", f"{prefix}_column_axis"], [f"{name}_column"]),
                helper.make_node("Mul", [f"{name}_column", f"{prefix}_frequencies"], [f"{name}_angles"]),
                helper.make_node("Sin", [f"{name}_angles"], [f"{name}_sines"]),
                helper.make_node("Cos", [f"{name}_angles"], [f"{name}_cosines"]),
                helper.make_node("Concat", [f"{name}_sines", f"{name}_cosines"], [f"{name}_table"], axis=1),
                helper.make_node("Cast", [f"{name}_table"], [node.output[0]], to=onnx.TensorProto.FLOAT),
            ]
            position = list(graph.node).index(node)
            graph.node.remove(node)
            for offset, new in enumerate(replacement):
                graph.node.insert(position + offset, new)
        changed = True
    if changed:
        _save_checked(model, graph_path)
    return changed


def _constants(graph: Any) -> dict[str, Any]:
    """Every constant the graph names (initializers and ``Constant`` nodes' values) as numpy arrays."""
    from onnx import numpy_helper

    values = {tensor.name: tensor for tensor in graph.initializer if not tensor.external_data}
    found = {name: numpy_helper.to_array(tensor) for name, tensor in values.items()}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            found[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return found


def _row_slice(node: Any, table: str, constants: dict[str, Any]) -> bool:
    """Whether ``node`` is ``Slice(table, start, end, axes=[0], steps=[1])`` with one start and one end."""
    import numpy as np

    if node.op_type != "Slice" or node.input[0] != table or len(node.input) < 4 or table in node.input[1:]:
        return False
    axes = constants.get(node.input[3])
    steps = constants.get(node.input[4]) if len(node.input) > 4 and node.input[4] else np.array([1])
    return axes is not None and steps is not None and axes.tolist() == [0] and steps.tolist() == [1]


def drop_zero_bias(graph_path: Path) -> bool:
    """Remove the ``Add`` of an all-zero initializer just before a graph output (through ``LogSoftmax``,
    ``Softmax``, ``Identity``): the output logits' bias, a buffer no training changes. Biases inside the network
    are trained parameters and stay even when zero (a random model's are; dropping them would make a random model
    faster than any trained one). Whether the graph changed."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(graph_path), load_external_data=False)
    graph = model.graph
    zeros = {
        tensor.name
        for tensor in graph.initializer
        if not tensor.external_data
        and tensor.data_type == onnx.TensorProto.FLOAT
        and not np.any(numpy_helper.to_array(tensor))
    }
    outputs = {value.name for value in graph.output}
    changed = False
    for node in _output_adds(graph):
        if not zeros & set(node.input):
            continue
        kept = [name for name in node.input if name not in zeros]
        if len(kept) != 1 or node.output[0] in outputs:
            continue  # the graph's output itself: removing the Add would rename it
        bias = next(tensor for tensor in graph.initializer if tensor.name in node.input)
        if list(bias.dims)[-1:] != [_columns_of(graph, kept[0])] or len(bias.dims) != 1:
            continue  # not known to add a [N] bias to a [..., N] input: it could broadcast, so it stays
        for other in graph.node:
            other.input[:] = [kept[0] if name == node.output[0] else name for name in other.input]
        graph.node.remove(node)
        changed = True
    if changed:
        used = {name for node in graph.node for name in node.input}
        for tensor in list(graph.initializer):
            if tensor.name in zeros and tensor.name not in used:
                graph.initializer.remove(tensor)
        _save_checked(model, graph_path)
    return changed


def squeeze_output_gather(graph_path: Path) -> bool:
    """Replace a graph output's ``Gather(x, 0, axis=a)`` with a scalar index by ``Squeeze(x, [a])``: the same values
    when axis ``a`` has one entry (CSANMT's log-probabilities [rows, 1, V] -> [rows, V]). Were the axis longer, the
    ``Squeeze`` would fail loudly, never answer differently. ONNX Runtime copies a graph output's ``Squeeze`` as it
    copied the ``Gather`` (1.5 ms for [64, 1, 50,000] alone, measured); moving it before the output path instead
    made no difference to a step (docs/decisions.md). Whether the graph changed."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(graph_path), load_external_data=False)
    graph = model.graph
    constants = _constants(graph)
    outputs = {value.name for value in graph.output}
    changed = False
    for node in list(graph.node):
        if node.op_type != "Gather" or node.output[0] not in outputs:
            continue
        index = constants.get(node.input[1])
        if index is None or np.ndim(index) != 0 or int(index) != 0:
            continue
        axis = next((attribute.i for attribute in node.attribute if attribute.name == "axis"), 0)
        axes = f"{node.output[0]}_squeezed_axis"
        graph.initializer.append(numpy_helper.from_array(np.array([axis], dtype=np.int64), axes))
        position = list(graph.node).index(node)
        graph.node.remove(node)
        graph.node.insert(position, helper.make_node("Squeeze", [node.input[0], axes], [node.output[0]]))
        changed = True
    if changed:
        _save_checked(model, graph_path)
    return changed


def masked_sums_as_products(graph_path: Path) -> bool:
    """Replace a masked sum over the sequence, ``ReduceSum(Mul(x, m), axes=[1], keepdims=1)`` with ``m`` the
    attention mask as [rows, width, 1] (``Unsqueeze`` on the last axis), by the product ``MatMul(m^T, Mul(x, m))``
    ([rows, 1, width] x [rows, width, d]): the same sum of the unmasked positions, each row by the same kernel in
    any batch. ONNX Runtime's ``ReduceSum`` over the middle axis takes another path for one row than for several
    (a reduction over the leading axis), and the sums differed in their last bit: CSANMT's pooled semantic vector,
    and so its translations, changed with the batch a sentence was in. Whether the graph changed."""
    import numpy as np
    import onnx
    from onnx import helper

    model = onnx.load(str(graph_path), load_external_data=False)
    graph = model.graph
    constants = _constants(graph)
    producers = {output: node for node in graph.node for output in node.output}

    inputs = {value.name: len(value.type.tensor_type.shape.dim) for value in graph.input}

    def is_mask(name: str) -> bool:  # a graph input of [rows, width], or a Cast of one
        while name in producers and producers[name].op_type == "Cast":
            name = producers[name].input[0]
        return inputs.get(name) == 2

    def is_mask_column(name: str) -> bool:  # the mask [rows, width] -> [rows, width, 1]
        node = producers.get(name)
        if node is None or node.op_type != "Unsqueeze" or not is_mask(node.input[0]):
            return False
        axes = constants.get(node.input[1]) if len(node.input) > 1 else None
        if axes is None:
            axes = next((np.array(a.ints) for a in node.attribute if a.name == "axes"), None)
        return axes is not None and np.ravel(axes).tolist() in ([2], [-1])

    changed = False
    for node in list(graph.node):
        if node.op_type != "ReduceSum" or len(node.input) < 2:
            continue
        axes = constants.get(node.input[1])
        keepdims = next((a.i for a in node.attribute if a.name == "keepdims"), 1)
        product = producers.get(node.input[0])
        if axes is None or np.ravel(axes).tolist() != [1] or keepdims != 1 or product is None:
            continue
        if product.op_type != "Mul" or not any(is_mask_column(name) for name in product.input):
            continue
        mask = next(name for name in product.input if is_mask_column(name))
        transposed = f"{node.output[0]}_mask_row"
        position = list(graph.node).index(node)
        graph.node.remove(node)
        graph.node.insert(position, helper.make_node("Transpose", [mask], [transposed], perm=[0, 2, 1]))
        graph.node.insert(position + 1, helper.make_node("MatMul", [transposed, node.input[0]], [node.output[0]]))
        changed = True
    if changed:
        _save_checked(model, graph_path)
    return changed


OUTPUT_TAIL = ("LogSoftmax", "Softmax", "Identity")


def _output_adds(graph: Any) -> list[Any]:
    """The ``Add`` nodes whose result reaches a graph output through ``OUTPUT_TAIL`` nodes only."""
    producers = {output: node for node in graph.node for output in node.output}
    found = []
    for value in graph.output:
        node = producers.get(value.name)
        while node is not None and node.op_type in OUTPUT_TAIL:
            node = producers.get(node.input[0])
        if node is not None and node.op_type == "Add":
            found.append(node)
    return found


MATMULS = ("MatMul", "MatMulInteger", "MatMulIntegerToFloat", "Gemm")
ELEMENTWISE = ("Mul", "Div", "Cast", "Identity")


def _columns_of(graph: Any, name: str) -> int | None:
    """The last dimension of value ``name`` when it comes from a product with a weight initializer [.., N] through
    element-wise scaling (``Mul``/``Div`` by a row or column scale, ``Cast``): N; None if unknown."""
    producers = {output: node for node in graph.node for output in node.output}
    weights = {tensor.name: list(tensor.dims) for tensor in graph.initializer}
    seen = 0
    while name in producers and seen < 8:
        node, seen = producers[name], seen + 1
        if node.op_type in MATMULS:
            dims = weights.get(node.input[1])
            return int(dims[-1]) if dims else None
        if node.op_type not in ELEMENTWISE:
            return None
        flowing = [value for value in node.input if value not in weights]
        name = flowing[0] if flowing else ""
    return None


def _save_checked(model: Any, graph_path: Path) -> None:
    import onnx

    onnx.save(model, str(graph_path))
    onnx.checker.check_model(str(graph_path))


EXTERNAL_MIN_BYTES = 64 * 1024  # smaller initializers stay in the graph file (each external one is page-aligned)


def externalize_weights(graph_path: Path, reuse: Path | None = None) -> bool:
    """Move the graph's initializers of ``EXTERNAL_MIN_BYTES`` and more into ``<graph>.data`` beside it
    (``handler.model.bundle.weights_file``), each at a multiple of ``bundle.WEIGHTS_ALIGNMENT``, so that ONNX Runtime
    maps them from the file instead of copying them out of the parsed graph. Initializers already external
    elsewhere (the shared embedding) stay where they are; ones already in ``<graph>.data`` are rewritten with the
    rest. ``reuse``: another graph of the bundle, already externalized: a weight it stores under the same name with
    the same bytes (Marian's per-token output scales, which the encoder's embedding lookup reads too) is read from
    its file instead of stored twice. The values are the same bytes. Whether the graph changed."""
    import onnx
    from onnx.external_data_helper import set_external_data

    from handler.model import bundle

    model = onnx.load(str(graph_path), load_external_data=False)
    name = bundle.weights_file(graph_path.name)
    data_path = graph_path.with_name(name)

    def location(tensor: Any) -> str | None:
        entries = {entry.key: entry.value for entry in tensor.external_data}
        return entries.get("location") if tensor.data_location == onnx.TensorProto.EXTERNAL else None

    inline = [t for t in model.graph.initializer if location(t) is None and len(t.raw_data) >= EXTERNAL_MIN_BYTES]
    if not inline:
        return False
    if reuse is not None:
        elsewhere = _stored_in(reuse)
        for tensor in list(inline):
            found = elsewhere.get(tensor.name)
            if found is not None and found[3] == tensor.raw_data:
                set_external_data(tensor, location=found[0], offset=found[1], length=found[2])
                tensor.ClearField("raw_data")
                tensor.data_location = onnx.TensorProto.EXTERNAL
                inline.remove(tensor)
        if not inline:  # everything it held is read from the other graph's file
            _save_checked(model, graph_path)
            return True
    ours = [tensor for tensor in model.graph.initializer if location(tensor) == name]
    if ours:  # read back what the old file holds before it is replaced
        onnx.external_data_helper.load_external_data_for_tensor(ours[0], str(graph_path.parent))
        for tensor in ours[1:]:
            onnx.external_data_helper.load_external_data_for_tensor(tensor, str(graph_path.parent))
        for tensor in ours:
            tensor.data_location = onnx.TensorProto.DEFAULT
            del tensor.external_data[:]
    temporary = graph_path.with_name(f".{name}.tmp")
    offset = 0
    with temporary.open("wb") as handle:
        for tensor in [*ours, *inline]:
            padding = -offset % bundle.WEIGHTS_ALIGNMENT
            handle.write(b"\0" * padding)
            offset += padding
            handle.write(tensor.raw_data)
            set_external_data(tensor, location=name, offset=offset, length=len(tensor.raw_data))
            offset += len(tensor.raw_data)
            tensor.ClearField("raw_data")
            tensor.data_location = onnx.TensorProto.EXTERNAL
    os.replace(temporary, data_path)
    _save_checked(model, graph_path)
    return True


def _stored_in(graph_path: Path) -> dict[str, tuple[str, int, int, bytes]]:
    """Initializers of ``graph_path`` stored in its own weights file: name -> (file, offset, length, bytes)."""
    import onnx

    from handler.model import bundle

    name = bundle.weights_file(graph_path.name)
    found = {}
    data = graph_path.with_name(name)
    for tensor in onnx.load(str(graph_path), load_external_data=False).graph.initializer:
        entries = {entry.key: entry.value for entry in tensor.external_data}
        if tensor.data_location == onnx.TensorProto.EXTERNAL and entries.get("location") == name:
            offset, length = int(entries.get("offset", 0)), int(entries["length"])
            with data.open("rb") as handle:
                handle.seek(offset)
                found[tensor.name] = (name, offset, length, handle.read(length))
    return found


def tied_tables(encoder_path: Path, decoder_path: Path) -> tuple[str, str] | None:
    """(encoder table, decoder projection) base names when the encoder's INT8 embedding lookup ``Gather(T_quantized)``
    [V, d] and the decoder's INT8 output projection ``P_quantized`` [d, V] hold the same tied matrix (each
    dequantized, within one quantization step of either); None otherwise."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    encoder = onnx.load(str(encoder_path), load_external_data=False).graph
    decoder = onnx.load(str(decoder_path), load_external_data=False).graph
    decoder_weights = {t.name: t for t in decoder.initializer if not t.external_data}
    encoder_weights = {t.name: t for t in encoder.initializer if not t.external_data}
    lookups = [n.input[0] for n in encoder.node if n.op_type == "Gather" and n.input[0] in encoder_weights]
    projections = [n.input[1] for n in decoder.node if n.op_type in MATMULS[1:] and n.input[1] in decoder_weights]
    for table_q in lookups:
        for projection_q in projections:
            table, projection = table_q.removesuffix("_quantized"), projection_q.removesuffix("_quantized")
            if list(encoder_weights[table_q].dims) != list(decoder_weights[projection_q].dims)[::-1]:
                continue
            names = (f"{table}_scale", f"{table}_zero_point", f"{projection}_scale", f"{projection}_zero_point")
            if not all(name in (encoder_weights if i < 2 else decoder_weights) for i, name in enumerate(names)):
                continue
            values = [numpy_helper.to_array(encoder_weights[name]) for name in names[:2]]
            values += [numpy_helper.to_array(decoder_weights[name]) for name in names[2:]]
            table_scale, table_zero, projection_scale, projection_zero = values
            rows = numpy_helper.to_array(encoder_weights[table_q]).astype(np.float32) - table_zero.astype(np.float32)
            rows *= table_scale
            columns = numpy_helper.to_array(decoder_weights[projection_q]).astype(np.float32)
            columns = (columns - projection_zero.astype(np.float32)) * projection_scale
            step = float(np.max(table_scale)) + float(np.max(projection_scale))
            if np.abs(rows - columns.T).max() <= step:
                return table, projection
    return None


def graph_file_names() -> list[str]:
    """Every file of a bundle that holds graph weights: the graphs, their external weights, the shared embedding."""
    from handler.model import bundle

    return [*bundle.MODEL_FILES, *map(bundle.weights_file, bundle.MODEL_FILES), bundle.SHARED_EMBEDDING]


def compact_bundle(bundle_dir: Path) -> dict[str, Any]:
    """Apply every rewrite to the bundle in ``bundle_dir`` in place; returns the manifest's ``compacted`` record.

    New files are written in a staging folder inside the bundle, then moved over the old ones; the manifest last.
    """
    import shutil

    from build.quantize import share_embedding_between_graphs
    from handler.model import bundle

    manifest_path = bundle_dir / bundle.MANIFEST
    record = json.loads(manifest_path.read_text(encoding="utf-8"))
    staging = bundle_dir / ".compact-staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    done: list[str] = []
    try:
        for name in bundle.MODEL_FILES:
            shutil.copyfile(bundle_dir / name, staging / name)
            if (bundle_dir / bundle.weights_file(name)).is_file():
                shutil.copyfile(bundle_dir / bundle.weights_file(name), staging / bundle.weights_file(name))
        encoder, decoder = (staging / name for name in bundle.MODEL_FILES)
        shared = bundle_dir / bundle.SHARED_EMBEDDING
        if shared.is_file():  # the graphs in staging reference it beside them (checked by onnx.checker)
            shutil.copyfile(shared, staging / bundle.SHARED_EMBEDDING)
        elif (tied := tied_tables(encoder, decoder)) is not None:
            share_embedding_between_graphs(encoder, decoder, *tied, staging / bundle.SHARED_EMBEDDING)
            done.append(f"tied embedding stored once ({bundle.SHARED_EMBEDDING}): {tied[0]} reads {tied[1]}")
        for graph in (encoder, decoder):
            if compute_sinusoidal_positions(graph):
                done.append(f"{graph.name}: sinusoidal positions computed")
            if drop_zero_bias(graph):
                done.append(f"{graph.name}: all-zero bias removed")
            if squeeze_output_gather(graph):
                done.append(f"{graph.name}: output taken by Squeeze, not Gather")
            if masked_sums_as_products(graph):
                done.append(f"{graph.name}: masked sums over the sequence as products (the same in any batch)")
        for graph, reuse in ((decoder, None), (encoder, decoder)):
            if externalize_weights(graph, reuse):
                done.append(f"{graph.name}: weights in {bundle.weights_file(graph.name)}, mapped at load")
        joint = record.get("family", bundle.FAMILY_MARIAN) == bundle.FAMILY_MARIAN and (
            (bundle_dir / bundle.TARGET_SPM).is_file()
            and (bundle_dir / bundle.TARGET_SPM).read_bytes() == (bundle_dir / bundle.SOURCE_SPM).read_bytes()
        )
        if joint:
            done.append(f"joint vocabulary: {bundle.SOURCE_SPM} stored once")
        if not done:
            return dict(record.get("quantization", {}).get("compacted", {}))

        def order(path: Path) -> int:  # what the new graphs read goes in before them
            return 0 if path.name == bundle.SHARED_EMBEDDING else 1 if path.suffix == ".data" else 2

        for path in sorted(staging.iterdir(), key=order):
            os.replace(path, bundle_dir / path.name)
            record["files"][path.name] = asdict(bundle.file_entry(bundle_dir / path.name))
        if joint:
            record.setdefault("tokenizer", {})[bundle.TARGET_SPM_KEY] = bundle.SOURCE_SPM
            record["files"].pop(bundle.TARGET_SPM)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    quantization = record.setdefault("quantization", {})
    graph_files = [name for name in graph_file_names() if name in record["files"]]
    quantization["int8_graph_bytes"] = sum(record["files"][name]["bytes"] for name in graph_files)
    if fp32_bytes := quantization.get("fp32_graph_bytes"):
        quantization["int8_share_of_fp32"] = round(quantization["int8_graph_bytes"] / fp32_bytes, 4)
    quantization["compacted"] = {
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "by": "python -m build.compact",
        "rewrites": done,
        "note": "the verification figures were measured at export, before these rewrites",
    }
    rewrite_manifest(bundle_dir, record)
    if joint:
        (bundle_dir / bundle.TARGET_SPM).unlink()
    return dict(quantization["compacted"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build.compact", description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle_dir", type=Path, help="a bundle folder (model_artifacts/<name>), rewritten in place")
    args = parser.parse_args(argv)
    print(json.dumps(compact_bundle(args.bundle_dir), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
