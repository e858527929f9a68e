"""Word documents (``handler.formats.word``): what becomes a unit, how formatting travels as markup
characters and comes back as runs, what is kept byte for byte, refusals; and the sample document through the
shipped default model (structure and formatting asserted, no wording)."""

from __future__ import annotations

import io
import re
import zipfile
from collections import Counter
from collections.abc import Callable

import docx
import pytest
from lxml import etree

from handler.errors import InvalidRequestError, TranslatorError
from handler.formats import FORMATS_BY_NAME, content_type_for, format_for, packages, runs, translate_file
from handler.formats.word import read_word_file, structure_of, translate_word_file
from handler.formats.word_format import DOCX_CONTENT_TYPE, WORD_ENCODING
from handler.text.spans import MARKUP_CLOSE, MARKUP_OPEN, MARKUP_STANDALONE
from tests.fuzz.shipped import needs_shipped_bundle, shipped_service
from tests.word_samples import (
    BOLD_PARAGRAPH,
    BOLD_SENTENCE,
    LINK,
    LINK_PARAGRAPH,
    W,
    check_translation,
    has_chinese,
    paragraph_runs,
    sample_docx,
    shape,
    tiny_png,
    zip_parts,
)

OPEN, CLOSE, VOID = chr(MARKUP_OPEN), chr(MARKUP_CLOSE), chr(MARKUP_STANDALONE)
_HAN_RUN = re.compile(r"[\u3400-\u9fff，。：；！？（）、]+")


def fake_english(text: str) -> str:
    """A stand-in translator: every run of Chinese becomes "en" words, markup characters stay where they were."""
    return _HAN_RUN.sub(lambda match: " ".join(["en"] * max(1, len(match.group()) // 2)) + " ", text)


def _document_xml(data: bytes) -> etree._Element:
    return etree.fromstring(zip_parts(data)["word/document.xml"])


def _body_paragraphs(data: bytes) -> list[etree._Element]:
    return list(_document_xml(data).find(f"{{{W}}}body").iter(f"{{{W}}}p"))  # type: ignore[union-attr]


# --- units --------------------------------------------------------------------------------------------------------
def test_every_part_with_text_gives_units_one_paragraph_each() -> None:
    document = read_word_file(sample_docx())
    lines = document.lines
    assert lines[1] == f"{BOLD_SENTENCE[0]}{OPEN}{BOLD_SENTENCE[1]}{CLOSE}{BOLD_SENTENCE[2]}"  # one unit, runs merged
    # the hyperlink and the italic run are each a stretch of their own; the footnote reference stays out (trailing)
    open_2, close_2 = chr(MARKUP_OPEN + 1), chr(MARKUP_CLOSE + 1)
    assert lines[2] == f"详细信息请访问{OPEN}我们的网站{CLOSE}，或者{open_2}联系我们{close_2}。"
    assert f"第一项{VOID}第二项{chr(MARKUP_STANDALONE + 1)}第三项在新的一行。" in lines  # tab, break: voids
    assert f"本文档共有{VOID}页，打印于今天。" in lines  # the whole complex field is one void
    kinds = {part.kind for part in document.parts if part.units}
    assert kinds == {"document", "header", "footer", "footnotes", "endnotes", "comments"}
    # text box, nested table, first-page and even-page variants, comment
    for expected in ("这是文本框里的文字。", "小计", "十元", "封面页眉", "偶数页页眉", "版权所有", "请检查这里的数字"):
        assert any(line.startswith(expected) for line in lines)
    assert "数据来源：国家统计局。" in lines and "本报告仅供参考。" in lines  # footnote, endnote
    assert not any("Version 2.1" in line for line in lines)  # no Chinese: not a unit
    assert document.characters == sum(len(line) for line in lines)


def test_the_bold_word_comes_back_bold_and_the_rest_plain() -> None:
    data = sample_docx()
    out = translate_word_file(lambda text: text.replace("非常重要", "very important"), data)
    runs = paragraph_runs(out, BOLD_PARAGRAPH)
    assert runs == [(BOLD_SENTENCE[0], False, False), ("very important", True, False), (BOLD_SENTENCE[2], False, False)]


def test_formatting_follows_the_markup_when_the_translation_moves_it() -> None:
    def reorder(text: str) -> str:  # English puts the bold stretch first
        return text.replace(f"{BOLD_SENTENCE[0]}{OPEN}{BOLD_SENTENCE[1]}{CLOSE}", f"{OPEN}Very{CLOSE} this")

    runs = paragraph_runs(translate_word_file(reorder, sample_docx()), BOLD_PARAGRAPH)
    assert runs == [("Very", True, False), (" this" + BOLD_SENTENCE[2], False, False)]


def test_the_hyperlink_keeps_its_relationship_and_gets_the_english() -> None:
    data = sample_docx()
    out = translate_word_file(fake_english, data)
    paragraph = _body_paragraphs(out)[LINK_PARAGRAPH]
    links = paragraph.findall(f"{{{W}}}hyperlink")
    assert len(links) == 1
    r_id = links[0].get("{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id")
    rels = zip_parts(out)["word/_rels/document.xml.rels"].decode()
    assert f'Id="{r_id}"' in rels and LINK in rels
    link_text = "".join(links[0].itertext())
    assert link_text.strip() and not has_chinese(link_text)
    style = links[0].find(f"{{{W}}}r/{{{W}}}rPr/{{{W}}}rStyle")
    assert style is not None and style.get(f"{{{W}}}val") == "Hyperlink"
    italic = [text for text, _bold, is_italic in paragraph_runs(out, LINK_PARAGRAPH) if is_italic]
    assert italic and all(text.strip() and not has_chinese(text) for text in italic)


def test_voids_the_translation_lost_are_put_at_the_end_never_dropped() -> None:
    data = sample_docx()
    out = translate_word_file(lambda text: _HAN_RUN.sub("en ", text.replace(VOID, "")), data)
    before, after = shape(_document_xml(data)), shape(_document_xml(out))
    assert Counter(after.elements) == Counter(before.elements)  # every tab, break, field, image still there
    assert sorted(after.kept) == sorted(before.kept)
    # only the first void of each paragraph was lost (the tab): it ends its paragraph, the break stays in place
    runs = [item for item in _body_paragraphs(out)[3] if item.tag == f"{{{W}}}r"]
    kinds = [etree.QName(child).localname for run in runs for child in run if child.tag != f"{{{W}}}rPr"]
    assert kinds == ["t", "br", "t", "tab"]


def test_a_translation_that_drops_a_closing_mark_still_keeps_the_text() -> None:
    out = translate_word_file(lambda text: fake_english(text.replace(CLOSE, "")), sample_docx())
    text = "".join(t for t, _b, _i in paragraph_runs(out, BOLD_PARAGRAPH))
    assert "en" in text and not has_chinese(text)


def test_paragraphs_without_chinese_are_untouched() -> None:
    data = sample_docx()
    out = translate_word_file(fake_english, data)

    def untranslated(document: bytes) -> list[bytes]:
        return [etree.tostring(p) for p in _body_paragraphs(document) if b"Version 2.1" in etree.tostring(p)]

    assert len(untranslated(data)) == 1 and untranslated(out) == untranslated(data)


def test_a_document_without_chinese_comes_back_part_for_part() -> None:
    document = docx.Document()
    document.add_paragraph("Only English here.")
    document.add_picture(io.BytesIO(tiny_png()))
    buffer = io.BytesIO()
    document.save(buffer)
    data = buffer.getvalue()
    calls: list[str] = []
    out = translate_word_file(lambda text: calls.append(text) or text, data)
    assert calls == [] and zip_parts(out) == zip_parts(data)


def test_parts_without_text_are_byte_for_byte_and_the_image_too() -> None:
    data = sample_docx()
    out = translate_word_file(fake_english, data)
    before, after = zip_parts(data), zip_parts(out)
    images = [name for name in before if name.startswith("word/media/")]
    assert images and all(after[name] == before[name] == tiny_png() for name in images)
    for name in ("[Content_Types].xml", "word/styles.xml", "word/settings.xml", "word/_rels/document.xml.rels"):
        assert after[name] == before[name]
    check_translation(data, out)


def test_the_output_keeps_the_zip_entries_and_their_order() -> None:
    data = sample_docx()
    out = translate_word_file(fake_english, data)
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(io.BytesIO(out)) as target:
        assert [(i.filename, i.compress_type) for i in source.infolist()] == [
            (i.filename, i.compress_type) for i in target.infolist()
        ]


def test_structure_counts_cover_what_must_not_change() -> None:
    counts = structure_of(_document_xml(sample_docx()))
    assert counts["tbl"] == 2 and counts["tc"] == 6 and counts["drawing"] == 1 and counts["txbxContent"] == 1
    assert counts["footnoteReference"] == 1 and counts["endnoteReference"] == 1 and counts["fldChar"] == 3


def test_a_wrong_number_of_translated_lines_is_an_error() -> None:
    with pytest.raises(TranslatorError, match="paragraphs, not"):
        translate_word_file(lambda text: text + "\nextra", sample_docx())


def test_a_rebuild_that_lost_an_element_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    original = runs._Void.build

    def lose_images(self: runs._Void) -> etree._Element:
        element = original(self)
        for drawing in element.iter(f"{{{W}}}drawing"):
            drawing.getparent().remove(drawing)  # type: ignore[union-attr]
        return element

    monkeypatch.setattr(runs._Void, "build", lose_images)
    with pytest.raises(TranslatorError, match="changed the structure of word/document.xml"):
        translate_word_file(fake_english, sample_docx())


# --- refusals -----------------------------------------------------------------------------------------------------
def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def _corrupt_cases() -> dict[str, tuple[bytes, str]]:
    data = sample_docx()
    parts = zip_parts(data)
    broken = dict(parts, **{"word/document.xml": parts["word/document.xml"][:-40]})
    no_main = {name: content for name, content in parts.items() if name != "word/document.xml"}
    return {
        "text": ("你好，世界".encode(), "is not a zip archive"),
        "empty": (b"", "is not a zip archive"),
        "truncated": (data[: len(data) // 2], "zip archive"),
        "other zip": (_zip({"hello.txt": b"hi"}), "cannot be read as one"),
        "broken xml": (_zip(broken), "damaged part word/document.xml|cannot be read as one"),
        "no main part": (_zip(no_main), "cannot be read as one|not in the archive"),
    }


@pytest.mark.parametrize("case", list(_corrupt_cases()))
def test_a_corrupt_or_foreign_file_is_refused_with_a_clear_error(case: str) -> None:
    data, pattern = _corrupt_cases()[case]
    calls: list[str] = []
    with pytest.raises(InvalidRequestError, match="not a Word .docx document") as caught:
        translate_word_file(lambda text: calls.append(text) or text, data, name="report.docx")
    assert re.search(pattern, str(caught.value)) and "report.docx" in str(caught.value)
    assert calls == []  # refused before any translation


def test_a_zip_bomb_is_refused_before_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packages, "MAX_UNPACKED_BYTES", 10_000)
    with pytest.raises(InvalidRequestError, match="unpacks to"):
        read_word_file(sample_docx())


def test_file_helpers_know_the_format() -> None:
    assert format_for("s3://b/Report.DOCX").name == "docx" and content_type_for("a.docx") == DOCX_CONTENT_TYPE
    assert content_type_for("a.txt").startswith("text/plain") and FORMATS_BY_NAME["docx"].binary
    with pytest.raises(InvalidRequestError, match="not a Word .docx document"):
        format_for("a.docx").read(b"plain text", "a.docx")


# --- the shipped model ------------------------------------------------------------------------------------------
@needs_shipped_bundle
def test_shipped_model_translates_every_part_and_keeps_every_structural_element() -> None:
    data = sample_docx()
    progress: list[tuple[int, int]] = []
    translated = translate_file(
        data, "report.docx", shipped_service(), progress=lambda done, total: progress.append((done, total))
    )
    out, encoding = translated.data, translated.source.encoding
    assert encoding == WORD_ENCODING and progress and progress[-1][0] == progress[-1][1]
    shapes = check_translation(data, out)  # structure, bytes of the other parts, no Chinese in any text node
    assert {"word/document.xml", "word/footnotes.xml", "word/endnotes.xml", "word/comments.xml"} <= set(shapes)
    assert sum(name.startswith("word/header") for name in shapes) == 3  # default, first page, even page
    assert sum(name.startswith("word/footer") for name in shapes) == 3
    runs = paragraph_runs(out, BOLD_PARAGRAPH)
    bold = [text for text, is_bold, _ in runs if is_bold]
    assert bold and all(text.strip() and not has_chinese(text) for text in bold)  # the bold word's English is bold
    assert any(text.strip() for text, is_bold, _ in runs if not is_bold)
    translated = docx.Document(io.BytesIO(out))
    section = translated.sections[0]
    for header in (section.header, section.first_page_header, section.even_page_header):
        assert header.paragraphs[0].text.strip() and not has_chinese(header.paragraphs[0].text)
    assert translated.tables[0].cell(0, 0).text.strip() and translated.tables[0].cell(1, 1).tables[0]
    footer = zip_parts(out)[next(name for name in shapes if name.startswith("word/footer"))]
    assert b'w:instr=" PAGE "' in footer or any(
        b'w:instr=" PAGE "' in zip_parts(out)[name] for name in shapes if name.startswith("word/footer")
    )
    comments = etree.fromstring(zip_parts(out)["word/comments.xml"])
    comment = comments.find(f"{{{W}}}comment")
    assert comment is not None and comment.get(f"{{{W}}}author") == "审阅者"  # attributes are kept
    assert "".join(comment.itertext()).strip() and not has_chinese("".join(comment.itertext()))


@needs_shipped_bundle
def test_shipped_model_gives_the_same_document_through_the_callable_and_the_file_entry_point() -> None:
    data = sample_docx()
    service = shipped_service()
    direct = translate_word_file(lambda text: service.translate_document(text), data)
    through = translate_file(data, "x.docx", service).data
    assert zip_parts(direct) == zip_parts(through)


def _identity(text: str) -> str:
    return text


ANY_TRANSLATOR: list[Callable[[str], str]] = [_identity, fake_english]


@pytest.mark.parametrize("translate", ANY_TRANSLATOR)
def test_translating_twice_the_same_bytes_gives_the_same_output(translate: Callable[[str], str]) -> None:
    data = sample_docx()
    assert translate_word_file(translate, data) == translate_word_file(translate, data)


# --- what Word itself writes -------------------------------------------------------------------------------------
def _docx_with_body(body_xml: str) -> bytes:
    """A python-docx document whose body is ``body_xml`` (paragraphs in WordprocessingML, ``w`` and ``r`` bound)."""
    document = docx.Document()
    body = document.element.body
    for child in list(body):
        if child.tag != f"{{{W}}}sectPr":
            body.remove(child)
    wrapper = etree.fromstring(
        f'<w:body xmlns:w="{W}" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
        f"{body_xml}</w:body>"
    )
    for index, child in enumerate(wrapper):
        body.insert(index, child)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _run(text: str, rpr: str = "", rsid: str = "00A1") -> str:
    return f'<w:r w:rsidR="{rsid}">{f"<w:rPr>{rpr}</w:rPr>" if rpr else ""}<w:t xml:space="preserve">{text}</w:t></w:r>'


def test_runs_split_by_editing_sessions_are_one_stretch_and_spell_marks_go() -> None:
    # Word splits a sentence into runs of the same formatting (one per editing session, rsid) and marks spelling
    paragraph = (
        "<w:p>"
        + _run("我们", rsid="0001")
        + '<w:proofErr w:type="spellStart"/>'
        + _run("明天", rsid="0002")
        + '<w:proofErr w:type="spellEnd"/>'
        + _run("去北京。", rsid="0003")
        + "</w:p>"
    )
    data = _docx_with_body(paragraph)
    document = read_word_file(data)
    assert document.lines == ["我们明天去北京。"]  # no markup at all: the model sees the plain sentence
    out = translate_word_file(lambda text: "We go to Beijing tomorrow.", data)
    runs = list(_body_paragraphs(out)[0].iter(f"{{{W}}}r"))
    assert ["".join(run.itertext()) for run in runs] == ["We go to Beijing tomorrow."]
    assert runs[0].get(f"{{{W}}}rsidR") == "0001" and not list(_body_paragraphs(out)[0].iter(f"{{{W}}}proofErr"))


def test_a_paragraph_all_inside_a_hyperlink_stays_inside_it() -> None:
    link = '<w:hyperlink w:anchor="chapter2">' + _run("第二章", '<w:rStyle w:val="Hyperlink"/>') + "</w:hyperlink>"
    data = _docx_with_body(f"<w:p>{link}</w:p>")
    assert read_word_file(data).lines == ["第二章"]
    out = translate_word_file(lambda text: "Chapter two", data)
    paragraph = _body_paragraphs(out)[0]
    links = paragraph.findall(f"{{{W}}}hyperlink")
    assert len(links) == 1 and links[0].get(f"{{{W}}}anchor") == "chapter2"
    assert "".join(links[0].itertext()) == "Chapter two" and len(paragraph.findall(f"{{{W}}}r")) == 0


def test_a_field_over_several_paragraphs_is_kept_whole() -> None:
    # a table of contents: the field begins in the first paragraph and ends in the last; its entries are results
    begin = '<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> TOC \\o "1-3" </w:instrText></w:r>'
    body = (
        f'<w:p>{begin}<w:r><w:fldChar w:fldCharType="separate"/></w:r>{_run("第一章 引言")}</w:p>'
        f"<w:p>{_run('第二章 方法')}</w:p>"
        f'<w:p>{_run("第三章 结果")}<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>'
        f"<w:p>{_run('正文从这里开始。')}</w:p>"
    )
    data = _docx_with_body(body)
    assert read_word_file(data).lines == ["正文从这里开始。"]
    out = translate_word_file(lambda text: "The text starts here.", data)
    before, after = _body_paragraphs(data), _body_paragraphs(out)
    assert [etree.tostring(p) for p in after[:3]] == [etree.tostring(p) for p in before[:3]]
    assert "".join(after[3].itertext()) == "The text starts here."


def test_a_tracked_insertion_and_a_deletion() -> None:
    inserted = f'<w:ins w:id="7" w:author="编辑" w:date="2026-01-01T00:00:00Z">{_run("非常")}</w:ins>'
    deleted = '<w:del w:id="8" w:author="编辑"><w:r><w:delText>有点</w:delText></w:r></w:del>'
    data = _docx_with_body(f"<w:p>{_run('这个方案')}{deleted}{inserted}{_run('好。')}</w:p>")
    line = read_word_file(data).lines[0]
    assert line == f"这个方案{VOID}{OPEN}非常{CLOSE}好。"  # the deletion is kept as it is, the insertion is a stretch
    out = translate_word_file(lambda text: f"This plan is {VOID}{OPEN}very{CLOSE} good.", data)
    paragraph = _body_paragraphs(out)[0]
    ins = paragraph.find(f"{{{W}}}ins")
    assert ins is not None and ins.get(f"{{{W}}}author") == "编辑" and "".join(ins.itertext()) == "very"
    assert paragraph.find(f"{{{W}}}del/{{{W}}}r/{{{W}}}delText").text == "有点"  # type: ignore[union-attr]


@needs_shipped_bundle
def test_shipped_model_refuses_a_passed_deadline_before_translating() -> None:
    import time

    from handler.errors import DeadlineExceededError

    with pytest.raises(DeadlineExceededError):
        translate_file(sample_docx(), "report.docx", shipped_service(), deadline=time.monotonic() - 1)
