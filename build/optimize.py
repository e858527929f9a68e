"""ONNX Runtime's graph optimizations, done once at build time and saved in the bundle (the graphs that ship).

Creating a session optimizes its graph: constant folding, the fusions of the quantized ``MatMul`` chains, layer
norm and GELU fusions, and so on. ONNX Runtime does that at every load: measured on a full-size CSANMT, its
encoder's session opened in 1.23-1.25 s with it and 0.88-0.97 s without (docs/decisions.md). ``optimize_graph``
runs those optimizations once, here, at ONNX Runtime's *extended* level (every fusion the CPU execution provider
has; the *all* level adds only the NCHWc layout rewrites of convolutions, which these graphs have none of, and
which would tie the file to this CPU), and writes the result over the graph. The bundle's manifest records it
(``graph_optimization``), and the runtime then opens those graphs with load-time optimization off
(``handler.model.sessions``): the work is not done twice.

The build's INT8 verification runs after this step, on exactly these files (the runtime opens them without
optimizing them again, which computes the same, bit for bit: ``tests/csanmt_runtime/test_build_time_preparation.py``).

Graphs that read the shared embedding file (``bundle.SHARED_EMBEDDING``, a tied embedding stored once for both
graphs) are optimized with that table handed to the session as the runtime hands it (``sessions.share_embedding``):
ONNX Runtime then keeps it as a reference to the same file in the saved graph, so it is still stored once.
"""

from __future__ import annotations

import os
from pathlib import Path

from build.manifest_file import rewrite_manifest
from handler.model.bundle import GRAPHS_OPTIMIZED_OFFLINE, MODEL_FILES, ModelSpec


def optimize_graph(path: Path, spec: ModelSpec) -> None:
    """Replace the ONNX graph at ``path`` by ONNX Runtime's extended-level optimization of it (same I/O names)."""
    from handler.model.sessions import ort, share_embedding

    optimized = path.with_name(f".{path.name}.optimized")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(optimized)
    options.log_severity_level = 3
    table = share_embedding(path.parent, spec, options)  # kept alive while the session is made
    try:
        ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        del table
        os.replace(optimized, path)
    finally:
        optimized.unlink(missing_ok=True)


def optimize_bundle_graphs(folder: Path, spec: ModelSpec) -> str:
    """Optimize the bundle's two graphs in ``folder`` in place; returns the manifest's ``graph_optimization``."""
    for name in MODEL_FILES:
        optimize_graph(folder / name, spec)
    return GRAPHS_OPTIMIZED_OFFLINE


def optimize_existing_bundle(bundle_dir: Path) -> str:
    """Optimize the graphs of a bundle built before this step, in place (``python -m build.optimize BUNDLE_DIR``).

    The optimization changes no result (``tests/csanmt_runtime/test_build_time_preparation.py`` checks it bit for
    bit), so the verification figures measured at export stay true. The graphs are optimized beside the originals
    and replaced one by one, then the manifest (hashes, ``graph_optimization``) is replaced last: an interrupted run
    leaves a bundle that fails its hash check with the file named, never one that loads wrongly.
    """
    import json
    from dataclasses import asdict

    from handler.model import bundle

    manifest_path = bundle_dir / bundle.MANIFEST
    record = json.loads(manifest_path.read_text(encoding="utf-8"))
    if record.get("graph_optimization") == GRAPHS_OPTIMIZED_OFFLINE:
        return GRAPHS_OPTIMIZED_OFFLINE
    spec = bundle.Manifest.from_dict(record).model
    for name in MODEL_FILES:
        optimize_graph(bundle_dir / name, spec)
        record["files"][name] = asdict(bundle.file_entry(bundle_dir / name))
    record["graph_optimization"] = GRAPHS_OPTIMIZED_OFFLINE
    rewrite_manifest(bundle_dir, record)
    return GRAPHS_OPTIMIZED_OFFLINE


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m build.optimize", description="optimize the graphs of a bundle built without this step"
    )
    parser.add_argument("bundle_dir", type=Path, help="a bundle folder (model_artifacts/<name>)")
    args = parser.parse_args(argv)
    print(f"{args.bundle_dir}: graph_optimization {optimize_existing_bundle(args.bundle_dir)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
