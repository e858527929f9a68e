"""Turn a Marian checkpoint into a verified INT8 ONNX bundle (the format in ``handler/bundle.py``).

    python -m build.export --model <folder or hub id> --out model_artifacts/<name> [--force] [--name N]
                           [--normalization nfkc|none]

The pipeline cannot skip a step: load (transformers) -> export FP32 graphs -> compare with PyTorch ->
quantize INT8 -> compare with FP32 -> copy the tokenizer files -> write ``manifest.json`` -> move the finished
folder into place (written beside ``out_dir`` and renamed, so a failed build leaves nothing half-written).
The FP32 graphs are built in a temporary folder and never enter the bundle.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from build import verify
from build.quantize import DEFAULT_QUANTIZATION, QuantizationSettings, quantize_graph
from handler import bundle
from handler.bundle import Manifest, ModelSpec

TRAINING_RECORD = "training.json"  # written by build.train --finalize beside our own checkpoints
TOOLS = ("torch", "transformers", "onnx", "onnxruntime", "sentencepiece", "numpy")
NORMALIZATIONS = (bundle.NORMALIZATION_NONE, bundle.NORMALIZATION_NFKC)
# manifest sections a caller may add to (the pipeline fills the rest)
EXTRA_MANIFEST_FIELDS = ("licence", "quality", "training")


class ExportError(Exception):
    """The checkpoint cannot be exported, or the destination is not usable."""


@dataclass(frozen=True)
class LoadedCheckpoint:
    model: Any  # transformers MarianMTModel, eval mode
    tokenizer: Any  # transformers MarianTokenizer
    folder: Path  # local folder holding the files (a hub id is downloaded first)
    spec: ModelSpec
    training: dict[str, Any] = field(default_factory=dict)


def _say(progress: Callable[[str], None] | None, message: str) -> None:
    if progress is not None:
        progress(message)


def resolve_folder(model: str | Path) -> Path:
    """A local checkpoint folder, or the snapshot folder of a Hugging Face hub id (downloaded if needed)."""
    path = Path(model)
    if path.is_dir():
        return path
    if path.exists():
        raise ExportError(f"{path} is a file; --model takes a checkpoint folder or a Hugging Face hub id")
    if str(model).startswith((".", "/")) or str(model).count("/") > 1:
        raise ExportError(f"checkpoint folder {path} does not exist")
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(str(model)))
    except Exception as error:  # network, missing repo, auth: one message with the cause
        raise ExportError(f"cannot download {model!r} from the Hugging Face hub: {error}") from error


def spec_from(config: Any, tokenizer: Any) -> ModelSpec:
    """The runtime's view of a Marian config; refuses shapes the bundle format cannot express."""
    vocab_size = int(config.vocab_size)
    decoder_vocab = int(getattr(config, "decoder_vocab_size", None) or vocab_size)
    if decoder_vocab != vocab_size:
        raise ExportError(
            f"source and target vocabularies differ ({vocab_size} vs {decoder_vocab} entries); "
            "only Marian models with one shared vocabulary are supported"
        )
    if len(tokenizer) != vocab_size:
        raise ExportError(f"the tokenizer has {len(tokenizer)} entries but the model's vocabulary has {vocab_size}")
    heads = int(config.decoder_attention_heads)
    return ModelSpec(
        vocab_size=vocab_size,
        d_model=int(config.d_model),
        attention_heads=heads,
        head_dim=int(config.d_model) // heads,
        encoder_layers=int(config.encoder_layers),
        decoder_layers=int(config.decoder_layers),
        max_positions=int(config.max_position_embeddings),
        pad_id=int(config.pad_token_id),
        eos_id=int(config.eos_token_id),
        unk_id=int(tokenizer.unk_token_id),
        decoder_start_id=int(config.decoder_start_token_id),
    )


def load_checkpoint(model: str | Path) -> LoadedCheckpoint:
    """Load a MarianMTModel and its MarianTokenizer (one shared vocabulary) from a folder or hub id."""
    folder = resolve_folder(model)
    if (folder / "target_vocab.json").exists():
        raise ExportError(
            f"{folder} has a separate target vocabulary (target_vocab.json); only Marian models with one shared "
            f"vocabulary ({bundle.VOCAB_JSON}) are supported"
        )
    missing = [name for name in bundle.TOKENIZER_FILES if not (folder / name).is_file()]
    if missing:
        raise ExportError(f"{folder} lacks the Marian tokenizer files {', '.join(missing)}")
    from transformers import MarianMTModel, MarianTokenizer

    tokenizer = MarianTokenizer.from_pretrained(str(folder))
    if getattr(tokenizer, "separate_vocabs", False):
        raise ExportError(f"{folder} uses separate source and target vocabularies; only a shared one is supported")
    loaded = MarianMTModel.from_pretrained(str(folder)).eval()
    training_file = folder / TRAINING_RECORD
    training = json.loads(training_file.read_text(encoding="utf-8")) if training_file.is_file() else {}
    return LoadedCheckpoint(loaded, tokenizer, folder, spec_from(loaded.config, tokenizer), training)


def tool_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in TOOLS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def _check_destination(out_dir: Path, force: bool) -> None:
    if out_dir.exists() and not force:
        raise ExportError(f"{out_dir} already exists; pass force=True (--force) to replace it")
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportError(f"{out_dir} exists and is not a folder; remove it first")


def _install(staging: Path, out_dir: Path) -> None:
    """Put ``staging`` at ``out_dir`` by renames; an old bundle there is removed only after the new one is in."""
    if out_dir.exists():
        retired = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
        os.replace(out_dir, retired / out_dir.name)
        os.replace(staging, out_dir)
        shutil.rmtree(retired)
    else:
        os.replace(staging, out_dir)


def _normalization(requested: str | None, checkpoint: LoadedCheckpoint) -> str:
    if requested is None:
        # our own models are trained on NFKC-normalised text (build.train); foreign checkpoints are not
        return bundle.NORMALIZATION_NFKC if checkpoint.training else bundle.NORMALIZATION_NONE
    if requested not in NORMALIZATIONS:
        raise ExportError(f"normalization must be one of {', '.join(NORMALIZATIONS)}; got {requested!r}")
    return requested


def export_bundle(
    model: str | Path,
    out_dir: Path,
    *,
    name: str | None = None,
    force: bool = False,
    quantization: QuantizationSettings = DEFAULT_QUANTIZATION,
    thresholds: verify.VerifyThresholds = verify.DEFAULT_THRESHOLDS,
    normalization: str | None = None,
    extra_manifest: dict[str, Any] | None = None,
    sentences: tuple[str, ...] | list[str] = verify.VERIFY_SENTENCES,
    progress: Callable[[str], None] | None = None,
) -> Manifest:
    """Export, verify, quantize, verify again and write the bundle to ``out_dir``; returns its manifest.

    ``normalization`` defaults to ``nfkc`` for checkpoints with a ``training.json`` (ours) and ``none``
    otherwise. Raises ``ExportError`` for unusable input or destination and ``verify.VerificationError`` when a
    comparison misses its threshold; either way nothing is written to ``out_dir``.
    """
    out_dir = Path(out_dir)
    _check_destination(out_dir, force)
    extra = dict(extra_manifest or {})
    unknown = sorted(set(extra) - set(EXTRA_MANIFEST_FIELDS))
    if unknown:
        raise ExportError(f"extra_manifest may set only {', '.join(EXTRA_MANIFEST_FIELDS)}; got {', '.join(unknown)}")
    started = time.monotonic()
    _say(progress, f"loading {model}")
    checkpoint = load_checkpoint(model)
    spec = checkpoint.spec
    chosen_normalization = _normalization(normalization, checkpoint)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
    staging.chmod(0o755)  # mkdtemp makes it 0700: the runtime image reads it as a non-root user
    try:
        with tempfile.TemporaryDirectory(prefix="fp32-graphs-") as scratch:
            from build.onnx_graphs import export_graphs

            _say(progress, "exporting FP32 graphs")
            fp32 = export_graphs(checkpoint.model, Path(scratch))
            _say(progress, f"comparing FP32 graphs with PyTorch on {len(sentences)} sentences")
            fp32_figures, fp32_greedy = verify.compare_fp32_with_pytorch(
                checkpoint.model, checkpoint.tokenizer, *fp32, spec, sentences
            )
            _say(progress, f"  {fp32_figures.to_dict()}")
            verify.check(fp32_figures, thresholds)
            _say(progress, f"quantizing ({quantization.to_dict()})")
            int8 = (
                quantize_graph(fp32[0], staging / bundle.ENCODER_ONNX, quantization),
                quantize_graph(fp32[1], staging / bundle.DECODER_ONNX, quantization),
            )
            _say(progress, "comparing INT8 graphs with FP32 graphs")
            int8_figures = verify.compare_int8_with_fp32(
                fp32, int8, checkpoint.tokenizer, spec, sentences, fp32_greedy=fp32_greedy
            )
            _say(progress, f"  {int8_figures.to_dict()}")
            verify.check(int8_figures, thresholds)
            fp32_bytes = sum(path.stat().st_size for path in fp32)
        for file_name in bundle.TOKENIZER_FILES:
            shutil.copyfile(checkpoint.folder / file_name, staging / file_name)
        int8_bytes = sum((staging / file_name).stat().st_size for file_name in bundle.MODEL_FILES)
        training = dict(checkpoint.training)
        training.update(extra.pop("training", {}))
        manifest = Manifest(
            name=name or out_dir.name,
            source_model=str(model),
            model=spec,
            files={entry.name: bundle.file_entry(entry) for entry in sorted(staging.iterdir())},
            normalization=chosen_normalization,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            quantization={
                **quantization.to_dict(),
                "fp32_graph_bytes": fp32_bytes,
                "int8_graph_bytes": int8_bytes,
                "int8_share_of_fp32": round(int8_bytes / fp32_bytes, 4),
            },
            verification={
                "sentences": len(sentences),
                "figures": verify.merged(fp32_figures, int8_figures).to_dict(),
                "thresholds": thresholds.to_dict(),
            },
            training=training,
            tools=tool_versions(),
            **extra,
        )
        (staging / bundle.MANIFEST).write_text(manifest.to_json(), encoding="utf-8")
        _check_destination(out_dir, force)  # someone may have created it while we worked
        _install(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _say(progress, f"wrote {out_dir} in {time.monotonic() - started:.0f} s (bundle {manifest.bundle_hash()})")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="checkpoint folder or Hugging Face hub id")
    parser.add_argument("--out", required=True, type=Path, help="bundle folder to write, e.g. model_artifacts/default")
    parser.add_argument("--name", help="bundle name in the manifest (default: the --out folder's name)")
    parser.add_argument("--force", action="store_true", help="replace an existing bundle at --out")
    parser.add_argument(
        "--normalization",
        choices=NORMALIZATIONS,
        help="input normalisation the runtime applies (default: nfkc for checkpoints with training.json, else none)",
    )
    args = parser.parse_args(argv)
    try:
        manifest = export_bundle(
            args.model,
            args.out,
            name=args.name,
            force=args.force,
            normalization=args.normalization,
            progress=lambda message: print(message, flush=True),
        )
    except (ExportError, verify.VerificationError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(manifest.verification["figures"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
