"""PowerPoint (``.pptx``): the text of slides, tables, grouped shapes, speaker notes and what slide layouts and
masters show on slides translated, formatting runs mapped back, everything else kept byte for byte; binary, never
decoded.

The reading and rebuilding are ``handler.formats.presentation`` (lxml, through ``handler.formats.packages`` and
``handler.formats.runs``; python-pptx is never imported at run time), imported on the first ``.pptx`` so that a
cold start that never sees one does not pay for it. One paragraph is one unit, one line
(``handler.formats.base.UnitsFormat``): the fan-out cuts only between paragraphs.
"""

from __future__ import annotations

from handler.formats.base import UnitsFile, UnitsFormat

POWERPOINT_ENCODING = "PowerPoint .pptx (binary)"  # the source-encoding description of a .pptx
PPTX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.presentationml.presentation"


class PowerPoint(UnitsFormat):
    name = "pptx"
    suffixes = (".pptx",)
    content_type = PPTX_CONTENT_TYPE
    encoding_description = POWERPOINT_ENCODING

    def parse(self, data: bytes, name: str) -> UnitsFile:
        from handler.formats.presentation import read_presentation

        return read_presentation(data, name=name)


POWERPOINT = PowerPoint()
