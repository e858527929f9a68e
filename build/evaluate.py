"""Measure a bundle's translation quality on a dev set with the real runtime (sacreBLEU 13a, chrF++).

    python -m build.evaluate --bundle model_artifacts/default [--fp32-from CHECKPOINT] [--write] [--pairs N]

Translates the dev set's Chinese side through ``handler``'s TranslationService (the same path a request takes:
normalisation, segmentation, batching, decoding, cleaning) and scores against the references, overall and
per dev source. ``--fp32-from`` also exports the checkpoint's FP32 ONNX graphs (unquantized) and scores them
the same way, so the INT8 loss is measured side by side. ``--write`` records the figures in the bundle's
manifest (``quality``) and regenerates its model card.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import sacrebleu

from build import corpus
from handler.config import RuntimeConfig
from handler.model import bundle
from handler.service import TranslateOptions, TranslationService

BATCH = 64


@dataclass(frozen=True)
class Scores:
    bleu: float
    chrf_pp: float
    pairs: int

    def as_dict(self) -> dict[str, float | int]:
        return {"bleu": self.bleu, "chrf++": self.chrf_pp, "pairs": self.pairs}


def score(hypotheses: list[str], references: list[str]) -> Scores:
    bleu = sacrebleu.corpus_bleu(hypotheses, [references], tokenize="13a")
    chrf = sacrebleu.corpus_chrf(hypotheses, [references], word_order=2)
    return Scores(round(bleu.score, 2), round(chrf.score, 2), len(hypotheses))


def translate_all(
    bundle_dir: Path, sources: list[str], beam_size: int, threads: int, protect_spans: bool = True
) -> tuple[list[str], float]:
    from handler.model.loader import load_model

    config = RuntimeConfig(
        bundle_dir=bundle_dir, threads=threads, max_texts=BATCH, max_chars=10**7, beam_size=beam_size
    )
    service = TranslationService(load_model(config), config)
    options = TranslateOptions(beam_size=beam_size, protect_spans=protect_spans)
    began = time.perf_counter()
    out: list[str] = []
    for start in range(0, len(sources), BATCH):
        out.extend(service.translate_many(sources[start : start + BATCH], options))
    return out, time.perf_counter() - began


def evaluate_bundle(
    bundle_dir: Path, pairs: list[corpus.Pair], beam_size: int, threads: int = 2, protect_spans: bool = True
) -> dict[str, object]:
    hypotheses, seconds = translate_all(bundle_dir, [p.zh for p in pairs], beam_size, threads, protect_spans)
    by_source: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for pair, hypothesis in zip(pairs, hypotheses, strict=False):
        by_source[pair.source][0].append(hypothesis)
        by_source[pair.source][1].append(pair.en)
    overall = score(hypotheses, [p.en for p in pairs])
    return {
        **overall.as_dict(),
        "beam_size": beam_size,
        "seconds": round(seconds, 1),
        "by_source": {name: score(h, r).as_dict() for name, (h, r) in sorted(by_source.items())},
        "samples": [
            {"zh": p.zh, "reference": p.en, "output": h} for p, h in list(zip(pairs, hypotheses, strict=False))[:8]
        ],
    }


def fp32_bundle(checkpoint: str, int8_bundle: Path, work: Path) -> Path:
    """A bundle like ``int8_bundle`` but with the checkpoint's FP32 graphs (the export's pre-quantization step).

    The graphs are the same ones ``build.export`` verifies against PyTorch before quantizing; the tokenizer
    files and model spec are the INT8 bundle's, so the two are scored through identical runtime code.
    """
    import shutil

    from build.families.marian import load_checkpoint
    from build.families.marian.graphs import export_graphs

    out = work / "fp32"
    export_graphs(load_checkpoint(checkpoint).model, out)
    manifest = bundle.Manifest.from_dict(json.loads((int8_bundle / bundle.MANIFEST).read_text(encoding="utf-8")))
    tokenizer_files = [name for name in bundle.TOKENIZER_FILES if name in manifest.files]  # joint: one .spm
    for name in tokenizer_files:
        shutil.copyfile(int8_bundle / name, out / name)
    manifest.name = f"{manifest.name}-fp32"
    manifest.quantization = {"method": "none (FP32 reference)"}
    manifest.files = {name: bundle.file_entry(out / name) for name in [*bundle.MODEL_FILES, *tokenizer_files]}
    (out / bundle.MANIFEST).write_text(manifest.to_json(), encoding="utf-8")
    return out


def write_results(bundle_dir: Path, results: dict[str, object]) -> None:
    """Record ``results`` in the manifest and regenerate the model card (whose hash the manifest lists)."""
    from build.model_card import write_model_card

    manifest_path = bundle_dir / bundle.MANIFEST
    manifest = bundle.Manifest.from_dict(json.loads(manifest_path.read_text(encoding="utf-8")))
    earlier = manifest.quality
    if "fp32" not in results and "fp32" in earlier:  # the FP32 checkpoint may be gone: keep its measured figures
        results = {**results, "fp32_earlier": {"dev_set": earlier.get("dev_set"), **earlier["fp32"]}}
    elif "fp32_earlier" in earlier and "fp32" not in results:
        results = {**results, "fp32_earlier": earlier["fp32_earlier"]}
    manifest.quality = results
    write_model_card(bundle_dir, manifest)
    manifest.files[bundle.MODEL_CARD] = bundle.file_entry(bundle_dir / bundle.MODEL_CARD)
    manifest.write(manifest_path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build.evaluate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", type=Path, default=Path("model_artifacts/default"))
    parser.add_argument("--fp32-from", help="checkpoint folder: also score its FP32 ONNX export")
    parser.add_argument("--pairs", type=int, default=0, help="use only the first N dev pairs (default: all)")
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="record the figures in the bundle's manifest and card")
    parser.add_argument(
        "--no-protect-spans", action="store_true", help="the raw model: no span protection (handler.text.spans)"
    )
    args = parser.parse_args(argv)

    pairs = corpus.dev_pairs()
    if args.pairs:
        pairs = pairs[: args.pairs]
    print(f"scoring on {corpus.describe_dev_set(pairs)}", flush=True)
    results: dict[str, object] = {
        "dev_set": corpus.describe_dev_set(pairs),
        "metrics": "sacreBLEU (13a tokenization) and chrF++ (word_order=2), sacrebleu " + sacrebleu.__version__,
    }
    int8 = evaluate_bundle(args.bundle, pairs, args.beam_size, args.threads, not args.no_protect_spans)
    results["int8"] = int8
    print(f"INT8 {args.bundle}: BLEU {int8['bleu']} chrF++ {int8['chrf++']} ({int8['seconds']} s)", flush=True)
    if args.fp32_from:
        with tempfile.TemporaryDirectory() as work:
            reference = fp32_bundle(args.fp32_from, args.bundle, Path(work))
            fp32 = evaluate_bundle(reference, pairs, args.beam_size, args.threads, not args.no_protect_spans)
        results["fp32"] = fp32
        results["int8_minus_fp32_bleu"] = round(float(int8["bleu"]) - float(fp32["bleu"]), 2)  # type: ignore[arg-type]
        print(f"FP32 ONNX: BLEU {fp32['bleu']} chrF++ {fp32['chrf++']} ({fp32['seconds']} s)", flush=True)
    for name, s in int8["by_source"].items():  # type: ignore[attr-defined]
        print(f"  {name:14s} INT8 BLEU {s['bleu']:5.1f} chrF++ {s['chrf++']:5.1f} ({s['pairs']} pairs)")
    if args.write:
        write_results(args.bundle, results)
        print(f"wrote quality figures into {args.bundle / bundle.MANIFEST} and {bundle.MODEL_CARD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
