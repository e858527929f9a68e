"""The JSON of per-segment confidence (``"scores": true``; ``handler.model.confidence``), shared by the HTTP API
and the CLI so both say the same thing in the same words."""

from __future__ import annotations

from typing import Any

from handler.model.confidence import ScoredSegment

SCORES_FIELD = "scores"


def segment_json(segment: ScoredSegment) -> dict[str, Any]:
    """One segment: its source and English with their character offsets (``[start, end)``, null where not
    found as written), its confidence (0..1), whether it is flagged and why, and the flags."""
    a = segment.assessment
    return {
        "source": segment.source,
        "translation": segment.translation,
        "source_span": list(segment.source_span) if segment.source_span else None,
        "translation_span": list(segment.translation_span) if segment.translation_span else None,
        "confidence": round(a.confidence, 4),
        "low_confidence": a.low_confidence,
        "reasons": list(a.reasons),
        "flags": {
            "repetition_guard": a.repetition_guard,
            "span_recovered": a.span_recovered,
            "length_ratio": round(a.length_ratio, 3),
            "length_ratio_out_of_range": a.length_ratio_out_of_range,
            "untranslated": a.untranslated,
        },
        "model_score": None if a.model_score is None else round(a.model_score, 4),
    }


def segments_json(segments: tuple[ScoredSegment, ...]) -> list[dict[str, Any]]:
    return [segment_json(segment) for segment in segments]
