"""Turn a checkpoint of any supported family into a verified INT8 ONNX bundle (format: ``handler/model/bundle.py``).

    python -m build.export --model <folder or hub id> --out model_artifacts/<name> [--force] [--name N]
                           [--normalization nfkc|none] [--family marian|csanmt]
                           [--min-int8-top1-agreement X] [--min-int8-exact-match X] (and the FP32 limits: --help)

The family (``build.families``: a Marian folder or hub id, a ModelScope CSANMT folder) is recognised from the
folder unless given. The pipeline cannot skip a step: load -> export FP32 graphs -> compare with the source
model -> quantize INT8 -> optimize the INT8 graphs (``build.optimize``) -> compare with FP32 -> copy the tokenizer
files -> write ``manifest.json`` -> move the finished folder into place (written beside ``out_dir`` and renamed, so
a failed build leaves nothing half-written).
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
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from build import families, verify
from build.compact import externalize_weights, graph_file_names
from build.errors import ExportError
from build.families import Checkpoint
from build.optimize import optimize_bundle_graphs
from build.quantize import DEFAULT_QUANTIZATION, QuantizationSettings, quantize_pair
from build.source_licence import source_licence
from handler.model import bundle
from handler.model.bundle import Manifest

TOOLS = ("torch", "transformers", "onnx", "onnxruntime", "sentencepiece", "numpy")
NORMALIZATIONS = (bundle.NORMALIZATION_NONE, bundle.NORMALIZATION_NFKC)
# command-line flags of the verification limits: (flag, VerifyThresholds field, what it limits)
THRESHOLD_FLAGS = (
    ("--max-fp32-log-prob-diff", "fp32_max_abs_log_prob_diff", "FP32 ONNX vs the source model: largest |Δ log-prob|"),
    ("--min-fp32-exact-match", "fp32_greedy_exact_match", "FP32 ONNX vs the source: share of equal greedy outputs"),
    ("--min-int8-top1-agreement", "int8_top1_agreement", "INT8 vs FP32: share of equal teacher-forced top-1 tokens"),
    ("--min-int8-exact-match", "int8_greedy_exact_match", "INT8 vs FP32: share of equal greedy outputs"),
)
THRESHOLD_HINT = (
    "a small or random model's INT8 choices are closer calls than a trained model's; if this model is meant to be "
    "like that, loosen the limit that failed, e.g. --min-int8-top1-agreement 0.75 --min-int8-exact-match 0.15"
)
# manifest sections a caller may add to (the pipeline fills the rest)
EXTRA_MANIFEST_FIELDS = ("licence", "quality", "training")


def _say(progress: Callable[[str], None] | None, message: str) -> None:
    if progress is not None:
        progress(message)


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


def _normalization(requested: str | None, checkpoint: Checkpoint) -> str:
    if requested is None:
        return checkpoint.default_normalization()
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
    family: str | None = None,
) -> Manifest:
    """Export, verify, quantize, verify again and write the bundle to ``out_dir``; returns its manifest.

    ``family`` names the model family (``build.families``); by default the folder's layout decides (a hub id is
    Marian). ``normalization`` defaults to the family's choice (Marian: ``nfkc`` for checkpoints with a
    ``training.json``, ours, and ``none`` otherwise; CSANMT: ``none``). Raises ``ExportError`` (or a subclass,
    ``build.errors``) for unusable input or destination and ``verify.VerificationError`` when a
    comparison misses its threshold; either way nothing is written to ``out_dir``.
    """
    out_dir = Path(out_dir)
    _check_destination(out_dir, force)
    extra = dict(extra_manifest or {})
    unknown = sorted(set(extra) - set(EXTRA_MANIFEST_FIELDS))
    if unknown:
        raise ExportError(f"extra_manifest may set only {', '.join(EXTRA_MANIFEST_FIELDS)}; got {', '.join(unknown)}")
    started = time.monotonic()
    chosen_family = families.resolve(model, family)
    _say(progress, f"loading {model} ({chosen_family.name})")
    checkpoint = chosen_family.load(model)
    spec = checkpoint.spec
    chosen_normalization = _normalization(normalization, checkpoint)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
    staging.chmod(0o755)  # mkdtemp makes it 0700: the runtime image reads it as a non-root user
    try:
        with tempfile.TemporaryDirectory(prefix="fp32-graphs-") as scratch:
            _say(progress, "exporting FP32 graphs")
            fp32 = checkpoint.export_graphs(Path(scratch))
            _say(progress, f"comparing FP32 graphs with PyTorch on {len(sentences)} sentences")
            fp32_figures, fp32_greedy = checkpoint.compare_fp32(fp32, sentences)
            _say(progress, f"  {fp32_figures.to_dict()}")
            verify.check(fp32_figures, thresholds)
            checkpoint.release_reference()
            _say(progress, f"quantizing ({quantization.to_dict()})")
            int8 = quantize_pair(fp32, staging, quantization)
            _say(progress, "optimizing the INT8 graphs (ONNX Runtime, extended level, saved in the bundle)")
            graph_optimization = optimize_bundle_graphs(staging, spec)
            encoder_graph, decoder_graph = (staging / name for name in bundle.MODEL_FILES)
            externalize_weights(decoder_graph)  # the same bytes, mapped at load (build.compact)
            externalize_weights(encoder_graph, reuse=decoder_graph)
            _say(progress, "comparing INT8 graphs with FP32 graphs")
            int8_figures = checkpoint.compare_int8(fp32, int8, sentences, fp32_greedy)
            _say(progress, f"  {int8_figures.to_dict()}")
            verify.check(int8_figures, thresholds)
            fp32_bytes = sum(path.stat().st_size for path in Path(scratch).iterdir())  # external data included
        checkpoint.copy_tokenizer(staging)
        graph_files = graph_file_names()
        int8_bytes = sum((staging / name).stat().st_size for name in graph_files if (staging / name).is_file())
        training = dict(checkpoint.training)
        training.update(extra.pop("training", {}))
        extra.setdefault("licence", source_licence(checkpoint.folder, training))  # a caller's licence wins
        sections = checkpoint.manifest_sections()
        own = {key: value for key, value in sections.items() if key in Manifest.__dataclass_fields__}
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
            graph_optimization=graph_optimization,
            **own,
            **extra,
        )
        if training:  # our own models carry a card (data, licences, training); it is hashed like every file
            from build.model_card import write_model_card

            manifest.files[bundle.MODEL_CARD] = bundle.file_entry(write_model_card(staging, manifest))
        (staging / bundle.MANIFEST).write_text(_manifest_json(manifest, sections), encoding="utf-8")
        _check_destination(out_dir, force)  # someone may have created it while we worked
        _install(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _say(progress, f"wrote {out_dir} in {time.monotonic() - started:.0f} s (bundle {manifest.bundle_hash()})")
    return manifest


def _manifest_json(manifest: Manifest, sections: dict[str, Any]) -> str:
    """The manifest, plus family sections the ``Manifest`` dataclass does not (yet) declare, as top-level keys."""
    record = json.loads(manifest.to_json())
    record.update({key: value for key, value in sections.items() if key not in Manifest.__dataclass_fields__})
    return json.dumps(record, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="checkpoint folder or Hugging Face hub id")
    parser.add_argument("--out", required=True, type=Path, help="bundle folder to write, e.g. model_artifacts/default")
    parser.add_argument("--name", help="bundle name in the manifest (default: the --out folder's name)")
    parser.add_argument("--force", action="store_true", help="replace an existing bundle at --out")
    parser.add_argument(
        "--family",
        choices=families.names(),
        help="model family (default: recognised from the folder; a hub id is marian)",
    )
    parser.add_argument(
        "--normalization",
        choices=NORMALIZATIONS,
        help="input normalisation the runtime applies (default: nfkc for checkpoints with training.json, else none)",
    )
    limits = parser.add_argument_group(
        "verification limits (defaults suit a trained model; a tiny or random model may need looser INT8 ones)"
    )
    for flag, field, what in THRESHOLD_FLAGS:
        limits.add_argument(
            flag,
            dest=field,
            type=float,
            default=getattr(verify.DEFAULT_THRESHOLDS, field),
            help=f"{what} (default: %(default)s)",
        )
    args = parser.parse_args(argv)
    try:
        thresholds = verify.VerifyThresholds(**{field: getattr(args, field) for _, field, _ in THRESHOLD_FLAGS})
    except ValueError as error:
        parser.error(str(error))
    try:
        manifest = export_bundle(
            args.model,
            args.out,
            name=args.name,
            force=args.force,
            normalization=args.normalization,
            family=args.family,
            thresholds=thresholds,
            progress=lambda message: print(message, flush=True),
        )
    except verify.VerificationError as error:
        print(f"error: {error}", file=sys.stderr)
        print(f'{THRESHOLD_HINT} (make model: VERIFY_ARGS="...")', file=sys.stderr)
        return 1
    except ExportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(manifest.verification["figures"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
