"""OpenDocument text (``.odt``): translate the paragraphs, keep everything else, inline formatting mapped onto the
English.

An ``.odt`` is a zip of XML parts. ``read_odt_file`` opens it through ``handler.formats.packages`` (the limits of
every zip format: unpacked size, entries, names; no entities) and refuses, saying "not a text document in
OpenDocument format (.odt): ...", data that is not a zip, a zip whose ``mimetype`` entry is not
``application/vnd.oasis.opendocument.text`` (a spreadsheet, a presentation, any other zip), a password-protected
package, and a missing or damaged ``content.xml``.

**Units**: every paragraph (``text:p``) and heading (``text:h``) holding Chinese, wherever it is: in ``content.xml``
the body, tables, lists, frames and text boxes, shapes, notes' bodies (``text:note-body``: each of its paragraphs is
a unit of its own), annotations, index bodies (a table of contents' entries, which match the translated headings);
in ``styles.xml`` the master pages' headers and footers. Paragraphs inside ``text:tracked-changes`` (deleted text
a change-tracking document remembers) are kept as they are. ``meta.xml`` (title, subject, author) is kept as it
is, as a ``.docx``'s document properties are.

ODF is mixed content: a paragraph's text sits in the paragraph itself and in nested ``text:span`` (character
styles) and ``text:a`` (links), between elements. One paragraph is one line for the model, merged whole:

* the text directly in the paragraph is bare, and so is the text of the containers that enclose all of its text
  (a paragraph wholly in one span or link); every other ``text:span``/``text:a`` is one pair of markup characters
  (``handler.text.spans``: MARKUP_OPEN + i, MARKUP_CLOSE + i), nested as the elements are, so a span inside a link
  is a pair inside the link's pair and its text keeps both (the whole style chain);
* every other element inside (``text:tab``, ``text:line-break``, ``draw:frame``, ``text:note``, bookmarks,
  reference marks, fields such as ``text:date`` or ``text:page-number``, annotations, change marks, ruby...) is a
  void character (MARKUP_STANDALONE + j), neighbouring ones one character; the element itself moves into the
  English unchanged (a note or a text box keeps its own translated paragraphs). Void elements before the first text
  or after the last stay where they are and never reach the model;
* ``text:s`` is its spaces; text nodes' white space is read as ODF says (runs of space, tab, CR and LF are one
  space; leading space of a paragraph is ignored); ``text:soft-page-break`` (a layout cache the editor recomputes)
  is dropped from translated paragraphs.

``rebuild`` (``handler.formats.runs.RunsPackage``, which counts each part's structure before and after) rebuilds
each unit from its English: the text between a pair goes into a copy of its element (same attributes), nested as the
English nests the pairs; a void's elements go where its character is; a void the translation dropped is appended at
the end of the paragraph and a link whose pair was dropped is appended empty (never lost); runs of spaces are
written as ODF needs (``text:s text:c``), and the spaces the English puts around a tab or a line break where the
source had none are taken out. Paragraphs without Chinese are not touched, and every entry of the package but the
translated parts is copied byte for byte (``mimetype`` first and stored). Before anything is returned each
translated part is checked: its paragraphs, headings, lists, tables, rows, cells, frames, images, text boxes, notes,
annotations, links, bookmarks, reference marks, fields, tabs and line breaks are as many as the source's.

Not translated (kept as they are): text inside fields (the editor recomputes them), ruby text, charts and embedded
objects (``Object 1/``), drawings' titles and descriptions, the document's metadata.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from lxml import etree

from handler.errors import InvalidRequestError
from handler.formats.packages import (
    Package,
    has_declaration,
    open_package,
    refusal,
)
from handler.formats.runs import RunsPackage, XmlPart, count_elements
from handler.text.segmentation import LINE_BREAKS
from handler.text.spans import MARKUP_CLOSE, MARKUP_LIMIT, MARKUP_OPEN, MARKUP_STANDALONE, has_chinese

ODT_MIMETYPE = "application/vnd.oasis.opendocument.text"
TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
DRAW = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"

_P, _H, _SPAN, _A, _S = (f"{{{TEXT}}}{name}" for name in ("p", "h", "span", "a", "s"))
_SPACES = f"{{{TEXT}}}c"
_CONTAINERS = frozenset({_SPAN, _A})  # paragraph descendants whose text is part of the sentence
_DROPPED = frozenset({f"{{{TEXT}}}soft-page-break"})
_SPACING = frozenset({f"{{{TEXT}}}tab", f"{{{TEXT}}}line-break"})  # voids the English's spaces should not touch
_MAX_SPACES = 1_000  # a text:s of more spaces is kept as an element (a void), not expanded into the line
# what a translated part must still have, in the same numbers (``structure_of``)
_FIELDS = (
    "date time page-number page-count page-continuation chapter file-name template-name sheet-name title subject "
    "description keywords initial-creator creation-date creation-time author-name author-initials "
    "sender-firstname sender-lastname sender-company sender-email word-count character-count paragraph-count "
    "sequence sequence-ref variable-set variable-get user-field-get user-defined bookmark-ref reference-ref "
    "note-ref placeholder text-input drop-down conditional-text hidden-text hidden-paragraph database-display"
).split()
COUNTED = {
    **{f"{{{TEXT}}}{name}": name for name in ("p", "h", "list", "list-item", "note", "note-body", "a", "tab")},
    **{f"{{{TEXT}}}{name}": name for name in ("line-break", "bookmark", "bookmark-start", "bookmark-end")},
    **{f"{{{TEXT}}}{name}": name for name in ("reference-mark", "reference-mark-start", "reference-mark-end")},
    **{f"{{{TEXT}}}{name}": "field" for name in _FIELDS},
    **{f"{{{TABLE}}}{name}": name for name in ("table", "table-row", "table-cell", "covered-table-cell")},
    **{f"{{{DRAW}}}{name}": name for name in ("frame", "image", "text-box", "object")},
    f"{{{OFFICE}}}annotation": "annotation",
}
_PER_KIND = MARKUP_CLOSE - MARKUP_OPEN  # markup characters of each kind one paragraph may use
_ODF_WHITESPACE = re.compile("[ \t\r\n]+")
# in a text node: what the model must not see (line breaks other than CR/LF, which ODF reads as spaces; markup
# characters a document happens to hold)
_UNSAFE_TEXT = re.compile(
    "[" + LINE_BREAKS.replace("\n", "").replace("\r", "") + f"{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]+"
)
_MARKUP_CHAR = re.compile(f"[{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]")
# what English text may not carry into a text node: line breaks and tabs (a space in ODF), XML's forbidden controls
_NOT_IN_ENGLISH = re.compile(f"[\t{LINE_BREAKS}]")
_NOT_IN_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_SPACE_RUNS = re.compile("( +|[^ ]+)")

Chain = tuple[etree._Element, ...]  # the span and link elements a piece of a paragraph sits in, outermost first


# --- the pieces of one paragraph ---------------------------------------------------------------------------------


@dataclass
class _Text:
    chain: Chain
    text: str


@dataclass(frozen=True)
class _Void:
    """Something that is not text, moved into the English as it is: an element (``text`` empty), or a text the
    model must not see (a line separator in a text node)."""

    chain: Chain
    element: etree._Element | None
    text: str = ""

    @property
    def payload(self) -> etree._Element | str:
        return self.text if self.element is None else self.element


_Item = _Text | _Void


class _Reader:
    """A paragraph's content in document order as texts and voids, each with its chain; white space read as ODF
    reads it."""

    def __init__(self) -> None:
        self.items: list[_Item] = []
        self.after_space = True  # a paragraph's leading space is ignored, as is a space after a space

    def walk(self, parent: etree._Element, chain: Chain) -> None:
        self.text(parent.text, chain)
        for child in parent:
            if isinstance(child.tag, str):  # comments and processing instructions are left out
                if child.tag in _CONTAINERS:
                    before = len(self.items)
                    self.walk(child, (*chain, child))
                    if len(self.items) == before:  # an empty span or link: kept whole
                        self.void(_Void(chain, child))
                elif child.tag == _S and (count := _spaces(child)):
                    self.add(chain, " " * count)
                    self.after_space = False  # a space after text:s is kept
                elif child.tag not in _DROPPED:
                    self.void(_Void(chain, child))
            self.text(child.tail, chain)

    def text(self, raw: str | None, chain: Chain) -> None:
        if not raw:
            return
        at = 0
        for match in _UNSAFE_TEXT.finditer(raw):
            self.plain(raw[at : match.start()], chain)
            self.void(_Void(chain, None, match.group()))
            at = match.end()
        self.plain(raw[at:], chain)

    def plain(self, raw: str, chain: Chain) -> None:
        text = _ODF_WHITESPACE.sub(" ", raw)
        if self.after_space and text.startswith(" "):
            text = text[1:]
        if text:
            self.after_space = text.endswith(" ")
            self.add(chain, text)

    def add(self, chain: Chain, text: str) -> None:
        last = self.items[-1] if self.items else None
        if isinstance(last, _Text) and last.chain == chain:
            last.text += text
        else:
            self.items.append(_Text(chain, text))

    def void(self, piece: _Void) -> None:
        self.items.append(piece)
        self.after_space = False


def _spaces(element: etree._Element) -> int | None:
    """A ``text:s``'s count of spaces (1 without ``text:c``); None when it is not a small count."""
    count = element.get(_SPACES)
    if count is None:
        return 1
    return int(count) if count.isdigit() and 0 < int(count) <= _MAX_SPACES else None


def _shares(chain: Chain, other: Chain, depth: int) -> bool:
    """Whether two chains share the container below the first ``depth`` ones."""
    return len(chain) > depth and len(other) > depth and chain[depth] is other[depth]


def _common(chains: Sequence[Chain]) -> Chain:
    first = chains[0]
    depth = 0
    while depth < len(first) and all(len(chain) > depth and chain[depth] is first[depth] for chain in chains):
        depth += 1
    return first[:depth]


def _prefix(stack: Sequence[etree._Element], chain: Sequence[etree._Element]) -> int:
    depth = 0
    while depth < len(stack) and depth < len(chain) and stack[depth] is chain[depth]:
        depth += 1
    return depth


@dataclass
class _Unit:
    """One paragraph to translate: its line for the model and how to rebuild it from the English."""

    paragraph: etree._Element
    line: str
    lead: list[_Item]  # void elements before the first text, kept in place
    trail: list[_Item]
    base: Chain  # the containers around all of the line's text
    openings: dict[str, etree._Element]  # opening character -> its container
    closings: dict[str, etree._Element]
    voids: dict[str, list[_Void]]  # void character -> its pieces
    space: tuple[str, str]  # whitespace around the line's text
    tight: dict[str, tuple[bool, bool]]  # tab and line-break voids: no space before, after them (``_tight``)

    def rebuild(self, english: str) -> None:
        _rebuild_paragraph(self, english)


def _unit(paragraph: etree._Element, items: list[_Item], name: str) -> _Unit | None:
    """The unit of a paragraph with Chinese text, None for any other."""
    texts = [i for i, item in enumerate(items) if isinstance(item, _Text)]
    if not texts or not has_chinese("".join(items[i].text for i in texts if isinstance(items[i], _Text))):
        return None
    first, last = texts[0], texts[-1]
    base = _common([item.chain for item in items[first : last + 1]])
    depth = len(base)
    # voids in a container that also holds the line's text travel with it (the container is copied once)
    while first > 0 and _shares(items[first - 1].chain, items[first].chain, depth):
        first -= 1
    while last < len(items) - 1 and _shares(items[last + 1].chain, items[last].chain, depth):
        last += 1
    line: list[str] = []
    stack: list[etree._Element] = []
    openings: dict[str, etree._Element] = {}
    closing_of: dict[etree._Element, str] = {}
    voids: dict[str, list[_Void]] = {}
    group: list[_Void] | None = None
    for item in items[first : last + 1]:
        relative = item.chain[depth:]
        keep = _prefix(stack, relative)
        if keep < len(stack) or keep < len(relative):
            group = None
        line.extend(closing_of[container] for container in reversed(stack[keep:]))
        del stack[keep:]
        for container in relative[keep:]:
            opening = chr(MARKUP_OPEN + len(openings))
            openings[opening] = container
            closing_of[container] = chr(MARKUP_CLOSE + len(openings) - 1)
            line.append(opening)
            stack.append(container)
        if isinstance(item, _Text):
            line.append(item.text)
            group = None
        elif group is None:
            group = [item]
            char = chr(MARKUP_STANDALONE + len(voids))
            voids[char] = group
            line.append(char)
        else:
            group.append(item)
    line.extend(closing_of[container] for container in reversed(stack))
    if len(openings) >= _PER_KIND or len(voids) >= MARKUP_LIMIT - MARKUP_STANDALONE:
        raise InvalidRequestError(f"{name} has a paragraph with too many formatting changes to translate")
    text = "".join(line)
    core = text.strip()
    start = text.find(core)
    closings = {char: container for container, char in closing_of.items()}
    space = (text[:start], text[start + len(core) :])
    return _Unit(
        paragraph, core, items[:first], items[last + 1 :], base, openings, closings, voids, space, _tight(core, voids)
    )


def _tight(line: str, voids: dict[str, list[_Void]]) -> dict[str, tuple[bool, bool]]:
    """The voids that are only tabs and line breaks, each with whether the source line has no space before it and
    after it: the English's spaces there are taken out (a line should not start with a space after a line break,
    nor a tab stop move)."""
    found = {}
    for char, group in voids.items():
        if all(piece.element is not None and piece.element.tag in _SPACING for piece in group):
            at = line.index(char)
            found[char] = (line[at - 1 : at] != " ", line[at + 1 : at + 2] != " ")
    return found


# --- rebuilding a paragraph --------------------------------------------------------------------------------------

_Piece = tuple[Chain, "etree._Element | str"]


def _rebuild_paragraph(unit: _Unit, english: str) -> None:
    """Replace the paragraph's content with what ``english`` (the unit's line translated) says."""
    english = unit.space[0] + _tightened(english.strip(), unit.tight) + unit.space[1]
    pieces: list[_Piece] = [(item.chain, _payload(item)) for item in unit.lead]
    pieces.append((unit.base, ""))  # the containers around the line's text, even if its English is empty
    stack: list[etree._Element] = []
    opened: set[str] = set()
    used: set[str] = set()

    def text(piece: str) -> None:
        if piece:
            pieces.append(((*unit.base, *stack), _NOT_IN_XML.sub("", _NOT_IN_ENGLISH.sub(" ", piece))))

    at = 0
    for match in _MARKUP_CHAR.finditer(english):
        text(english[at : match.start()])
        at = match.end()
        char = match.group()
        if char in unit.openings and char not in opened:
            opened.add(char)
            stack.append(unit.openings[char])
            if stack[-1].tag == _A:
                pieces.append(((*unit.base, *stack), ""))  # a link whose English is empty is still there
        elif char in unit.closings and unit.closings[char] in stack:
            del stack[stack.index(unit.closings[char]) :]
        elif char in unit.voids and char not in used:
            used.add(char)
            pieces.extend(((*unit.base, *stack), piece.payload) for piece in unit.voids[char])
    text(english[at:])
    for char, group in unit.voids.items():  # never lost: a void the translation dropped goes at the end
        if char not in used:
            pieces.extend((unit.base, piece.payload) for piece in group)
    for char, container in unit.openings.items():  # nor a link: its pair dropped, it comes back empty
        if char not in opened and container.tag == _A:
            pieces.append(((*unit.base, container), ""))
    pieces.extend((item.chain, _payload(item)) for item in unit.trail)
    _write_paragraph(unit.paragraph, pieces)


def _tightened(english: str, tight: dict[str, tuple[bool, bool]]) -> str:
    for char, (before, after) in tight.items():
        at = english.find(char)
        if at >= 0:
            head, tail = english[:at], english[at + 1 :]
            english = (head.rstrip(" ") if before else head) + char + (tail.lstrip(" ") if after else tail)
    return english


def _payload(item: _Item) -> etree._Element | str:
    return item.text if isinstance(item, _Text) else item.payload


class _SpaceWriter:
    """Text appended as ODF reads it back: a run of spaces is one space and ``text:s text:c`` for the rest, all of
    it ``text:s`` where a space would be ignored (a paragraph's start, after a space or an element)."""

    def __init__(self) -> None:
        self.after_space = True

    def text(self, parent: etree._Element, text: str) -> None:
        for chunk in _SPACE_RUNS.findall(text):
            if not chunk.startswith(" "):
                _append_text(parent, chunk)
                self.after_space = False
                continue
            count = len(chunk)
            if not self.after_space:
                _append_text(parent, " ")
                count -= 1
            if count:
                spaces = etree.SubElement(parent, _S)
                if count > 1:
                    spaces.set(_SPACES, str(count))
            self.after_space = True

    def element(self) -> None:
        self.after_space = True


def _append_text(parent: etree._Element, text: str) -> None:
    if len(parent):
        last = parent[-1]
        last.tail = (last.tail or "") + text
    else:
        parent.text = (parent.text or "") + text


def _write_paragraph(paragraph: etree._Element, pieces: list[_Piece]) -> None:
    """The paragraph's children replaced by ``pieces``: each text or element inside copies of its chain's
    containers (neighbouring pieces in the same container share its copy)."""
    for child in list(paragraph):
        paragraph.remove(child)
    paragraph.text = None
    writer = _SpaceWriter()
    open_copies: list[tuple[etree._Element, etree._Element]] = []  # (source container, its copy)
    for chain, node in pieces:
        keep = _prefix([source for source, _ in open_copies], chain)
        del open_copies[keep:]
        for container in chain[keep:]:
            parent = open_copies[-1][1] if open_copies else paragraph
            copy = container.makeelement(container.tag, dict(container.attrib))
            parent.append(copy)
            open_copies.append((container, copy))
        target = open_copies[-1][1] if open_copies else paragraph
        if isinstance(node, str):
            writer.text(target, node)
        else:
            node.tail = None  # moved without the source text that followed it
            target.append(node)
            writer.element()


# --- the document ------------------------------------------------------------------------------------------------


def structure_of(root: etree._Element) -> dict[str, int]:
    """How many of each counted element (``COUNTED``: paragraphs, tables, cells, frames, notes, links, bookmarks,
    fields...) a part holds: what a faithful translation keeps."""
    return count_elements(root, COUNTED)


_KIND = "text document in OpenDocument format (.odt)"
_HINT = "send an .odt saved by LibreOffice, OpenOffice or Word"
# where each part's translated paragraphs are: the body of content.xml, the master pages (headers, footers) of
# styles.xml
_SCOPES = {"content.xml": f"{{{OFFICE}}}body", "styles.xml": f"{{{OFFICE}}}master-styles"}
_TRACKED = f"{{{TEXT}}}tracked-changes"
_ENCRYPTION = "{urn:oasis:names:tc:opendocument:xmlns:manifest:1.0}encryption-data"


def _refuse(name: str, reason: str) -> InvalidRequestError:
    return refusal(_KIND, name, reason, _HINT)


def read_odt_file(data: bytes, *, name: str = "the file") -> RunsPackage:
    """``data`` read for translation; ``InvalidRequestError`` ("not a text document in OpenDocument format (.odt):
    ...") if it is not one (the limits of ``handler.formats.packages``: unpacked size, entries, no entities)."""
    package = open_package(data, name, _KIND, _HINT)
    _check_package(package, name)
    parts: list[XmlPart] = []
    for entry, scope_tag in _SCOPES.items():
        if entry not in package.names:
            if entry == "content.xml":
                raise _refuse(name, "has no content.xml (the document's text)")
            continue
        try:
            raw, root = package.part(entry)
        except ValueError as error:
            raise _refuse(name, f"has a damaged part: {error}") from None
        if entry == "content.xml" and root.find(f"{{{OFFICE}}}body/{{{OFFICE}}}text") is None:
            raise _refuse(name, "has a content.xml without a text body (office:body/office:text)")
        part = XmlPart(entry, root, has_declaration(raw))
        for scope in root.iter(scope_tag):
            part.units.extend(_units_of(scope, name))
        parts.append(part)
    return RunsPackage(name, package.data, list(package.entries), parts, structure_of)


def _check_package(package: Package, name: str) -> None:
    """Refuse a zip that is not an ODF text document, or is encrypted."""
    if "mimetype" not in package.names:
        raise _refuse(name, "is a zip archive without a mimetype entry (every OpenDocument file starts with one)")
    mimetype = package.read("mimetype").decode("ascii", "replace").strip()
    if mimetype != ODT_MIMETYPE:
        shown = mimetype[:100] or "empty"
        raise _refuse(name, f"is a package of type {shown!r}, not {ODT_MIMETYPE}")
    if "META-INF/manifest.xml" in package.names:
        try:
            manifest = package.xml("META-INF/manifest.xml")
        except ValueError as error:
            raise _refuse(name, f"has a damaged part: {error}") from None
        if next(manifest.iter(_ENCRYPTION), None) is not None:
            raise _refuse(name, "is encrypted (saved with a password); save it without one")


def _units_of(scope: etree._Element, name: str) -> list[_Unit]:
    kept = {paragraph for tracked in scope.iter(_TRACKED) for paragraph in tracked.iter(_P, _H)}
    units = []
    for paragraph in scope.iter(_P, _H):
        if paragraph in kept:
            continue
        reader = _Reader()
        reader.walk(paragraph, ())
        unit = _unit(paragraph, reader.items, name)
        if unit is not None:
            units.append(unit)
    return units
