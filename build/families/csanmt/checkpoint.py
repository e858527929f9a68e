"""A ModelScope CSANMT folder: its configuration and the inference variables of its TensorFlow checkpoint.

The folder (``damo/nlp_csanmt_translation_zh2en`` as downloaded) holds ``configuration.json``,
``tf_ckpts/ckpt-0.{index,data-*}``, ``bpe.zh``, ``src_vocab.txt`` and ``trg_vocab.txt``. The checkpoint stores
the inference variables (names below, as modelscope's ``models/nlp/csanmt/translation.py`` creates them under
``NmtModel/``) beside optimizer state (Adam slots ``<name>/Adam``, ``<name>/Adam_1``, ``beta1_power``,
``global_step``, ...): the published one is 7.88 GB of which 2.28 GB are the weights.

``read_weights`` reads exactly the variables the configuration implies, one tensor at a time, by name, with
TensorFlow's checkpoint reader (``tf.train.load_checkpoint``, a build-time dependency only). A variable that is
missing or has another shape is an error naming it; so is an inference-like variable (a ``NmtModel/`` name whose
last part is a weight name, e.g. ``layer_24/.../matrix``) the configuration does not account for, since it
means the configuration and the checkpoint disagree. Everything else (optimizer slots, counters) is ignored.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build.errors import (
    CheckpointError,
    MisshapenVariableError,
    MissingVariableError,
    UnexpectedVariableError,
    UnsupportedModelError,
)

CONFIGURATION = "configuration.json"
CHECKPOINT_PREFIX = Path("tf_ckpts") / "ckpt-0"
BPE_CODES = "bpe.zh"
SOURCE_VOCAB = "src_vocab.txt"
TARGET_VOCAB = "trg_vocab.txt"
FOLDER_FILES = (CONFIGURATION, BPE_CODES, SOURCE_VOCAB, TARGET_VOCAB)

ROOT = "NmtModel"
WEIGHT_LEAVES = frozenset(
    {"matrix", "bias", "Weights", "layer_norm_scale", "layer_norm_offset", "rpr_k", "rpr_v", "encoder_input_bias"}
)
# what the exporter implements (the real zh2en model's values); anything else is refused with its name
REQUIRED_SETTINGS: dict[str, Any] = {
    "layer_preproc": "layer_norm",
    "layer_postproc": "none",
    "shared_source_target_embedding": True,
    "shared_embedding_and_softmax_weights": True,
    "position_info_type": "absolute",
}


@dataclass(frozen=True)
class CsanmtConfig:
    """The ``model`` section of ``configuration.json`` that shapes the network and its decoding."""

    hidden_size: int
    filter_size: int
    num_heads: int
    num_encoder_layers: int
    num_decoder_layers: int
    num_semantic_encoder_layers: int
    src_vocab_size: int
    trg_vocab_size: int
    max_relative_dis: int
    beam_size: int
    lp_rate: float
    max_decoded_trg_len: int

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @classmethod
    def from_model_section(cls, section: dict[str, Any], source: Path) -> CsanmtConfig:
        missing = [name for name in cls.__dataclass_fields__ if name not in section]
        if missing:
            raise UnsupportedModelError(f"{source}: the model section lacks {', '.join(missing)}")
        for name, required in REQUIRED_SETTINGS.items():
            found = section.get(name, required)
            if found != required:
                raise UnsupportedModelError(
                    f"{source}: model.{name} is {found!r}; the exporter implements only {required!r} "
                    "(the configuration of damo/nlp_csanmt_translation_zh2en)"
                )
        config = cls(**{name: section[name] for name in cls.__dataclass_fields__})
        if config.hidden_size % config.num_heads:
            raise UnsupportedModelError(
                f"{source}: hidden_size {config.hidden_size} is not divisible by num_heads {config.num_heads}"
            )
        if config.hidden_size % 2:
            raise UnsupportedModelError(f"{source}: hidden_size {config.hidden_size} must be even (sinusoids)")
        if config.src_vocab_size != config.trg_vocab_size:
            raise UnsupportedModelError(
                f"{source}: src_vocab_size {config.src_vocab_size} != trg_vocab_size {config.trg_vocab_size}; a "
                "shared source/target embedding needs one size"
            )
        return config

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def read_configuration(folder: Path) -> dict[str, Any]:
    path = folder / CONFIGURATION
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError as error:
        raise CheckpointError(f"{folder} has no {CONFIGURATION}; is it a ModelScope CSANMT folder?") from error
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{path} is not valid JSON: {error}") from error


def load_config(folder: Path) -> CsanmtConfig:
    record = read_configuration(folder)
    if not isinstance(record.get("model"), dict):
        raise CheckpointError(f"{folder / CONFIGURATION} has no 'model' section")
    return CsanmtConfig.from_model_section(record["model"], folder / CONFIGURATION)


def check_folder(folder: Path) -> None:
    """Every file the export reads is there; the error lists what is missing."""
    missing = [name for name in FOLDER_FILES if not (folder / name).is_file()]
    if not (folder / f"{CHECKPOINT_PREFIX}.index").is_file():
        missing.append(f"{CHECKPOINT_PREFIX}.index")
    if not list((folder / CHECKPOINT_PREFIX.parent).glob(f"{CHECKPOINT_PREFIX.name}.data-*")):
        missing.append(f"{CHECKPOINT_PREFIX}.data-*")
    if missing:
        raise CheckpointError(
            f"{folder} lacks {', '.join(missing)}; download the whole ModelScope model folder "
            "(configuration.json, tf_ckpts/, bpe.zh, src_vocab.txt, trg_vocab.txt)"
        )


def _linear(prefix: str, inputs: int, outputs: int) -> dict[str, tuple[int, ...]]:
    return {f"{prefix}/matrix": (inputs, outputs), f"{prefix}/bias": (outputs,)}


def _layer_norm(prefix: str, width: int) -> dict[str, tuple[int, ...]]:
    return {f"{prefix}/layer_norm_scale": (width,), f"{prefix}/layer_norm_offset": (width,)}


def expected_variables(config: CsanmtConfig) -> dict[str, tuple[int, ...]]:
    """Every inference variable (name without ``:0``) and its shape, as modelscope's graph creates them."""
    h, f, d = config.hidden_size, config.filter_size, config.head_dim
    names: dict[str, tuple[int, ...]] = {
        f"{ROOT}/Shared_Embedding/Weights": (config.src_vocab_size, h),
        f"{ROOT}/encoder_input_bias": (h,),
        f"{ROOT}/Shared_Semantic_Embedding/Weights": (config.src_vocab_size, h),
    }

    def encoder_layer(prefix: str, relative: bool) -> None:
        attention = f"{prefix}/encoder_self_attention"
        names.update(_layer_norm(f"{prefix}/layer_norm", h))
        names.update(_linear(f"{attention}/qkv_transform", h, 3 * h))
        names.update(_linear(f"{attention}/output_transform", h, h))
        if relative:
            names[f"{attention}/rpr_k"] = (2 * config.max_relative_dis + 1, d)
            names[f"{attention}/rpr_v"] = (2 * config.max_relative_dis + 1, d)
        names.update(_layer_norm(f"{prefix}/layer_norm_1", h))
        names.update(_linear(f"{prefix}/ffn_layer/input_layer/linear", h, f))
        names.update(_linear(f"{prefix}/ffn_layer/output_layer/linear", f, h))

    for layer in range(config.num_encoder_layers):
        encoder_layer(f"{ROOT}/encoder/layer_{layer}", relative=False)
    names.update(_layer_norm(f"{ROOT}/encoder/layer_norm", h))
    for layer in range(config.num_semantic_encoder_layers):
        encoder_layer(f"{ROOT}/mini_xlm_encoder/layer_{layer}", relative=True)
    names.update(_linear(f"{ROOT}/mini_xlm_encoder/pooling_layer/linear", h, h))
    names.update(_layer_norm(f"{ROOT}/mini_xlm_encoder/layer_norm", h))
    for layer in range(config.num_decoder_layers):
        prefix = f"{ROOT}/decoder/layer_{layer}"
        names.update(_layer_norm(f"{prefix}/layer_norm", h))
        names.update(_linear(f"{prefix}/embedding_augmentation_layer/input_layer/linear", h, h))
        names.update(_linear(f"{prefix}/embedding_augmentation_layer/output_layer/linear", h, h))
        names.update(_layer_norm(f"{prefix}/layer_norm_1", h))
        names.update(_linear(f"{prefix}/decoder_self_attention/qkv_transform", h, 3 * h))
        names.update(_linear(f"{prefix}/decoder_self_attention/output_transform", h, h))
        names.update(_layer_norm(f"{prefix}/layer_norm_2", h))
        names.update(_linear(f"{prefix}/encdec_attention/q_transform", h, h))
        names.update(_linear(f"{prefix}/encdec_attention/kv_transform", h, 2 * h))
        names.update(_linear(f"{prefix}/encdec_attention/output_transform", h, h))
        names.update(_layer_norm(f"{prefix}/layer_norm_3", h))
        names.update(_linear(f"{prefix}/ffn_layer/input_layer/linear", h, f))
        names.update(_linear(f"{prefix}/ffn_layer/output_layer/linear", f, h))
    names.update(_layer_norm(f"{ROOT}/decoder/layer_norm", h))
    return names


def is_inference_like(name: str) -> bool:
    """A ``NmtModel/`` variable whose last part is a weight name (optimizer slots end in Adam, grad_acc, ...)."""
    return name.startswith(f"{ROOT}/") and name.rsplit("/", 1)[-1] in WEIGHT_LEAVES


def check_variables(found: dict[str, list[int]], dtypes: dict[str, str], config: CsanmtConfig, source: Path) -> None:
    """Raise the first problem: a missing, misshapen (or non-float32) or unaccounted-for inference variable."""
    expected = expected_variables(config)
    missing = sorted(name for name in expected if name not in found)
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise MissingVariableError(
            f"{source}: the checkpoint lacks the inference variable {missing[0]}{more}, which the configuration "
            f"implies (hidden {config.hidden_size}, {config.num_encoder_layers} encoder / "
            f"{config.num_decoder_layers} decoder / {config.num_semantic_encoder_layers} semantic layers); check "
            "that configuration.json belongs to this checkpoint"
        )
    for name, shape in expected.items():
        if tuple(found[name]) != shape:
            raise MisshapenVariableError(
                f"{source}: variable {name} has shape {list(found[name])}; the configuration implies {list(shape)}"
            )
        if dtypes.get(name, "float32") != "float32":
            raise MisshapenVariableError(f"{source}: variable {name} is {dtypes[name]}; expected float32")
    unexpected = sorted(name for name in found if is_inference_like(name) and name not in expected)
    if unexpected:
        more = f" (and {len(unexpected) - 1} more)" if len(unexpected) > 1 else ""
        raise UnexpectedVariableError(
            f"{source}: the checkpoint holds the inference variable {unexpected[0]}{more}, which the configuration "
            "does not account for (more layers, or another variant of the model?); check that configuration.json "
            "belongs to this checkpoint"
        )


def read_weights(folder: Path, config: CsanmtConfig) -> dict[str, Any]:
    """The inference variables as float32 numpy arrays, by modelscope name; nothing else is read."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    prefix = folder / CHECKPOINT_PREFIX
    try:
        reader = tf.train.load_checkpoint(str(prefix))
    except Exception as error:  # TF raises NotFoundError/DataLossError/...: one message with the cause
        raise CheckpointError(f"TensorFlow cannot read the checkpoint {prefix}: {error}") from error
    shapes = {name: list(shape) for name, shape in reader.get_variable_to_shape_map().items()}
    dtypes = {name: dtype.name for name, dtype in reader.get_variable_to_dtype_map().items()}
    check_variables(shapes, dtypes, config, prefix)
    return {name: np.asarray(reader.get_tensor(name), dtype=np.float32) for name in expected_variables(config)}
