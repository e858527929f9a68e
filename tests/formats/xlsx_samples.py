"""Excel workbooks for the tests, made with openpyxl (the library a user opens the result with), and what a
translation of one must keep, read with openpyxl (never the module under test).

openpyxl writes every string inline (``c t="inlineStr"``); Excel and LibreOffice write text cells into the shared
strings table (``xl/sharedStrings.xml``, ``c t="s"``) and a formula's text result as a cached value (``t="str"``).
``as_excel_saves`` turns openpyxl's output into that form (one inline string may stay inline, as other producers
write them), so the samples hold both.

``sample_file()`` has two sheets with Chinese names, text cells, a rich-text cell with a bold word inside a sentence,
a string shared by two cells, a string with a line break, a number, a date, formulas (``=SUM(...)``, one naming the
other sheet, one returning text with its cached value), a merged range, an empty styled cell, a data validation, a
comment, an inline string, and cells without Chinese.
"""

from __future__ import annotations

import datetime
import io
import re
import zipfile
from collections.abc import Sequence

import openpyxl
from lxml import etree
from openpyxl.cell.rich_text import CellRichText, TextBlock
from openpyxl.cell.text import InlineFont
from openpyxl.comments import Comment
from openpyxl.styles import Alignment, Font
from openpyxl.worksheet.datavalidation import DataValidation

from tests.formats.inspection import Inspection

FORMAT = "xlsx"
SUFFIX = ".xlsx"

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_CT = "http://schemas.openxmlformats.org/package/2006/content-types"
_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
SHARED_STRINGS_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings"
FIRST_SHEET, SECOND_SHEET = "销售数据", "汇总"
BOLD_SENTENCE = ("这是一个", "非常重要", "的问题。")  # the middle one is bold (cell A2 of the first sheet)
SHARED = "产品名称"  # A1 and A6 of the first sheet: one shared string
COMMENT = "请核对这个数字。"
COMMENT_AUTHOR = "审阅者"
TEXT_FORMULA = '=IF(B2>10,"多","少")'
TEXT_FORMULA_CACHED = "多"  # its cached result (t="str"): Excel's to recompute, never translated
INLINE = "内联字符串：请翻译这一句。"  # second sheet, A2: kept inline
NO_CHINESE = "Total 2024"


def _q(name: str) -> str:
    return f"{{{MAIN}}}{name}"


def _sample_workbook() -> openpyxl.Workbook:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = FIRST_SHEET
    sheet["A1"], sheet["B1"], sheet["C1"] = SHARED, "数量", "日期"
    before, bold, after = BOLD_SENTENCE
    sheet["A2"] = CellRichText(before, TextBlock(InlineFont(b=True), bold), after)
    sheet["A2"].comment = Comment(COMMENT, COMMENT_AUTHOR)
    sheet["B2"] = 42
    sheet["C2"] = datetime.date(2024, 3, 15)
    sheet["C2"].number_format = "yyyy-mm-dd"
    sheet["D2"].font = Font(bold=True)  # an empty cell with a style
    sheet["A3"], sheet["B3"] = "合计", "=SUM(B2:B2)"
    sheet["A4"] = TEXT_FORMULA
    sheet["A5"] = "合并的标题"
    sheet.merge_cells("A5:C5")
    sheet["A6"] = SHARED
    sheet["A7"], sheet["B7"] = NO_CHINESE, 3.5
    sheet["A8"] = "第一行说明\n第二行说明"
    sheet["A8"].alignment = Alignment(wrap_text=True)
    second = workbook.create_sheet(SECOND_SHEET)
    second["A1"], second["B1"] = "第二个工作表的说明", f"={FIRST_SHEET}!B2*2"
    second["A2"] = INLINE
    second["A3"] = "Notes"
    validation = DataValidation(type="list", formula1='"是,否"', allow_blank=True)
    second.add_data_validation(validation)
    validation.add("C1")
    return workbook


def _saved(workbook: openpyxl.Workbook) -> bytes:
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def sample_file() -> bytes:
    """The sample workbook (see the module's docstring), as Excel saves it."""
    cached = {(FIRST_SHEET, "A4"): TEXT_FORMULA_CACHED}
    return as_excel_saves(_saved(_sample_workbook()), keep_inline=frozenset({(SECOND_SHEET, "A2")}), cached=cached)


_HAN_WORDS = re.compile(r"[\u4e00-\u9fff]{2,4}")


def file_of(sentences: Sequence[str]) -> bytes:
    """A workbook holding ``sentences``: one a row in column A of two sheets (numbers in column B), every fourth one
    as rich text with its first Chinese words bold (never a piece of an address, a number or code, which a user's
    bold would not split either)."""
    workbook = openpyxl.Workbook()
    sheets = [workbook.active, workbook.create_sheet("第二页")]
    for index, sentence in enumerate(sentences):
        sheet = sheets[index % 2]
        assert sheet is not None
        row = index // 2 + 1
        words = _HAN_WORDS.search(sentence)
        if index % 4 == 3 and words:
            bold = TextBlock(InlineFont(b=True), words.group())
            pieces = [sentence[: words.start()], bold, sentence[words.end() :]]
            sheet.cell(row, 1).value = CellRichText(*[piece for piece in pieces if piece])
        else:
            sheet.cell(row, 1).value = sentence
        sheet.cell(row, 2).value = index
    return as_excel_saves(_saved(workbook))


def _sheet_entries(parts: dict[str, bytes]) -> dict[str, str]:
    """Sheet title -> its worksheet entry, by the workbook and its relationships."""
    workbook = etree.fromstring(parts["xl/workbook.xml"])
    rels = etree.fromstring(parts["xl/_rels/workbook.xml.rels"])
    targets = {rel.get("Id"): rel.get("Target", "") for rel in rels}
    r_id = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
    found = {}
    for sheet in workbook.iter(_q("sheet")):
        target = targets[sheet.get(r_id)].lstrip("/")
        found[sheet.get("name", "")] = target if target.startswith("xl/") else "xl/" + target
    return found


def as_excel_saves(
    data: bytes, keep_inline: frozenset[tuple[str, str]] = frozenset(), cached: dict[tuple[str, str], str] | None = None
) -> bytes:
    """openpyxl's workbook ``data`` with its inline strings moved into a shared strings table (one entry per
    distinct string, as Excel writes it), except the cells ``keep_inline`` names (sheet title, cell), and the
    formula cells ``cached`` names given a cached text result (``t="str"``)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        parts = {info.filename: archive.read(info) for info in archive.infolist()}
    table: dict[bytes, int] = {}
    strings = etree.Element(_q("sst"), nsmap={None: MAIN})
    for title, entry in _sheet_entries(parts).items():
        root = etree.fromstring(parts[entry])
        for cell in root.iter(_q("c")):
            reference = (title, cell.get("r", ""))
            if reference in (cached or {}):
                cell.set("t", "str")
                value = cell.find(_q("v"))
                if value is None:
                    value = etree.SubElement(cell, _q("v"))
                value.text = (cached or {})[reference]
            inline = cell.find(_q("is"))
            if cell.get("t") != "inlineStr" or inline is None or reference in keep_inline:
                continue
            key = etree.tostring(inline)
            if key not in table:
                table[key] = len(table)
                item = etree.SubElement(strings, _q("si"))
                item.extend(list(inline))
            cell.remove(inline)
            cell.set("t", "s")
            etree.SubElement(cell, _q("v")).text = str(table[key])
        parts[entry] = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)
    strings.set("uniqueCount", str(len(table)))
    parts["xl/sharedStrings.xml"] = etree.tostring(strings, xml_declaration=True, encoding="UTF-8", standalone=True)
    types = etree.fromstring(parts["[Content_Types].xml"])
    etree.SubElement(
        types,
        f"{{{_CT}}}Override",
        PartName="/xl/sharedStrings.xml",
        ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml",
    )
    parts["[Content_Types].xml"] = etree.tostring(types, xml_declaration=True, encoding="UTF-8", standalone=True)
    rels = etree.fromstring(parts["xl/_rels/workbook.xml.rels"])
    etree.SubElement(
        rels, f"{{{_REL}}}Relationship", Id="rIdStrings", Type=SHARED_STRINGS_REL, Target="sharedStrings.xml"
    )
    parts["xl/_rels/workbook.xml.rels"] = etree.tostring(rels, xml_declaration=True, encoding="UTF-8")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry, content in parts.items():
            archive.writestr(entry, content)
    return out.getvalue()


def cell_texts(data: bytes) -> dict[tuple[str, str], object]:
    """Every cell's value as openpyxl reads it (rich text kept as ``CellRichText``), by (sheet title, cell)."""
    workbook = openpyxl.load_workbook(io.BytesIO(data), rich_text=True)
    return {
        (sheet.title, cell.coordinate): cell.value
        for sheet in workbook.worksheets
        for row in sheet.iter_rows()
        for cell in row
        if cell.value is not None
    }


def inspect(data: bytes) -> Inspection:
    """What a translation must keep (sheets and their order, dimensions, merged ranges, formulas, numbers and dates,
    validations, comments) and every text a user sees that is translated (text cells, comments), in order."""
    workbook = openpyxl.load_workbook(io.BytesIO(data), rich_text=True)
    cached = openpyxl.load_workbook(io.BytesIO(data), data_only=True)
    structure: dict[str, int] = {"sheets": len(workbook.worksheets)}
    texts: list[str] = []
    comments = 0
    for position, sheet in enumerate(workbook.worksheets):
        title = sheet.title
        structure[f"sheet {position}: {title} {sheet.dimensions}"] = 1
        for merged in sheet.merged_cells.ranges:
            structure[f"merged {title}!{merged.coord}"] = 1
        structure[f"validations {title}"] = len(sheet.data_validations.dataValidation)
        for row in sheet.iter_rows():
            for cell in row:
                value = cell.value
                where = f"{title}!{cell.coordinate}"
                if isinstance(value, str | CellRichText) and not (isinstance(value, str) and cell.data_type == "f"):
                    texts.append(str(value))
                elif value is not None:  # a number, a date, a formula: kept exactly
                    structure[f"{type(value).__name__} {where} {value!r}"] = 1
                cached_value = cached[title][cell.coordinate].value
                if cell.data_type == "f" and cached_value is not None:
                    structure[f"cached {where} {cached_value!r}"] = 1
                if cell.comment is not None:
                    comments += 1
                    texts.append(cell.comment.text)
                    structure[f"comment {where} by {cell.comment.author}"] = 1
    structure["comments"] = comments
    return Inspection(structure, texts)
