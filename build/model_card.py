"""The human-readable model card of a bundle, generated from its manifest (never edited by hand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from build.corpus import ALLOWED_SOURCES
from handler.model import bundle


def _table(rows: list[list[str]], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def render(manifest: bundle.Manifest) -> str:
    spec = manifest.model
    parts = [
        f"# Model card: `{manifest.name}`",
        "",
        f"Source model: `{manifest.source_model}`. Bundle hash `{manifest.bundle_hash()}`, format "
        f"{manifest.format_version}. Input normalisation: `{manifest.normalization}`.",
        "",
        "## Network",
        f"MarianMT (transformer encoder–decoder), d_model {spec.d_model}, {spec.encoder_layers} encoder / "
        f"{spec.decoder_layers} decoder layers, {spec.attention_heads} heads, vocabulary {spec.vocab_size}, "
        f"max positions {spec.max_positions}. Weights INT8 (dynamic quantization): "
        f"`{manifest.quantization}`.",
    ]
    training: dict[str, Any] = manifest.training
    data = training.get("data", {})
    if data:
        non_commercial = [name for name in data if ALLOWED_SOURCES.get(name) and ALLOWED_SOURCES[name].non_commercial]
        rows = [[name, f"{info['pairs']:,}", info["licence"]] for name, info in data.items()]
        total = sum(info["pairs"] for info in data.values())
        parts += [
            "",
            "## Training data",
            f"{total:,} sentence pairs from the licence-clean corpus committed with the repository in "
            "`data/corpus/train-*.zh-en.tsv.gz` (sources, licences, counts and cleaning in `data/corpus/SOURCES.md`; "
            "sources whose terms are unknown, non-redistributable or machine-translated were left out):",
            "",
            _table(rows, ["source", "pairs", "licence"]),
            "",
            "## Terms of use",
            (
                f"Trained partly on non-commercial share-alike data ({', '.join(non_commercial)}: CC BY-NC-SA 4.0). "
                "Use and redistribute the model for **non-commercial purposes only**, under CC BY-NC-SA 4.0, "
                "crediting the sources above (Tatoeba CC BY 2.0 FR, TICO-19, the UN Parallel Corpus, "
                "DailyDialog/XDailyDialog, 3AM, MSCTD, the Python documentation translators)."
                if non_commercial
                else "All training sources permit commercial use with attribution; credit the sources above."
            ),
        ]
    if training:
        parts += [
            "",
            "## Training",
            f"Weights: {training.get('weights', 'n/a')}. Steps {training.get('steps')}, epochs completed "
            f"{training.get('epochs')}, {training.get('train_hours')} h on 2 CPU cores. Config: "
            f"`{training.get('config', {})}`.",
        ]
        cooldown = training.get("cooldown")
        if cooldown:
            parts += [
                "",
                f"The last {cooldown['steps']} steps (from step {cooldown['from_step']}) were a cooldown: the learning "
                "rate fell linearly from the inverse-square-root schedule to zero.",
            ]
        evals = training.get("evals", [])
        if evals:
            rows = [
                [str(e["step"]), f"{e['train_hours']:.2f}", f"{e['bleu']:.1f}", f"{e['chrf++']:.1f}"] for e in evals
            ]
            parts += [
                "",
                "Training curve (PyTorch, greedy, on the first 500 dev pairs: more short dialogue lines than the whole "
                "dev set, so these figures run higher than its; see Quality for the whole set):",
                "",
                _table(rows, ["step", "hours", "BLEU", "chrF++"]),
            ]
    quality: dict[str, Any] = manifest.quality
    if quality.get("int8"):
        int8, fp32 = quality["int8"], quality.get("fp32")
        rows = []
        if fp32:
            rows.append(["FP32 ONNX", f"{fp32['bleu']:.2f}", f"{fp32['chrf++']:.2f}"])
        elif quality.get("fp32_earlier"):
            earlier = quality["fp32_earlier"]
            label = "FP32 ONNX (measured earlier, same weights)"
            rows.append([label, f"{earlier['bleu']:.2f}", f"{earlier['chrf++']:.2f}"])
        rows.append(["INT8 ONNX (this bundle)", f"{int8['bleu']:.2f}", f"{int8['chrf++']:.2f}"])
        parts += [
            "",
            "## Quality",
            f"{quality.get('dev_set')}, beam {int8.get('beam_size')}, through the runtime; {quality.get('metrics')}.",
            "",
            _table(rows, ["weights", "BLEU", "chrF++"]),
            "",
            "By dev source (INT8):",
            "",
            _table(
                [[n, str(s["pairs"]), f"{s['bleu']:.1f}", f"{s['chrf++']:.1f}"] for n, s in int8["by_source"].items()],
                ["source", "pairs", "BLEU", "chrF++"],
            ),
        ]
    if data:
        parts += [
            "",
            "## Rebuilding it from a clone",
            "Everything needed is in the repository: the data (`data/corpus/`), the tokenizer and a resumable "
            'checkpoint (`model_artifacts/training-checkpoint/`). `make train TRAIN_ARGS="--fresh --hours 5"` '
            "trains from scratch (or, without `--fresh`, resumes the tracked checkpoint), "
            '`make train TRAIN_ARGS="--cooldown-steps 1200"` then '
            '`make train TRAIN_ARGS="--finalize --from-cooldown"` write `.train/final`, '
            "`make model MODEL=.train/final NAME=default LABEL=default-zh-en FORCE=1` builds and verifies the bundle "
            "and `make eval EVAL_ARGS=--write` scores it. This model took "
            f"{training.get('train_hours')} h of training on 2 CPU cores; see the README for the other steps' times.",
        ]
    parts += [
        "",
        "## Limits",
        "A small model trained for a few CPU hours: fluent on short everyday sentences, weak on long formal or "
        "technical text, names and rare words; it can omit or repeat content (the runtime's repetition guard is "
        "on by default). Traditional characters were rare in training. For production quality build "
        "`Helsinki-NLP/opus-mt-zh-en` with `make model MODEL=Helsinki-NLP/opus-mt-zh-en` on a machine with network.",
        "",
    ]
    return "\n".join(parts)


def write_model_card(bundle_dir: Path, manifest: bundle.Manifest) -> Path:
    path = bundle_dir / bundle.MODEL_CARD
    path.write_text(render(manifest), encoding="utf-8")
    return path
