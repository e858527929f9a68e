"""Paragraphs of formatting runs (Word's ``w:p``, PowerPoint's ``a:p``, Excel's rich text): one line for the model,
the English put back with each stretch's formatting. One engine, told each format's tags by a ``RunDialect``.

A paragraph is one unit, whatever its runs: runs are merged, so a sentence split by a bold word (or by a run
boundary inside a word) is translated whole, never as half-sentences. Inside a unit, formatting becomes the markup
characters of ``handler.text.spans`` (the ones ``handler.text.markup`` uses for inline HTML tags), which the
translation pipeline protects:

* the text of the most used run formatting (the run's properties element; inside a container such as Word's
  hyperlink: container and formatting) is bare text; each stretch in another formatting or container is wrapped
  in an opening and a closing character, so the English between them gets that stretch's properties and container;
* whatever is not text (a paragraph child that is not a run or container, a run's child that is not its text
  element, a line break or tab inside a text element) is a void character in its place: the element itself is
  moved into the English, unchanged; neighbouring ones travel as one. Void elements before the first text or after
  the last stay where they are and never reach the model.

``RunParagraph.rebuild`` replaces the paragraph's content with runs built from the English, each carrying a copy of
its source run's properties and attributes; a void the translation dropped goes at the end, never lost.
``RunsPackage`` is a zip package's translated XML parts with their units (``handler.formats.base.UnitsFile``): it
checks each changed part's structure before writing (``handler.formats.packages.write_package``).
"""

from __future__ import annotations

import re
import zipfile
from collections import Counter
from collections.abc import Callable, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Protocol

from lxml import etree

from handler.errors import InvalidRequestError, TranslatorError
from handler.formats.base import UnitLines
from handler.formats.packages import serialize, write_package
from handler.text.segmentation import LINE_BREAKS
from handler.text.spans import MARKUP_CLOSE, MARKUP_LIMIT, MARKUP_OPEN, MARKUP_STANDALONE, has_chinese

_XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
_PER_KIND = MARKUP_CLOSE - MARKUP_OPEN  # markup characters of each kind one paragraph may use
UNSAFE_TEXT = re.compile(f"[{LINE_BREAKS}\t{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]+")
MARKUP_CHAR = re.compile(f"[{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]")


@dataclass(frozen=True)
class RunDialect:
    """One format's tags (Clark notation, ``{namespace}name``) for a paragraph of runs."""

    run: str
    text: str
    properties: str
    kept_first: frozenset[str]  # paragraph children kept first, not content (w:pPr, a:pPr)
    kept_last: frozenset[str] = frozenset()  # paragraph children kept last (a:endParaRPr)
    containers: frozenset[str] = frozenset()  # paragraph children whose runs belong to the sentence (w:hyperlink)
    dropped: frozenset[str] = frozenset()  # removed from a translated paragraph (Word's spell-check marks)
    preserve_space: bool = False  # text elements say xml:space="preserve" (Word, SpreadsheetML; not DrawingML)
    field_char: str | None = None  # Word's complex fields: w:fldChar ... w:instrText ... runs kept whole
    field_type: str | None = None  # the field character's type attribute (begin, separate, end)
    instr_text: str | None = None


class Unit(Protocol):
    """One unit of a structured file: its line for the model, and how its translation is put back."""

    @property
    def line(self) -> str: ...

    def rebuild(self, english: str) -> None: ...


class FieldState:
    """Word's complex fields (``w:fldChar`` begin ... end) may span runs and paragraphs: their runs are kept whole.
    One state per part, shared by its paragraphs in document order."""

    def __init__(self) -> None:
        self.depth = 0

    def consume(self, run: etree._Element, dialect: RunDialect) -> bool:
        """Whether ``run`` belongs to a field (it is then kept as one void element)."""
        inside = self.depth > 0
        if dialect.field_char is None:
            return inside
        for child in run:
            if child.tag == dialect.field_char:
                kind = child.get(dialect.field_type or "")
                if kind == "begin":
                    self.depth += 1
                    inside = True
                elif kind == "end" and self.depth > 0:
                    self.depth -= 1
            elif child.tag == dialect.instr_text:
                inside = True
        return inside


# --- the pieces of one paragraph ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Void:
    """Something that is not text, moved into the English as it is: a paragraph child (``run`` None) or one child
    of a run (``run``: its formatting goes with it), or a text the model must not see (a line break in a text)."""

    element: etree._Element | None
    dialect: RunDialect
    run: etree._Element | None = None
    text: str = ""

    def build(self) -> etree._Element:
        if self.run is None:
            assert self.element is not None
            return self.element
        new = _new_run(self.run, self.dialect)
        if self.element is not None:
            new.append(self.element)  # moved, not copied: a text box inside keeps its own translation
        else:
            _add_text(new, self.text, self.dialect)
        return new


@dataclass(frozen=True)
class _Style:
    """What a stretch of text carries: its container (hyperlink...) and its run's formatting."""

    container: etree._Element | None
    properties: bytes  # the run's properties serialised ("" if none): equal bytes, equal formatting


@dataclass
class _Text:
    style: _Style
    run: etree._Element  # the first source run of this stretch: its properties and attributes are copied
    text: str


@dataclass
class _Voids:
    container: etree._Element | None
    voids: list[_Void]


_Item = _Text | _Voids


def _new_run(source: etree._Element, dialect: RunDialect) -> etree._Element:
    run = source.makeelement(dialect.run, dict(source.attrib))
    properties = source.find(dialect.properties)
    if properties is not None:
        run.append(deepcopy(properties))
    return run


def _add_text(run: etree._Element, text: str, dialect: RunDialect) -> None:
    t = etree.SubElement(run, dialect.text)
    t.text = text
    if dialect.preserve_space:
        t.set(_XML_SPACE, "preserve")


def _paragraph_items(paragraph: etree._Element, dialect: RunDialect, fields: FieldState) -> list[_Item]:
    items: list[_Item] = []
    kept = dialect.kept_first | dialect.kept_last | dialect.dropped

    def void(container: etree._Element | None, piece: _Void) -> None:
        if items and isinstance(items[-1], _Voids) and items[-1].container is container:
            items[-1].voids.append(piece)
        else:
            items.append(_Voids(container, [piece]))

    def run_items(run: etree._Element, container: etree._Element | None) -> None:
        if fields.consume(run, dialect):
            void(container, _Void(run, dialect))
            return
        properties = run.find(dialect.properties)
        style = _Style(container, b"" if properties is None else etree.tostring(properties))
        for child in run:
            if child.tag == dialect.properties or child.tag in dialect.dropped or not isinstance(child.tag, str):
                continue
            if child.tag != dialect.text:
                void(container, _Void(child, dialect, run))
                continue
            text = child.text or ""
            at = 0
            for match in UNSAFE_TEXT.finditer(text):
                _add(items, style, run, text[at : match.start()])
                void(container, _Void(None, dialect, run, match.group()))
                at = match.end()
            _add(items, style, run, text[at:])

    def walk(parent: etree._Element, container: etree._Element | None) -> None:
        for child in parent:
            if child.tag in kept or not isinstance(child.tag, str):
                continue  # properties stay in place; comments and PIs are left out of the walk
            if child.tag == dialect.run:
                run_items(child, container)
            elif child.tag in dialect.containers and container is None:
                walk(child, child)
            else:
                void(container, _Void(child, dialect))

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


@dataclass
class RunParagraph:
    """One paragraph to translate: its line for the model and how to rebuild it from the English."""

    paragraph: etree._Element
    dialect: RunDialect
    line: str
    lead: list[_Item]  # void elements before the first text, kept in place
    trail: list[_Item]
    base: _Style
    base_run: etree._Element
    stretches: dict[str, tuple[_Style, etree._Element]]  # opening character -> style, source run
    voids: dict[str, _Voids]  # void character -> its elements
    space: tuple[str, str]  # whitespace around the line's text

    def rebuild(self, english: str) -> None:
        """Replace the paragraph's content with runs built from ``english`` (the line translated)."""
        pieces: list[tuple[etree._Element | None, etree._Element]] = []  # (container, element to append)
        for item in self.lead:
            pieces.extend(self._item_pieces(item))
        pieces.extend(self._english_pieces(self.space[0] + english.strip() + self.space[1]))
        for item in self.trail:
            pieces.extend(self._item_pieces(item))
        self._replace_content(pieces)

    def _english_pieces(self, english: str) -> list[tuple[etree._Element | None, etree._Element]]:
        pieces: list[tuple[etree._Element | None, etree._Element]] = []
        used: set[str] = set()
        style, run = self.base, self.base_run
        at = 0
        for match in MARKUP_CHAR.finditer(english):
            pieces.extend(self._text_pieces(style, run, english[at : match.start()]))
            at = match.end()
            char = match.group()
            if char in self.stretches:
                style, run = self.stretches[char]
            elif MARKUP_CLOSE <= ord(char) < MARKUP_STANDALONE:
                style, run = self.base, self.base_run
            elif char in self.voids and char not in used:
                used.add(char)
                pieces.extend(self._item_pieces(self.voids[char]))
        pieces.extend(self._text_pieces(style, run, english[at:]))
        for char, group in self.voids.items():  # never lost: a void the translation dropped goes at the end
            if char not in used:
                pieces.extend(self._item_pieces(group))
        return pieces

    def _text_pieces(
        self, style: _Style, run: etree._Element, text: str
    ) -> list[tuple[etree._Element | None, etree._Element]]:
        if not text:
            return []
        new = _new_run(run, self.dialect)
        _add_text(new, text, self.dialect)
        return [(style.container, new)]

    def _item_pieces(self, item: _Item) -> list[tuple[etree._Element | None, etree._Element]]:
        if isinstance(item, _Voids):
            return [(item.container, piece.build()) for piece in item.voids]
        return self._text_pieces(item.style, item.run, item.text)

    def _replace_content(self, pieces: list[tuple[etree._Element | None, etree._Element]]) -> None:
        paragraph, dialect = self.paragraph, self.dialect
        last = [child for child in paragraph if child.tag in dialect.kept_last]
        for child in list(paragraph):
            if child.tag not in dialect.kept_first:
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
        for element in last:
            paragraph.append(element)


def read_paragraph(
    paragraph: etree._Element, dialect: RunDialect, name: str, fields: FieldState | None = None
) -> RunParagraph | None:
    """The unit of a paragraph with Chinese text, None for any other (``name``: the file, for errors;
    ``fields``: the part's field state, for Word)."""
    items = _paragraph_items(paragraph, dialect, fields or FieldState())
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
    return RunParagraph(
        paragraph,
        dialect,
        core,
        items[:first],
        items[last + 1 :],
        base,
        runs[base],
        stretches,
        voids,
        (text[:start], text[start + len(core) :]),
    )


# --- a package of translated XML parts ---------------------------------------------------------------------------


@dataclass
class XmlPart:
    """One zip entry whose XML holds units: its parsed root, whether it had an XML declaration, its units."""

    entry: str
    root: etree._Element
    declaration: bool
    units: list[Unit] = field(default_factory=list)
    kind: str = ""


def count_elements(root: etree._Element, counted: dict[str, str]) -> dict[str, int]:
    """How many of each counted element (Clark tag -> name) ``root`` holds: what a faithful translation keeps."""
    found: Counter[str] = Counter()
    for element in root.iter():
        name = counted.get(element.tag) if isinstance(element.tag, str) else None
        if name is not None:
            found[name] += 1
    return dict(sorted(found.items()))


@dataclass
class RunsPackage(UnitLines):
    """A zip package read for translation (a ``handler.formats.base.UnitsFile``): its parts' units, one line each,
    and ``rebuild`` to write the package with each unit's translation in place (once per read)."""

    name: str
    data: bytes
    entries: list[zipfile.ZipInfo]
    parts: list[XmlPart]
    structure: Callable[[etree._Element], dict[str, int]]
    _rebuilt: bool = False

    @property
    def units(self) -> list[Unit]:
        return [unit for part in self.parts for unit in part.units]

    @property
    def lines(self) -> list[str]:
        """The text to translate: one unit a line (formatting and void elements as markup characters)."""
        return [unit.line for unit in self.units]

    def translate(self, translate_document: Callable[[str], str]) -> bytes:
        """The translated package: ``translate_document`` turns the units' text (one a line) into English."""
        lines = self.lines
        return self.rebuild(translate_document("\n".join(lines)).split("\n") if lines else [])

    def rebuild(self, translations: Sequence[str]) -> bytes:
        """The package with each unit rebuilt from its translation; ``TranslatorError`` when the number of
        translations differs, or when a part's structure changed (nothing is written then)."""
        units = self.units
        if len(translations) != len(units):
            raise TranslatorError(
                f"the translation of {self.name} has {len(translations)} paragraphs, not {len(units)}"
            )
        if self._rebuilt:
            raise RuntimeError("a package is rebuilt once; read the file again")
        self._rebuilt = True
        before = {part.entry: self.structure(part.root) for part in self.parts if part.units}
        for unit, english in zip(units, translations, strict=True):
            unit.rebuild(english)
        changed: dict[str, bytes] = {}
        for part in self.parts:
            if not part.units:
                continue
            after = self.structure(part.root)
            if after != before[part.entry]:
                raise TranslatorError(
                    f"translating {self.name} changed the structure of {part.entry}: {before[part.entry]} became "
                    f"{after}; nothing was written"
                )
            changed[part.entry] = serialize(part.root, declaration=part.declaration)
        return write_package(self.data, self.entries, changed)
