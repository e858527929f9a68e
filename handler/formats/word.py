"""Word documents (``.docx``): translate the text, keep everything else, formatting runs mapped onto the English.

A ``.docx`` is a zip of XML parts. ``read_word_file`` opens it (``python-docx``'s package reader checks that it
is a Word document and names the parts by content type; anything else is an ``InvalidRequestError`` saying "not a
Word .docx document: ..."), and collects the **units** to translate: every paragraph (``w:p``) that holds Chinese in

* the main document: body paragraphs, tables (nested tables too), content controls, text boxes (``w:txbxContent``);
* every header and footer part (default, first-page and even-page variants of every section);
* the footnotes, endnotes and comments parts.

One paragraph is one unit, whatever its runs: runs are merged, so a sentence split by a bold word is translated
whole, never as half-sentences. Inside a unit, formatting becomes the markup characters of ``handler.text.spans``
(the ones ``handler.text.markup`` uses for inline HTML tags), which the translation pipeline protects:

* the text of the most used run formatting (``w:rPr``; inside a hyperlink: hyperlink and formatting) is bare text;
  each stretch in another formatting, or in a hyperlink (``w:hyperlink``, ``w:smartTag``, ``w:ins``), is wrapped in
  an opening and a closing character, so the English between them gets that stretch's ``w:rPr`` (bold, italic,
  underline, colour, character style, ...) and container (a hyperlink keeps its ``r:id`` or anchor);
* whatever is not text (images ``w:drawing``/``w:pict``, tabs, breaks, note and comment references, symbols,
  fields ``w:fldSimple`` and complex fields ``w:fldChar``...``w:instrText``... with their results, bookmarks,
  comment ranges, equations, inline content controls, deleted text) is a void character in its place: the element
  itself is moved into the English, unchanged; neighbouring ones travel as one. Void elements before the first text
  or after the last stay where they are and never reach the model. Spell-check marks (``w:proofErr``) and
  ``w:lastRenderedPageBreak`` (layout caches Word recomputes) are dropped from translated paragraphs.

The units, one a line, go to the caller's translator (``handler.formats.word_format`` passes ``FileTranslator.lines``:
the service with the file's options, deadline and progress; the fan-out translates the same text in parts cut
between lines). ``WordFile.rebuild`` then replaces each unit's runs with runs built from the English,
each carrying a copy of its source run's ``w:rPr``. Paragraphs without Chinese are not touched; a part without a
translated paragraph, and every part that carries no text (styles, images, settings, relationships...) is copied
from the source byte for byte. The result is checked before it is returned: its translated parts have the source's
paragraphs, tables, cells, images, notes, references, fields, bookmarks, tabs and breaks, in the same numbers.

Not translated (kept as they are): text inside fields (a table of contents, page numbers: Word recomputes them),
inline content controls (``w:sdt`` inside a paragraph), charts, SmartArt, equations, document properties and the
glossary (building blocks) part.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from copy import deepcopy
from dataclasses import dataclass, field

from lxml import etree

from handler.errors import InvalidRequestError, TranslatorError
from handler.formats.packages import has_declaration, open_package, parse_xml, refusal, serialize, write_package
from handler.text.segmentation import LINE_BREAKS
from handler.text.spans import MARKUP_CLOSE, MARKUP_LIMIT, MARKUP_OPEN, MARKUP_STANDALONE, has_chinese

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
_CT = "application/vnd.openxmlformats-officedocument.wordprocessingml."
# the parts whose paragraphs are translated, by content type, in the order their units are listed
TEXT_PARTS = {
    _CT + "document.main+xml": "document",
    _CT + "header+xml": "header",
    _CT + "footer+xml": "footer",
    _CT + "footnotes+xml": "footnotes",
    _CT + "endnotes+xml": "endnotes",
    _CT + "comments+xml": "comments",
}
_PART_ORDER = tuple(dict.fromkeys(TEXT_PARTS.values()))
_PER_KIND = MARKUP_CLOSE - MARKUP_OPEN  # markup characters of each kind one paragraph may use


def _w(name: str) -> str:
    return f"{{{W}}}{name}"


_P, _R, _T, _RPR, _PPR = _w("p"), _w("r"), _w("t"), _w("rPr"), _w("pPr")
_FLD_CHAR, _INSTR_TEXT = _w("fldChar"), _w("instrText")
# paragraph children whose runs are part of the sentence (one level deep)
_CONTAINERS = frozenset({_w("hyperlink"), _w("smartTag"), _w("ins")})
_DROPPED = frozenset({_w("proofErr"), _w("lastRenderedPageBreak")})
# what a translated part must still have, in the same numbers (``structure``)
COUNTED = (
    "p tbl tr tc drawing pict tab br cr sym footnoteReference endnoteReference commentReference footnote endnote "
    "comment fldSimple fldChar instrText bookmarkStart bookmarkEnd commentRangeStart commentRangeEnd sectPr "
    "txbxContent object"
).split()
_COUNTED_TAGS = {_w(name): name for name in COUNTED}
_UNSAFE_TEXT = re.compile(f"[{LINE_BREAKS}\t{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]+")
_MARKUP_CHAR = re.compile(f"[{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]")


# --- the pieces of one paragraph ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Void:
    """Something that is not text, moved into the English as it is: a paragraph child (``run`` None) or one child
    of a run (``run``: its formatting goes with it), or a text the model must not see (a line break in a ``w:t``)."""

    element: etree._Element | None
    run: etree._Element | None = None
    text: str = ""

    def build(self) -> etree._Element:
        if self.run is None:
            assert self.element is not None
            return self.element
        new = _new_run(self.run)
        if self.element is not None:
            new.append(self.element)  # moved, not copied: a text box inside keeps its own translation
        else:
            _add_text(new, self.text)
        return new


@dataclass(frozen=True)
class _Style:
    """What a stretch of text carries: its container (hyperlink...) and its run's formatting."""

    container: etree._Element | None
    rpr: bytes  # the w:rPr serialised ("" if none): equal bytes, equal formatting


@dataclass
class _Text:
    style: _Style
    run: etree._Element  # the first source run of this stretch: its w:rPr and attributes are copied
    text: str


@dataclass
class _Voids:
    container: etree._Element | None
    voids: list[_Void]


_Item = _Text | _Voids


@dataclass
class _Unit:
    """One paragraph to translate: its line for the model and how to rebuild it from the English."""

    paragraph: etree._Element
    line: str
    lead: list[_Item]  # void elements before the first text, kept in place
    trail: list[_Item]
    base: _Style
    base_run: etree._Element
    stretches: dict[str, tuple[_Style, etree._Element]]  # opening character -> style, source run
    voids: dict[str, _Voids]  # void character -> its elements
    space: tuple[str, str]  # whitespace around the line's text


def _new_run(source: etree._Element) -> etree._Element:
    run = source.makeelement(_R, dict(source.attrib))
    rpr = source.find(_RPR)
    if rpr is not None:
        run.append(deepcopy(rpr))
    return run


def _add_text(run: etree._Element, text: str) -> None:
    t = etree.SubElement(run, _T)
    t.text = text
    t.set(_XML_SPACE, "preserve")


class _FieldState:
    """Complex fields (``w:fldChar`` begin ... end) may span runs and paragraphs: their runs are kept whole."""

    def __init__(self) -> None:
        self.depth = 0

    def consume(self, run: etree._Element) -> bool:
        """Whether ``run`` belongs to a field (it is then kept as one void element)."""
        inside = self.depth > 0
        for child in run:
            if child.tag == _FLD_CHAR:
                kind = child.get(_w("fldCharType"))
                if kind == "begin":
                    self.depth += 1
                    inside = True
                elif kind == "end" and self.depth > 0:
                    self.depth -= 1
            elif child.tag == _INSTR_TEXT:
                inside = True
        return inside


def _paragraph_items(paragraph: etree._Element, fields: _FieldState) -> list[_Item]:
    items: list[_Item] = []

    def void(container: etree._Element | None, piece: _Void) -> None:
        if items and isinstance(items[-1], _Voids) and items[-1].container is container:
            items[-1].voids.append(piece)
        else:
            items.append(_Voids(container, [piece]))

    def run_items(run: etree._Element, container: etree._Element | None) -> None:
        if fields.consume(run):
            void(container, _Void(run))
            return
        rpr = run.find(_RPR)
        style = _Style(container, b"" if rpr is None else etree.tostring(rpr))
        for child in run:
            if child.tag == _RPR or child.tag in _DROPPED or not isinstance(child.tag, str):
                continue
            if child.tag != _T:
                void(container, _Void(child, run))
                continue
            text = child.text or ""
            at = 0
            for match in _UNSAFE_TEXT.finditer(text):
                _add(items, style, run, text[at : match.start()])
                void(container, _Void(None, run, match.group()))
                at = match.end()
            _add(items, style, run, text[at:])

    def walk(parent: etree._Element, container: etree._Element | None) -> None:
        for child in parent:
            if child.tag == _PPR or child.tag in _DROPPED or not isinstance(child.tag, str):
                continue  # the paragraph's properties stay first; comments and PIs are left out of the XML tree walk
            if child.tag == _R:
                run_items(child, container)
            elif child.tag in _CONTAINERS and container is None:
                walk(child, child)
            else:
                void(container, _Void(child))

    walk(paragraph, None)
    return items


def _add(items: list[_Item], style: _Style, run: etree._Element, text: str) -> None:
    if not text:
        return
    last = items[-1] if items else None
    if isinstance(last, _Text) and last.style == style:
        last.text += text
    else:
        items.append(_Text(style, run, text))


def _unit(paragraph: etree._Element, items: list[_Item], name: str) -> _Unit | None:
    """The unit of a paragraph with Chinese text, None for any other."""
    texts = [item for item in items if isinstance(item, _Text)]
    if not has_chinese("".join(item.text for item in texts)):
        return None
    first = next(i for i, item in enumerate(items) if isinstance(item, _Text))
    last = max(i for i, item in enumerate(items) if isinstance(item, _Text))
    weights: Counter[_Style] = Counter()
    runs: dict[_Style, etree._Element] = {}
    for piece in texts:
        weights[piece.style] += len(piece.text)
        runs.setdefault(piece.style, piece.run)
    base = max(weights, key=lambda style: (weights[style], style.container is None))  # ties: outside containers
    line: list[str] = []
    stretches: dict[str, tuple[_Style, etree._Element]] = {}
    voids: dict[str, _Voids] = {}
    for item in items[first : last + 1]:
        if isinstance(item, _Voids):
            char = chr(MARKUP_STANDALONE + len(voids))
            voids[char] = item
            line.append(char)
        elif item.style == base:
            line.append(item.text)
        else:
            opening = chr(MARKUP_OPEN + len(stretches))
            stretches[opening] = (item.style, item.run)
            line.append(opening + item.text + chr(ord(opening) - MARKUP_OPEN + MARKUP_CLOSE))
    if len(stretches) >= _PER_KIND or len(voids) >= MARKUP_LIMIT - MARKUP_STANDALONE:
        raise InvalidRequestError(f"{name} has a paragraph with too many formatting changes to translate")
    text = "".join(line)
    core = text.strip()
    start = text.find(core)
    return _Unit(
        paragraph,
        core,
        items[:first],
        items[last + 1 :],
        base,
        runs[base],
        stretches,
        voids,
        (text[:start], text[start + len(core) :]),
    )


def _rebuild_paragraph(unit: _Unit, english: str) -> None:
    """Replace the paragraph's content with runs built from ``english`` (the unit's line translated)."""
    english = unit.space[0] + english.strip() + unit.space[1]
    pieces: list[tuple[etree._Element | None, etree._Element]] = []  # (container, element to append)
    used: set[str] = set()

    def emit_voids(group: _Voids) -> None:
        for piece in group.voids:
            pieces.append((group.container, piece.build()))

    def emit_text(style: _Style, run: etree._Element, text: str) -> None:
        if text:
            new = _new_run(run)
            _add_text(new, text)
            pieces.append((style.container, new))

    for item in unit.lead:
        _emit_item(item, emit_voids, emit_text)
    style, run = unit.base, unit.base_run
    at = 0
    for match in _MARKUP_CHAR.finditer(english):
        emit_text(style, run, english[at : match.start()])
        at = match.end()
        char = match.group()
        if char in unit.stretches:
            style, run = unit.stretches[char]
        elif MARKUP_CLOSE <= ord(char) < MARKUP_STANDALONE:
            style, run = unit.base, unit.base_run
        elif char in unit.voids and char not in used:
            used.add(char)
            emit_voids(unit.voids[char])
    emit_text(style, run, english[at:])
    for char, group in unit.voids.items():  # never lost: a void the translation dropped goes at the end
        if char not in used:
            emit_voids(group)
    for item in unit.trail:
        _emit_item(item, emit_voids, emit_text)

    paragraph = unit.paragraph
    for child in list(paragraph):
        if child.tag != _PPR:
            paragraph.remove(child)
    open_container: tuple[etree._Element, etree._Element] | None = None  # (source container, its copy)
    for container, element in pieces:
        if container is None:
            open_container = None
            paragraph.append(element)
            continue
        if open_container is None or open_container[0] is not container:
            # a container's children are all runs or voids (walked above): its copy starts empty
            copy = container.makeelement(container.tag, dict(container.attrib))
            paragraph.append(copy)
            open_container = (container, copy)
        open_container[1].append(element)


def _emit_item(
    item: _Item,
    emit_voids: Callable[[_Voids], None],
    emit_text: Callable[[_Style, etree._Element, str], None],
) -> None:
    if isinstance(item, _Voids):
        emit_voids(item)
    else:
        emit_text(item.style, item.run, item.text)


# --- the document ------------------------------------------------------------------------------------------------


@dataclass
class _TextEntry:
    entry: str  # the zip entry's name
    kind: str
    root: etree._Element
    declaration: bool
    units: list[_Unit] = field(default_factory=list)


@dataclass
class WordFile:
    """A ``.docx`` read for translation: its units' lines, and ``rebuild`` to put their translations back."""

    name: str
    data: bytes
    entries: list[zipfile.ZipInfo]
    parts: list[_TextEntry]
    _rebuilt: bool = False

    @property
    def units(self) -> list[_Unit]:
        return [unit for part in self.parts for unit in part.units]

    @property
    def lines(self) -> list[str]:
        """The text to translate: one paragraph a line (formatting and void elements as markup characters)."""
        return [unit.line for unit in self.units]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def characters(self) -> int:
        return sum(len(line) for line in self.lines)

    def translate(self, translate_document: Callable[[str], str]) -> bytes:
        """The translated ``.docx``: ``translate_document`` turns the units' text (one a line) into English."""
        lines = self.lines
        if not lines:
            return self.rebuild([])
        output = translate_document("\n".join(lines)).split("\n")
        return self.rebuild(output)

    def rebuild(self, translations: Sequence[str]) -> bytes:
        """The ``.docx`` with each unit's runs rebuilt from its translation (once per ``WordFile``)."""
        units = self.units
        if len(translations) != len(units):
            raise TranslatorError(
                f"the translation of {self.name} has {len(translations)} paragraphs, not {len(units)}"
            )
        if self._rebuilt:
            raise RuntimeError("a WordFile is rebuilt once; read the document again")
        self._rebuilt = True
        before = {part.entry: structure_of(part.root) for part in self.parts if part.units}
        for unit, english in zip(units, translations, strict=True):
            _rebuild_paragraph(unit, english)
        changed: dict[str, bytes] = {}
        for part in self.parts:
            if not part.units:
                continue
            after = structure_of(part.root)
            if after != before[part.entry]:
                raise TranslatorError(
                    f"translating {self.name} changed the structure of {part.entry}: {before[part.entry]} became "
                    f"{after}; nothing was written"
                )
            changed[part.entry] = serialize(part.root, declaration=part.declaration)
        return write_package(self.data, self.entries, changed)


def structure_of(root: etree._Element) -> dict[str, int]:
    """How many of each ``COUNTED`` element a part holds (what a faithful translation keeps)."""
    found: Counter[str] = Counter()
    for element in root.iter():
        name = _COUNTED_TAGS.get(element.tag) if isinstance(element.tag, str) else None
        if name is not None:
            found[name] += 1
    return dict(sorted(found.items()))


_HINT = "send a .docx saved by Word or LibreOffice"


def _refuse(name: str, reason: str) -> InvalidRequestError:
    return refusal("Word .docx document", name, reason, _HINT)


def read_word_file(data: bytes, *, name: str = "the file") -> WordFile:
    """``data`` read for translation; ``InvalidRequestError`` ("not a Word .docx document: ...") if it is not one
    (the limits of ``handler.formats.packages``: unpacked size, entries, no entities)."""
    package = open_package(data, name, "Word .docx document", _HINT)
    kinds = _text_part_entries(package.data, name)
    parts: list[_TextEntry] = []
    for entry, kind in kinds:
        if entry not in package.names:
            raise _refuse(name, f"names a part {entry} that is not in the archive")
        raw = package.read(entry)
        try:
            root = parse_xml(raw, entry)
        except ValueError as error:
            raise _refuse(name, f"has a damaged part: {error}") from None
        parts.append(_TextEntry(entry, kind, root, has_declaration(raw)))
    parts.sort(key=lambda part: (_PART_ORDER.index(part.kind), _natural(part.entry)))
    for part in parts:
        fields = _FieldState()
        for paragraph in list(part.root.iter(_P)):
            unit = _unit(paragraph, _paragraph_items(paragraph, fields), name)
            if unit is not None:
                part.units.append(unit)
    return WordFile(name, package.data, list(package.entries), parts)


def _natural(entry: str) -> tuple[str, int]:
    match = re.search(r"(\d+)\.xml$", entry)
    return (entry[: match.start()] if match else entry, int(match.group(1)) if match else 0)


def _text_part_entries(data: bytes, name: str) -> list[tuple[str, str]]:
    """``(zip entry, kind)`` of every part whose paragraphs are translated, by ``python-docx``'s package reader."""
    import docx  # python-docx
    from docx.opc.constants import CONTENT_TYPE

    try:
        document = docx.Document(io.BytesIO(data))
    except ValueError as error:  # python-docx: "file ... is not a Word file, content type is ..."
        raise _refuse(name, f"is another kind of Office file ({error})") from None
    except Exception as error:
        detail = str(error) or type(error).__name__
        raise _refuse(name, f"cannot be read as one ({detail})") from None
    if document.part.content_type != CONTENT_TYPE.WML_DOCUMENT_MAIN:
        raise _refuse(name, f"has a main part of type {document.part.content_type}")
    found = []
    for part in document.part.package.iter_parts():
        kind = TEXT_PARTS.get(part.content_type)
        if kind is not None:
            found.append((str(part.partname).lstrip("/"), kind))
    return found


def iter_text_entries(data: bytes) -> Iterator[tuple[str, str, etree._Element]]:
    """``(zip entry, kind, root)`` of each translated part of a ``.docx`` (for tests and the fidelity report)."""
    document = read_word_file(data)
    for part in document.parts:
        yield part.entry, part.kind, part.root


def translate_word_file(translate_document: Callable[[str], str], data: bytes, *, name: str = "the file") -> bytes:
    """The ``.docx`` ``data`` with its text in English and everything else as it was (see the module's docstring).

    ``translate_document`` translates a text of one paragraph a line into as many lines."""
    return read_word_file(data, name=name).translate(translate_document)
