"""The ``Accept`` header (RFC 9110 §12.5.1): which of the media types an answer can take a client prefers.

``preferred(accept, offered)`` reads the header's media ranges (``type/subtype``, ``type/*``, ``*/*``, each with
its parameters and a weight ``q`` from 0 to 1, 1 when absent) and gives the offered type of the highest weight:

* an offered type takes the weight of the **most specific** range that matches it (``text/event-stream`` before
  ``text/*`` before ``*/*``; a range with more parameters before one with fewer; the first listed of two equally
  specific), so ``*/*;q=0.5, text/event-stream;q=0.2`` weighs ``text/event-stream`` 0.2;
* ``q=0`` means "not acceptable", and a type no range matches is not acceptable either;
* between offered types of equal weight, the one matched by the more specific range wins (``text/event-stream,
  */*`` prefers ``text/event-stream``), then the server's order (``offered[0]`` first), as werkzeug's
  ``MIMEAccept.best_match`` breaks ties; the order of the client's list does not count (HTTP gives it no meaning).

A range's parameters (other than ``q``) must each be one the offered type has (``charset`` values compared without
case); what follows ``q`` (RFC 7231's accept-ext) is ignored. A member that cannot be read (no ``/``, a weight that
is not a number from 0 to 1) is skipped; a header with none that can be read, or none at all, accepts anything, so
the first offered type is the answer. Standard library only: the API layer runs on every platform, and the one
library that parses ``Accept`` in the runtime (werkzeug) comes with functions-framework only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_MEMBERS = re.compile(rf'(?:[^,"]|{_QUOTED})+')  # a header split at its commas, not those in quoted strings
_PARTS = re.compile(rf'(?:[^;"]|{_QUOTED})+')  # a member split at its semicolons, likewise
_MEDIA = re.compile(rf"\s*({_TOKEN})/({_TOKEN})\s*")
_PARAMETER = re.compile(rf"\s*({_TOKEN})\s*=\s*({_TOKEN}|{_QUOTED})\s*")
_WEIGHT = re.compile(r"(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?|\.[0-9]{1,3})")  # RFC 9110's qvalue; ".5" read too


@dataclass(frozen=True)
class MediaRange:
    """One member of an ``Accept`` header (or an offered media type): lower-case type and subtype (``*`` for a
    wildcard), its parameters but ``q`` (names lower-case, ``charset`` values too), its weight and its place."""

    type: str
    subtype: str
    parameters: frozenset[tuple[str, str]]
    quality: float = 1.0
    position: int = 0

    @property
    def specificity(self) -> tuple[int, int]:
        """How specific: ``*/*`` 0, ``type/*`` 1, ``type/subtype`` 2; then how many parameters."""
        level = 0 if self.type == "*" else 1 if self.subtype == "*" else 2
        return level, len(self.parameters)

    def matches(self, offered: MediaRange) -> bool:
        """Whether this range covers the offered type, its parameters included."""
        return (
            self.type in ("*", offered.type)
            and self.subtype in ("*", offered.subtype)
            and self.parameters <= offered.parameters
        )


def parse_accept(accept: str) -> list[MediaRange]:
    """The media ranges of an ``Accept`` header, in its order; members that cannot be read are left out."""
    ranges: list[MediaRange] = []
    for member in _MEMBERS.findall(accept):
        parsed = _media_range(member, len(ranges))
        if parsed is not None:
            ranges.append(parsed)
    return ranges


def _media_range(member: str, position: int) -> MediaRange | None:
    """One member, ``type/subtype *( ; name=value )``, with its weight; None when it cannot be read."""
    parts = _PARTS.findall(member)
    found = _MEDIA.fullmatch(parts[0]) if parts else None
    if found is None or (found.group(1) == "*" and found.group(2) != "*"):  # "*/subtype" is no media range
        return None
    kept: set[tuple[str, str]] = set()
    quality = 1.0
    for parameter in parts[1:]:
        pair = _PARAMETER.fullmatch(parameter)
        if pair is None:
            return None
        name, value = pair.group(1).lower(), pair.group(2)
        if name == "q":  # the weight; what follows it is an extension, not a media type parameter
            if _WEIGHT.fullmatch(value) is None:
                return None
            quality = float(value)
            break
        value = value[1:-1] if value.startswith('"') else value
        kept.add((name, value.lower() if name == "charset" else value))
    return MediaRange(found.group(1).lower(), found.group(2).lower(), frozenset(kept), quality, position)


def preferred(accept: str, offered: Sequence[str]) -> str | None:
    """Of ``offered`` (media types, the server's preference first), the one ``accept`` weighs highest; the first
    when the header is empty or has no readable member; None when it accepts none of them."""
    ranges = parse_accept(accept)
    if not ranges:
        return offered[0] if offered else None
    best: tuple[tuple[float, tuple[int, int], int], str] | None = None
    for index, media_type in enumerate(offered):
        offer = _media_range(media_type, 0)
        if offer is None:
            raise ValueError(f"{media_type!r} is not a media type")
        matching = [candidate for candidate in ranges if candidate.matches(offer)]
        if not matching:
            continue
        rule = max(matching, key=lambda candidate: (candidate.specificity, -candidate.position))
        if rule.quality <= 0:
            continue
        rank = (rule.quality, rule.specificity, -index)
        if best is None or rank > best[0]:
            best = (rank, media_type)
    return best[1] if best is not None else None
