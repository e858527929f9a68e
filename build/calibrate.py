"""Calibrate a bundle's per-sentence confidence on the repository's dev set, and show whether it means something.

    python -m build.calibrate --bundle model_artifacts/default [--pairs N] [--write]

Translates the repository's dev set (``data/corpus``, whatever ``TRANSLATE_CORPUS_DIR`` says: every bundle is
calibrated on the same sentences) through the real service with ``scores`` on (``handler.model.confidence``),
scores each translation against its reference with sentence chrF (sacreBLEU), and fits the knots that map the
model's score (mean log-probability per token) to the expected chrF / 100 (``confidence.fit_knots``). The flag
threshold is the dev set's lowest decile of confidence; the usual length ratio runs from its 2nd percentile to
1.5 x its 99.5th.

**Does it separate bad from good translations?** Fitted on half the dev set (even positions) and measured on the
other half (odd positions), so no sentence is judged by a calibration it helped make, it prints

* the mean sentence chrF of the lowest-confidence 10 % against the other 90 %;
* among flagged sentences and among the others: the share with Chinese left in the output, and the share with a
  visible repetition (a word 3-gram twice, or one word three times in a row);
* the rank correlation (Spearman) of confidence and sentence chrF.

Only dev sentences the service translates as one segment are used (the reference is per sentence). ``--write``
stores the calibration fitted on all of them in the manifest's ``confidence`` section and the figures in
``confidence_evaluation``; the runtime reads the first at load (``TranslationService.calibration``).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sacrebleu

from build import corpus
from handler.config import RuntimeConfig
from handler.model import bundle
from handler.model.confidence import Calibration, SegmentScore, assess, fit_knots, percentile
from handler.service import TranslateOptions, TranslationService

BATCH = 64
LOW_SHARE = 0.10  # the share of lowest-confidence sentences compared with the rest (and the flag threshold)
# the usual length ratio: from the dev set's 2nd percentile (the shortest 2 % score a sentence chrF of 35.0 against
# 42.7 for all, on the default model) to 1.5 x its 99.5th (its longest outputs score better than the rest, 56.6 for
# the top 2 %, so only a runaway far beyond them is flagged)
SHORT_PERCENTILE = 0.02
LONG_PERCENTILE, LONG_MARGIN = 0.995, 1.5
_WORD = re.compile(r"[A-Za-z0-9']+")


@dataclass(frozen=True)
class Scored:
    """One dev sentence: the model's score of its one segment, the segment's facts and its quality."""

    score: SegmentScore
    english: str
    chrf: float  # sentence chrF, 0..100


def has_repetition(english: str) -> bool:
    """A repetition a reader sees: some word three times in a row, or a word 3-gram twice."""
    words = [word.lower() for word in _WORD.findall(english)]
    if any(words[i] == words[i + 1] == words[i + 2] for i in range(len(words) - 2)):
        return True
    trigrams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    return len(trigrams) != len(set(trigrams))


def translate_dev_set(bundle_dir: Path, pairs: list[corpus.Pair], beam_size: int, threads: int) -> list[Scored]:
    from handler.model.loader import load_model

    config = RuntimeConfig(
        bundle_dir=bundle_dir, threads=threads, max_texts=BATCH, max_chars=10**7, beam_size=beam_size
    )
    service = TranslationService(load_model(config), config)
    service.calibration = Calibration()  # raw scores: the one being fitted must not colour them
    options = TranslateOptions(beam_size=beam_size, scores=True)
    found: list[Scored] = []
    for start in range(0, len(pairs), BATCH):
        chunk = pairs[start : start + BATCH]
        for pair, detail in zip(chunk, service.translate_detailed([p.zh for p in chunk], options), strict=True):
            score = detail.segments[0].score if len(detail.segments) == 1 else None
            if score is None:
                continue
            chrf = sacrebleu.sentence_chrf(detail.text, [pair.en]).score
            found.append(Scored(score, detail.text, chrf))
        print(f"  {min(start + BATCH, len(pairs))}/{len(pairs)} dev sentences", file=sys.stderr, flush=True)
    return found


def fit(scored: list[Scored]) -> Calibration:
    knots = fit_knots([s.score.mean_log_prob for s in scored], [s.chrf / 100 for s in scored])
    provisional = Calibration(knots, 0.0, (0.0, float("inf")))
    confidences = [provisional.confidence(s.score.mean_log_prob) for s in scored]
    ratios = [s.score.output_tokens / max(1, s.score.source_tokens) for s in scored]
    low, high = percentile(ratios, SHORT_PERCENTILE), LONG_MARGIN * percentile(ratios, LONG_PERCENTILE)
    # the threshold must flag the lowest decile: a hair above its largest confidence when knots plateau
    threshold = percentile(confidences, LOW_SHARE) + 1e-6
    return Calibration(knots, min(1.0, threshold), (low, max(high, low + 1e-3)))


def _spearman(xs: list[float], ys: list[float]) -> float:
    def ranks(values: list[float]) -> list[float]:
        order = sorted(range(len(values)), key=values.__getitem__)
        result = [0.0] * len(values)
        position = 0
        while position < len(order):
            end = position
            while end + 1 < len(order) and values[order[end + 1]] == values[order[position]]:
                end += 1
            for index in order[position : end + 1]:
                result[index] = (position + end) / 2
            position = end + 1
        return result

    try:
        return statistics.correlation(ranks(xs), ranks(ys))
    except statistics.StatisticsError:  # fewer than two values, or one side constant (a flat calibration)
        return 0.0


def separation(scored: list[Scored], calibration: Calibration) -> dict[str, Any]:
    """How well ``calibration``'s confidence and flags separate bad translations from good ones on ``scored``."""
    assessed = [(s, assess(s.score, _has_chinese(s.english), calibration)) for s in scored]
    # ties (a calibration's plateaus) broken by the raw score, which the confidence follows
    by_confidence = sorted(assessed, key=lambda pair: (pair[1].confidence, pair[0].score.mean_log_prob))
    cut = max(1, round(LOW_SHARE * len(by_confidence)))
    lowest, rest = by_confidence[:cut], by_confidence[cut:]
    flagged = [pair for pair in assessed if pair[1].low_confidence]
    unflagged = [pair for pair in assessed if not pair[1].low_confidence]

    def share(group: list[tuple[Scored, Any]], bad: Any) -> float:
        return round(sum(1 for s, a in group if bad(s, a)) / len(group), 4) if group else 0.0

    def chinese_left(s: Scored, a: Any) -> bool:
        return bool(a.untranslated)

    def repeated(s: Scored, a: Any) -> bool:
        return has_repetition(s.english)

    def mean_chrf(group: list[tuple[Scored, Any]]) -> float:
        return round(statistics.fmean(s.chrf for s, _ in group), 2) if group else 0.0

    return {
        "sentences": len(assessed),
        "lowest_10pct_chrf": mean_chrf(lowest),
        "other_90pct_chrf": mean_chrf(rest),
        "repetition_lowest_10pct": share(lowest, repeated),
        "repetition_other_90pct": share(rest, repeated),
        "flagged": len(flagged),
        "flagged_share": round(len(flagged) / len(assessed), 4) if assessed else 0.0,
        "flagged_chrf": mean_chrf(flagged),
        "unflagged_chrf": mean_chrf(unflagged),
        "chinese_left_flagged": share(flagged, chinese_left),
        "chinese_left_unflagged": share(unflagged, chinese_left),
        "repetition_flagged": share(flagged, repeated),
        "repetition_unflagged": share(unflagged, repeated),
        "bad_flagged": share(flagged, lambda s, a: chinese_left(s, a) or repeated(s, a)),
        "bad_unflagged": share(unflagged, lambda s, a: chinese_left(s, a) or repeated(s, a)),
        "spearman_confidence_chrf": round(
            _spearman([a.confidence for _, a in assessed], [s.chrf for s, _ in assessed]), 3
        ),
    }


def _has_chinese(text: str) -> bool:
    from handler.text.spans import has_chinese

    return has_chinese(text)


def report(figures: dict[str, Any]) -> str:
    f = figures
    return "\n".join(
        [
            f"held-out dev sentences: {f['sentences']}",
            f"  sentence chrF, lowest-confidence 10 %: {f['lowest_10pct_chrf']:.1f}   the other 90 %: "
            f"{f['other_90pct_chrf']:.1f}",
            f"  a repetition: {100 * f['repetition_lowest_10pct']:.1f} % of the lowest 10 %, "
            f"{100 * f['repetition_other_90pct']:.1f} % of the other 90 %",
            f"  flagged: {f['flagged']} ({100 * f['flagged_share']:.1f} %), chrF {f['flagged_chrf']:.1f} against "
            f"{f['unflagged_chrf']:.1f} unflagged",
            f"  Chinese left: {100 * f['chinese_left_flagged']:.1f} % of flagged, "
            f"{100 * f['chinese_left_unflagged']:.1f} % of unflagged",
            f"  a repetition: {100 * f['repetition_flagged']:.1f} % of flagged, "
            f"{100 * f['repetition_unflagged']:.1f} % of unflagged",
            f"  either: {100 * f['bad_flagged']:.1f} % of flagged, {100 * f['bad_unflagged']:.1f} % of unflagged",
            f"  Spearman (confidence, sentence chrF): {f['spearman_confidence_chrf']:.3f}",
        ]
    )


def calibrate(bundle_dir: Path, pairs: list[corpus.Pair], beam_size: int, threads: int) -> dict[str, Any]:
    scored = translate_dev_set(bundle_dir, pairs, beam_size, threads)
    if len(scored) < 40:
        raise SystemExit(f"only {len(scored)} one-segment dev sentences were translated; at least 40 are needed")
    held_out = separation(scored[1::2], fit(scored[0::2]))
    shipped = fit(scored)
    return {
        "calibration": shipped,
        "evaluation": {
            "dev_set": corpus.describe_dev_set(pairs, corpus.REPOSITORY_CORPUS_DIR),
            "beam_size": beam_size,
            "fitted_on": "even positions; measured on odd positions (held out)",
            **held_out,
        },
    }


def write(bundle_dir: Path, calibration: Calibration, evaluation: dict[str, Any]) -> None:
    manifest_path = bundle_dir / bundle.MANIFEST
    manifest = bundle.Manifest.from_dict(json.loads(manifest_path.read_text(encoding="utf-8")))
    manifest.confidence = {**calibration.to_dict(), "evaluation": evaluation}
    manifest.write(manifest_path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build.calibrate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", type=Path, default=Path("model_artifacts/default"))
    parser.add_argument("--pairs", type=int, default=0, help="use only the first N dev pairs (default: all)")
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="store the calibration in the bundle's manifest")
    args = parser.parse_args(argv)
    pairs = corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR)  # the repository's dev set, for every bundle alike
    if args.pairs:
        pairs = pairs[: args.pairs]
    print(f"calibrating {args.bundle} on {corpus.describe_dev_set(pairs, corpus.REPOSITORY_CORPUS_DIR)}", flush=True)
    result = calibrate(args.bundle, pairs, args.beam_size, args.threads)
    print(report(result["evaluation"]))
    calibration: Calibration = result["calibration"]
    print(f"calibration: {json.dumps(calibration.to_dict())}")
    if args.write:
        write(args.bundle, calibration, result["evaluation"])
        print(f"wrote the calibration into {args.bundle / bundle.MANIFEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
