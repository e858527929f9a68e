"""Where a long text is cut into parts for the fan-out (``handler.storage.bulk``): at paragraph boundaries, then
line breaks, then sentence ends, only where a paragraph alone is too long; nothing lost, nothing added."""

from __future__ import annotations

import re
from collections.abc import Sequence
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


def plan_parts_at(text: str, max_chars: int, cuts: Sequence[tuple[int, int]]) -> tuple[str, list[Part]]:
    """Like ``plan_parts``, but cut only at ``cuts`` (``(start, end)`` of separators, in order): for formats whose
    units must stay whole (a subtitle cue, a sentence over cues); a unit longer than ``max_chars`` is a part alone.
    """
    parts: list[Part] = []
    body_start = 0
    previous: tuple[int, int] | None = None
    for start, end in cuts:
        if previous is not None and start - body_start > max_chars:
            parts.append(Part(text[body_start : previous[0]], text[previous[0] : previous[1]]))
            body_start = previous[1]
        previous = (start, end)
    if previous is not None and len(text) - body_start > max_chars:
        parts.append(Part(text[body_start : previous[0]], text[previous[0] : previous[1]]))
        body_start = previous[1]
    if body_start < len(text):
        parts.append(Part(text[body_start:], ""))
    assert "".join(p.text + p.separator for p in parts) == text
    return "", parts
