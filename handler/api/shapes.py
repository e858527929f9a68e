"""Request shapes, declared once: a route's query, form and body fields are a frozen dataclass whose fields carry
their rule (``param``, one of the kinds below) and whose class carries the rules across fields (``RULES``). From
that one declaration come both the reading (``read_shape``: a request's fields into the typed value, or
``InvalidRequestError`` in the words of the API the shape belongs to) and the OpenAPI request schema
(``shape_schema``: JSON, form-encoded and multipart variants; ``query_parameters`` for a GET), so the document and the
server cannot disagree. What no schema can state stays where it is checked today and the document says so: the
characters over all texts (the service, 413), a file's contents (its format), a glossary's repeated terms (the
glossary store).

Reading happens in two passes, as the real services check: first whether each required field is there (in the
declaration's order), then each field's value and the cross-field rules. A value is given as JSON, or as a form's
string (``RequestFields.form``), and each kind reads and describes both. A shape may compose another declaration
for the fields it does not declare (``Shape.OPTIONS``: this server's own ``POST /translate`` takes
``handler.options.TranslateOptions`` beside its texts and flags): those are then read and described by it, and no
other field is taken.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from handler.config import RuntimeConfig
from handler.errors import InvalidRequestError, TranslatorError
from handler.options import TEXT_END, TranslateOptions
from handler.text.spans import MARKUP_LIMIT, MARKUP_OPEN
from handler.text.validation import require_unicode

JSON_MEDIA = "application/json"
FORM_MEDIA = "application/x-www-form-urlencoded"
MULTIPART_MEDIA = "multipart/form-data"
# the private-use characters handler.text.markup cuts html, xml and markdown with: a text cut so may not hold them
RESERVED = f"[{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]"
NO_RESERVED_PATTERN = f"^[^{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]*{TEXT_END}"
_RESERVED = re.compile(RESERVED)
_METACHARACTERS = set(".^$*+?()[]{}|\\/")
NULL = {"type": "null"}


class IgnoredValue:
    """A field a shape does not declare, read and ignored (as DeepL and LibreTranslate ignore them): any JSON value
    whose numbers are below 10^30 in magnitude. One rule, read (``problem``) and described (``schema``) from here:
    ``handler.api.messages.read_json`` refuses an integer of more than 30 digits, and the same number written 1e30
    is refused by ``problem``, since a schema cannot tell how a number is written."""

    NAME = "IgnoredValue"  # its name among the document's schemas
    LARGEST = 10**30 - 1

    @classmethod
    def schema(cls) -> dict[str, Any]:
        itself = {"$ref": f"#/components/schemas/{cls.NAME}"}
        return {
            "description": "a field the route does not take, read and ignored: any JSON value the body reader takes "
            "(numbers below 10^30 in magnitude, at most 32 levels deep)",
            "anyOf": [
                {"type": ["string", "boolean", "null"]},
                {"type": "number", "minimum": -cls.LARGEST, "maximum": cls.LARGEST},
                {"type": "array", "items": itself},
                {"type": "object", "additionalProperties": itself},
            ],
        }

    @classmethod
    def problem(cls, value: Any) -> str | None:
        """What ``value`` holds that the rule does not allow (a number of 10^30 or more in magnitude, however
        written), or None."""
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, int | float) and not isinstance(item, bool) and abs(item) > cls.LARGEST:
                return f"holds the number {item:.3g}; a request's numbers are below 10^30 in magnitude"
        return None


class Fields(Protocol):
    """What a shape is read from (``handler.api.compat.fields.RequestFields``): the query's and the body's fields."""

    @property
    def form(self) -> bool: ...

    @property
    def values(self) -> Mapping[str, Any]: ...

    def get(self, name: str, default: Any = None) -> Any: ...

    def text(self, name: str, default: str | None = None) -> str | None: ...


class Upload(Protocol):
    """A multipart body's file part (``handler.api.compat.fields.UploadedFile``)."""

    @property
    def filename(self) -> str: ...

    @property
    def data(self) -> bytes: ...


class Reading:
    """One field being read: where from, its name, the deployment's limits and the fields read before it (by name,
    for messages that name them)."""

    __slots__ = ("config", "fields", "files", "name", "read")

    def __init__(
        self, fields: Fields, files: Mapping[str, Upload], name: str, config: RuntimeConfig, read: Mapping[str, Any]
    ) -> None:
        self.fields = fields
        self.files = files
        self.name = name
        self.config = config
        self.read = read

    def refuse(self, template: str, **values: Any) -> TranslatorError:
        """``InvalidRequestError`` with ``template`` filled in: ``{name}``, the fields read so far, ``values`` and
        ``{raw[other]}``, another field as sent ("(none)" when absent)."""
        named = {key: value for key, value in {**self.read, **values}.items() if key not in ("name", "raw")}
        return InvalidRequestError(template.format(name=self.name, raw=_Raw(self.fields), **named))


class _Raw:
    def __init__(self, fields: Fields) -> None:
        self._fields = fields

    def __getitem__(self, name: str) -> Any:
        return self._fields.get(name) or "(none)"


class ObjectFields:
    """A JSON object's members as the fields of a shape (an item of a list of objects: ``Objects``)."""

    form = False

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def text(self, name: str, default: str | None = None) -> str | None:
        value = self.values.get(name)
        if value is None:
            return default
        if not isinstance(value, str):
            raise InvalidRequestError(f"{name!r} must be a string; got a JSON {type(value).__name__}")
        return value


def json_kind(value: Any) -> str:
    """What a JSON value is, in the words a message names it with (null, boolean, number, string, array, object)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else "array" if isinstance(value, list) else "object"


def _literal(value: str) -> str:
    return "".join(f"\\{c}" if c in _METACHARACTERS else c for c in value)


def any_case(value: str) -> str:
    """A regular expression matching ``value`` in any case (JSON Schema patterns have no flags)."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.lower() != c.upper() else _literal(c) for c in value)


def spelled(values: Sequence[str], *, fold: bool, strip: bool, blank: bool = False) -> str:
    """The pattern of a choice among ``values`` read in any case (``fold``), surrounding white space ignored
    (``strip``), the empty value too (``blank``)."""
    alternatives = "|".join(any_case(value) if fold else _literal(value) for value in values)
    space = "\\s*" if strip else ""
    return f"^{space}(?:{alternatives}){'?' if blank else ''}{space}{TEXT_END}"


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, NULL]}


@dataclass(kw_only=True, eq=False, repr=False)
class Param:
    """What every kind declares: its description, whether it is required and the message when it is absent. The
    kinds are dataclasses without a generated ``__eq__`` or ``__repr__`` and not frozen, though never changed once
    declared: each generated method costs a cold start a fraction of a millisecond."""

    description: str = ""
    required: bool = False
    missing: str = "{name} is required"
    blank_is_missing: bool = True  # a required field given as "" (or white space) is absent
    needs: str | None = None  # a field (declared before this one) that must be given when this one is
    needs_message: str = "{name} needs {needs}"

    def present(self, reading: Reading) -> bool:
        value = reading.fields.get(reading.name)
        if isinstance(value, str) and self.blank_is_missing:
            return bool(value.strip())
        return value is not None

    def read(self, reading: Reading) -> Any:
        raise NotImplementedError

    def value_schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        raise NotImplementedError

    def schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        """The property's schema: its value's, with null (the default) where JSON may send it."""
        schema = self.value_schema(config, form)
        if self.description:
            schema = {**schema, "description": self.description}
        return schema if form or self.required else _nullable(schema)


@dataclass(kw_only=True, eq=False, repr=False)
class Text(Param):
    """A string: a JSON string or a form field given once (``RequestFields.text`` refuses anything else), with an
    optional pattern and length; ``blank_is_absent``: "" means the field was not given."""

    pattern: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    blank_is_absent: bool = False
    invalid: str = "{name} {value!r} is not allowed"

    def read(self, reading: Reading) -> str | None:
        value = reading.fields.text(reading.name)
        if value is None or (self.blank_is_absent and value == ""):
            return None
        fits = (self.min_length is None or len(value) >= self.min_length) and (
            self.max_length is None or len(value) <= self.max_length
        )
        if not fits or (self.pattern is not None and not re.search(self.pattern, value)):
            raise reading.refuse(self.invalid, value=value, short=value[:60])
        return value

    def value_schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        if self.pattern is not None:
            schema["pattern"] = f"^$|{self.pattern}" if self.blank_is_absent else self.pattern
        elif self.required and self.blank_is_missing:  # blank is absent: the value holds something else
            schema["pattern"] = "\\S"
        if self.min_length is not None and not self.blank_is_absent:
            schema["minLength"] = self.min_length
        if self.max_length is not None:
            schema["maxLength"] = self.max_length
        return schema


@dataclass(kw_only=True, eq=False, repr=False)
class Choice(Param):
    """One of ``values``, read in any case (``fold``: the value is given back upper- or lower-cased) and with its
    surrounding white space ignored (``strip``); ``refused``: values the API knows and refuses, each with its own
    message; ``default``: the value when the field is absent (``blank_is_absent``: or ""). Messages: ``{value}``
    the value as read (folded), ``{given}`` as sent."""

    values: tuple[str, ...]
    fold: str | None = None  # "upper" or "lower"
    strip: bool = False
    default: str | None = None
    blank_is_absent: bool = False
    refused: Mapping[str, str] = field(default_factory=dict)
    invalid: str = "{name} must be one of {allowed}; got {given!r}"

    def _folded(self, value: str) -> str:
        value = value.strip() if self.strip else value
        return value.upper() if self.fold == "upper" else value.lower() if self.fold == "lower" else value

    def read(self, reading: Reading) -> str | None:
        given = reading.fields.text(reading.name)
        if given is None or (self.blank_is_absent and not (given.strip() if self.strip else given)):
            return self.default
        value = self._folded(given)
        accepted = {self._folded(each): each for each in self.values}
        if value in accepted:
            return value
        shown = {"value": value, "given": given.strip() if self.strip else given, "allowed": ", ".join(self.values)}
        raise reading.refuse(self.refused.get(value, self.invalid), **shown)

    def value_schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        if not self.fold and not self.strip:
            return {"type": "string", "enum": [*self.values, *([""] if self.blank_is_absent else [])]}
        pattern = spelled(self.values, fold=bool(self.fold), strip=self.strip, blank=self.blank_is_absent)
        return {"type": "string", "pattern": pattern, "examples": list(self.values)}


@dataclass(kw_only=True, eq=False, repr=False)
class Texts(Param):
    """A string or a list of strings (a form's repeated field): at most ``max_items`` (the deployment's
    TRANSLATE_MAX_TEXTS) and, with ``max_length``, each of at most TRANSLATE_MAX_CHARS characters; ``blank_is_missing``
    makes "" and [] absent (a form's empty field in a list too), else "" is a text. ``form_breaks``: a form's line
    breaks are read as "\\n" (RFC 2046's CRLF), before the lengths are counted. Messages: ``{count}``, ``{limit}``."""

    invalid: str = "{name} must be a string or a non-empty list of strings"
    max_items: bool = True
    too_many: str = "{name} holds {count} texts; the limit is {limit} (TRANSLATE_MAX_TEXTS)"
    max_length: bool = False
    too_long: str = "a text of {name} has {count} characters; the limit is {limit} (TRANSLATE_MAX_CHARS)"
    form_breaks: bool = False
    blank_in_form: str = ""  # the message for a form's empty field among several ("": blank_is_missing's)

    def present(self, reading: Reading) -> bool:
        value = reading.fields.get(reading.name)
        return value is not None and not (self.blank_is_missing and value in ("", []))

    def read(self, reading: Reading) -> str | list[str] | None:
        value = reading.fields.get(reading.name)
        if value is None:
            return None
        texts = [value] if isinstance(value, str) else value
        if not isinstance(texts, list) or not texts or not all(isinstance(text, str) for text in texts):
            raise reading.refuse(self.invalid)
        if reading.fields.form and self.blank_is_missing and "" in texts:
            raise reading.refuse(self.blank_in_form or self.missing)
        if reading.fields.form and self.form_breaks:
            texts = ["\n".join(text.splitlines()) for text in texts]
        limit = reading.config.max_texts
        if self.max_items and isinstance(value, list) and len(texts) > limit:
            raise reading.refuse(self.too_many, count=len(texts), limit=limit)
        for text in texts if self.max_length else ():
            if len(text) > reading.config.max_chars:
                raise reading.refuse(self.too_long, count=len(text), limit=reading.config.max_chars)
        return texts if isinstance(value, list) else texts[0]

    def value_schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        text: dict[str, Any] = {"type": "string"}
        if self.max_length:
            text["maxLength"] = config.max_chars
        one = {**text, "minLength": 1} if self.blank_is_missing else text
        item = one if form and self.blank_is_missing else text
        many: dict[str, Any] = {"type": "array", "items": item, "minItems": 1}
        if self.max_items:
            many["maxItems"] = config.max_texts
        return {"oneOf": [one, many]}


@dataclass(kw_only=True, eq=False, repr=False)
class Count(Param):
    """A whole number from ``minimum`` to ``maximum``: a JSON integer (an integral float is one) or its digits, in a
    JSON string or a form field; "" and null mean the default (``default``)."""

    minimum: int
    maximum: int
    default: int = 0
    not_a_count: str = "{name} must be an integer; got {value!r}"
    out_of_range: str = "{name} must be between {minimum} and {maximum}"

    def read(self, reading: Reading) -> int:
        raw = reading.fields.get(reading.name)
        if isinstance(raw, list) and reading.fields.form and len(raw) == 1:
            raw = raw[0]
        if raw is None or raw == "":
            return self.default
        if isinstance(raw, str) and re.fullmatch("[+-]?[0-9]+", raw):
            count = int(raw)
        elif isinstance(raw, int) and not isinstance(raw, bool):
            count = raw
        else:
            raise reading.refuse(self.not_a_count, value=raw)
        if not self.minimum <= count <= self.maximum:
            raise reading.refuse(self.out_of_range, minimum=self.minimum, maximum=self.maximum)
        return count

    def value_schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        if self.minimum < 0 or self.maximum - self.minimum > 100:
            raise ValueError("Count describes small ranges of natural numbers only")
        positive = [str(n) for n in range(max(1, self.minimum), self.maximum + 1)]
        zero = ["[+-]?0+"] if self.minimum == 0 else []
        digits = "|".join([*zero, *(f"\\+?0*{n}" for n in positive)])
        number = {"type": "integer", "minimum": self.minimum, "maximum": self.maximum}
        return {"anyOf": [number, {"type": "string", "pattern": f"^(?:{digits})?{TEXT_END}"}]}


@dataclass(kw_only=True, eq=False, repr=False)
class Switch(Param):
    """On or off: JSON true/false or 0/1, or the strings 0, 1, true and false (any case, white space around)."""

    default: bool = True
    invalid: str = "{name} must be 0 or 1; got {value!r}"

    def read(self, reading: Reading) -> bool:
        raw = reading.fields.get(reading.name)
        if raw is None:
            return self.default
        if isinstance(raw, bool | int) and raw in (0, 1):  # JSON true, false, 0, 1 (1.0 reads as 1)
            return bool(raw)
        if isinstance(raw, str) and raw.strip().lower() in ("0", "1", "false", "true"):
            return raw.strip().lower() in ("1", "true")
        raise reading.refuse(self.invalid, value=raw)

    def value_schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        text = {"type": "string", "pattern": spelled(("0", "1", "true", "false"), fold=True, strip=True)}
        return text if form else {"anyOf": [{"type": "boolean"}, {"enum": [0, 1]}, text]}


@dataclass(kw_only=True, eq=False, repr=False)
class Strict(Param):
    """A field whose JSON value has one type when it is given at all: null is a wrong type, not the default, and the
    schema does not offer it; a field is given when its name is in the body. Messages: ``{kind}``, what was sent
    (``json_kind``)."""

    def present(self, reading: Reading) -> bool:
        return reading.name in reading.fields.values

    def schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        schema = self.value_schema(config, form)
        return {**schema, "description": self.description} if self.description else schema


@dataclass(kw_only=True, eq=False, repr=False)
class JsonText(Strict):
    """A JSON string, without a lone UTF-16 surrogate (``require_unicode``); its length is the service's to refuse
    (413, TRANSLATE_MAX_CHARS), which the schema states."""

    invalid: str = '"{name}" must be a string; got a JSON {kind}'

    def read(self, reading: Reading) -> str | None:
        if not self.present(reading):
            return None
        value = reading.fields.get(reading.name)
        if not isinstance(value, str):
            raise reading.refuse(self.invalid, kind=json_kind(value))
        require_unicode(value, f'"{reading.name}"')
        return value

    def value_schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        return {"type": "string", "maxLength": config.max_chars}


@dataclass(kw_only=True, eq=False, repr=False)
class JsonTexts(Strict):
    """A JSON list of strings (empty too), each as ``JsonText`` reads one; their count and lengths are the service's
    to refuse (413, TRANSLATE_MAX_TEXTS and TRANSLATE_MAX_CHARS), which the schema states. Messages: ``{index}``, the
    item's."""

    invalid: str = '"{name}" must be a list of strings; got a JSON {kind}'
    invalid_item: str = '"{name}"[{index}] must be a string; got a JSON {kind}'

    def read(self, reading: Reading) -> list[str] | None:
        if not self.present(reading):
            return None
        value = reading.fields.get(reading.name)
        if not isinstance(value, list):
            raise reading.refuse(self.invalid, kind=json_kind(value))
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise reading.refuse(self.invalid_item, index=index, kind=json_kind(item))
            require_unicode(item, f'"{reading.name}"[{index}]')
        return value

    def value_schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        item = JsonText().value_schema(config, form)
        return {"type": "array", "items": item, "maxItems": config.max_texts}


@dataclass(kw_only=True, eq=False, repr=False)
class Flag(Strict):
    """JSON true or false; absent: false. A shape's flags are named beside its ``OPTIONS`` when an unknown field is
    refused (they are allowed too)."""

    invalid: str = '"{name}" must be true or false; got a JSON {kind}'

    def read(self, reading: Reading) -> bool:
        value = reading.fields.get(reading.name, False)
        if not isinstance(value, bool):
            raise reading.refuse(self.invalid, kind=json_kind(value))
        return value

    def value_schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        return {"type": "boolean"}


@dataclass(kw_only=True, eq=False, repr=False)
class Names(Param):
    """Names separated by commas, in one string, a form's repeated field or a JSON list of such strings."""

    invalid: str = "{name} must be names separated by commas"

    def read(self, reading: Reading) -> frozenset[str]:
        value = reading.fields.get(reading.name)
        if value is None:
            return frozenset()
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise reading.refuse(self.invalid)
        return frozenset(name.strip() for item in items for name in item.split(",") if name.strip())

    def value_schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        return {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}


@dataclass(kw_only=True, eq=False, repr=False)
class Refused(Param):
    """A parameter the API names and does not take: absent, null, "", [], 0 or false pass; anything else is refused
    with ``invalid``."""

    invalid: str

    def read(self, reading: Reading) -> None:
        if reading.fields.get(reading.name):
            raise reading.refuse(self.invalid)

    def value_schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        return {"enum": [""]} if form else {"enum": ["", [], {}, 0, False]}


@dataclass(kw_only=True, eq=False, repr=False)
class File(Param):
    """A multipart body's file part: its bytes (``min_bytes`` at least) and the name the client gave it, whose
    suffix must be one of ``suffixes`` (``handler.formats.suffix_of``) unless the shape's ``name_field`` names it
    instead (DeepL's ``filename``). Messages: ``{filename}``."""

    suffixes: tuple[str, ...] = ()
    min_bytes: int = 0
    too_small: str = "{filename!r} is empty"
    example: str = "document.txt"

    def present(self, reading: Reading) -> bool:
        return reading.name in reading.files

    def read(self, reading: Reading) -> Upload | None:
        uploaded = reading.files.get(reading.name)
        if uploaded is not None and len(uploaded.data) < self.min_bytes:
            raise reading.refuse(self.too_small, filename=uploaded.filename)
        return uploaded

    def value_schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        # any bytes (no "type": a part is bytes whatever a client made them from; a value schemathesis generates as
        # "not a string" arrives as its JSON text, a file like any other); minLength: of those bytes
        schema: dict[str, Any] = {"contentMediaType": "application/octet-stream"}
        return {**schema, "minLength": self.min_bytes} if self.min_bytes else schema

    def schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        schema = self.value_schema(config, form)
        return {**schema, "description": self.description} if self.description else schema

    def name_pattern(self) -> str:
        """The names this file may have: one of ``suffixes``, in any case, white space around."""
        suffixes = "|".join(any_case(suffix.lstrip(".")) for suffix in self.suffixes)
        return f"^\\s*[\\s\\S]*\\.(?:{suffixes})\\s*{TEXT_END}"


@dataclass(kw_only=True, eq=False, repr=False)
class Objects(Param):
    """A JSON list of objects, each read as ``shape``, from ``min_items`` to ``max_items`` of them. Messages:
    ``invalid`` (not such a list), ``count`` (``{count}``: how many)."""

    shape: type
    min_items: int = 1
    max_items: int | None = None
    invalid: str = "{name} must be a list of objects"
    count: str = "{name} holds {count} objects"

    def read(self, reading: Reading) -> tuple[Any, ...] | None:
        value = reading.fields.get(reading.name)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise reading.refuse(self.invalid)
        if len(value) < self.min_items or (self.max_items is not None and len(value) > self.max_items):
            raise reading.refuse(self.count, count=len(value))
        return tuple(read_shape(self.shape, ObjectFields(item), reading.config) for item in value)

    def value_schema(self, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        schema = {"type": "array", "items": shape_schema(self.shape, config), "minItems": self.min_items}
        return schema if self.max_items is None else {**schema, "maxItems": self.max_items}


class _Declared:
    """A field of a shape as its class body declares it: its rule and its default (``param``)."""

    __slots__ = ("default", "kind")

    def __init__(self, kind: Param, default: Any) -> None:
        self.kind = kind
        self.default = default


def param(kind: Param, default: Any = None) -> Any:
    """A field of a request shape (``name: type = param(kind)`` in its class body) and its rule."""
    return _Declared(kind, default)


# --- rules across fields ----------------------------------------------------------------------------------------
class Rule:
    """A rule over several fields of a shape: checked after every field is read (or, ``check_presence``, with the
    required fields' presence, before any value), and described as the schema's ``if``/``then`` (or ``oneOf``)."""

    def check_presence(self, reading: Reading) -> None:
        """Checked with the required fields' presence, before any value is read: nothing unless a rule says."""

    def check(self, values: Mapping[str, Any], reading: Reading) -> None:
        raise NotImplementedError

    def schema(self, shape: type, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(eq=False, repr=False)
class OneOf(Rule):
    """Exactly one of ``names`` is given (its name in the body: a null is given, and refused as its kind reads it),
    checked with the fields' presence. Messages: ``{found}``, "neither", "both" or how many."""

    names: tuple[str, ...]
    message: str

    def check_presence(self, reading: Reading) -> None:
        given = [name for name in self.names if name in reading.fields.values]
        if len(given) != 1:
            found = "neither" if not given else "both" if len(given) == 2 else f"{len(given)} of them"
            raise reading.refuse(self.message, found=found)

    def check(self, values: Mapping[str, Any], reading: Reading) -> None:
        return None  # checked with the presence

    def schema(self, shape: type, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        return {"oneOf": [{"required": [name]} for name in self.names]}


@dataclass(eq=False, repr=False)
class NoReserved(Rule):
    """When ``switch`` reads as one of ``values`` (its texts are cut as markup), no text of ``texts`` may hold the
    private-use characters the markup is cut with (``handler.text.markup``). ``switch`` is a ``Choice`` of the shape
    or one of its ``OPTIONS``; ``message`` None: the markup cutter refuses such a text itself, in its own words
    (``handler.text.markup``), and the rule only states it."""

    texts: str
    switch: str
    values: tuple[str, ...]
    message: str | None = (
        "the text holds private-use characters U+F0000 to U+107FFF, which the html, xml and markdown formats "
        "reserve for markup; remove them or send the text without tag handling"
    )

    def check(self, values: Mapping[str, Any], reading: Reading) -> None:
        if self.message is None or values.get(self.switch) not in self.values:
            return
        texts = values.get(self.texts)
        for text in [texts] if isinstance(texts, str) else texts or []:
            if _RESERVED.search(text):
                raise InvalidRequestError(self.message)

    def schema(self, shape: type, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        switch = params_of(shape).get(self.switch)
        chosen: dict[str, Any] = {"enum": list(self.values)}  # an option's values, as its declaration reads them
        if isinstance(switch, Choice):
            chosen = Choice(values=self.values, fold=switch.fold, strip=switch.strip).value_schema(config, form)
        clean = {"type": "string", "pattern": NO_RESERVED_PATTERN}
        return {
            "if": {"required": [self.switch], "properties": {self.switch: chosen}},
            "then": {"properties": {self.texts: {"oneOf": [clean, {"type": "array", "items": clean}]}}},
        }


@dataclass(eq=False, repr=False)
class FileNamed(Rule):
    """The name of ``file`` (its part's, or ``name_field``'s when given) has one of the file's suffixes."""

    file: str
    name_field: str | None
    message: str  # {filename}
    check_suffix: Callable[[str], bool]
    name_of: Callable[[str], str] = str.strip  # the name as the route reads it (LibreTranslate: the last segment)

    def check(self, values: Mapping[str, Any], reading: Reading) -> None:
        uploaded = values.get(self.file)
        if uploaded is None:
            return
        named = values.get(self.name_field) if self.name_field else None
        name = self.name_of(named or uploaded.filename)
        if not self.check_suffix(name):
            raise InvalidRequestError(self.message.format(filename=name))

    def schema(self, shape: type, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        return {}  # the name's pattern is the file part's (``encoding``) and name_field's own


@dataclass(eq=False, repr=False)
class Grammar(Rule):
    """When ``switch`` reads as one of ``values`` (or is absent, with ``when_absent``), ``text`` matches ``pattern``:
    a necessary condition of a format a parser reads (a glossary's TSV lines), stated in the schema; a text that
    does not match it is handed to ``explain``, the parser, whose error names what is wrong (it raises for any such
    text)."""

    text: str
    switch: str
    values: tuple[str, ...]
    pattern: str
    explain: Callable[[str], object]
    when_absent: bool = True

    def check(self, values: Mapping[str, Any], reading: Reading) -> None:
        text = values.get(self.text)
        if values.get(self.switch) not in self.values or not isinstance(text, str):
            return
        if not re.search(self.pattern, text):
            self.explain(text)
            raise InvalidRequestError(f"{self.text} is not in its format")  # explain raised for every such text

    def schema(self, shape: type, config: RuntimeConfig, form: bool) -> dict[str, Any]:
        switch = params_of(shape)[self.switch]
        assert isinstance(switch, Choice)
        chosen = Choice(values=self.values, fold=switch.fold, strip=switch.strip).value_schema(config, form)
        condition: dict[str, Any] = {"properties": {self.switch: chosen}}
        if not self.when_absent:
            condition["required"] = [self.switch]
        return {"if": condition, "then": {"properties": {self.text: {"type": "string", "pattern": self.pattern}}}}


# --- a shape: reading and describing -----------------------------------------------------------------------------
class Shape:
    """The base of a request shape: its class body declares each field, typed, with its rule (``name: type =
    param(kind)``), in the order the fields are read, and its ``RULES`` across fields; a field it does not declare is
    read and ignored (``IgnoredValue``), or, with ``OPTIONS``, read as those options into ``options`` (after
    the presence of fields, before their values: an unknown field is refused naming the options and the shape's
    ``Flag`` fields) and described by their declaration. A value is immutable, its fields set once by
    ``read_shape``. (Not a dataclass: a dataclass's generated code costs about half a millisecond a class at every
    cold start.)"""

    RULES: ClassVar[tuple[Rule, ...]] = ()
    PARAMS: ClassVar[dict[str, Param]] = {}
    OPTIONS: ClassVar[type[TranslateOptions] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        params = dict(cls.PARAMS)  # a base shape's fields first
        for name in cls.__dict__.get("__annotations__", {}):
            declared = cls.__dict__.get(name)
            if isinstance(declared, _Declared):
                params[name] = declared.kind
                setattr(cls, name, declared.default)
        cls.PARAMS = params

    def __init__(self, **values: Any) -> None:
        for name in self.PARAMS:
            object.__setattr__(self, name, values.get(name, getattr(type(self), name)))
        if self.OPTIONS is not None:
            object.__setattr__(self, OPTIONS_FIELD, values[OPTIONS_FIELD])

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read once; its {name} is not set again")

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.PARAMS)
        return f"{type(self).__name__}({shown})"


OPTIONS_FIELD = "options"  # where a shape with OPTIONS holds them


def params_of(shape: type) -> dict[str, Param]:
    """Each field of ``shape`` and its rule, in the declaration's order."""
    params: dict[str, Param] = getattr(shape, "PARAMS", {})
    return params


def takes_files(shape: type | None) -> bool:
    return shape is not None and any(isinstance(kind, File) for kind in params_of(shape).values())


def read_shape(
    shape: type[Any], fields_: Fields, config: RuntimeConfig, files: Mapping[str, Upload] | None = None
) -> Any:
    """``fields_`` (and a multipart body's ``files``) as ``shape``: first every required field's presence, in order,
    and the rules on presence, then the shape's ``OPTIONS``, each field's value, then the rules across fields;
    ``InvalidRequestError`` in the shape's words."""
    params = params_of(shape)
    read: dict[str, Any] = {}
    files = files or {}
    for name, kind in params.items():
        reading = Reading(fields_, files, name, config, read)
        if kind.required and not kind.present(reading):
            raise reading.refuse(kind.missing)
    for rule in shape.RULES:
        rule.check_presence(Reading(fields_, files, "", config, read))
    options: TranslateOptions | None = None
    if shape.OPTIONS is not None:
        flags = tuple(name for name, kind in params.items() if isinstance(kind, Flag))
        rest = {name: value for name, value in fields_.values.items() if name not in params}
        options = shape.OPTIONS.from_mapping(rest, flags)  # its own messages: unknown, out of range, ...
    for name, kind in params.items():
        reading = Reading(fields_, files, name, config, read)
        if kind.needs is not None and fields_.get(name) and read.get(kind.needs) is None:
            raise reading.refuse(kind.needs_message, needs=kind.needs)
        read[name] = kind.read(reading)
    for rule in shape.RULES:
        rule.check(read, Reading(fields_, files, "", config, read))
    if options is not None:
        return shape(**read, **{OPTIONS_FIELD: options})
    for name, value in fields_.values.items():
        if name not in params and (problem := IgnoredValue.problem(value)) is not None:
            raise InvalidRequestError(f"the field {name!r}, which this route does not take, {problem}")
    return shape(**read)


def shape_schema(shape: type[Any], config: RuntimeConfig, form: bool = False) -> dict[str, Any]:
    """The JSON Schema of ``shape`` as a JSON body, or (``form``) as a form-encoded or multipart one."""
    params = params_of(shape)
    properties = {name: kind.schema(config, form) for name, kind in params.items()}
    if shape.OPTIONS is not None:
        properties.update(shape.OPTIONS.json_schema())
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = [name for name, kind in params.items() if kind.required]
    if required:
        schema["required"] = required
    ignored = {"$ref": f"#/components/schemas/{IgnoredValue.NAME}"}
    schema["additionalProperties"] = False if shape.OPTIONS is not None else ignored
    conditions = [_needs(name, kind.needs, params, config, form) for name, kind in params.items() if kind.needs]
    conditions += [rule.schema(shape, config, form) for rule in getattr(shape, "RULES", ())]
    conditions = [condition for condition in conditions if condition]
    if conditions:
        schema["allOf"] = conditions
    return schema


def query_parameters(shape: type[Any], config: RuntimeConfig) -> list[dict[str, Any]]:
    """``shape``'s fields as a GET's query parameters (each a form field's value)."""
    return [
        {"name": name, "in": "query", "required": kind.required, "schema": kind.value_schema(config, True)}
        | ({"description": kind.description} if kind.description else {})
        for name, kind in params_of(shape).items()
    ]


def file_encoding(shape: type[Any]) -> dict[str, Any]:
    """A multipart body's ``encoding``: each file part's Content-Disposition, its file name's pattern and an example
    (schemathesis names the part it sends after the example)."""
    encoding: dict[str, Any] = {}
    for name, kind in params_of(shape).items():
        if isinstance(kind, File) and kind.suffixes:
            disposition = {
                "description": f'form-data; name="{name}"; filename="...": the file\'s name says its format',
                "schema": {"type": "string", "pattern": f'filename="[^"]*\\.(?:{_suffixes(kind)})"'},
                "example": f'form-data; name="{name}"; filename="{kind.example}"',
            }
            encoding[name] = {
                "contentType": "application/octet-stream",
                "headers": {"Content-Disposition": disposition},
            }
    return encoding


def _suffixes(kind: File) -> str:
    return "|".join(any_case(suffix.lstrip(".")) for suffix in kind.suffixes)


def _needs(name: str, needed: str, params: Mapping[str, Param], config: RuntimeConfig, form: bool) -> dict[str, Any]:
    """A field that needs another as the schema says it: given (not empty), the other is required."""
    return {
        "if": {"required": [name], "properties": {name: {"type": "string", "minLength": 1}}},
        "then": {"required": [needed], "properties": {needed: params[needed].value_schema(config, form)}},
    }
