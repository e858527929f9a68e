"""Excel workbooks (``handler.formats.spreadsheet`` over ``handler.formats.workbook``): which strings become units,
rich text's formatting mapped back, everything else kept (read back with openpyxl, the user's library), refusals;
and the sample through the shipped default model."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import openpyxl
import pytest
from lxml import etree
from openpyxl.cell.rich_text import CellRichText, TextBlock
from openpyxl.worksheet.table import Table

from handler.errors import InvalidRequestError, TranslatorError
from handler.formats import FORMATS_BY_NAME, content_type_for, format_for, packages, translate_file
from handler.formats.spreadsheet import XLSX, XLSX_CONTENT_TYPE, XLSX_ENCODING
from handler.formats.workbook import PlainString, read_workbook
from handler.text.spans import MARKUP_CLOSE, MARKUP_OPEN, MARKUP_STANDALONE, has_chinese
from tests.formats import xlsx_samples
from tests.formats.inspection import assert_translated
from tests.formats.xlsx_samples import (
    BOLD_SENTENCE,
    COMMENT,
    COMMENT_AUTHOR,
    FIRST_SHEET,
    INLINE,
    MAIN,
    NO_CHINESE,
    SECOND_SHEET,
    SHARED,
    TEXT_FORMULA,
    TEXT_FORMULA_CACHED,
    cell_texts,
    inspect,
    sample_file,
)
from tests.fuzz.shipped import needs_shipped_bundle, shipped_service

OPEN, CLOSE, VOID = chr(MARKUP_OPEN), chr(MARKUP_CLOSE), chr(MARKUP_STANDALONE)
_HAN_RUN = re.compile(r"[\u3400-\u9fff，。：；！？（）、]+")
UNITS = [
    SHARED,
    "数量",
    "日期",
    f"{BOLD_SENTENCE[0]}{OPEN}{BOLD_SENTENCE[1]}{CLOSE}{BOLD_SENTENCE[2]}",
    "合计",
    "合并的标题",
    f"第一行说明{VOID}第二行说明",
    "第二个工作表的说明",
    INLINE,
    COMMENT,
]


def fake_english(line: str) -> str:
    """A stand-in translator: each run of Chinese becomes "en" words (as many as half its characters), markup
    characters stay where they were."""
    return _HAN_RUN.sub(lambda match: " ".join(["en"] * max(1, len(match.group()) // 2)), line)


def translated(data: bytes, translate: object = fake_english) -> bytes:
    units = XLSX.parse(data, "report.xlsx")
    lines = units.text.split("\n") if units.text else []
    return units.rebuild([translate(line) for line in lines])  # type: ignore[operator]


def zip_parts(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def with_parts(data: bytes, changed: dict[str, bytes]) -> bytes:
    """``data`` with some entries replaced (in place) or added (at the end)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in dict(zip_parts(data), **changed).items():
            archive.writestr(name, value)
    return out.getvalue()


# --- units --------------------------------------------------------------------------------------------------------
def test_units_are_the_text_cells_strings_once_each_then_inline_strings_then_comments() -> None:
    units = XLSX.parse(sample_file(), "report.xlsx")
    # the string A1 and A6 share is one unit; "Total 2024" and "Notes" have no Chinese; the formulas, their
    # cached text result ("多") and the sheet names are not units
    assert units.text.split("\n") == UNITS
    assert units.characters == sum(len(line) for line in UNITS)


def test_a_shared_string_no_text_cell_uses_is_not_translated() -> None:
    data = sample_file()
    strings = zip_parts(data)["xl/sharedStrings.xml"]
    orphan = strings.replace(b"</sst>", "<si><t>没有单元格用它</t></si></sst>".encode())
    units = XLSX.parse(with_parts(data, {"xl/sharedStrings.xml": orphan}), "report.xlsx")
    assert "没有单元格用它" not in units.text and units.text.split("\n") == UNITS


# --- the translation, read back with openpyxl ---------------------------------------------------------------------
def test_text_cells_comments_and_inline_strings_are_translated_the_rest_kept() -> None:
    data = sample_file()
    out = translated(data)
    assert_translated(inspect, data, out)  # sheets, order, dimensions, merges, formulas, numbers, dates, comments
    cells = cell_texts(out)
    assert cells[(FIRST_SHEET, "A1")] == cells[(FIRST_SHEET, "A6")] == "en en"  # one shared string, both cells
    assert cells[(FIRST_SHEET, "A7")] == NO_CHINESE and cells[(SECOND_SHEET, "A3")] == "Notes"
    assert cells[(FIRST_SHEET, "A4")] == TEXT_FORMULA and cells[(SECOND_SHEET, "B1")] == f"={FIRST_SHEET}!B2*2"
    assert cells[(FIRST_SHEET, "A8")] == "en en\nen en"  # the line break kept in place
    assert cells[(SECOND_SHEET, "A2")] == fake_english(INLINE)
    values = openpyxl.load_workbook(io.BytesIO(out), data_only=True)
    assert values[FIRST_SHEET]["A4"].value == TEXT_FORMULA_CACHED  # the cached result is Excel's to recompute
    assert values.sheetnames == [FIRST_SHEET, SECOND_SHEET]  # sheet names kept (formulas name them)
    comment = openpyxl.load_workbook(io.BytesIO(out))[FIRST_SHEET]["A2"].comment
    assert comment is not None and comment.text == fake_english(COMMENT) and comment.author == COMMENT_AUTHOR
    sheet2 = zip_parts(out)["xl/worksheets/sheet2.xml"]
    assert b't="inlineStr"' in sheet2 and b"<dataValidation " in sheet2  # still inline, still validated


def test_the_bold_word_comes_back_bold_and_the_rest_plain() -> None:
    rich = cell_texts(translated(sample_file()))[(FIRST_SHEET, "A2")]
    assert isinstance(rich, CellRichText)
    bold = [block.text for block in rich if isinstance(block, TextBlock) and block.font.b]
    plain = [block if isinstance(block, str) else block.text for block in rich if not getattr(block, "font", None)]
    assert bold == ["en en"] and plain == ["en en", "en en"]


def test_formatting_follows_the_markup_when_the_translation_moves_it() -> None:
    moved = {UNITS[3]: f"{OPEN}Very important{CLOSE}: this is a question."}
    out = translated(sample_file(), lambda line: moved.get(line, fake_english(line)))
    rich = cell_texts(out)[(FIRST_SHEET, "A2")]
    assert isinstance(rich, CellRichText) and isinstance(rich[0], TextBlock) and rich[0].font.b
    assert rich[0].text == "Very important" and str(rich) == "Very important: this is a question."


def test_a_line_break_the_translation_lost_is_put_at_the_end_never_dropped() -> None:
    out = translated(sample_file(), lambda line: line.replace(VOID, " ") if "第一行" in line else fake_english(line))
    assert cell_texts(out)[(FIRST_SHEET, "A8")] == "第一行说明 第二行说明\n"


def test_formatting_marks_a_plain_string_never_had_are_dropped() -> None:
    out = translated(sample_file(), lambda line: f"{OPEN}Date{CLOSE}" if line == "日期" else fake_english(line))
    assert cell_texts(out)[(FIRST_SHEET, "C1")] == "Date"


def test_parts_without_a_translated_string_are_byte_for_byte_in_the_same_order() -> None:
    data = sample_file()
    before, after = zip_parts(data), zip_parts(translated(data))
    assert list(after) == list(before)
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {"xl/sharedStrings.xml", "xl/worksheets/sheet2.xml", "xl/comments/comment1.xml"}


def test_a_workbook_without_chinese_comes_back_entry_for_entry() -> None:
    workbook = openpyxl.Workbook()
    workbook.active["A1"] = "Hello"  # type: ignore[index]
    buffer = io.BytesIO()
    workbook.save(buffer)
    data = xlsx_samples.as_excel_saves(buffer.getvalue())
    units = XLSX.parse(data, "hello.xlsx")
    assert units.text == "" and zip_parts(units.rebuild([])) == zip_parts(data)


def test_phonetic_guides_are_kept_as_they_are() -> None:
    data = sample_file()
    guide = '<rPh sb="0" eb="2"><t>ごうけい</t></rPh><phoneticPr fontId="1" type="noConversion"/>'
    strings = zip_parts(data)["xl/sharedStrings.xml"].decode()
    strings = strings.replace("<si><t>合计</t></si>", f"<si><t>合计</t>{guide}</si>")
    strings = strings.replace("<t>非常重要</t></r>", "<t>非常重要</t></r>" + guide.replace("ごうけい", "ひじょう"))
    out = translated(with_parts(data, {"xl/sharedStrings.xml": strings.encode()}))
    root = etree.fromstring(zip_parts(out)["xl/sharedStrings.xml"])
    items = root.findall(f"{{{MAIN}}}si")
    total = next(item for item in items if item.findtext(f"{{{MAIN}}}rPh/{{{MAIN}}}t") == "ごうけい")
    assert [etree.QName(child).localname for child in total] == ["t", "rPh", "phoneticPr"]
    assert total.findtext(f"{{{MAIN}}}t") == "en"
    rich = next(item for item in items if item.findtext(f"{{{MAIN}}}rPh/{{{MAIN}}}t") == "ひじょう")
    assert [etree.QName(child).localname for child in rich][-2:] == ["rPh", "phoneticPr"]


THREADED = (
    '<ThreadedComments xmlns="http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments">'
    '<ThreadedComment ref="A2" dT="2024-03-15T10:00:00.00" personId="{P1}" id="{C1}"><text>请再确认一下。</text>'
    "</ThreadedComment>"
    '<ThreadedComment ref="A2" dT="2024-03-15T11:00:00.00" personId="{P1}" id="{C2}" parentId="{C1}">'
    '<text>@张三 请看</text><mentions><mention mentionpersonId="{P2}" mentionId="{M1}" startIndex="0" length="3"/>'
    "</mentions></ThreadedComment></ThreadedComments>"
)


def test_threaded_comments_are_translated_except_one_with_mentions() -> None:
    data = sample_file()
    types = zip_parts(data)["[Content_Types].xml"].replace(
        b"</Types>",
        b'<Override PartName="/xl/threadedComments/threadedComment1.xml" '
        b'ContentType="application/vnd.ms-excel.threadedcomments+xml"/></Types>',
    )
    entry = "xl/threadedComments/threadedComment1.xml"
    units = XLSX.parse(with_parts(data, {"[Content_Types].xml": types, entry: THREADED.encode()}), "report.xlsx")
    assert units.text.split("\n") == [*UNITS, "请再确认一下。"]
    out = zip_parts(units.rebuild([fake_english(line) for line in units.text.split("\n")]))
    ns = "{http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments}"
    texts = [text.text for text in etree.fromstring(out[entry]).iter(f"{ns}text")]
    assert texts == ["en en en", "@张三 请看"]  # a mention is an offset into the text: that comment is kept


def test_a_file_of_sentences_has_one_unit_each() -> None:
    sentences = ["今天天气很好。", "我们明天去北京开会。", "请把报告发给我。", "这个项目的预算是多少？", "谢谢。"]
    units = XLSX.parse(xlsx_samples.file_of(sentences), "many.xlsx")
    assert sorted(line.replace(OPEN, "").replace(CLOSE, "") for line in units.text.split("\n")) == sorted(sentences)


# --- the checks before writing ------------------------------------------------------------------------------------
def test_a_wrong_number_of_translated_lines_is_an_error() -> None:
    units = XLSX.parse(sample_file(), "report.xlsx")
    with pytest.raises(TranslatorError, match="has 1 paragraphs, not 10"):
        units.rebuild(["one"])


def test_a_rebuild_that_lost_a_string_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    original = PlainString.rebuild

    def lose_the_string(self: PlainString, english: str) -> None:
        original(self, english)
        item = self.element.getparent()
        if item is not None and etree.QName(item).localname == "si" and item.getparent() is not None:
            item.getparent().remove(item)  # type: ignore[union-attr]

    monkeypatch.setattr(PlainString, "rebuild", lose_the_string)
    with pytest.raises(TranslatorError, match="changed the structure of xl/sharedStrings.xml"):
        translated(sample_file())


# --- refusals -----------------------------------------------------------------------------------------------------
def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return buffer.getvalue()


_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE sst [<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    b'<sst xmlns="' + MAIN.encode() + b'"><si><t>&b;</t></si></sst>'
)
_EXTERNAL = (
    b'<?xml version="1.0"?><!DOCTYPE sst [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    b'<sst xmlns="' + MAIN.encode() + b'"><si><t>&x;</t></si></sst>'
)


def _refusal_cases() -> dict[str, tuple[bytes, str]]:
    data = sample_file()
    parts = zip_parts(data)
    strings = "xl/sharedStrings.xml"
    word_types = parts["[Content_Types].xml"].replace(b"spreadsheetml.sheet.main", b"wordprocessingml.document.main")
    bad_index = parts["xl/worksheets/sheet1.xml"].replace(b'<c r="A3" t="s"><v>4</v>', b'<c r="A3" t="s"><v>99</v>')
    return {
        "text": ("你好，世界".encode(), "is not a zip archive"),
        "empty": (b"", "is not a zip archive"),
        "truncated": (data[: len(data) // 2], "zip archive"),
        "other zip": (_zip({"hello.txt": b"hi"}), r"has no \[Content_Types\].xml"),
        "a word file": (with_parts(data, {"[Content_Types].xml": word_types}), "another kind of Office file"),
        "broken xml": (with_parts(data, {strings: parts[strings][:-30]}), "damaged part: xl/sharedStrings.xml"),
        "entity expansion": (with_parts(data, {strings: _LAUGHS}), "declares XML entities"),
        "external entity": (with_parts(data, {strings: _EXTERNAL}), "declares XML entities"),
        "missing string": (with_parts(data, {"xl/worksheets/sheet1.xml": bad_index}), "naming string 99 of 10"),
    }


@pytest.mark.parametrize("case", list(_refusal_cases()))
def test_a_corrupt_foreign_or_hostile_file_is_refused_with_a_clear_error(case: str) -> None:
    data, pattern = _refusal_cases()[case]
    with pytest.raises(InvalidRequestError, match=r"not a workbook \(\.xlsx\)") as caught:
        XLSX.read(data, "report.xlsx")
    assert re.search(pattern, str(caught.value)) and "report.xlsx" in str(caught.value), caught.value


def test_a_zip_bomb_and_too_many_entries_are_refused_before_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packages, "MAX_UNPACKED_BYTES", 10_000)
    with pytest.raises(InvalidRequestError, match=r"unpacks to .* from a workbook \(\.xlsx\)"):
        read_workbook(sample_file())
    monkeypatch.setattr(packages, "MAX_UNPACKED_BYTES", 512 * 1024 * 1024)
    monkeypatch.setattr(packages, "MAX_ENTRIES", 5)
    with pytest.raises(InvalidRequestError, match="zip entries; at most 5"):
        read_workbook(sample_file())


def test_the_format_is_registered_by_suffix_and_name() -> None:
    assert format_for("s3://b/Report.XLSX") is XLSX and FORMATS_BY_NAME["xlsx"] is XLSX
    assert content_type_for("a.xlsx") == XLSX_CONTENT_TYPE and XLSX.binary
    source = XLSX.read(sample_file(), "a.xlsx")
    assert source.encoding == XLSX_ENCODING and source.characters == sum(len(line) for line in UNITS)


_READ_IN_A_FRESH_PROCESS = (
    "import sys\n"
    "from handler.formats import format_for\n"
    "units = format_for('a.xlsx').read(sys.stdin.buffer.read(), 'a.xlsx')\n"
    "assert units.characters > 0\n"
    "print(sorted(name for name in sys.modules if name.split('.')[0] in ('openpyxl', 'docx', 'pptx')))\n"
)


def test_the_runtime_reads_a_workbook_without_openpyxl() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _READ_IN_A_FRESH_PROCESS],
        cwd=Path(__file__).resolve().parents[2],
        input=sample_file(),
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().strip() == "[]"  # openpyxl loses what it does not model: never loaded


# --- the shipped model ------------------------------------------------------------------------------------------
@needs_shipped_bundle
def test_shipped_model_translates_every_string_and_keeps_the_workbook() -> None:
    data = sample_file()
    out = translate_file(data, "report.xlsx", shipped_service())
    assert out.content_type == XLSX_CONTENT_TYPE and out.source.encoding == XLSX_ENCODING
    assert_translated(inspect, data, out.data)
    rich = cell_texts(out.data)[(FIRST_SHEET, "A2")]
    assert isinstance(rich, CellRichText)
    bold = [block.text for block in rich if isinstance(block, TextBlock) and block.font.b]
    assert bold and all(text.strip() and not has_chinese(text) for text in bold)  # the bold word's English is bold
    cells = cell_texts(out.data)
    assert cells[(FIRST_SHEET, "A1")] == cells[(FIRST_SHEET, "A6")] and cells[(FIRST_SHEET, "A7")] == NO_CHINESE


def test_a_comment_as_excel_writes_it_keeps_its_bold_author_line_and_line_break() -> None:
    data = sample_file()
    comments = zip_parts(data)["xl/comments/comment1.xml"].decode()
    excel_text = (
        '<text><r><rPr><b/><sz val="9"/><rFont val="Tahoma"/></rPr><t>John Smith:</t></r>'
        f'<r><rPr><sz val="9"/><rFont val="Tahoma"/></rPr><t xml:space="preserve">\n{COMMENT}</t></r></text>'
    )
    comments = re.sub(r"<text>.*</text>", excel_text, comments)
    units = XLSX.parse(with_parts(data, {"xl/comments/comment1.xml": comments.encode()}), "report.xlsx")
    line = units.text.split("\n")[-1]
    assert line == f"John Smith:{VOID}{OPEN}{COMMENT}{CLOSE}"  # the longer stretch is the base: the author's line
    out = units.rebuild([fake_english(line) for line in units.text.split("\n")])
    text = etree.fromstring(zip_parts(out)["xl/comments/comment1.xml"]).find(f".//{{{MAIN}}}text")
    assert text is not None
    runs = [(run.findtext(f"{{{MAIN}}}t"), run.find(f"{{{MAIN}}}rPr/{{{MAIN}}}b") is not None) for run in text]
    assert runs == [("John Smith:", True), ("\n", False), (fake_english(COMMENT), False)]


def test_a_tables_header_cells_are_kept_since_formulas_name_its_columns() -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    for row in (["产品", "数量"], ["苹果", 3], ["产品", 5], ["香蕉", "=Sales[[#This Row],[数量]]*2"]):
        sheet.append(row)
    sheet.add_table(Table(displayName="Sales", ref="A1:B4"))
    buffer = io.BytesIO()
    workbook.save(buffer)
    data = xlsx_samples.as_excel_saves(buffer.getvalue())
    units = XLSX.parse(data, "table.xlsx")
    # the header string is kept wherever it is used (one shared string); the rest of the table is translated
    assert units.text.split("\n") == ["苹果", "香蕉"]
    out = openpyxl.load_workbook(io.BytesIO(units.rebuild(["Apple", "Banana"])))
    table = out.active.tables["Sales"]  # type: ignore[union-attr]
    headers = [out.active.cell(1, column).value for column in (1, 2)]  # type: ignore[union-attr]
    assert headers == [column.name for column in table.tableColumns] == ["产品", "数量"]
    assert [out.active.cell(row, 1).value for row in (2, 3, 4)] == ["Apple", "产品", "Banana"]  # type: ignore[union-attr]
