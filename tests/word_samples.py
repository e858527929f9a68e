"""Word documents for the tests, made with python-docx, and an independent check of what a translation must keep.

``sample_docx()`` holds every kind of element ``handler.formats.word`` treats: a sentence with a bold word,
an italic word and a hyperlink inside it, a tab and a line break, a table with a nested table, an image, a
complex field and a simple one, a bookmark, default, first-page and even-page headers and footers, a footnote (the
footnotes part is written here: python-docx has no API for notes), an endnote, a comment, a text box, and
paragraphs without Chinese.

``check_translation(source, translated)`` does not use the module under test: it reads both zips itself and
checks that every part that carries no text is byte for byte the source's, that every translated part has the
source's elements (paragraphs, tables, cells, images, notes, references, fields, bookmarks, tabs, breaks) in the
same numbers and order, that the images and fields are unchanged, and that no Chinese is left in a text node.
"""

from __future__ import annotations

import io
import re
import struct
import zlib
from dataclasses import dataclass

import docx
from docx.opc.constants import CONTENT_TYPE, RELATIONSHIP_TYPE
from docx.opc.packuri import PackURI
from docx.opc.part import Part
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls, qn
from docx.shared import Inches
from lxml import etree

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
TEXT_PART = re.compile(r"word/(document|header\d*|footer\d*|footnotes|endnotes|comments)\.xml")
# elements a faithful translation keeps, in number and order (run-level formatting and text may change)
STRUCTURAL = (
    "p tbl tr tc drawing pict tab br footnoteReference endnoteReference commentReference footnote endnote comment "
    "fldSimple fldChar instrText bookmarkStart bookmarkEnd commentRangeStart commentRangeEnd sectPr txbxContent "
    "headerReference footerReference"
).split()
LINK = "https://example.com/报告"
BOLD_SENTENCE = ("这是一个", "非常重要", "的问题，请大家认真阅读。")  # the middle one is bold


def tiny_png() -> bytes:
    """A valid 2x2 red PNG (no imaging library needed)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2))
    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def _add_hyperlink(paragraph: docx.text.paragraph.Paragraph, url: str, text: str) -> None:
    r_id = paragraph.part.relate_to(url, RELATIONSHIP_TYPE.HYPERLINK, is_external=True)
    paragraph._p.append(
        parse_xml(
            f'<w:hyperlink {nsdecls("w", "r")} r:id="{r_id}"><w:r><w:rPr><w:rStyle w:val="Hyperlink"/>'
            f'<w:color w:val="0563C1"/><w:u w:val="single"/></w:rPr><w:t>{text}</w:t></w:r></w:hyperlink>'
        )
    )


def add_notes(document: docx.document.Document, kind: str, text: str) -> None:
    """A footnotes or endnotes part (separators and one note with id 1), related from the document."""
    element = "footnote" if kind == "footnotes" else "endnote"
    style = "FootnoteReference" if kind == "footnotes" else "EndnoteReference"
    xml = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:{kind} {nsdecls("w")}>'
        f'<w:{element} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{element}>'
        f'<w:{element} w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p>'
        f"</w:{element}>"
        f'<w:{element} w:id="1"><w:p><w:r><w:rPr><w:rStyle w:val="{style}"/></w:rPr><w:{element}Ref/></w:r>'
        f'<w:r><w:t xml:space="preserve"> {text}</w:t></w:r></w:p></w:{element}></w:{kind}>'
    )
    content_type = CONTENT_TYPE.WML_FOOTNOTES if kind == "footnotes" else CONTENT_TYPE.WML_ENDNOTES
    relationship = RELATIONSHIP_TYPE.FOOTNOTES if kind == "footnotes" else RELATIONSHIP_TYPE.ENDNOTES
    part = Part(PackURI(f"/word/{kind}.xml"), content_type, xml.encode("utf-8"), document.part.package)
    document.part.relate_to(part, relationship)


def note_reference(paragraph: docx.text.paragraph.Paragraph, kind: str) -> None:
    style = "FootnoteReference" if kind == "footnote" else "EndnoteReference"
    paragraph._p.append(
        parse_xml(
            f'<w:r {nsdecls("w")}><w:rPr><w:rStyle w:val="{style}"/><w:vertAlign w:val="superscript"/></w:rPr>'
            f'<w:{kind}Reference w:id="1"/></w:r>'
        )
    )


def _complex_field(paragraph: docx.text.paragraph.Paragraph, instruction: str, result: str) -> None:
    for xml in (
        '<w:r><w:fldChar w:fldCharType="begin"/></w:r>',
        f'<w:r><w:instrText xml:space="preserve"> {instruction} </w:instrText></w:r>',
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r>',
        f"<w:r><w:t>{result}</w:t></w:r>",
        '<w:r><w:fldChar w:fldCharType="end"/></w:r>',
    ):
        paragraph._p.append(parse_xml(xml.replace("<w:r>", f"<w:r {nsdecls('w')}>", 1)))


def _text_box(paragraph: docx.text.paragraph.Paragraph, text: str) -> None:
    """A VML text box (the form Word's compatibility mode writes) with one paragraph inside."""
    paragraph._p.append(
        parse_xml(
            f'<w:r {nsdecls("w")} xmlns:v="urn:schemas-microsoft-com:vml"><w:pict>'
            '<v:shape id="box1" style="width:200pt;height:40pt">'
            f"<v:textbox><w:txbxContent><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:txbxContent></v:textbox>"
            f"</v:shape></w:pict></w:r>"
        )
    )


def sample_docx() -> bytes:
    document = docx.Document()
    document.add_heading("年度报告", level=1)
    first = document.add_paragraph()
    first.add_run(BOLD_SENTENCE[0])
    first.add_run(BOLD_SENTENCE[1]).bold = True
    first.add_run(BOLD_SENTENCE[2])
    second = document.add_paragraph("详细信息请访问")
    _add_hyperlink(second, LINK, "我们的网站")
    second.add_run("，或者")
    second.add_run("联系我们").italic = True
    second.add_run("。")
    note_reference(second, "footnote")
    third = document.add_paragraph("第一项")
    third.add_run().add_tab()
    third.add_run("第二项")
    third.add_run().add_break()
    third.add_run("第三项在新的一行。")
    document.add_paragraph("Version 2.1 (no Chinese here)")
    fields = document.add_paragraph("本文档共有")
    _complex_field(fields, "NUMPAGES", "3")
    fields.add_run("页，打印于今天。")
    note_reference(fields, "endnote")
    bookmarked = document.add_paragraph()
    bookmarked._p.append(parse_xml(f'<w:bookmarkStart {nsdecls("w")} w:id="0" w:name="summary"/>'))
    bookmarked.add_run("总结：我们的收入增长了百分之二十。")
    bookmarked._p.append(parse_xml(f'<w:bookmarkEnd {nsdecls("w")} w:id="0"/>'))

    table = document.add_table(rows=2, cols=2)
    for (row, column), text in {(0, 0): "名称", (0, 1): "价格", (1, 0): "苹果", (1, 1): "五元"}.items():
        table.cell(row, column).text = text
    nested = table.cell(1, 1).add_table(rows=1, cols=2)
    nested.cell(0, 0).text = "小计"
    nested.cell(0, 1).text = "十元"

    picture = document.add_paragraph("下图显示了结果：")
    picture.add_run().add_picture(io.BytesIO(tiny_png()), width=Inches(0.5))
    picture.add_run("（图一）")
    _text_box(document.add_paragraph("文本框如下："), "这是文本框里的文字。")
    commented = document.add_paragraph()
    run = commented.add_run("这一段需要审阅。")
    document.add_comment(run, text="请检查这里的数字。", author="审阅者", initials="SY")
    document.add_paragraph("")

    section = document.sections[0]
    section.different_first_page_header_footer = True
    document.settings.odd_and_even_pages_header_footer = True
    section.header.paragraphs[0].text = "公司内部文件"
    section.first_page_header.paragraphs[0].text = "封面页眉"
    section.even_page_header.paragraphs[0].text = "偶数页页眉"
    footer = section.footer.paragraphs[0]
    footer.text = "第"
    footer._p.append(parse_xml(f'<w:fldSimple {nsdecls("w")} w:instr=" PAGE "><w:r><w:t>1</w:t></w:r></w:fldSimple>'))
    footer.add_run("页")
    section.first_page_footer.paragraphs[0].text = "机密"
    section.even_page_footer.paragraphs[0].text = "版权所有"
    add_notes(document, "footnotes", "数据来源：国家统计局。")
    add_notes(document, "endnotes", "本报告仅供参考。")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def long_docx(paragraphs: int) -> bytes:
    """A document of ``paragraphs`` numbered paragraphs with a bold word each, a table and an image: more text to
    translate than one fan-out part holds."""
    document = docx.Document()
    document.add_heading("长篇报告", level=1)
    for number in range(paragraphs):
        paragraph = document.add_paragraph(f"第{number + 1}段：今天我们讨论")
        paragraph.add_run("经济发展").bold = True
        paragraph.add_run("的问题，大家都认为这个问题非常重要。")
        if number % 25 == 0:
            paragraph.add_run().add_picture(io.BytesIO(tiny_png()), width=Inches(0.3))
    table = document.add_table(rows=2, cols=2)
    for (row, column), text in {(0, 0): "年份", (0, 1): "收入", (1, 0): "二零二四", (1, 1): "一百万"}.items():
        table.cell(row, column).text = text
    document.sections[0].header.paragraphs[0].text = "内部资料"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


# --- the independent check ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """What a translation must keep of one text part."""

    elements: tuple[str, ...]  # the STRUCTURAL elements, in document order
    kept: tuple[bytes, ...]  # images, fields, note references, bookmarks, serialised
    links: tuple[str, ...]  # the hyperlinks' r:id, in order, repeats merged


def _local(tag: object) -> str:
    return etree.QName(tag).localname if isinstance(tag, str) else ""


def _w_elements(root: etree._Element) -> list[etree._Element]:
    return [e for e in root.iter() if isinstance(e.tag, str) and etree.QName(e.tag).namespace == W]


def shape(root: etree._Element) -> Shape:
    elements = tuple(_local(e.tag) for e in _w_elements(root) if _local(e.tag) in STRUCTURAL)
    kept_names = {"drawing", "fldSimple", "footnoteReference", "endnoteReference", "bookmarkStart", "bookmarkEnd"}
    kept = tuple(etree.tostring(e) for e in _w_elements(root) if _local(e.tag) in kept_names)
    links: list[str] = []
    for element in root.iter(f"{{{W}}}hyperlink"):
        r_id = element.get(f"{{{R}}}id") or ""
        if not links or links[-1] != r_id:
            links.append(r_id)
    return Shape(elements, kept, tuple(links))


def zip_parts(data: bytes) -> dict[str, bytes]:
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def text_nodes(root: etree._Element) -> list[str]:
    """Every ``w:t`` text outside fields' results (those are kept as they are)."""
    return [t.text or "" for t in root.iter(f"{{{W}}}t")]


def check_translation(source: bytes, translated: bytes, *, english: bool = True) -> dict[str, Shape]:
    """Assert what a faithful translation keeps (``english``: and that no text node holds Chinese; the tests' tiny
    random model writes anything); returns each text part's shape."""
    docx.Document(io.BytesIO(translated))  # opens as a Word document
    before, after = zip_parts(source), zip_parts(translated)
    assert list(before) == list(after), "the parts (zip entries) differ"
    shapes = {}
    for name, data in before.items():
        if not TEXT_PART.fullmatch(name):
            assert after[name] == data, f"{name} carries no text but changed"
            continue
        source_root, output_root = etree.fromstring(data), etree.fromstring(after[name])
        assert shape(output_root) == shape(source_root), f"{name}: structure changed"
        for text in text_nodes(output_root) if english else ():
            assert not _HAN.search(text), f"{name}: Chinese left in a text node: {text!r}"
        shapes[name] = shape(source_root)
    return shapes


BOLD_PARAGRAPH = 1  # the body paragraph of BOLD_SENTENCE (after the heading)
LINK_PARAGRAPH = 2


def paragraph_runs(data: bytes, index: int) -> list[tuple[str, bool, bool]]:
    """``(text, bold, italic)`` of each run (hyperlinks' runs included) of body paragraph ``index``."""
    paragraph = docx.Document(io.BytesIO(data)).paragraphs[index]
    runs = []
    for run in paragraph._p.iter(qn("w:r")):
        rpr = run.find(qn("w:rPr"))
        text = "".join(t.text or "" for t in run.iter(qn("w:t")))
        bold = rpr is not None and rpr.find(qn("w:b")) is not None
        italic = rpr is not None and rpr.find(qn("w:i")) is not None
        runs.append((text, bold, italic))
    return runs


def has_chinese(text: str) -> bool:
    return bool(_HAN.search(text))


__all__ = ["check_translation", "paragraph_runs", "qn", "sample_docx", "shape", "tiny_png", "zip_parts"]
