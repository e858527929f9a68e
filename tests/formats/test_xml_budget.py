"""What a file's XML may cost (``handler.formats.packages.XML_BUDGET``, counted as ``Package.part`` unpacks a
part): files of ten million empty elements, small once zipped, in every zip-based format and XLIFF, are refused with
an error naming the part and the limit while the reading process's peak memory stays within ``PEAK_MARGIN_MB``; and
the counting itself, chunk by chunk and part by part."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from handler.errors import InvalidRequestError
from handler.formats.packages import XML_BUDGET, XmlBudget, XmlMeter, XmlTooLargeError, count_nodes
from tests import word_samples
from tests.formats import epub_samples, odt_samples, pptx_samples, xlsx_samples

HOSTILE_ELEMENTS = 10_000_000
# How much higher than its resident memory before the read the reading process's peak may go. Without the budget the
# empty-paragraph .docx took it from 28 MB to 3,087 MB; counting keeps at most what was read of the part (~12 MB).
PEAK_MARGIN_MB = 100
# The child may map this much beyond what it has at the start: a reader that builds the whole tree again fails here
# (MemoryError, or a refusal for another reason) instead of taking the machine's memory.
ADDRESS_SPACE_GUARD_MB = 2048
NODES_LIMIT = f"{XML_BUDGET.max_nodes:,} elements and attributes"
BYTES_LIMIT = f"{XML_BUDGET.max_bytes:,} bytes"

_W = b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
_SLIDE = (
    b'<p:sld xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    b'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree><p:sp><p:txBody>'
)
_ODT = (
    b'<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    b'xmlns:t="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>'
)
_XLIFF = (
    b'<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file original="a.txt" '
    b'source-language="zh-CN" target-language="en" datatype="plaintext"><body>'
)


@dataclass(frozen=True)
class Hostile:
    """A file whose part ``entry`` (None: the file is the XML) is ``head``, ``filler`` many times, then ``tail``,
    the other entries those of ``sample``'s."""

    format: str
    name: str
    entry: str | None
    head: bytes
    filler: bytes
    tail: bytes
    limit: str
    sample: Callable[[], bytes] | None = None
    repeat: int = HOSTILE_ELEMENTS

    def build(self) -> bytes:
        xml = self.head + self.filler * self.repeat + self.tail
        if self.sample is None:
            return xml
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(self.sample())) as source, zipfile.ZipFile(out, "w") as target:
            for info in source.infolist():
                if info.filename == self.entry:
                    target.writestr(info, xml, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
                else:
                    target.writestr(info, source.read(info))  # its own compression: an EPUB's mimetype stays stored
        return out.getvalue()


HOSTILE = [
    Hostile(
        "docx", "empty-paragraphs.docx", "word/document.xml", _W, b"<w:p/>", b"</w:body></w:document>", NODES_LIMIT,
        word_samples.sample_docx,
    ),
    Hostile(
        "pptx", "empty-paragraphs.pptx", "ppt/slides/slide1.xml", _SLIDE, b"<a:p/>",
        b"</p:txBody></p:sp></p:spTree></p:cSld></p:sld>", NODES_LIMIT, pptx_samples.sample_file,
    ),
    Hostile(
        "xlsx", "empty-strings.xlsx", "xl/sharedStrings.xml",
        b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">', b"<si/>", b"</sst>", NODES_LIMIT,
        xlsx_samples.sample_file,
    ),
    Hostile(
        "odt", "empty-paragraphs.odt", "content.xml", _ODT, b"<t:p/>",
        b"</office:text></office:body></office:document-content>", NODES_LIMIT, odt_samples.sample_file,
    ),
    Hostile(
        "epub", "empty-paragraphs.epub", "EPUB/chap_01.xhtml",
        b'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head><body>', b"<p/>",
        b"</body></html>", NODES_LIMIT, epub_samples.sample_file,
    ),
    Hostile("xliff", "empty-elements.xliff", None, _XLIFF, b"<x/>", b"</body></file></xliff>", NODES_LIMIT),
    # 70 MB of blanks: no element to count, refused on its size before a byte of it is unpacked
    Hostile(
        "docx", "blank.docx", "word/document.xml", _W, b" ", b"</w:body></w:document>", BYTES_LIMIT,
        word_samples.sample_docx, 70_000_000,
    ),
]  # fmt: skip

# Run in a fresh process per file, so that its peak resident memory (VmHWM) is the read's own.
_READ_IN_A_FRESH_PROCESS = """
import json, resource, sys

def status(key):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) // 1024 for line in lines if line.startswith(key + ":"))

# what the formats import on their first file, imported before the memory is measured
import docx, handler.formats.epub_book, handler.formats.opendocument_text, handler.formats.presentation
import handler.formats.word, handler.formats.workbook, handler.formats.xliff
from handler.errors import TranslatorError
from handler.formats import format_named

path, fmt, name, guard_mb = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
data = open(path, "rb").read()
_soft, hard = resource.getrlimit(resource.RLIMIT_AS)
resource.setrlimit(resource.RLIMIT_AS, ((status("VmSize") + guard_mb) * 2**20, hard))
before = status("VmRSS")
try:
    format_named(fmt).read(data, name)
    outcome = {"refused": []}
except TranslatorError as error:
    outcome = {"refused": [kind.__name__ for kind in type(error).__mro__], "status": error.status,
               "code": error.code, "message": str(error)}
except MemoryError:
    outcome = {"refused": ["MemoryError"]}
outcome.update(before_mb=before, peak_mb=status("VmHWM"))
print(json.dumps(outcome))
"""


def _read_in_fresh_process(path: Path, fmt: str, name: str) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", _READ_IN_A_FRESH_PROCESS, str(path), fmt, name, str(ADDRESS_SPACE_GUARD_MB)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    outcome: dict[str, object] = json.loads(result.stdout)
    return outcome


@pytest.mark.parametrize("hostile", HOSTILE, ids=lambda hostile: hostile.name)
def test_a_file_of_millions_of_empty_elements_is_refused_within_a_memory_margin(
    hostile: Hostile, tmp_path: Path
) -> None:
    data = hostile.build()
    assert len(data) < 200_000 or hostile.sample is None  # what an upload limit lets through
    path = tmp_path / hostile.name
    path.write_bytes(data)

    outcome = _read_in_fresh_process(path, hostile.format, hostile.name)

    refused = outcome["refused"]
    assert isinstance(refused, list) and refused[:2] == ["XmlTooLargeError", "InvalidRequestError"], outcome
    assert (outcome["status"], outcome["code"]) == (400, "invalid_request")
    message = str(outcome["message"])
    assert message.startswith(f"{hostile.name}: its XML part {hostile.entry} " if hostile.entry else hostile.name)
    assert hostile.limit in message and "split it into smaller files" in message
    growth = int(str(outcome["peak_mb"])) - int(str(outcome["before_mb"]))
    assert growth < PEAK_MARGIN_MB, f"the read's peak was {growth} MB over the process's memory before it"


def test_elements_and_attributes_are_counted_never_too_few() -> None:
    assert count_nodes(b"<a b=\"1\" c='2'><d/>text</a>") == 4  # a, d and two attributes; no end tag
    assert count_nodes(b'<a xmlns:w="urn:w"><!-- <b> --><![CDATA[<c>]]></a>') == 4  # a, xmlns:w, then <b> and <c>
    assert count_nodes(b'<?xml version="1.0"?><a/>') == 2  # the declaration's "=" counts
    # an end tag split between two chunks is not an element
    assert count_nodes(b"<a><") + count_nodes(b"/a>", before=b"<a><") == 1


def _chunks(*chunks: bytes, pulled: list[bytes] | None = None) -> Iterator[bytes]:
    for chunk in chunks:
        if pulled is not None:
            pulled.append(chunk)
        yield chunk


def test_a_part_is_read_up_to_the_budget_and_refused_past_it() -> None:
    budget = XmlBudget(max_bytes=1_000, max_nodes=3)
    meter = XmlMeter("f.docx", "Word .docx document", budget)
    assert b"".join(meter.counted("a.xml", 15, [b"<a><b/>", b"<c/></a>"])) == b"<a><b/><c/></a>"

    meter = XmlMeter("f.docx", "Word .docx document", budget)
    pulled: list[bytes] = []
    with pytest.raises(XmlTooLargeError) as refused:
        list(meter.counted("word/document.xml", 16, _chunks(b"<a><b/>", b"<c/><d/>", b"<e/>", pulled=pulled)))
    assert pulled == [b"<a><b/>", b"<c/><d/>"]  # stopped at the chunk that went over
    assert str(refused.value) == (
        "f.docx: its XML part word/document.xml has more than 3 elements and attributes; a Word .docx document may "
        "have at most 3 elements and attributes in all its XML parts together, so that reading it stays within the "
        "worker's memory: split it into smaller files"
    )
    assert isinstance(refused.value, InvalidRequestError) and refused.value.status == 400


def test_the_parts_of_a_file_add_up_and_the_refusal_names_the_largest() -> None:
    meter = XmlMeter("f.odt", "text document in OpenDocument format (.odt)", XmlBudget(max_bytes=1_000, max_nodes=5))
    assert list(meter.counted("content.xml", 12, [b"<a><b/><c/><d/></a>"])) == [b"<a><b/><c/><d/></a>"]
    with pytest.raises(XmlTooLargeError) as refused:
        list(meter.counted("styles.xml", 8, [b"<a/>", b"<b/>"]))  # 2 alone would pass: 6 together do not
    assert str(refused.value).startswith(
        "f.odt: its XML parts have more than 5 elements and attributes together, content.xml the most (4); a text "
        "document in OpenDocument format (.odt) may have at most 5 elements and attributes in all its XML parts "
        "together"
    )

    # a part over the budget by itself is named alone, counted on (not kept) past the point the parts went over
    meter = XmlMeter("f.odt", "text document in OpenDocument format (.odt)", XmlBudget(max_bytes=1_000, max_nodes=3))
    assert list(meter.counted("meta.xml", 4, [b"<a/>"])) == [b"<a/>"]
    pulled: list[bytes] = []
    with pytest.raises(XmlTooLargeError, match=r"^f\.odt: its XML part content\.xml has more than 3 elements and at"):
        list(meter.counted("content.xml", 20, _chunks(b"<a/><b/>", b"<c/>", b"<d/><e/>", b"<f/>", pulled=pulled)))
    assert len(pulled) == 3  # counted until it alone was over


def test_a_part_over_the_bytes_left_is_refused_before_it_is_unpacked() -> None:
    meter = XmlMeter("book.epub", "valid EPUB e-book", XmlBudget(max_bytes=100, max_nodes=1_000))
    assert list(meter.counted("a.xhtml", 60, [b"<p/>"])) == [b"<p/>"]
    pulled: list[bytes] = []
    with pytest.raises(XmlTooLargeError, match=r"its XML parts have more than 100 bytes together, a\.xhtml the most"):
        list(meter.counted("b.xhtml", 41, _chunks(b"<p/>", pulled=pulled)))
    assert pulled == []
    with pytest.raises(XmlTooLargeError, match=r"^book\.epub: its XML part c\.xhtml has 101 bytes; a valid EPUB"):
        list(XmlMeter("book.epub", "valid EPUB e-book", XmlBudget(100, 1_000)).counted("c.xhtml", 101, []))


def test_the_file_itself_is_the_part_of_an_xliff() -> None:
    meter = XmlMeter("notes.xliff", "file in XLIFF 1.2 or 2.x", XmlBudget(max_bytes=1_000, max_nodes=2))
    with pytest.raises(XmlTooLargeError) as refused:
        list(meter.counted(None, 15, [b"<a><b/><c/></a>"]))
    assert str(refused.value).startswith(
        "notes.xliff has more than 2 elements and attributes; a file in XLIFF 1.2 or 2.x may have at most 2 elements "
        "and attributes, so that"
    )
