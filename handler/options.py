"""A request's decoding options (``TranslateOptions``), their names and ranges: a leaf of the core, imported by the
service, the HTTP surfaces, the storage jobs and the command line."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass

from handler.config import MAX_BEAM_SIZE
from handler.errors import InvalidRequestError
from handler.text.glossary import MAX_FILE_TERMS, Glossary
from handler.text.markup import FORMATS
from handler.text.script_conversion import AUTO, canonical_variant

OPTION_NAMES = (
    "beam_size",
    "length_penalty",
    "max_length_ratio",
    "repetition_guard",
    "format",
    "glossary",
    "protect_spans",
    "source",
    "scores",
)
LENGTH_PENALTY_RANGE = (0.0, 2.0)
MAX_LENGTH_RATIO_RANGE = (1.0, 4.0)
MAX_ALTERNATIVES = 5  # alternatives per text (translate_alternatives); more is an InvalidRequestError


def shown_value(value: object) -> str:
    """A value as the user wrote it (JSON where possible)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class TranslateOptions:
    """Per-request decoding choices; every field is validated on construction (``InvalidRequestError``)."""

    beam_size: int | None = None  # None -> RuntimeConfig.beam_size; allowed 1..8
    # the exponent of the model family's length penalty; None = the model's own (Marian: 1.0, score = sum of
    # log-probabilities / length ** 1.0; CSANMT: the bundle's GNMT alpha, 0.6; see handler.model.families)
    length_penalty: float | None = None
    max_length_ratio: float = 2.0  # output tokens <= ratio x source tokens + 10 (and < the model's positions)
    repetition_guard: bool = True  # ban degenerate loops (see handler.model.decoding.RepetitionGuard)
    format: str = "text"  # "text", "html" (text nodes, alt/title) or "markdown" (see handler.text.markup)
    # the request's glossary, merged over the deployment's (TRANSLATE_GLOSSARY_FILE); a mapping becomes a Glossary
    glossary: Glossary | None = None
    protect_spans: bool = True  # URLs, numbers, code, names... kept intact (handler.text.spans); false = raw model
    # the texts' Chinese variant: "auto" (detected), "zh-Hans", "zh-Hant", "zh-TW", "zh-HK"; Traditional text is
    # converted to the model's script first (handler.text.script_conversion)
    source: str = AUTO
    # each translation's segments with a confidence and flags (handler.model.confidence); changes no translation
    scores: bool = False

    def __post_init__(self) -> None:
        if self.beam_size is not None and not (
            isinstance(self.beam_size, int)
            and not isinstance(self.beam_size, bool)
            and 1 <= self.beam_size <= MAX_BEAM_SIZE
        ):
            raise InvalidRequestError(
                f"beam_size must be an integer from 1 to {MAX_BEAM_SIZE}; got {shown_value(self.beam_size)}"
            )
        for name, (low, high) in (
            ("length_penalty", LENGTH_PENALTY_RANGE),
            ("max_length_ratio", MAX_LENGTH_RATIO_RANGE),
        ):
            value = getattr(self, name)
            if value is None and name == "length_penalty":
                continue
            if not (_is_number(value) and math.isfinite(value) and low <= value <= high):
                raise InvalidRequestError(f"{name} must be a number from {low} to {high}; got {shown_value(value)}")
        for name in ("repetition_guard", "protect_spans", "scores"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidRequestError(f"{name} must be true or false; got {shown_value(getattr(self, name))}")
        if self.format not in FORMATS:
            raise InvalidRequestError(f"format must be one of {', '.join(FORMATS)}; got {shown_value(self.format)}")
        if self.glossary is not None and not isinstance(self.glossary, Glossary):
            object.__setattr__(self, "glossary", Glossary.from_mapping(self.glossary))
        object.__setattr__(self, "source", canonical_variant(self.source))

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> TranslateOptions:
        """Options from user JSON: unknown keys are an error listing the allowed ones; ``null`` means the default."""
        if not isinstance(data, Mapping):
            raise InvalidRequestError(f"options must be an object with the keys {', '.join(OPTION_NAMES)}")
        unknown = sorted(str(key) for key in data if key not in OPTION_NAMES)
        if unknown:
            raise InvalidRequestError(
                f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                f"allowed options: {', '.join(OPTION_NAMES)}"
            )
        values = {key: value for key, value in data.items() if value is not None}
        return cls(**values)  # type: ignore[arg-type]  # __post_init__ checks every type

    @classmethod
    def from_stored(cls, data: Mapping[str, object]) -> TranslateOptions:
        """Options a document job recorded (``from_mapping``'s JSON values): its glossary may be a stored one (DeepL's
        glossary API), as large as a deployment's glossary file, not only a request's."""
        values = dict(data)
        if values.get("glossary") is not None and not isinstance(values["glossary"], Glossary):
            values["glossary"] = Glossary.from_mapping(
                values["glossary"], limit=MAX_FILE_TERMS, where="the document's glossary"
            )
        return cls.from_mapping(values)
