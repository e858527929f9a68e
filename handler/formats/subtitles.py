"""Subtitles (``.srt``, ``.vtt``): translate the cue text, keep everything else byte for byte.

Steps:

1. **parse** the file into blocks (``parse_track``): SRT cues (optional number line, timing line, text lines),
   WebVTT's header, ``NOTE``, ``STYLE`` and ``REGION`` blocks and cues (optional identifier, timing line with its
   settings, payload). A block that should be a cue but has no valid timing line is an ``InvalidRequestError``
   naming the line. Only the offsets of each cue's text are kept: the output is the source with those stretches
   replaced, so numbers, timings, settings, headers and notes cannot change.
2. **sentences over cues** (``group_sentences``): each cue's lines are cut into pieces at sentence ends; consecutive
   pieces form one sentence until a piece ends one (``。！？!?…``), a dialogue line starts (``- ``), the next cue
   starts more than ``MAX_GAP_SECONDS`` later, the sentence already spans ``MAX_SENTENCE_CUES`` cues, or a piece
   without Chinese comes (kept as it is). A sentence over three cues is translated once, whole.
3. **translate** every sentence in one call of the caller's document translator (one sentence per line; the
   storage layer passes the service's ``translate_document``, so deadline, progress and the translation memory
   work as for any file).
4. **redistribute** (``redistribute``) each sentence's English over its pieces in proportion to their source
   length, cut at word boundaries, at least one word per piece (a cue that had text never comes back empty: with
   fewer words than pieces the rest get ``…``); nothing crosses a sentence boundary.
5. **rebuild**: each cue's English wrapped at word boundaries to at most ``MAX_LINE_CHARS`` visible characters per
   line (balanced lines), its leading/trailing tags (``<i>``, ``{\\an8}``, ``<font …>``) and dialogue dashes put
   back, spliced into the source; the result is parsed again and must have the same cues and timing lines.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from handler.errors import InvalidRequestError, TranslatorError
from handler.formats.base import FileTranslator, TextFormat
from handler.text.parts import Part, plan_parts_at
from handler.text.spans import has_chinese

SUBTITLE_FORMATS = ("srt", "vtt")
MAX_LINE_CHARS = 42  # visible characters per output line (tags not counted), the common broadcast guideline
MAX_SENTENCE_CUES = 5  # a sentence without an end mark is cut after this many cues
MAX_GAP_SECONDS = 2.0  # a pause longer than this between two cues ends a sentence
CONTINUATION = "…"  # what a cue gets when its sentence's English has fewer words than the sentence has pieces

_LINE = re.compile(r"([^\r\n]*)(\r\n|\n|\r|$)")
_SRT_TIME = r"(\d{1,3}):([0-5]\d):([0-5]\d)[,.](\d{1,3})"
_SRT_TIMING = re.compile(rf"[ \t]*{_SRT_TIME}[ \t]*-->[ \t]*{_SRT_TIME}(?:[ \t].*)?")
_VTT_TIME = r"(?:(\d{2,}):)?([0-5]\d):([0-5]\d)\.(\d{3})"
_VTT_TIMING = re.compile(rf"[ \t]*{_VTT_TIME}[ \t]+-->[ \t]+{_VTT_TIME}(?:[ \t].*)?")
_TIMING_LIKE = re.compile(r"[ \t]*\d[\d:.,]*[ \t]*-+>")
_VTT_HEADER = re.compile(r"WEBVTT(?:[ \t].*)?")
_VTT_KEPT_BLOCK = re.compile(r"(?:NOTE|STYLE|REGION)(?:[ \t].*)?")
_TAG = r"(?:\{\\[^{}\r\n]*\}|<[^<>\r\n]+>)"
_LEAD = re.compile(rf"(?:{_TAG}|[ \t])*")
_DASH = re.compile(r"[-‐–—][ \t]*")
_TRAIL = re.compile(r"(?:</[^<>\r\n]+>|\{\\[^{}\r\n]*\}|[ \t])*$")
_ANY_TAG = re.compile(_TAG)
_OVERRIDE = re.compile(r"\{\\[^{}\r\n]*\}")
_SENTENCE_END = re.compile(r"(?:[。！？!?；;…⋯]+|\.(?=\s|$))[”’」』）)\"']*\s*")
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")


@dataclass(frozen=True)
class Cue:
    """One cue: its times (seconds), the offsets of its text in the source, its text lines, its line ending."""

    start: float
    end: float
    text_start: int
    text_end: int
    lines: tuple[str, ...]
    newline: str
    timing: str  # the timing line as written (settings included)


@dataclass(frozen=True)
class Track:
    """A parsed subtitle file: its cues and, for cutting into parts, where each block starts and its text ends."""

    format: str
    source: str
    cues: tuple[Cue, ...]
    blocks: tuple[tuple[int, int, int | None], ...]  # (start, end of its last line's text, cue index or None)


@dataclass(frozen=True)
class Turn:
    """The lines of one speaker in one cue: the prefix (tags, dash) and suffix kept, the text to translate."""

    prefixes: tuple[str, ...]
    suffixes: tuple[str, ...]
    text: str
    dash: bool


@dataclass(frozen=True)
class Piece:
    """A stretch of one turn's text that lies in one sentence."""

    cue: int
    turn: int
    text: str
    ends_sentence: bool
    starts_turn: bool


def _time(hours: str | None, minutes: str, seconds: str, fraction: str) -> float:
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds) + int(fraction.ljust(3, "0")) / 1000


def _lines(text: str, offset: int = 0) -> list[tuple[int, str, str]]:
    """``(start, line, ending)`` for every line of ``text``."""
    found = []
    for match in _LINE.finditer(text):
        if match.start() == len(text) and not match.group(0):
            break
        found.append((offset + match.start(), match.group(1), match.group(2)))
    return found


def parse_track(text: str, fmt: str, *, fragment: bool = False, name: str = "the file") -> Track:
    """The cues of ``text`` (``fmt``: ``srt`` or ``vtt``; ``fragment``: a WebVTT part after the first, no header)."""
    if fmt not in SUBTITLE_FORMATS:
        raise InvalidRequestError(f"unknown subtitle format {fmt!r}; use one of {', '.join(SUBTITLE_FORMATS)}")
    lines = _lines(text)
    if fmt == "vtt" and not fragment:
        if not lines or not _VTT_HEADER.fullmatch(lines[0][1].lstrip("\ufeff")):
            raise InvalidRequestError(
                f"{name} is not WebVTT: its first line must be 'WEBVTT' (optionally followed by a space and a "
                f"title); found {lines[0][1][:40]!r}"
                if lines
                else f"{name} is not WebVTT: it is empty, and a WebVTT file starts with the line 'WEBVTT'"
            )
    blocks: list[list[tuple[int, str, str]]] = []
    current: list[tuple[int, str, str]] = []
    for line in lines:
        if line[1].strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    cues: list[Cue] = []
    spans: list[tuple[int, int, int | None]] = []
    timing = _SRT_TIMING if fmt == "srt" else _VTT_TIMING
    example = "00:00:01,000 --> 00:00:04,000" if fmt == "srt" else "00:00:01.000 --> 00:00:04.000"
    for number, block in enumerate(blocks):
        block_span = (block[0][0], block[-1][0] + len(block[-1][1]))
        if fmt == "vtt" and (
            (number == 0 and not fragment) or _VTT_KEPT_BLOCK.fullmatch(block[0][1]) and "-->" not in block[0][1]
        ):
            spans.append((*block_span, None))
            continue
        first = block[0][1]
        # SRT: a cue number, then the timing line; WebVTT: an optional identifier (never holding "-->") before it
        has_label = "-->" not in first and (fmt == "vtt" or first.strip().lstrip("\ufeff").isdigit())
        if timing.fullmatch(first):
            at = 0
        elif len(block) > 1 and timing.fullmatch(block[1][1]) and has_label:
            at = 1
        else:
            looks_timed = _TIMING_LIKE.match(first) is not None  # a broken timing line, not an identifier
            bad = block[1] if len(block) > 1 and has_label and not looks_timed else block[0]
            line_number = bisect.bisect_right([start for start, _, _ in lines], bad[0])
            raise InvalidRequestError(
                f"{name} is not valid {'SRT' if fmt == 'srt' else 'WebVTT'}: line {line_number:,} should be a "
                f"timing line like "
                f"'{example}' but is {bad[1][:60]!r}; nothing was translated"
            )
        match = timing.fullmatch(block[at][1])
        assert match is not None
        groups = match.groups()
        start, end = _time(*groups[0:4]), _time(*groups[4:8])
        payload = block[at + 1 :]
        if payload:
            text_start, text_end = payload[0][0], payload[-1][0] + len(payload[-1][1])
        else:
            text_start = text_end = block[at][0] + len(block[at][1])
        newline = block[at][2] or "\n"
        cues.append(Cue(start, end, text_start, text_end, tuple(line for _, line, _ in payload), newline, block[at][1]))
        spans.append((*block_span, len(cues) - 1))
    return Track(fmt, text, tuple(cues), tuple(spans))


# --- turns, pieces and sentences -------------------------------------------------------------------------------
def _split_line(line: str) -> tuple[str, str, str, bool]:
    """``(prefix, body, suffix, dash)``: leading tags (and a dialogue dash), the text, trailing tags."""
    lead = _LEAD.match(line)
    assert lead is not None
    at = lead.end()
    dash = _DASH.match(line, at)
    if dash is not None and dash.end() < len(line):
        more = _LEAD.match(line, dash.end())
        assert more is not None
        at = more.end()
    trail = _TRAIL.search(line, at)
    end = trail.start() if trail is not None else len(line)
    # an override tag inside the line ({\i1}) would reach the model unprotected: it moves to the line's start
    inner = "".join(_OVERRIDE.findall(line, at, end))
    body = _OVERRIDE.sub("", line[at:end])
    return line[:at] + inner, body, line[end:], dash is not None and dash.end() < len(line)


def _joined(left: str, right: str) -> str:
    if not left or not right:
        return left + right
    if _HAN.match(left[-1]) or _HAN.match(right[0]) or left[-1] in "，。！？、：；" or right[0] in "，。！？、：；":
        return left + right
    return left + " " + right


def cue_turns(cue: Cue) -> list[Turn]:
    """The turns of a cue: a dialogue dash starts a new one, other lines continue the current one."""
    turns: list[tuple[list[str], list[str], str, bool]] = []
    for line in cue.lines:
        prefix, body, suffix, dash = _split_line(line)
        if dash or not turns:
            turns.append(([prefix], [suffix], body.strip(), dash))
        else:
            prefixes, suffixes, text, was_dash = turns[-1]
            prefixes.append(prefix)
            suffixes.append(suffix)
            turns[-1] = (prefixes, suffixes, _joined(text, body.strip()), was_dash)
    return [Turn(tuple(p), tuple(s), text, dash) for p, s, text, dash in turns]


def _pieces(turn: Turn, cue: int, number: int) -> list[Piece]:
    pieces = []
    at = 0
    for match in _SENTENCE_END.finditer(turn.text):
        if match.end() > at and match.start() > at:
            pieces.append(Piece(cue, number, turn.text[at : match.end()].strip(), True, at == 0))
            at = match.end()
    if turn.text[at:].strip():
        pieces.append(Piece(cue, number, turn.text[at:].strip(), False, at == 0))
    return pieces


def group_sentences(track: Track) -> list[list[Piece]]:
    """The sentences of a track: runs of pieces, each translated as one text."""
    sentences: list[list[Piece]] = []
    current: list[Piece] = []
    previous_cue: Cue | None = None
    for index, cue in enumerate(track.cues):
        for number, turn in enumerate(cue_turns(cue)):
            for piece in _pieces(turn, index, number):
                if current:
                    last = current[-1]
                    cues = {p.cue for p in current}
                    new_cue = piece.cue != last.cue
                    gap = cue.start - previous_cue.end if previous_cue is not None and new_cue else 0.0
                    if (
                        last.ends_sentence
                        or (piece.starts_turn and turn.dash)
                        or not has_chinese(piece.text)
                        or not has_chinese(last.text)
                        or (new_cue and (gap > MAX_GAP_SECONDS or len(cues) >= MAX_SENTENCE_CUES))
                        or (piece.turn != last.turn and not new_cue)
                    ):
                        sentences.append(current)
                        current = []
                current.append(piece)
        if cue.lines:
            previous_cue = cue
    if current:
        sentences.append(current)
    return sentences


def sentence_source(sentence: Sequence[Piece]) -> str:
    text = ""
    for piece in sentence:
        text = _joined(text, piece.text)
    return text


# --- redistribution and wrapping ---------------------------------------------------------------------------------
def redistribute(english: str, weights: Sequence[int]) -> list[str]:
    """``english`` cut at word boundaries into ``len(weights)`` pieces in proportion to ``weights``, none empty."""
    count = len(weights)
    words = english.split()
    if count == 1:
        return [" ".join(words) or CONTINUATION]
    total_weight = sum(max(1, w) for w in weights) or 1
    if len(words) < count:  # each word to the piece at its place in the source; the others continue the sentence
        shares: list[list[str]] = [[] for _ in weights]
        bounds = _cumulative([max(1, w) for w in weights])
        for number, word in enumerate(words):
            position = (number + 0.5) / len(words) * total_weight
            target = next(i for i, bound in enumerate(bounds) if position <= bound)
            while shares[target] and target + 1 < count:
                target += 1
            shares[target].append(word)
        return [" ".join(share) or CONTINUATION for share in shares]
    starts = []
    position = 0
    for word in words:
        starts.append(position)
        position += len(word) + 1
    length = position - 1
    cuts = [0]
    cumulative = _cumulative([max(1, w) for w in weights])
    for boundary in range(1, count):
        aim = length * cumulative[boundary - 1] / total_weight
        low, high = cuts[-1] + 1, len(words) - (count - boundary)
        cuts.append(min(range(low, high + 1), key=partial(_distance, starts, aim)))
    cuts.append(len(words))
    return [" ".join(words[cuts[i] : cuts[i + 1]]) for i in range(count)]


def _distance(starts: Sequence[int], aim: float, word: int) -> tuple[float, int]:
    return abs(starts[word] - aim), word


def _cumulative(values: Sequence[int]) -> list[int]:
    running, found = 0, []
    for value in values:
        running += value
        found.append(running)
    return found


def visible_length(line: str) -> int:
    return len(_ANY_TAG.sub("", line))


def _greedy(words: Sequence[str], width: int) -> list[str]:
    lines: list[str] = []
    for word in words:
        if lines and visible_length(lines[-1]) + 1 + visible_length(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def wrap(text: str, width: int = MAX_LINE_CHARS) -> list[str]:
    """``text`` in as few lines of at most ``width`` visible characters as fit, their lengths balanced; a word
    longer than ``width`` gets a line of its own."""
    words = text.split()
    if not words:
        return [""]
    lines = _greedy(words, width)
    total = sum(visible_length(word) for word in words) + len(words) - 1
    for narrower in range(max(1, math.ceil(total / len(lines))), width):
        balanced = _greedy(words, narrower)
        if len(balanced) == len(lines):
            return balanced
    return lines


# --- translation -------------------------------------------------------------------------------------------------
def translate_subtitles(
    translate_document: Callable[[str], str],
    text: str,
    fmt: str,
    *,
    fragment: bool = False,
    name: str = "the file",
) -> str:
    """The subtitle file ``text`` with its cue text in English and everything else as it was.

    ``translate_document`` translates a text of one sentence a line into as many lines (the service's
    ``translate_document`` with the file's options, deadline and progress: ``FileTranslator.lines``)."""
    track = parse_track(text, fmt, fragment=fragment, name=name)
    sentences = group_sentences(track)
    sources = [sentence_source(sentence) for sentence in sentences]
    wanted = [i for i, source in enumerate(sources) if has_chinese(source)]
    english: dict[int, str] = {}
    if wanted:
        output = translate_document("\n".join(sources[i] for i in wanted)).split("\n")
        if len(output) != len(wanted):
            raise TranslatorError(f"the translation of {name} has {len(output)} sentences, not {len(wanted)}")
        english = dict(zip(wanted, output, strict=True))
    shares: dict[tuple[int, int], list[str]] = {}
    for number, sentence in enumerate(sentences):
        if number in english:
            weights = [len(re.sub(r"\s", "", piece.text)) for piece in sentence]
            parts = redistribute(english[number], weights)
        else:
            parts = [piece.text for piece in sentence]
        for piece, part in zip(sentence, parts, strict=True):
            shares.setdefault((piece.cue, piece.turn), []).append(part)
    pieces: list[str] = []
    at = 0
    for index, cue in enumerate(track.cues):
        turns = cue_turns(cue)
        if not any(has_chinese(turn.text) for turn in turns):
            continue  # kept byte for byte
        lines: list[str] = []
        for number, turn in enumerate(turns):
            lines.extend(_turn_lines(turn, " ".join(shares.get((index, number), [])), fmt))
        pieces.append(text[at : cue.text_start])
        pieces.append(cue.newline.join(lines))
        at = cue.text_end
    pieces.append(text[at:])
    result = "".join(pieces)
    _check_same_cues(track, result, fragment, name)
    return result


def _turn_lines(turn: Turn, english: str, fmt: str) -> list[str]:
    english = re.sub(r"-->", "->", english)
    if not english.strip():
        return (
            [p + s for p, s in zip(turn.prefixes, turn.suffixes, strict=True)]
            if not turn.text
            else [turn.prefixes[0] + CONTINUATION + "".join(turn.suffixes)]
        )
    dash = _DASH.search(turn.prefixes[0]) if turn.dash else None
    width = MAX_LINE_CHARS - (len(dash.group()) if dash else 0)
    wrapped = wrap(english, width)
    if len(set(turn.prefixes)) == 1 and len(set(turn.suffixes)) == 1 and len(turn.prefixes) > 1:
        return [turn.prefixes[0] + line + turn.suffixes[0] for line in wrapped]
    prefix = turn.prefixes[0] + "".join(_ANY_TAG.findall("".join(turn.prefixes[1:])))
    suffix = "".join(_ANY_TAG.findall("".join(turn.suffixes[:-1]))) + turn.suffixes[-1]
    wrapped[0] = prefix + wrapped[0]
    wrapped[-1] = wrapped[-1] + suffix
    return wrapped


def _check_same_cues(track: Track, result: str, fragment: bool, name: str) -> None:
    again = parse_track(result, track.format, fragment=fragment, name=name)
    if [cue.timing for cue in again.cues] != [cue.timing for cue in track.cues]:
        raise TranslatorError(f"the translation of {name} would not keep its cues; nothing was written")
    for before, after in zip(track.cues, again.cues, strict=True):
        if any(line.strip() for line in before.lines) and not any(line.strip() for line in after.lines):
            raise TranslatorError(f"the translation of {name} would leave a cue empty; nothing was written")


def part_cuts(track: Track) -> list[tuple[int, int]]:
    """Where a track may be cut into parts: the blank lines between two blocks with no sentence across them."""
    sentence_of: dict[int, int] = {}
    for number, sentence in enumerate(group_sentences(track)):
        for piece in sentence:
            sentence_of[piece.cue] = number
    sentences = [sentence_of.get(cue) if cue is not None else None for _, _, cue in track.blocks]
    before: list[int | None] = []  # the sentence of the last cue at or before each block
    for found in sentences:
        before.append(found if found is not None else (before[-1] if before else None))
    after: list[int | None] = []  # the sentence of the first cue at or after each block
    for found in reversed(sentences):
        after.append(found if found is not None else (after[-1] if after else None))
    after.reverse()
    cuts = []
    for index in range(len(track.blocks) - 1):
        if before[index] is None or after[index + 1] is None or before[index] != after[index + 1]:
            cuts.append((track.blocks[index][1], track.blocks[index + 1][0]))
    return cuts


class Subtitles(TextFormat):
    """SubRip (``.srt``) or WebVTT (``.vtt``): cue text translated sentence by sentence across cues, numbers,
    timings, settings and headers kept; the fan-out cuts only between cues no sentence runs across, and a WebVTT
    part after the first is a fragment (no header)."""

    def __init__(self, name: str, suffix: str, content_type: str) -> None:
        self.name = name
        self.suffixes = (suffix,)
        self.content_type = content_type

    @property
    def service_format(self) -> str | None:
        return None

    def translate_text(self, text: str, translator: FileTranslator, name: str) -> str:
        return translate_subtitles(translator.lines, text, self.name, name=name)

    def cut(self, text: str, max_chars: int, name: str) -> tuple[str, list[Part]] | None:
        # a corrupt file is refused here, before anything is planned
        return plan_parts_at(text, max_chars, part_cuts(parse_track(text, self.name, name=name)))

    def translate_part(self, text: str, index: int, translator: FileTranslator) -> str:
        return translate_subtitles(translator.lines, text, self.name, fragment=index > 0)


SRT = Subtitles("srt", ".srt", "application/x-subrip; charset=utf-8")
VTT = Subtitles("vtt", ".vtt", "text/vtt; charset=utf-8")
