"""Session fixtures for CSANMT: a tiny random model built with modelscope's own code, and what we make of it.

* ``csanmt_tiny_dir``: a ModelScope-layout folder (configuration.json, tf_ckpts/ckpt-0 with Adam slots and
  extra variables the converter must ignore, bpe.zh learned here with subword-nmt, vocabularies) written by
  modelscope's model code in a subprocess (``tests.csanmt.oracle``), every weight random;
* ``csanmt_checkpoint`` / ``csanmt_fp32_graphs``: the converter's PyTorch network and its FP32 graphs;
* ``csanmt_bundle_dir``: the verified INT8 bundle ``build.export`` writes (for runtime and end-to-end tests);
  ``csanmt_fp32_bundle_dir``: the same bundle with the FP32 graphs (for comparing searches with modelscope's);
* ``csanmt_pipeline``: a function running modelscope's ``TranslationPipeline`` on a folder (ids, scores).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.csanmt import oracle

SEED = 20261201
# Chinese sentences whose jieba words and BPE pieces make the source vocabulary: everyday words, digits,
# Latin words, punctuation; sentences tested elsewhere add words that are not in it
BPE_SENTENCES = (
    "我们喜欢机器翻译。",
    "你好，世界！",
    "今天天气很好，我们去公园散步吧。",
    "中国人学习翻译模型。",
    "我有一只小猫和两只狗。",
    "他在 2024 年去了北京。",
    "Python 是一种编程语言。",
    "这个模型很小，但是翻译很快。",
    "请把窗户关上。",
    "我们明天早上八点见。",
)
TARGET_WORDS = (
    "we like machine transl@@ ation . hello , world ! today the weather is good let us go to park for a walk "
    "Chinese people learn model I have one small cat and two dogs he went Beijing in 20@@ 24 Python "
    "programming language this but fast please close window see you tomorrow morning at eight o'@@ clock"
).split()
SHAPE = {
    "hidden_size": 32,
    "filter_size": 64,
    "num_heads": 4,
    "num_encoder_layers": 3,
    "num_decoder_layers": 2,
    "num_semantic_encoder_layers": 2,
    "max_relative_dis": 4,  # short, so that sentences longer than 4 pieces reach the clipping
    "beam_size": 4,
    "lp_rate": 0.6,
    "max_decoded_trg_len": 20,
}
# variables a converter must ignore besides the Adam slots write_checkpoint adds
EXTRA_VARIABLES = {
    "NmtModel/encoder/layer_0/ffn_layer/input_layer/linear/matrix/grad_acc": [[0.5] * 64] * 32,
    "training/learning_rate": 0.001,
}


def learn_bpe_codes(sentences: tuple[str, ...], merges: int = 40) -> str:
    """subword-nmt's ``learn_bpe`` on the jieba words of ``sentences`` (as modelscope's bpe.zh was made)."""
    import io

    import jieba
    from subword_nmt import learn_bpe

    jieba.setLogLevel(60)
    words = io.StringIO("\n".join(" ".join(jieba.cut(sentence)) for sentence in sentences) + "\n")
    codes = io.StringIO()
    learn_bpe.learn_bpe(words, codes, merges, min_frequency=1)
    return codes.getvalue()


def source_pieces(sentences: tuple[str, ...], codes: str) -> list[str]:
    import io

    import jieba
    from subword_nmt import apply_bpe

    bpe = apply_bpe.BPE(io.StringIO(codes))
    pieces: dict[str, None] = {}
    for sentence in sentences:
        for piece in bpe.process_line(" ".join(jieba.cut(sentence))).split():
            pieces[piece] = None
    return list(pieces)


def tiny_request() -> dict[str, Any]:
    codes = learn_bpe_codes(BPE_SENTENCES)
    pieces = source_pieces(BPE_SENTENCES, codes)
    target = list(dict.fromkeys(TARGET_WORDS))
    size = max(len(pieces), len(target)) + 2  # + </s> and <unk>
    src = ["</s>", *pieces, *[f"<src_{i}>" for i in range(size - 2 - len(pieces))], "<unk>"]
    trg = ["</s>", *target, *[f"<trg_{i}>" for i in range(size - 2 - len(target))], "<unk>"]
    return {
        "shape": {**SHAPE, "src_vocab_size": size, "trg_vocab_size": size},
        "src_tokens": src,
        "trg_tokens": trg,
        "bpe_codes": codes,
        "seed": SEED,
        "extra_variables": EXTRA_VARIABLES,
    }


@pytest.fixture(scope="session")
def csanmt_tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random CSANMT folder in ModelScope's layout, written by modelscope's own model code."""
    folder = tmp_path_factory.mktemp("csanmt") / "tiny-csanmt"
    oracle.make_tiny(folder, tiny_request())
    return folder


@pytest.fixture(scope="session")
def csanmt_checkpoint(csanmt_tiny_dir: Path) -> Any:
    """The converter's view of ``csanmt_tiny_dir``: config, PyTorch network, pipeline tokenizer, spec."""
    import torch

    from build.families.csanmt import load_checkpoint

    torch.set_num_threads(1)
    return load_checkpoint(csanmt_tiny_dir)


@pytest.fixture(scope="session")
def csanmt_fp32_graphs(csanmt_checkpoint: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """FP32 encoder.onnx / decoder.onnx (with external data) exported from the tiny network."""
    return csanmt_checkpoint.export_graphs(tmp_path_factory.mktemp("csanmt-fp32"))  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def csanmt_bundle_dir(csanmt_tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The verified INT8 bundle ``build.export.export_bundle`` writes for the tiny CSANMT (default thresholds)."""
    from build.export import export_bundle

    out_dir = tmp_path_factory.mktemp("csanmt-bundle") / "tiny-csanmt"
    export_bundle(csanmt_tiny_dir, out_dir, name="tiny-csanmt")
    return out_dir


@pytest.fixture(scope="session")
def csanmt_fp32_bundle_dir(
    csanmt_bundle_dir: Path, csanmt_fp32_graphs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """``csanmt_bundle_dir`` with its graphs replaced by the FP32 ones (single files), hashes updated."""
    import onnx

    from handler.model import bundle

    out_dir = tmp_path_factory.mktemp("csanmt-fp32-bundle") / "tiny-csanmt-fp32"
    shutil.copytree(csanmt_bundle_dir, out_dir)
    for graph in csanmt_fp32_graphs:
        onnx.save_model(onnx.load(str(graph)), str(out_dir / graph.name))  # weights inline: one file per graph
    manifest_path = out_dir / bundle.MANIFEST
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for name in (bundle.ENCODER_ONNX, bundle.DECODER_ONNX):
        entry = bundle.file_entry(out_dir / name)
        manifest["files"][name] = {"sha256": entry.sha256, "bytes": entry.bytes}
    manifest["name"] = "tiny-csanmt-fp32"
    manifest["quantization"] = {"method": "none (FP32 graphs, for tests)"}
    manifest["graph_optimization"] = ""  # the FP32 graphs as exported: optimized at load
    manifest_path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out_dir


@pytest.fixture(scope="session")
def csanmt_pipeline(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., list[dict[str, Any]]]:
    """``run(folder, texts, beam_size=None)``: modelscope's TranslationPipeline per text (see ``oracle.run_pipeline``).

    Each call starts one subprocess (~10 s): pass every text of a test in one call.
    """

    def run(folder: Path, texts: list[str], beam_size: int | None = None) -> list[dict[str, Any]]:
        return oracle.run_pipeline(folder, texts, tmp_path_factory.mktemp("csanmt-pipeline"), beam_size)

    return run
