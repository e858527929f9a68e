"""LibreTranslate's request shapes, each declared once (``handler.api.shapes``): ``POST /translate``, ``POST /detect``
and ``POST /translate_file``, with LibreTranslate's words for what is missing or not supported (its app.py and tests,
1.9.6, are the reference). ``handler.api.compat.libretranslate`` reads requests into them and
``handler.api.compat.libretranslate_routes`` describes them, from the same declarations."""

from __future__ import annotations

from typing import Any

from handler.api.shapes import Choice, Count, File, FileNamed, NoReserved, Shape, Text, Texts, param
from handler.formats import FILE_SUFFIXES, suffix_of
from handler.options import MAX_ALTERNATIVES
from handler.text.script_conversion import SPELLINGS

TARGET = "en"
TARGETS = (TARGET, "en-US", "en-GB")
MISSING_Q = "Invalid request: missing q parameter"
Q_TYPES = "Invalid request: q must be a string or a list of strings"
FORMATS = ("text", "html")
RESERVED_Q = (
    "Invalid request: q holds private-use characters U+F0000 to U+107FFF, which format html reserves for its tags; "
    "remove them or send format text"
)


def _language(values: tuple[str, ...], name: str, description: str) -> Choice:
    """A language LibreTranslate requires (app.py: ``if not source_lang: abort(400, ...)``) and names when it has no
    model for it ("%(lang)s is not supported")."""
    return Choice(
        values=values,
        fold="lower",
        strip=True,
        required=True,
        description=description,
        missing=f"Invalid request: missing {name} parameter",
        invalid="{given} is not supported",
    )


def _source() -> Choice:
    return _language(SPELLINGS, "source", "zh-Hans, zh-Hant (or zh, zt, auto...), any case; required")


def _target() -> Choice:
    return _language(TARGETS, "target", "en (en-US and en-GB too)")


def _api_key() -> Text:
    return Text(description="the key, with TRANSLATE_API_KEYS set (or X-API-Key / Authorization: Bearer)")


class LibreTranslateRequest(Shape):
    """``POST /translate`` (told from this server's own by its fields: ``LibreTranslateApi.claims``)."""

    RULES = (NoReserved("q", "format", ("html",), RESERVED_Q),)

    q: str | list[str] = param(
        Texts(
            required=True,
            max_length=True,
            form_breaks=True,
            description="one text or a list: LibreTranslate's charLimit (TRANSLATE_MAX_CHARS) is each text's",
            missing=MISSING_Q,
            invalid=Q_TYPES,
            blank_in_form='Invalid request: missing q parameter (an empty q field; a JSON list may hold "")',
            too_many="Invalid request: request ({count}) exceeds text limit ({limit}): at most {limit} texts a "
            "request (TRANSLATE_MAX_TEXTS)",
            too_long="Invalid request: request ({count}) exceeds text limit ({limit}): at most {limit} characters a "
            "text (TRANSLATE_MAX_CHARS)",
        )
    )
    source: str = param(_source())
    target: str = param(_target())
    alternatives: int = param(
        Count(
            minimum=0,
            maximum=MAX_ALTERNATIVES,
            description="up to this many other distinct translations of each text (more is refused)",
            not_a_count="Invalid request: alternatives must be an integer; got {value!r}",
            out_of_range="Invalid request: alternatives must be between {minimum} and {maximum}",
        ),
        0,
    )
    format: str = param(
        Choice(
            values=FORMATS,
            fold="lower",
            default="text",
            blank_is_absent=True,
            description="text (the default) or html",
            invalid="{given} format is not supported; use text or html",
        ),
        "text",
    )
    api_key: str | None = param(_api_key())


class LibreTranslateQuery(Shape):
    """``POST /detect``."""

    q: str | list[str] = param(
        Texts(
            required=True,
            max_items=False,
            description="one text or a list: their language is detected together",
            missing=MISSING_Q,
            invalid=Q_TYPES,
            blank_in_form='Invalid request: missing q parameter (an empty q field; a JSON list may hold "")',
        )
    )
    api_key: str | None = param(_api_key())


class LibreTranslateKeyQuery(Shape):
    """``GET /usage`` (this server's): nothing but the key; other fields are ignored."""

    api_key: str | None = param(_api_key())


def _last_segment(name: str) -> str:
    """A file's name as LibreTranslate keeps it: the last segment of the name its part gives, without white space."""
    return name.replace("\\", "/").rsplit("/", 1)[-1].strip()


class LibreTranslateFile(Shape):
    """``POST /translate_file`` (multipart)."""

    RULES = (
        FileNamed(
            "file",
            None,
            "Invalid request: file format not supported: {filename!r}; this server translates "
            + ", ".join(FILE_SUFFIXES)
            + " files",
            lambda name: suffix_of(name) in FILE_SUFFIXES,
            _last_segment,
        ),
    )

    file: Any = param(
        File(
            required=True,
            suffixes=FILE_SUFFIXES,
            example="document.txt",
            description="the file; its name's suffix says its format",
            missing="Invalid request: missing file parameter (a multipart/form-data file field 'file')",
        )
    )
    source: str = param(_source())
    target: str = param(_target())
    encoding: str | None = param(
        Text(
            description="this server's extension (LibreTranslate has no such field): a text file's encoding, e.g. "
            "big5 or gb18030; else detected, and a file too short to tell is refused naming it"
        )
    )
    api_key: str | None = param(_api_key())
