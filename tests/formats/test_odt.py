"""OpenDocument text (``handler.formats.opendocument``, ``handler.formats.opendocument_text``): which paragraphs
become units and how their lines look, how spans, links, spaces, tabs, breaks, bookmarks, fields, notes and frames
come back around the English words (a stand-in translator writes invented English with the markup characters),
what is kept byte for byte, the structure check, refusals; and the sample through the shipped default model.
Every result is read back with odfpy, the library LibreTranslate's users build and open ``.odt`` files with."""

from __future__ import annotations

import io
import random
import re
import zipfile
from collections.abc import Callable

import pytest
from odf.element import Element, Node

from handler.errors import InvalidRequestError, TranslatorError
from handler.formats import FORMATS_BY_NAME, content_type_for, format_for, packages, translate_file
from handler.formats import opendocument_text as engine
from handler.formats.opendocument import ODT, ODT_CONTENT_TYPE, ODT_ENCODING
from handler.formats.opendocument_text import read_odt_file
from handler.text.spans import MARKUP_CLOSE, MARKUP_LIMIT, MARKUP_OPEN, MARKUP_STANDALONE
from tests.formats import odt_samples as samples
from tests.formats.inspection import HAN, assert_translated
from tests.fuzz.shipped import needs_shipped_bundle, shipped_service

OPEN, CLOSE, VOID = chr(MARKUP_OPEN), chr(MARKUP_CLOSE), chr(MARKUP_STANDALONE)
OPEN1, CLOSE1, VOID1, VOID2 = (
    chr(MARKUP_OPEN + 1),
    chr(MARKUP_CLOSE + 1),
    chr(MARKUP_STANDALONE + 1),
    chr(MARKUP_STANDALONE + 2),
)
BOLD_LINE = f"{samples.BOLD_SENTENCE[0]}{OPEN}{samples.BOLD_SENTENCE[1]}{CLOSE}{samples.BOLD_SENTENCE[2]}"
SPLIT_LINE = f"{samples.SPLIT_WORD[0]}{OPEN}{samples.SPLIT_WORD[1]}{CLOSE}{samples.SPLIT_WORD[2]}"
LINK_LINE = f"详情请见{OPEN}我们的{OPEN1}官方网站{CLOSE1}{CLOSE}。"
SPACED_LINE = f"{samples.SPACED}{VOID}第三项{VOID1}第四项{VOID2}，日期："
NOTE_LINE = f"这个结论需要进一步验证{VOID}。"
# every unit of the sample, in order: content.xml's, then styles.xml's header
SAMPLE_LINES = [
    "年度报告",
    BOLD_LINE,
    SPLIT_LINE,
    LINK_LINE,
    SPACED_LINE,
    "项目",
    "金额",
    "收入",
    "支出",
    "第一点：提高效率",
    "第二点：降低成本",
    NOTE_LINE,
    "数据来源于二零二三年的调查。",
    "下图显示了结果：",
    "文本框里的说明文字。",
    "请审阅这一段。",  # the annotation after the last text stays in place, never sent
    "这里需要修改。",
    "公司内部文件",
]
# invented English for the awkward lines, markup characters where the English words go
ENGLISH = {
    BOLD_LINE: f"This is a {OPEN}very important{CLOSE} question, please read it carefully.",
    SPLIT_LINE: f"The quality of machine {OPEN}translation{CLOSE} keeps improving.",
    LINK_LINE: f"For details, see {OPEN}our {OPEN1}official website{CLOSE1}{CLOSE}.",
    SPACED_LINE: f"Item one  item two {VOID} item three {VOID1} item four{VOID2}, date:",  # spaces as models put
    NOTE_LINE: f"This conclusion needs more checking{VOID}.",
    "下图显示了结果：": "The chart below shows the results:",
}
_HAN_RUN = re.compile(r"[\u3400-\u9fff，。：；！？（）、]+")
MARKUP = re.compile(f"[{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]")


def english(line: str) -> str:
    """The stand-in translator: the invented English, or every Chinese run replaced by a word."""
    return ENGLISH.get(line) or _HAN_RUN.sub(lambda run: f"word{len(run.group())}", line)


def translated(data: bytes, translate: Callable[[str], str] = english) -> bytes:
    document = read_odt_file(data, name="report.odt")
    return document.rebuild([translate(line) for line in document.lines])


def entries(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def with_content(data: bytes, change: Callable[[str], str]) -> bytes:
    """``data`` with its content.xml changed (every other entry as it was)."""
    document = read_odt_file(data)
    content = entries(data)["content.xml"].decode()
    return packages.write_package(data, document.entries, {"content.xml": change(content).encode()})


def paragraph_with(data: bytes, words: str) -> Element:
    found = [p for p in samples.paragraphs(data) if words in samples.own_text(p)]
    assert len(found) == 1, [samples.own_text(p) for p in samples.paragraphs(data)]
    return found[0]


def stretches(node: Element, chain: tuple[str, ...] = ()) -> list[tuple[str, tuple[str, ...]]]:
    """A paragraph's own text in document order, each piece with the spans' styles and links' targets it sits in."""
    found: list[tuple[str, tuple[str, ...]]] = []
    for child in node.childNodes:
        if child.nodeType == Node.TEXT_NODE:
            found.append((str(child.data), chain))
        elif child.nodeType == Node.ELEMENT_NODE and child.qname[1] == "span":
            found.extend(stretches(child, (*chain, f"span:{child.getAttribute('stylename')}")))
        elif child.nodeType == Node.ELEMENT_NODE and child.qname[1] == "a":
            found.extend(stretches(child, (*chain, f"a:{child.getAttribute('href')}")))
    return found


def children(node: Element) -> list[str]:
    """A paragraph's children: its elements' names and its texts, in order."""
    return [str(c.qname[1]) if c.nodeType == Node.ELEMENT_NODE else str(c.data) for c in node.childNodes]


# --- units -------------------------------------------------------------------------------------------------------


def test_every_paragraph_with_chinese_is_one_unit_with_its_formatting_as_markup() -> None:
    document = read_odt_file(samples.sample_file())
    assert document.lines == SAMPLE_LINES
    assert document.text == "\n".join(SAMPLE_LINES) and document.characters == sum(map(len, SAMPLE_LINES))
    assert [part.entry for part in document.parts] == ["content.xml", "styles.xml"]


def test_the_format_is_registered_and_reads_through_the_units_interface() -> None:
    assert format_for("s3://b/Report.ODT") is ODT and FORMATS_BY_NAME["odt"] is ODT and ODT.binary
    assert content_type_for("a.odt") == ODT_CONTENT_TYPE == "application/vnd.oasis.opendocument.text"
    source = ODT.read(samples.sample_file(), "report.odt")
    assert source.encoding == ODT_ENCODING and source.text.split("\n") == SAMPLE_LINES
    assert ODT.join("\n".join(map(english, SAMPLE_LINES)), samples.sample_file, "r.odt") == translated(
        samples.sample_file()
    )


# --- formatting, links, spaces and voids around the English --------------------------------------------------------


def test_the_bold_span_comes_back_bold_on_the_english_words() -> None:
    out = translated(samples.sample_file())
    pieces = stretches(paragraph_with(out, "very important"))
    assert pieces == [
        ("This is a ", ()),
        ("very important", ("span:Bold",)),
        (" question, please read it carefully.", ()),
    ]


def test_a_span_split_inside_a_word_keeps_its_style_on_the_english_word() -> None:
    out = translated(samples.sample_file())
    pieces = stretches(paragraph_with(out, "machine translation"))
    assert ("translation", ("span:Italic",)) in pieces and "".join(text for text, _ in pieces).endswith("improving.")


def test_a_link_keeps_its_target_and_its_nested_bold_span() -> None:
    out = translated(samples.sample_file())
    pieces = stretches(paragraph_with(out, "official website"))
    link = f"a:{samples.LINK}"
    assert pieces == [
        ("For details, see ", ()),
        ("our ", (link,)),
        ("official website", (link, "span:Bold")),
        (".", ()),
    ]


def test_formatting_follows_the_markup_when_the_english_moves_it() -> None:
    moved = {**ENGLISH, BOLD_LINE: f"{OPEN}Very important{CLOSE}: this question, read it carefully."}
    out = translated(samples.sample_file(), lambda line: moved.get(line) or english(line))
    pieces = stretches(paragraph_with(out, "Very important"))
    assert pieces[0] == ("Very important", ("span:Bold",)) and all(chain == () for _, chain in pieces[1:])


def test_spaces_tabs_breaks_bookmarks_and_fields_come_back_in_place_without_spaces_around_tabs_and_breaks() -> None:
    out = translated(samples.sample_file())
    paragraph = paragraph_with(out, "item three")
    assert samples.own_text(paragraph) == "Item one  item two\titem three\nitem four, date:"
    assert children(paragraph) == [
        "Item one ",
        "s",  # the second space of the run: ODF collapses a literal one
        "item two",
        "tab",
        "item three",
        "line-break",
        "item four",
        "bookmark",
        ", date:",
        "date",
    ]
    date = [c for c in paragraph.childNodes if c.nodeType == Node.ELEMENT_NODE and c.qname[1] == "date"][0]
    assert date.getAttribute("datevalue") == "2024-05-01" and str(date) == "2024-05-01"


def test_runs_of_spaces_and_leading_spaces_are_written_as_odf_reads_them() -> None:
    indented = '<text:p><text:s text:c="2"/>下图'
    source = with_content(samples.sample_file(), lambda xml: xml.replace("<text:p>下图", indented))
    document = read_odt_file(source)
    assert "下图显示了结果：" in document.lines  # the leading spaces are kept aside, never sent
    out = document.rebuild([english(line) if "下图" not in line else "The chart   shows:" for line in document.lines])
    paragraph = paragraph_with(out, "chart")
    assert samples.own_text(paragraph) == "  The chart   shows:"
    assert children(paragraph)[:4] == ["s", "The chart ", "s", "shows:"]


def test_white_space_in_text_nodes_is_read_as_odf_says_and_soft_page_breaks_go() -> None:
    source = with_content(
        samples.sample_file(),
        lambda xml: xml.replace(
            "<text:p>支出</text:p>", "<text:p>\n 支出\n <text:soft-page-break/>费用  合计</text:p>"
        ),
    )
    document = read_odt_file(source)
    assert "支出 费用 合计" in document.lines  # leading space ignored, runs of white space one space
    out = document.rebuild([english(line) for line in document.lines])
    assert samples.own_text(paragraph_with(out, "word2 word2 word2")) == "word2 word2 word2"
    assert b"soft-page-break" not in entries(out)["content.xml"]


def test_the_footnote_keeps_its_place_and_its_own_translated_body() -> None:
    out = translated(samples.sample_file())
    paragraph = paragraph_with(out, "more checking")
    assert children(paragraph) == ["This conclusion needs more checking", "note", "."]
    note = paragraph.childNodes[1]
    assert note.getAttribute("id") == "ftn1" and note.getAttribute("noteclass") == "footnote"
    assert samples.own_text(note.childNodes[1].childNodes[0]) == "word14"  # note-body > p, translated
    assert str(note.childNodes[0]) == "1"  # the citation


def test_the_frame_image_and_text_box_are_kept_and_the_box_translated() -> None:
    source = samples.sample_file()
    out = translated(source)
    assert entries(out)["Pictures/chart.png"] == entries(source)["Pictures/chart.png"] == samples.PICTURE
    paragraph = paragraph_with(out, "The chart below")
    frame = paragraph.childNodes[-1]
    assert frame.qname[1] == "frame" and frame.getAttribute("name") == "图片1"  # attributes are not translated
    assert frame.childNodes[0].getAttribute("href") == "Pictures/chart.png"
    assert "word10" in [samples.own_text(p) for p in samples.paragraphs(out)]  # the text box's paragraph


def test_the_annotation_keeps_its_author_and_its_own_translated_paragraph() -> None:
    out = translated(samples.sample_file(), lambda line: "Please review this." if "审阅" in line else english(line))
    paragraph = paragraph_with(out, "Please review this.")
    assert children(paragraph) == ["Please review this.", "annotation"]
    comment = paragraph.childNodes[1]
    assert [str(node) for node in comment.childNodes] == [samples.REVIEWER, "word7"]  # dc:creator, then its text:p


def test_voids_and_links_the_translation_dropped_are_appended_never_lost() -> None:
    lossy = {**ENGLISH, SPACED_LINE: "Item one item two item three item four, date:", LINK_LINE: "See our website."}
    out = translated(samples.sample_file(), lambda line: lossy.get(line) or english(line))
    spaced = paragraph_with(out, "item three")
    assert children(spaced) == ["Item one item two item three item four, date:", "tab", "line-break", "bookmark"] + [
        "date"
    ]
    linked = paragraph_with(out, "See our website.")
    links = [c for c in linked.childNodes if c.nodeType == Node.ELEMENT_NODE and c.qname[1] == "a"]
    assert len(links) == 1 and links[0].getAttribute("href") == samples.LINK  # empty, but there
    assert samples.inspect(out).structure == samples.inspect(samples.sample_file()).structure


def test_the_empty_cell_stays_empty_and_paragraphs_without_chinese_are_untouched() -> None:
    source = samples.sample_file()
    out = translated(source)
    texts = samples.inspect(out).texts
    assert texts[:2] == ["word6", "Page"]  # the header translated, the footer (text and page number) as it was
    assert [line for line in samples.UNTOUCHED if line in texts] == list(samples.UNTOUCHED) and "300" in texts
    content = entries(out)["content.xml"].decode()
    assert '<table:table-cell office:value-type="string"/>' in content
    for line in (*samples.UNTOUCHED, "300"):
        assert f"<text:p>{line}</text:p>" in content


def test_the_package_keeps_its_entries_order_mimetype_stored_first_and_untranslated_parts() -> None:
    source = samples.sample_file()
    out = translated(source)
    with zipfile.ZipFile(io.BytesIO(source)) as before, zipfile.ZipFile(io.BytesIO(out)) as after:
        assert [i.filename for i in after.infolist()] == [i.filename for i in before.infolist()]
        assert after.infolist()[0].filename == "mimetype" and after.infolist()[0].compress_type == zipfile.ZIP_STORED
    assert out[30:38] == b"mimetype" and out[38:77] == b"application/vnd.oasis.opendocument.text"
    same = {name for name, raw in entries(out).items() if raw == entries(source)[name]}
    assert same == {"mimetype", "meta.xml", "Pictures/chart.png", "META-INF/manifest.xml"}
    assert_translated(samples.inspect, source, out)


def test_a_document_without_chinese_comes_back_entry_for_entry() -> None:
    source = samples.file_of(["Hello.", "World.", "Cell.", "Item.", "End."])
    document = read_odt_file(source)
    assert document.lines == [] and entries(document.rebuild([])) == entries(source)


def test_paragraphs_in_tracked_deletions_are_kept_as_they_are() -> None:
    deletion = (
        '<text:tracked-changes><text:changed-region text:id="c1"><text:deletion><office:change-info>'
        "<dc:creator>审阅者</dc:creator></office:change-info><text:p>删掉的句子。</text:p></text:deletion>"
        "</text:changed-region></text:tracked-changes>"
    )

    source = with_content(samples.sample_file(), lambda xml: xml.replace("<office:text>", f"<office:text>{deletion}"))
    assert b'xmlns:dc="http://purl.org/dc/elements/1.1/"' in entries(source)["content.xml"]  # the annotation's
    document = read_odt_file(source)
    assert document.lines == SAMPLE_LINES
    out = document.rebuild([english(line) for line in document.lines])
    assert "<text:p>删掉的句子。</text:p>" in entries(out)["content.xml"].decode()


def test_a_link_whose_english_is_empty_or_lost_is_still_there() -> None:
    whole = with_content(samples.sample_file(), lambda xml: xml.replace("<text:p>项目</text:p>", _linked("项目")))
    emptied = {**ENGLISH, LINK_LINE: f"See {OPEN}{OPEN1}{CLOSE1}{CLOSE}it.", "项目": ""}
    out = translated(whole, lambda line: emptied[line] if line in emptied else english(line))
    assert samples.inspect(out).structure == samples.inspect(whole).structure
    hrefs = re.findall(r'xlink:href="([^"]+)"', entries(out)["content.xml"].decode())
    assert hrefs.count(samples.LINK) == 1 and hrefs.count("https://example.com/items") == 1


def _linked(words: str) -> str:
    return f'<text:p><text:a xlink:href="https://example.com/items" xlink:type="simple">{words}</text:a></text:p>'


def _random_inline(chance: random.Random, depth: int = 0, in_link: bool = False) -> str:
    """Mixed content as editors write it and worse: texts and white space, nested spans and links, empty spans,
    text:s (odd counts too), soft page breaks, notes and text boxes with their own paragraphs, tabs, breaks,
    bookmarks, fields."""
    found = []
    for _ in range(chance.randint(1, 4)):
        pick = chance.random()
        if pick < 0.35:
            found.append(chance.choice(["中文", "测试 ", "  空格", "abc", "的", " ", "\n  "]))
        elif pick < 0.5 and depth < 3:
            inner = _random_inline(chance, depth + 1, in_link)
            found.append(f'<text:span text:style-name="S{chance.randint(1, 3)}">{inner}</text:span>')
        elif pick < 0.6 and depth < 3 and not in_link:
            inner = _random_inline(chance, depth + 1, True)
            found.append(f'<text:a xlink:href="https://x/{chance.randint(1, 9)}">{inner}</text:a>')
        else:
            found.append(chance.choice(_VOIDS))
    return "".join(found)


_VOIDS = [
    '<text:span text:style-name="E"/>',
    '<text:s text:c="3"/>',
    '<text:s text:c="x"/>',
    "<text:soft-page-break/>",
    '<text:note text:id="n1" text:note-class="footnote"><text:note-citation>1</text:note-citation><text:note-body>'
    '<text:p>注释<text:span text:style-name="B">粗</text:span></text:p></text:note-body></text:note>',
    '<draw:frame draw:name="f"><draw:text-box><text:p>框<text:a xlink:href="https://y">链</text:a></text:p>'
    "</draw:text-box></draw:frame>",
    "<text:tab/>",
    "<text:line-break/>",
    '<text:bookmark text:name="b"/>',
    "<text:date>2024</text:date>",
]


def _careless(chance: random.Random, line: str) -> str:
    """A translation that empties stretches, drops, reorders or repeats markup characters."""
    text = _HAN_RUN.sub(lambda _: chance.choice(["word", "", "two words", " "]), line)
    marks = MARKUP.findall(text)
    pick = chance.random()
    if pick < 0.2:
        for mark in chance.sample(marks, len(marks) // 2):
            text = text.replace(mark, "", 1)
    elif pick < 0.35:
        chance.shuffle(marks)
        pieces = MARKUP.split(text)
        text = "".join(piece + (marks[i] if i < len(marks) else "") for i, piece in enumerate(pieces))
    elif pick < 0.4:
        text += text
    return text


@pytest.mark.parametrize("seed", range(0, 400, 40))
def test_whatever_the_translation_does_with_the_markup_the_structure_is_kept(seed: int) -> None:
    source = samples.sample_file()
    for case in range(seed, seed + 40):
        chance = random.Random(case)
        added = "".join(f"<text:p>{_random_inline(chance)}</text:p>" for _ in range(chance.randint(1, 4)))
        data = with_content(source, lambda xml, added=added: xml.replace("<office:text>", f"<office:text>{added}"))
        document = read_odt_file(data)
        out = document.rebuild([_careless(chance, line) for line in document.lines])  # checked: TranslatorError
        assert samples.inspect(out).structure == samples.inspect(data).structure, added
        assert read_odt_file(out).lines is not None


# --- errors ------------------------------------------------------------------------------------------------------


def test_a_wrong_number_of_translated_lines_is_an_error() -> None:
    with pytest.raises(TranslatorError, match="has 2 paragraphs, not 18"):
        read_odt_file(samples.sample_file(), name="report.odt").rebuild(["a", "b"])


def test_a_rebuild_that_lost_an_element_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    write = engine._write_paragraph

    def losing(paragraph: object, pieces: list[engine._Piece]) -> None:
        write(paragraph, [piece for piece in pieces if isinstance(piece[1], str)])  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "_write_paragraph", losing)
    with pytest.raises(TranslatorError, match="changed the structure of content.xml"):
        translated(samples.sample_file())


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def _with_entity(content: bytes, declarations: str, name: str) -> bytes:
    """content.xml with a DOCTYPE declaring entities after its XML declaration, and entity ``name`` in a paragraph."""
    declaration, rest = content.split(b"?>", 1)
    doctype = f"<!DOCTYPE office:document-content [{declarations}]>".encode()
    return declaration + b"?>" + doctype + rest.replace("年度报告".encode(), f"&{name};".encode())


def _refused_cases() -> dict[str, tuple[bytes, str]]:
    data = samples.sample_file()
    files = entries(data)
    content = files["content.xml"]
    entry = b'manifest:full-path="content.xml" manifest:media-type="text/xml"'
    encrypted = entry + b'><manifest:encryption-data manifest:checksum-type="SHA1" manifest:checksum="AA=="/>'
    manifest = files["META-INF/manifest.xml"].replace(entry + b"/>", encrypted + b"</manifest:file-entry>")
    assert manifest != files["META-INF/manifest.xml"]
    return {
        "text": ("你好，世界".encode(), "is not a zip archive"),
        "empty": (b"", "is not a zip archive"),
        "truncated": (data[: len(data) // 2], "zip archive"),
        "other zip": (_zip({"hello.txt": b"hi"}), "without a mimetype entry"),
        "spreadsheet": (
            _zip({**files, "mimetype": b"application/vnd.oasis.opendocument.spreadsheet"}),
            "of type 'application/vnd.oasis.opendocument.spreadsheet', not application/vnd.oasis.opendocument.text",
        ),
        "no content": (_zip({k: v for k, v in files.items() if k != "content.xml"}), "has no content.xml"),
        "broken xml": (_zip({**files, "content.xml": content[:-40]}), "damaged part: content.xml is not well-formed"),
        "no text body": (
            _zip({**files, "content.xml": content.replace(b"office:text>", b"office:spreadsheet>")}),
            "without a text body",
        ),
        "encrypted": (_zip({**files, "META-INF/manifest.xml": manifest}), "is encrypted"),
        "entity expansion": (
            _zip({**files, "content.xml": _with_entity(content, '<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;">', "b")}),
            "content.xml declares XML entities",
        ),
        "external entity": (
            _zip({**files, "content.xml": _with_entity(content, '<!ENTITY x SYSTEM "file:///etc/passwd">', "x")}),
            "content.xml declares XML entities",
        ),
    }


@pytest.mark.parametrize("case", list(_refused_cases()))
def test_what_is_not_an_odt_text_document_is_refused_with_a_clear_error(case: str) -> None:
    data, reason = _refused_cases()[case]
    with pytest.raises(
        InvalidRequestError, match=r"not a text document in OpenDocument format \(.odt\): report.odt"
    ) as caught:
        ODT.read(data, "report.odt")
    assert reason in str(caught.value) and "send an .odt saved by LibreOffice" in str(caught.value)


def test_a_zip_bomb_is_refused_before_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packages, "MAX_UNPACKED_BYTES", 2_000)
    with pytest.raises(InvalidRequestError, match="unpacks to .* bytes; at most 2,000 are read"):
        ODT.read(samples.sample_file(), "report.odt")


def test_markup_characters_in_the_source_never_reach_the_model_as_markup() -> None:
    odd = chr(MARKUP_OPEN + 5)
    source = with_content(samples.sample_file(), lambda xml: xml.replace("年度报告", f"年度{odd}报告"))
    document = read_odt_file(source)
    assert document.lines[0] == f"年度{VOID}报告"
    out = document.rebuild([f"Annual{VOID}report", *map(english, document.lines[1:])])
    assert samples.own_text(samples.paragraphs(out)[2]) == f"Annual{odd}report"


# --- the shipped model -------------------------------------------------------------------------------------------


@needs_shipped_bundle
def test_shipped_model_translates_every_paragraph_and_keeps_the_structure() -> None:
    source = samples.sample_file()
    result = translate_file(source, "report.odt", shipped_service())
    assert result.source.encoding == ODT_ENCODING and result.content_type == ODT_CONTENT_TYPE
    out = result.data
    assert_translated(samples.inspect, source, out)  # structure kept, no Chinese left
    pieces = [stretches(p) for p in samples.paragraphs(out)]
    styled = [text for piece in pieces for text, chain in piece if chain == ("span:Bold",)]
    assert styled and all(text.strip() and not HAN.search(text) for text in styled)
    linked = [text for piece in pieces for text, chain in piece if chain and chain[0] == f"a:{samples.LINK}"]
    assert "".join(linked).strip()  # the link holds English words
    assert entries(out)["Pictures/chart.png"] == samples.PICTURE
