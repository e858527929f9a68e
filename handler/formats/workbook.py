"""Excel workbooks (``.xlsx``): the text of text cells and comments translated, everything else kept byte for byte.

An ``.xlsx`` is a zip of XML parts (SpreadsheetML). ``read_workbook`` opens it through ``handler.formats.packages``
(zip limits, no entities), finds its parts by content type (``[Content_Types].xml``: the workbook, the shared
strings, the worksheets, the comments) and collects the **units** to translate, one line each:

* the **shared strings** (``xl/sharedStrings.xml``, ``si``) that a text cell (``c t="s"``) of some worksheet refers
  to, in the table's order: a string several cells share is one unit, translated once. Strings no text cell uses
  are left as they are, and so is a string a table's header cell uses (a table column's name is its header cell's
  text, and formulas name columns: ``Sales[数量]``; renaming one is renaming a sheet, below);
* the **inline strings** of worksheets (``c t="inlineStr"``: ``is``), sheet after sheet, but in tables' headers;
* the **comments**: legacy cell comments (``comment``/``text`` in ``xl/comments*.xml``; their authors, anchors and
  drawing kept) and threaded comments (``ThreadedComment``/``text``, Excel 365's replies; one that @mentions
  someone is kept as it is, since its mentions are character offsets into its text).

A string with formatting runs (rich text: ``r`` with ``rPr`` and ``t``) is one unit whatever its runs
(``handler.formats.runs`` with SpreadsheetML's ``RunDialect``): a bold word's English is bold. A plain string
(``<t>`` alone) stays plain (``PlainString``): its line breaks, tabs and ``_xHHHH_`` escapes are void markup
characters the English gets back. Phonetic guides (``rPh``, ``phoneticPr``) are kept as they are.

Kept: numbers, dates, formulas and their cached values (a formula's text result, ``t="str"``, is Excel's to
recompute), styles, merged cells, data validation, conditional formats, hyperlinks, defined names, charts, images,
drawings, pivot tables, sheet order and **sheet names**. DeepL's document API documentation lists ``.xlsx`` without
saying what it does with sheet names, and no statement of DeepL's on it was found; other tools' issue threads show
renamed sheets leaving the workbook for Excel to repair. A sheet's name is in every formula, defined name, chart
series and pivot source that refers to it (``='销售数据'!B2``), and inside strings no rewriter can see
(``INDIRECT("销售数据!A1")``): renaming a sheet means rewriting all of them, and a missed one breaks silently. So sheet
names are kept: the tab a user sees stays Chinese, every reference keeps working. Also not translated: chart titles,
text boxes and shapes (drawings), headers and footers, data validation messages, document properties, and the text
inside formulas: a formula that compares a cell with a Chinese literal (``=COUNTIF(A:A,"完成")``) finds the cell in
English once Excel recalculates.

Parts without a translated unit are copied byte for byte; a translated part is checked before the file is written:
the same strings, cells, formulas, values, merged cells, validations, comments and phonetic guides in the same
numbers.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from handler.errors import InvalidRequestError
from handler.formats.packages import Package, content_types, has_declaration, open_package, refusal
from handler.formats.runs import RunDialect, RunsPackage, Unit, XmlPart, read_paragraph
from handler.text.segmentation import LINE_BREAKS
from handler.text.spans import MARKUP_LIMIT, MARKUP_OPEN, MARKUP_STANDALONE, has_chinese

KIND = "workbook (.xlsx)"
HINT = "send a .xlsx saved by Excel or LibreOffice Calc"
MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
STRICT_MAIN = "http://purl.oclc.org/ooxml/spreadsheetml/main"  # Strict Open XML: the same tags in another namespace
THREADED = "http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments"
_XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
_SML = "application/vnd.openxmlformats-officedocument.spreadsheetml."
WORKBOOK_TYPES = frozenset(
    {
        _SML + "sheet.main+xml",
        _SML + "template.main+xml",
        "application/vnd.ms-excel.sheet.macroEnabled.main+xml",
        "application/vnd.ms-excel.template.macroEnabled.main+xml",
    }
)
SHARED_STRINGS_TYPE = _SML + "sharedStrings+xml"
WORKSHEET_TYPE = _SML + "worksheet+xml"
COMMENTS_TYPE = _SML + "comments+xml"
THREADED_COMMENTS_TYPE = "application/vnd.ms-excel.threadedcomments+xml"
_OTHER_MAIN = re.compile(r"\.main\+xml$")  # another Office file's main part (a .docx, .pptx)
# what a translated part must still have, in the same numbers (local names, whatever the namespace); runs (``r``)
# and text elements (``t``) are not counted: a rich string's runs are rebuilt from the English
COUNTED = frozenset(
    (
        "si rPh phoneticPr row c f v is mergeCell dataValidation conditionalFormatting hyperlink comment author "
        "ThreadedComment mention person"
    ).split()
)
# in a plain string's text, what the model must not see: line breaks, tabs, markup characters, Excel's _xHHHH_
# escapes (a carriage return is written _x000D_)
_UNSAFE = re.compile(f"(?:[{LINE_BREAKS}\t{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]|_x[0-9A-Fa-f]{{4}}_)+")
_MARKUP_CHAR = re.compile(f"[{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]")
_CELL = re.compile(r"^\$?([A-Z]{1,3})\$?([0-9]{1,7})$")
_NEEDS_PRESERVE = re.compile(r"^\s|\s$|\s\s|[\t\n\r]")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")  # no XML document may hold these


def _refuse(name: str, reason: str) -> InvalidRequestError:
    return refusal(KIND, name, reason, HINT)


def dialect(namespace: str) -> RunDialect:
    """SpreadsheetML's rich text (``CT_Rst``: ``si``, ``is``, a comment's ``text``) as runs: ``r`` with ``rPr`` and
    one ``t`` (``xml:space="preserve"``); the phonetic guides kept last, a plain ``t`` before the runs kept first."""
    return RunDialect(
        run=f"{{{namespace}}}r",
        text=f"{{{namespace}}}t",
        properties=f"{{{namespace}}}rPr",
        kept_first=frozenset({f"{{{namespace}}}t"}),
        kept_last=frozenset({f"{{{namespace}}}rPh", f"{{{namespace}}}phoneticPr"}),
        preserve_space=True,
    )


@dataclass
class PlainString:
    """A string without runs (an ``si``'s or ``is``'s lone ``t``, a threaded comment's ``text``): its line has each
    line break, tab or escape as a void character, and ``rebuild`` writes the English into the same element."""

    element: etree._Element
    line: str
    voids: dict[str, str]  # void character -> the text it stands for
    space: tuple[str, str]  # whitespace around the line's text

    @classmethod
    def read(cls, element: etree._Element, name: str) -> PlainString | None:
        """The unit of ``element``'s text, None when it has no Chinese."""
        text = element.text or ""
        if not has_chinese(text):
            return None
        voids: dict[str, str] = {}

        def void(match: re.Match[str]) -> str:
            char = chr(MARKUP_STANDALONE + len(voids))
            voids[char] = match.group()
            return char

        line = _UNSAFE.sub(void, text)
        if len(voids) >= MARKUP_LIMIT - MARKUP_STANDALONE:
            raise InvalidRequestError(f"{name} has a string with too many line breaks to translate")
        core = line.strip()
        start = line.find(core)
        return cls(element, core, voids, (line[:start], line[start + len(core) :]))

    def rebuild(self, english: str) -> None:
        used: set[str] = set()

        def restore(match: re.Match[str]) -> str:
            char = match.group()
            if char in self.voids and char not in used:
                used.add(char)
                return self.voids[char]
            return ""  # formatting marks a plain string never had, or a void repeated

        text = _MARKUP_CHAR.sub(restore, self.space[0] + english.strip() + self.space[1])
        text += "".join(value for char, value in self.voids.items() if char not in used)  # never lost
        text = _NOT_XML.sub("", text)
        self.element.text = text
        if _NEEDS_PRESERVE.search(text):
            self.element.set(_XML_SPACE, "preserve")


def string_unit(element: etree._Element, namespace: str, name: str) -> Unit | None:
    """The unit of a SpreadsheetML string (``si``, ``is``, a comment's ``text``): its runs merged when it has any,
    else its lone ``t``; None when it has no Chinese."""
    if element.find(f"{{{namespace}}}r") is not None:
        return read_paragraph(element, dialect(namespace), name)
    text = element.find(f"{{{namespace}}}t")
    return None if text is None else PlainString.read(text, name)


def structure_of(root: etree._Element) -> dict[str, int]:
    """How many of each ``COUNTED`` element a part holds (what a faithful translation keeps)."""
    found: Counter[str] = Counter()
    for element in root.iter():
        if isinstance(element.tag, str):
            local = etree.QName(element).localname
            if local in COUNTED:
                found[local] += 1
    return dict(sorted(found.items()))


def _natural(entry: str) -> tuple[str, int]:
    match = re.search(r"(\d+)\.xml$", entry)
    return (entry[: match.start()] if match else entry, int(match.group(1)) if match else 0)


def _namespace(root: etree._Element, entry: str, name: str, expected: tuple[str, ...]) -> str:
    namespace = etree.QName(root).namespace or ""
    if namespace not in expected:
        raise _refuse(name, f"has a part {entry} in the namespace {namespace or 'none'}, not SpreadsheetML's")
    return namespace


class _Reader:
    """One workbook's parts, parsed once each."""

    def __init__(self, package: Package, name: str) -> None:
        self.package = package
        self.name = name
        try:
            self.types = content_types(package)
        except ValueError as error:
            raise _refuse(name, str(error)) from None

    def entries(self, content_type: str) -> list[str]:
        return sorted((entry for entry, kind in self.types.items() if kind == content_type), key=_natural)

    def part(self, entry: str, kind: str) -> XmlPart:
        try:
            raw, root = self.package.part(entry)
        except ValueError as error:
            raise _refuse(self.name, f"has a damaged part: {error}") from None
        return XmlPart(entry, root, has_declaration(raw), kind=kind)

    def table_headers(self, sheet: str) -> list[tuple[int, int, int, int]]:
        """``(top, left, bottom, right)`` of the header rows of each table (list object) on the worksheet ``sheet``,
        by its relationships: a header cell's text is the table column's name, which formulas use."""
        folder, file = posixpath.split(sheet)
        rels = posixpath.join(folder, "_rels", file + ".rels")
        if rels not in self.package.names:
            return []
        found = []
        for relationship in self.part(rels, "relationships").root:
            if not (relationship.get("Type") or "").endswith("/table") or relationship.get("TargetMode") == "External":
                continue
            target = relationship.get("Target") or ""
            entry = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(folder, target))
            if entry not in self.package.names:
                continue
            table = self.part(entry, "table").root
            corners = [_cell_position(corner) for corner in (table.get("ref") or "").split(":")]
            rows = int(count) if (count := table.get("headerRowCount") or "1").isdigit() else 1
            if len(corners) == 2 and corners[0] is not None and corners[1] is not None and rows > 0:
                (top, left), (bottom, right) = corners[0], corners[1]
                found.append((top, left, min(bottom, top + rows - 1), right))
        return found

    def check_workbook(self) -> None:
        if any(kind in WORKBOOK_TYPES for kind in self.types.values()):
            return
        other = sorted(kind for kind in self.types.values() if _OTHER_MAIN.search(kind))
        if other:
            raise _refuse(self.name, f"is another kind of Office file (its main part is {other[0]})")
        raise _refuse(self.name, "has no workbook part")


def _cell_position(reference: str) -> tuple[int, int] | None:
    """``(row, column)`` of a cell reference (``B3`` -> ``(3, 2)``), None when it is not one."""
    match = _CELL.match(reference)
    if match is None:
        return None
    column = 0
    for letter in match.group(1):
        column = column * 26 + ord(letter) - ord("A") + 1
    return int(match.group(2)), column


def _in_ranges(reference: str | None, ranges: list[tuple[int, int, int, int]]) -> bool:
    position = _cell_position(reference or "")
    return position is not None and any(
        top <= position[0] <= bottom and left <= position[1] <= right for top, left, bottom, right in ranges
    )


def _text_cell_strings(
    sheets: list[XmlPart], headers: dict[str, list[tuple[int, int, int, int]]], count: int, name: str
) -> list[int]:
    """The shared strings' indexes that some text cell (``t="s"``) refers to, in the table's order, less those a
    table's header cell refers to (``headers``: each sheet's header ranges)."""
    used: set[int] = set()
    kept: set[int] = set()
    for sheet in sheets:
        namespace = etree.QName(sheet.root).namespace
        for cell in sheet.root.iter(f"{{{namespace}}}c"):
            if cell.get("t") != "s":
                continue
            value = cell.findtext(f"{{{namespace}}}v")
            reference = cell.get("r") or "?"
            try:
                index = int(value or "")
            except ValueError:
                raise _refuse(name, f"has a text cell {reference} in {sheet.entry} without a string index") from None
            if not 0 <= index < count:
                raise _refuse(name, f"has a text cell {reference} in {sheet.entry} naming string {index} of {count}")
            (kept if _in_ranges(reference, headers.get(sheet.entry, [])) else used).add(index)
    return sorted(used - kept)


def _comment_units(part: XmlPart, name: str) -> Iterator[Unit]:
    namespace = etree.QName(part.root).namespace or ""
    if part.kind == "threaded comments":
        for comment in part.root.iter(f"{{{namespace}}}ThreadedComment"):
            text = comment.find(f"{{{namespace}}}text")
            if text is not None and comment.find(f"{{{namespace}}}mentions") is None:
                plain = PlainString.read(text, name)
                if plain is not None:
                    yield plain
        return
    for comment in part.root.iter(f"{{{namespace}}}comment"):
        text = comment.find(f"{{{namespace}}}text")
        unit = None if text is None else string_unit(text, namespace, name)
        if unit is not None:
            yield unit


def read_workbook(data: bytes, name: str = "the file") -> RunsPackage:
    """``data`` read for translation (see the module's docstring); ``InvalidRequestError`` ("not a workbook (.xlsx):
    ...") when it is not one, is damaged, or is over a limit of ``handler.formats.packages``."""
    reader = _Reader(open_package(data, name, KIND, HINT), name)
    reader.check_workbook()
    sml = (MAIN, STRICT_MAIN)
    strings = [reader.part(entry, "shared strings") for entry in reader.entries(SHARED_STRINGS_TYPE)[:1]]
    sheets = [reader.part(entry, "worksheet") for entry in reader.entries(WORKSHEET_TYPE)]
    comments = [reader.part(entry, "comments") for entry in reader.entries(COMMENTS_TYPE)]
    threaded = [reader.part(entry, "threaded comments") for entry in reader.entries(THREADED_COMMENTS_TYPE)]
    for part in strings + sheets + comments:
        _namespace(part.root, part.entry, name, sml)
    for part in threaded:
        _namespace(part.root, part.entry, name, (THREADED,))

    table = strings[0] if strings else None
    items = [] if table is None else table.root.findall(f"{{{etree.QName(table.root).namespace}}}si")
    headers = {sheet.entry: reader.table_headers(sheet.entry) for sheet in sheets}
    for index in _text_cell_strings(sheets, headers, len(items), name):
        assert table is not None  # a text cell names a string of the table (checked above)
        unit = string_unit(items[index], etree.QName(table.root).namespace or MAIN, name)
        if unit is not None:
            table.units.append(unit)
    for sheet in sheets:
        namespace = etree.QName(sheet.root).namespace or MAIN
        for cell in sheet.root.iter(f"{{{namespace}}}c"):
            if cell.get("t") != "inlineStr" or _in_ranges(cell.get("r"), headers.get(sheet.entry, [])):
                continue
            inline = cell.find(f"{{{namespace}}}is")
            unit = None if inline is None else string_unit(inline, namespace, name)
            if unit is not None:
                sheet.units.append(unit)
    for part in comments + threaded:
        part.units.extend(_comment_units(part, name))
    parts = [part for part in strings + sheets + comments + threaded if part.units]
    return RunsPackage(name, reader.package.data, list(reader.package.entries), parts, structure_of)
