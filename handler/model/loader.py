"""Open a model bundle once: check it against its manifest, create the ONNX Runtime sessions, warm them up.

``load_bundle`` refuses a bundle that is not exactly what its ``manifest.json`` describes (format version, model
family, every listed file present with its size and sha256, the files the runtime needs listed), with a message
that names the file, what was expected and found, and how to rebuild the bundle. ``load_model`` builds on it: the
manifest's family (``handler.model.families``; absent = Marian) gives the tokenizer, the graph contract the sessions are
checked against and the decoding protocol, and the returned ``LoadedModel`` records in ``timings`` how long each
part of the cold start took.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from handler.config import ENV_BUNDLE_DIR, RuntimeConfig
from handler.errors import BundleError
from handler.model import bundle, file_hashes
from handler.model.batching import pad_batch
from handler.model.bundle import Manifest, ModelSpec
from handler.model.decoding import Hypothesis, RowDone
from handler.model.families import family_named
from handler.model.families.base import Decoding, ModelFamily, SearchRequest, Tokenizer
from handler.model.memory import release_free_heap
from handler.model.parallel_search import search_in_parts
from handler.model.sessions import OnnxEncoderDecoder

T = TypeVar("T")
R = TypeVar("R")

# warm-up input: one short sentence, the service's beam, two new tokens (a Marian decoder step at the beam's rows,
# then the forced </s>; CSANMT's first step at one row, then one at the beam's): both graphs run before the first
# request; kept small, as it is the cold start's own cost (docs/decisions.md)
WARMUP_SENTENCE = "你好。"
WARMUP_NEW_TOKENS = 2


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
    family = family_named(data.get("family"), str(manifest_path))
    required = (*bundle.MODEL_FILES, *family.tokenizer_files(manifest))
    unlisted = [name for name in required if name not in manifest.files]
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
        verify_file_hashes(bundle_dir, manifest)
    return manifest


def verify_file_hashes(bundle_dir: Path | str, manifest: Manifest, *, threads: int = file_hashes.THREADS) -> None:
    """Raise ``BundleError`` naming the first file of ``manifest`` (by name) whose sha256 is not the one it lists.

    Every file is hashed (``file_hashes.sha256s``: on ``threads`` threads, largest first, using what a cold start
    began before its imports) before any is judged."""
    bundle_dir = Path(bundle_dir)
    hint = _rebuild_hint(bundle_dir, manifest.source_model)
    digests = file_hashes.sha256s(bundle_dir, sorted(manifest.files), threads=threads)
    for name, entry in sorted(manifest.files.items()):
        path = bundle_dir / name
        digest = digests[name]
        if digest != entry.sha256:
            raise BundleError(
                f"{path} has sha256 {digest}, but {bundle.MANIFEST} expects {entry.sha256}: the file was "
                f"modified or corrupted; {hint}"
            )


@dataclass
class LoadedModel:
    """A bundle ready to translate: its manifest, tokenizer and ONNX Runtime sessions, plus cold-start timings."""

    bundle_dir: Path
    manifest: Manifest
    family: ModelFamily
    tokenizer: Tokenizer
    model: OnnxEncoderDecoder
    decoding: Decoding
    # seconds: check_s (the sha256 of the files), tokenizer_s and sessions_s (all three at the same time), warmup_s,
    # load_s (until all three are done)
    timings: dict[str, float] = field(default_factory=dict)
    streams: int = 1  # a beam search of several sentences runs as up to this many parts side by side

    @property
    def spec(self) -> ModelSpec:
        return self.manifest.model

    def search(
        self,
        rows: Sequence[Sequence[int]],
        request: SearchRequest,
        *,
        width_multiple: int = 1,
        on_row: RowDone | None = None,
        streams: int | None = None,
    ) -> list[Hypothesis]:
        """The family's search over token-id rows, padded here (at most the model's positions wide, the width
        rounded up to ``width_multiple``): the one decoding step the service, the warm-up and the benchmarks share.
        ``on_row(row, hypothesis)`` hears each row as soon as the search has it; ``streams`` caps the parts the
        batch is searched in (``self.streams`` by default)."""
        return self._padded_in_parts(
            rows,
            request,
            width_multiple,
            lambda ids, mask, part, part_on_row: self.decoding.search(self.model, ids, mask, part, part_on_row),
            on_row,
            self.streams if streams is None else streams,
        )

    def search_n_best(
        self, rows: Sequence[Sequence[int]], request: SearchRequest, n_best: int, *, width_multiple: int = 1
    ) -> list[list[Hypothesis]]:
        """``search`` keeping up to ``n_best`` hypotheses per row, best first (``Decoding.search_n_best``)."""
        return self._padded_in_parts(
            rows,
            request,
            width_multiple,
            lambda ids, mask, part, _: self.decoding.search_n_best(self.model, ids, mask, part, n_best),
            None,
            self.streams,
        )

    def _padded_in_parts(
        self,
        rows: Sequence[Sequence[int]],
        request: SearchRequest,
        width_multiple: int,
        search: Callable[[np.ndarray, np.ndarray, SearchRequest, Callable[[int, R], None] | None], list[R]],
        on_row: Callable[[int, R], None] | None,
        streams: int,
    ) -> list[R]:
        """``search`` of the rows padded once, as parts side by side where the batch allows (``parallel_search``)."""
        input_ids, attention_mask = pad_batch(
            rows, self.spec.pad_id, max_width=self.spec.max_positions, multiple=width_multiple
        )
        return search_in_parts(input_ids, attention_mask, request, streams, search, on_row)


def warm_up(loaded: LoadedModel, beam_size: int) -> None:
    """Run both graphs the way a first request does: one short sentence with ``beam_size``."""
    loaded.search(loaded.tokenizer.encode_batch([WARMUP_SENTENCE]), SearchRequest(beam_size, WARMUP_NEW_TOKENS))


def _timed(make: Callable[[], T]) -> tuple[T, float]:
    began = time.perf_counter()
    made = make()
    return made, time.perf_counter() - began


def load_model(config: RuntimeConfig) -> LoadedModel:
    """Check, open and warm up the bundle ``config.bundle_dir`` names.

    After the manifest and the files' sizes are checked, three things run at the same time: the sha256 of every
    file (``config.verify_hashes``) on one thread, the ONNX Runtime sessions on another (the encoder's and the
    decoder's side by side, see ``OnnxEncoderDecoder.open``), the tokenizer on this one (ONNX Runtime builds
    sessions and hashlib hashes without holding the GIL; a tokenizer's dictionaries can take a second or more:
    jieba's). So the cold start pays the longest of them, not their sum. Nothing is warmed, and nothing returned,
    before the hashes are found right: a file that does not match its manifest fails the start with that reason
    (ahead of any error its damaged contents made the sessions raise).
    """
    began = time.perf_counter()
    bundle_dir = Path(config.bundle_dir)
    manifest = load_bundle(bundle_dir, verify_hashes=False)
    spec = manifest.model
    family = family_named(manifest.family)
    decoding = family.decoding(manifest)

    def check_hashes() -> None:
        if config.verify_hashes:
            verify_file_hashes(bundle_dir, manifest)

    def open_sessions() -> OnnxEncoderDecoder:
        return OnnxEncoderDecoder(
            bundle_dir / bundle.ENCODER_ONNX,
            bundle_dir / bundle.DECODER_ONNX,
            spec,
            family.graph_contract(spec),
            threads=config.intra_op_threads,
            spinning=config.thread_spinning,
            optimized_offline=manifest.graph_optimization == bundle.GRAPHS_OPTIMIZED_OFFLINE,
        )

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="cold-start") as pool:
        hashes = pool.submit(_timed, check_hashes)
        sessions = pool.submit(_timed, open_sessions)
        try:
            tokenizer, tokenizer_s = _timed(lambda: family.load_tokenizer(bundle_dir, manifest))
        finally:
            _, hash_s = hashes.result()  # a damaged file's own error first, whatever else it broke
        model, sessions_s = sessions.result()
    opened = time.perf_counter()
    loaded = LoadedModel(
        bundle_dir=bundle_dir,
        manifest=manifest,
        family=family,
        tokenizer=tokenizer,
        model=model,
        decoding=decoding,
        streams=config.decoding_streams,
    )
    warm_up(loaded, config.beam_size)
    release_free_heap()  # what loading and warming freed (handler.model.memory)
    warmed = time.perf_counter()
    loaded.timings = {
        "check_s": round(hash_s, 4),
        "tokenizer_s": round(tokenizer_s, 4),  # these three overlap
        "sessions_s": round(sessions_s, 4),
        "warmup_s": round(warmed - opened, 4),
        "load_s": round(opened - began, 4),
    }
    return loaded
