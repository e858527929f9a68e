"""Word (``.docx``): the text of paragraphs, tables, headers, footers, notes and comments translated, formatting
runs mapped back, everything else kept byte for byte; binary, never decoded.

The reading and rebuilding are ``handler.formats.word`` (lxml and python-docx), imported on the first ``.docx`` so
that a cold start that never sees one does not pay for them. The fan-out cuts a Word file's units (one paragraph a
line) only between lines, so never inside a paragraph, and joins the translated lines by reading the source again.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from handler.formats.base import FileTranslator, SourceFile
from handler.text.parts import Part, plan_parts_at

WORD_ENCODING = "Word .docx (binary)"  # the source-encoding description of a .docx
DOCX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


class Word:
    name = "docx"
    suffixes = (".docx",)
    content_type = DOCX_CONTENT_TYPE
    binary = True
    service_format = None
    joins_from_source = True

    def read(self, data: bytes, name: str, encoding: str | None = None) -> SourceFile:
        """A Word document's XML says its own encoding: ``encoding`` is not needed and not used."""
        from handler.formats.word import read_word_file

        document = read_word_file(data, name=name)
        return SourceFile(name, data, document.text, WORD_ENCODING, document.characters, document)

    def translate(self, file: SourceFile, translator: FileTranslator) -> bytes:
        from handler.formats.word import WordFile, read_word_file

        document = file.parsed if isinstance(file.parsed, WordFile) else read_word_file(file.data, name=file.name)
        return document.translate(translator.lines)

    def cut(self, text: str, max_chars: int, name: str) -> tuple[str, list[Part]] | None:
        return plan_parts_at(text, max_chars, [(found.start(), found.end()) for found in re.finditer("\n", text)])

    def translate_part(self, text: str, index: int, translator: FileTranslator) -> str:
        return translator.lines(text)

    def join(self, translation: str, source: Callable[[], bytes], name: str) -> bytes:
        from handler.formats.word import read_word_file

        return read_word_file(source(), name=name).rebuild(translation.split("\n"))


WORD = Word()
