"""Open a model bundle once: check it against its manifest, create the ONNX Runtime sessions, warm them up.

``load_bundle`` refuses a bundle that is not exactly what its ``manifest.json`` describes (format version,
every listed file present with its size and sha256, the files the runtime needs listed), with a message that
names the file, what was expected and found, and how to rebuild the bundle. ``load_model`` builds on it and
returns a ``LoadedModel`` whose ``timings`` record how long each part of the cold start took.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from handler import bundle
from handler.batching import pad_batch
from handler.bundle import Manifest, ModelSpec
from handler.config import ENV_BUNDLE_DIR, RuntimeConfig
from handler.decoding import beam_search, greedy_search
from handler.errors import BundleError
from handler.onnx_model import OnnxMarian
from handler.tokenizer import SentencePieceTokenizer

REQUIRED_FILES = (*bundle.MODEL_FILES, *bundle.TOKENIZER_FILES)

# warm-up input: a short sentence alone, then a small batch of varied lengths
WARMUP_SENTENCES = ("你好。", "今天天气很好，我们去公园散步吧。", "请问最近的地铁站在哪里？", "谢谢！")
WARMUP_NEW_TOKENS = 8


def _rebuild_hint(bundle_dir: Path, source_model: str | None = None) -> str:
    source = source_model or "<checkpoint>"
    return f"rebuild it with: python -m build.export --model {source} --out {bundle_dir} --force"


def _read_manifest(bundle_dir: Path) -> dict[str, Any]:
    if not bundle_dir.is_dir():
        raise BundleError(
            f"model bundle {bundle_dir} does not exist; build one with python -m build.export --model <checkpoint> "
            f"--out {bundle_dir}, or set {ENV_BUNDLE_DIR} to a bundle folder"
        )
    path = bundle_dir / bundle.MANIFEST
    if not path.is_file():
        raise BundleError(f"{path} is missing, so {bundle_dir} is not a model bundle; {_rebuild_hint(bundle_dir)}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BundleError(f"{path} cannot be read ({error}); {_rebuild_hint(bundle_dir)}") from error
    if not isinstance(data, dict):
        raise BundleError(f"{path} must hold a JSON object; {_rebuild_hint(bundle_dir)}")
    return data


def load_bundle(bundle_dir: Path | str, *, verify_hashes: bool = True) -> Manifest:
    """The manifest of the bundle in ``bundle_dir``, after checking that the folder matches it.

    ``verify_hashes=False`` skips the sha256 of each file (sizes are still checked): a faster cold start for
    images whose bundle was verified when they were built.
    """
    bundle_dir = Path(bundle_dir)
    data = _read_manifest(bundle_dir)
    manifest_path = bundle_dir / bundle.MANIFEST
    version = data.get("format_version")
    if version != bundle.FORMAT_VERSION:
        raise BundleError(
            f"{manifest_path} has format version {version!r}, but this runtime reads format version "
            f"{bundle.FORMAT_VERSION}; re-export the bundle with this version of build.export: "
            f"{_rebuild_hint(bundle_dir, data.get('source_model'))}"
        )
    try:
        manifest = Manifest.from_dict(data)
    except (KeyError, TypeError, AttributeError) as error:
        raise BundleError(
            f"{manifest_path} is incomplete or malformed ({type(error).__name__}: {error}); "
            f"{_rebuild_hint(bundle_dir, data.get('source_model'))}"
        ) from error
    hint = _rebuild_hint(bundle_dir, manifest.source_model)
    unlisted = [name for name in REQUIRED_FILES if name not in manifest.files]
    if unlisted:
        raise BundleError(f"{manifest_path} does not list {', '.join(unlisted)}, which the runtime needs; {hint}")
    for name, entry in sorted(manifest.files.items()):
        if Path(name).name != name or name in ("", ".", ".."):
            raise BundleError(f"{manifest_path} lists {name!r}, which is not a file name inside the bundle; {hint}")
        path = bundle_dir / name
        if not path.is_file():
            raise BundleError(f"{path} is missing (listed in {bundle.MANIFEST}); {hint}")
        size = path.stat().st_size
        if size != entry.bytes:
            raise BundleError(
                f"{path} is {size:,} bytes, but {bundle.MANIFEST} expects {entry.bytes:,}: the file is truncated "
                f"or was replaced; {hint}"
            )
        if verify_hashes:
            digest = bundle.sha256_of(path)
            if digest != entry.sha256:
                raise BundleError(
                    f"{path} has sha256 {digest}, but {bundle.MANIFEST} expects {entry.sha256}: the file was "
                    f"modified or corrupted; {hint}"
                )
    return manifest


@dataclass
class LoadedModel:
    """A bundle ready to translate: its manifest, tokenizer and ONNX Runtime sessions, plus cold-start timings."""

    bundle_dir: Path
    manifest: Manifest
    tokenizer: SentencePieceTokenizer
    model: OnnxMarian
    timings: dict[str, float] = field(default_factory=dict)  # seconds: check_s, sessions_s, warmup_s, load_s

    @property
    def spec(self) -> ModelSpec:
        return self.manifest.model


def warm_up(loaded: LoadedModel, beam_size: int) -> None:
    """Run the paths a first request takes: one sentence greedily, then a small batch with ``beam_size``."""
    spec = loaded.spec
    encoded = loaded.tokenizer.encode_batch(list(WARMUP_SENTENCES))
    single_ids, single_mask = pad_batch(encoded[:1], spec.pad_id)
    greedy_search(loaded.model, single_ids, single_mask, WARMUP_NEW_TOKENS)
    batch_ids, batch_mask = pad_batch(encoded, spec.pad_id)
    beam_search(loaded.model, batch_ids, batch_mask, WARMUP_NEW_TOKENS, beam_size=beam_size)


def load_model(config: RuntimeConfig) -> LoadedModel:
    """Check, open and warm up the bundle ``config.bundle_dir`` names."""
    began = time.perf_counter()
    bundle_dir = Path(config.bundle_dir)
    manifest = load_bundle(bundle_dir, verify_hashes=config.verify_hashes)
    checked = time.perf_counter()
    spec = manifest.model
    tokenizer = SentencePieceTokenizer.from_bundle(bundle_dir, spec, manifest.normalization)
    if tokenizer.vocab_size > spec.vocab_size:
        raise BundleError(
            f"{bundle_dir / bundle.VOCAB_JSON} has {tokenizer.vocab_size:,} entries, but {bundle.MANIFEST} says the "
            f"model's vocabulary has {spec.vocab_size:,}; {_rebuild_hint(bundle_dir, manifest.source_model)}"
        )
    model = OnnxMarian(
        bundle_dir / bundle.ENCODER_ONNX,
        bundle_dir / bundle.DECODER_ONNX,
        spec,
        threads=config.intra_op_threads,
        spinning=config.thread_spinning,
    )
    opened = time.perf_counter()
    loaded = LoadedModel(bundle_dir=bundle_dir, manifest=manifest, tokenizer=tokenizer, model=model)
    warm_up(loaded, config.beam_size)
    warmed = time.perf_counter()
    loaded.timings = {
        "check_s": round(checked - began, 4),
        "sessions_s": round(opened - checked, 4),
        "warmup_s": round(warmed - opened, 4),
        "load_s": round(opened - began, 4),
    }
    return loaded
