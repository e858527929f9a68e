"""A request's decoding options (``TranslateOptions``), declared once: each field's type, range and description sit in
its metadata (``option``), and both the validation on construction and the OpenAPI schema
(``TranslateOptions.json_schema``, used by ``handler.api.openapi``) are read from there, so an option added here is
validated and described with no other edit. A leaf of the core, imported by the service, the HTTP surfaces, the
storage jobs and the command line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from handler.config import MAX_BEAM_SIZE
from handler.errors import InvalidRequestError
from handler.text.glossary import MAX_FILE_TERMS, MAX_REQUEST_TERMS, MAX_TARGET_CHARS, MAX_TERM_CHARS, Glossary
from handler.text.markup import FORMATS
from handler.text.script_conversion import AUTO, VARIANTS, canonical_variant
from handler.text.spans import HAN_CHARACTER

LENGTH_PENALTY_RANGE = (0.0, 2.0)
MAX_LENGTH_RATIO_RANGE = (1.0, 4.0)
MAX_ALTERNATIVES = 5  # alternatives per text (translate_alternatives); more is an InvalidRequestError

# what handler.text.glossary takes, as JSON Schema patterns: a term holds a Han character, a target is not blank, and
# neither holds a line break ("(?![\\s\\S])" ends the text: "$" would also match before a final line break)
_NO_BREAK = "[^\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]*"
TEXT_END = "(?![\\s\\S])"
GLOSSARY_TERM_PATTERN = f"^{_NO_BREAK}{HAN_CHARACTER}{_NO_BREAK}{TEXT_END}"
GLOSSARY_TARGET_PATTERN = f"^{_NO_BREAK}\\S{_NO_BREAK}{TEXT_END}"


def _accepted(spelling: str) -> bool:
    try:
        canonical_variant(spelling)
    except InvalidRequestError:
        return False
    return True


# the spellings of a Chinese variant the documents list (canonical_variant reads them in any case)
_SPELLINGS = ("zh", "zh-CN", "zh-SG", "zh-Hans", "zt", "zh-Hant", "zh-TW", "zh-HK", "zh-MO", "auto")
SOURCE_SPELLINGS = tuple(spelling for spelling in dict.fromkeys((*VARIANTS, *_SPELLINGS)) if _accepted(spelling))


def shown_value(value: object) -> str:
    """A value as the user wrote it (JSON where possible)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


@dataclass(frozen=True)
class OptionSpec:
    """What one option takes: its JSON Schema (``type`` with ``minimum``/``maximum``, or ``enum``), checked on
    construction and written into the OpenAPI document; ``convert``, where given, reads and checks the value instead
    (a glossary mapping becomes a ``Glossary``, a variant's spelling its canonical name)."""

    description: str
    schema: Mapping[str, Any]
    convert: Callable[[Any], Any] | None = None

    def check(self, name: str, value: object) -> Any:
        """``value`` as the option holds it, or ``InvalidRequestError`` saying what is allowed."""
        if self.convert is not None:
            return self.convert(value)
        kind, low, high = self.schema.get("type"), self.schema.get("minimum"), self.schema.get("maximum")
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if kind == "boolean":
            allowed, fits = "true or false", isinstance(value, bool)
        elif kind == "integer":
            allowed, fits = f"an integer from {low} to {high}", number and isinstance(value, int)
        elif kind == "number":
            allowed, fits = f"a number from {low} to {high}", number and math.isfinite(value)  # type: ignore[arg-type]
        else:
            enum = tuple(self.schema["enum"])
            allowed, fits = f"one of {', '.join(enum)}", isinstance(value, str) and value in enum
        if fits and kind in ("integer", "number"):
            fits = (low is None or low <= value) and (high is None or value <= high)  # type: ignore[operator]
        if not fits:
            raise InvalidRequestError(f"{name} must be {allowed}; got {shown_value(value)}")
        return value


def option(
    default: Any, description: str, schema: Mapping[str, Any], convert: Callable[[Any], Any] | None = None
) -> Any:
    """A field of ``TranslateOptions`` with its rule (``OptionSpec``) in the field's metadata."""
    return field(default=default, metadata={"option": OptionSpec(description, schema, convert)})


def _glossary(value: object) -> Glossary:
    return value if isinstance(value, Glossary) else Glossary.from_mapping(value)  # type: ignore[arg-type]


_GLOSSARY_SCHEMA = {
    "type": "object",
    "maxProperties": MAX_REQUEST_TERMS,
    "propertyNames": {"minLength": 1, "maxLength": MAX_TERM_CHARS, "pattern": GLOSSARY_TERM_PATTERN},
    "additionalProperties": {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_TARGET_CHARS,
        "pattern": GLOSSARY_TARGET_PATTERN,
    },
}


@dataclass(frozen=True)
class TranslateOptions:
    """Per-request decoding choices; every field is validated on construction (``InvalidRequestError``) by the rule
    its metadata holds. A field whose default is None takes None (the deployment's or the model's own value)."""

    beam_size: int | None = option(
        None,
        "beams of the search (1: greedy); null: the deployment's TRANSLATE_BEAM_SIZE",
        {"type": "integer", "minimum": 1, "maximum": MAX_BEAM_SIZE},
    )
    # None = the model's own exponent (see handler.model.families)
    length_penalty: float | None = option(
        None,
        "the exponent of the model's length penalty; null: the model's own",
        {"type": "number", "minimum": LENGTH_PENALTY_RANGE[0], "maximum": LENGTH_PENALTY_RANGE[1]},
    )
    max_length_ratio: float = option(
        2.0,
        "output tokens at most this times the source tokens, plus 10",
        {"type": "number", "minimum": MAX_LENGTH_RATIO_RANGE[0], "maximum": MAX_LENGTH_RATIO_RANGE[1]},
    )
    # handler.model.decoding.RepetitionGuard
    repetition_guard: bool = option(True, "ban degenerate repetition loops", {"type": "boolean"})
    format: str = option(
        "text",
        "text, html (text nodes, alt and title) or markdown (handler.text.markup)",
        {"type": "string", "enum": list(FORMATS)},
    )
    glossary: Glossary | None = option(
        None,
        "Chinese term -> English term, merged over the deployment's glossary; a term holds a Chinese character, "
        "neither side is blank or holds a line break",
        _GLOSSARY_SCHEMA,
        _glossary,
    )
    protect_spans: bool = option(
        True, "URLs, numbers, code, names... kept intact; false: the raw model", {"type": "boolean"}
    )
    # Traditional text is converted to the model's script first (handler.text.script_conversion)
    source: str = option(
        AUTO,
        "the texts' Chinese variant (auto: detected)",
        {"type": "string", "enum": list(SOURCE_SPELLINGS)},
        canonical_variant,
    )
    # handler.model.confidence; changes no translation
    scores: bool = option(
        False, "true: list each translation's segments with a confidence and flags", {"type": "boolean"}
    )

    def __post_init__(self) -> None:
        for each in fields(self):
            value = getattr(self, each.name)
            if value is None and each.default is None:
                continue
            object.__setattr__(self, each.name, each.metadata["option"].check(each.name, value))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(each.name for each in fields(cls))

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """Each option's JSON Schema, as a request's property (``null`` means the default, as ``from_mapping`` reads
        it)."""
        properties: dict[str, Any] = {}
        for each in fields(cls):
            spec: OptionSpec = each.metadata["option"]
            properties[each.name] = {"anyOf": [dict(spec.schema), {"type": "null"}], "description": spec.description}
        return properties

    @classmethod
    def from_mapping(cls, data: Mapping[str, object], flags: Sequence[str] = ()) -> TranslateOptions:
        """Options from user JSON: unknown keys are an error listing the allowed ones (with the request's ``flags``,
        read by the caller beside the options); ``null`` means the default."""
        names = [*cls.names(), *flags]
        if not isinstance(data, Mapping):
            raise InvalidRequestError(f"options must be an object with the keys {', '.join(names)}")
        unknown = sorted(str(key) for key in data if key not in names)
        if unknown:
            raise InvalidRequestError(
                f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                f"allowed options: {', '.join(names)}"
            )
        values = {key: value for key, value in data.items() if value is not None and key not in flags}
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


OPTION_NAMES = TranslateOptions.names()
