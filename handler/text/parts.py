"""Where a long text is cut into parts for the fan-out (``handler.storage.bulk``): at paragraph boundaries, then
line breaks, then sentence ends, only where a paragraph alone is too long; nothing lost, nothing added."""

from __future__ import annotations

import re
from dataclasses import dataclass

# where a text may be cut, coarsest first: blank-line runs (paragraphs), line breaks, after a sentence end
_CUTS = (
    re.compile(r"(\r?\n[ \t]*(?:\r?\n[ \t]*)+)"),
    re.compile(r"(\r?\n)"),
    re.compile(r"(?<=[。！？!?；;…])(\s*)"),
)
_LEADING_SPACE = re.compile(r"\s*")


@dataclass(frozen=True)
class Part:
    """One part: its text and the separator (whitespace) that follows it in the source."""

    text: str
    separator: str


def plan_parts(text: str, max_chars: int) -> tuple[str, list[Part]]:
    """``(lead, parts)``: ``lead + Σ(part.text + part.separator) == text``; each part at most ``max_chars``."""
    lead = _LEADING_SPACE.match(text)
    assert lead is not None
    rest = text[lead.end() :]
    parts = [Part(body, separator) for body, separator in _pack(rest, max_chars, 0)] if rest else []
    assert lead.group() + "".join(p.text + p.separator for p in parts) == text
    return lead.group(), parts


def _units(text: str, level: int) -> list[tuple[str, str]]:
    pieces = _CUTS[level].split(text)
    return [(pieces[i], pieces[i + 1] if i + 1 < len(pieces) else "") for i in range(0, len(pieces), 2)]


def _pack(text: str, limit: int, level: int) -> list[tuple[str, str]]:
    """Cut ``text`` into (body, separator) pairs of at most ``limit`` characters, at the coarsest cuts possible."""
    if len(text) <= limit:
        return [(text, "")]
    if level == len(_CUTS):  # no cut point at all: cut hard
        return [(text[i : i + limit], "") for i in range(0, len(text), limit)]
    packed: list[tuple[str, str]] = []
    body, pending = "", ""  # the part being filled, and the separator after its last unit
    for unit, separator in _units(text, level):
        if not unit:  # an empty unit (text ending at a cut): its separator joins the previous one
            pending += separator
            continue
        if len(unit) > limit:
            if body:
                packed.append((body, pending))
            elif pending:
                packed.append(("", pending))
            packed.extend(_pack(unit, limit, level + 1))
            last_body, last_separator = packed[-1]
            packed[-1] = (last_body, last_separator + separator)
            body, pending = "", ""
        elif body and len(body) + len(pending) + len(unit) > limit:
            packed.append((body, pending))
            body, pending = unit, separator
        else:
            body, pending = (body + pending + unit, separator) if body else (pending + unit, separator)
    if body or pending:
        packed.append((body, pending))
    return packed
