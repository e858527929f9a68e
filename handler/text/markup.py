"""HTML and Markdown: translate the text, keep the markup byte for byte.

``parse_markup(text, format)`` cuts a document into **blocks** of translatable text and a layout that rebuilds it.
Inside a block every piece of inline markup (a tag, an entity, inline code, emphasis markers, a link's target) is
one private-use character (``handler.text.spans.MARKUP_*``): the translation pipeline protects those like any span, so
they come back exactly once and in order, and ``MarkupDocument.rebuild`` puts the original markup back. Whatever
is not in a block (block-level tags, code, the Markdown line syntax) is copied from the source unchanged.

* ``text``: the whole text is one block.
* ``html`` (the standard library's ``html.parser``, fed the whole document; every construct's source is sliced
  from the input by position, never re-serialised, so the output's markup is the input's): text nodes are
  translated, block-level tags end a block, inline tags (``b``, ``a``, ``span``...) stay inside it. Nothing in
  ``script``, ``style``, ``code``, ``pre``, ``textarea``, comments or declarations is translated; ``alt`` and
  ``title`` attribute values are (their quoting is kept; a ``"`` in a translation becomes ``&quot;``).
* ``markdown`` (``markdown-it-py``, CommonMark plus tables and strikethrough): the inline text of paragraphs,
  headings, list items, block quotes and table cells is translated line by line; fenced and indented code, HTML
  blocks, inline code, link and image targets (image alt text too), heading, list, quote and table syntax are
  kept.

``skeleton(text, format)`` is the markup alone (tags with their attributes, Markdown syntax lines), for tests and
the fidelity report: a faithful translation has the input's skeleton, apart from translated ``alt``/``title``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from itertools import count
from typing import TYPE_CHECKING

from handler.errors import InvalidRequestError
from handler.text.spans import MARKUP_CLOSE, MARKUP_LIMIT, MARKUP_OPEN, MARKUP_STANDALONE, has_chinese

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

FORMATS = ("text", "html", "markdown")

# elements whose content is never translated (the whole element is copied)
OPAQUE = frozenset({"script", "style", "code", "pre", "textarea", "kbd", "samp", "var", "svg", "math", "template"})
# elements that stay inside a block of text
INLINE = frozenset(
    "a abbr b bdi bdo big br cite code data del dfn em font i img ins kbd label mark q s samp small span strike "
    "strong sub sup time tt u var wbr".split()
)
VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
TRANSLATED_ATTRIBUTES = ("alt", "title")

_MARKUP_CHAR = re.compile(f"[{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]")
# the attribute syntax html.parser itself uses inside a start tag
_ATTRIBUTE = re.compile(
    r"""((?<=[\'"\s/])[^\s/>][^\s/=>]*)(\s*=+\s*(\'[^\']*\'|"[^"]*"|(?![\'"])[^>\s]*))?(?:\s|/(?!>))*"""
)

_NEEDS_QUOTES = re.compile(r"[\s\"'=<>`]")
_BARE_AMPERSAND = re.compile(r"&(?!#[0-9]+;|#[xX][0-9A-Fa-f]+;|[A-Za-z][A-Za-z0-9]*;)")

Part = str | int  # raw source text, or the index of a block whose translation goes here

TAGGED_FORMATS = ("html", "xml")  # what DeepL's tag_handling names (parse_tagged)


@dataclass(frozen=True)
class TagRules:
    """DeepL's tag parameters, for ``parse_tagged``: ``ignore_tags`` (elements kept as they are, content and all),
    ``non_splitting_tags`` (inline: they stay inside a sentence), ``splitting_tags`` (each ends a block of text) and
    ``outline_detection`` (XML: an element is structure when its parent holds no text of its own; off, only
    ``splitting_tags`` split). Tag names are compared as written in XML and case-insensitively in HTML."""

    ignore_tags: frozenset[str] = frozenset()
    non_splitting_tags: frozenset[str] = frozenset()
    splitting_tags: frozenset[str] = frozenset()
    outline_detection: bool = True


@dataclass
class MarkupDocument:
    """Blocks to translate and how to put their translations back into the document."""

    blocks: list[str] = field(default_factory=list)
    layout: list[Part] = field(default_factory=list)
    atoms: dict[str, list[Part]] = field(default_factory=dict)
    quotes: dict[int, str] = field(default_factory=dict)  # attribute-value blocks: the quote around them
    escape_text: bool = False  # XML: a translation's "&" and "<" become entities, so the output stays well-formed

    def rebuild(self, translations: Sequence[str]) -> str:
        """The document with each block replaced by its translation and every markup character by its markup."""
        if len(translations) != len(self.blocks):
            raise ValueError(f"{len(self.blocks)} blocks, {len(translations)} translations")
        return self._render(self.layout, translations)

    def shown(self, text: str, translations: Sequence[str] | None = None) -> str:
        """A piece of one block (its source, its translation, a sentence of either) with each markup character
        replaced by the markup it stands for, as a user sees it; a block nested in that markup (an attribute's
        value) is its entry in ``translations`` (default: its source). No private-use character is left."""
        if not _MARKUP_CHAR.search(text):
            return text
        return _MARKUP_CHAR.sub(self._atom(self.blocks if translations is None else translations), text)

    def _atom(self, translations: Sequence[str]) -> Callable[[re.Match[str]], str]:
        def atom(match: re.Match[str]) -> str:
            parts = self.atoms.get(match.group())
            return match.group() if parts is None else self._render(parts, translations)

        return atom

    def _render(self, parts: Sequence[Part], translations: Sequence[str]) -> str:
        atom = self._atom(translations)
        out = []
        for part in parts:
            if isinstance(part, str):
                out.append(part)
                continue
            text = translations[part]
            if self.escape_text and text != self.blocks[part]:
                text = _BARE_AMPERSAND.sub("&amp;", text).replace("<", "&lt;")
            text = _MARKUP_CHAR.sub(atom, text)
            quote = self.quotes.get(part)
            if quote is not None and text != self.blocks[part]:
                if not quote and _NEEDS_QUOTES.search(text):
                    quote = '"'
                    text = f'"{_escape_attribute(text, quote)}"'
                else:
                    text = _escape_attribute(text, quote)
            out.append(text)
        return "".join(out)


_WORD = re.compile(r"[^\W_]")  # a letter or digit, in any script


def lost_runs(source: str, translation: str) -> list[str]:
    """The runs of Chinese between a sentence's markup characters whose counterpart in its translation (the run
    between the same markup characters) holds no word: text the model dropped, which the markup around it would
    otherwise hide (``<b>你好</b>，世界`` → ``<b>, you're</b>,`` loses "，世界"). Empty where the sentence has no
    markup, or where the translation's markup characters are not the source's in order (nothing can be paired)."""
    marks = _MARKUP_CHAR.findall(source)
    if not marks or marks != _MARKUP_CHAR.findall(translation):
        return []
    pairs = zip(_MARKUP_CHAR.split(source), _MARKUP_CHAR.split(translation), strict=True)
    return [run.strip() for run, english in pairs if has_chinese(run) and not _WORD.search(english)]


def _escape_attribute(text: str, quote: str) -> str:
    # a value is sent to the model as written, entities and all ("&quot;"): those stay, a bare "&" is escaped
    text = _BARE_AMPERSAND.sub("&amp;", text)
    return text.replace(quote, "&quot;" if quote == '"' else "&#39;") if quote else text


class _Builder:
    """Collects a document's layout, blocks and atoms."""

    def __init__(self, source: str) -> None:
        if _MARKUP_CHAR.search(source):
            raise InvalidRequestError(
                "the text holds private-use characters U+F0000 to U+107FFF, which the html and markdown formats "
                "reserve for markup; remove them or use format text"
            )
        self.document = MarkupDocument()
        self._numbers = {MARKUP_OPEN: count(MARKUP_OPEN), MARKUP_CLOSE: count(MARKUP_CLOSE)}
        self._numbers[MARKUP_STANDALONE] = count(MARKUP_STANDALONE)
        self._block: list[str] = []  # the block being collected: text and markup characters
        self._block_raw: list[str] = []  # its source, for a block without Chinese

    def atom(self, kind: int, parts: list[Part]) -> str:
        char = chr(next(self._numbers[kind]))
        limit = {MARKUP_OPEN: MARKUP_CLOSE, MARKUP_CLOSE: MARKUP_STANDALONE}.get(kind, MARKUP_LIMIT)
        if ord(char) >= limit:
            raise InvalidRequestError("the document has too much markup to translate; split it")
        self.document.atoms[char] = parts
        return char

    @property
    def in_block(self) -> bool:
        return bool(self._block)

    def text(self, text: str) -> None:
        self._block.append(text)
        self._block_raw.append(text)

    def inline(self, kind: int, raw: str, parts: list[Part] | None = None) -> None:
        self._block.append(self.atom(kind, parts if parts is not None else [raw]))
        self._block_raw.append(raw)

    def flush(self) -> None:
        block = "".join(self._block)
        if has_chinese(block):
            self.document.layout.append(self.add_block(block))
        else:
            self.document.layout.extend(self._atoms_of(block))
        self._block, self._block_raw = [], []

    def _atoms_of(self, block: str) -> list[Part]:
        """A block without Chinese: its source, with the atoms' parts (translated attributes) in place."""
        parts: list[Part] = []
        position = 0
        for match in _MARKUP_CHAR.finditer(block):
            parts.append(block[position : match.start()])
            parts.extend(self.document.atoms[match.group()])
            position = match.end()
        parts.append(block[position:])
        return [part for part in parts if part != ""]

    def raw(self, raw: str) -> None:
        self.flush()
        self.document.layout.append(raw)

    def add_block(self, text: str) -> int:
        self.document.blocks.append(text)
        return len(self.document.blocks) - 1

    def finish(self) -> MarkupDocument:
        self.flush()
        return self.document


def parse_markup(text: str, format: str) -> MarkupDocument:
    """The blocks and layout of ``text`` in ``format`` (one of ``FORMATS``)."""
    if format == "text":
        return MarkupDocument(blocks=[text], layout=[0])
    if format == "html":
        return _parse_html(text)
    if format == "markdown":
        return _parse_markdown(text)
    raise InvalidRequestError(f"format must be one of {', '.join(FORMATS)}; got {format!r}")


# --- HTML --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Event:
    kind: str  # start, startend, end, data, entity, comment, other
    tag: str
    start: int
    attrs: tuple[tuple[str, str | None], ...] = ()


class _HtmlEvents(HTMLParser):
    """Every construct of a document with its start offset (the parser reports positions as line, column)."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=False)
        self.events: list[_Event] = []
        self._line_starts = [0] + [match.end() for match in re.finditer("\n", source)]
        self.feed(source)
        self.close()

    def _offset(self) -> int:
        line, column = self.getpos()
        return self._line_starts[line - 1] + column

    def _add(self, kind: str, tag: str = "", attrs: Sequence[tuple[str, str | None]] = ()) -> None:
        self.events.append(_Event(kind, tag, self._offset(), tuple(attrs)))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._add("start", tag, attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._add("startend", tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        self._add("end", tag)

    def handle_data(self, data: str) -> None:
        self._add("data")

    def handle_entityref(self, name: str) -> None:
        self._add("entity")

    def handle_charref(self, name: str) -> None:
        self._add("entity")

    def handle_comment(self, data: str) -> None:
        self._add("other")

    def handle_decl(self, decl: str) -> None:
        self._add("other")

    def handle_pi(self, data: str) -> None:
        self._add("other")

    def unknown_decl(self, data: str) -> None:
        self._add("other")


class _XmlEvents(_HtmlEvents):
    """The same constructs read as XML: no element's content is raw text (HTML's ``script``, ``style``, ``title``)."""

    def set_cdata_mode(self, *args: object, **kwargs: object) -> None:
        return None


def _html_pieces(source: str, xml: bool = False) -> list[tuple[_Event, str]]:
    """Each construct with its exact source text; together they are the whole document."""
    events = (_XmlEvents if xml else _HtmlEvents)(source).events
    if not events or events[0].start > 0:
        events.insert(0, _Event("data", "", 0))
    ends = [event.start for event in events[1:]] + [len(source)]
    pieces = [(event, source[event.start : end]) for event, end in zip(events, ends, strict=True)]
    return [(event, raw) for event, raw in pieces if raw]


def _parse_html(source: str, rules: TagRules | None = None) -> MarkupDocument:
    builder = _Builder(source)
    pieces = _html_pieces(source)
    _html_range(builder, pieces, 0, len(pieces), rules or TagRules())
    return builder.finish()


def _html_range(
    builder: _Builder, pieces: Sequence[tuple[_Event, str]], index: int, stop: int, rules: TagRules
) -> None:
    """Adds ``pieces[index:stop]`` to the document."""
    while index < stop:
        event, raw = pieces[index]
        starts = event.kind in ("start", "startend")
        if starts and (event.tag in OPAQUE or _kept(event, rules)):
            end = min(_closing(pieces, index), stop - 1) if event.kind == "start" and event.tag not in VOID else index
            _html_kept(builder, pieces, index, end + 1, event.tag in INLINE, rules)
            index = end + 1
            continue
        if event.kind == "data":
            builder.text(raw)
        elif event.kind == "entity":
            builder.inline(MARKUP_STANDALONE, raw)
        elif starts:
            parts = _tag_parts(raw, builder)
            if _inline_tag(event.tag, rules):
                kind = MARKUP_STANDALONE if event.kind == "startend" or event.tag in VOID else MARKUP_OPEN
                builder.inline(kind, raw, parts)
            else:
                builder.flush()
                builder.document.layout.extend(parts)
        elif event.kind == "end" and _inline_tag(event.tag, rules):
            builder.inline(MARKUP_CLOSE, raw)
        elif event.kind == "other" and builder.in_block:
            builder.inline(MARKUP_STANDALONE, raw)
        else:
            builder.raw(raw)
        index += 1


def _inline_tag(tag: str, rules: TagRules) -> bool:
    """Whether an HTML element stays inside a block of text (DeepL's splitting_tags and non_splitting_tags first)."""
    if tag in rules.splitting_tags:
        return False
    return tag in INLINE or tag in rules.non_splitting_tags


def _translate_attribute(event: _Event) -> str | None:
    """The element's own ``translate`` state: "no", "yes", or None (inherited); ``class="notranslate"`` is "no"."""
    attributes = {name.lower(): value for name, value in event.attrs}
    if "notranslate" in (attributes.get("class") or "").split():
        return "no"
    if "translate" not in attributes:
        return None
    return "no" if (attributes["translate"] or "").strip().lower() == "no" else "yes"


def _kept(event: _Event, rules: TagRules) -> bool:
    """An element whose content stays as written: ``translate="no"``, ``class="notranslate"``, DeepL's
    ``ignore_tags``."""
    return event.tag in rules.ignore_tags or _translate_attribute(event) == "no"


def _html_kept(
    builder: _Builder, pieces: Sequence[tuple[_Event, str]], index: int, stop: int, inline: bool, rules: TagRules
) -> None:
    """An element kept as written (``pieces[index:stop]``), apart from an element inside it that says
    ``translate="yes"``, whose content is translated again (the HTML standard's inheritance)."""
    opaque = pieces[index][0].tag in OPAQUE

    def keep(start: int, end: int) -> None:
        whole = "".join(raw for _, raw in pieces[start:end])
        if not whole:
            return
        if inline:
            builder.inline(MARKUP_STANDALONE, whole)
        else:
            builder.raw(whole)

    kept_from = index
    position = index + 1
    while position < stop and not opaque:
        event = pieces[position][0]
        if event.kind == "start" and event.tag not in VOID and _translate_attribute(event) == "yes":
            end = min(_closing(pieces, position), stop - 1)
            keep(kept_from, position)
            _html_range(builder, pieces, position, end + 1, rules)
            kept_from = position = end + 1
            continue
        position += 1
    keep(kept_from, stop)


def _closing(pieces: Sequence[tuple[_Event, str]], index: int) -> int:
    """The index of the end tag that closes the element starting at ``index`` (the last piece if none does)."""
    tag = pieces[index][0].tag
    depth = 0
    for position in range(index, len(pieces)):
        event = pieces[position][0]
        if event.tag == tag and event.kind == "start":
            depth += 1
        elif event.tag == tag and event.kind == "end":
            depth -= 1
            if depth == 0:
                return position
    return len(pieces) - 1


def _tag_parts(raw: str, builder: _Builder) -> list[Part]:
    """A start tag's source, with each Chinese ``alt``/``title`` value as a block of its own."""
    parts: list[Part] = []
    position = 0
    name_end = re.match(r"<[^\s/>]*", raw)
    start = name_end.end() if name_end else 0
    for match in _ATTRIBUTE.finditer(raw, start):
        name, value = match.group(1), match.group(3)
        if name is None or value is None or name.lower() not in TRANSLATED_ATTRIBUTES:
            continue
        quote = value[0] if value[:1] in ("'", '"') else ""
        inner = value[1:-1] if quote else value
        if not has_chinese(inner):
            continue
        value_start = match.start(3) + len(quote)
        block = builder.add_block(inner)
        builder.document.quotes[block] = quote  # "" = unquoted: quoted in the output only if it must be
        parts.extend([raw[position:value_start], block])
        position = value_start + len(inner)
    parts.append(raw[position:])
    return [part for part in parts if part != ""]


# --- XML (DeepL's tag_handling=xml) ---------------------------------------------------------------------------

_XML_NAME = re.compile(r"</?([^\s/>]+)")


def _parse_xml(source: str, rules: TagRules) -> MarkupDocument:
    """XML as DeepL reads it: text translated, every tag kept where it was (inline tags such as ``<x id="1"/>`` go
    through the translation as markup characters, structural ones end a block; an inline element without Chinese in
    it is kept whole, as one), ``ignore_tags`` kept whole, attributes never translated; a translation's ``&`` and
    ``<`` are written as entities, so well-formed input stays well-formed."""
    builder = _Builder(source)
    builder.document.escape_text = True
    pieces = _html_pieces(source, xml=True)
    names = [_xml_name(event, raw) for event, raw in pieces]
    parent: dict[int, int] = {}  # an element's start piece -> its parent's start piece (-1: the top level)
    opener: dict[int, int] = {}  # an end tag's piece -> its start tag's piece
    closer: dict[int, int] = {}
    holds_text: set[int] = set()  # elements (start pieces; -1: the top level) with text of their own
    stack: list[int] = []
    for index, (event, raw) in enumerate(pieces):
        here = stack[-1] if stack else -1
        if event.kind in ("start", "startend"):
            parent[index] = here
            if event.kind == "start":
                stack.append(index)
        elif event.kind == "end":
            for depth in range(len(stack) - 1, -1, -1):
                if names[stack[depth]] == names[index]:
                    opener[index], closer[stack[depth]] = stack[depth], index
                    del stack[depth:]
                    break
        elif event.kind == "entity" or (event.kind == "data" and raw.strip()):
            holds_text.add(here)

    def inline(start: int) -> bool:
        name = names[start]
        if name in rules.splitting_tags:
            return False
        if name in rules.non_splitting_tags or not rules.outline_detection:
            return True
        return parent[start] in holds_text  # outline detection: an element amid its parent's text is inline

    index = 0
    while index < len(pieces):
        event, raw = pieces[index]
        if event.kind in ("start", "startend") and names[index] in rules.ignore_tags:
            end = closer.get(index, len(pieces) - 1) if event.kind == "start" else index
            whole = "".join(raw for _, raw in pieces[index : end + 1])
            if inline(index):
                builder.inline(MARKUP_STANDALONE, whole)
            else:
                builder.raw(whole)
            index = end + 1
            continue
        if event.kind == "start" and index in closer and inline(index):
            whole = "".join(raw for _, raw in pieces[index : closer[index] + 1])
            if not has_chinese(whole):  # code such as XLIFF's <bpt>&lt;b&gt;</bpt>: nothing to translate in it
                builder.inline(MARKUP_STANDALONE, whole)
                index = closer[index] + 1
                continue
        if event.kind == "data":
            builder.text(raw)
        elif event.kind == "entity":
            builder.inline(MARKUP_STANDALONE, raw)
        elif event.kind in ("start", "startend") and inline(index):
            builder.inline(MARKUP_OPEN if event.kind == "start" else MARKUP_STANDALONE, raw)
        elif event.kind == "end" and index in opener and inline(opener[index]):
            builder.inline(MARKUP_CLOSE, raw)
        elif event.kind == "other" and builder.in_block:
            builder.inline(MARKUP_STANDALONE, raw)
        else:
            builder.raw(raw)
        index += 1
    return builder.finish()


def _xml_name(event: _Event, raw: str) -> str:
    """A tag's name as written (XML names are case-sensitive; ``html.parser`` lowers them)."""
    found = _XML_NAME.match(raw) if event.kind in ("start", "startend", "end") else None
    return found.group(1) if found else ""


# --- DeepL's tag handling ----------------------------------------------------------------------------------------


def parse_tagged(text: str, tag_handling: str, rules: TagRules) -> MarkupDocument:
    """The blocks and layout of a text DeepL's way (``tag_handling`` html or xml, with DeepL's tag parameters)."""
    if tag_handling == "html":
        lowered = TagRules(
            frozenset(tag.lower() for tag in rules.ignore_tags),
            frozenset(tag.lower() for tag in rules.non_splitting_tags),
            frozenset(tag.lower() for tag in rules.splitting_tags),
            rules.outline_detection,
        )
        return _parse_html(text, lowered)
    if tag_handling == "xml":
        return _parse_xml(text, rules)
    raise InvalidRequestError(f"tag_handling must be one of {', '.join(TAGGED_FORMATS)}; got {tag_handling!r}")


def translate_tagged(
    texts: Sequence[str], tag_handling: str, rules: TagRules, translate: Callable[[list[str]], list[str]]
) -> list[str]:
    """Each text translated with its markup kept: ``translate`` receives the blocks of all texts at once (plain text
    whose inline markup is private-use characters, which the translation pipeline protects)."""
    documents = [parse_tagged(text, tag_handling, rules) for text in texts]
    blocks = [block for document in documents for block in document.blocks]
    translations = translate(blocks) if blocks else []
    out = []
    position = 0
    for document in documents:
        out.append(document.rebuild(translations[position : position + len(document.blocks)]))
        position += len(document.blocks)
    return out


# --- Markdown ----------------------------------------------------------------------------------------------------


def _markdown_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt  # on the first Markdown request, not at cold start

    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    parser.disable("text_join")  # entities and escapes stay tokens of their own (their source is not their text)
    return parser


_SEARCHED = ("text", "code_inline", "text_special", "softbreak", "hardbreak")


def _inline_mask(content: str, children: Sequence[object]) -> tuple[list[bool], list[int]]:
    """For each character of an inline token's source: whether it is text to translate, and for markup what kind
    of markup character it becomes (opening: emphasis or link starts; closing: they end; standalone: the rest)."""
    mask = [False] * len(content)
    kinds = [MARKUP_STANDALONE] * len(content)
    cursor = 0
    pending: set[str] = set()

    def mark(end: int) -> None:
        kind = MARKUP_STANDALONE
        if pending == {"open"}:
            kind = MARKUP_OPEN
        elif pending == {"close"}:
            kind = MARKUP_CLOSE
        kinds[cursor:end] = [kind] * (end - cursor)
        pending.clear()

    for child in children:
        kind = getattr(child, "type", "")
        if kind.endswith("_open"):
            pending.add("open")
        elif kind.endswith("_close"):
            pending.add("close")
        if kind not in _SEARCHED:
            if kind not in ("softbreak",) and not kind.endswith(("_open", "_close")):
                pending.add("other")
            continue
        if kind in ("text", "code_inline"):
            needle = getattr(child, "content", "")
        elif kind == "text_special":
            needle = getattr(child, "markup", "") or getattr(child, "content", "")
        else:
            needle = "\n" if kind == "softbreak" else ""
        if not needle:
            continue
        found = content.find(needle, cursor)
        if found < 0:
            break  # the rest stays as it is
        if kind == "text":
            mark(found)
            mask[found : found + len(needle)] = [True] * len(needle)
        else:
            pending.add("other")
            continue  # code and escapes join the markup around them
        cursor = found + len(needle)
    mark(len(content))
    return mask, kinds


def _parse_markdown(source: str) -> MarkupDocument:
    builder = _Builder(source)
    line_starts = [0] + [match.end() for match in re.finditer("\n", source)]
    regions: list[tuple[int, str, list[bool], list[int]]] = []  # (source offset, source text, mask, kinds)
    line_cursor: dict[int, int] = {}
    for token in _markdown_parser().parse(source):
        if token.type != "inline" or token.map is None or not token.content:
            continue
        mask, kinds = _inline_mask(token.content, token.children or [])
        offset = 0
        for number, line in enumerate(token.content.split("\n")):
            line_number = token.map[0] + number
            line_mask = mask[offset : offset + len(line)]
            line_kinds = kinds[offset : offset + len(line)]
            offset += len(line) + 1
            if line_number >= len(line_starts) or not line:
                continue
            line_start = line_starts[line_number]
            line_end = line_starts[line_number + 1] - 1 if line_number + 1 < len(line_starts) else len(source)
            found = source.find(line, line_start + line_cursor.get(line_number, 0), line_end)
            if found < 0:
                continue  # not where the parser says (e.g. tabs): leave the line untranslated
            line_cursor[line_number] = found + len(line) - line_start
            # spaces around the text are layout, not markup to carry through the translation
            lead = len(line) - len(line.lstrip())
            trail = len(line.rstrip())
            if lead < trail:
                regions.append((found + lead, line[lead:trail], line_mask[lead:trail], line_kinds[lead:trail]))
    position = 0
    for start, text, mask, kinds in sorted(regions):
        if start < position:
            continue
        builder.raw(source[position:start])
        _markdown_region(builder, text, mask, kinds)
        builder.flush()
        position = start + len(text)
    builder.raw(source[position:])
    document = builder.finish()
    document.layout = [part for part in document.layout if part != ""]
    return document


def _markdown_region(builder: _Builder, text: str, mask: list[bool], kinds: list[int]) -> None:
    for start, end, is_text in _runs(mask):
        if is_text:
            builder.text(text[start:end])
        else:
            builder.inline(kinds[start], text[start:end])


def _runs(mask: Sequence[bool]) -> list[tuple[int, int, bool]]:
    runs: list[tuple[int, int, bool]] = []
    for index, value in enumerate(mask):
        if runs and runs[-1][2] == value:
            runs[-1] = (runs[-1][0], index + 1, value)
        else:
            runs.append((index, index + 1, value))
    return runs


# --- skeletons ---------------------------------------------------------------------------------------------------


def skeleton(text: str, format: str) -> list[str]:
    """The markup of ``text``: HTML tags (``alt``/``title`` values blanked), entities and comments; for Markdown
    every token's type and markup plus code and link targets. Two documents with equal skeletons differ in text."""
    if format == "html":
        out = []
        for event, raw in _html_pieces(text):
            if event.kind == "data":
                continue
            if event.kind in ("start", "startend"):
                raw = _blank_attributes(raw)
            out.append(raw)
        return out
    if format == "markdown":
        out = []
        for token in _markdown_parser().parse(text):
            out.append(f"{token.type}:{token.markup}:{token.info}:{dict(token.attrs or {})}")
            if token.type in ("fence", "code_block", "html_block"):
                out.append(token.content)
            for child in token.children or []:
                if child.type in ("text", "softbreak"):
                    continue
                content = child.content if child.type in ("code_inline", "html_inline", "text_special") else ""
                attrs = {k: v for k, v in (child.attrs or {}).items() if k != "alt"}
                out.append(f"  {child.type}:{child.markup}:{content}:{attrs}")
        return out
    return []


def _blank_attributes(raw: str) -> str:
    def blank(match: re.Match[str]) -> str:
        name = match.group(1) or ""
        if name.lower() in TRANSLATED_ATTRIBUTES and match.group(3) is not None:
            return f"{name}=… "
        return match.group()

    return _ATTRIBUTE.sub(blank, raw)
