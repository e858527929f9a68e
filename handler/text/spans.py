"""Protected spans: what a translation must carry through byte for byte, and how it gets there with any model.

``find_spans`` finds, in one segment of Chinese text, the pieces a model must not translate: URLs, e-mail
addresses, @mentions and #hashtags, file paths, code in backticks, inline math (``$E=mc^2$``, ``\\(a^2+b^2\\)``),
angle-bracketed text (``<img src=x>``, ``<name>``, ``List<String>``: markup-like text in a plain-text segment),
code-like tokens with an operator (``numpy>=2.1.3``, ``x==1``), emoji, numbers written with digits, Latin-script
words and identifiers, markup (the private-use characters ``handler.text.markup`` puts where inline tags were),
plus two kinds whose English is known in advance: numbers with a Chinese unit, currency signs and ranges
(``handler.text.numbers``: ``3万`` -> ``30,000``, ``￥1,299`` -> ``¥1,299``, ``2018-2030年`` -> ``2018-2030``) and
glossary terms (``handler.text.glossary``). Verbatim spans separated only by spaces (``iPhone 15 Pro``,
``pip install numpy``) form one **unit**; a converted span is a unit of its own.

``translate_protected`` translates segments with a caller's batch translator, in four rounds at most:

1. **As is.** A segment is first translated as it stands (the model keeps its full context and its own words);
   the output is kept when it already carries every unit's target, as often as the source has it (most
   sentences whose spans are plain words and numbers; an amount or date may be in another correct form, "$57"
   for ``57美元``, "15 March 2024" for ``2024年3月15日``). Segments with markup skip this round.
2. **Placeholders for what was lost.** Only the units the first output lost become placeholders (below); the
   others stay in the sentence as they are, and must come back too.
3. **Placeholders.** Each unit becomes ``X1``, ``X2``, ... (all Latin letters and digits of the segment are in
   units, so nothing else in the model's input looks like one); the model translates the sentence around them,
   keeping its context. The output is accepted when every placeholder comes back exactly once, no other one
   appears, and markup units keep their order; each placeholder is then replaced by its unit's English.
4. **Stitching**, for every segment whose placeholders did not come back: the Chinese pieces between the units
   are translated on their own and joined with the units in source order (CJK punctuation between them becomes
   its ASCII form). The units are exact by construction; the word order around them is the source's.

A segment without any Chinese character is returned unchanged and never reaches the model. A placeholder never
reaches the user: an output is either checked or rebuilt by stitching.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from handler.text.numbers import find_amounts

TranslateBatch = Callable[[Sequence[str]], list[str]]


class SpanKind(StrEnum):
    """What a protected span is; the value is the name used in responses and the fidelity report."""

    URL = "url"
    EMAIL = "email"
    MENTION = "mention"
    HASHTAG = "hashtag"
    PATH = "path"
    CODE = "code"
    EMOJI = "emoji"
    NUMBER = "number"
    LATIN = "latin"
    AMOUNT = "amount"
    DATE = "date"
    GLOSSARY = "glossary"
    MARKUP = "markup"
    MATH = "math"
    TAG = "tag"
    EXPRESSION = "expression"


# --- markup characters: handler.text.markup replaces each inline tag or entity with one of these ---------------------
MARKUP_OPEN = 0xF0000  # an opening tag: glued to the text after it
MARKUP_CLOSE = 0xF8000  # a closing tag: glued to the text before it
MARKUP_STANDALONE = 0x100000  # a void tag, an entity, a comment
MARKUP_LIMIT = 0x108000  # one past the last markup character
_MARKUP = re.compile(f"[{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]")

# a Han character (CJK unified ideographs, extensions A to H, compatibility ideographs): the one definition, which
# the OpenAPI document's glossary-term pattern uses too (handler.options)
HAN_CHARACTER = "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]"
_HAN = re.compile(HAN_CHARACTER)

_TRAILING = ".,;:!?'\")]}>"  # ASCII punctuation that ends a sentence around a URL rather than the URL
_CLOSING = {"(": ")", "[": "]", "{": "}", "'": "'", '"': '"'}  # what closes an opening bracket or quote
# not inside inline math: a dollar sign, a line break, Han, CJK punctuation or full-width forms
_MATH_CHARACTER = r"[^$\n\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]"
_TAG = r"<[A-Za-z/!?][ -;=?-~]*>"  # ASCII inside, no angle bracket
# delimited spans, found before anything that could cut them (an amount, a URL, a number inside)
_ENCLOSED: tuple[tuple[SpanKind, re.Pattern[str]], ...] = (
    (SpanKind.CODE, re.compile(r"`[^`\n]+`")),
    # TeX: $$...$$, \(...\), \[...\], and $...$ as Pandoc reads it (no space just inside the dollars, no digit
    # right after the closing one: "$5 和 $10" are two prices, not math)
    (
        SpanKind.MATH,
        re.compile(
            rf"\$\${_MATH_CHARACTER}+?\$\$|\\\({_MATH_CHARACTER}+?\\\)|\\\[{_MATH_CHARACTER}+?\\\]"
            rf"|\$(?![\s$]){_MATH_CHARACTER}+?(?<![\s\\])\$(?![0-9０-９])"
        ),
    ),
    # HTML-like tags or placeholders in angle brackets, ASCII inside (<img src=x>, </div>, <name>, <String>), with
    # the ASCII text between two of them (<script>alert(1)</script>)
    (SpanKind.TAG, re.compile(rf"{_TAG}(?:[ -;=?-~]*{_TAG})*")),
)
# a candidate code-like token: a run of ASCII without spaces (kept when an operator stands inside it)
_ASCII_RUN = re.compile(r"[!-~]+")
_OPERATOR = re.compile(r"[=<>~^]")
_WORD_CHARACTER = re.compile(r"[A-Za-z0-9_]")
_PATTERNS: tuple[tuple[SpanKind, re.Pattern[str]], ...] = (
    # a URL ends at Han text, CJK punctuation or a full-width form (访问https://a.com获取信息: the Chinese is text)
    (
        SpanKind.URL,
        re.compile(
            r"(?:(?:https?|ftp)://|www\.)[^\s<>\"'“”‘’\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]+",
            re.I,
        ),
    ),
    (SpanKind.EMAIL, re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")),
    (SpanKind.MENTION, re.compile(r"(?<![A-Za-z0-9_@.])@[A-Za-z0-9_]+(?:[.-][A-Za-z0-9_]+)*")),
    (SpanKind.HASHTAG, re.compile(r"(?<![A-Za-z0-9_#&])#[A-Za-z][A-Za-z0-9_]*")),
    (
        SpanKind.PATH,
        re.compile(
            r"(?<![A-Za-z0-9_./~])(?:~|\.{1,2})?/(?:[A-Za-z0-9_.@-]+/)*[A-Za-z0-9_.@-]+/?"
            r"|(?<![A-Za-z0-9_])[A-Za-z]:\\(?:[A-Za-z0-9_. -]+\\)*[A-Za-z0-9_.-]*"
            r"|(?<![A-Za-z0-9_./])[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\.[A-Za-z0-9]{1,6}(?![A-Za-z0-9])"
        ),
    ),
    (SpanKind.EXPRESSION, _ASCII_RUN),
    (
        SpanKind.EMOJI,
        re.compile(
            "(?:[\U0001f1e6-\U0001f1ff]{2}"
            "|[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\u2300-\u23ff\u2190-\u21ff\u3030\u303d\u3297\u3299]"
            "[\ufe0f\u20e3\U0001f3fb-\U0001f3ff]*"
            "(?:\u200d[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff][\ufe0f\U0001f3fb-\U0001f3ff]*)*)+"
        ),
    ),
    (
        SpanKind.NUMBER,
        # not right after "letter or digit + point": the rest of a version (v1.2.3) is the Latin word's
        re.compile(
            r"(?<![A-Za-z0-9_])(?<![A-Za-z0-9_][.．])[+＋]?[0-9０-９](?:[0-9０-９]|[.,:/\-．，：](?=[0-9０-９]))*[%％‰]?"
        ),
    ),
    (
        SpanKind.LATIN,
        re.compile(
            r"[A-Za-z\u00c0-\u024f\u1e00-\u1eff_$][A-Za-z0-9\u00c0-\u024f\u1e00-\u1eff_$]*"
            r"(?:['’.\-][A-Za-z0-9\u00c0-\u024f\u1e00-\u1eff_]+)*[+#]*"
        ),
    ),
)
_SPACED_THOUSANDS = re.compile(r"\d{1,3}(?: \d{3})+")
# between two spans of one unit: nothing, spaces, or a joiner inside a name ("Wi-Fi 6 / 6E", "R&D")
_UNIT_GAP = re.compile(r"[ \t\u00a0]*(?:[/&+,:-][ \t\u00a0]*)?")

PLACEHOLDER_PREFIX = "X"
_PLACEHOLDER = re.compile(rf"(?<![A-Za-z0-9_]){PLACEHOLDER_PREFIX}(\d+)(?![0-9])")
# placeholders side by side ("X1X2": units with nothing between them, such as markup around a word) are one run
_PLACEHOLDER_RUN = re.compile(rf"(?<![A-Za-z0-9_])(?:{PLACEHOLDER_PREFIX}\d+)+")
_ONE_PLACEHOLDER = re.compile(rf"{PLACEHOLDER_PREFIX}(\d+)")

# CJK punctuation between units in a stitched translation
_ASCII_PUNCTUATION = str.maketrans(
    {
        "，": ", ",
        "、": ", ",
        "。": ". ",
        "！": "! ",
        "？": "? ",
        "；": "; ",
        "：": ": ",
        "（": " (",
        "）": ") ",
        "“": ' "',
        "”": '" ',
        "‘": " '",
        "’": "' ",
        "《": ' "',
        "》": '" ',
        "「": ' "',
        "」": '" ',
        "【": " [",
        "】": "] ",
        "～": "~",
        "\u3000": " ",
    }
)
_ENDS_SENTENCE = re.compile(r"[。！？!?.…]['\"”’」』）)]*\s*$")
_NO_SPACE_BEFORE = tuple(",.;:!?)]}%'\"")
_NO_SPACE_AFTER = tuple("([{\"'/")
_CHOSEN_ENGLISH = frozenset({SpanKind.GLOSSARY, SpanKind.AMOUNT, SpanKind.DATE})
_KEEP_CAPITAL = re.compile(r"^(?:I\b|I'|[A-Z]{2}|[A-Z][a-z]*[A-Z])")


def has_chinese(text: str) -> bool:
    """Whether ``text`` holds a Han character (the model's to translate)."""
    return _HAN.search(text) is not None


@dataclass(frozen=True)
class Span:
    """``source[start:end]`` must come out as ``target`` (the source itself except for amounts and glossary)."""

    start: int
    end: int
    kind: SpanKind
    target: str
    alternatives: tuple[str, ...] = ()  # other correct forms a translation may already hold ("15 March 2024")


@dataclass(frozen=True)
class Unit:
    """Neighbouring spans that travel as one placeholder: ``source[start:end]`` becomes ``target``."""

    start: int
    end: int
    spans: tuple[Span, ...]
    target: str

    @property
    def alternatives(self) -> tuple[str, ...]:
        if len(self.spans) == 1:
            return self.spans[0].alternatives
        # "27 000" (UN style: numbers spaced in thousands, one unit) is "27,000" in an English sentence that has it
        return (self.target.replace(" ", ","),) if _SPACED_THOUSANDS.fullmatch(self.target) else ()

    @property
    def is_markup(self) -> bool:
        return any(span.kind is SpanKind.MARKUP for span in self.spans)

    @property
    def glue_right(self) -> bool:
        """Ends with an opening tag: no space between it and the text after it."""
        last = self.spans[-1]
        return last.kind is SpanKind.MARKUP and MARKUP_OPEN <= ord(last.target[-1]) < MARKUP_CLOSE

    @property
    def glue_left(self) -> bool:
        """Starts with a closing tag: no space between it and the text before it."""
        first = self.spans[0]
        return first.kind is SpanKind.MARKUP and MARKUP_CLOSE <= ord(first.target[0]) < MARKUP_STANDALONE


@dataclass(frozen=True)
class ProtectedSpan:
    """A span as it came out: its kind, the source text and the text the output carries for it."""

    kind: SpanKind
    source: str
    target: str


@dataclass(frozen=True)
class Protected:
    """One segment ready for the model: ``model_input`` (None when the segment has no Chinese) and its units."""

    source: str
    units: tuple[Unit, ...]
    model_input: str | None

    def pieces(self) -> list[tuple[str, Unit | None]]:
        """The source cut at the units: (text, None) for the text between units, (unit source, unit) for units."""
        pieces: list[tuple[str, Unit | None]] = []
        position = 0
        for unit in self.units:
            if unit.start > position:
                pieces.append((self.source[position : unit.start], None))
            pieces.append((self.source[unit.start : unit.end], unit))
            position = unit.end
        if position < len(self.source):
            pieces.append((self.source[position:], None))
        return pieces

    def spans(self) -> list[ProtectedSpan]:
        return [
            ProtectedSpan(span.kind, self.source[span.start : span.end], span.target)
            for unit in self.units
            for span in unit.spans
        ]


@dataclass(frozen=True)
class Translation:
    """A segment's translation, how it was made (``placeholders``, ``stitched``, ``unchanged``, ``plain``), and
    the protected spans it carries."""

    text: str
    method: str
    spans: tuple[ProtectedSpan, ...]
    model_inputs: tuple[str, ...] = ()  # what the model translated to make it (scores: handler.model.confidence)


# --- finding ---------------------------------------------------------------------------------------------------


def find_spans(text: str, glossary: Mapping[str, str] | None = None) -> list[Span]:
    """The protected spans of ``text``, in order, never overlapping.

    Precedence: markup characters, delimited spans (code in backticks, math, angle brackets), glossary terms
    (longest first), numbers with Chinese units or currency signs, then the patterns in the order of ``_PATTERNS``
    (URLs, e-mail before mentions, paths, code-like tokens with an operator, emoji, numbers, Latin words).
    """
    spans: list[Span] = []
    taken = bytearray(len(text))

    def claim(start: int, end: int, kind: SpanKind, target: str, alternatives: tuple[str, ...] = ()) -> None:
        if start < end and not any(taken[start:end]):
            taken[start:end] = b"\x01" * (end - start)
            spans.append(Span(start, end, kind, target, alternatives))

    for match in _MARKUP.finditer(text):
        claim(match.start(), match.end(), SpanKind.MARKUP, match.group())
    for kind, pattern in _ENCLOSED:
        for match in pattern.finditer(text):
            claim(match.start(), match.end(), kind, match.group())
    for term in sorted(glossary or {}, key=len, reverse=True):
        for match in re.finditer(re.escape(term), text):
            claim(match.start(), match.end(), SpanKind.GLOSSARY, (glossary or {})[term])
    for amount in find_amounts(text):
        claim(amount.start, amount.end, SpanKind(amount.kind), amount.english, amount.alternatives)
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.start(), match.end()
            if kind is SpanKind.URL:
                end = _without_closing_punctuation(text, start, end)
            elif kind is SpanKind.EXPRESSION:
                start, end = _expression_bounds(text, start, end)
                if not _has_inner_operator(text, start, end):
                    continue
            claim(start, end, kind, text[start:end])
    return sorted(spans, key=lambda span: span.start)


def _without_closing_punctuation(text: str, start: int, end: int) -> int:
    """The end of a URL or token without the punctuation that closes the sentence around it (a ``)`` stays when it
    has its ``(``)."""
    while end > start and text[end - 1] in _TRAILING:
        if text[end - 1] == ")" and text[start:end].count("(") >= text[start:end].count(")"):
            break
        end -= 1
    return end


def _expression_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """An ASCII run without the sentence punctuation around it: closing marks at its end (as for a URL) and an
    opening bracket or quote at its start that nothing in it closes."""
    end = _without_closing_punctuation(text, start, end)
    while start < end and text[start] in _CLOSING:
        if _CLOSING[text[start]] in text[start + 1 : end]:
            break
        start += 1
    return start, end


def _has_inner_operator(text: str, start: int, end: int) -> bool:
    """Whether an operator (``= < > ~ ^``, so also ``>=``, ``==``, ``!=``) stands between two word characters."""
    first = _WORD_CHARACTER.search(text, start, end)
    if first is None:
        return False
    last = max(index for index in range(first.start(), end) if _WORD_CHARACTER.match(text, index))
    return _OPERATOR.search(text, first.end(), last) is not None


def group_units(text: str, spans: Sequence[Span]) -> list[Unit]:
    """Spans whose gap is only spaces (or a joiner such as ``/``, ``-``, ``&``) form one unit."""
    groups: list[list[Span]] = []
    for span in spans:
        if (
            groups
            and _UNIT_GAP.fullmatch(text, groups[-1][-1].end, span.start)
            and not _markup_boundary(groups[-1][-1], span)
            and not _converted(text, groups[-1][-1])
            and not _converted(text, span)
        ):
            groups[-1].append(span)
        else:
            groups.append([span])
    units = []
    for group in groups:
        parts = []
        for index, span in enumerate(group):
            if index:
                parts.append(text[group[index - 1].end : span.start])
            parts.append(span.target)
        units.append(Unit(group[0].start, group[-1].end, tuple(group), "".join(parts)))
    return units


def _converted(text: str, span: Span) -> bool:
    """A span whose English differs from its source (an amount, a glossary term) travels alone."""
    return span.target != text[span.start : span.end]


def _markup_boundary(left: Span, right: Span) -> bool:
    """Markup and text spans stay apart, so that an opening tag can glue to the word after it."""
    return (left.kind is SpanKind.MARKUP) != (right.kind is SpanKind.MARKUP)


def protect(text: str, glossary: Mapping[str, str] | None = None) -> Protected:
    """The units of ``text`` and the model's input with a placeholder for each (None: no Chinese, keep as is)."""
    if not has_chinese(text):
        return Protected(text, tuple(group_units(text, find_spans(text))), None)
    units = tuple(group_units(text, find_spans(text, glossary)))
    return Protected(text, units, with_placeholders(text, units))


def with_placeholders(text: str, units: Sequence[Unit]) -> str:
    """``text`` with ``units`` (some or all of its units, in order) replaced by ``X1``, ``X2``, ..."""
    parts: list[str] = []
    position = 0
    for number, unit in enumerate(units, start=1):
        parts.append(text[position : unit.start])
        parts.append(placeholder(number))
        position = unit.end
    parts.append(text[position:])
    return "".join(parts)


def placeholder(number: int) -> str:
    return f"{PLACEHOLDER_PREFIX}{number}"


def placeholders_in(text: str) -> list[tuple[int, int, int]]:
    """``(start, end, number)`` of every placeholder in ``text``, those side by side in a run too ("X1X2")."""
    found = []
    for run in _PLACEHOLDER_RUN.finditer(text):
        for one in _ONE_PLACEHOLDER.finditer(run.group()):
            found.append((run.start() + one.start(), run.start() + one.end(), int(one.group(1))))
    return found


def contains_placeholder(text: str) -> bool:
    """Whether ``text`` holds something shaped like a placeholder (the fidelity report's leak check)."""
    return _PLACEHOLDER.search(text) is not None


# --- translating -----------------------------------------------------------------------------------------------


def translate_protected(
    texts: Sequence[str], translate: TranslateBatch, glossary: Mapping[str, str] | None = None
) -> list[Translation]:
    """Each segment's translation with its protected spans intact (see the module's rounds)."""
    plans = [protect(text, glossary) for text in texts]
    results: list[Translation | None] = [
        Translation(plan.source, "unchanged", tuple(plan.spans())) if plan.model_input is None else None
        for plan in plans
    ]
    # round 1: the segment as it is (no markup): kept when the output already carries every unit's target
    raw = [index for index, plan in enumerate(plans) if results[index] is None and not _has_markup(plan)]
    lost: dict[int, list[Unit]] = {}  # the units each round-1 output did not carry
    for index, output in zip(raw, translate([plans[index].source for index in raw]) if raw else [], strict=True):
        if carries_units(plans[index], output):
            method = "plain" if not plans[index].units else "as is"
            results[index] = Translation(output, method, tuple(plans[index].spans()), (plans[index].source,))
        elif plans[index].units:
            lost[index] = [unit for unit in plans[index].units if not carries_units(_alone(unit), output)]
    # round 2: placeholders for the units the model lost only, the others left in the sentence as they are
    partial = [
        index
        for index, units in lost.items()
        if len(units) < len(plans[index].units)
        and not any(contains_placeholder(unit.target) for unit in plans[index].units)
    ]
    inputs = [with_placeholders(plans[index].source, lost[index]) for index in partial]
    for index, given, output in zip(partial, inputs, translate(inputs) if inputs else [], strict=True):
        restored = restore(plans[index], output, lost[index])
        if restored is not None and carries_units(plans[index], restored):
            results[index] = Translation(restored, "placeholders", tuple(plans[index].spans()), (given,))
    # round 3: placeholders for every unit
    pending = [index for index, result in enumerate(results) if result is None]
    inputs = [plans[index].model_input or "" for index in pending]
    for index, given, output in zip(pending, inputs, translate(inputs) if inputs else [], strict=True):
        restored = restore(plans[index], output)
        if restored is not None:
            results[index] = Translation(restored, "placeholders", tuple(plans[index].spans()), (given,))
    # round 4: stitching
    stitched = [plans[index] for index, result in enumerate(results) if result is None]
    pieces = sorted({text for plan in stitched for text in _stitched_inputs(plan)})
    translated = dict(zip(pieces, translate(pieces) if pieces else [], strict=True))
    return [
        result
        if result is not None
        else Translation(stitch(plan, translated), "stitched", tuple(plan.spans()), _stitched_inputs(plan))
        for plan, result in zip(plans, results, strict=True)
    ]


def first_model_inputs(texts: Sequence[str], glossary: Mapping[str, str] | None = None) -> list[str]:
    """The model inputs ``translate_protected`` asks for before it has seen any output, in order: each segment as it
    is (round 1) and, for segments with markup, their placeholder input (round 3). Decoding these first (the
    service's streaming does, batch by batch) leaves only the later rounds' few inputs to the call itself."""
    inputs = []
    for text in texts:
        plan = protect(text, glossary)
        if plan.model_input is not None:
            inputs.append(plan.model_input if _has_markup(plan) else plan.source)
    return inputs


def _stitched_inputs(plan: Protected) -> tuple[str, ...]:
    return tuple(text.strip() for text, unit in plan.pieces() if unit is None and has_chinese(text))


def _alone(unit: Unit) -> Protected:
    return Protected("", (unit,), None)


def _has_markup(plan: Protected) -> bool:
    return any(unit.is_markup for unit in plan.units)


def carries_units(plan: Protected, output: str) -> bool:
    """Whether ``output`` holds every unit's target (or another correct form of it: "15 March 2024", "$57") as
    often as the source has it; a converted target may start with a capital letter (at the start of a sentence)."""
    wanted: dict[tuple[str, ...], int] = {}
    for unit in plan.units:
        forms = (unit.target, *unit.alternatives)
        wanted[forms] = wanted.get(forms, 0) + 1
    for forms, times in wanted.items():
        found = 0
        for form in forms:
            found += output.count(form)
            if form[:1].islower():
                found += output.count(form[0].upper() + form[1:])
        if found < times:
            return False
    return True


def restore(plan: Protected, output: str, units: Sequence[Unit] | None = None) -> str | None:
    """The model's output with each placeholder replaced by its unit's target; None unless every placeholder
    came back exactly once, no unknown one appeared and the markup units kept their order. ``units`` are the
    units that had placeholders (default: all of the plan's)."""
    units = plan.units if units is None else units
    found = placeholders_in(output)
    numbers = [number for _, _, number in found]
    if sorted(numbers) != list(range(1, len(units) + 1)):
        return None
    markup_order = [number for number in numbers if units[number - 1].is_markup]
    if markup_order != sorted(markup_order):
        return None
    parts: list[str] = []
    position = 0
    previous: Unit | None = None
    for start, end, number in found:
        unit = units[number - 1]
        before = output[position:start]
        if previous is not None and previous.glue_right:
            before = before.lstrip()
        if unit.glue_left:
            before = before.rstrip()
        parts.append(before)
        parts.append(_at_start(unit) if not "".join(parts).strip() else unit.target)
        position = end
        previous = unit
    tail = output[position:]
    parts.append(tail.lstrip() if previous is not None and previous.glue_right else tail)
    return "".join(parts)


def stitch(plan: Protected, translated: Mapping[str, str]) -> str:
    """The units in source order with the translations of the Chinese pieces between them."""
    chunks: list[tuple[str, Unit | None]] = []
    for text, unit in plan.pieces():
        if unit is not None:
            starts = not any(chunk.strip() for chunk, _ in chunks)
            chunks.append((_at_start(unit) if starts else unit.target, unit))
        elif has_chinese(text):
            english = translated[text.strip()].strip()
            so_far = "".join(chunk for chunk, _ in chunks)
            if any(char.isalnum() for char in so_far) and not _ENDS_SENTENCE.search(so_far):
                english = _continue_sentence(english)
            if not _ENDS_SENTENCE.search(text):
                english = english.rstrip(".")
            chunks.append((english, None))
        else:
            chunks.append((text.translate(_ASCII_PUNCTUATION), None))
    return _join(chunks)


def _at_start(unit: Unit) -> str:
    """A unit's target at the start of a sentence: English the service chose (a glossary term, an amount) gets a
    capital letter unless its first word already has one (a glossary's "iPhone", "eBay"); verbatim spans (a URL, a
    name in lower case) stay as they are."""
    if unit.spans[0].kind in _CHOSEN_ENGLISH and unit.target.split(" ", 1)[0].islower():
        return unit.target[0].upper() + unit.target[1:]
    return unit.target


def _continue_sentence(english: str) -> str:
    """A piece inside a sentence starts in lower case, unless it starts with a name, an acronym or ``I``."""
    if english[:1].isupper() and not _KEEP_CAPITAL.match(english):
        return english[0].lower() + english[1:]
    return english


def _join(chunks: Sequence[tuple[str, Unit | None]]) -> str:
    out = ""
    previous: Unit | None = None
    for text, unit in chunks:
        if not text:
            continue
        if out and not out[-1].isspace() and not text[0].isspace():
            glued = (previous is not None and previous.glue_right) or (unit is not None and unit.glue_left)
            if not glued and not text.startswith(_NO_SPACE_BEFORE) and not out.endswith(_NO_SPACE_AFTER):
                out += " "
        elif out and out[-1].isspace() and text[0].isspace():
            text = text.lstrip()
        if unit is not None and unit.glue_left:
            out = out.rstrip()
        elif previous is not None and previous.glue_right:
            text = text.lstrip()
        out += text
        previous = unit
    return out.strip()
