"""Figures the pages quote from the generated report (``docs/benchmarks.md``), never retyped.

A page (``README.md``, ``docs/*.md``) quotes one figure of the report as an HTML comment pair, invisible once
rendered::

    <!-- bench: SECTION :: ROW :: COLUMN -->1.11 s<!-- /bench -->

* ``SECTION``: the start of one of the report's ``## `` headings;
* ``ROW``: the start of a table row's first cell in that section, or of a bullet line (``- ...``) there;
* ``COLUMN``: the start of one of the table's header cells, and the quote is the cell's text up to its first
  `` (`` (the median without its min–max, a ratio without "better"), or the whole cell when the column ends in
  ``*`` (``ratio*``: ``1.06× (worse)``); or ``/REGEX/``, and the quote is the regular expression's first group
  found in the cell or line.

The parts are separated by ``::``, not ``|``, which would split a Markdown table's cell around the quote.

``make bench`` rewrites every quote after writing the report (``fill_pages``, called by
``bench.pipeline.runtime_bench``), so a figure cannot drift from the run it comes from;
``tests/ship/test_docs_match_code.py`` fails when a page's quote differs from the report or names nothing in it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

QUOTE = re.compile(r"<!-- bench:(?P<address>.*?)-->(?P<value>.*?)<!-- /bench -->", re.S)


class QuoteError(ValueError):
    """A quote that names no figure of the report."""


@dataclass(frozen=True)
class Section:
    heading: str
    lines: tuple[str, ...]


def sections(report: str) -> list[Section]:
    """The report's ``## `` sections, each with its lines (up to the next heading)."""
    found: list[Section] = []
    heading, lines = "", []
    for line in report.splitlines():
        if line.startswith("## "):
            found.append(Section(heading, tuple(lines)))
            heading, lines = line[3:].strip(), []
        else:
            lines.append(line)
    found.append(Section(heading, tuple(lines)))
    return [section for section in found if section.heading]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _pick(text: str, column: str, address: str) -> str:
    if column.startswith("/") and column.endswith("/") and len(column) > 2:
        match = re.search(column[1:-1], text)
        if match is None:
            raise QuoteError(f"bench quote '{address}': /{column[1:-1]}/ finds nothing in {text!r}")
        return match.group(1)
    if column.endswith("*"):
        return text.strip()
    return text.split(" (", 1)[0].strip()


def figure(report: str, address: str) -> str:
    """The text a quote's address (``SECTION :: ROW :: COLUMN``) names in ``report``; QuoteError when none."""
    parts = [part.strip() for part in address.split("::")]
    if len(parts) != 3 or not all(parts):
        raise QuoteError(f"bench quote '{address}': write it as SECTION :: ROW :: COLUMN")
    section_start, row_start, column = parts
    matching = [section for section in sections(report) if section.heading.startswith(section_start)]
    if len(matching) != 1:
        headings = [section.heading for section in sections(report)]
        raise QuoteError(f"bench quote '{address}': {len(matching)} headings start with '{section_start}': {headings}")
    header: list[str] = []
    for line in matching[0].lines:
        if line.startswith("|"):
            cells = _cells(line)
            if not header:
                header = cells
                continue
            if set(line) <= set("|-: "):
                continue
            if not cells[0].startswith(row_start):
                continue
            if column.startswith("/"):
                return _pick(line, column, address)
            index = next((i for i, name in enumerate(header) if name.startswith(column.rstrip("*"))), None)
            if index is None or index >= len(cells):
                raise QuoteError(f"bench quote '{address}': no column starts with '{column}' in {header}")
            return _pick(cells[index], column, address)
        else:
            header = []
            if line.startswith("- ") and line[2:].startswith(row_start):
                if not column.startswith("/"):
                    raise QuoteError(f"bench quote '{address}': a bullet line needs a /REGEX/ column")
                return _pick(line, column, address)
    raise QuoteError(f"bench quote '{address}': no row or bullet starts with '{row_start}' under '{section_start}'")


def fill(page: str, report: str) -> str:
    """``page`` with every quote's value replaced by what the report says now; QuoteError for a quote naming
    nothing."""
    return QUOTE.sub(
        lambda match: f"<!-- bench:{match['address']}-->{figure(report, match['address'])}<!-- /bench -->", page
    )


def stale(page: str, report: str) -> list[tuple[str, str, str]]:
    """(address, quoted, the report's) for every quote of ``page`` that differs from the report."""
    differing = []
    for match in QUOTE.finditer(page):
        now = figure(report, match["address"])
        if match["value"] != now:
            differing.append((match["address"].strip(), match["value"], now))
    return differing


def quoting_pages(repo_root: Path) -> list[Path]:
    """The pages that may quote the report: the README and every page of docs/."""
    return [repo_root / "README.md", *sorted((repo_root / "docs").glob("*.md"))]


def fill_pages(repo_root: Path, report_path: Path) -> list[Path]:
    """Rewrite every page's quotes from ``report_path``; the pages that changed."""
    report = report_path.read_text(encoding="utf-8")
    changed = []
    for page in quoting_pages(repo_root):
        text = page.read_text(encoding="utf-8")
        filled = fill(text, report)
        if filled != text:
            page.write_text(filled, encoding="utf-8")
            changed.append(page)
    return changed
