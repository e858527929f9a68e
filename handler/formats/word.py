"""Word documents (``.docx``): translate the text, keep everything else, formatting runs mapped onto the English.

A ``.docx`` is a zip of XML parts. ``read_word_file`` opens it (``python-docx``'s package reader checks that it
is a Word document and names the parts by content type; anything else is an ``InvalidRequestError`` saying "not a
Word .docx document: ..."), and collects the **units** to translate: every paragraph (``w:p``) that holds Chinese in

* the main document: body paragraphs, tables (nested tables too), content controls, text boxes (``w:txbxContent``);
* every header and footer part (default, first-page and even-page variants of every section);
* the footnotes, endnotes and comments parts.

One paragraph is one unit, whatever its runs (``handler.formats.runs``, told Word's tags by ``WORD_RUNS``): runs
are merged, so a sentence split by a bold word is translated whole; each stretch in another run formatting
(``w:rPr``) or in a hyperlink (``w:hyperlink``, ``w:smartTag``, ``w:ins``) is wrapped in markup characters, so the
English between them gets that formatting and container (a hyperlink keeps its ``r:id`` or anchor); whatever is not
text (images ``w:drawing``/``w:pict``, tabs, breaks, note and comment references, symbols, fields ``w:fldSimple``
and complex fields ``w:fldChar``...``w:instrText``... with their results, bookmarks, comment ranges, equations,
inline content controls, deleted text) is a void character: the element itself is moved into the English,
unchanged. Spell-check marks (``w:proofErr``) and ``w:lastRenderedPageBreak`` (layout caches Word recomputes) are
dropped from translated paragraphs.

The units, one a line, go to the caller's translator (``handler.formats.word_format``: ``FileTranslator.lines``,
the service with the file's options, deadline and progress; the fan-out translates the same text in parts cut
between lines). ``rebuild`` then replaces each unit's runs with runs built from the English, each carrying a copy
of its source run's ``w:rPr``. Paragraphs without Chinese are not touched; a part without a translated paragraph,
and every part that carries no text (styles, images, settings, relationships...) is copied from the source byte for
byte. The result is checked before it is returned: its translated parts have the source's paragraphs, tables,
cells, images, notes, references, fields, bookmarks, tabs and breaks, in the same numbers.

Not translated (kept as they are): text inside fields (a table of contents, page numbers: Word recomputes them),
inline content controls (``w:sdt`` inside a paragraph), charts, SmartArt, equations, document properties and the
glossary (building blocks) part.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator

from lxml import etree

from handler.errors import InvalidRequestError
from handler.formats.packages import Package, content_types, has_declaration, open_package, refusal
from handler.formats.runs import FieldState, RunDialect, RunsPackage, XmlPart, count_elements, read_paragraph

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
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


def _w(name: str) -> str:
    return f"{{{W}}}{name}"


_P, _R, _T, _RPR, _PPR = _w("p"), _w("r"), _w("t"), _w("rPr"), _w("pPr")
# what a translated part must still have, in the same numbers (``structure``)
COUNTED = (
    "p tbl tr tc drawing pict tab br cr sym footnoteReference endnoteReference commentReference footnote endnote "
    "comment fldSimple fldChar instrText bookmarkStart bookmarkEnd commentRangeStart commentRangeEnd sectPr "
    "txbxContent object"
).split()
_COUNTED_TAGS = {_w(name): name for name in COUNTED}


WORD_RUNS = RunDialect(
    run=_R,
    text=_T,
    properties=_RPR,
    kept_first=frozenset({_PPR}),
    containers=frozenset({_w("hyperlink"), _w("smartTag"), _w("ins")}),  # their runs are part of the sentence
    dropped=frozenset({_w("proofErr"), _w("lastRenderedPageBreak")}),
    preserve_space=True,
    field_char=_w("fldChar"),
    field_type=_w("fldCharType"),
    instr_text=_w("instrText"),
)


def structure_of(root: etree._Element) -> dict[str, int]:
    """How many of each ``COUNTED`` element a part holds (what a faithful translation keeps)."""
    return count_elements(root, _COUNTED_TAGS)


_HINT = "send a .docx saved by Word or LibreOffice"


def _refuse(name: str, reason: str) -> InvalidRequestError:
    return refusal("Word .docx document", name, reason, _HINT)


def read_word_file(data: bytes, *, name: str = "the file") -> RunsPackage:
    """``data`` read for translation; ``InvalidRequestError`` ("not a Word .docx document: ...") if it is not one
    (the limits of ``handler.formats.packages``: unpacked size, entries, no entities, what its XML may cost)."""
    package = open_package(data, name, "Word .docx document", _HINT)
    kinds = _text_part_entries(package, name)
    parts: list[XmlPart] = []
    for entry, kind in kinds:
        if entry not in package.names:
            raise _refuse(name, f"names a part {entry} that is not in the archive")
        try:
            raw, root = package.part(entry)
        except ValueError as error:
            raise _refuse(name, f"has a damaged part: {error}") from None
        parts.append(XmlPart(entry, root, has_declaration(raw), kind=kind))
    parts.sort(key=lambda part: (_PART_ORDER.index(part.kind), _natural(part.entry)))
    for part in parts:
        fields = FieldState()
        for paragraph in list(part.root.iter(_P)):
            unit = read_paragraph(paragraph, WORD_RUNS, name, fields)
            if unit is not None:
                part.units.append(unit)
    return RunsPackage(name, package.data, list(package.entries), parts, structure_of)


def _natural(entry: str) -> tuple[str, int]:
    match = re.search(r"(\d+)\.xml$", entry)
    return (entry[: match.start()] if match else entry, int(match.group(1)) if match else 0)


def _text_part_entries(package: Package, name: str) -> list[tuple[str, str]]:
    """``(zip entry, kind)`` of every part whose paragraphs are translated, by ``python-docx``'s package reader, which
    parses the XML parts it models whole with its own parser: they are counted first (``Package.measure``)."""
    import docx  # python-docx
    from docx.opc.constants import CONTENT_TYPE

    package.measure(_parsed_by_python_docx(package))
    try:
        document = docx.Document(io.BytesIO(package.data))
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


def _parsed_by_python_docx(package: Package) -> list[str]:
    """The entries python-docx parses on opening a package: ``[Content_Types].xml``, the relationships, and the parts
    of the content types it reads into a tree (its ``PartFactory``'s ``XmlPart`` classes); none when the package has no
    readable ``[Content_Types].xml`` (python-docx refuses it then, before it parses any other)."""
    from docx.opc.part import PartFactory, XmlPart

    try:
        types = content_types(package)
    except ValueError:
        return []
    parsed = {kind for kind, part in PartFactory.part_type_for.items() if issubclass(part, XmlPart)}
    return ["[Content_Types].xml"] + [
        entry for entry in package.names if entry.endswith(".rels") or types.get(entry) in parsed
    ]


def iter_text_entries(data: bytes) -> Iterator[tuple[str, str, etree._Element]]:
    """``(zip entry, kind, root)`` of each translated part of a ``.docx`` (for tests and the fidelity report)."""
    document = read_word_file(data)
    for part in document.parts:
        yield part.entry, part.kind, part.root


def translate_word_file(translate_document: Callable[[str], str], data: bytes, *, name: str = "the file") -> bytes:
    """The ``.docx`` ``data`` with its text in English and everything else as it was (see the module's docstring).

    ``translate_document`` translates a text of one paragraph a line into as many lines."""
    return read_word_file(data, name=name).translate(translate_document)
