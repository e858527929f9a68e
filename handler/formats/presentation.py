"""PowerPoint presentations (``.pptx``): which parts and paragraphs are translated, read with lxml (never
python-pptx), the runs merged and put back by ``handler.formats.runs`` (told DrawingML's tags by ``SLIDE_RUNS``).

A ``.pptx`` is a zip of XML parts (``handler.formats.packages``: the zip limits, no entities). ``read_presentation``
finds the presentation's main part through the package's relationships (``_rels/.rels``) and its content type (any
other Office file, or a zip without one, is refused: "not a PowerPoint .pptx presentation: ..."), then lists the
parts whose paragraphs (``a:p``) are translated, in the order a reader meets them:

1. every slide in presentation order (``p:sldIdLst`` and the presentation's relationships), each followed by its
   speaker notes (the notes slide it relates to): every paragraph of every shape, grouped shapes (``p:grpSp``, at
   any depth), text boxes, placeholders, table cells (``a:tbl`` in a ``p:graphicFrame``);
2. every slide master in presentation order (``p:sldMasterIdLst``), each preceded by its slide layouts
   (``p:sldLayoutIdLst``): only the text a user sees there. Static shapes (a text box, a table that is not a
   placeholder) are drawn on every slide that uses the layout or master, so they are translated. A placeholder's
   own text on a layout or master ("单击此处编辑母版标题样式") is seen only in PowerPoint's master view, never on a
   slide, and is kept, except a **custom prompt** (``p:ph hasCustomPrompt="1"``): the text the layout's author
   wrote for an empty placeholder, which a user sees on every new slide in edit mode, is translated.

One paragraph is one unit (one line for the model): runs (``a:r``: ``a:rPr`` + ``a:t``) merged, formatting as
markup characters; a hyperlink lives in ``a:rPr/a:hlinkClick`` and travels with its stretch's formatting (the
relationship is kept, so the English is the link). Line breaks (``a:br``) and fields (``a:fld``: slide numbers,
dates) are void characters, moved into the English unchanged. The paragraph's properties (``a:pPr``) stay first and
its end properties (``a:endParaRPr``) last. A translated paragraph's run properties say it is English: ``lang``
becomes ``en-US`` (PowerPoint then spell-checks and lays out the text as English), the proofing marks ``altLang``,
``err``, ``dirty``, ``smtClean`` and ``smtId`` go, and a run properties element left empty is removed, so runs that
differed only by those (a Latin word typed inside a Chinese sentence) are one stretch, not a markup pair each.

Kept: everything else, byte for byte: every part without a translated paragraph (images, media, charts, SmartArt,
themes, comments, document properties, relationships, content types), and in a translated part every shape,
picture, table, group, connector, graphic frame, animation (``p:timing``) and transition; the slides' order and
ids. Each translated part is counted before and after (``structure``): it must keep its paragraphs, shapes, tables,
rows, cells, line breaks, fields, pictures and the rest in the same numbers, or nothing is written.
Not translated: text inside fields (PowerPoint recomputes it), charts' and SmartArt's own text (their own parts),
comments, the notes master and handout master, document properties.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from lxml import etree

from handler.errors import InvalidRequestError
from handler.formats.packages import (
    Package,
    content_types,
    has_declaration,
    open_package,
    refusal,
)
from handler.formats.runs import RunDialect, RunsPackage, XmlPart, count_elements, read_paragraph
from handler.text.spans import has_chinese

A = "http://schemas.openxmlformats.org/drawingml/2006/main"
P = "http://schemas.openxmlformats.org/presentationml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_PML = "application/vnd.openxmlformats-officedocument.presentationml."
# the main part of a presentation, or of a show (.ppsx) or template (.potx) saved as .pptx: the same parts
MAIN_TYPES = frozenset(_PML + kind for kind in ("presentation.main+xml", "slideshow.main+xml", "template.main+xml"))
SLIDE, NOTES, LAYOUT, MASTER = "slide", "notesSlide", "slideLayout", "slideMaster"
_PART_TYPES = {kind: _PML + kind + "+xml" for kind in (SLIDE, NOTES, LAYOUT, MASTER)}


def _a(name: str) -> str:
    return f"{{{A}}}{name}"


def _p(name: str) -> str:
    return f"{{{P}}}{name}"


SLIDE_RUNS = RunDialect(
    run=_a("r"),
    text=_a("t"),
    properties=_a("rPr"),
    kept_first=frozenset({_a("pPr")}),
    kept_last=frozenset({_a("endParaRPr")}),
)
# what a translated part must still have, in the same numbers (``structure``)
COUNTED = {
    **{_a(name): name for name in "p tbl tr tc gridCol txBody br fld graphicData blip".split()},
    **{
        _p(name): name
        for name in "sp grpSp pic graphicFrame cxnSp txBody ph oleObj contentPart timing transition".split()
    },
    f"{{{_MC}}}AlternateContent": "AlternateContent",
}
_SHAPES = frozenset({_p("sp"), _p("graphicFrame")})  # the shapes whose paragraphs a layout or master may show
_PROOFING = ("altLang", "err", "dirty", "smtClean", "smtId")
_HINT = "send a .pptx saved by PowerPoint, Keynote or LibreOffice Impress"
_KIND = "PowerPoint .pptx presentation"


def structure(root: etree._Element) -> dict[str, int]:
    """How many of each ``COUNTED`` element a part holds (what a faithful translation keeps)."""
    return count_elements(root, COUNTED)


def _refuse(name: str, reason: str) -> InvalidRequestError:
    return refusal(_KIND, name, reason, _HINT)


# --- which parts, in which order --------------------------------------------------------------------------------------


class _Archive:
    """A package read entry by entry, each XML part parsed once."""

    def __init__(self, package: Package) -> None:
        self.name = package.name
        self.names = frozenset(package.names)
        self._package = package
        self._parsed: dict[str, tuple[bytes, etree._Element]] = {}

    def part(self, entry: str) -> tuple[bytes, etree._Element]:
        """``entry``'s bytes and parsed root; a refusal when it is not well-formed or declares entities."""
        if entry not in self._parsed:
            try:
                self._parsed[entry] = self._package.part(entry)
            except ValueError as error:
                raise _refuse(self.name, f"has a damaged part: {error}") from None
        return self._parsed[entry]

    def xml(self, entry: str) -> etree._Element:
        return self.part(entry)[1]

    def relationships(self, part: str) -> list[tuple[str, str, str]]:
        """``(id, type's last segment, target entry)`` of ``part``'s internal relationships ("" for the package's)."""
        folder, base = posixpath.split(part)
        rels = posixpath.join(folder, "_rels", base + ".rels")
        if rels not in self.names:
            return []
        found = []
        for element in self.xml(rels):
            if element.tag != f"{{{_RELS}}}Relationship" or element.get("TargetMode") == "External":
                continue
            target = element.get("Target") or ""
            entry = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(folder, target))
            found.append((element.get("Id") or "", (element.get("Type") or "").rsplit("/", 1)[-1], entry))
        return found

    def by_id(self, part: str) -> dict[str, str]:
        return {rid: entry for rid, _kind, entry in self.relationships(part)}

    def first(self, part: str, kind: str) -> str | None:
        """The target of ``part``'s first relationship of type ``kind`` (``officeDocument``, ``notesSlide``)."""
        return next((entry for _rid, found, entry in self.relationships(part) if found == kind), None)


def _main_part(archive: _Archive, types: dict[str, str]) -> str:
    main = archive.first("", "officeDocument")
    if main is None:
        raise _refuse(archive.name, "has no main document part (_rels/.rels names none)")
    kind = types.get(main, "")
    if kind not in MAIN_TYPES:
        shown = f"of type {kind}" if kind else "without a content type"
        raise _refuse(archive.name, f"is another kind of file: its main part {main} is {shown}")
    return main


def _listed(main: etree._Element, relationships: dict[str, str], list_tag: str, item_tag: str) -> list[str]:
    """The parts a presentation lists (``p:sldIdLst``'s slides, ``p:sldMasterIdLst``'s masters), in its order."""
    listing = main.find(_p(list_tag))
    items = [] if listing is None else listing.findall(_p(item_tag))
    return [relationships[rid] for rid in (item.get(f"{{{R}}}id") for item in items) if rid in relationships]


def text_parts(archive: _Archive, types: dict[str, str]) -> Iterator[tuple[str, str]]:
    """``(zip entry, kind)`` of every part whose paragraphs may be translated, in reading order (the module's
    docstring); ``InvalidRequestError`` when the package is not a presentation (``types``: its content types)."""
    main_entry = _main_part(archive, types)
    main = archive.xml(main_entry)
    by_id = archive.by_id(main_entry)
    seen: set[str] = set()

    def part(entry: str | None, kind: str) -> Iterator[tuple[str, str]]:
        if entry is None or entry in seen:
            return
        if entry not in archive.names:
            raise _refuse(archive.name, f"names a part {entry} that is not in the archive")
        if types.get(entry) != _PART_TYPES[kind]:
            return
        seen.add(entry)
        yield entry, kind

    for slide in _listed(main, by_id, "sldIdLst", "sldId"):
        yield from part(slide, SLIDE)
        yield from part(archive.first(slide, NOTES), NOTES)
    for master in _listed(main, by_id, "sldMasterIdLst", "sldMasterId"):
        found = list(part(master, MASTER))  # its layouts first, then the master
        if not found:
            continue
        for layout in _listed(archive.xml(master), archive.by_id(master), "sldLayoutIdLst", "sldLayoutId"):
            yield from part(layout, LAYOUT)
        yield from found


# --- which paragraphs -------------------------------------------------------------------------------------------------


def _seen_on_slides(paragraph: etree._Element) -> bool:
    """Whether a layout's or master's paragraph is shown on slides: in a shape that is not a placeholder, or in a
    placeholder with its own (custom) prompt."""
    shape = next((ancestor for ancestor in paragraph.iterancestors() if ancestor.tag in _SHAPES), None)
    if shape is None or not len(shape):
        return False
    placeholder = shape[0].find(f"{_p('nvPr')}/{_p('ph')}")  # p:nvSpPr or p:nvGraphicFramePr, then p:nvPr
    return placeholder is None or placeholder.get("hasCustomPrompt") in ("1", "true")


def _paragraphs(part: XmlPart) -> Iterator[etree._Element]:
    everywhere = part.kind in (SLIDE, NOTES)
    for paragraph in part.root.iter(_a("p")):
        if everywhere or _seen_on_slides(paragraph):
            yield paragraph


def _has_chinese_text(paragraph: etree._Element) -> bool:
    return has_chinese("".join(t.text or "" for run in paragraph.iterfind(_a("r")) for t in run.iterfind(_a("t"))))


def mark_english(paragraph: etree._Element) -> None:
    """A translated paragraph's text runs and end properties say English: ``lang="en-US"``, the proofing marks
    (``_PROOFING``) removed, a run's properties element left empty removed. Void elements (``a:br``, ``a:fld``)
    are left as they are."""
    for properties in [*paragraph.iterfind(f"{_a('r')}/{_a('rPr')}"), *paragraph.iterfind(_a("endParaRPr"))]:
        if properties.get("lang") is not None:
            properties.set("lang", "en-US")
        for attribute in _PROOFING:
            properties.attrib.pop(attribute, None)
        parent = properties.getparent()
        if not len(properties) and not properties.attrib and parent is not None and parent.tag == _a("r"):
            parent.remove(properties)


# --- the presentation -------------------------------------------------------------------------------------------------


def read_presentation(data: bytes, *, name: str = "the file") -> RunsPackage:
    """``data`` read for translation; ``InvalidRequestError`` ("not a PowerPoint .pptx presentation: ...") if it is
    not one (the limits of ``handler.formats.packages``: unpacked size, entries, no entities)."""
    package = open_package(data, name, _KIND, _HINT)
    try:
        types = content_types(package)
    except ValueError as error:
        raise _refuse(name, str(error)) from None
    archive = _Archive(package)
    parts: list[XmlPart] = []
    for entry, kind in list(text_parts(archive, types)):
        raw, root = archive.part(entry)
        part = XmlPart(entry, root, has_declaration(raw), kind=kind)
        for paragraph in list(_paragraphs(part)):
            if not _has_chinese_text(paragraph):
                continue
            mark_english(paragraph)
            unit = read_paragraph(paragraph, SLIDE_RUNS, name)
            if unit is not None:
                part.units.append(unit)
        parts.append(part)
    return RunsPackage(name, package.data, list(package.entries), parts, structure)
