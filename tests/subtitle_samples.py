"""Subtitle files for the tests, and an independent check of what a translation of one must keep.

The check does not use ``handler.formats.subtitles``: it cuts a file at blank lines itself, and compares every line of
every block that is not cue text (numbers, identifiers, timing lines with their settings, the WebVTT header, NOTE,
STYLE and REGION blocks) with the source's, byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from handler.formats.subtitles import MAX_LINE_CHARS

SRT = (
    "1\n00:00:01,000 --> 00:00:02,500\n我昨天和朋友一起去了\n\n"
    "2\n00:00:02,600 --> 00:00:04,000\n北京的一家\n\n"
    "3\n00:00:04,100 --> 00:00:06,000\n非常有名的饭馆。\n\n"
    "4\n00:00:07,000 --> 00:00:08,000\n<i>好的。</i>\n\n"
    "5\n00:00:08,500 --> 00:00:10,000 X1:100 X2:600 Y1:20 Y2:80\n{\\an8}这个多少钱？\n\n"
    "6\n00:00:10,500 --> 00:00:13,000\n- 你叫什么名字？\n- 我叫小明，我是从上海来的学生。\n\n"
    "7\n00:00:14,000 --> 00:00:15,000\n好的。\n\n"
    "8\n00:00:16,000 --> 00:00:17,000\n♪ ♪\n\n"
    "9\n00:00:18,000 --> 00:00:21,000\n<i>今天天气很好，</i>\n<i>我们去公园散步吧。</i>\n"
)

VTT = (
    "WEBVTT - 电影字幕\nKind: captions\nLanguage: zh-Hans\n\n"
    "STYLE\n::cue {\n  color: yellow;\n}\n\n"
    "NOTE 这是注释，不翻译\n\n"
    "REGION\nid:bottom\nwidth:40%\n\n"
    "intro\n00:01.000 --> 00:02.500 align:start position:10%\n我昨天和朋友一起去了\n\n"
    "00:00:02.600 --> 00:00:04.000 line:0 size:50%\n北京的一家\n\n"
    "00:04.100 --> 00:06.000 region:bottom\n非常有名的饭馆。\n\n"
    "00:07.000 --> 00:08.000\n<i>太贵了！</i>\n\n"
    "NOTE\n两行的\n注释\n\n"
    "3\n00:09.000 --> 00:11.000 vertical:rl\n<v 小明>我是学生。</v>\n\n"
    "00:12.000 --> 00:14.000\n<c.yellow>今天天气很好，</c>\n我们去公园散步吧。\n"
)

SAMPLES = {"film.srt": (SRT, "srt"), "film.vtt": (VTT, "vtt")}

_TAG = re.compile(r"<[^<>]*>|\{\\[^{}]*\}")
_HAN = re.compile(r"[\u3400-\u9fff]")
_SRT_TIMING = re.compile(r"\d+:\d\d:\d\d,\d+ +--> +\d+:\d\d:\d\d,\d+.*")
_VTT_TIMING = re.compile(r"(?:\d+:)?\d\d:\d\d\.\d{3} +--> +(?:\d+:)?\d\d:\d\d\.\d{3}.*")


@dataclass(frozen=True)
class Shape:
    """A subtitle file's structure: every line that is not cue text, in order, and each cue's text lines."""

    kept: tuple[str, ...]
    cues: tuple[tuple[str, ...], ...]


def shape(text: str, fmt: str) -> Shape:
    text = text.removeprefix("\ufeff")
    timing = _SRT_TIMING if fmt == "srt" else _VTT_TIMING
    lines = text.splitlines(keepends=True)
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    kept: list[str] = []
    cues: list[tuple[str, ...]] = []
    for block in (b for b in blocks if b):
        at = next((i for i, line in enumerate(block[:2]) if timing.fullmatch(line.rstrip("\r\n"))), None)
        if at is None:
            kept.extend(block)
            continue
        kept.extend(block[: at + 1])
        cues.append(tuple(line.rstrip("\r\n") for line in block[at + 1 :]))
    return Shape(tuple(kept), tuple(cues))


def check_translation(source: str, translation: str, fmt: str, *, english: bool = True) -> list[str]:
    """What is wrong with ``translation`` of the subtitle file ``source`` (empty: nothing). ``english=False`` for
    the tests' tiny random model, whose output is not English: no check for Chinese left in the cue text."""
    before, after = shape(source, fmt), shape(translation, fmt)
    problems = []
    if before.kept != after.kept:
        problems.append(f"structure changed: {before.kept} != {after.kept}")
    if len(before.cues) != len(after.cues):
        problems.append(f"{len(before.cues)} cues became {len(after.cues)}")
    crlf = "\r\n" in source
    if crlf and "\n" in translation.replace("\r\n", ""):
        problems.append("a CRLF file got LF line endings")
    for number, (old, new) in enumerate(zip(before.cues, after.cues, strict=False), 1):
        visible = [_TAG.sub("", line) for line in new]
        if any(line.strip() for line in old) and not any(line.strip() for line in visible):
            problems.append(f"cue {number} is empty: {new}")
        if english and any(_HAN.search(line) for line in visible):
            problems.append(f"cue {number} still has Chinese: {new}")
        if any(len(line) > MAX_LINE_CHARS and " " in line.strip() for line in visible):
            problems.append(f"cue {number} has a line over {MAX_LINE_CHARS} characters: {new}")
        if not any(_HAN.search(_TAG.sub("", line)) for line in old) and old != new:
            problems.append(f"cue {number} had no Chinese but changed: {old} -> {new}")
        tags_before = _TAG.findall("".join(old))
        tags_after = _TAG.findall("".join(new))
        if set(tags_before) != set(tags_after):  # per-line italics repeat on as many lines as the English needs
            problems.append(f"cue {number} tags {tags_before} became {tags_after}")
    return problems


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def long_srt(cues: int) -> str:
    """An SRT file of ``cues`` cues, sentences over one to three cues, for the fan-out."""
    phrases = [
        ("我昨天和朋友一起去了", "北京的一家", "非常有名的饭馆。"),
        ("这个多少钱？",),
        ("今天天气很好，", "我们去公园散步吧。"),
        ("你叫什么名字？",),
        ("明天早上九点", "我们在图书馆门口", "见面好不好？"),
        ("太贵了！",),
        ("我从来没有", "见过这么美的地方。"),
    ]
    out = []
    number = 0
    while number < cues:
        for phrase in phrases:
            for piece in phrase:
                if number >= cues:
                    break
                start = number * 3
                out.append(
                    f"{number + 1}\n00:{start // 60:02d}:{start % 60:02d},000 --> "
                    f"00:{(start + 2) // 60:02d}:{(start + 2) % 60:02d},500\n{piece}\n"
                )
                number += 1
    return "\n".join(out)
