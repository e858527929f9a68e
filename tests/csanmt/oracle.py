"""modelscope's own CSANMT code as the tests' oracle, run in a subprocess (TensorFlow graph mode, slow imports).

    python -m tests.csanmt.oracle make REQUEST.json     # a tiny random CSANMT folder (modelscope's model code)
    python -m tests.csanmt.oracle reference REQUEST.json  # encoder states, semantic vector, teacher-forced log-probs
    python -m tests.csanmt.oracle pipeline REQUEST.json   # modelscope's TranslationPipeline: ids, beams, scores

Each command reads a JSON request and writes ``RESULT`` (JSON, or ``.npz`` for arrays) named in it. The
functions ``make_tiny``, ``reference`` and ``run_pipeline`` call this module in a fresh interpreter, so
TensorFlow never enters the test process.

``modelscope.pipelines`` imports ``modelscope.msdatasets`` (Hugging Face ``datasets``, pandas, pyarrow) for
dataset loading the translation pipeline never uses; ``datasets`` pins an older ``fsspec`` than the test
environment's lock, so this process replaces ``modelscope.msdatasets`` with an empty stand-in module before the
import (``bench.pipeline.modelscope_offline``, shared with the benchmark that runs modelscope's pipeline). Nothing
of modelscope's translation code is replaced.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# the stand-in for modelscope.msdatasets (tests.csanmt_runtime.oracle imports it from here too)
from bench.pipeline.modelscope_offline import MsdatasetsStandIn as _EmptyModules

REPO_ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------------- test side
def _call(command: str, request: dict[str, Any], work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    request_path = work / f"{command}-request.json"
    request_path.write_text(json.dumps(request, ensure_ascii=False), encoding="utf-8")
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "", "PYTHONHASHSEED": "0"}
    environment["MODELSCOPE_CACHE"] = str(work / "modelscope-cache")
    completed = subprocess.run(
        [sys.executable, "-m", "tests.csanmt.oracle", command, str(request_path)],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"oracle {command} failed ({completed.returncode}):\n{completed.stderr[-6000:]}")


def make_tiny(folder: Path, request: dict[str, Any]) -> list[tuple[str, list[int]]]:
    """Write a tiny random CSANMT folder (see ``_make``); returns its inference variables (name, shape)."""
    result = folder.parent / f"{folder.name}-variables.json"
    _call("make", {**request, "folder": str(folder), "result": str(result)}, folder.parent / f"{folder.name}-work")
    return [(name, shape) for name, shape in json.loads(result.read_text(encoding="utf-8"))]


def reference(folder: Path, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], work: Path) -> Any:
    """modelscope's graph functions on the folder's checkpoint, for source ids (no EOS; padded with 0 here).

    Returns an ``np.load`` of: ``features`` [B, S] (the padded source ids), ``encoder_states`` [B, S + 1, H],
    ``semantic_vector`` [B, 1, H], ``targets`` [B, T] (padded with 0) and ``log_probs`` [B, T, V]: position t
    predicts ``targets[:, t]`` after reading ``targets[:, :t]``, via ``inference_func(..., is_prefix=True)``.
    """
    import numpy as np

    result = work / "reference.npz"
    _call(
        "reference",
        {
            "folder": str(folder),
            "sources": [list(row) for row in sources],
            "targets": [list(row) for row in targets],
            "result": str(result),
        },
        work,
    )
    return np.load(result)


def run_pipeline(folder: Path, texts: Sequence[str], work: Path, beam_size: int | None = None) -> list[dict[str, Any]]:
    """modelscope's ``TranslationPipeline`` on each text (``<SENT_SPLIT>`` separates a batch's sentences).

    Per text: ``input_ids`` (``preprocess``: [B, S], no EOS, padded with 0), ``output_seqs`` [B, beam, T] and
    ``output_scores`` [B, beam] (``forward``), ``translation`` (``postprocess``). ``beam_size`` overrides the
    configuration's (on a copy of the folder).
    """
    result = work / "pipeline.json"
    _call(
        "pipeline",
        {"folder": str(folder), "texts": list(texts), "beam_size": beam_size, "result": str(result)},
        work,
    )
    return list(json.loads(result.read_text(encoding="utf-8")))


# ------------------------------------------------------------------------------------------ oracle side
def _tf1() -> Any:
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    return tf1


def _make(request: dict[str, Any]) -> None:
    from bench.pipeline.csanmt_full_size import CsanmtShape, RandomScales, write_checkpoint

    names = write_checkpoint(
        Path(request["folder"]),
        CsanmtShape(**request["shape"]),
        request["src_tokens"],
        request["trg_tokens"],
        request["bpe_codes"],
        seed=request["seed"],
        scales=RandomScales(**request.get("scales", {})),
        optimizer_slots=True,
        extra_variables=request.get("extra_variables"),
    )
    Path(request["result"]).write_text(json.dumps(names), encoding="utf-8")


def _padded(rows: list[list[int]]) -> Any:
    import numpy as np

    width = max(1, max(len(row) for row in rows))
    array = np.zeros((len(rows), width), dtype=np.int64)
    for index, row in enumerate(rows):
        array[index, : len(row)] = row
    return array


def _reference(request: dict[str, Any]) -> None:
    import numpy as np
    import tensorflow as tf
    from modelscope.models.base import Model

    tf1 = _tf1()
    folder = Path(request["folder"])
    model = Model.from_pretrained(str(folder))
    params = model.params
    features, targets = _padded(request["sources"]), _padded(request["targets"])
    graph = tf1.Graph()
    with graph.as_default():
        source = tf1.placeholder(tf.int64, [None, None])
        target = tf1.placeholder(tf.int32, [None, None])
        with tf1.variable_scope("NmtModel"):
            encoded, encoded_bias = model.encoding_graph(source, params)
            semantic = model.semantic_encoding_graph(source, params, name=None)
            hidden = params["hidden_size"]
            batch = tf.shape(source)[0]
            empty = [tf.fill([batch, 0, hidden], 0.0) for _ in range(params["num_decoder_layers"])]
            empty_values = [tf.fill([batch, 0, hidden], 0.0) for _ in range(params["num_decoder_layers"])]
            log_probs, _, _, _ = model.inference_func(
                encoded, semantic, encoded_bias, target, empty, empty_values, params=params, is_prefix=True
            )
        with tf1.Session(graph=graph) as session:
            tf1.train.Saver().restore(session, str(folder / "tf_ckpts" / "ckpt-0"))
            states, vector, scores = session.run(
                [encoded, semantic, log_probs], {source: features, target: targets.astype(np.int32)}
            )
    np.savez(
        request["result"],
        features=features,
        encoder_states=states,
        semantic_vector=vector,
        targets=targets,
        log_probs=scores,
    )


def _pipeline(request: dict[str, Any]) -> None:
    import shutil
    import tempfile

    import numpy as np

    sys.meta_path.insert(0, _EmptyModules())
    _tf1()
    from modelscope.models.base import Model
    from modelscope.pipelines.nlp.translation_pipeline import TranslationPipeline

    folder = Path(request["folder"])
    if request.get("beam_size"):
        copy = Path(tempfile.mkdtemp(prefix="csanmt-beam-"))
        for entry in folder.iterdir():
            (copy / entry.name).symlink_to(entry.resolve())
        (copy / "configuration.json").unlink()
        config = json.loads((folder / "configuration.json").read_text(encoding="utf-8"))
        config["model"]["beam_size"] = int(request["beam_size"])
        (copy / "configuration.json").write_text(json.dumps(config), encoding="utf-8")
        folder = copy
    pipeline = TranslationPipeline(model=Model.from_pretrained(str(folder)))
    results = []
    for text in request["texts"]:
        prepared = pipeline.preprocess(text)
        outputs = pipeline.forward(prepared)
        results.append(
            {
                "text": text,
                "input_ids": np.asarray(prepared["input_ids"]).tolist(),
                "output_seqs": np.asarray(outputs["output_seqs"]).tolist(),
                "output_scores": np.asarray(outputs["output_scores"]).tolist(),
                "translation": pipeline.postprocess(outputs)["translation"],
            }
        )
    Path(request["result"]).write_text(json.dumps(results, ensure_ascii=False), encoding="utf-8")
    if request.get("beam_size"):
        shutil.rmtree(folder)


COMMANDS = {"make": _make, "reference": _reference, "pipeline": _pipeline}


def main(argv: list[str]) -> int:
    command, request_path = argv
    COMMANDS[command](json.loads(Path(request_path).read_text(encoding="utf-8")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
