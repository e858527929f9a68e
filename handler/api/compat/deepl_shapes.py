"""DeepL's request shapes, each declared once (``handler.api.shapes``): the fields of ``/v2/translate``,
``/v2/languages``, ``/v2/usage``, the document API and the v2 and v3 glossary routes, with DeepL's words for what is
missing or not supported (its API reference and the ``deepl`` client are the reference). ``handler.api.compat.deepl``
reads requests into them and ``handler.api.compat.deepl_routes`` describes them, from the same declarations.

An empty value of one of DeepL's enumerations (``tag_handling=``, ``model_type=``, ``formality=``, ``source_lang=``)
is refused as DeepL refuses a value its enumeration does not hold; ``glossary_id=`` and ``type=`` keep meaning "not
given", as this server documented them.
"""

from __future__ import annotations

from typing import Any, Final

from handler.api.shapes import (
    Choice,
    File,
    FileNamed,
    Grammar,
    Names,
    NoReserved,
    Objects,
    Refused,
    Shape,
    Switch,
    Text,
    Texts,
    param,
)
from handler.formats import FILE_SUFFIXES, suffix_of
from handler.options import TEXT_END
from handler.storage.glossaries import ENTRIES_FORMATS, TSV_ENTRIES_PATTERN, parse_entries
from handler.text.markup import TAGGED_FORMATS
from handler.text.script_conversion import AUTO, SIMPLIFIED, TRADITIONAL

SOURCE_LANGS = {"ZH": AUTO, "ZH-HANS": SIMPLIFIED, "ZH-HANT": TRADITIONAL}
TARGET_LANGS = ("EN", "EN-US", "EN-GB")
FORMALITIES_IGNORED = ("default", "prefer_more", "prefer_less")  # English: nothing to change
FORMALITIES = ("default", "more", "less", "prefer_more", "prefer_less")  # DeepL's values
MODEL_TYPES = ("latency_optimized", "quality_optimized", "prefer_quality_optimized")
# this server has one model, a classic encoder-decoder: DeepL's latency-optimized kind, whatever model_type asks
MODEL_TYPE_USED: Final = "latency_optimized"
# a glossary ID is a UUID (handler.storage.glossaries): any other segment there is no route
GLOSSARY_ID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
GLOSSARY_ID_PATTERN = f"^{GLOSSARY_ID}$"
GLOSSARY_ID_VALUE = f"^{GLOSSARY_ID}{TEXT_END}"  # the field's (a path's segment is GLOSSARY_ID_PATTERN)
NOT_SUPPORTED = "Value for '{name}' not supported: {value}"
GLOSSARY_IDS = (
    "glossary_ids (v3 multilingual glossaries) is not supported: give one glossary_id of a glossary created with "
    "POST /v2/glossaries"
)
TAGS = "Value for '{name}' not supported: give tag names separated by commas, e.g. x,ph"
GLOSSARY_NEEDS_SOURCE = "Use of a glossary requires the source_lang parameter to be specified (ZH)"
RESERVED_TEXT = (
    "Value for 'text' not supported: it holds private-use characters U+F0000 to U+107FFF, which tag_handling "
    "reserves for the markup it cuts; remove them or send the text without tag_handling"
)
# the glossary languages (handler.storage.glossaries.language_pair reads the same, any case)
GLOSSARY_SOURCES = ("zh", "zh-Hans", "zh-Hant")
GLOSSARY_TARGETS = ("en", "en-US", "en-GB")
PAIR = (
    "Unsupported glossary source and target language pair: {raw[source_lang]} → {raw[target_lang]}; this server's "
    "glossaries are Chinese → English (source_lang zh, target_lang en)"
)
PAIR_MISSING = "Missing argument: source_lang and target_lang name the dictionary whose entries to give (zh and en)"
NAME = "Missing or invalid argument: name (the glossary's name, a non-empty string)"
ENTRIES = "Missing or invalid argument: entries (the glossary's entries as TSV or CSV text)"
DICTIONARIES = (
    "Missing or invalid argument: dictionaries (a JSON list of {{source_lang, target_lang, entries, entries_format}} "
    "objects)"
)


def _target(description: str = "EN, EN-US or EN-GB") -> Choice:
    return Choice(
        values=TARGET_LANGS,
        fold="upper",
        strip=True,
        required=True,
        description=description,
        missing="Parameter 'target_lang' not specified; this server translates to EN, EN-US or EN-GB",
        invalid=NOT_SUPPORTED + "; this server translates Chinese to English (target_lang EN, EN-US or EN-GB)",
    )


def _source() -> Choice:
    return Choice(
        values=tuple(SOURCE_LANGS),
        fold="upper",
        strip=True,
        description="the texts' language (ZH; ZH-HANS or ZH-HANT name the script); absent: detected",
        invalid=NOT_SUPPORTED + "; this server translates Chinese (source_lang ZH, ZH-HANS or ZH-HANT) to English",
        refused={
            "": "Value for 'source_lang' not supported: an empty value; give ZH, ZH-HANS or ZH-HANT, or leave "
            "source_lang out"
        },  # fmt: skip
    )


def _formality() -> Choice:
    known = ", ".join(FORMALITIES)
    refused = (
        "Target language {target_lang} does not support formality: English has no formal register here "
        "(supports_formality is false in /v2/languages); send default, prefer_more or prefer_less, which DeepL "
        "accepts for such a target and which change nothing"
    )
    return Choice(
        values=FORMALITIES_IGNORED,
        fold="lower",
        strip=True,
        description="English has no formality: more and less are refused (400), as DeepL refuses them for such a "
        "target; these change nothing",
        invalid="Value for 'formality' not supported: {value!r}; use one of "
        + known
        + " (for English only default, prefer_more and prefer_less)",
        refused={"more": refused, "less": refused},
    )


def _glossary_id() -> Text:
    return Text(
        pattern=GLOSSARY_ID_VALUE,
        blank_is_absent=True,
        needs="source_lang",
        needs_message=GLOSSARY_NEEDS_SOURCE,
        description="a glossary of POST /v2/glossaries (needs source_lang); unknown: 404",
        invalid="Value for 'glossary_id' not supported: {short!r} is not a glossary ID (a UUID such as "
        "def3a26b-3e84-45b3-84ae-0c0aaf3525f7, as POST /v2/glossaries returns)",
    )


def _auth_key() -> Text:
    return Text(description="DeepL's legacy key parameter")


class DeepLTranslateRequest(Shape):
    """``POST /v2/translate``: DeepL's other options (split_sentences, context, ...) are accepted and ignored."""

    RULES = (NoReserved("text", "tag_handling", TAGGED_FORMATS, RESERVED_TEXT),)
    text: str | list[str] = param(
        Texts(
            required=True,
            blank_is_missing=False,
            description="one text, or a list (a repeated form field): at most TRANSLATE_MAX_TEXTS",
            missing="Parameter 'text' not specified",
            invalid="Parameter 'text' must be a string or a non-empty list of strings",
            too_many="Parameter 'text' holds {count} texts; this server translates at most {limit} a request "
            "(TRANSLATE_MAX_TEXTS)",
        )
    )
    target_lang: str = param(_target())
    formality: str | None = param(_formality())
    model_type: str | None = param(
        Choice(
            values=MODEL_TYPES,
            fold="lower",
            strip=True,
            description=f"any: the one model answers, and model_type_used says {MODEL_TYPE_USED}",
            invalid="Value for 'model_type' not supported: {value!r}; use one of " + ", ".join(MODEL_TYPES),
        )
    )
    source_lang: str | None = param(_source())
    tag_handling: str | None = param(
        Choice(
            values=TAGGED_FORMATS,
            fold="lower",
            strip=True,
            description="html or xml: the markup is kept, its text translated",
            invalid=NOT_SUPPORTED + "; use html or xml",
            refused={
                "": "Value for 'tag_handling' not supported: an empty value; use html or xml, or leave tag_handling out"
            },  # fmt: skip
        )
    )
    ignore_tags: frozenset[str] = param(Names(invalid=TAGS), frozenset())
    non_splitting_tags: frozenset[str] = param(Names(invalid=TAGS), frozenset())
    splitting_tags: frozenset[str] = param(Names(invalid=TAGS), frozenset())
    outline_detection: bool = param(
        Switch(
            description="xml: 1 (default) splits at elements whose parent holds no text; 0: only splitting_tags",
            invalid="Value for 'outline_detection' not supported: {value!r}; use 0 or 1",
        ),
        True,
    )
    glossary_ids: None = param(Refused(invalid=GLOSSARY_IDS, description="not supported (v3's list of glossaries)"))
    glossary_id: str | None = param(_glossary_id())
    auth_key: str | None = param(_auth_key())


class DeepLLanguagesRequest(Shape):
    """``GET``/``POST /v2/languages``."""

    type: str = param(
        Choice(
            values=("source", "target"),
            fold="lower",
            default="source",
            blank_is_absent=True,
            description="source (the default) or target",
            invalid="Value for 'type' not supported: {value!r}; use source or target",
        ),
        "source",
    )
    auth_key: str | None = param(_auth_key())


class DeepLKeyRequest(Shape):
    """A route that takes nothing but the key (``/v2/usage``, the glossary routes); other fields are ignored."""

    auth_key: str | None = param(_auth_key())


class DeepLDocumentUpload(Shape):
    """``POST /v2/document`` (multipart): the file, named by its part or by ``filename``, and the options of
    ``/v2/translate`` that apply to a document."""

    RULES = (
        FileNamed(
            "file",
            "filename",
            "{filename!r} has no suffix this server translates; it translates documents with the suffixes "
            + ", ".join(FILE_SUFFIXES),
            lambda name: suffix_of(name) in FILE_SUFFIXES,
        ),
    )
    file: Any = param(
        File(
            required=True,
            suffixes=FILE_SUFFIXES,
            min_bytes=1,
            example="document.txt",
            description="the document; its name (or filename's) says its format",
            missing="Parameter 'file' not specified: send the document as the multipart/form-data file field 'file'",
            too_small="{filename!r} is empty; upload a document with text to translate",
        )
    )
    filename: str | None = param(
        Text(
            pattern=File(suffixes=FILE_SUFFIXES).name_pattern(),
            blank_is_absent=True,
            description="the file's name, instead of the part's: its suffix says the format",
            invalid="{short!r} has no suffix this server translates; it translates documents with the suffixes "
            + ", ".join(FILE_SUFFIXES),
        )
    )
    target_lang: str = param(_target())
    source_lang: str | None = param(_source())
    formality: str | None = param(_formality())
    output_format: str | None = param(
        Text(description="only the document's own format (its suffix); any other is refused (400)")
    )
    glossary_ids: None = param(Refused(invalid=GLOSSARY_IDS))
    glossary_id: str | None = param(_glossary_id())
    encoding: str | None = param(
        Text(
            description="this server's extension (DeepL has no such field): a text file's encoding, e.g. big5 or "
            "gb18030; else detected, and a file too short to tell is refused naming this field"
        )
    )
    auth_key: str | None = param(_auth_key())


class DeepLDictionaryQuery(Shape):
    """``GET /v3/glossaries/{glossary_id}/entries``: the dictionary whose entries to give, by its languages (another
    pair than the glossary's is its 404)."""

    source_lang: str = param(
        Text(required=True, description="zh: the dictionary's source language", missing=PAIR_MISSING)
    )
    target_lang: str = param(
        Text(required=True, description="en: the dictionary's target language", missing=PAIR_MISSING)
    )
    auth_key: str | None = param(_auth_key())


class DeepLDocumentKey(Shape):
    """``POST /v2/document/{document_id}`` and its ``/result``."""

    document_key: str = param(
        Text(
            required=True,
            min_length=1,
            description="the document_key POST /v2/document answered",
            missing="Parameter 'document_key' not specified: send the key /v2/document answered",
        )
    )
    auth_key: str | None = param(_auth_key())


def _glossary_language(values: tuple[str, ...], which: str) -> Choice:
    return Choice(values=values, fold="lower", strip=True, required=True, description=which, missing=PAIR, invalid=PAIR)


def _entries() -> Text:
    return Text(
        required=True,
        blank_is_missing=False,
        description="tsv: source<TAB>target per line; csv: source,target[,source_lang,target_lang]; the store "
        "refuses a repeated source term, a term without Chinese or over its length, naming the entry",
        missing=ENTRIES,
    )


def _entries_format() -> Choice:
    return Choice(
        values=ENTRIES_FORMATS,
        fold="lower",
        strip=True,
        default="tsv",
        description="tsv (the default) or csv",
        invalid="Value for 'entries_format' not supported: {value!r}; use tsv or csv",
    )


def _grammar() -> Grammar:
    return Grammar("entries", "entries_format", ("tsv",), TSV_ENTRIES_PATTERN, lambda text: parse_entries(text, "tsv"))


class DeepLGlossaryCreate(Shape):
    """``POST /v2/glossaries``."""

    RULES = (_grammar(),)

    name: str = param(Text(required=True, pattern="\\S", description="the glossary's name", missing=NAME, invalid=NAME))
    source_lang: str = param(_glossary_language(GLOSSARY_SOURCES, "zh (any case; zh-Hans and zh-Hant too)"))
    target_lang: str = param(_glossary_language(GLOSSARY_TARGETS, "en (any case; en-US and en-GB too)"))
    entries: str = param(_entries())
    entries_format: str = param(_entries_format(), "tsv")
    auth_key: str | None = param(_auth_key())


class DeepLDictionary(Shape):
    """One dictionary of ``POST /v3/glossaries``: this server's glossaries hold one, zh → en."""

    RULES = (_grammar(),)
    source_lang: str = param(_glossary_language(GLOSSARY_SOURCES, "zh (any case; zh-Hans and zh-Hant too)"))
    target_lang: str = param(_glossary_language(GLOSSARY_TARGETS, "en (any case; en-US and en-GB too)"))
    entries: str = param(_entries())
    entries_format: str = param(_entries_format(), "tsv")


class DeepLMultilingualGlossaryCreate(Shape):
    """``POST /v3/glossaries`` (JSON)."""

    name: str = param(Text(required=True, pattern="\\S", description="the glossary's name", missing=NAME, invalid=NAME))
    dictionaries: tuple[DeepLDictionary, ...] = param(
        Objects(
            shape=DeepLDictionary,
            required=True,
            min_items=1,
            max_items=1,
            description="this server's glossaries hold one dictionary, zh → en",
            missing=DICTIONARIES,
            invalid=DICTIONARIES,
            count="this server's glossaries hold exactly one dictionary, zh → en; the request has {count}",
        )
    )
    auth_key: str | None = param(_auth_key())
