"""Long text: cut Chinese text into sentence-sized segments that fit the model, and put translations back.

``split_document`` finds the segments of a text; ``Document.join`` rebuilds a text from one translation per
segment (``Joiner``: the same, one segment at a time, for a streamed translation). A segment is an exact slice of
the input, and everything between two segments is whitespace, so no content is ever dropped. Segments never
cross a line break, and ``join`` copies every stretch of whitespace that holds a line break verbatim (blank lines,
indentation, trailing spaces, ``\\r\\n``), so paragraphs and line breaks survive; sentences within one line are
joined with a single space.

How a line is cut, in order:

1. Sentences end after ``。！？；`` and their ASCII forms, and after ellipses (``……``, ``…``, ``⋯``, ``...``),
   with any closing quotes and brackets (``”’」』）)】》"'``…) kept with the sentence. An ASCII ``.!?;`` ends a
   sentence only when whitespace, the end of the line or a non-ASCII character follows it, so ``3.14``,
   ``example.com`` and ``?a=1`` stay whole; no dot before a digit ends one (``３．１４``), nor does a ``.``
   after a single letter or a common abbreviation (``Dr.``, ``e.g.``) or before a lower-case word.
2. A sentence over the token budget is cut after the clause marks ``，、：`` (ASCII ``,`` and ``:`` only when
   whitespace or a non-ASCII character follows, so ``1,000`` and ``10:30`` stay whole), and the clauses are
   packed back into as few pieces as fit the budget.
3. A clause still over budget is cut at whitespace, packed the same way.
4. As a last resort a piece is cut at the longest prefix that fits the budget, moved back to the start of a
   run of ASCII letters, digits and symbols (a word, number or URL) when the prefix would end inside one.

Budgets are measured with the caller's ``count_tokens`` (the tokenizer's, end-of-sequence included) on the
exact text of each segment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

CountTokens = Callable[[str], int]

# characters that end a line, as str.splitlines() sees them
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_LINE_BREAK = re.compile(f"[{LINE_BREAKS}]")
_LINES = re.compile(f"[^{LINE_BREAKS}]+")
_ONE_LINE = re.compile(f"\\s*[{LINE_BREAKS}]\\s*")

_FULL_WIDTH_ENDS = "。！？；｡．︒﹒﹖﹗﹔"
_ASCII_ENDS = ".!?;"
_DECIMAL_POINTS = ".．﹒"
_ELLIPSES = "…⋯"
_TERMINATORS = _FULL_WIDTH_ENDS + _ASCII_ENDS + _ELLIPSES
_CLOSERS = "”’」』）)】〕〗〙〛》〉］]｝}｣"
_ASCII_QUOTES = "\"'"
_SENTENCE_END = re.compile(f"[{re.escape(_TERMINATORS)}]+")
_CLAUSE_MARKS = "，、：﹐﹑﹕︰"
_CLAUSE_END = re.compile(f"[{_CLAUSE_MARKS}]+|[,:]+")
_WHITESPACE_RUN = re.compile(r"\s+")
_NOT_WHITESPACE = re.compile(r"\S")
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st sr jr vs etc e.g i.e no fig al inc ltd co corp jan feb mar apr jun jul aug sep sept "
    "oct nov dec mt ave approx".split()
)
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.")


@dataclass(frozen=True)
class Segment:
    """One piece of the input to translate: ``text == source[start:end]``, no line break, no outer whitespace."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Document:
    """A text cut into segments; everything outside the segments is whitespace."""

    source: str
    segments: tuple[Segment, ...]

    @property
    def texts(self) -> list[str]:
        """The segments' texts, in order: what to translate."""
        return [segment.text for segment in self.segments]

    def join(self, translations: Sequence[str]) -> str:
        """The output text: one translation per segment, with the input's line structure.

        Whitespace that holds a line break is copied from the input, as are the text's leading and trailing
        whitespace; translations on one line are joined with a single space (none where the input was cut
        inside a word, number or URL longer than the budget), and empty translations add nothing. Line breaks
        inside a translation (with the whitespace around them) become single spaces, so a translation can never
        add or remove a line; other whitespace inside it is kept (a protected span such as ``a  b`` in code
        comes out byte for byte).
        """
        if len(translations) != len(self.segments):
            raise ValueError(f"expected {len(self.segments)} translations, got {len(translations)}")
        joiner = Joiner(self.source)
        parts = [joiner.add(segment, english) for segment, english in zip(self.segments, translations, strict=True)]
        parts.append(joiner.finish())
        return "".join(parts)


class Joiner:
    """``Document.join`` one segment at a time, for output written as each translation arrives (a streamed
    translation): ``add`` gives what goes out with a segment's translation (the input's whitespace or the single
    space that separates it from the text before, then the translation on one line), ``finish`` what follows the
    last segment. Nothing written depends on a later segment, and the pieces together are ``join``'s text byte
    for byte (``join`` is made of them)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.position = 0  # where the last segment added ends in ``source``
        self._added = 0
        self._line_has_text = False

    def add(self, segment: Segment, translation: str) -> str:
        """What to write for ``segment`` (the next segment of ``source``, in order) translated as ``translation``."""
        if segment.start < self.position:
            raise ValueError(f"segments must come in order: {segment.start} is before {self.position}")
        parts: list[str] = []
        first = self._added == 0
        gap = self.source[self.position : segment.start]
        if first or _LINE_BREAK.search(gap):
            parts.append(gap)  # the text's leading whitespace, or line breaks with the next indentation
            self._line_has_text = False
        inside_word = not first and not gap and _is_run_char(self.source[self.position - 1])
        inside_word = inside_word and _is_run_char(self.source[segment.start])
        self.position = segment.end
        self._added += 1
        text = one_line(translation)
        if text:  # empty translations add nothing
            if self._line_has_text and not inside_word:  # a word or URL longer than the budget was cut: no space
                parts.append(" ")
            parts.append(text)
            self._line_has_text = True
        return "".join(parts)

    def finish(self) -> str:
        """What follows the last segment: the text's trailing whitespace (all of it when there were no segments)."""
        return self.source[self.position :]


def one_line(translation: str) -> str:
    """A segment's translation as ``Document.join`` writes it: line breaks (with the whitespace around them) as
    single spaces, the ends stripped, other whitespace kept."""
    return _ONE_LINE.sub(" ", translation).strip()


def split_document(text: str, count_tokens: CountTokens, max_tokens: int) -> Document:
    """Cut ``text`` into segments of at most ``max_tokens`` tokens each (as ``count_tokens`` counts them).

    Raises ``ValueError`` when ``max_tokens`` is too small to hold even one character of the text.
    """
    segments: list[Segment] = []
    for line in _LINES.finditer(text):
        for start, end in _sentences(text, line.start(), line.end()):
            _fit(text, start, end, count_tokens, max_tokens, 0, segments)
    return Document(text, tuple(segments))


# --- cutting ------------------------------------------------------------------------------------------------


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    """The span without its outer whitespace (empty when it is all whitespace)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The sentences of one line, as stripped spans."""
    spans: list[tuple[int, int]] = []
    sentence_start = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if match.start() < sentence_start:  # already taken in by the previous sentence's closers
            continue
        if not _ends_sentence(text, sentence_start, match.start(), match.end(), end):
            continue
        cut = _after_closers(text, sentence_start, match.end(), end)
        span = _strip(text, sentence_start, cut)
        if span[0] < span[1]:
            spans.append(span)
        sentence_start = cut
    span = _strip(text, sentence_start, end)
    if span[0] < span[1]:
        spans.append(span)
    return spans


def _ends_sentence(text: str, sentence_start: int, run_start: int, run_end: int, line_end: int) -> bool:
    run = text[run_start:run_end]
    following = text[run_end] if run_end < line_end else ""
    if run[-1] in _DECIMAL_POINTS and following.isdigit():
        return False  # 3.14, ３．１４
    if any(char not in _ASCII_ENDS for char in run):
        return True  # a full-width mark or an ellipsis
    if following.isascii() and following and not following.isspace() and following not in _CLOSERS + _ASCII_QUOTES:
        return False  # example.com, ?a=1, a;b
    if run != ".":
        return True
    word_start = run_start
    while word_start > sentence_start and text[word_start - 1] in _WORD_CHARS:
        word_start -= 1
    word = text[word_start:run_start].strip(".")
    if len(word) == 1 or word.lower() in _ABBREVIATIONS:
        return False  # J. Smith, Dr. Wang, e.g. this
    next_text = _NOT_WHITESPACE.search(text, run_end, line_end)
    return not (next_text and next_text.group().islower())


def _after_closers(text: str, sentence_start: int, position: int, line_end: int) -> int:
    """Move past closing quotes, brackets and further end marks that belong to the sentence."""
    while position < line_end:
        char = text[position]
        if char in _CLOSERS or char in _TERMINATORS:
            position += 1
        elif char in _ASCII_QUOTES and text.count(char, sentence_start, position) % 2 == 1:
            position += 1  # closes a quote opened in this sentence
        else:
            break
    return position


def _clause_cuts(text: str, start: int, end: int) -> list[int]:
    cuts: list[int] = []
    for match in _CLAUSE_END.finditer(text, start, end):
        position = match.end()
        if match.group()[0] in ",:" and position < end:
            following = text[position]
            if following.isascii() and not following.isspace():
                continue  # 1,000, 10:30, http://
        cuts.append(position)
    return cuts


def _whitespace_cuts(text: str, start: int, end: int) -> list[int]:
    return [match.start() for match in _WHITESPACE_RUN.finditer(text, start, end)]


_CUT_LEVELS: tuple[Callable[[str, int, int], list[int]], ...] = (_clause_cuts, _whitespace_cuts)


def _fit(
    text: str, start: int, end: int, count_tokens: CountTokens, max_tokens: int, level: int, out: list[Segment]
) -> None:
    """Append segments covering the span ``[start, end)``, each within ``max_tokens``."""
    start, end = _strip(text, start, end)
    if start >= end:
        return
    if count_tokens(text[start:end]) <= max_tokens:
        out.append(Segment(text[start:end], start, end))
        return
    if level == len(_CUT_LEVELS):
        _cut_by_budget(text, start, end, count_tokens, max_tokens, out)
        return
    boundaries = [start, *(cut for cut in _CUT_LEVELS[level](text, start, end) if start < cut < end), end]

    def fits(first: int, last: int) -> bool:
        piece_start, piece_end = _strip(text, boundaries[first], boundaries[last])
        return count_tokens(text[piece_start:piece_end]) <= max_tokens

    first = 0
    while first < len(boundaries) - 1:
        if not fits(first, first + 1):  # one piece alone is too long: cut it finer
            _fit(text, boundaries[first], boundaries[first + 1], count_tokens, max_tokens, level + 1, out)
            first += 1
            continue
        last = _last_fitting(first + 1, len(boundaries) - 1, partial(fits, first))
        piece_start, piece_end = _strip(text, boundaries[first], boundaries[last])
        if piece_start < piece_end:
            out.append(Segment(text[piece_start:piece_end], piece_start, piece_end))
        first = last


def _cut_by_budget(
    text: str, start: int, end: int, count_tokens: CountTokens, max_tokens: int, out: list[Segment]
) -> None:
    """Cut the stripped span ``[start, end)`` into pieces that fit, longest prefix first."""

    def fits(piece_end: int, piece_start: int) -> bool:
        return count_tokens(text[piece_start:piece_end].rstrip()) <= max_tokens

    while start < end:
        if not fits(start + 1, start):
            raise ValueError(
                f"max_tokens={max_tokens} is too small: the single character {text[start]!r} "
                f"needs {count_tokens(text[start])} tokens"
            )
        longest = _last_fitting(start + 1, end, partial(fits, piece_start=start))
        cut = _outside_ascii_run(text, start, longest) if longest < end else end
        if cut != longest and not fits(cut, start):
            cut = longest
        piece_start, piece_end = _strip(text, start, cut)
        out.append(Segment(text[piece_start:piece_end], piece_start, piece_end))
        start, end = _strip(text, cut, end)


def _last_fitting(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """The largest ``x`` in ``[low, high]`` with ``fits(x)``, given ``fits(low)``: gallop, then bisect.

    Token counts of growing prefixes are nearly but not strictly monotone; the answer always fits, and is
    the longest when they are monotone.
    """
    step = 1
    while low < high:
        probe = min(low + step, high)
        if not fits(probe):
            high = probe - 1
            break
        low = probe
        step *= 2
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _is_run_char(char: str) -> bool:
    return char.isascii() and not char.isspace()


def _outside_ascii_run(text: str, start: int, cut: int) -> int:
    """``cut`` moved back to the start of the ASCII word, number or URL it falls inside, if that is after ``start``."""
    if not (_is_run_char(text[cut - 1]) and _is_run_char(text[cut])):
        return cut
    run_start = cut - 1
    while run_start > start and _is_run_char(text[run_start - 1]):
        run_start -= 1
    return run_start if run_start > start else cut
