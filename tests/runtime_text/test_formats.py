"""The file formats' one interface (``handler.formats``): the registry is the only place a format is listed, and a
new format is one module that every path (a whole file, the fan-out's cut and join) takes with no other edit."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from handler import formats
from handler.errors import InvalidRequestError, RequestTooLargeError
from handler.formats import FILE_SUFFIXES, FORMATS, FORMATS_BY_NAME, accepted_format, format_for, read_file, suffix_of
from handler.formats.base import FileTranslator, SourceFile, TextFormat
from handler.storage.bulk import translate_in_parts
from handler.text.parts import Part, plan_parts

HANDLER = Path(__file__).resolve().parents[2] / "handler"
SUFFIX_LITERAL = re.compile(r"\.[a-z0-9]{2,9}")


def test_every_format_declares_what_the_paths_need() -> None:
    names = [fmt.name for fmt in FORMATS]
    suffixes = [suffix for fmt in FORMATS for suffix in fmt.suffixes]
    assert len(set(names)) == len(names) and len(set(suffixes)) == len(suffixes)
    assert FILE_SUFFIXES == tuple(suffixes) and set(FORMATS_BY_NAME) == set(names)
    for fmt in FORMATS:
        assert fmt.suffixes and all(SUFFIX_LITERAL.fullmatch(suffix) for suffix in fmt.suffixes), fmt.name
        assert fmt.content_type and (fmt.binary or fmt.content_type.endswith("charset=utf-8")), fmt.name
        assert format_for(f"a/b{fmt.suffixes[0].upper()}") is fmt and accepted_format(f"x{fmt.suffixes[-1]}") is fmt


def test_no_module_outside_the_formats_package_lists_a_suffix() -> None:
    """A format's suffixes are written in its module alone (the fan-out's own part objects end in .txt: a key,
    not a format)."""
    listed = {suffix for fmt in FORMATS for suffix in fmt.suffixes}
    found = []
    for path in HANDLER.rglob("*.py"):
        if path.parent.name == "formats":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in listed:
                found.append((str(path.relative_to(HANDLER)), node.value))
    assert found == [("storage/bulk.py", ".txt")], found  # bulk.PART_SUFFIX


@pytest.mark.parametrize(
    ("name", "suffix"),
    [("a.TXT", ".txt"), ("a.b.md", ".md"), (".md", ".md"), ("README", ""), ("a.", "."), ("dir.d/file", ".d/file")],
)
def test_the_one_suffix_parser(name: str, suffix: str) -> None:
    assert suffix_of(name) == suffix


def test_a_document_api_refuses_a_suffix_no_format_names_listing_them() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        accepted_format("report.pdf")
    assert str(caught.value) == (
        f"'report.pdf' has '.pdf'; this server translates documents with the suffixes {', '.join(FILE_SUFFIXES)}"
    )
    with pytest.raises(InvalidRequestError, match="has no suffix"):
        accepted_format("README")
    assert format_for("README") is format_for("notes.log") is FORMATS_BY_NAME["text"]  # uploads: plain text


def test_the_size_is_checked_before_the_file_is_read_and_again_after() -> None:
    reads: list[int] = []

    def read(data: bytes) -> Callable[[], bytes]:
        return lambda: reads.append(len(data)) or data

    with pytest.raises(
        RequestTooLargeError, match=r"^a.txt is 11 bytes; the limit is 10 \(TRANSLATE_MAX_FILE_BYTES\)$"
    ):
        read_file("a.txt", 11, read(b"x" * 11), 10)
    assert reads == []  # never fetched
    with pytest.raises(RequestTooLargeError, match=r"^a.txt is 12 bytes; the limit is 10 .*; nothing was written$"):
        read_file("a.txt", 5, read(b"x" * 12), 10, written="; nothing was written")  # replaced meanwhile
    fmt, file = read_file("a.srt", 5, read("你好".encode()), 10)
    assert fmt is FORMATS_BY_NAME["srt"] and (file.text, file.encoding, file.characters) == ("你好", "UTF-8", 2)


# --- a new format: one module, no other edit ------------------------------------------------------------------
class Shouting(TextFormat):
    """What a new format's module holds: ``.shout`` files, text upper-cased, cut at blank lines like plain text."""

    name = "shout"
    suffixes = (".shout",)
    content_type = "text/x-shout; charset=utf-8"

    @property
    def service_format(self) -> str | None:
        return None

    def translate_text(self, text: str, translator: FileTranslator, name: str) -> str:
        return text.upper()

    def cut(self, text: str, max_chars: int, name: str) -> tuple[str, list[Part]] | None:
        return plan_parts(text, max_chars)

    def translate_part(self, text: str, index: int, translator: FileTranslator) -> str:
        return text.upper()


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Shouting:
    """The new format registered as its entry in ``FORMATS`` would register it (the derived tables with it)."""
    shouting = Shouting()
    monkeypatch.setattr(formats, "FORMATS", (*FORMATS, shouting))
    monkeypatch.setitem(formats._BY_SUFFIX, ".shout", shouting)  # type: ignore[attr-defined]
    monkeypatch.setitem(formats.FORMATS_BY_NAME, "shout", shouting)  # type: ignore[index]
    return shouting


def test_a_new_format_is_taken_by_every_path_with_no_other_edit(registered: Shouting) -> None:
    assert format_for("notes.SHOUT") is registered and accepted_format("a.shout") is registered
    assert formats.content_type_for("a.shout") == "text/x-shout; charset=utf-8"
    service = None  # the format never asks the service
    translated = formats.translate_file(b"loud\n\nquiet", "a.shout", service)  # type: ignore[arg-type]
    assert translated.data == b"LOUD\n\nQUIET" and translated.content_type == registered.content_type
    assert isinstance(translated.source, SourceFile) and translated.source.characters == len("loud\n\nquiet")
    text = "\n\n".join(["word " * 300] * 4)
    assert translate_in_parts(service, text, 1_000, "shout") == text.upper()  # type: ignore[arg-type]


def test_a_cold_start_loads_no_reader_of_a_binary_or_xml_format() -> None:
    # the formats' readers, lxml, polib and python-docx are imported on a format's first file, never at start
    import subprocess
    import sys

    code = (
        "import sys, handler.formats\n"
        "heavy = ('lxml', 'polib', 'docx')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith('handler.formats.')\n"
        "             and m.rsplit('.', 1)[1] in ('packages', 'runs', 'word', 'presentation', 'workbook',\n"
        "                                         'opendocument_text', 'epub_book')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, check=True, timeout=120, cwd=Path(__file__).parents[2]
    )
    assert done.stdout.strip() == b"[]", done.stdout
