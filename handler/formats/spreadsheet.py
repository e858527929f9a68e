"""Excel (``.xlsx``): the text of text cells (shared and inline strings) and of comments translated, rich text's
formatting mapped back, everything else kept byte for byte (numbers, dates, formulas and their cached values,
styles, merged cells, sheet names and order); binary, never decoded.

The reading and rebuilding are ``handler.formats.workbook`` (lxml, through ``handler.formats.packages``; never
openpyxl, whose load and save drop what it does not model), imported on the first ``.xlsx`` so that a cold start
that never sees one does not pay for it. One string is one unit, one line (``handler.formats.base.UnitsFormat``): a
shared string several cells use is translated once, and the fan-out cuts only between strings. Sheet names are kept
(renaming a sheet breaks the formulas that name it; see ``handler.formats.workbook``).
"""

from __future__ import annotations

from handler.formats.base import UnitsFile, UnitsFormat

XLSX_ENCODING = "Excel .xlsx (binary)"  # the source-encoding description of a .xlsx
XLSX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


class Spreadsheet(UnitsFormat):
    name = "xlsx"
    suffixes = (".xlsx",)
    content_type = XLSX_CONTENT_TYPE
    encoding_description = XLSX_ENCODING

    def parse(self, data: bytes, name: str) -> UnitsFile:
        from handler.formats.workbook import read_workbook

        return read_workbook(data, name)


XLSX = Spreadsheet()
