"""Static (calibrated) activation scales beside per-row ones: rewrite a bundle, then compare speed and quality.

    python -m bench.studies.static_activations DIR --out OUT [--calibration-sentences 256] [--percentile 100]

Issue 15 asks for a batch-invariant INT8 scheme that is also fast, measured against the alternatives. The
shipped scheme quantizes every activation row with its own scale (``build.quantize.quantize_activations_per_row``):
batch-invariant, but each quantized input costs 5 small operators, and every product a row-scale ``Mul`` after
it, because ONNX Runtime's fused ``MatMulIntegerToFloat`` takes a single activation scale. A *static* scale is
batch-invariant too (it is a constant): this writes a copy of a per-row bundle whose every activation is
quantized with one calibrated scale per tensor (``max |x| / 127`` over the calibration run, or a percentile of
``|x|``), folded into ``MatMulIntegerToFloat`` like ``quantize_dynamic``'s own scale, with the same symmetric
zero point 128 and the same INT8 weights. Values beyond the calibrated range saturate.

Calibration: the first ``--calibration-sentences`` Chinese sentences of ``data/corpus/train-00.zh-en.tsv.gz``
(8-120 characters; not the dev set the quality is measured on) through the bundle's own encoder and a greedy
decode of up to 64 steps, with every quantized input read out as an extra graph output.

The copy's manifest records the scheme (``quantization.activations = "static"``) and the file hashes; it is a
measurement artifact (``python -m build.evaluate --bundle OUT`` scores it, ``bench.pipeline.engines`` times it), not a
bundle the build writes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from build.corpus import REPOSITORY_CORPUS_DIR, read_pairs
from build.quantize import PER_ROW_PREFIX

PER_ROW_SCALED = f"_{PER_ROW_PREFIX}_scaled"  # build.quantize: Div(x, row scale) feeding QuantizeLinear
CALIBRATION_FILE = REPOSITORY_CORPUS_DIR / "train-00.zh-en.tsv.gz"  # the first shard of the repository's train set
MAX_STEPS = 64


def per_row_blocks(model: Any) -> list[dict[str, Any]]:
    """Each per-row quantization of a graph: its source tensor, row scale, quantized output and the nodes it adds."""
    producer = {output: node for node in model.graph.node for output in node.output}
    blocks = []
    for node in model.graph.node:
        if node.op_type != "QuantizeLinear" or not node.input[0].endswith(PER_ROW_SCALED):
            continue
        divide = producer[node.input[0]]
        source, row_scale = divide.input
        times_reciprocal = producer[row_scale]
        positive = producer[times_reciprocal.input[0]]
        row_max = producer[positive.input[0]]
        absolute = producer[row_max.input[0]]
        blocks.append(
            {
                "source": source,
                "row_scale": row_scale,
                "quantize": node,
                "remove": [divide, times_reciprocal, positive, row_max, absolute],
            }
        )
    return blocks


def calibrate(bundle_dir: Path, sentences: list[str], threads: int = 2) -> dict[str, np.ndarray]:
    """|x| of every per-row-quantized input of both graphs over the calibration run, flattened per tensor."""
    import onnx
    import onnxruntime as ort

    from handler.model import bundle
    from handler.model.batching import pad_batch
    from handler.model.families import family_named
    from handler.model.loader import load_bundle
    from handler.model.sessions import session_options, share_embedding

    manifest = load_bundle(bundle_dir, verify_hashes=False)
    spec = manifest.model
    family = family_named(manifest.family)
    contract = family.graph_contract(spec)
    tokenizer = family.load_tokenizer(bundle_dir, manifest)
    sessions, sources, keep = {}, {}, []
    with tempfile.TemporaryDirectory(prefix="calibration-") as work:  # the bundle folder is never written
        external = [bundle.SHARED_EMBEDDING, *map(bundle.weights_file, (bundle.ENCODER_ONNX, bundle.DECODER_ONNX))]
        for name in external:  # the graphs' external data
            if (bundle_dir / name).is_file():
                shutil.copyfile(bundle_dir / name, Path(work) / name)
        for name in (bundle.ENCODER_ONNX, bundle.DECODER_ONNX):
            model = onnx.load(str(bundle_dir / name), load_external_data=False)
            sources[name] = [block["source"] for block in per_row_blocks(model)]
            model.graph.output.extend(
                onnx.helper.make_tensor_value_info(source, onnx.TensorProto.FLOAT, None) for source in sources[name]
            )
            path = Path(work) / name
            onnx.save(model, str(path))
            options = session_options(threads, False)
            keep.append(share_embedding(bundle_dir, spec, options))
            sessions[name] = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    seen: dict[str, list[np.ndarray]] = {s: [] for name in sources for s in sources[name]}
    encoder, decoder = sessions[bundle.ENCODER_ONNX], sessions[bundle.DECODER_ONNX]
    cross_names = list(contract.per_sentence)
    for first in range(0, len(sentences), 16):
        ids, mask = pad_batch(tokenizer.encode_batch(sentences[first : first + 16]), spec.pad_id)
        outputs = encoder.run(
            cross_names + sources[bundle.ENCODER_ONNX], {bundle.INPUT_IDS: ids, bundle.ATTENTION_MASK: mask}
        )
        cross = outputs[: len(cross_names)]
        for source, value in zip(sources[bundle.ENCODER_ONNX], outputs[len(cross_names) :], strict=True):
            seen[source].append(np.abs(value[mask.astype(bool)]).ravel())  # padding rows never reach a sentence
        rows = ids.shape[0]
        past = [np.zeros((rows, spec.attention_heads, 0, spec.head_dim), dtype=np.float32) for _ in contract.past]
        tokens = np.full((rows, 1), spec.decoder_start_id, dtype=np.int64)
        done = np.zeros(rows, dtype=bool)
        for _ in range(MAX_STEPS):
            feeds = {bundle.INPUT_IDS: tokens, bundle.ENCODER_ATTENTION_MASK: mask}
            feeds.update(zip(contract.past, past, strict=True))
            feeds.update(zip(cross_names, cross, strict=True))
            names = [bundle.LOG_PROBS, *contract.present, *sources[bundle.DECODER_ONNX]]
            outputs = decoder.run(names, feeds)
            past = outputs[1 : 1 + len(contract.present)]
            for source, value in zip(sources[bundle.DECODER_ONNX], outputs[1 + len(contract.present) :], strict=True):
                seen[source].append(np.abs(value[~done]).ravel())
            tokens = outputs[0].argmax(axis=-1).reshape(rows, 1)  # log_probs [rows, vocab]
            done |= tokens[:, 0] == spec.eos_id
            if done.all():
                break
    return {source: np.concatenate(values) for source, values in seen.items()}


def make_static(graph_path: Path, out_path: Path, scales: dict[str, float]) -> int:
    """Write ``graph_path`` with each per-row quantization replaced by ``QuantizeLinear(x, static scale, 128)`` and
    the scale folded into the products; returns how many inputs were rewritten."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(graph_path), load_external_data=False)
    graph = model.graph
    blocks = per_row_blocks(model)
    removed = {id(node) for block in blocks for node in block["remove"]}
    static_of = {block["row_scale"]: f"{block['source']}_static_scale" for block in blocks}
    for block in blocks:
        name = static_of[block["row_scale"]]
        graph.initializer.append(numpy_helper.from_array(np.array(scales[block["source"]], dtype=np.float32), name))
        block["quantize"].input[:] = [block["source"], name, block["quantize"].input[2]]
    producer = {output: node for node in graph.node for output in node.output}
    readers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    folded = set()
    for node in graph.node:  # Mul(MatMulIntegerToFloat(xq, w, 1, w_scale, ...), row scale): the scale goes inside
        if node.op_type != "Mul" or not any(name in static_of for name in node.input):
            continue
        row_scale = next(name for name in node.input if name in static_of)
        product = next(name for name in node.input if name != row_scale)
        fused = producer.get(product)
        if fused is not None and fused.op_type == "MatMulIntegerToFloat" and readers[product] == 1:
            fused.input[2] = static_of[row_scale]
            fused.output[0] = node.output[0]
            folded.add(id(node))
        else:
            node.input[:] = [static_of.get(name, name) for name in node.input]
    kept = [node for node in graph.node if id(node) not in removed and id(node) not in folded]
    del graph.node[:]
    graph.node.extend(kept)
    left = {name for node in graph.node for name in node.input} & set(static_of)
    if left:
        raise RuntimeError(f"{graph_path}: row scales still read after the rewrite: {sorted(left)}")
    onnx.save(model, str(out_path))
    return len(blocks)


def calibration_sentences(count: int) -> list[str]:
    chosen = []
    for pair in read_pairs(CALIBRATION_FILE):
        if 8 <= len(pair.zh) <= 120:
            chosen.append(pair.zh)
        if len(chosen) == count:
            break
    return chosen


def main(argv: list[str] | None = None) -> int:
    from handler.model import bundle

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle_dir", type=Path, help="a bundle with per-row activations (the default)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--calibration-sentences", type=int, default=256)
    parser.add_argument("--percentile", type=float, default=100.0, help="of |x| per tensor (100: the maximum)")
    args = parser.parse_args(argv)
    sentences = calibration_sentences(args.calibration_sentences)
    observed = calibrate(args.bundle_dir, sentences)
    scales = {s: float(max(np.percentile(v, args.percentile), 1e-30) / 127.0) for s, v in observed.items()}
    if args.out.exists():
        shutil.rmtree(args.out)
    shutil.copytree(args.bundle_dir, args.out)
    rewritten = {
        name: make_static(args.bundle_dir / name, args.out / name, scales)
        for name in (bundle.ENCODER_ONNX, bundle.DECODER_ONNX)
    }
    manifest_path = args.out / bundle.MANIFEST
    record = json.loads(manifest_path.read_text(encoding="utf-8"))
    record["quantization"]["activations"] = "static"
    record["quantization"]["static_calibration"] = {
        "sentences": len(sentences),
        "source": f"data/corpus/{CALIBRATION_FILE.name}",
        "percentile": args.percentile,
        "inputs": rewritten,
    }
    for name, entry in record["files"].items():
        data = (args.out / name).read_bytes()
        entry["bytes"], entry["sha256"] = len(data), hashlib.sha256(data).hexdigest()
    manifest_path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"out": str(args.out), "calibration_sentences": len(sentences), "rewritten": rewritten}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
