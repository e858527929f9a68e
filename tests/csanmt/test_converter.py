"""The CSANMT converter: which folders it takes, which variables it reads, and the errors it gives.

GIVEN the tiny ModelScope folder (inference variables + Adam slots + other extra variables)
WHEN ``build.export`` is pointed at it, or at a copy whose checkpoint lacks, misshapes or adds a variable
THEN the family is recognised, only the inference variables are read, and every defect is a typed error that
names the variable; the bundle declares the family, tokenizer and decoding protocol and holds the tied
embedding once in the decoder.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from build import families
from build.errors import (
    CheckpointError,
    ExportError,
    MisshapenVariableError,
    MissingVariableError,
    UnexpectedVariableError,
    UnsupportedModelError,
)
from build.families.csanmt import checkpoint as checkpoint_files
from build.families.csanmt import load_checkpoint

pytestmark = pytest.mark.slow

KV = "NmtModel/decoder/layer_1/encdec_attention/kv_transform/matrix"


def _copy_with(
    source: Path, target: Path, change: Callable[[dict[str, np.ndarray]], object], config: dict[str, Any] | None = None
) -> Path:
    """A copy of the CSANMT folder whose checkpoint holds ``change``'d variables (written with TF's SaveV2)."""
    import tensorflow as tf

    (target / "tf_ckpts").mkdir(parents=True)
    for name in checkpoint_files.FOLDER_FILES:
        shutil.copyfile(source / name, target / name)
    if config is not None:
        (target / checkpoint_files.CONFIGURATION).write_text(json.dumps(config), encoding="utf-8")
    reader = tf.train.load_checkpoint(str(source / checkpoint_files.CHECKPOINT_PREFIX))
    tensors = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
    change(tensors)
    names = sorted(tensors)
    tf.raw_ops.SaveV2(
        prefix=str(target / checkpoint_files.CHECKPOINT_PREFIX),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tensors[name] for name in names],
    )
    return target


def test_the_folder_layout_selects_the_family(csanmt_tiny_dir: Path, tiny_marian_dir: Path, tmp_path: Path) -> None:
    assert families.resolve(csanmt_tiny_dir).name == "csanmt"
    assert families.resolve(tiny_marian_dir).name == "marian"
    assert families.resolve("Helsinki-NLP/opus-mt-zh-en").name == "marian"
    assert families.resolve(tiny_marian_dir, "csanmt").name == "csanmt"  # FAMILY= overrides
    with pytest.raises(ExportError, match=r"not a checkpoint folder of a supported family \(marian, csanmt\)"):
        families.resolve(tmp_path)
    with pytest.raises(ExportError, match="unknown model family 'fairseq'; supported: marian, csanmt"):
        families.resolve(csanmt_tiny_dir, "fairseq")
    assert families.resolve("damo/nlp_csanmt_translation_zh2en").name == "csanmt"  # a ModelScope id: downloaded
    hint = "csanmt-zh2en is not a local folder; CSANMT models come from ModelScope.*`modelscope download csanmt-zh2en"
    with pytest.raises(ExportError, match=hint):
        families.resolve("csanmt-zh2en")


def test_only_the_inference_variables_are_read(csanmt_tiny_dir: Path, csanmt_checkpoint: Any) -> None:
    import tensorflow as tf

    prefix = csanmt_tiny_dir / checkpoint_files.CHECKPOINT_PREFIX
    stored = tf.train.load_checkpoint(str(prefix)).get_variable_to_shape_map()
    expected = checkpoint_files.expected_variables(csanmt_checkpoint.config)
    extra = sorted(set(stored) - set(expected))
    assert any(name.endswith("/Adam_1") for name in extra) and "global_step" in extra
    assert "training/learning_rate" in extra and any(name.endswith("/grad_acc") for name in extra)
    weights = checkpoint_files.read_weights(csanmt_tiny_dir, csanmt_checkpoint.config)
    assert sorted(weights) == sorted(expected)
    assert all(weights[name].dtype == np.float32 and weights[name].shape == expected[name] for name in weights)


def test_a_missing_variable_is_named(csanmt_tiny_dir: Path, tmp_path: Path) -> None:
    broken = _copy_with(csanmt_tiny_dir, tmp_path / "missing", lambda t: t.pop("NmtModel/encoder_input_bias"))
    with pytest.raises(MissingVariableError, match="lacks the inference variable NmtModel/encoder_input_bias,"):
        load_checkpoint(broken)


def test_a_misshapen_variable_is_named_with_both_shapes(csanmt_tiny_dir: Path, tmp_path: Path) -> None:
    def misshape(tensors: dict[str, np.ndarray]) -> None:
        tensors[KV] = tensors[KV][:, :-2]

    broken = _copy_with(csanmt_tiny_dir, tmp_path / "misshapen", misshape)
    with pytest.raises(MisshapenVariableError, match=rf"variable {KV} has shape \[32, 62\]; .* implies \[32, 64\]"):
        load_checkpoint(broken)


def test_an_unaccounted_inference_variable_is_named(csanmt_tiny_dir: Path, tmp_path: Path) -> None:
    extra = "NmtModel/decoder/layer_2/layer_norm/layer_norm_scale"  # a third decoder layer the config lacks

    def add(tensors: dict[str, np.ndarray]) -> None:
        tensors[extra] = np.ones(32, dtype=np.float32)

    broken = _copy_with(csanmt_tiny_dir, tmp_path / "unexpected", add)
    with pytest.raises(UnexpectedVariableError, match=f"holds the inference variable {extra}, which the configuration"):
        load_checkpoint(broken)


def test_a_variant_the_exporter_does_not_implement_is_refused(csanmt_tiny_dir: Path, tmp_path: Path) -> None:
    config = json.loads((csanmt_tiny_dir / checkpoint_files.CONFIGURATION).read_text(encoding="utf-8"))
    config["model"]["position_info_type"] = "relative"
    folder = _copy_with(csanmt_tiny_dir, tmp_path / "relative", lambda t: None, config)
    with pytest.raises(UnsupportedModelError, match="model.position_info_type is 'relative'; .* only 'absolute'"):
        load_checkpoint(folder)


def test_a_missing_tokenizer_file_is_named(csanmt_tiny_dir: Path, tmp_path: Path) -> None:
    folder = _copy_with(csanmt_tiny_dir, tmp_path / "no-bpe", lambda t: None)
    (folder / "bpe.zh").unlink()
    with pytest.raises(CheckpointError, match="lacks bpe.zh; download the whole ModelScope model folder"):
        load_checkpoint(folder)


def test_the_bundle_declares_family_tokenizer_and_decoding(csanmt_bundle_dir: Path, csanmt_checkpoint: Any) -> None:
    from handler.model import bundle

    manifest = json.loads((csanmt_bundle_dir / bundle.MANIFEST).read_text(encoding="utf-8"))
    config = csanmt_checkpoint.config
    assert manifest["family"] == "csanmt"
    assert sorted(manifest["files"]) == sorted(
        # embedding.bin: the target embedding, which the encoder also holds, stored once for both graphs
        # jieba.cache: jieba's prefix dictionary, prepared at build time instead of at every cold start
        ["encoder.onnx", "decoder.onnx", "embedding.bin", "bpe.zh", "src_vocab.txt", "trg_vocab.txt", "jieba.cache"]
    )
    assert manifest["graph_optimization"] == "offline-extended"
    tokenizer = manifest["tokenizer"]
    assert tokenizer["dictionary_cache"] == "jieba.cache"
    assert tokenizer["kind"] == "jieba+subword-nmt+moses" and tokenizer["source_unk_id"] == config.src_vocab_size - 1
    assert set(tokenizer["versions"]) == {"jieba", "subword_nmt", "sacremoses"}
    decoding = manifest["decoding"]
    assert (decoding["length_penalty"], decoding["alpha"], decoding["eos_id"]) == ("gnmt", 0.6, 0)
    assert (decoding["beam_size"], decoding["max_decoded_length"]) == (4, 20)
    model = manifest["model"]
    assert (model["vocab_size"], model["d_model"], model["decoder_layers"]) == (config.trg_vocab_size, 32, 2)
    assert (model["pad_id"], model["eos_id"], model["unk_id"]) == (0, 0, config.src_vocab_size - 1)
    figures = manifest["verification"]["figures"]
    assert figures["fp32_max_abs_log_prob_diff"] < 1e-4 and figures["fp32_greedy_exact_match"] == 1.0
    assert figures["int8_top1_agreement"] >= 0.95 and figures["int8_greedy_exact_match"] >= 0.5


def test_the_int8_decoder_stores_the_tied_embedding_once(csanmt_bundle_dir: Path, csanmt_checkpoint: Any) -> None:
    import onnx

    config = csanmt_checkpoint.config
    table = config.trg_vocab_size * config.hidden_size
    decoder = onnx.load(str(csanmt_bundle_dir / "decoder.onnx"))
    sizes = [int(np.prod(tensor.dims)) for tensor in decoder.graph.initializer]
    assert sizes.count(table) == 1  # the INT8 output projection, which the embedding lookup reads
    assert [t.data_type for t in decoder.graph.initializer if int(np.prod(t.dims)) == table] == [onnx.TensorProto.INT8]
    encoder = onnx.load(str(csanmt_bundle_dir / "encoder.onnx"))
    tables = [t for t in encoder.graph.initializer if int(np.prod(t.dims)) == table]
    eight_bit = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
    assert len(tables) == 2 and all(t.data_type in eight_bit for t in tables)  # both embeddings, 8-bit
