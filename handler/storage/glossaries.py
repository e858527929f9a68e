"""Stored glossaries: named Chinese → English glossaries a client creates once and names by ID in later requests
(DeepL's glossary API, ``handler.api.compat.deepl``; its document path calls ``GlossaryStore.glossary_for``).

Each glossary is one JSON object in the deployment's state (``handler.storage.state``: the output bucket under
``TRANSLATE_STATE_PREFIX`` on AWS and GCP, the folder ``TRANSLATE_STATE_DIR`` locally), so it survives a cold start
and every instance of the function sees it: ``glossaries/<owner>/<glossary_id>.json``. ``<owner>`` is
``shared`` on a deployment without API keys (every caller sees every glossary) and, with keys configured
(``TRANSLATE_API_KEYS``), a digest of the key that created it: a glossary belongs to its key, and another key gets
``GlossaryNotFoundError`` for it, exactly as for an ID that was never created (``handler.storage.owners``; documents
belong to their key the same way). The owner is part of the object's key so that listing one key's glossaries reads
only that key's objects. Glossaries are immutable, as DeepL's are: created, read, listed and deleted, never edited.

Entries come as DeepL sends them (``entries_format``):

* ``tsv``: one entry per line, ``source<TAB>target``; lines are separated by LF, CRLF or CR; a line with more than
  one tab is an error;
* ``csv``: one entry per row (standard CSV quoting: a field holding a comma, a quote or a line break is quoted, a
  quote inside doubled), ``source,target`` or ``source,target,source_lang,target_lang`` (DeepL's export; the two
  language columns must then name this glossary's pair).

In both, blank lines are skipped, each term is stripped of surrounding white space, and an entry is refused (400,
naming its number) when a term is empty, holds a control character (C0, C1) or a Unicode line or paragraph
separator, when its source term repeats an earlier entry's, or when it breaks the rules of every glossary of this
server (``handler.text.glossary``): the source term must hold a Chinese character and be at most
``MAX_TERM_CHARS`` characters, the target at most ``MAX_TARGET_CHARS``.

Limits (DeepL's own are 10 MiB per glossary, 1024 bytes per term and name, 1000 glossaries per account; this
server's are smaller, as each glossary is read in full by every request that names it): ``MAX_ENTRIES`` entries
and ``MAX_ENTRIES_BYTES`` bytes of entries per glossary, ``MAX_NAME_BYTES`` bytes of name, ``MAX_GLOSSARIES``
glossaries per owner. The only language pair is ``zh`` → ``en`` (``ZH-HANS``/``ZH-HANT`` and ``EN-US``/``EN-GB``
are accepted and stored as ``zh`` and ``en``, as DeepL stores glossaries without regional variants).
"""

from __future__ import annotations

import csv
import io
import json
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Literal, TypedDict

from handler.errors import GlossaryNotFoundError, InvalidRequestError, RequestTooLargeError, TranslatorError
from handler.storage.owners import owner_of
from handler.storage.state import StateLocation
from handler.text.glossary import MAX_FILE_TERMS, MAX_TARGET_CHARS, MAX_TERM_CHARS, Glossary
from handler.text.spans import has_chinese
from handler.text.validation import require_unicode

SOURCE_LANG = "zh"
TARGET_LANG = "en"
SOURCE_LANGS = {"zh": SOURCE_LANG, "zh-hans": SOURCE_LANG, "zh-hant": SOURCE_LANG}
TARGET_LANGS = {"en": TARGET_LANG, "en-us": TARGET_LANG, "en-gb": TARGET_LANG}
ENTRIES_FORMATS = ("tsv", "csv")
MAX_ENTRIES = MAX_FILE_TERMS  # entries per glossary: as many as a deployment's glossary file may hold
MAX_ENTRIES_BYTES = 1024 * 1024  # UTF-8 bytes of the entries of one glossary
MAX_NAME_BYTES = 1024  # DeepL's limit
MAX_GLOSSARIES = 100  # per owner (one API key, or the whole deployment without keys)
PREFIX = "glossaries/"
FORMAT_VERSION = 1
JSON_CONTENT_TYPE = "application/json"

_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_LINES = re.compile(r"\r\n|\n|\r")
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# what _tsv_rows takes, as a JSON Schema pattern (the request shapes state it: handler.api.compat.deepl_shapes): some
# line is not blank, and every line that is not blank (Python's white space only) holds exactly one tab. The other
# rules (a term holds Chinese, no term repeated, the limits) are checked by parse_entries alone, naming the entry.
_WHITE = "\t\x0b\x0c\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_TSV_LINE = f"(?:[{_WHITE}]*|[^\t\r\n]*\t[^\t\r\n]*)"
TSV_ENTRIES_PATTERN = f"^\ufeff?(?=[\\s\\S]*[^{_WHITE}\r\n])(?:{_TSV_LINE}(?:\r\n|\n|\r))*{_TSV_LINE}(?![\\s\\S])"


class GlossaryDescription(TypedDict):
    """A glossary's description, as DeepL's v2 glossary API gives it (the annotations' dictionaries are what the API's
    document says beyond the types: ``handler.api.answers``)."""

    glossary_id: str
    name: str
    ready: bool
    source_lang: Annotated[str, {"enum": [SOURCE_LANG]}]
    target_lang: Annotated[str, {"enum": [TARGET_LANG]}]
    creation_time: Annotated[str, {"format": "date-time"}]
    entry_count: Annotated[int, {"minimum": 1}]


class DictionaryDescription(TypedDict):
    """A glossary's one dictionary, as DeepL's v3 API describes it."""

    source_lang: Annotated[str, {"enum": [SOURCE_LANG]}]
    target_lang: Annotated[str, {"enum": [TARGET_LANG]}]
    entry_count: Annotated[int, {"minimum": 1}]


class MultilingualGlossaryDescription(TypedDict):
    """A glossary's description, as DeepL's v3 (multilingual) glossary API gives it: one dictionary, zh → en."""

    glossary_id: str
    name: str
    dictionaries: list[DictionaryDescription]
    creation_time: Annotated[str, {"format": "date-time"}]


class DictionaryEntries(TypedDict):
    """A dictionary's entries, as ``/v3/glossaries/{glossary_id}/entries`` gives them."""

    source_lang: Annotated[str, {"enum": [SOURCE_LANG]}]
    target_lang: Annotated[str, {"enum": [TARGET_LANG]}]
    entries: Annotated[str, "source<TAB>target per line"]
    entries_format: Literal["tsv"]


@dataclass(frozen=True)
class GlossaryInfo:
    """A stored glossary's description, as DeepL's API gives it (``as_json``)."""

    glossary_id: str
    name: str
    source_lang: str
    target_lang: str
    creation_time: str  # ISO 8601 UTC with milliseconds, e.g. 2026-12-02T07:13:53.123Z
    entry_count: int

    def as_json(self) -> GlossaryDescription:
        return {
            "glossary_id": self.glossary_id,
            "name": self.name,
            "ready": True,  # created in one request: usable at once
            "source_lang": self.source_lang,
            "target_lang": self.target_lang,
            "creation_time": self.creation_time,
            "entry_count": self.entry_count,
        }

    def as_v3_json(self) -> MultilingualGlossaryDescription:
        """The description DeepL's multilingual glossary API (``/v3/glossaries``) gives: one dictionary, zh → en."""
        dictionary: DictionaryDescription = {
            "source_lang": self.source_lang,
            "target_lang": self.target_lang,
            "entry_count": self.entry_count,
        }
        return {
            "glossary_id": self.glossary_id,
            "name": self.name,
            "dictionaries": [dictionary],
            "creation_time": self.creation_time,
        }


@dataclass(frozen=True)
class StoredGlossary:
    info: GlossaryInfo
    glossary: Glossary

    def entries_tsv(self) -> str:
        """The entries as DeepL returns them: ``source<TAB>target`` lines joined by LF, in the order given."""
        return "\n".join(f"{source}\t{target}" for source, target in self.glossary.terms)

    def require_dictionary(self, source_lang: str | None, target_lang: str | None) -> None:
        """Check that ``/v3/glossaries/{id}/entries?source_lang=&target_lang=`` names this glossary's one dictionary:
        ``InvalidRequestError`` when either is missing, ``GlossaryNotFoundError`` for another pair."""
        if source_lang is None or target_lang is None or not source_lang.strip() or not target_lang.strip():
            raise InvalidRequestError(
                "Missing argument: source_lang and target_lang name the dictionary whose entries to give (zh and en)"
            )
        pair = (SOURCE_LANGS.get(source_lang.strip().lower()), TARGET_LANGS.get(target_lang.strip().lower()))
        if pair != (self.info.source_lang, self.info.target_lang):
            raise GlossaryNotFoundError(
                f"Glossary dictionary not found: the glossary {self.info.glossary_id} has one dictionary, "
                f"{self.info.source_lang} → {self.info.target_lang}, not {source_lang} → {target_lang}"
            )

    def dictionary_v3_json(self) -> DictionaryEntries:
        """The one dictionary's entries as ``/v3/glossaries/{id}/entries`` gives them (TSV text)."""
        return {
            "source_lang": self.info.source_lang,
            "target_lang": self.info.target_lang,
            "entries": self.entries_tsv(),
            "entries_format": "tsv",
        }


def language_pair(source_lang: str | None, target_lang: str | None) -> tuple[str, str]:
    """The stored pair for a request's languages; ``InvalidRequestError`` for any pair but Chinese → English."""
    source = SOURCE_LANGS.get((source_lang or "").strip().lower())
    target = TARGET_LANGS.get((target_lang or "").strip().lower())
    if source is None or target is None:
        raise InvalidRequestError(
            f"Unsupported glossary source and target language pair: {source_lang or '(none)'} → "
            f"{target_lang or '(none)'}; this server's glossaries are Chinese → English (source_lang zh, "
            f"target_lang en)"
        )
    return source, target


def parse_entries(entries: object, entries_format: str, pair: tuple[str, str] = (SOURCE_LANG, TARGET_LANG)) -> Glossary:
    """The glossary ``entries`` (TSV or CSV text) describe; ``InvalidRequestError`` names the first bad entry,
    ``RequestTooLargeError`` a text over ``MAX_ENTRIES_BYTES`` or ``MAX_ENTRIES`` entries."""
    if not isinstance(entries, str):
        raise InvalidRequestError("Missing or invalid argument: entries (the glossary's entries as TSV or CSV text)")
    require_unicode(entries, "the glossary's entries")
    size = len(entries.encode("utf-8"))
    if size > MAX_ENTRIES_BYTES:
        raise RequestTooLargeError(
            f"the glossary's entries are {size:,} bytes; this server's limit is {MAX_ENTRIES_BYTES:,} bytes"
        )
    text = entries.removeprefix("\ufeff")
    if entries_format == "tsv":
        rows = _tsv_rows(text)
    elif entries_format == "csv":
        rows = _csv_rows(text, pair)
    else:
        raise InvalidRequestError(f"Value for 'entries_format' not supported: {entries_format!r}; use tsv or csv")
    terms: dict[str, str] = {}
    first_at: dict[str, int] = {}
    for number, source, target in rows:
        if len(terms) >= MAX_ENTRIES:
            raise RequestTooLargeError(
                f"the glossary has more than {MAX_ENTRIES:,} entries; that is this server's limit"
            )
        _check_term(number, "source", source)
        _check_term(number, "target", target)
        if source in terms:
            raise InvalidRequestError(
                f"Invalid glossary entries provided: entry {number} duplicates the source term {source!r} of entry "
                f"{first_at[source]}"
            )
        if not has_chinese(source):
            raise InvalidRequestError(
                f"Invalid glossary entries provided: the source term of entry {number}, {source!r}, has no Chinese "
                f"character; this server's glossaries are Chinese → English"
            )
        if len(source) > MAX_TERM_CHARS:
            raise InvalidRequestError(
                f"Invalid glossary entries provided: the source term of entry {number} has {len(source)} characters; "
                f"the limit is {MAX_TERM_CHARS}"
            )
        if len(target) > MAX_TARGET_CHARS:
            raise InvalidRequestError(
                f"Invalid glossary entries provided: the target term of entry {number} has {len(target)} characters; "
                f"the limit is {MAX_TARGET_CHARS}"
            )
        terms[source] = target
        first_at[source] = number
    if not terms:
        raise InvalidRequestError("Missing or invalid argument: entries (the glossary has no entry)")
    return Glossary(tuple(terms.items()))


def _tsv_rows(text: str) -> list[tuple[int, str, str]]:
    rows = []
    for number, line in enumerate(_LINES.split(text), start=1):
        if not line.strip():
            continue
        source, tab, target = line.partition("\t")
        if not tab:
            raise InvalidRequestError(
                f"Invalid glossary entries provided: entry {number} has no tab between its source and target terms"
            )
        if "\t" in target:
            raise InvalidRequestError(
                f"Invalid glossary entries provided: entry {number} has more than one tab; a TSV entry is "
                f"'source<TAB>target'"
            )
        rows.append((number, source.strip(), target.strip()))
    return rows


def _csv_rows(text: str, pair: tuple[str, str]) -> list[tuple[int, str, str]]:
    rows = []
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        for fields in reader:
            number = reader.line_num
            if not fields or all(not field.strip() for field in fields):
                continue
            if len(fields) not in (2, 4):
                raise InvalidRequestError(
                    f"Invalid glossary entries provided: CSV entry {number} has {len(fields)} fields; an entry is "
                    f"'source,target' or 'source,target,source_lang,target_lang'"
                )
            if len(fields) == 4:
                given = (fields[2].strip().lower(), fields[3].strip().lower())
                if (SOURCE_LANGS.get(given[0]), TARGET_LANGS.get(given[1])) != pair:
                    raise InvalidRequestError(
                        f"Invalid glossary entries provided: CSV entry {number} is for {fields[2]} → {fields[3]}; "
                        f"this glossary is {pair[0]} → {pair[1]}"
                    )
            rows.append((number, fields[0].strip(), fields[1].strip()))
    except csv.Error as error:
        raise InvalidRequestError(
            f"Invalid glossary entries provided: the CSV is malformed near line {reader.line_num} ({error})"
        ) from None
    return rows


def _check_term(number: int, which: str, term: str) -> None:
    if not term:
        raise InvalidRequestError(f"Invalid glossary entries provided: the {which} term of entry {number} is empty")
    bad = _FORBIDDEN.search(term)
    if bad:
        raise InvalidRequestError(
            f"Invalid glossary entries provided: the {which} term of entry {number} holds the control character "
            f"U+{ord(bad.group()):04X}; terms are one line of text"
        )


def _checked_id(glossary_id: str) -> str:
    if not isinstance(glossary_id, str) or not _ID.match(glossary_id):
        raise InvalidRequestError(
            f"Value for 'glossary_id' not supported: {str(glossary_id)[:60]!r} is not a glossary ID (a UUID such as "
            f"def3a26b-3e84-45b3-84ae-0c0aaf3525f7, as POST /v2/glossaries returns)"
        )
    return glossary_id


class GlossaryStore:
    """The stored glossaries of one deployment (module docstring). ``state``: the ``StateLocation``, or a function
    that builds it on first use (an adapter's object-store client is created only when a glossary is used)."""

    def __init__(
        self,
        state: StateLocation | Callable[[], StateLocation],
        *,
        keys_required: bool,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._state = state
        self.keys_required = keys_required
        self._clock = clock
        self._lock = threading.Lock()

    @property
    def state(self) -> StateLocation:
        if not isinstance(self._state, StateLocation):
            with self._lock:
                if not isinstance(self._state, StateLocation):
                    self._state = self._state()
        return self._state

    def owner_of(self, key: str | None) -> str:
        """Whose glossaries a caller presenting ``key`` sees: everyone's without keys, else the key's own."""
        return owner_of(key, self.keys_required)

    # --- the operations -----------------------------------------------------------------------------------
    def create(
        self,
        *,
        name: object,
        source_lang: str | None,
        target_lang: str | None,
        entries: object,
        entries_format: str = "tsv",
        key: str | None,
    ) -> GlossaryInfo:
        """Validate and store a new glossary; its description (with its new ID)."""
        if not isinstance(name, str) or not name.strip():
            raise InvalidRequestError("Missing or invalid argument: name (the glossary's name, a non-empty string)")
        require_unicode(name, "the glossary's name")
        if len(name.encode("utf-8")) > MAX_NAME_BYTES:
            raise InvalidRequestError(f"the glossary's name is longer than {MAX_NAME_BYTES} UTF-8 bytes")
        if _FORBIDDEN.search(name):
            raise InvalidRequestError("the glossary's name holds a control character or a line break")
        pair = language_pair(source_lang, target_lang)
        glossary = parse_entries(entries, entries_format.strip().lower(), pair)
        owner = self.owner_of(key)
        held = len(self._owner_keys(owner))
        if held >= MAX_GLOSSARIES:
            raise RequestTooLargeError(
                f"this {'API key' if self.keys_required else 'server'} holds {held} glossaries, the limit is "
                f"{MAX_GLOSSARIES}; delete one (DELETE /v2/glossaries/{{glossary_id}}) before creating another"
            )
        info = GlossaryInfo(
            str(uuid.uuid4()),
            name,
            pair[0],
            pair[1],
            self._clock().astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            len(glossary),
        )
        stored = {
            "format": FORMAT_VERSION,
            **{k: v for k, v in info.as_json().items() if k not in ("ready", "entry_count")},
            "entries": [list(term) for term in glossary.terms],
        }
        data = json.dumps(stored, ensure_ascii=False).encode("utf-8")
        location = self.state
        ref = location.ref(self._key(owner, info.glossary_id))
        if not location.store.write_if(ref, data, {}, None, JSON_CONTENT_TYPE):
            raise TranslatorError(f"a glossary with the new ID {info.glossary_id} exists already; create it again")
        return info

    def create_multilingual(self, *, name: object, dictionaries: object, key: str | None) -> GlossaryInfo:
        """Store a glossary DeepL's v3 API describes (``dictionaries``: a list of ``{source_lang, target_lang,
        entries, entries_format}``); this server's glossaries hold one dictionary, zh → en, so a list of any other
        length is refused (``InvalidRequestError``) rather than stored in part."""
        if not isinstance(dictionaries, list) or not all(isinstance(item, dict) for item in dictionaries):
            raise InvalidRequestError(
                "Missing or invalid argument: dictionaries (a JSON list of {source_lang, target_lang, entries, "
                "entries_format} objects)"
            )
        if len(dictionaries) != 1:
            raise InvalidRequestError(
                f"this server's glossaries hold exactly one dictionary, zh → en; the request has {len(dictionaries)}"
            )
        (dictionary,) = dictionaries
        source_lang, target_lang = dictionary.get("source_lang"), dictionary.get("target_lang")
        entries_format = dictionary.get("entries_format", "tsv")
        if not all(isinstance(value, str) for value in (source_lang, target_lang, entries_format)):
            raise InvalidRequestError(
                "Missing or invalid argument: a dictionary's source_lang, target_lang and entries_format are strings"
            )
        return self.create(
            name=name,
            source_lang=source_lang,
            target_lang=target_lang,
            entries=dictionary.get("entries"),
            entries_format=entries_format,
            key=key,
        )

    def list_glossaries(self, key: str | None) -> list[GlossaryInfo]:
        """The caller's glossaries, oldest first."""
        owner = self.owner_of(key)
        found = []
        for object_key in self._owner_keys(owner):
            glossary_id = object_key.rsplit("/", 1)[-1].removesuffix(".json")
            stored = self._read(owner, glossary_id)
            if stored is not None:  # deleted between the listing and the read
                found.append(stored.info)
        return sorted(found, key=lambda info: (info.creation_time, info.glossary_id))

    def get(self, glossary_id: str, key: str | None) -> StoredGlossary:
        """The glossary ``glossary_id`` of the caller; ``GlossaryNotFoundError`` when it has none of that ID."""
        owner = self.owner_of(key)
        stored = self._read(owner, _checked_id(glossary_id))
        if stored is None:
            raise GlossaryNotFoundError(
                f"Glossary not found: there is no glossary {glossary_id}"
                + (" for this API key (a glossary belongs to the key that created it)" if self.keys_required else "")
            )
        return stored

    def glossary_for(self, glossary_id: str, key: str | None) -> Glossary:
        """The terms of the caller's glossary ``glossary_id``, to hand to ``TranslateOptions(glossary=...)``: the
        service merges them over the deployment's glossary (TRANSLATE_GLOSSARY_FILE), the stored terms winning.
        ``GlossaryNotFoundError`` (404) when the caller has no glossary of that ID, ``InvalidRequestError`` (400)
        when ``glossary_id`` is not an ID at all."""
        return self.get(glossary_id, key).glossary

    def delete(self, glossary_id: str, key: str | None) -> None:
        """Delete the caller's glossary ``glossary_id``; ``GlossaryNotFoundError`` when it has none of that ID."""
        owner = self.owner_of(key)
        self.get(glossary_id, key)
        location = self.state
        if not location.store.delete(location.ref(self._key(owner, glossary_id))):
            raise GlossaryNotFoundError(f"Glossary not found: the glossary {glossary_id} was deleted meanwhile")

    # --- storage ------------------------------------------------------------------------------------------
    @staticmethod
    def _key(owner: str, glossary_id: str) -> str:
        return f"{PREFIX}{owner}/{glossary_id}.json"

    def _owner_keys(self, owner: str) -> list[str]:
        return [key for key in self.state.keys(f"{PREFIX}{owner}/") if key.endswith(".json")]

    def _read(self, owner: str, glossary_id: str) -> StoredGlossary | None:
        location = self.state
        found = location.store.read_versioned(location.ref(self._key(owner, glossary_id)))
        if found is None:
            return None
        try:
            stored = json.loads(found.data.decode("utf-8"))
            terms = tuple((str(source), str(target)) for source, target in stored["entries"])
            info = GlossaryInfo(
                str(stored["glossary_id"]),
                str(stored["name"]),
                str(stored["source_lang"]),
                str(stored["target_lang"]),
                str(stored["creation_time"]),
                len(terms),
            )
        except (UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
            raise TranslatorError(
                f"the stored glossary {glossary_id} cannot be read ({type(error).__name__}: {error}); delete it and "
                f"create it again"
            ) from error
        return StoredGlossary(info, Glossary(terms))
