"""modelscope's CSANMT pipeline and beam search as the runtime tests' oracle, in a subprocess (TensorFlow graph mode).

    python -m tests.csanmt_runtime.oracle tokenize REQUEST.json  # TranslationPipeline.preprocess / postprocess
    python -m tests.csanmt_runtime.oracle search REQUEST.json    # modelscope's beam search, and ours on its steps
    python -m tests.csanmt_runtime.oracle boost-eos REQUEST.json # a copy of a folder whose model ends sentences

``search`` runs, on the same checkpoint and source ids, modelscope's ``CsanmtForTranslation.beam_search`` (the
graph the pipeline runs) and ``handler``'s ``csanmt_beam_search`` over ``TensorflowStepModel``: modelscope's own
``encoding_graph``, ``semantic_encoding_graph`` and one-step ``inference_func`` behind the runtime's step-model
interface. Both searches then read the very same log-probabilities, so they must agree exactly: this tests the
search alone, whatever the converter does.

A random tiny CSANMT never ends a sentence (tied embeddings make it repeat its last token); ``boost-eos`` copies
a folder and adds ``boost x E[0] / |E[0]|^2`` to the decoder's final layer-norm offset, which raises the
end-of-sentence logit by ``boost`` at every step, so that outputs of every length, empty ones included, occur.
``tests/csanmt_runtime/test_search_parity.py`` then runs our search on the converted ONNX sessions as well.

The subprocess plumbing follows ``tests.csanmt.oracle`` (the build side's oracle), whose import stubs it reuses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tests.csanmt.oracle import REPO_ROOT, _EmptyModules, _tf1

MODULE = "tests.csanmt_runtime.oracle"


# --------------------------------------------------------------------------------------------- test side
def _call_module(module: str, command: str, request: dict[str, Any], work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    request_path = work / f"{command}-request.json"
    request_path.write_text(json.dumps(request, ensure_ascii=False), encoding="utf-8")
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "", "PYTHONHASHSEED": "0"}
    environment["MODELSCOPE_CACHE"] = str(work / "modelscope-cache")
    completed = subprocess.run(
        [sys.executable, "-m", module, command, str(request_path)],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"{module} {command} failed ({completed.returncode}):\n{completed.stderr[-6000:]}")


def tokenize(folder: Path, texts: list[str], id_lists: list[list[int]], work: Path) -> dict[str, Any]:
    """``{"preprocess": [input_ids per text], "postprocess": [translation per id list]}`` from modelscope."""
    result = work / "tokenize.json"
    request = {"folder": str(folder), "texts": texts, "id_lists": id_lists, "result": str(result)}
    _call_module(MODULE, "tokenize", request, work)
    return dict(json.loads(result.read_text(encoding="utf-8")))


def boost_eos(folder: Path, out: Path, boost: float, work: Path) -> Path:
    """``out``: ``folder`` with the end-of-sentence logit raised by ``boost`` (see the module docstring)."""
    _call_module(MODULE, "boost-eos", {"folder": str(folder), "out": str(out), "boost": boost}, work)
    return out


def search(folder: Path, batches: list[list[list[int]]], beam_sizes: list[int], work: Path) -> list[dict[str, Any]]:
    """For each beam size and batch of source ids (no EOS, unpadded): modelscope's and our search's beams.

    Each entry: ``beam_size``, ``sources``, ``modelscope`` and ``ours``, each ``{"beams": [rows][beams][ids],
    "scores": [rows][beams]}`` (ids cut at the first 0, as modelscope's postprocess cuts beam 0).
    """
    result = work / "search.json"
    request = {"folder": str(folder), "batches": batches, "beam_sizes": beam_sizes, "result": str(result)}
    _call_module(MODULE, "search", request, work)
    return list(json.loads(result.read_text(encoding="utf-8")))


# ------------------------------------------------------------------------------------------ oracle side
def _pipeline(folder: Path) -> Any:
    sys.meta_path.insert(0, _EmptyModules())
    _tf1()
    from modelscope.models.base import Model
    from modelscope.pipelines.nlp.translation_pipeline import TranslationPipeline

    return TranslationPipeline(model=Model.from_pretrained(str(folder)))


def _tokenize(request: dict[str, Any]) -> None:
    pipeline = _pipeline(Path(request["folder"]))
    preprocessed = [
        np.asarray(pipeline.preprocess(text)["input_ids"]).astype(np.int64).tolist() for text in request["texts"]
    ]
    postprocessed = [
        pipeline.postprocess({"output_seqs": np.asarray([[ids]], dtype=np.int64).reshape(1, 1, len(ids))})[
            "translation"
        ]
        for ids in request["id_lists"]
    ]
    result = {"preprocess": preprocessed, "postprocess": postprocessed}
    Path(request["result"]).write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")


def _cut(ids: list[int]) -> list[int]:
    return ids[: ids.index(0)] if 0 in ids else ids


class TensorflowStepModel:
    """modelscope's encoder and one decoding step (``inference_func``) behind ``handler.model.decoding.StepModel``.

    ``encode`` returns modelscope's encoder output, attention bias and semantic vector; the "past" holds the
    tokens chosen so far (``inference_func`` embeds the whole prefix) and modelscope's per-layer key/value states.
    """

    def __init__(self, model: Any, checkpoint: str) -> None:
        import tensorflow as tf

        from handler.model.bundle import ModelSpec

        tf1 = _tf1()
        params = model.params
        self.hidden = params["hidden_size"]
        self.layers = params["num_decoder_layers"]
        self.spec = ModelSpec(
            vocab_size=params["trg_vocab_size"],
            d_model=self.hidden,
            attention_heads=params["num_heads"],
            head_dim=self.hidden // params["num_heads"],
            encoder_layers=params["num_encoder_layers"],
            decoder_layers=self.layers,
            max_positions=512,
            pad_id=0,
            eos_id=0,
            unk_id=params["src_vocab_size"] - 1,
            decoder_start_id=0,
        )
        self.graph = tf1.Graph()
        with self.graph.as_default():
            self.source = tf1.placeholder(tf.int64, [None, None])
            with tf1.variable_scope("NmtModel"):
                self.encoded, self.bias = model.encoding_graph(self.source, params)
                self.semantic = model.semantic_encoding_graph(self.source, params, name=None)
            self.encoded_in = tf1.placeholder(tf.float32, [None, None, self.hidden])
            self.bias_in = tf1.placeholder(tf.float32, [None, 1, 1, None])
            self.semantic_in = tf1.placeholder(tf.float32, [None, 1, self.hidden])
            self.sequence_in = tf1.placeholder(tf.int32, [None, None])
            self.keys_in = [tf1.placeholder(tf.float32, [None, None, self.hidden]) for _ in range(self.layers)]
            self.values_in = [tf1.placeholder(tf.float32, [None, None, self.hidden]) for _ in range(self.layers)]
            with tf1.variable_scope("NmtModel", reuse=tf1.AUTO_REUSE):
                self.log_probs, _, self.keys_out, self.values_out = model.inference_func(
                    self.encoded_in,
                    self.semantic_in,
                    self.bias_in,
                    self.sequence_in,
                    list(self.keys_in),
                    list(self.values_in),
                    params=params,
                    is_prefix=False,
                )
            self.session = tf1.Session(graph=self.graph)
            tf1.train.Saver().restore(self.session, checkpoint)

    def encode(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> list[np.ndarray]:
        assert not input_ids[:, -1].any(), "the last column of a padded batch is an EOS or padding"
        features = input_ids[:, :-1]  # modelscope's graph appends the EOS column itself
        encoded, bias, semantic = self.session.run([self.encoded, self.bias, self.semantic], {self.source: features})
        return [encoded, bias, semantic]

    def empty_past(self, batch_size: int) -> list[np.ndarray]:
        states = [np.zeros((batch_size, 0, self.hidden), np.float32) for _ in range(2 * self.layers)]
        return [np.zeros((batch_size, 0), np.int32), *states]

    def step(
        self, input_ids: np.ndarray, mask: np.ndarray, past: list[np.ndarray], cross: list[np.ndarray]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        chosen, keys, values = past[0], past[1 : 1 + self.layers], past[1 + self.layers :]
        if keys[0].shape[1]:  # not the first step: input_ids is the token chosen last
            chosen = np.concatenate([chosen, input_ids.astype(np.int32)], axis=1)
        sequence = np.concatenate([chosen, np.zeros((chosen.shape[0], 1), np.int32)], axis=1)  # + the slot
        feeds = {
            self.encoded_in: cross[0],
            self.bias_in: cross[1],
            self.semantic_in: cross[2],
            self.sequence_in: sequence,
        }
        feeds.update(zip(self.keys_in, keys, strict=True))
        feeds.update(zip(self.values_in, values, strict=True))
        log_probs, new_keys, new_values = self.session.run([self.log_probs, self.keys_out, self.values_out], feeds)
        return log_probs, [chosen, *new_keys, *new_values]


class ModelscopeSearch:
    """modelscope's beam-search graph for one beam size (``CsanmtForTranslation.__call__``, as its pipeline)."""

    def __init__(self, folder: Path, params: dict[str, Any], beam_size: int) -> None:
        import tensorflow as tf
        from modelscope.models.nlp.csanmt.translation import CsanmtForTranslation

        tf1 = _tf1()
        self.graph = tf1.Graph()
        with self.graph.as_default():
            self.source = tf1.placeholder(tf.int64, [None, None], name="input_wids")
            self.outputs = CsanmtForTranslation(str(folder), **{**params, "beam_size": beam_size})(self.source)
            self.session = tf1.Session(graph=self.graph)
            tf1.train.Saver().restore(self.session, str(folder / "tf_ckpts" / "ckpt-0"))

    def __call__(self, features: np.ndarray) -> dict[str, Any]:
        found = self.session.run(self.outputs, {self.source: features})
        return {
            "beams": [[_cut(beam.tolist()) for beam in row] for row in np.asarray(found["output_seqs"])],
            "scores": np.asarray(found["output_scores"]).tolist(),
        }


def _search(request: dict[str, Any]) -> None:
    from modelscope.models.base import Model

    from handler.model.batching import pad_batch
    from handler.model.families.csanmt.beam_search import csanmt_beam_search

    sys.meta_path.insert(0, _EmptyModules())
    _tf1()
    folder = Path(request["folder"])
    model = Model.from_pretrained(str(folder))
    params = {key: value for key, value in model.params.items() if key != "model_dir"}
    step_model = TensorflowStepModel(model, str(folder / "tf_ckpts" / "ckpt-0"))
    results = []
    for beam_size in request["beam_sizes"]:
        modelscope_search = ModelscopeSearch(folder, params, beam_size)
        for sources in request["batches"]:
            input_ids, mask = pad_batch([[*row, 0] for row in sources], 0)
            ours = csanmt_beam_search(
                step_model,
                input_ids,
                mask,
                beam_size=beam_size,
                max_length=params["max_decoded_trg_len"],
                alpha=params["lp_rate"],
            )
            results.append(
                {
                    "beam_size": beam_size,
                    "sources": sources,
                    "modelscope": modelscope_search(input_ids[:, :-1]),
                    "ours": {"beams": ours.beams, "scores": ours.scores.tolist()},
                }
            )
    Path(request["result"]).write_text(json.dumps(results), encoding="utf-8")


FINAL_DECODER_OFFSET = "NmtModel/decoder/layer_norm/layer_norm_offset"
EMBEDDING = "NmtModel/Shared_Embedding/Weights"


def _boost_eos(request: dict[str, Any]) -> None:
    import shutil

    import tensorflow as tf

    tf1 = _tf1()
    folder, out = Path(request["folder"]), Path(request["out"])
    shutil.copytree(folder, out, ignore=shutil.ignore_patterns("tf_ckpts"))
    reader = tf.train.load_checkpoint(str(folder / "tf_ckpts" / "ckpt-0"))
    values = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
    eos = values[EMBEDDING][0]
    values[FINAL_DECODER_OFFSET] = values[FINAL_DECODER_OFFSET] + request["boost"] * eos / float(eos @ eos)
    graph = tf1.Graph()
    with graph.as_default():
        variables = {name: tf1.Variable(value, name=name) for name, value in values.items()}
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            tf1.train.Saver(variables).save(session, str(out / "tf_ckpts" / "ckpt-0"), write_meta_graph=False)


COMMANDS = {"tokenize": _tokenize, "search": _search, "boost-eos": _boost_eos}


def main(argv: list[str]) -> int:
    command, request_path = argv
    COMMANDS[command](json.loads(Path(request_path).read_text(encoding="utf-8")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
