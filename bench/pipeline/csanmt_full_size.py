"""Random CSANMT checkpoints in ModelScope's folder layout, built with modelscope's own model code.

    python -m bench.pipeline.csanmt_full_size make DIR [--seed N] [--optimizer-slots adam|none]

``make`` writes a random checkpoint with the real ``damo/nlp_csanmt_translation_zh2en`` shapes (hidden 1024,
filter 4096, 16 heads, 24 encoder / 6 decoder layers, 4 semantic layers, vocabularies of 50,000, relative
distance 16) as the published folder holds it: ``configuration.json``, ``tf_ckpts/ckpt-0.*`` (TF1 ``Saver``
format, the inference variables under modelscope's names plus Adam slots, ``beta1_power``/``beta2_power`` and
``global_step`` like a training checkpoint), ``bpe.zh``, ``src_vocab.txt`` and ``trg_vocab.txt``. It needs
tensorflow-cpu and modelscope (the test environment); measured on 2 cores: 2.5 minutes, 8.2 GB peak RSS,
6.0 GB of ``ckpt-0.data`` with the Adam slots (the published one, 7.88 GB, also holds a third copy). The
weights are random: only sizes, memory and speed of what is built from it mean anything. Convert it with
``make model MODEL=DIR NAME=...`` (the folder is recognised as CSANMT).

``write_checkpoint`` is the one writer: the tests build their tiny models with it too. Every variable is
random (layer norms and biases included), so that a converter cannot pass by reading default values.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SEMANTIC_SCOPES = ("Shared_Semantic_Embedding", "mini_xlm_encoder")  # not updated in training: no Adam slots


@dataclass(frozen=True)
class CsanmtShape:
    """The ``model`` section of a CSANMT ``configuration.json``; the defaults are the real zh2en model's."""

    hidden_size: int = 1024
    filter_size: int = 4096
    num_heads: int = 16
    num_encoder_layers: int = 24
    num_decoder_layers: int = 6
    num_semantic_encoder_layers: int = 4
    src_vocab_size: int = 50000
    trg_vocab_size: int = 50000
    max_relative_dis: int = 16
    beam_size: int = 4
    lp_rate: float = 0.6
    max_decoded_trg_len: int = 100

    def model_config(self, seed: int = 1234) -> dict[str, Any]:
        return {
            "type": "csanmt-translation",
            **asdict(self),
            "attention_dropout": 0.0,
            "residual_dropout": 0.0,
            "relu_dropout": 0.0,
            "layer_preproc": "layer_norm",
            "layer_postproc": "none",
            "shared_embedding_and_softmax_weights": True,
            "shared_source_target_embedding": True,
            "initializer_scale": 0.1,
            "position_info_type": "absolute",
            "seed": seed,
        }


@dataclass(frozen=True)
class RandomScales:
    """Standard deviations of the random weights (matrices are fan-in scaled: activations stay O(1))."""

    embedding: float = 0.5
    matrix_gain: float = 1.0
    bias: float = 0.1
    layer_norm_scale: float = 0.2  # around 1
    layer_norm_offset: float = 0.1


def configuration(shape: CsanmtShape, seed: int = 1234) -> dict[str, Any]:
    """``configuration.json`` as the ModelScope folder has it (the fields modelscope's pipeline reads)."""
    return {
        "framework": "tensorflow",
        "task": "translation",
        "pipeline": {"type": "csanmt-translation"},
        "model": shape.model_config(seed),
        "dataset": {
            "train_src": "train.zh",
            "train_trg": "train.en",
            "src_vocab": {"file": "src_vocab.txt"},
            "trg_vocab": {"file": "trg_vocab.txt"},
        },
        "preprocessor": {"src_lang": "zh", "tgt_lang": "en", "src_bpe": {"file": "bpe.zh"}},
    }


def _random_value(name: str, shape: list[int], rng: Any, scales: RandomScales) -> Any:
    import numpy as np

    if name.endswith("layer_norm_scale"):
        value = 1.0 + scales.layer_norm_scale * rng.standard_normal(shape, dtype=np.float32)
    elif name.endswith("layer_norm_offset"):
        value = scales.layer_norm_offset * rng.standard_normal(shape, dtype=np.float32)
    elif "Embedding" in name:
        value = scales.embedding * rng.standard_normal(shape, dtype=np.float32)
    elif name.endswith("bias") or "rpr_" in name:
        value = scales.bias * rng.standard_normal(shape, dtype=np.float32)
    else:
        value = scales.matrix_gain / np.sqrt(shape[0]) * rng.standard_normal(shape, dtype=np.float32)
    return value.astype(np.float32)


def write_checkpoint(
    folder: Path,
    shape: CsanmtShape,
    src_tokens: Sequence[str],
    trg_tokens: Sequence[str],
    bpe_codes: str,
    *,
    seed: int = 1234,
    scales: RandomScales = RandomScales(),
    optimizer_slots: bool = True,
    extra_variables: dict[str, Any] | None = None,
    progress: Any = None,
) -> list[tuple[str, list[int]]]:
    """Write a random CSANMT folder with modelscope's model code; returns the inference variables (name, shape).

    ``optimizer_slots`` adds ``<name>/Adam`` and ``<name>/Adam_1`` for every trained variable, ``beta1_power``,
    ``beta2_power`` and ``global_step``; ``extra_variables`` adds more (name -> array), e.g. ones a converter
    must ignore. Runs TensorFlow in graph mode in this process (the caller isolates it if needed).
    """
    if len(src_tokens) != shape.src_vocab_size or len(trg_tokens) != shape.trg_vocab_size:
        raise ValueError(
            f"vocabularies of {len(src_tokens)}/{len(trg_tokens)} tokens for sizes "
            f"{shape.src_vocab_size}/{shape.trg_vocab_size}"
        )
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    from modelscope.models.nlp.csanmt.translation import CsanmtForTranslation

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    say = progress or (lambda message: None)
    folder = Path(folder)
    (folder / "tf_ckpts").mkdir(parents=True, exist_ok=True)
    (folder / "configuration.json").write_text(json.dumps(configuration(shape, seed), indent=2), encoding="utf-8")
    (folder / "src_vocab.txt").write_text("\n".join(src_tokens) + "\n", encoding="utf-8")
    (folder / "trg_vocab.txt").write_text("\n".join(trg_tokens) + "\n", encoding="utf-8")
    (folder / "bpe.zh").write_text(bpe_codes, encoding="utf-8")

    graph = tf1.Graph()
    with graph.as_default():
        tf1.set_random_seed(seed)
        model = CsanmtForTranslation(str(folder), **shape.model_config(seed))
        model(tf1.placeholder(tf.int64, [None, None], name="input_wids"))  # the pipeline's inference graph
        inference = list(tf1.global_variables())
        extra: list[Any] = []
        if optimizer_slots:
            for variable in inference:
                if any(scope in variable.op.name for scope in SEMANTIC_SCOPES):
                    continue
                for suffix in ("Adam", "Adam_1"):
                    extra.append(
                        tf1.get_variable(
                            f"{variable.op.name}/{suffix}", variable.shape, initializer=tf1.zeros_initializer()
                        )
                    )
            extra.append(tf1.get_variable("beta1_power", [], initializer=tf1.constant_initializer(0.9)))
            extra.append(tf1.get_variable("beta2_power", [], initializer=tf1.constant_initializer(0.98)))
            extra.append(tf1.get_variable("global_step", [], tf.int64, initializer=tf1.constant_initializer(100000)))
        for name, value in (extra_variables or {}).items():
            array = np.asarray(value)
            extra.append(
                tf1.get_variable(name, array.shape, tf.as_dtype(array.dtype), initializer=tf1.zeros_initializer())
            )
        rng = np.random.default_rng(seed)
        with tf1.Session(graph=graph) as session:
            session.run(tf1.variables_initializer(extra))
            for variable in extra:
                if variable.op.name in (extra_variables or {}):
                    variable.load(np.asarray(extra_variables[variable.op.name]), session)  # type: ignore[index]
            started = time.monotonic()
            for index, variable in enumerate(inference):
                shape_list = variable.shape.as_list()
                variable.load(_random_value(variable.op.name, shape_list, rng, scales), session)
                if index % 50 == 0:
                    say(f"  random weights: {index}/{len(inference)} variables ({time.monotonic() - started:.0f} s)")
            say(f"saving {len(inference)} inference + {len(extra)} extra variables")
            saver = tf1.train.Saver(inference + extra)
            saver.save(session, str(folder / "tf_ckpts" / "ckpt-0"), write_meta_graph=False)
        names = [(variable.op.name, variable.shape.as_list()) for variable in inference]
    (folder / "tf_ckpts" / "checkpoint").write_text(
        'model_checkpoint_path: "ckpt-0"\nall_model_checkpoint_paths: "ckpt-0"\n', encoding="utf-8"
    )
    return names


# ------------------------------------------------------------------------------------- full-size vocabulary
def full_size_vocabularies(shape: CsanmtShape) -> tuple[list[str], list[str], str]:
    """Source/target vocabularies of the real sizes and a small ``bpe.zh``: id 0 ``</s>``, the last id ``<unk>``.

    The source side holds CJK characters alone and with ``@@`` (so jieba + BPE of any Chinese text finds
    most pieces), the target side filler pieces; the BPE codes merge a few frequent character pairs.
    """
    chars = [chr(code) for code in range(0x4E00, 0x9FA6)]  # 20,902 CJK unified ideographs
    ascii_pieces = [chr(code) for code in range(0x21, 0x7F)] + ["，", "。", "！", "？", "：", "“", "”"]
    src: list[str] = ["</s>"]
    for piece in ascii_pieces + chars:
        src += [piece, f"{piece}@@"]
    src = list(dict.fromkeys(src))[: shape.src_vocab_size - 1]
    src += [f"<src_filler_{i}>" for i in range(shape.src_vocab_size - 1 - len(src))] + ["<unk>"]
    trg = ["</s>"] + [f"w{i}" for i in range(shape.trg_vocab_size - 2)] + ["<unk>"]
    pairs = ["我 们", "你 好", "中 国", "今 天", "天 气", "翻 译", "机 器", "人 民", "世 界", "学 习"]
    codes = "#version: 0.2\n" + "".join(f"{pair}</w>\n" for pair in pairs)
    return src, trg, codes


def make_full_size(folder: Path, seed: int, optimizer_slots: bool) -> dict[str, Any]:
    import resource

    shape = CsanmtShape()
    src, trg, codes = full_size_vocabularies(shape)
    started = time.monotonic()
    names = write_checkpoint(
        folder,
        shape,
        src,
        trg,
        codes,
        seed=seed,
        optimizer_slots=optimizer_slots,
        progress=lambda message: print(message, flush=True),
    )
    import numpy as np

    parameters = sum(int(np.prod(dims)) for _, dims in names)
    data_bytes = sum(path.stat().st_size for path in (folder / "tf_ckpts").glob("ckpt-0.data-*"))
    return {
        "folder": str(folder),
        "inference_variables": len(names),
        "parameters": parameters,
        "ckpt_data_bytes": data_bytes,
        "seconds": round(time.monotonic() - started, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.pipeline.csanmt_full_size", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("make", help="write a random checkpoint of the real model's shapes")
    make.add_argument("folder", type=Path)
    make.add_argument("--seed", type=int, default=1234)
    make.add_argument("--optimizer-slots", choices=("adam", "none"), default="adam")
    make.add_argument("--force", action="store_true", help="write into an existing folder")
    args = parser.parse_args(argv)
    if args.folder.exists() and any(args.folder.iterdir()) and not args.force:
        print(f"error: {args.folder} exists and is not empty; pass --force to overwrite", file=sys.stderr)
        return 1
    record = make_full_size(args.folder, args.seed, args.optimizer_slots == "adam")
    print(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
