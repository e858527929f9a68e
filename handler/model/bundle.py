"""The model bundle format: the only contract between the build step and the runtime.

A bundle is a folder holding two ONNX graphs, the Marian tokenizer files and ``manifest.json``. The file
names and the graphs' input/output names below are used by ``build/`` (which writes bundles), ``handler/``
(which reads them), the Dockerfile and the tests; nothing else spells them.

Graphs (``L`` = decoder layers, ``H`` = attention heads, ``D`` = head size, all float tensors float32):

``encoder.onnx``
    inputs  ``input_ids`` int64 [batch, src_len], ``attention_mask`` int64 [batch, src_len] (1 = token)
    outputs ``cross_key.{i}``, ``cross_value.{i}`` for i < L, float [batch, H, src_len, D]: the encoder
            output already projected by decoder layer i's cross-attention key/value projections.
``decoder.onnx`` (one step, with KV cache; the first step passes a past of length 0)
    inputs  ``input_ids`` int64 [batch, 1], ``encoder_attention_mask`` int64 [batch, src_len],
            ``past_key.{i}``, ``past_value.{i}`` float [batch, H, past_len, D],
            ``cross_key.{i}``, ``cross_value.{i}`` float [batch, H, src_len, D]
    outputs ``log_probs`` float [batch, vocab] (log-softmax of the next-token logits, final_logits_bias
            included), ``present_key.{i}``, ``present_value.{i}`` float [batch, H, past_len + 1, D]
    The position of the new token is ``past_len``.

Model families (``manifest.json`` key ``family``; absent = ``"marian"``) differ in their tokenizer files and in
the per-sentence arrays the encoder hands the decoder (``handler/model/families/``). The graphs above are Marian's.
A ``"csanmt"`` bundle (DAMO's CSANMT; the contract is agreed in the CSANMT issue) holds ``bpe.zh``,
``src_vocab.txt`` and ``trg_vocab.txt`` instead of the SentencePiece files, and its encoder also emits
``semantic_bias.{i}`` float [batch, 1, d_model] per decoder layer (the embedding-augmentation term that layer adds
before self-attention), which the decoder takes as an input, plus two verification outputs the runtime never
reads (``encoder_states`` [batch, src_len, d_model], ``semantic_vector`` [batch, 1, d_model]). Its decoder
ignores ``input_ids`` on the first step (position 0's input is the zero vector).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1

MANIFEST = "manifest.json"
ENCODER_ONNX = "encoder.onnx"
DECODER_ONNX = "decoder.onnx"
SOURCE_SPM = "source.spm"
TARGET_SPM = "target.spm"
VOCAB_JSON = "vocab.json"
TOKENIZER_FILES = (SOURCE_SPM, TARGET_SPM, VOCAB_JSON)
# Marian: the manifest's ``tokenizer`` section may name the target side's SentencePiece file under this key; a joint
# vocabulary's two models are the same file, which the bundle then stores once: {"target_spm": "source.spm"}
TARGET_SPM_KEY = "target_spm"
MODEL_FILES = (ENCODER_ONNX, DECODER_ONNX)
# optional: a tied embedding both graphs read (ONNX external data), stored once; the manifest lists it when present.
# It holds the INT8 initializer SHARED_EMBEDDING_INITIALIZER, [d_model, vocab_size], the decoder's output projection
# (the encoder and the decoder look tokens up in its columns); the runtime loads it once for both sessions.
SHARED_EMBEDDING = "embedding.bin"
# A graph's weights of 64 KiB and more are ONNX external data in ``<graph>.data`` beside it (``encoder.onnx.data``),
# each at an offset that is a multiple of WEIGHTS_ALIGNMENT: ONNX Runtime maps the file into memory instead of
# reading the weights into a buffer beside the parsed graph (build.compact.externalize_weights; a full-size CSANMT's
# load peaked 283 MB lower and its sessions opened three times faster, docs/decisions.md).
WEIGHTS_ALIGNMENT = 4096


def weights_file(graph: str) -> str:
    """The name of the external weights file of graph file ``graph``: ``encoder.onnx`` -> ``encoder.onnx.data``."""
    return f"{graph}.data"


def graph_bytes(graph: Path) -> int:
    """Bytes of a graph file and of its external weights file beside it (either may be missing: 0)."""
    return sum(path.stat().st_size for path in (graph, graph.with_name(weights_file(graph.name))) if path.is_file())


SHARED_EMBEDDING_INITIALIZER = "shared_embedding_int8"
# CSANMT's tokenizer files (default names; the manifest's "tokenizer" section names them)
CSANMT_BPE_CODES = "bpe.zh"
CSANMT_SOURCE_VOCAB = "src_vocab.txt"
CSANMT_TARGET_VOCAB = "trg_vocab.txt"
CSANMT_DICTIONARY_CACHE = "jieba.cache"  # jieba's prefix dictionary, prepared by the build (optional)
# Manifest.graph_optimization of graphs ONNX Runtime optimized at build time (build.optimize): the runtime opens
# them with load-time optimization off; "" (older bundles, graphs reading SHARED_EMBEDDING): optimized at each load
GRAPHS_OPTIMIZED_OFFLINE = "offline-extended"
MODEL_CARD = "MODEL_CARD.md"  # optional, human-readable; hashed like every other file when present

# graph input/output names
INPUT_IDS = "input_ids"
ATTENTION_MASK = "attention_mask"
ENCODER_ATTENTION_MASK = "encoder_attention_mask"
LOG_PROBS = "log_probs"
ENCODER_STATES = "encoder_states"  # csanmt verification output
SEMANTIC_VECTOR = "semantic_vector"  # csanmt verification output

# model families
FAMILY_MARIAN = "marian"
FAMILY_CSANMT = "csanmt"


def cross_key(layer: int) -> str:
    return f"cross_key.{layer}"


def cross_value(layer: int) -> str:
    return f"cross_value.{layer}"


def past_key(layer: int) -> str:
    return f"past_key.{layer}"


def past_value(layer: int) -> str:
    return f"past_value.{layer}"


def present_key(layer: int) -> str:
    return f"present_key.{layer}"


def present_value(layer: int) -> str:
    return f"present_value.{layer}"


def semantic_bias(layer: int) -> str:
    return f"semantic_bias.{layer}"


# input normalisation the runtime applies before tokenizing (declared per bundle)
NORMALIZATION_NONE = "none"
NORMALIZATION_NFKC = "nfkc"


@dataclass(frozen=True)
class ModelSpec:
    """What the runtime needs to know about the network and its vocabulary."""

    vocab_size: int
    d_model: int
    attention_heads: int
    head_dim: int
    encoder_layers: int
    decoder_layers: int
    max_positions: int
    pad_id: int
    eos_id: int
    unk_id: int
    decoder_start_id: int


@dataclass(frozen=True)
class FileEntry:
    sha256: str
    bytes: int


@dataclass
class Manifest:
    """``manifest.json``. Sections other than ``model`` and ``files`` are free-form records for people."""

    name: str
    source_model: str
    model: ModelSpec
    files: dict[str, FileEntry]
    normalization: str = NORMALIZATION_NONE
    format_version: int = FORMAT_VERSION
    created_at: str = ""
    quantization: dict[str, Any] = field(default_factory=dict)
    verification: dict[str, Any] = field(default_factory=dict)
    quality: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, str] = field(default_factory=dict)
    licence: str = ""  # the source checkpoint's (build.source_licence); "" = unknown (handler.model.licence)
    family: str = FAMILY_MARIAN  # which handler.model.families module reads the bundle
    tokenizer: dict[str, Any] = field(default_factory=dict)  # per family (csanmt: file names, unknown id, versions)
    decoding: dict[str, Any] = field(default_factory=dict)  # per family (csanmt: length penalty, maximum length)
    confidence: dict[str, Any] = field(default_factory=dict)  # score -> confidence calibration (build.calibrate)
    graph_optimization: str = ""  # GRAPHS_OPTIMIZED_OFFLINE, or "" (ONNX Runtime optimizes the graphs at load)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n"

    def write(self, path: Path) -> None:
        """Write to ``path`` whole or not at all (a temporary file beside it, then renamed over it)."""
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(self.to_json(), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["model"] = ModelSpec(**data["model"])
        known["files"] = {name: FileEntry(**entry) for name, entry in data["files"].items()}
        return cls(**known)

    def bundle_hash(self) -> str:
        """One short id for the whole bundle: the sha256 of its files' hashes, in name order."""
        digest = hashlib.sha256()
        for name in sorted(self.files):
            digest.update(f"{name}:{self.files[name].sha256}\n".encode())
        return digest.hexdigest()[:16]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_entry(path: Path) -> FileEntry:
    return FileEntry(sha256=sha256_of(path), bytes=path.stat().st_size)
