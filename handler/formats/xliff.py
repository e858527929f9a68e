"""XLIFF (``.xlf``, ``.xliff``), versions 1.2 and 2.x (2.0, 2.1, 2.2): each unit's target written in English, the
inline codes kept in place, everything else kept; the exchange files CAT tools and build pipelines export.

The file is parsed as data (``handler.formats.packages.parse_xml``: no DTD, no entity, no network; entity
declarations and references are refused) once its elements and attributes are counted within what a file's XML may
cost (``handler.formats.packages.XML_BUDGET``), and must have an ``xliff`` root in the XLIFF 1.2 namespace (version
1.2) or the 2.0 namespace (versions 2.0, 2.1, 2.2, which share it); anything else is an ``InvalidRequestError`` saying
"not a file in XLIFF 1.2 or 2.x: ...".

**What is translated** (one line for the model each): in 1.2, every ``<trans-unit>``'s ``<source>`` (its
``<seg-source>`` when it has one, so the target gets the same ``<mrk mtype="seg">`` segments); in 2.x, every
``<segment>``'s ``<source>`` (a unit's segments stay separate lines, so the sentence alignment is kept). Not
translated, and not touched: a source without Chinese; a unit (or its group, or in 2.x its file) with
``translate="no"`` (the nearest ``translate`` attribute decides); a 1.2 unit with ``approved="yes"``; a 1.2 unit
whose ``<target>`` is not empty and has no ``state`` or a state other than ``new`` and ``needs-translation``
(``translated``, ``final``, ``signed-off``, ``needs-review-*``...: someone, or this server, already translated it);
a 2.x segment whose ``state`` is ``translated``, ``reviewed`` or ``final``, or whose ``<target>`` is not empty with
no ``state`` (an explicit ``state="initial"`` target is translated again). Notes, ``<alt-trans>``, headers,
``<originalData>``, ``<ignorable>`` and every attribute stay as they are, so translating an output again changes
nothing.

**Inline codes** become the markup characters of ``handler.text.spans``, which the translation pipeline keeps in
order: paired codes with text inside (1.2 ``<g>``, ``<mrk>``; 2.x ``<pc>``, ``<mrk>``) are an opening and a closing
character around their text, and the English between them is wrapped in a copy of the element (tag, id and every
attribute); every other code (1.2 ``<x/>``, ``<bx/>``, ``<ex/>``, ``<ph>``, ``<bpt>``, ``<ept>``, ``<it>``, a
protected ``<mrk mtype="protected">``; 2.x ``<ph/>``, ``<sc/>``, ``<ec/>``, ``<cp/>``, ``<sm/>``, ``<em/>``,
``<mrk translate="no">``; elements of other namespaces; comments) is a void character, and a copy of it goes into
the target where the English puts it (neighbouring codes travel as one). Line breaks and tabs inside a source are
void characters too (a line for the model never holds one) and come back as they were. Codes before a source's
first text or after its last never reach the model. A code the translation dropped is appended at the end of its
target (a paired one empty), never lost.

**The target** is written where the spec puts it: 1.2 ``<target>`` right after ``<source>`` (after
``<seg-source>`` when there is one) inside the ``<trans-unit>``; 2.x ``<target>`` right after ``<source>`` inside
each ``<segment>``. An existing empty (or ``new``) target is filled in place, keeping its attributes. The source's
``xml:space`` is copied to the target, and its leading and trailing whitespace kept around the English.

**States** (machine output is for a translator to review): 1.2 ``<target state="needs-review-translation"
state-qualifier="mt-suggestion">`` (both from the spec's lists); 2.x ``<segment state="translated"
subState="mt:machine-translation">`` (``state`` is on the segment; ``subState`` must have a prefix and needs an
explicit ``state``). **Languages**: the target language is set to ``en`` where it is missing (1.2
``<file target-language>`` of each file with a translated unit, 2.x ``<xliff trgLang>``); a file whose target
language is set and is not English is refused (its targets would be English in a file for another language). The
source language is not checked: only sources with Chinese are translated, whatever ``source-language``/``srcLang``
says (a file exported with the wrong source language is still translated; an English one is left as it is).

The file is written again by lxml as UTF-8 (an XML declaration when the source had one): the same elements,
attributes and text; lexical details (quote style, character references, CDATA sections) may differ. A file with
nothing to translate comes back byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from handler.errors import InvalidRequestError, TranslatorError
from handler.formats.base import UnitLines, UnitsFile, UnitsFormat
from handler.text.segmentation import LINE_BREAKS
from handler.text.spans import MARKUP_CLOSE, MARKUP_LIMIT, MARKUP_OPEN, MARKUP_STANDALONE, has_chinese

if TYPE_CHECKING:  # lxml is imported on the first XLIFF file (handler.formats.packages), not on a cold start
    from lxml import etree

XLIFF_1 = "urn:oasis:names:tc:xliff:document:1.2"
XLIFF_2 = "urn:oasis:names:tc:xliff:document:2.0"  # 2.1 and 2.2 keep the 2.0 namespace
VERSIONS_2 = ("2.0", "2.1", "2.2")
XLIFF_ENCODING = "XLIFF (XML, encoding as declared)"
XLIFF_CONTENT_TYPE = "application/xliff+xml"
# the states written on machine output
STATE_1 = ("needs-review-translation", "mt-suggestion")  # <target state=... state-qualifier=...>
STATE_2 = ("translated", "mt:machine-translation")  # <segment state=... subState=...>
_UNTRANSLATED_1 = frozenset({"new", "needs-translation"})  # 1.2 target states that still need a translation
_DONE_2 = frozenset({"translated", "reviewed", "final"})  # 2.x segment states left alone
_XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
_PER_KIND = MARKUP_CLOSE - MARKUP_OPEN
_UNSAFE_TEXT = re.compile(f"[{LINE_BREAKS}\t{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]+")
_STANDALONE = re.compile(rb"""standalone\s*=\s*["'](yes|no)["']""")
_MARKUP_CHAR = re.compile(f"[{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]")
_HINT = "send an XLIFF 1.2 or 2.x file (.xlf, .xliff) as your CAT tool or build exports it"
_KIND = "file in XLIFF 1.2 or 2.x"


# --- a source's content: text, paired codes around text, void codes ------------------------------------------------


@dataclass
class _Void:
    """Codes (elements, copied into the target) and texts the model must not see (line breaks), in order."""

    pieces: list[etree._Element | str]


@dataclass
class _Paired:
    """A paired code with text inside (``<g>``, ``<pc>``, ``<mrk>``): its English is wrapped in a copy of it."""

    element: etree._Element
    items: list[_Item]


_Item = str | _Void | _Paired


def _is_paired(element: etree._Element, namespace: str) -> bool:
    tag = element.tag
    if not isinstance(tag, str) or not tag.startswith(f"{{{namespace}}}") or not (element.text or len(element)):
        return False
    local = tag[len(namespace) + 2 :]
    if namespace == XLIFF_1:
        return local == "g" or (local == "mrk" and element.get("mtype") != "protected")
    return local == "pc" or (local == "mrk" and element.get("translate") != "no")


def _content(parent: etree._Element, namespace: str) -> list[_Item]:
    """``parent``'s content as items: text, paired codes (their own content inside) and voids."""
    items: list[_Item] = []

    def void(piece: etree._Element | str) -> None:
        if items and isinstance(items[-1], _Void):
            items[-1].pieces.append(piece)
        else:
            items.append(_Void([piece]))

    def text(value: str | None) -> None:
        value = value or ""
        at = 0
        for match in _UNSAFE_TEXT.finditer(value):
            plain(value[at : match.start()])
            void(match.group())
            at = match.end()
        plain(value[at:])

    def plain(value: str) -> None:
        if not value:
            return
        if items and isinstance(items[-1], str):
            items[-1] += value
        else:
            items.append(value)

    text(parent.text)
    for child in parent:
        if _is_paired(child, namespace):
            items.append(_Paired(child, _content(child, namespace)))
        else:
            void(child)
        text(child.tail)
    return items


def _texts(items: Sequence[_Item]) -> Iterator[str]:
    for item in items:
        if isinstance(item, str):
            yield item
        elif isinstance(item, _Paired):
            yield from _texts(item.items)


@dataclass
class _Line:
    """A source's line for the model and what rebuilding a target from its English needs."""

    line: str
    lead: list[_Item]  # voids and whitespace before the first text: kept, never seen by the model
    trail: list[_Item]
    stretches: dict[str, etree._Element]  # opening character -> paired code
    voids: dict[str, _Void]  # void character -> its codes
    space: tuple[str, str]  # whitespace around the line's text


def _line(items: list[_Item], name: str) -> _Line | None:
    """The line of a source with Chinese text; None for any other."""
    if not has_chinese("".join(_texts(items))):
        return None
    content = [
        i for i, item in enumerate(items) if isinstance(item, _Paired) or (isinstance(item, str) and item.strip())
    ]
    first, last = content[0], content[-1]
    stretches: dict[str, etree._Element] = {}
    voids: dict[str, _Void] = {}

    def write(pieces: Sequence[_Item]) -> str:
        out: list[str] = []
        for item in pieces:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, _Void):
                char = chr(MARKUP_STANDALONE + len(voids))
                voids[char] = item
                out.append(char)
            else:
                index = len(stretches)
                stretches[chr(MARKUP_OPEN + index)] = item.element
                out.append(chr(MARKUP_OPEN + index) + write(item.items) + chr(MARKUP_CLOSE + index))
        return "".join(out)

    text = write(items[first : last + 1])
    if len(stretches) >= _PER_KIND or len(voids) >= MARKUP_LIMIT - MARKUP_STANDALONE:
        raise InvalidRequestError(f"{name} has a source with too many inline codes to translate")
    core = text.strip()
    start = text.find(core)
    return _Line(core, items[:first], items[last + 1 :], stretches, voids, (text[:start], text[start + len(core) :]))


# --- writing a target -------------------------------------------------------------------------------------------


def _append_text(parent: etree._Element, text: str) -> None:
    if not text:
        return
    if len(parent):
        last = parent[-1]
        last.tail = (last.tail or "") + text
    else:
        parent.text = (parent.text or "") + text


def _emit_void(parent: etree._Element, void: _Void) -> None:
    for piece in void.pieces:
        if isinstance(piece, str):
            _append_text(parent, piece)
        else:
            copy = deepcopy(piece)
            copy.tail = None
            parent.append(copy)


def _shell(element: etree._Element) -> etree._Element:
    return element.makeelement(element.tag, dict(element.attrib))


def _emit_kept(parent: etree._Element, items: Sequence[_Item]) -> None:
    for item in items:
        if isinstance(item, str):
            _append_text(parent, item)
        elif isinstance(item, _Void):
            _emit_void(parent, item)
        else:  # not reached: a paired code is content; kept whole all the same
            copy = deepcopy(item.element)
            copy.tail = None
            parent.append(copy)


def _fill(target: etree._Element, line: _Line, english: str) -> None:
    """``target``'s content built from ``english`` (``line`` translated): codes where the English puts them."""
    english = line.space[0] + english.strip() + line.space[1]
    _emit_kept(target, line.lead)
    stack = [target]
    opened: dict[str, etree._Element] = {}
    used: set[str] = set()
    at = 0
    for match in _MARKUP_CHAR.finditer(english):
        _append_text(stack[-1], english[at : match.start()])
        at = match.end()
        char = match.group()
        code = ord(char)
        if char in line.stretches and char not in opened:
            shell = _shell(line.stretches[char])
            stack[-1].append(shell)
            stack.append(shell)
            opened[char] = shell
        elif MARKUP_CLOSE <= code < MARKUP_STANDALONE:
            shell_or_none = opened.get(chr(code - MARKUP_CLOSE + MARKUP_OPEN))
            if shell_or_none is not None and any(shell_or_none is open_ for open_ in stack):
                while stack.pop() is not shell_or_none:
                    pass
        elif char in line.voids and char not in used:
            used.add(char)
            _emit_void(stack[-1], line.voids[char])
    _append_text(stack[-1], english[at:])
    for char, element in line.stretches.items():  # never lost: what the translation dropped goes at the end
        if char not in opened:
            target.append(_shell(element))
    for char, void in line.voids.items():
        if char not in used:
            _emit_void(target, void)
    _emit_kept(target, line.trail)


def _insert_after(anchor: etree._Element, new: etree._Element) -> None:
    """``new`` placed right after ``anchor``, indented as ``anchor`` is."""
    previous = anchor.getprevious()
    parent = anchor.getparent()
    indent = previous.tail if previous is not None else (parent.text if parent is not None else None)
    new.tail = anchor.tail
    if indent is not None and not indent.strip():
        anchor.tail = indent
    anchor.addnext(new)


# --- the file ---------------------------------------------------------------------------------------------------


@dataclass
class _Unit:
    """One source to translate: a 1.2 trans-unit's or a 2.x segment's."""

    line: _Line
    holder: etree._Element  # the trans-unit (1.2) or segment (2.x)
    source: etree._Element  # the <source> (its xml:space goes to the target)
    anchor: etree._Element  # whose content is translated, and the target goes right after it: the <source>, or
    # a 1.2 unit's <seg-source> when it has one
    target: etree._Element | None
    languages: etree._Element  # where the target language is set: 1.2 <file>, 2.x <xliff>


def _translatable(element: etree._Element) -> bool:
    """The nearest ``translate`` attribute (on the element or an ancestor) decides; none: translatable."""
    for node in (element, *element.iterancestors()):
        value = node.get("translate")
        if value is not None:
            return str(value) != "no"
    return True


def _not_empty(target: etree._Element | None) -> bool:
    return target is not None and (bool((target.text or "").strip()) or len(target) > 0)


def _english(language: str) -> bool:
    return re.split("[-_]", language.strip().lower())[0] == "en"


def _check_target_language(holder: etree._Element, attribute: str, name: str) -> None:
    language = holder.get(attribute)
    if language is not None and language.strip() and not _english(language):
        raise InvalidRequestError(
            f"{name} asks for translations into {language!r} ({attribute}); this server translates Chinese into "
            f'English: set {attribute}="en" or leave it out'
        )


def _units_1(root: etree._Element, name: str) -> Iterator[_Unit]:
    ns = f"{{{XLIFF_1}}}"
    for file in root.iter(f"{ns}file"):
        for unit in file.iter(f"{ns}trans-unit"):
            if not _translatable(unit) or unit.get("approved") == "yes":
                continue
            source = unit.find(f"{ns}source")
            if source is None:
                continue
            target = unit.find(f"{ns}target")
            if _not_empty(target) and (target is not None and target.get("state") not in _UNTRANSLATED_1):
                continue
            segmented = unit.find(f"{ns}seg-source")
            content = segmented if segmented is not None else source
            line = _line(_content(content, XLIFF_1), name)
            if line is None:
                continue
            _check_target_language(file, "target-language", name)
            yield _Unit(line, unit, source, content, target, file)


def _units_2(root: etree._Element, name: str) -> Iterator[_Unit]:
    ns = f"{{{XLIFF_2}}}"
    for unit in root.iter(f"{ns}unit"):
        if not _translatable(unit):
            continue
        for segment in unit.iterchildren(f"{ns}segment"):
            state = segment.get("state")
            target = segment.find(f"{ns}target")
            if state in _DONE_2 or (state is None and _not_empty(target)):
                continue
            source = segment.find(f"{ns}source")
            if source is None:
                continue
            line = _line(_content(source, XLIFF_2), name)
            if line is None:
                continue
            _check_target_language(root, "trgLang", name)
            yield _Unit(line, segment, source, source, target, root)


def _write(unit: _Unit, english: str, namespace: str) -> None:
    target = unit.target
    if target is None:
        target = unit.source.makeelement(f"{{{namespace}}}target", {})
        _insert_after(unit.anchor, target)
    else:
        target.text = None
        for child in list(target):
            target.remove(child)
    space = unit.source.get(_XML_SPACE)
    if space is not None:
        target.set(_XML_SPACE, space)
    _fill(target, unit.line, english)
    if namespace == XLIFF_1:
        target.set("state", STATE_1[0])
        target.set("state-qualifier", STATE_1[1])
        if unit.languages.get("target-language") is None:
            unit.languages.set("target-language", "en")
    else:
        unit.holder.set("state", STATE_2[0])
        unit.holder.set("subState", STATE_2[1])
        if unit.languages.get("trgLang") is None:
            unit.languages.set("trgLang", "en")


@dataclass
class XliffFile(UnitLines):
    """An XLIFF file read for translation: its sources' lines, one a line, and ``rebuild`` to write the targets."""

    name: str
    data: bytes
    root: etree._Element
    namespace: str
    version: str
    declaration: bytes  # the XML declaration its translation starts with (b"" without one)
    units: list[_Unit] = field(default_factory=list)
    _rebuilt: bool = False

    @property
    def lines(self) -> list[str]:
        return [unit.line.line for unit in self.units]

    def rebuild(self, translations: Sequence[str]) -> bytes:
        """The file with each unit's target written from its translation (once per ``XliffFile``)."""
        if len(translations) != len(self.units):
            raise TranslatorError(
                f"the translation of {self.name} has {len(translations)} units, not {len(self.units)}"
            )
        if self._rebuilt:
            raise RuntimeError("an XliffFile is rebuilt once; read the file again")
        self._rebuilt = True
        if not self.units:
            return self.data
        for unit, english in zip(self.units, translations, strict=True):
            _write(unit, english, self.namespace)
        return _serialize(self.root, self.declaration)


def _declaration(data: bytes) -> bytes:
    """The XML declaration the translation starts with: UTF-8, the source's ``standalone`` (none without one)."""
    from handler.formats.packages import has_declaration

    if not has_declaration(data):
        return b""
    found = _STANDALONE.search(data.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"?>", 1)[0])
    standalone = f' standalone="{found.group(1).decode()}"' if found else ""
    return f'<?xml version="1.0" encoding="UTF-8"{standalone}?>\n'.encode()


def _serialize(root: etree._Element, declaration: bytes) -> bytes:
    """The whole document (a DOCTYPE, comments and processing instructions around the root too) as UTF-8."""
    from lxml import etree

    return declaration + bytes(etree.tostring(root.getroottree(), encoding="UTF-8", xml_declaration=False))


def _version(root: etree._Element, name: str) -> tuple[str, str]:
    """``(namespace, version)`` of an XLIFF root; the refusal saying what it is otherwise."""
    from handler.formats.packages import refusal

    tag = root.tag if isinstance(root.tag, str) else ""
    namespace, _, local = tag[1:].partition("}") if tag.startswith("{") else ("", "", tag)
    if local != "xliff":
        raise refusal(_KIND, name, f"has a root element <{local}>, not <xliff>", _HINT)
    version = (root.get("version") or "").strip()
    if namespace == XLIFF_1 and version in ("", "1.2"):
        return namespace, "1.2"
    if namespace == XLIFF_2 and version in ("", *VERSIONS_2):
        return namespace, version or "2.0"
    if namespace in (XLIFF_1, XLIFF_2) or namespace.startswith("urn:oasis:names:tc:xliff:document:"):
        shown = version or namespace.rsplit(":", 1)[-1]
        raise InvalidRequestError(
            f"{name} is XLIFF {shown}, which this server does not translate; it translates XLIFF 1.2 and "
            f"{', '.join(VERSIONS_2)}: export the file in one of them"
        )
    where = f"the namespace {namespace!r}" if namespace else "no namespace"
    raise refusal(_KIND, name, f"has an <xliff> root in {where} (XLIFF 1.2's is {XLIFF_1!r}, 2.x's {XLIFF_2!r})", _HINT)


def read_xliff_file(data: bytes, *, name: str = "the file") -> XliffFile:
    """``data`` read for translation; ``InvalidRequestError`` ("not a file in XLIFF 1.2 or 2.x: ...") if it is not
    one, declares or references entities, is another XLIFF version, or asks for another target language;
    ``XmlTooLargeError`` when it is over what a file's XML may cost (``handler.formats.packages.XML_BUDGET``),
    before it is parsed."""
    from handler.formats.packages import XmlMeter, parse_xml, refusal

    if not isinstance(data, bytes | bytearray):
        raise InvalidRequestError(f"{name}: an XLIFF file is bytes; got {type(data).__name__}")
    data = bytes(data)
    for _counted in XmlMeter(name, _KIND).counted(None, len(data), [data]):
        pass  # the whole file is one part, already in memory: counted at once
    try:
        root = parse_xml(data, "it")
    except ValueError as error:
        raise refusal(_KIND, name, str(error).removeprefix("it "), _HINT) from None
    namespace, version = _version(root, name)
    read = _units_1 if namespace == XLIFF_1 else _units_2
    return XliffFile(name, data, root, namespace, version, _declaration(data), list(read(root, name)))


class Xliff(UnitsFormat):
    name = "xliff"
    suffixes = (".xlf", ".xliff")
    content_type = XLIFF_CONTENT_TYPE
    encoding_description = XLIFF_ENCODING

    def parse(self, data: bytes, name: str) -> UnitsFile:
        return read_xliff_file(data, name=name)


XLIFF = Xliff()
