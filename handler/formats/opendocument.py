"""OpenDocument text (``.odt``, what LibreTranslate's ``/translate_file`` users send): the text of paragraphs,
headings, tables, lists, frames, notes, annotations and the master pages' headers and footers translated, inline
formatting (spans, links) mapped back, everything else kept byte for byte; binary, never decoded.

The reading and rebuilding are ``handler.formats.opendocument_text`` (lxml), imported on the first ``.odt`` so that
a cold start that never sees one does not pay for it. One paragraph is one unit, one line
(``handler.formats.base.UnitsFormat``): the fan-out cuts only between paragraphs.
"""

from __future__ import annotations

from handler.formats.base import UnitsFile, UnitsFormat

ODT_ENCODING = "OpenDocument text .odt (binary)"  # the source-encoding description of an .odt
ODT_CONTENT_TYPE = "application/vnd.oasis.opendocument.text"


class OpenDocumentText(UnitsFormat):
    name = "odt"
    suffixes = (".odt",)
    content_type = ODT_CONTENT_TYPE
    encoding_description = ODT_ENCODING

    def parse(self, data: bytes, name: str) -> UnitsFile:
        from handler.formats.opendocument_text import read_odt_file

        return read_odt_file(data, name=name)


ODT = OpenDocumentText()
