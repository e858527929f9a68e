"""How sure the model was of each translated segment: a confidence between 0 and 1, and the flags behind it.

The **score** is the model's own: the mean log-probability per output token of the hypothesis the search chose
(``Hypothesis.mean_log_prob``, length-normalized, so a long sentence is not "less sure" for being long). Raw
scores do not mean the same in two models (a small model spreads its probability thinner), so each bundle carries
a **calibration** measured on the repository's dev set (``python -m build.calibrate``, written into the manifest's
``confidence`` section): knots mapping the score to the mean sentence chrF of the dev sentences that scored
about as much, pooled so the mapping never falls. The confidence of a segment is that expected chrF / 100, read
off the knots by linear interpolation: 0.4 says "sentences this model scored like this one reached a chrF of
about 40 against a human translation". A bundle without a calibration gets ``exp(score)``, the geometric mean of
its tokens' probabilities, and says so (``calibrated: false``).

The **flags** are facts, not estimates:

* ``repetition_guard``: the guard banned a token the model preferred, somewhere on the chosen output's path;
* ``span_recovered``: a protected span (number, URL, name...) was lost by the model and put back by the
  placeholder or stitching fallback (``handler.text.spans``), so the sentence around it may read oddly;
* ``length_ratio``: output tokens / source tokens, with ``length_ratio_out_of_range`` when it lies outside the
  usual range of the dev set's translations (from its 2nd percentile, under which something was probably left
  out, to 1.5 x its 99.5th: a runaway output);
* ``untranslated``: Chinese is left in the output;
* ``lost_source``: a run of Chinese between a sentence's markup (``<b>你好</b>，世界``) came back with no word in its
  place: the model dropped it, and the markup around it would hide that (``handler.text.markup.lost_runs``).

A segment is **flagged** (``low_confidence``) when its confidence is under the calibration's threshold (the dev
set's lowest decile), Chinese is left, the guard fired, the length ratio is out of range or a run of the source was
lost; ``reasons`` says
which, in words for a tooltip. ``span_recovered`` is reported but flags nothing: on the default model's dev set
the sentences it marks score the same chrF as the others (42.1 against 42.7, ``python -m build.calibrate``).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from handler.errors import BundleError
from handler.model.decoding import Hypothesis

DEFAULT_THRESHOLD = 0.3  # uncalibrated bundles: exp(score) under this is flagged
DEFAULT_LENGTH_RATIO = (0.4, 3.0)  # uncalibrated bundles: output/source tokens outside this is flagged


@dataclass(frozen=True)
class Calibration:
    """A bundle's mapping from score to confidence, with the thresholds its dev set gave."""

    knots: tuple[tuple[float, float], ...] = ()  # (mean log-probability, confidence), both increasing
    threshold: float = DEFAULT_THRESHOLD  # a confidence under this is flagged
    length_ratio: tuple[float, float] = DEFAULT_LENGTH_RATIO

    @property
    def calibrated(self) -> bool:
        return bool(self.knots)

    def confidence(self, mean_log_prob: float) -> float:
        """The confidence of a segment whose hypothesis scored ``mean_log_prob`` (0..1)."""
        if not math.isfinite(mean_log_prob):
            return 0.0
        if not self.knots:
            return min(1.0, math.exp(min(0.0, mean_log_prob)))
        scores = [score for score, _ in self.knots]
        if mean_log_prob <= scores[0]:
            return self.knots[0][1]
        if mean_log_prob >= scores[-1]:
            return self.knots[-1][1]
        right = bisect.bisect_right(scores, mean_log_prob)
        (x0, y0), (x1, y1) = self.knots[right - 1], self.knots[right]
        return y0 + (y1 - y0) * (mean_log_prob - x0) / (x1 - x0) if x1 > x0 else y1

    def to_dict(self) -> dict[str, Any]:
        return {
            "knots": [[round(score, 4), round(value, 4)] for score, value in self.knots],
            "threshold": round(self.threshold, 4),
            "length_ratio": [round(self.length_ratio[0], 3), round(self.length_ratio[1], 3)],
        }

    @classmethod
    def from_manifest(cls, section: Mapping[str, Any], where: str) -> Calibration:
        """The manifest's ``confidence`` section (empty: uncalibrated); a malformed one is a ``BundleError``."""
        if not section:
            return cls()
        try:
            knots = tuple((float(score), float(value)) for score, value in section["knots"])
            threshold = float(section["threshold"])
            low, high = (float(value) for value in section["length_ratio"])
        except (KeyError, TypeError, ValueError) as error:
            raise BundleError(
                f'{where} "confidence" must hold "knots" ([[score, confidence], ...]), "threshold" and '
                f'"length_ratio" ([low, high]); rewrite it with: python -m build.calibrate --bundle <bundle> '
                f"({error})"
            ) from error
        values = [value for _, value in knots]
        scores = [score for score, _ in knots]
        if (
            len(knots) < 2
            or scores != sorted(scores)
            or values != sorted(values)
            or not all(0.0 <= value <= 1.0 for value in values)
            or not 0.0 <= threshold <= 1.0
            or not 0.0 <= low < high
        ):
            raise BundleError(
                f'{where} "confidence" is not a valid calibration (at least 2 knots, scores and confidences '
                f"increasing, confidences and threshold within 0..1, length_ratio low < high); rewrite it with: "
                f"python -m build.calibrate --bundle <bundle>"
            )
        return cls(knots, threshold, (low, high))


def fit_knots(scores: Sequence[float], qualities: Sequence[float], bins: int = 10) -> tuple[tuple[float, float], ...]:
    """Knots from dev-set pairs (score, quality 0..1): equal-count bins by score, each knot at its bin's mean
    score and mean quality, adjacent bins pooled (pool adjacent violators) until the qualities never fall; at
    least two knots (a flat line when everything pooled, as for a random model)."""
    pairs = sorted(zip(scores, qualities, strict=True))
    if len(pairs) < 2 * bins:
        bins = max(1, len(pairs) // 2)
    size = len(pairs) / bins
    blocks: list[list[float]] = []  # [score sum, quality sum, count]
    for number in range(bins):
        chunk = pairs[round(number * size) : round((number + 1) * size)]
        if not chunk:
            continue
        blocks.append([sum(s for s, _ in chunk), sum(q for _, q in chunk), float(len(chunk))])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            last = blocks.pop()
            blocks[-1] = [a + b for a, b in zip(blocks[-1], last, strict=True)]
    knots = tuple((score / count, quality / count) for score, quality, count in blocks)
    if len(knots) == 1:  # everything pooled (quality never rose with the score): one flat line over the range
        low, high = pairs[0][0], pairs[-1][0]
        knots = ((min(low, high - 1.0), knots[0][1]), (high, knots[0][1]))
    return knots


def percentile(values: Sequence[float], share: float) -> float:
    """The value under which ``share`` of ``values`` lie (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


@dataclass(frozen=True)
class SegmentScore:
    """What the model said of one segment: its hypotheses' scores (a stitched segment has several) and how the
    protected translation was made (``handler.text.spans.Translation.method``)."""

    hypotheses: tuple[Hypothesis, ...]
    source_tokens: int
    method: str

    @property
    def mean_log_prob(self) -> float:
        tokens = sum(hypothesis.scored_tokens for hypothesis in self.hypotheses)
        return sum(hypothesis.log_prob for hypothesis in self.hypotheses) / tokens if tokens else 0.0

    @property
    def output_tokens(self) -> int:
        return sum(len(hypothesis.ids) for hypothesis in self.hypotheses)


RECOVERED_METHODS = frozenset({"placeholders", "stitched"})


@dataclass(frozen=True)
class Assessment:
    """One segment's confidence and flags, as the API reports them."""

    confidence: float
    repetition_guard: bool
    span_recovered: bool
    length_ratio: float
    length_ratio_out_of_range: bool
    untranslated: bool
    low_confidence: bool
    reasons: tuple[str, ...]
    model_score: float | None  # the mean log-probability; None where the model was not asked (nothing to translate)
    lost_source: tuple[str, ...] = ()  # the runs of Chinese the translation dropped (``lost_runs``)


def assess(
    score: SegmentScore | None, english_has_chinese: bool, calibration: Calibration, lost: Sequence[str] = ()
) -> Assessment:
    """The assessment of a segment; ``score`` None: text the model never saw (no Chinese in it), kept as is;
    ``lost``: the runs of its source the translation dropped."""
    if score is None or not score.hypotheses:
        left = ("Chinese is left in the translation",) if english_has_chinese else ()
        return Assessment(1.0, False, False, 1.0, False, english_has_chinese, bool(left), left, None)
    model_score = score.mean_log_prob
    confidence = calibration.confidence(model_score)
    guard = any(hypothesis.guard_fired for hypothesis in score.hypotheses)
    recovered = score.method in RECOVERED_METHODS
    ratio = score.output_tokens / max(1, score.source_tokens)
    low, high = calibration.length_ratio
    out_of_range = not low <= ratio <= high
    reasons: list[str] = []
    if confidence < calibration.threshold:
        reasons.append(f"the model was unsure (confidence {confidence:.2f}, flagged under {calibration.threshold:.2f})")
    if english_has_chinese:
        reasons.append("Chinese is left in the translation")
    if guard:
        reasons.append("the model tried to repeat itself and the repetition guard stopped it")
    if out_of_range:
        reasons.append(
            f"the translation is {'short' if ratio < low else 'long'} for its source "
            f"({ratio:.2f} output tokens per source token; usual {low:.2f} to {high:.2f})"
        )
    if lost:
        reasons.append(f"part of the source has no translation: {' / '.join(lost)}")
    return Assessment(
        confidence=confidence,
        repetition_guard=guard,
        span_recovered=recovered,
        length_ratio=ratio,
        length_ratio_out_of_range=out_of_range,
        untranslated=english_has_chinese,
        low_confidence=bool(reasons),
        reasons=tuple(reasons),
        model_score=model_score,
        lost_source=tuple(lost),
    )


@dataclass(frozen=True)
class ScoredSegment:
    """One translated segment of a text: where it is in the source and in the translation (character offsets,
    end exclusive; None where the output's markup escaping hides it), and its assessment."""

    source: str
    translation: str
    source_span: tuple[int, int] | None
    translation_span: tuple[int, int] | None
    assessment: Assessment
    score: SegmentScore | None = None  # what the assessment was made from (None: the model never saw it)


def locate(text: str, part: str, start: int) -> tuple[int, int] | None:
    """``part``'s offsets in ``text`` at or after ``start``, or None when it is not there as written."""
    if not part:
        return None
    found = text.find(part, start)
    return None if found < 0 else (found, found + len(part))
