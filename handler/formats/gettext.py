"""gettext catalogues (``.po``) and templates (``.pot``): each untranslated message's ``msgstr`` filled with its
English, everything else kept; read and written with ``polib``, the library the catalogues' users script with.

**Translated**: every entry, not obsolete, whose ``msgid`` (or ``msgid_plural``) holds Chinese and whose
``msgstr`` is empty. A plural entry gets English's two forms: ``msgstr[0]`` from ``msgid``, ``msgstr[1]`` from
``msgid_plural`` (one line to the service when both are the same text); a form already filled is kept. One string
is one unit, one line (``handler.formats.base.UnitsFormat``): the fan-out cuts only between strings.

**Choices** (what the issue leaves open):

* **fuzzy**: every machine-translated entry is flagged ``fuzzy`` (``#, fuzzy``), so that a translator reviews it
  (Poedit, Weblate and ``msgfmt --statistics`` show it as needing work; ``msgfmt`` leaves it out of the ``.mo``
  until someone removes the flag). Entries not translated keep their flags as they were.
* **header**: never translated. Its ``Language`` and ``Plural-Forms`` describe the catalogue's target language, so
  the English catalogue says ``Language: en`` (an English one already there, ``en_GB``, is kept) and
  ``Plural-Forms: nplurals=2; plural=(n != 1);`` (kept when it already says that); a Chinese catalogue's
  ``nplurals=1; plural=0;`` or a template's ``nplurals=INTEGER`` would otherwise make ``msgfmt`` refuse the two
  English forms. A translated plural entry's empty forms beyond English's two are dropped for the same reason.
  Its ``Content-Type`` says ``charset=UTF-8``: the file is written in UTF-8 whatever it was read in. A file
  without a header gets one with these three fields. Every other field, the header's comment and flags, are kept.
* **templates**: ``.pot`` is accepted: a template translated is the filled English catalogue (the same header
  fields set), as ``msginit`` would start one.
* **placeholders**: the format directives of the entry's language, by its flags: ``c-format`` and the other
  printf-like flags (``objc``, ``c++``, ``php``, ``gcc-internal``, ``java-printf``, ``javascript``, ``ruby``, ...)
  protect printf conversions (``%d``, ``%s``, ``%5.2f``, ``%1$s``, ``%lld``, ``%<PRId64>``, ``%%``);
  ``python-format`` those and named ones (``%(count)s``); ``python-brace-format`` (and ``csharp``, ``java``,
  ``perl-brace``) replacement fields (``{}``, ``{0}``, ``{name}``, ``{count:>5}``, ``{0.attr}``, ``{{``, ``}}``);
  ``qt-format``/``kde-format`` ``%1``. An entry without a known format flag (xgettext leaves it out when it cannot
  tell) protects all of these; a ``no-…-format`` flag takes its syntaxes away. Field names must start with an
  ASCII letter or underscore, so Chinese text in braces (``{注意}``) is translated. Each placeholder, each line
  break (and tab) inside a string, and any character of the markup range already in it becomes a void markup
  character (``handler.text.spans``: ``MARKUP_STANDALONE + j``) before the line goes to the service, and is put
  back in its place after; one the translation dropped is appended at the end, never lost. Whitespace and line
  breaks before the string's first character or after its last never reach the model and come back as they were
  (``msgfmt --check`` wants ``msgid`` and ``msgstr`` to begin and end alike).

**Kept**: ``msgctxt``, translator comments (``#``), extracted comments (``#.``), references (``#:``), flags
(``#,``), previous strings (``#|``), obsolete entries (``#~``, never translated), already-translated entries (a
non-empty ``msgstr``, fuzzy or not) and entries without Chinese (their ``msgstr`` stays empty: gettext shows the
``msgid``). The file is written as polib writes it: the entries' content unchanged, long strings re-wrapped at
polib's 78 columns, obsolete entries last (where gettext's tools put them).

**Read**: by the charset the header names (``Content-Type: ...; charset=GBK``), the way polib detects it; bytes that
are not valid in it are refused naming the offset and line. Without a usable charset (none, or a template's
``CHARSET``) the bytes are decoded as any text file is (``handler.formats.encodings``: UTF-8, a byte-order mark,
GB18030 or Big5 by their characters). **Refused** (``InvalidRequestError``, "not a gettext PO catalogue: ..."):
text polib cannot parse (its message, with the line number), a string missing its closing (or opening) double quote
(``msgid "你好`` at a line's end: ``msgfmt`` refuses it, polib would drop the character before the missing quote;
the line number and the line named), a file with neither a header nor an entry, text
that is not decodable; and content that names a file on this machine (``polib.pofile`` opens a path it is handed
instead of a catalogue's text: never read). An entry whose translation comes back empty stays untranslated.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from handler.errors import InvalidRequestError, TranslatorError
from handler.formats.base import SourceFile, UnitLines, UnitsFile, UnitsFormat
from handler.formats.encodings import decode_text
from handler.text.segmentation import LINE_BREAKS
from handler.text.spans import MARKUP_LIMIT, MARKUP_OPEN, MARKUP_STANDALONE, has_chinese

if TYPE_CHECKING:  # polib is imported on the first catalogue, so that a cold start that never sees one skips it
    import polib

PO_ENCODING = "gettext .po catalogue"  # the source-encoding description's stem (the charset read is added)
PO_CONTENT_TYPE = "text/x-gettext-translation; charset=utf-8"
ENGLISH_LANGUAGE = "en"
ENGLISH_PLURAL_FORMS = "nplurals=2; plural=(n != 1);"
FUZZY = "fuzzy"
WRAP_WIDTH = 78  # polib's default: long strings are written on continuation lines of at most this width

# --- placeholders: one pattern per syntax family, chosen by the entry's flags -----------------------------------------
_PRINTF = (
    r"%%|%<PRI[A-Za-z0-9]+>"
    r"|%(?:[1-9][0-9]*\$)?[-+ #0']*(?:[0-9]+|\*(?:[1-9][0-9]*\$)?)?(?:\.(?:[0-9]+|\*(?:[1-9][0-9]*\$)?))?"
    r"(?:hh|h|ll|l|L|q|j|z|t|I64|I32|I)?[diouxXeEfFgGaAcspnCS@]"
)
_PYTHON_NAMED = r"%\([^)\n]*\)[-+ #0]*(?:[0-9]+|\*)?(?:\.(?:[0-9]+|\*))?[hlL]?[diouxXeEfFgGcrsa%]"
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_BRACE = (
    r"\{\{|\}\}"
    rf"|\{{(?:{_NAME}|[0-9]+)?(?:\.{_NAME}|\[[^\]{{}}\n]*\])*(?:![rsa])?"
    r"(?:[:,](?:[^{}\n]|\{[^{}\n]*\})*)?\}"
)
_QT = r"%L?[1-9][0-9]?(?![0-9$])"
FAMILIES: dict[str, str] = {"python": _PYTHON_NAMED, "printf": _PRINTF, "brace": _BRACE, "qt": _QT}
_ALL_FAMILIES = tuple(FAMILIES)
# a flag's language (``<language>-format``) -> the placeholder syntaxes its strings use
_PRINTF_LANGUAGES = "c objc c++ php gcc-internal gfc-internal awk java-printf javascript ruby lua object-pascal boost"
FLAG_FAMILIES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(_PRINTF_LANGUAGES.split(), ("printf",)),
    "python": ("python", "printf"),
    **dict.fromkeys(("python-brace", "csharp", "java", "perl-brace"), ("brace",)),
    **dict.fromkeys(("qt", "qt-plural", "kde"), ("qt",)),
}
_FORMAT_FLAG = re.compile(r"(no-)?(.+)-format")
_MARKUP_CHAR = re.compile(f"[{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]")
_BREAKS = f"\r\n|[{LINE_BREAKS}\t]"  # line breaks and tabs inside a string: void characters too
_BREAK = re.compile(_BREAKS)
_VOIDS_PER_UNIT = MARKUP_LIMIT - MARKUP_STANDALONE


def families_for(flags: Sequence[str]) -> tuple[str, ...]:
    """The placeholder syntaxes an entry with ``flags`` uses: its known ``<language>-format`` flags' (all when it
    has none), less those of its ``no-<language>-format`` flags."""
    wanted: list[str] = []
    unwanted: set[str] = set()
    for flag in flags:
        match = _FORMAT_FLAG.fullmatch(flag.strip())
        if match is None or match.group(2) not in FLAG_FAMILIES:
            continue
        if match.group(1):
            unwanted.update(FLAG_FAMILIES[match.group(2)])
        else:
            wanted.extend(FLAG_FAMILIES[match.group(2)])
    chosen = dict.fromkeys(wanted) if wanted else dict.fromkeys(_ALL_FAMILIES)
    return tuple(family for family in _ALL_FAMILIES if family in chosen and family not in unwanted)


_TOKEN_PATTERNS: dict[tuple[str, ...], re.Pattern[str]] = {}


def _tokens(families: tuple[str, ...]) -> re.Pattern[str]:
    """What becomes a void character in a string of an entry using ``families``: a markup-range character already
    there, a line break or tab, a placeholder."""
    pattern = _TOKEN_PATTERNS.get(families)
    if pattern is None:
        alternatives = [_MARKUP_CHAR.pattern, _BREAKS] + [FAMILIES[family] for family in families]
        pattern = _TOKEN_PATTERNS[families] = re.compile("|".join(f"(?:{alt})" for alt in alternatives))
    return pattern


def placeholders(text: str, flags: Sequence[str] = ()) -> list[str]:
    """The placeholders of ``text`` in an entry with ``flags``, in order (``%%`` and ``{{`` included)."""
    return [
        token
        for found in _tokens(families_for(flags)).finditer(text)
        if not (_is_break(token := found.group()) or _MARKUP_CHAR.fullmatch(token))
    ]


def _is_break(token: str) -> bool:
    return _BREAK.fullmatch(token) is not None


# --- units: one string to translate each ----------------------------------------------------------------------------
@dataclass
class _Unit:
    """One string of an entry as one line for the service: ``line`` with ``voids[j]`` replaced by
    ``MARKUP_STANDALONE + j``, ``lead`` and ``trail`` (whitespace at its ends) kept out."""

    line: str
    voids: list[str]
    lead: str
    trail: str
    targets: list[int | None] = field(default_factory=list)  # None: msgstr; i: msgstr[i]


def _unit(text: str, families: tuple[str, ...]) -> _Unit:
    """``text`` (holding Chinese) as one line: its placeholders, line breaks and tabs void characters, the
    whitespace at its ends (line breaks included: all are whitespace to ``str.strip``) kept out."""
    core = text.strip()
    lead = text[: len(text) - len(text.lstrip())]
    voids: list[str] = []

    def void(found: re.Match[str]) -> str:
        if len(voids) >= _VOIDS_PER_UNIT:
            return found.group()
        voids.append(found.group())
        return chr(MARKUP_STANDALONE + len(voids) - 1)

    return _Unit(_tokens(families).sub(void, core), voids, lead, text[len(lead) + len(core) :])


def restore(unit: _Unit, english: str) -> str:
    """``english`` (the unit's line translated) with its void characters turned back into what they stood for
    (spaces the model put around a line break dropped), those it lost appended, and the source's leading and
    trailing whitespace."""
    english = english.strip()
    out = ""
    used: set[int] = set()
    at = 0
    dropped = False  # a character not the unit's, or one used already, is dropped with a space beside it
    for found in _MARKUP_CHAR.finditer(english):
        out = _followed(out, english[at : found.start()], dropped)
        at = found.end()
        index = ord(found.group()) - MARKUP_STANDALONE
        dropped = not (0 <= index < len(unit.voids) and index not in used)
        if not dropped:
            used.add(index)
            out = _followed(out, unit.voids[index])
    out = _followed(out, english[at:], dropped)
    for index, token in enumerate(unit.voids):  # never lost: a placeholder the translation dropped goes at the end
        if index not in used:
            out = _followed(out if _is_break(token) or not out or out[-1].isspace() else out + " ", token)
    return unit.lead + out.strip(" ") + unit.trail


def _followed(out: str, piece: str, after_dropped: bool = False) -> str:
    """``out`` + ``piece``, without spaces between a line break and the text beside it, nor two where a character
    was dropped between them."""
    if _is_break(piece):
        return out.rstrip(" ") + piece
    if (out and _is_break(out[-1])) or (after_dropped and (not out or out[-1] == " ")):
        return out + piece.lstrip(" ")
    return out + piece


# --- the catalogue ----------------------------------------------------------------------------------------------------
@dataclass
class _Work:
    """An entry to translate and its units (the entry's strings that hold Chinese)."""

    entry: polib.POEntry
    units: list[_Unit]
    copied: dict[int | None, str]  # forms filled with their source as is (a string without Chinese)


@dataclass
class PoFile(UnitLines):
    """A catalogue read for translation (``UnitsFile``): its units' lines, one string a line."""

    name: str
    encoding: str  # the charset it was read in
    catalogue: polib.POFile
    work: list[_Work]
    units: list[_Unit]

    @property
    def lines(self) -> list[str]:
        return [unit.line for unit in self.units]

    def rebuild(self, translations: Sequence[str]) -> bytes:
        """The English catalogue (UTF-8) from one translation per unit; ``TranslatorError`` when their number
        differs. The entries are changed in place: once per read."""
        if len(translations) != len(self.units):
            raise TranslatorError(
                f"translating {self.name} gave {len(translations):,} lines for {len(self.units):,} strings; "
                f"nothing was written"
            )
        english = {id(unit): restore(unit, line) for unit, line in zip(self.units, translations, strict=True)}
        for work in self.work:
            machine = {
                target: english[id(unit)] for unit in work.units for target in unit.targets if english[id(unit)].strip()
            }
            if machine:  # an entry whose every translation came back empty stays untranslated
                _fill(work.entry, {**work.copied, **machine})
        _english_header(self.catalogue)
        written = str(self.catalogue)
        if not self.catalogue.header and written.startswith("#\n"):
            written = written[2:]  # polib writes an empty header comment as a lone "#"
        return written.encode("utf-8")


def _fill(entry: polib.POEntry, forms: dict[int | None, str]) -> None:
    """``forms`` (``None``: the msgstr; ``i``: msgstr[i]) written into ``entry``, flagged fuzzy: machine English
    for a translator to review. A plural entry's filled forms are kept, its empty ones beyond English's two
    dropped."""
    if None in forms:
        entry.msgstr = forms[None]
    else:
        plural = {index: text for index, text in entry.msgstr_plural.items() if index < 2 or text}
        for index, text in forms.items():
            if index is not None and not plural.get(index):
                plural[index] = text
        entry.msgstr_plural = dict(sorted(plural.items()))
    if FUZZY not in entry.flags:
        entry.flags.insert(0, FUZZY)


def _english_header(catalogue: polib.POFile) -> None:
    """The header says what the written file is: English, English's plural forms, UTF-8."""
    metadata: dict[str, str] = catalogue.metadata
    language = metadata.get("Language", "").strip().replace("-", "_").lower()
    if not (language == "en" or language.startswith(("en_", "en@"))):
        metadata["Language"] = ENGLISH_LANGUAGE
    plural_forms = re.sub(r"\s", "", metadata.get("Plural-Forms", ""))
    if re.fullmatch(r"nplurals=2;plural=\(?n!=1\)?;?", plural_forms) is None:
        metadata["Plural-Forms"] = ENGLISH_PLURAL_FORMS
    content_type = metadata.get("Content-Type", "").strip()
    if not content_type:
        metadata["Content-Type"] = "text/plain; charset=UTF-8"
    elif re.search(r"charset\s*=", content_type, re.I):
        metadata["Content-Type"] = re.sub(r"charset\s*=\s*[^\s;]*", "charset=UTF-8", content_type, flags=re.I)
    else:
        metadata["Content-Type"] = f"{content_type}; charset=UTF-8"


def _needs_translation(entry: polib.POEntry) -> bool:
    if entry.obsolete or not (has_chinese(entry.msgid) or has_chinese(entry.msgid_plural)):
        return False
    if entry.msgid_plural:
        return not (entry.msgstr_plural.get(0) and entry.msgstr_plural.get(1))
    return not entry.msgstr


def _work(entry: polib.POEntry) -> _Work:
    """An entry's units: its msgstr from its msgid, or its empty plural forms 0 and 1 from msgid and msgid_plural
    (one unit when they are the same text); a source without Chinese is copied as it is."""
    families = families_for(entry.flags)
    sources: list[tuple[int | None, str]]
    if entry.msgid_plural:
        sources = [
            (index, source)
            for index, source in ((0, entry.msgid), (1, entry.msgid_plural))
            if not entry.msgstr_plural.get(index)
        ]
    else:
        sources = [(None, entry.msgid)]
    units: dict[str, _Unit] = {}
    copied: dict[int | None, str] = {}
    for index, source in sources:
        if not has_chinese(source):
            copied[index] = source
            continue
        if source not in units:
            units[source] = _unit(source, families)
        units[source].targets.append(index)
    return _Work(entry, list(units.values()), copied)


# --- reading ----------------------------------------------------------------------------------------------------------
_KIND = "gettext PO catalogue"
_HINT = (
    "send a gettext catalogue (.po) or template (.pot) as xgettext, msgmerge or Poedit write it, in UTF-8 or the "
    "charset its header's Content-Type names"
)
_CHARSET = re.compile(rb'"?Content-Type:[^\n]*?charset=([\w\-:.]+)')  # polib's own pattern, on the bytes


def _refuse(name: str, reason: str) -> InvalidRequestError:
    return InvalidRequestError(f"not a {_KIND}: {name} {reason}; {_HINT}")


def decode_catalogue(data: bytes, name: str) -> tuple[str, str]:
    """``data`` decoded by the charset its header names (as polib detects it), else as any text file; returns
    ``(text, encoding description)``."""
    found = _CHARSET.search(data)
    charset = found.group(1).decode("ascii") if found else ""
    try:
        codec = codecs.lookup(charset).name if charset else ""
    except LookupError:
        codec = ""  # a template's placeholder CHARSET, or a name no codec has
    if not codec or codec.startswith("utf-16") or codec.startswith("utf-32"):
        return decode_text(data, name)
    body = data[len(codecs.BOM_UTF8) :] if codec == "utf-8" and data.startswith(codecs.BOM_UTF8) else data
    try:
        return body.decode(codec), charset
    except UnicodeDecodeError as error:
        line = body.count(b"\n", 0, error.start) + 1
        raise InvalidRequestError(
            f"{name} is not valid {charset} as its header's charset says (byte 0x{body[error.start]:02x} at offset "
            f"{error.start:,}, line {line:,}); save it in the charset its header names, or correct the header"
        ) from None


def read_po_file(data: bytes, *, name: str = "the file") -> PoFile:
    """``data`` read for translation; ``InvalidRequestError`` saying why it cannot be."""
    text, encoding = decode_catalogue(data, name)
    # polib.pofile reads a file when handed an existing path: the content must never be taken for one (a catalogue
    # has a msgid line and a msgstr line at least)
    if "\n" not in text.strip() or os.path.isfile(text):
        raise _refuse(name, "holds no msgid and msgstr lines")
    fault = _string_fault(text)
    if fault is not None:
        raise _refuse(name, fault)
    import polib

    try:
        catalogue = polib.pofile(text, encoding="utf-8", wrapwidth=WRAP_WIDTH)
    except (OSError, ValueError, KeyError, IndexError) as error:
        raise _refuse(name, _parse_error(error)) from None
    if not catalogue.metadata and not len(catalogue):
        raise _refuse(name, "holds no entry and no header fields")
    work = [_work(entry) for entry in catalogue if _needs_translation(entry)]
    work = [item for item in work if item.units]
    return PoFile(name, encoding, catalogue, work, [unit for item in work for unit in item.units])


# a line polib reads a string from: a keyword and its string, or a continuation string; in an obsolete entry (#~) or
# a previous string (#|) too. polib takes the string as the text between the first and the last character whatever
# they are, so a string missing a quote lost a character silently (msgfmt: "end-of-line within string")
_STRING_LINE = re.compile(r'(?:#[~|]\s+)?(?:(msgctxt|msgid_plural|msgid|msgstr)\s+|(msgstr\[[^\]]*\])\s*|(?="))(.+)')
_CLOSED_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SHOWN = 40  # characters of a faulty line quoted in the refusal


def _string_fault(text: str) -> str | None:
    """The first string of ``text`` missing its opening or closing double quote, as a reason naming its line
    ("has a syntax error at line 3: msgid's string has no closing double quote ..."); None when every one has both.
    Lines are counted as polib counts them (``str.splitlines``), so that its own errors and these agree."""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        found = _STRING_LINE.fullmatch(line)
        if found is None:
            continue
        string = found.group(3)
        if not string.startswith('"'):
            wrong = "does not begin with a double quote"
        elif _CLOSED_STRING.match(string) is None:
            wrong = "has no closing double quote (the line ends inside the string)"
        else:
            continue
        owner = found.group(1) or found.group(2)
        what = f"{owner}'s string" if owner else "the continuation string"
        shown = line if len(line) <= _SHOWN else line[: _SHOWN - 1] + "…"
        return (
            f"has a syntax error at line {number:,}: {what} {wrong}; the line reads: {shown} -- every string is "
            f'written between double quotes on one line, a quote inside it as \\"'
        )
    return None


def _parse_error(error: Exception) -> str:
    """polib's error as a reason: "has a syntax error at line 3: unescaped double quote found"."""
    message = str(error)
    found = re.search(r"\(line (\d+)\)(?::\s*(.+))?", message)
    if found is None:
        return f"cannot be parsed ({message})"
    detail = f": {found.group(2)}" if found.group(2) else ""
    return f"has a syntax error at line {int(found.group(1)):,}{detail}"


class Gettext(UnitsFormat):
    name = "po"
    suffixes = (".po", ".pot")
    content_type = PO_CONTENT_TYPE
    encoding_description = PO_ENCODING
    binary = False

    def parse(self, data: bytes, name: str) -> UnitsFile:
        return read_po_file(data, name=name)

    def read(self, data: bytes, name: str, encoding: str | None = None) -> SourceFile:
        """A catalogue says its own charset (``encoding`` is not used); the description names the one read."""
        parsed = read_po_file(data, name=name)
        described = f"{PO_ENCODING} ({parsed.encoding})"
        return SourceFile(name, data, parsed.text, described, parsed.characters, parsed)


GETTEXT = Gettext()
