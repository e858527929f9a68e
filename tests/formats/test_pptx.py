"""PowerPoint presentations (``handler.formats.powerpoint``, ``handler.formats.presentation``): which parts and
paragraphs become units and in which order, how formatting, links, line breaks and fields come back on the English
words (a stand-in translator writes invented English with the markup characters), what is kept byte for byte, the
structure check, refusals; and the sample through the shipped default model. Every result is read back with
python-pptx, the library a user opens it with."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from lxml import etree
from pptx import Presentation
from pptx.text.text import _Paragraph

from handler.errors import InvalidRequestError, TranslatorError
from handler.formats import FORMATS_BY_NAME, content_type_for, format_for, packages, translate_file
from handler.formats import runs as run_engine
from handler.formats.powerpoint import POWERPOINT, PPTX_CONTENT_TYPE
from handler.formats.presentation import A, read_presentation, structure
from handler.text.spans import MARKUP_CLOSE, MARKUP_OPEN, MARKUP_STANDALONE
from tests.formats import pptx_samples as samples
from tests.formats.inspection import HAN, assert_translated
from tests.fuzz.shipped import needs_shipped_bundle, shipped_service
from tests.word_samples import sample_docx

OPEN, CLOSE, VOID = chr(MARKUP_OPEN), chr(MARKUP_CLOSE), chr(MARKUP_STANDALONE)
_HAN_RUN = re.compile(r"[\u3400-\u9fff，。：；！？（）、]+")
# invented English for the sample's awkward lines, markup characters where the English words go
ENGLISH = {
    f"{samples.BOLD_SENTENCE[0]}{OPEN}{samples.BOLD_SENTENCE[1]}{CLOSE}{samples.BOLD_SENTENCE[2]}": (
        f"This is a {OPEN}very important{CLOSE} question, please read it carefully."
    ),
    "".join(samples.SPLIT_WORD): "We need to translate this file.",
    f"{samples.LINK_SENTENCE[0]}{OPEN}{samples.LINK_SENTENCE[1]}{CLOSE}{samples.LINK_SENTENCE[2]}": (
        f"For details, visit {OPEN}our website{CLOSE}."
    ),
    f"{samples.BREAK_SENTENCE[0]}{VOID}{samples.BREAK_SENTENCE[1]}": f"First line{VOID}second line",
    f"{samples.FIELD_SENTENCE[0]}{VOID}{samples.FIELD_SENTENCE[1]}": f"This is the content of page {VOID}.",
    "".join(samples.MIXED): "This PPT template is easy to use.",
    f"{samples.NOTES[0]}{OPEN}{samples.NOTES[1]}{CLOSE}{samples.NOTES[2]}": (
        f"Speaker notes: first the {OPEN}background{CLOSE}, then the conclusion."
    ),
}


def invented(line: str) -> str:
    """The sample's awkward lines in hand-written English; any other line's Chinese as "en" words, its markup
    characters where they were."""
    return ENGLISH.get(line) or _HAN_RUN.sub(lambda found: " ".join(["en"] * max(1, len(found.group()) // 2)), line)


def translated(data: bytes, translate: Callable[[str], str] = invented) -> bytes:
    document = read_presentation(data, name="deck.pptx")
    return document.rebuild([translate(line) for line in document.lines])


def runs_of(paragraph: _Paragraph) -> list[tuple[str, bool | None, bool | None]]:
    return [(run.text, run.font.bold, run.font.italic) for run in paragraph.runs]


def body(data: bytes) -> list[_Paragraph]:
    """The first shown slide's body paragraphs."""
    slide = Presentation(io.BytesIO(data)).slides[0]
    return list(slide.placeholders[1].text_frame.paragraphs)


def paragraph_with(data: bytes, start: str) -> _Paragraph:
    presentation = Presentation(io.BytesIO(data))
    for slide in presentation.slides:
        shapes = list(samples.walk(iter(slide.shapes)))
        if slide.has_notes_slide:
            shapes += list(samples.walk(iter(slide.notes_slide.shapes)))
        for shape in shapes:
            for frame in samples.frames(shape):
                for paragraph in frame.paragraphs:
                    if paragraph.text.startswith(start):
                        return paragraph
    raise AssertionError(f"no paragraph starts with {start!r}")


# --- units ------------------------------------------------------------------------------------------------------------
def test_units_are_paragraphs_in_presentation_order_notes_after_their_slide_then_layouts() -> None:
    document = read_presentation(samples.sample_file())
    lines = document.lines
    assert lines[0] == samples.TITLE
    order = [
        samples.TITLE,
        samples.NOTES[0],
        samples.CLOSING,  # slide3.xml is shown second
        "数据概览",
        samples.TABLE[0][0],
        samples.GROUP_TEXTS[0],
        samples.GROUP_TEXTS[1],  # in a nested group
        "这一页的数据来自统计局。",
        samples.LAYOUT_TEXT,
        samples.CUSTOM_PROMPT,
    ]
    found = [next(i for i, line in enumerate(lines) if line.startswith(text)) for text in order]
    assert found == sorted(found)
    assert [part.entry for part in document.parts[:5]] == [
        "ppt/slides/slide1.xml",
        "ppt/notesSlides/notesSlide1.xml",
        "ppt/slides/slide3.xml",
        "ppt/slides/slide2.xml",
        "ppt/notesSlides/notesSlide2.xml",
    ]
    assert "".join(samples.SPLIT_WORD) in lines  # the word split over two runs is one unit without markup
    assert "".join(samples.MIXED) in lines  # runs differing only by language and proofing marks are one stretch
    assert not any(line in (samples.ENGLISH, "Q&A", samples.MASTER_TITLE) for line in lines)
    assert "" not in lines and samples.TABLE[2][1] == ""  # the empty cell gives no unit
    assert document.characters == sum(len(line) for line in lines)
    assert all("\n" not in line and "\v" not in line for line in lines)


def test_the_bold_word_comes_back_bold_and_the_rest_plain() -> None:
    paragraph = body(translated(samples.sample_file()))[0]
    assert runs_of(paragraph) == [
        ("This is a ", None, None),
        ("very important", True, None),
        (" question, please read it carefully.", None, None),
    ]


def test_formatting_follows_the_markup_when_the_translation_moves_it() -> None:
    def bold_first(line: str) -> str:
        if line.startswith(samples.BOLD_SENTENCE[0]):
            return f"{OPEN}Very important{CLOSE}: this question, read it."
        return invented(line)

    paragraph = body(translated(samples.sample_file(), bold_first))[0]
    assert runs_of(paragraph) == [("Very important", True, None), (": this question, read it.", None, None)]


def test_a_word_split_over_two_runs_is_one_run_of_english() -> None:
    paragraph = body(translated(samples.sample_file()))[1]
    assert runs_of(paragraph) == [("We need to translate this file.", None, None)]


def test_the_link_is_on_the_english_words_only_and_keeps_its_target() -> None:
    out = translated(samples.sample_file())
    paragraph = body(out)[2]
    links = [(run.text, run.hyperlink.address) for run in paragraph.runs]
    assert links == [("For details, visit ", None), ("our website", samples.LINK), (".", None)]


def test_line_break_and_field_are_kept_in_place() -> None:
    source = samples.sample_file()
    out = translated(source)
    paragraphs = body(out)
    assert paragraphs[3].text == "First line\vsecond line"
    assert paragraphs[4].text == "This is the content of page 1."
    fields = [etree.tostring(field) for field in paragraphs[4]._p.iter(f"{{{A}}}fld")]
    assert fields == [etree.tostring(field) for field in body(source)[4]._p.iter(f"{{{A}}}fld")]
    assert len(fields) == 1 and b'type="slidenum"' in fields[0]


def test_translated_runs_say_english_and_lose_the_chinese_proofing_marks() -> None:
    paragraph = body(translated(samples.sample_file()))[5]
    assert paragraph.text == "This PPT template is easy to use."
    (run,) = paragraph._p.findall(f"{{{A}}}r")
    properties = run.find(f"{{{A}}}rPr")
    assert properties is not None and dict(properties.attrib) == {"lang": "en-US"}


def test_notes_keep_their_italic_word() -> None:
    paragraph = paragraph_with(translated(samples.sample_file()), "Speaker notes")
    assert runs_of(paragraph) == [
        ("Speaker notes: first the ", None, None),
        ("background", None, True),
        (", then the conclusion.", None, None),
    ]


def test_table_group_and_layout_texts_are_translated_the_empty_cell_and_master_view_text_kept() -> None:
    source = samples.sample_file()
    out = translated(source)
    presentation = Presentation(io.BytesIO(out))
    table_slide = presentation.slides[2]
    (table,) = [shape.table for shape in table_slide.shapes if shape.has_table]
    cells = [cell.text for row in table.rows for cell in row.cells]
    assert all(text and not HAN.search(text) for text in cells[:-1]) and cells[-1] == ""
    grouped = [shape.text_frame.text for shape in samples.walk(iter(table_slide.shapes)) if shape.has_text_frame]
    assert len(grouped) == 3 and not any(HAN.search(text) for text in grouped)
    layout, title_only = presentation.slide_layouts[1], presentation.slide_layouts[5]
    notice = [shape.text_frame.text for shape in layout.shapes if not shape.is_placeholder]
    assert notice and not HAN.search(notice[0])
    prompt = title_only.placeholders[0]
    assert not HAN.search(prompt.text_frame.text) and prompt.element.ph.get("hasCustomPrompt") == "1"
    assert presentation.slide_master.placeholders[0].text_frame.text == samples.MASTER_TITLE  # master view only
    assert_translated(samples.inspect, source, out)


def test_a_void_the_translation_lost_goes_at_the_end_and_lost_marks_keep_the_text() -> None:
    def lossy(line: str) -> str:
        return invented(line).replace(VOID, "").replace(CLOSE, "")

    out = translated(samples.sample_file(), lossy)
    paragraphs = body(out)
    assert paragraphs[3].text == "First linesecond line\v"
    assert paragraphs[4].text == "This is the content of page .1"
    assert (
        "".join(run.text for run in paragraphs[0].runs)
        == "This is a very important question, please read it carefully."
    )


# --- what is kept -----------------------------------------------------------------------------------------------------
def test_every_entry_without_a_translated_paragraph_is_byte_for_byte_in_the_same_order() -> None:
    source = samples.sample_file()
    out = translated(source)
    before, after = samples.entries(source), samples.entries(out)
    assert list(after) == list(before)
    changed = {entry for entry in before if before[entry] != after[entry]}
    assert changed == {
        "ppt/slides/slide1.xml",
        "ppt/slides/slide2.xml",
        "ppt/slides/slide3.xml",
        "ppt/notesSlides/notesSlide1.xml",
        "ppt/notesSlides/notesSlide2.xml",
        "ppt/slideLayouts/slideLayout2.xml",
        "ppt/slideLayouts/slideLayout6.xml",
    }
    assert any(entry.startswith("ppt/media/") for entry in before)  # the image, among the unchanged


def test_transition_animation_shapes_and_paragraph_properties_are_kept() -> None:
    source = samples.sample_file()
    out = translated(source)
    for entry in ("ppt/slides/slide1.xml", "ppt/slides/slide2.xml", "ppt/slides/slide3.xml"):
        before, after = samples.xml_of(source, entry), samples.xml_of(out, entry)
        assert structure(after) == structure(before)
        for tag in ("transition", "timing"):
            found = [etree.tostring(element) for element in before.iter(f"{{{samples._P}}}{tag}")]
            assert [etree.tostring(element) for element in after.iter(f"{{{samples._P}}}{tag}")] == found
        for kept in ("pPr", "endParaRPr", "bodyPr", "lstStyle", "tblPr", "tcPr"):
            found = [etree.tostring(element) for element in before.iter(f"{{{A}}}{kept}")]
            assert [etree.tostring(element) for element in after.iter(f"{{{A}}}{kept}")] == found
    assert samples.inspect(out).structure == samples.inspect(source).structure


def test_paragraphs_without_chinese_are_untouched() -> None:
    source = samples.sample_file()
    out = translated(source)
    assert etree.tostring(body(out)[6]._p) == etree.tostring(body(source)[6]._p)  # "Version 2.1 (draft)"
    closing = Presentation(io.BytesIO(out)).slides[1]
    assert [shape.text_frame.text for shape in closing.shapes][1] == "Q&A"


def test_a_presentation_without_chinese_comes_back_entry_for_entry() -> None:
    source = samples.file_of(["Hello there.", "A second line.", "Third.", "Fourth.", "Fifth."])
    document = read_presentation(source)
    assert document.text == "" and document.characters == 0
    assert samples.entries(document.rebuild([])) == samples.entries(source)


def test_file_of_holds_every_sentence_in_order() -> None:
    sentences = [f"第{number}句话在这里。" for number in range(1, 64)]
    document = read_presentation(samples.file_of(sentences))
    assert document.lines == sentences  # title, body, table cells, notes: the reading order
    structure = samples.inspect(samples.file_of(sentences)).structure
    assert (structure["slides"], structure["tables"], structure["notes"]) == (3, 2, 2)


# --- checks and errors ------------------------------------------------------------------------------------------------
def test_a_wrong_number_of_translations_is_an_error() -> None:
    document = read_presentation(samples.sample_file(), name="deck.pptx")
    with pytest.raises(TranslatorError, match="deck.pptx"):
        document.rebuild(document.lines[:-1])


def test_a_rebuild_that_lost_an_element_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    rebuild = run_engine.RunParagraph.rebuild

    def losing_breaks(self: run_engine.RunParagraph, english: str) -> None:
        rebuild(self, english)
        for found in list(self.paragraph.iter(f"{{{A}}}br")):
            self.paragraph.remove(found)

    monkeypatch.setattr(run_engine.RunParagraph, "rebuild", losing_breaks)
    with pytest.raises(TranslatorError, match=r"changed the structure of ppt/slides/slide1.xml.*nothing was written"):
        translated(samples.sample_file())


def _rezipped(data: bytes, replace: dict[str, bytes | None]) -> bytes:
    """``data``'s entries with some replaced (None: left out), and any new ones added."""
    out = io.BytesIO()
    entries = samples.entries(data)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry, content in {**entries, **replace}.items():
            if content is not None:
                archive.writestr(entry, content)
    return out.getvalue()


def _corrupt_cases() -> dict[str, tuple[bytes, str]]:
    sample = samples.sample_file()
    slide = samples.entries(sample)["ppt/slides/slide1.xml"]
    declaration = b"<?xml version='1.0' encoding='UTF-8' standalone='yes'?>\n"
    laughs = b'<!DOCTYPE p:sld [<!ENTITY a "haha"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>\n' + slide[
        len(declaration) :
    ].replace("季度销售报告".encode(), b"&b;")
    external = b'<!DOCTYPE p:sld [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n' + slide[len(declaration) :].replace(
        "季度销售报告".encode(), b"&x;"
    )
    assert slide.startswith(declaration)
    return {
        "plain text": ("这不是演示文稿。".encode(), "is not a zip archive"),
        "truncated": (sample[: len(sample) // 2], "zip archive"),
        "a Word document": (sample_docx(), "another kind of file: its main part word/document.xml is of type"),
        "no content types": (_rezipped(sample, {"[Content_Types].xml": None}), r"has no \[Content_Types\].xml"),
        "no package relationships": (_rezipped(sample, {"_rels/.rels": None}), "has no main document part"),
        "a slide missing": (_rezipped(sample, {"ppt/slides/slide2.xml": None}), "names a part ppt/slides/slide2.xml"),
        "damaged slide": (_rezipped(sample, {"ppt/slides/slide1.xml": slide[:-40]}), "is not well-formed XML"),
        "damaged presentation part": (_rezipped(sample, {"ppt/presentation.xml": b"<p:presentation"}), "damaged"),
        "entity expansion": (_rezipped(sample, {"ppt/slides/slide1.xml": laughs}), "declares XML entities"),
        "external entity": (_rezipped(sample, {"ppt/slides/slide1.xml": external}), "declares XML entities"),
        "an entry outside the archive": (_rezipped(sample, {"../evil.xml": b"<x/>"}), "outside the archive"),
    }


@pytest.mark.parametrize("case", sorted(_corrupt_cases()))
def test_a_corrupt_or_foreign_file_is_refused_with_a_clear_error(case: str) -> None:
    data, reason = _corrupt_cases()[case]
    with pytest.raises(InvalidRequestError, match=r"deck.pptx") as raised:
        POWERPOINT.read(data, "deck.pptx")
    message = str(raised.value)
    assert re.search(reason, message), message
    if "entries" not in message and "unpacks" not in message:
        assert message.startswith("not a PowerPoint .pptx presentation: deck.pptx")


def test_zip_limits_are_checked_before_anything_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    data = samples.sample_file()
    monkeypatch.setattr(packages, "MAX_UNPACKED_BYTES", 10_000)
    with pytest.raises(InvalidRequestError, match=r"deck.pptx unpacks to .* at most 10,000"):
        POWERPOINT.read(data, "deck.pptx")
    monkeypatch.setattr(packages, "MAX_UNPACKED_BYTES", 1 << 30)
    monkeypatch.setattr(packages, "MAX_ENTRIES", 5)
    with pytest.raises(InvalidRequestError, match=r"zip entries; at most 5 are read from a PowerPoint"):
        POWERPOINT.read(data, "deck.pptx")


def test_the_format_is_registered_by_suffix_and_name() -> None:
    assert format_for("Deck.PPTX") is POWERPOINT and FORMATS_BY_NAME["pptx"] is POWERPOINT
    assert content_type_for("deck.pptx") == PPTX_CONTENT_TYPE
    source = POWERPOINT.read(samples.sample_file(), "deck.pptx")
    assert source.encoding == "PowerPoint .pptx (binary)" and source.characters == len(source.text.replace("\n", ""))


def test_the_runtime_reads_a_presentation_without_python_pptx() -> None:
    code = (
        "import sys\n"
        "from handler.formats import format_for\n"
        "read = format_for('x.pptx').read(sys.stdin.buffer.read(), 'x.pptx')\n"
        "assert read.text, read\n"
        "print(sorted(name for name in sys.modules if name == 'pptx' or name.startswith('pptx.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=samples.sample_file(),
        capture_output=True,
        check=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],  # the checkout, whose handler package the child imports
    )
    assert done.stdout.strip() == b"[]", done.stderr


def test_the_fan_out_cuts_between_paragraphs_and_joins_to_the_whole_translation() -> None:
    data = samples.sample_file()
    source = POWERPOINT.read(data, "deck.pptx")
    planned = POWERPOINT.cut(source.text, 60, "deck.pptx")
    assert planned is not None
    lead, parts = planned
    assert lead == "" and len(parts) > 2 and "".join(part.text + part.separator for part in parts) == source.text
    assert all(part.separator == "\n" for part in parts[:-1])  # never inside a paragraph
    translations = [POWERPOINT.translate_part(part.text, index, _LineTranslator()) for index, part in enumerate(parts)]
    joined = "".join(text + part.separator for text, part in zip(translations, parts, strict=True))
    whole = translated(data)
    assert samples.entries(POWERPOINT.join(lead + joined, lambda: data, "deck.pptx")) == samples.entries(whole)


class _LineTranslator:
    """What ``UnitsFormat.translate_part`` asks of a ``FileTranslator``: its lines translated (``invented``)."""

    def lines(self, text: str) -> str:
        return "\n".join(invented(line) for line in text.split("\n"))


# --- the shipped model ------------------------------------------------------------------------------------------------
@needs_shipped_bundle
def test_shipped_model_translates_every_text_and_keeps_the_structure() -> None:
    source = samples.sample_file()
    result = translate_file(source, "deck.pptx", shipped_service())
    assert result.content_type == PPTX_CONTENT_TYPE
    assert_translated(samples.inspect, source, result.data)
    paragraphs = body(result.data)
    bold = [run.text for run in paragraphs[0].runs if run.font.bold]
    assert len(bold) == 1 and bold[0].strip() and not HAN.search(bold[0])
    linked = [run.text for run in paragraphs[2].runs if run.hyperlink.address == samples.LINK]
    assert len(linked) == 1 and linked[0].strip()
    assert "\v" in paragraphs[3].text and paragraphs[6].text == samples.ENGLISH
    before, after = samples.entries(source), samples.entries(result.data)
    assert {entry: content for entry, content in after.items() if entry.startswith("ppt/media/")} == {
        entry: content for entry, content in before.items() if entry.startswith("ppt/media/")
    }
