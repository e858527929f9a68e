"""PowerPoint presentations for the tests, made with python-pptx (the library a user opens the result with), and
``inspect``, which reads one with python-pptx (never ``handler.formats.presentation``).

``sample_file()`` holds the awkward cases: a title and a body with a bold word inside a sentence, a word split
over two runs (翻 + 译), a Latin word in a run of its own with other language and proofing attributes (as
PowerPoint saves it), a hyperlink, a line break and a slide-number field inside a sentence, a table with an empty
cell, a group shape (with a nested group) holding text, speaker notes, an image, a text without Chinese, a slide
with a transition and an animation, slides whose presentation order differs from their file names, a static text
box on a slide layout, a layout placeholder with a custom prompt, and a master placeholder's text (seen only in
master view: kept in Chinese).
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterator, Sequence

from lxml import etree
from pptx import Presentation
from pptx.dml.color import RGBColor
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.oxml import parse_xml
from pptx.oxml.ns import nsdecls
from pptx.shapes.base import BaseShape
from pptx.slide import Slide
from pptx.text.text import TextFrame, _Paragraph
from pptx.util import Inches, Pt

from tests.formats.inspection import Inspection
from tests.word_samples import tiny_png

FORMAT = "pptx"
SUFFIX = ".pptx"

TITLE = "季度销售报告"
BOLD_SENTENCE = ("这是一个", "非常重要", "的问题，请大家认真阅读。")  # the middle one is bold
SPLIT_WORD = ("我们需要", "翻", "译", "这份文件。")  # 翻 and 译 are two runs with the same formatting
LINK = "https://example.com/报告"
LINK_SENTENCE = ("详细信息请访问", "我们的网站", "。")  # the middle one is the link
BREAK_SENTENCE = ("第一行文字", "第二行文字")  # one paragraph, a line break between
FIELD_SENTENCE = ("这是第", "页的内容。")  # a slide-number field between
MIXED = ("这份", "PPT", "模板很好用。")  # as PowerPoint saves them: languages and proofing marks differ by run
ENGLISH = "Version 2.1 (draft)"  # no Chinese: kept as it is
NOTES = ("演讲者备注：先介绍", "背景", "，再讲结论。")  # the middle one is italic
TABLE = (("地区", "销售额"), ("华东", "一百万"), ("华南", ""))  # the last cell is empty
GROUP_TEXTS = ("第一步：收集数据", "第二步：分析数据")  # the second in a nested group
CLOSING = "谢谢大家！"
LAYOUT_TEXT = "公司内部资料，请勿外传"  # a static text box on the "Title and Content" layout
CUSTOM_PROMPT = "在此输入章节标题"  # the "Title Only" layout's title placeholder, hasCustomPrompt="1"
MASTER_TITLE = "单击此处编辑母版标题样式"  # the master's title placeholder: master view only, kept
TRANSITION = '<p:transition {} spd="slow"><p:fade/></p:transition>'.format(nsdecls("p"))
TIMING = (
    '<p:timing {}><p:tnLst><p:par><p:cTn id="1" dur="indefinite" restart="never" nodeType="tmRoot"/>'
    '</p:par></p:tnLst><p:bldLst><p:bldP spid="2" grpId="0"/></p:bldLst></p:timing>'
).format(nsdecls("p"))


def _runs(paragraph: _Paragraph, pieces: Sequence[tuple[str, dict[str, object]]]) -> None:
    for text, how in pieces:
        run = paragraph.add_run()
        run.text = text
        if how.get("bold"):
            run.font.bold = True
        if how.get("italic"):
            run.font.italic = True
        if "link" in how:
            run.hyperlink.address = str(how["link"])
        for attribute, value in how.items():
            if attribute in ("lang", "altLang", "dirty", "err"):
                run._r.get_or_add_rPr().set(attribute, str(value))
        if "color" in how:
            run.font.color.rgb = RGBColor.from_string(str(how["color"]))


def _field(paragraph: _Paragraph) -> None:
    paragraph._p.append(
        parse_xml(
            f'<a:fld {nsdecls("a")} id="{{B6F15528-21DE-4FAA-801E-634DDDAF4B2B}}" type="slidenum">'
            '<a:rPr lang="zh-CN" altLang="en-US"/><a:t>1</a:t></a:fld>'
        )
    )


def _first_slide(presentation: Presentation) -> None:
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])  # Title and Content
    assert slide.shapes.title is not None
    slide.shapes.title.text = TITLE
    body = slide.placeholders[1].text_frame
    _runs(body.paragraphs[0], [(BOLD_SENTENCE[0], {}), (BOLD_SENTENCE[1], {"bold": True}), (BOLD_SENTENCE[2], {})])
    _runs(body.add_paragraph(), [(piece, {}) for piece in SPLIT_WORD])
    _runs(body.add_paragraph(), [(LINK_SENTENCE[0], {}), (LINK_SENTENCE[1], {"link": LINK}), (LINK_SENTENCE[2], {})])
    body.add_paragraph().text = "\v".join(BREAK_SENTENCE)  # python-pptx writes a vertical tab as a:br
    field = body.add_paragraph()
    _runs(field, [(FIELD_SENTENCE[0], {})])
    _field(field)
    _runs(field, [(FIELD_SENTENCE[1], {})])
    chinese, latin = {"lang": "zh-CN", "altLang": "en-US", "dirty": "0"}, {"lang": "en-US", "dirty": "0", "err": "1"}
    _runs(body.add_paragraph(), [(MIXED[0], chinese), (MIXED[1], latin), (MIXED[2], chinese)])
    body.add_paragraph().text = ENGLISH
    notes = slide.notes_slide.notes_text_frame
    assert notes is not None
    _runs(notes.paragraphs[0], [(NOTES[0], {}), (NOTES[1], {"italic": True}), (NOTES[2], {})])


def _table_slide(presentation: Presentation) -> None:
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])  # Title Only
    assert slide.shapes.title is not None
    slide.shapes.title.text = "数据概览"
    table = slide.shapes.add_table(len(TABLE), 2, Inches(0.5), Inches(1.5), Inches(6), Inches(1.5)).table
    for row, texts in enumerate(TABLE):
        for column, text in enumerate(texts):
            if text:
                table.cell(row, column).text = text
    group = slide.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(0.5), Inches(3.5), Inches(3), Inches(0.5)).text_frame.text = GROUP_TEXTS[0]
    nested = group.shapes.add_group_shape()
    nested.shapes.add_textbox(Inches(0.5), Inches(4), Inches(3), Inches(0.5)).text_frame.text = GROUP_TEXTS[1]
    slide.shapes.add_picture(io.BytesIO(tiny_png()), Inches(7), Inches(3.5), Inches(1), Inches(1))
    slide.notes_slide.notes_text_frame.text = "这一页的数据来自统计局。"  # type: ignore[union-attr]


def _closing_slide(presentation: Presentation) -> None:
    slide = presentation.slides.add_slide(presentation.slide_layouts[6])  # Blank
    box = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(1)).text_frame
    _runs(box.paragraphs[0], [(CLOSING, {"color": "C00000"})])
    box.paragraphs[0].runs[0].font.size = Pt(40)
    slide.shapes.add_textbox(Inches(1), Inches(4), Inches(6), Inches(1)).text_frame.text = "Q&A"
    element = slide._element
    element.append(parse_xml(TRANSITION))  # after p:clrMapOvr, as the schema orders them
    element.append(parse_xml(TIMING))


def _layouts(presentation: Presentation) -> None:
    layout = presentation.slide_layouts[1]
    tree = layout.shapes._spTree
    box = (
        f'<p:sp {nsdecls("a", "p")}><p:nvSpPr><p:cNvPr id="90" name="Notice"/><p:cNvSpPr txBox="1"/><p:nvPr/>'
        '</p:nvSpPr><p:spPr><a:xfrm><a:off x="457200" y="6172200"/><a:ext cx="4572000" cy="369332"/></a:xfrm>'
        '<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr><p:txBody><a:bodyPr wrap="none"/><a:lstStyle/>'
        f'<a:p><a:r><a:rPr lang="zh-CN" altLang="en-US" sz="1200"/><a:t>{LAYOUT_TEXT}</a:t></a:r></a:p>'
        "</p:txBody></p:sp>"
    )
    tree.append(parse_xml(box))
    title = presentation.slide_layouts[5].placeholders[0]
    title.element.ph.set("hasCustomPrompt", "1")
    title.text_frame.text = CUSTOM_PROMPT
    presentation.slide_master.placeholders[0].text_frame.text = MASTER_TITLE


def _reorder(presentation: Presentation, order: Sequence[int]) -> None:
    listing = presentation.slides._sldIdLst
    items = list(listing)
    for item in items:
        listing.remove(item)
    for index in order:
        listing.append(items[index])


def sample_file() -> bytes:
    """The sample presentation: three slides, shown in the order slide1, slide3, slide2 (file names)."""
    presentation = Presentation()
    _layouts(presentation)
    _first_slide(presentation)
    _table_slide(presentation)
    _closing_slide(presentation)
    _reorder(presentation, [0, 2, 1])  # the closing slide (slide3.xml) is shown second
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def file_of(sentences: Sequence[str]) -> bytes:
    """A presentation holding ``sentences``, thirty a slide: the title, twenty body paragraphs, the four cells of a
    table and five paragraphs of speaker notes (few slides: a long file stays under the tests' size limit)."""
    presentation = Presentation()
    for start in range(0, len(sentences), 30):
        chunk = list(sentences[start : start + 30])
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        assert slide.shapes.title is not None
        slide.shapes.title.text = chunk[0]
        body = slide.placeholders[1].text_frame
        for at, sentence in enumerate(chunk[1:21]):
            (body.paragraphs[0] if at == 0 else body.add_paragraph()).text = sentence
        cells = chunk[21:25]
        if cells:
            table = slide.shapes.add_table(2, 2, Inches(0.5), Inches(5), Inches(6), Inches(1)).table
            for at, sentence in enumerate(cells):
                table.cell(at // 2, at % 2).text = sentence
        if chunk[25:]:
            slide.notes_slide.notes_text_frame.text = "\n".join(chunk[25:])  # type: ignore[union-attr]
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


# --- reading back with python-pptx -------------------------------------------------------------------------------


def walk(shapes: Iterator[BaseShape]) -> Iterator[BaseShape]:
    """Every shape, groups' shapes (at any depth) after their group."""
    for shape in shapes:
        yield shape
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from walk(iter(shape.shapes))  # type: ignore[attr-defined]


def frames(shape: BaseShape) -> Iterator[TextFrame]:
    """A shape's text frames: its own, or each table cell's."""
    if shape.has_text_frame:
        yield shape.text_frame  # type: ignore[attr-defined]
    if getattr(shape, "has_table", False):
        for row in shape.table.rows:  # type: ignore[attr-defined]
            for cell in row.cells:
                yield cell.text_frame


def seen_on_slides(shape: BaseShape) -> bool:
    """A layout's or master's shape a user sees on slides: not a placeholder, or one with a custom prompt."""
    if not shape.is_placeholder:
        return True
    return shape.element.ph.get("hasCustomPrompt") in ("1", "true")  # type: ignore[attr-defined]


def slide_texts(slide: Slide) -> list[str]:
    texts = [p.text for shape in walk(iter(slide.shapes)) for frame in frames(shape) for p in frame.paragraphs]
    if slide.has_notes_slide:
        notes = slide.notes_slide
        texts += [p.text for shape in walk(iter(notes.shapes)) for frame in frames(shape) for p in frame.paragraphs]
    return texts


def inspect(data: bytes) -> Inspection:
    """What a translation keeps (slides, shapes by type, tables, cells, paragraphs, line breaks, pictures and their
    bytes, notes, layouts, animations, transitions) and every text it translates, in reading order."""
    presentation = Presentation(io.BytesIO(data))
    counts: Counter[str] = Counter()
    texts: list[str] = []
    for slide in presentation.slides:
        counts["slides"] += 1
        counts["notes"] += slide.has_notes_slide
        counts["transitions"] += slide.element.find(f"{{{_P}}}transition") is not None
        counts["animations"] += slide.element.find(f"{{{_P}}}timing") is not None
        _count_shapes(slide.shapes, counts)
        if slide.has_notes_slide:
            _count_shapes(slide.notes_slide.shapes, counts)
        texts += slide_texts(slide)
    for master in presentation.slide_masters:
        counts["masters"] += 1
        for layout in master.slide_layouts:
            counts["layouts"] += 1
            texts += _layout_texts(layout.shapes)
        texts += _layout_texts(master.shapes)
    return Inspection(dict(sorted(counts.items())), texts)


_P = "http://schemas.openxmlformats.org/presentationml/2006/main"


def _count_shapes(shapes: Iterator[BaseShape], counts: Counter[str]) -> None:
    for shape in walk(iter(shapes)):
        counts[f"shapes: {shape.shape_type}"] += 1
        if getattr(shape, "has_table", False):
            counts["tables"] += 1
            cells = [cell for row in shape.table.rows for cell in row.cells]  # type: ignore[attr-defined]
            counts["cells"] += len(cells)
            counts["empty cells"] += sum(1 for cell in cells if not cell.text)
        if shape.shape_type == MSO_SHAPE_TYPE.PICTURE:
            counts["pictures"] += 1
            counts["picture bytes"] += len(shape.image.blob)  # type: ignore[attr-defined]
        for frame in frames(shape):
            counts["paragraphs"] += len(frame.paragraphs)
            counts["line breaks"] += sum(p.text.count("\v") for p in frame.paragraphs)


def _layout_texts(shapes: Iterator[BaseShape]) -> list[str]:
    return [
        p.text
        for shape in walk(iter(shapes))
        if seen_on_slides(shape)
        for frame in frames(shape)
        for p in frame.paragraphs
    ]


def entries(data: bytes) -> dict[str, bytes]:
    """The zip's entries by name (for byte-for-byte checks)."""
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def xml_of(data: bytes, entry: str) -> etree._Element:
    return etree.fromstring(entries(data)[entry])
