"""The JSON of per-segment confidence (``"scores": true``; ``handler.model.confidence``), shared by the HTTP API
and the CLI so both say the same thing in the same words."""

from __future__ import annotations

from typing import Any

from handler.model.confidence import ScoredSegment

SCORES_FIELD = "scores"

# the JSON Schema of what segment_json writes (the OpenAPI document's scored segment): the two side by side
_OFFSETS: dict[str, Any] = {
    "type": ["array", "null"],
    "items": {"type": "integer", "minimum": 0},
    "minItems": 2,
    "maxItems": 2,
    "description": "[start, end) character offsets; null where the output's markup escaping hides the text",
}
SCORED_SEGMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "source",
        "translation",
        "source_span",
        "translation_span",
        "confidence",
        "low_confidence",
        "reasons",
        "flags",
        "model_score",
    ],
    "properties": {
        "source": {"type": "string"},
        "translation": {"type": "string"},
        "source_span": _OFFSETS,
        "translation_span": _OFFSETS,
        "confidence": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "the expected sentence chrF / 100 of translations the model scored like this one",
        },
        "low_confidence": {"type": "boolean"},
        "reasons": {"type": "array", "items": {"type": "string"}},
        "flags": {
            "type": "object",
            "additionalProperties": False,
            "required": [
                "repetition_guard",
                "span_recovered",
                "length_ratio",
                "length_ratio_out_of_range",
                "untranslated",
                "lost_source",
            ],
            "properties": {
                "repetition_guard": {"type": "boolean"},
                "span_recovered": {"type": "boolean"},
                "length_ratio": {"type": "number", "minimum": 0},
                "length_ratio_out_of_range": {"type": "boolean"},
                "untranslated": {"type": "boolean"},
                "lost_source": {
                    "type": "boolean",
                    "description": "a run of Chinese between the sentence's markup came back with no word in its place",
                },
            },
        },
        "model_score": {"type": ["number", "null"], "description": "mean log-probability per output token"},
    },
}


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
            "lost_source": bool(a.lost_source),
        },
        "model_score": None if a.model_score is None else round(a.model_score, 4),
    }


def segments_json(segments: tuple[ScoredSegment, ...]) -> list[dict[str, Any]]:
    return [segment_json(segment) for segment in segments]
