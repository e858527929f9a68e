"""Word (``.docx``): the text of paragraphs, tables, headers, footers, notes and comments translated, formatting
runs mapped back, everything else kept byte for byte; binary, never decoded.

The reading and rebuilding are ``handler.formats.word`` (lxml and python-docx), imported on the first ``.docx`` so
that a cold start that never sees one does not pay for them. One paragraph is one unit, one line
(``handler.formats.base.UnitsFormat``): the fan-out cuts only between paragraphs.
"""

from __future__ import annotations

from handler.formats.base import UnitsFile, UnitsFormat

WORD_ENCODING = "Word .docx (binary)"  # the source-encoding description of a .docx
DOCX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


class Word(UnitsFormat):
    name = "docx"
    suffixes = (".docx",)
    content_type = DOCX_CONTENT_TYPE
    encoding_description = WORD_ENCODING

    def parse(self, data: bytes, name: str) -> UnitsFile:
        from handler.formats.word import read_word_file

        return read_word_file(data, name=name)


WORD = Word()
