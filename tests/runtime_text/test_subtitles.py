"""Subtitles (``handler.formats.subtitles``): parsing, sentences over cues, redistribution, wrapping, and whole files
through the shipped default model (structure only: no wording is asserted)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handler.errors import InvalidRequestError
from handler.formats import translate_file
from handler.formats.encodings import decode_text
from handler.formats.subtitles import (
    CONTINUATION,
    MAX_LINE_CHARS,
    group_sentences,
    parse_track,
    part_cuts,
    redistribute,
    sentence_source,
    translate_subtitles,
    wrap,
)
from handler.text.parts import plan_parts_at
from tests.fuzz.shipped import needs_shipped_bundle, shipped_service
from tests.subtitle_samples import SAMPLES, SRT, VTT, check_translation, crlf, long_srt, shape


# --- parsing ------------------------------------------------------------------------------------------------------
def test_srt_cues_keep_their_text_offsets_and_timing_lines() -> None:
    track = parse_track(SRT, "srt")
    assert len(track.cues) == 9
    first = track.cues[0]
    assert (first.start, first.end, first.timing) == (1.0, 2.5, "00:00:01,000 --> 00:00:02,500")
    assert SRT[first.text_start : first.text_end] == "我昨天和朋友一起去了"
    assert track.cues[4].timing.endswith("X1:100 X2:600 Y1:20 Y2:80")
    assert track.cues[8].lines == ("<i>今天天气很好，</i>", "<i>我们去公园散步吧。</i>")


def test_vtt_header_note_style_region_are_not_cues() -> None:
    track = parse_track(VTT, "vtt")
    assert len(track.cues) == 6
    assert [cue is None for *_, cue in track.blocks][:4] == [True, True, True, True]  # header, STYLE, NOTE, REGION
    assert track.cues[0].timing == "00:01.000 --> 00:02.500 align:start position:10%"
    assert track.cues[0].start == 1.0 and track.cues[1].start == 2.6


def test_crlf_cues_use_the_files_line_ending() -> None:
    track = parse_track(crlf(SRT), "srt")
    assert len(track.cues) == 9 and {cue.newline for cue in track.cues} == {"\r\n"}


@pytest.mark.parametrize(
    ("text", "fmt", "pattern"),
    [
        ("1\n00:00:01,000 -> 00:00:02,000\n你好\n", "srt", r"line 2 should be a timing line"),
        ("1\n00:00:01,000 --> 00:00:02,000\n你好\n\n2\n00:00:61,000 --> 00:01:02,000\n好\n", "srt", r"line 6"),
        ("你好\n世界\n", "srt", r"line 1 should be a timing line"),
        ("00:01.000 --> 00:02.000\n你好\n", "vtt", r"first line must be 'WEBVTT'"),
        ("", "vtt", r"it is empty"),
        ("WEBVTT\n\n00:01,000 --> 00:02,000\n你好\n", "vtt", r"line 3 should be a timing line like '00:00:01.000"),
    ],
)
def test_a_corrupt_file_is_refused_with_the_line(text: str, fmt: str, pattern: str) -> None:
    with pytest.raises(InvalidRequestError, match=pattern):
        parse_track(text, fmt)


def test_binary_data_is_refused_before_parsing() -> None:
    with pytest.raises(InvalidRequestError, match="binary"):
        decode_text(b"1\n00:00:01,000 --> 00:00:02,000\n\x00\x01\x02\xff\xfe", "film.srt")


# --- sentences over cues --------------------------------------------------------------------------------------
def test_a_sentence_over_three_cues_is_one_sentence() -> None:
    sentences = group_sentences(parse_track(SRT, "srt"))
    sources = [sentence_source(sentence) for sentence in sentences]
    assert sources[0] == "我昨天和朋友一起去了北京的一家非常有名的饭馆。"
    assert [piece.cue for piece in sentences[0]] == [0, 1, 2]
    # a dialogue line starts a sentence; a cue without Chinese is a sentence of its own (kept as it is)
    assert "你叫什么名字？" in sources and "我叫小明，我是从上海来的学生。" in sources and "♪ ♪" in sources


def test_sentence_ends_inside_a_cue_and_pauses_are_boundaries() -> None:
    text = (
        "1\n00:00:01,000 --> 00:00:02,000\n好的。我们\n\n"
        "2\n00:00:02,100 --> 00:00:03,000\n走吧\n\n"
        "3\n00:00:09,000 --> 00:00:10,000\n去公园\n"  # six seconds later: a new sentence
    )
    sentences = group_sentences(parse_track(text, "srt"))
    assert [sentence_source(s) for s in sentences] == ["好的。", "我们走吧", "去公园"]
    assert [[p.cue for p in s] for s in sentences] == [[0], [0, 1], [2]]


def test_a_sentence_without_an_end_is_cut_after_five_cues() -> None:
    text = "\n".join(f"{n}\n00:00:{n:02d},000 --> 00:00:{n:02d},900\n第{n}个\n" for n in range(1, 12))
    sentences = group_sentences(parse_track(text, "srt"))
    assert [len(s) for s in sentences] == [5, 5, 1]


# --- redistribution and wrapping ------------------------------------------------------------------------------
def test_redistribution_follows_the_source_lengths_at_word_boundaries() -> None:
    english = "I went to a very famous restaurant in Beijing with my friends yesterday"
    parts = redistribute(english, [10, 5, 8])
    assert " ".join(parts) == english and all(parts)
    lengths = [len(part) for part in parts]
    total = sum(lengths)
    for length, weight in zip(lengths, [10, 5, 8], strict=True):
        assert abs(length / total - weight / 23) < 0.15
    assert redistribute("a b c d", [1, 1, 1, 1]) == ["a", "b", "c", "d"]
    assert redistribute("Yes", [9]) == ["Yes"]


def test_fewer_words_than_cues_leaves_no_cue_empty() -> None:
    parts = redistribute("Okay.", [3, 3, 3])
    assert parts.count("Okay.") == 1 and all(parts) and set(parts) <= {"Okay.", CONTINUATION}
    assert redistribute("", [2, 2]) == [CONTINUATION, CONTINUATION]


def test_wrap_keeps_lines_under_the_maximum_and_balanced() -> None:
    text = "My name is Xiao Ming and I am a student who came here from Shanghai last year"
    lines = wrap(text)
    assert " ".join(lines) == text and len(lines) == 2
    assert all(len(line) <= MAX_LINE_CHARS for line in lines)
    assert abs(len(lines[0]) - len(lines[1])) <= 8  # balanced, not one full line and a short one
    assert wrap("short line") == ["short line"]
    assert wrap("a" * 50 + " b") == ["a" * 50, "b"]  # a word longer than the maximum stays whole
    assert all(len(re.sub(r"<[^>]*>", "", line)) <= 20 for line in wrap("<i>one two three four five six</i>", 20))


# --- parts for the fan-out -----------------------------------------------------------------------------------
def test_parts_are_cut_only_between_sentences() -> None:
    text = long_srt(60)
    track = parse_track(text, "srt")
    lead, parts = plan_parts_at(text, 200, part_cuts(track))
    assert lead + "".join(p.text + p.separator for p in parts) == text and len(parts) > 3
    sentence_of = {p.cue: n for n, s in enumerate(group_sentences(track)) for p in s}
    at = 0
    boundaries = []
    for part in parts[:-1]:
        at += len(part.text) + len(part.separator)
        boundaries.append(at)
    starts = [text.index(cue.timing) for cue in track.cues]
    for boundary in boundaries:
        before = max(i for i, start in enumerate(starts) if start < boundary)
        after = before + 1
        assert sentence_of[before] != sentence_of[after]  # no sentence runs across a part boundary
        assert text[boundary - 2 : boundary] == "\n\n" or text[boundary - 1] == "\n"  # between cues


# --- whole files through the shipped model ----------------------------------------------------------------------
@needs_shipped_bundle
@pytest.mark.parametrize("name", list(SAMPLES))
@pytest.mark.parametrize("variant", ["lf", "crlf", "bom"])
def test_shipped_model_keeps_every_structural_element(name: str, variant: str) -> None:
    text, fmt = SAMPLES[name]
    source = crlf(text) if variant == "crlf" else text
    data = (b"\xef\xbb\xbf" if variant == "bom" else b"") + source.encode("utf-8")
    decoded, _ = decode_text(data, name)
    translation = translate_file(decoded.encode("utf-8"), name, shipped_service()).data.decode("utf-8")
    assert check_translation(source, translation, fmt) == []
    assert len(shape(translation, fmt).cues) == len(shape(source, fmt).cues)


@needs_shipped_bundle
def test_shipped_model_in_parts_equals_the_whole_file() -> None:
    text = long_srt(40)
    service = shipped_service()
    whole = translate_subtitles(service.translate_document, text, "srt")
    _, parts = plan_parts_at(text, 300, part_cuts(parse_track(text, "srt")))
    assert len(parts) > 2
    translate = service.translate_document
    pieces = [translate_subtitles(translate, p.text, "srt", fragment=i > 0) + p.separator for i, p in enumerate(parts)]
    assert "".join(pieces) == whole == translate_file(text.encode("utf-8"), "x.srt", service).data.decode("utf-8")
    assert check_translation(text, whole, "srt") == []


# --- any file: structure kept whatever the translator answers ---------------------------------------------------
def _english_of(document: str) -> str:
    """A stand-in translator: per line, as many words as the line has characters divided by three (0 to many)."""
    return "\n".join(" ".join(["word"] * (len(line) // 3)) for line in document.split("\n"))


_CUE_TEXTS = st.lists(
    st.sampled_from(
        [
            "好的。",
            "我们",
            "去公园",
            "散步吧。",
            "<i>太贵了！</i>",
            "{\\an8}你好",
            "- 你是谁？",
            "♪ ♪",
            "很好，",
            "真的吗",
        ]
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_CUE_TEXTS, min_size=1, max_size=12), st.booleans(), st.sampled_from(["srt", "vtt"]))
def test_any_file_keeps_its_structure_and_no_cue_is_left_empty(cues: list[list[str]], windows: bool, fmt: str) -> None:
    comma = "," if fmt == "srt" else "."
    blocks = ["WEBVTT\n\nNOTE 注释"] if fmt == "vtt" else []
    for number, lines in enumerate(cues):
        timing = f"00:00:{number * 2:02d}{comma}000 --> 00:00:{number * 2 + 1:02d}{comma}500"
        blocks.append(f"{number + 1}\n{timing}\n" + "\n".join(lines))
    text = "\n\n".join(blocks) + "\n"
    text = crlf(text) if windows else text
    translation = translate_subtitles(_english_of, text, fmt)
    assert check_translation(text, translation, fmt) == []
