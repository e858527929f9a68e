"""OpenDocument text files for the tests, made with odfpy (what LibreTranslate's users build ``.odt`` files with),
and an independent reading of what a translation must keep (odfpy again, never the module under test).

``sample_file()`` holds the awkward cases ``handler.formats.opendocument_text`` treats: a heading, a sentence with
a bold span inside it, a span split inside a word (翻<span>译</span>), a link with a bold span inside it, runs of
spaces, a tab and a line break, a bookmark and a date field, a table with an empty cell, a list, a footnote, a
frame with an image and a text box, an annotation (a comment), a header, and paragraphs without Chinese.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections import Counter
from collections.abc import Sequence

from odf import dc, draw, office, opendocument, style, table, teletype, text
from odf.element import Element, Node

from tests.formats.inspection import Inspection
from tests.word_samples import tiny_png

FORMAT = "odt"
SUFFIX = ".odt"

TEXTNS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
LINK = "https://example.com/报告"
BOLD_SENTENCE = ("这是一个", "非常重要", "的问题，请大家认真阅读。")  # the middle one is bold
SPLIT_WORD = ("机器翻", "译", "的质量越来越好。")  # 译 is a span of its own, inside the word 翻译
SPACED = "第一项  第二项"  # two spaces: a text:s
UNTOUCHED = ("Version 2.1 (2024-05-01)", "https://example.com/docs")
HEADER = "公司内部文件"
REVIEWER = "审阅者"  # an annotation's author: kept
PICTURE = tiny_png()
_HAN_WORDS = re.compile(r"[\u4e00-\u9fff]{2,4}")

# what inspect counts: (namespace local name) -> structure key
_COUNTED = {
    "p": "paragraphs",
    "h": "headings",
    "a": "links",
    "list": "lists",
    "list-item": "list items",
    "note": "notes",
    "tab": "tabs",
    "line-break": "line breaks",
    "bookmark": "bookmarks",
    "date": "fields",
    "page-number": "fields",
    "table": "tables",
    "table-row": "rows",
    "table-cell": "cells",
    "frame": "frames",
    "image": "images",
    "text-box": "text boxes",
    "annotation": "annotations",
}
# inside a paragraph: elements whose text is not the paragraph's own (their paragraphs are texts of their own) or
# that the editor computes
_NOT_OWN_TEXT = {"note", "frame", "annotation", "date", "page-number", "bookmark"}


def _styles(document: opendocument.OpenDocument, header_text: str | None) -> tuple[style.Style, style.Style]:
    """The bold and italic text styles, and the standard master page with ``header_text`` (if any) as its header
    and a page number in its footer."""
    bold = style.Style(name="Bold", family="text")
    bold.addElement(style.TextProperties(fontweight="bold"))
    italic = style.Style(name="Italic", family="text")
    italic.addElement(style.TextProperties(fontstyle="italic"))
    document.automaticstyles.addElement(bold)
    document.automaticstyles.addElement(italic)
    layout = style.PageLayout(name="Page")
    document.automaticstyles.addElement(layout)
    master = style.MasterPage(name="Standard", pagelayoutname=layout)
    if header_text is not None:
        header = style.Header()
        header.addElement(text.P(text=header_text))
        master.addElement(header)
    footer = style.Footer()
    page = text.P(text="Page ")
    page.addElement(text.PageNumber(selectpage="current", text="1"))
    footer.addElement(page)
    master.addElement(footer)
    document.masterstyles.addElement(master)
    return bold, italic


def _table(document: opendocument.OpenDocument, rows: Sequence[Sequence[str]]) -> table.Table:
    grid = table.Table(name="表格1")
    grid.addElement(table.TableColumn(numbercolumnsrepeated=len(rows[0])))
    for row in rows:
        line = table.TableRow()
        for value in row:
            cell = table.TableCell(valuetype="string")
            if value:
                cell.addElement(text.P(text=value))
            line.addElement(cell)
        grid.addElement(line)
    return grid


def sample_file() -> bytes:
    """A report with every awkward case (see the module's docstring)."""
    document = opendocument.OpenDocumentText()
    bold, italic = _styles(document, HEADER)
    body = document.text
    body.addElement(text.H(outlinelevel=1, text="年度报告"))
    sentence = text.P(text=BOLD_SENTENCE[0])
    sentence.addElement(text.Span(stylename=bold, text=BOLD_SENTENCE[1]))
    sentence.addText(BOLD_SENTENCE[2])
    body.addElement(sentence)
    split = text.P(text=SPLIT_WORD[0])
    split.addElement(text.Span(stylename=italic, text=SPLIT_WORD[1]))
    split.addText(SPLIT_WORD[2])
    body.addElement(split)
    linked = text.P(text="详情请见")
    link = text.A(href=LINK, type="simple", text="我们的")
    link.addElement(text.Span(stylename=bold, text="官方网站"))
    linked.addElement(link)
    linked.addText("。")
    body.addElement(linked)
    spaced = text.P()
    teletype.addTextToElement(spaced, SPACED + "\t第三项\n第四项")
    spaced.addElement(text.Bookmark(name="结尾"))
    spaced.addText("，日期：")
    spaced.addElement(text.Date(datevalue="2024-05-01", text="2024-05-01"))
    body.addElement(spaced)
    body.addElement(_table(document, [["项目", "金额"], ["收入", ""], ["支出", "300"]]))
    bullets = text.List()
    for item in ("第一点：提高效率", "第二点：降低成本"):
        entry = text.ListItem()
        entry.addElement(text.P(text=item))
        bullets.addElement(entry)
    body.addElement(bullets)
    noted = text.P(text="这个结论需要进一步验证")
    note = text.Note(id="ftn1", noteclass="footnote")
    note.addElement(text.NoteCitation(text="1"))
    note_body = text.NoteBody()
    note_body.addElement(text.P(text="数据来源于二零二三年的调查。"))
    note.addElement(note_body)
    noted.addElement(note)
    noted.addText("。")
    body.addElement(noted)
    pictured = text.P(text="下图显示了结果：")
    picture = draw.Frame(name="图片1", anchortype="as-char", width="2cm", height="2cm")
    picture.addElement(draw.Image(href=document.addPicture("Pictures/chart.png", "image/png", PICTURE)))
    pictured.addElement(picture)
    body.addElement(pictured)
    boxed = text.P()
    box_frame = draw.Frame(name="文本框1", anchortype="paragraph", width="6cm", height="2cm")
    box = draw.TextBox()
    box.addElement(text.P(text="文本框里的说明文字。"))
    box_frame.addElement(box)
    boxed.addElement(box_frame)
    body.addElement(boxed)
    reviewed = text.P(text="请审阅这一段。")
    comment = office.Annotation()
    comment.addElement(dc.Creator(text=REVIEWER))
    comment.addElement(text.P(text="这里需要修改。"))
    reviewed.addElement(comment)
    body.addElement(reviewed)
    for line in UNTOUCHED:
        body.addElement(text.P(text=line))
    return _saved(document)


def file_of(sentences: Sequence[str]) -> bytes:
    """An ``.odt`` holding ``sentences`` in turn as a heading, a paragraph with its first Chinese words bold, a table
    cell, a list item and a plain paragraph."""
    document = opendocument.OpenDocumentText()
    bold, _ = _styles(document, None)
    body = document.text
    for index, sentence in enumerate(sentences):
        kind = index % 5
        if kind == 0:
            body.addElement(text.H(outlinelevel=2, text=sentence))
        elif kind == 1:
            body.addElement(_with_bold_words(sentence, bold))
        elif kind == 2:
            body.addElement(_table(document, [[sentence, ""]]))
        elif kind == 3:
            bullets = text.List()
            entry = text.ListItem()
            entry.addElement(text.P(text=sentence))
            bullets.addElement(entry)
            body.addElement(bullets)
        else:
            body.addElement(text.P(text=sentence))
    return _saved(document)


def _with_bold_words(sentence: str, bold: style.Style) -> text.P:
    """A paragraph whose first Chinese words (never a piece of an address, a number or code) are bold."""
    words = _HAN_WORDS.search(sentence)
    if words is None:
        return text.P(text=sentence)
    paragraph = text.P(text=sentence[: words.start()])
    paragraph.addElement(text.Span(stylename=bold, text=words.group()))
    paragraph.addText(sentence[words.end() :])
    return paragraph


def _saved(document: opendocument.OpenDocument) -> bytes:
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


# --- reading a file with odfpy ------------------------------------------------------------------------------------


def load(data: bytes) -> opendocument.OpenDocument:
    return opendocument.load(io.BytesIO(data))


def own_text(paragraph: Element) -> str:
    """What a reader sees of a paragraph itself, white space as ODF reads it (odfpy's teletype rules), without
    its notes, frames, fields and bookmarks."""
    found: list[str] = []
    for child in paragraph.childNodes:
        if child.nodeType == Node.TEXT_NODE:
            found.append(" ".join(str(child.data).replace("\t", " ").splitlines()))
        elif child.nodeType == Node.ELEMENT_NODE and child.qname[1] not in _NOT_OWN_TEXT:
            local = child.qname[1]
            if local == "s":
                count = str(child.getAttribute("c") or "1")
                found.append(" " * (int(count) if count.isdigit() else 1))
            else:
                found.append({"tab": "\t", "line-break": "\n"}.get(local) or own_text(child))
    return "".join(found)


def paragraphs(data: bytes) -> list[Element]:
    """Every paragraph and heading in reading order: the master pages' (headers, footers), then the body's."""
    document = load(data)
    found: list[Element] = []

    def walk(node: Element) -> None:
        for child in node.childNodes:
            if child.nodeType != Node.ELEMENT_NODE or child.qname == (TEXTNS, "tracked-changes"):
                continue
            if child.qname in ((TEXTNS, "p"), (TEXTNS, "h")):
                found.append(child)
            walk(child)

    walk(document.masterstyles)
    walk(document.body)
    return found


def inspect(data: bytes) -> Inspection:
    """The structure (counts of paragraphs, headings, spans, links, lists, notes, tables, rows, cells, frames,
    images, text boxes, fields, bookmarks, tabs, line breaks; the pictures' bytes) and every paragraph's own text
    (``own_text``, white space collapsed), in reading order."""
    document = load(data)
    counts: Counter[str] = Counter()

    def count(node: Element) -> None:
        for child in node.childNodes:
            if child.nodeType == Node.ELEMENT_NODE:
                name = _COUNTED.get(child.qname[1])
                if name is not None:
                    counts[name] += 1
                count(child)

    count(document.masterstyles)
    count(document.body)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        counts["picture bytes"] = sum(
            info.file_size for info in archive.infolist() if info.filename.startswith("Pictures/")
        )
    # one text a paragraph, empty for one that holds only a frame: as many after a translation as before
    return Inspection(dict(sorted(counts.items())), [" ".join(own_text(p).split()) for p in paragraphs(data)])
