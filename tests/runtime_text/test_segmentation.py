"""Long text is cut into segments that fit the model, and translations are joined back with the layout."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handler.model.bundle import VOCAB_JSON
from handler.model.families.marian.tokenizer import SentencePieceTokenizer
from handler.text.segmentation import Document, split_document

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TOKENIZER_DIR = REPO_ROOT / "model_artifacts" / "training-checkpoint"
LINE_BREAK = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_TOKENS = re.compile(r"[^\x00-\x7f\s]|[!-~]{1,3}")


def simple_count(text: str) -> int:
    """One token per non-ASCII character, one per three ASCII characters, plus end-of-sequence."""
    return 1 + len(_TOKENS.findall(text))


def unbounded(text: str) -> Document:
    return split_document(text, simple_count, 10_000)


def texts(text: str, max_tokens: int = 10_000) -> list[str]:
    return split_document(text, simple_count, max_tokens).texts


def non_whitespace(text: str) -> str:
    return "".join(text.split())


# --- sentences ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("你好。我很好！你呢？", ["你好。", "我很好！", "你呢？"]),
        ("第一；第二;第三", ["第一；", "第二;", "第三"]),
        ("真的吗?是的!好", ["真的吗?", "是的!", "好"]),
        ("你说什么？！我不信。", ["你说什么？！", "我不信。"]),
        ("我想……算了。", ["我想……", "算了。"]),
        ("等等…好吧⋯⋯走吧", ["等等…", "好吧⋯⋯", "走吧"]),
        ("Wait... what? OK", ["Wait...", "what?", "OK"]),
        ("他说：“你好！”然后走了。", ["他说：“你好！”", "然后走了。"]),
        ("「走吧。」『好。』", ["「走吧。」", "『好。』"]),
        ("（这是括号里的话。）下一句。", ["（这是括号里的话。）", "下一句。"]),
        ('他说"你好。"然后走了。', ['他说"你好。"', "然后走了。"]),
        ("他说'好。'然后走了。", ["他说'好。'", "然后走了。"]),
        ("书名《三体。》很好。", ["书名《三体。》", "很好。"]),
        ("好。”。接着", ["好。”。", "接着"]),
        ("I use Python. 我也用。It works!", ["I use Python.", "我也用。", "It works!"]),
        ("圆周率是3.14。", ["圆周率是3.14。"]),
        ("圆周率是３．１４．下一句", ["圆周率是３．１４．", "下一句"]),
        ("第1.5版发布。2.0版呢？", ["第1.5版发布。", "2.0版呢？"]),
        ("Pi is 3.14, e is 2.72.", ["Pi is 3.14, e is 2.72."]),
        ("访问https://example.com/a.html?x=1;y=2!然后", ["访问https://example.com/a.html?x=1;y=2!", "然后"]),
        ("网址是 www.example.org. 请访问", ["网址是 www.example.org.", "请访问"]),
        (
            "Dr. Wang and Mr. Li met J. Smith, e.g. today. Then left.",
            ["Dr. Wang and Mr. Li met J. Smith, e.g. today.", "Then left."],
        ),
        ("It costs approx. ten yuan. ok", ["It costs approx. ten yuan. ok"]),
        ("Version 2.0 发布了。", ["Version 2.0 发布了。"]),
        ("(See above.) Next one.", ["(See above.)", "Next one."]),
        ("没有标点的一句话", ["没有标点的一句话"]),
        ("。。。", ["。。。"]),
        ("！开头", ["！", "开头"]),
    ],
)
def test_sentences(text: str, expected: list[str]) -> None:
    assert texts(text) == expected


def test_segments_are_slices_of_the_input() -> None:
    document = unbounded("  你好。 我很好！\n\n他说：“走！”  ")
    for segment in document.segments:
        assert document.source[segment.start : segment.end] == segment.text


# --- long sentences -----------------------------------------------------------------------------------------


def test_long_sentence_is_cut_at_clause_marks_and_packed() -> None:
    text = "第一部分比较长，第二部分、第三部分：第四部分也很长很长，最后一部分。"
    pieces = texts(text, max_tokens=16)
    assert pieces == ["第一部分比较长，第二部分、", "第三部分：第四部分也很长很长，", "最后一部分。"]
    assert all(simple_count(piece) <= 16 for piece in pieces)


def test_ascii_comma_and_colon_inside_numbers_are_not_clause_marks() -> None:
    text = "价格是1,000,000元，时间是10:30，地址http://a.cn:8080/x，结束了没有啊"
    pieces = texts(text, max_tokens=14)
    assert "".join(pieces) == text
    assert any("1,000,000" in piece for piece in pieces)
    assert any("10:30" in piece for piece in pieces)
    assert any("http://a.cn:8080/x" in piece for piece in pieces)


def test_long_english_clause_is_cut_between_words() -> None:
    text = "the quick brown fox jumps over the lazy dog and keeps running far away"
    pieces = texts(text, max_tokens=8)
    assert " ".join(pieces) == text
    assert all(simple_count(piece) <= 8 for piece in pieces)


def test_last_resort_cut_keeps_urls_and_numbers_whole_when_they_fit() -> None:
    text = "请访问网站地址https://example.com/path以及电话号码13800138000然后告诉我"
    pieces = texts(text, max_tokens=12)
    assert "".join(pieces) == text
    assert all(simple_count(piece) <= 12 for piece in pieces)
    assert any("https://example.com/path" in piece for piece in pieces)
    assert any("13800138000" in piece for piece in pieces)


def test_a_run_longer_than_the_budget_is_cut_inside() -> None:
    text = "x" * 100
    pieces = texts(text, max_tokens=10)
    assert "".join(pieces) == text
    assert all(simple_count(piece) <= 10 for piece in pieces)


def test_budget_too_small_for_one_character() -> None:
    with pytest.raises(ValueError, match=r"max_tokens=1 is too small: the single character '你' needs 2 tokens"):
        split_document("你好", simple_count, 1)


# --- layout -------------------------------------------------------------------------------------------------


def test_join_keeps_paragraphs_line_breaks_and_indentation() -> None:
    text = "  第一段。第二句！\n\n\u3000\u3000第二段。\r\n   \n最后一行\n"
    document = unbounded(text)
    assert document.texts == ["第一段。", "第二句！", "第二段。", "最后一行"]
    assert document.join(["One.", "Two!", "Three.", "Last line"]) == (
        "  One. Two!\n\n\u3000\u3000Three.\r\n   \nLast line\n"
    )


def test_join_skips_empty_translations_and_collapses_whitespace_inside_one() -> None:
    document = unbounded("甲。乙。丙。\n丁。")
    assert document.join(["A.", "", "C\n  c.", ""]) == "A. C c.\n"
    assert document.join(["", "", "", "D."]) == "\nD."


def test_whitespace_only_text_is_kept() -> None:
    for text in ("", "   ", "\n\n", " \r\n\t\n"):
        document = unbounded(text)
        assert document.segments == ()
        assert document.join([]) == text


def test_join_needs_one_translation_per_segment() -> None:
    with pytest.raises(ValueError, match="expected 2 translations, got 1"):
        unbounded("一。二。").join(["one"])


# --- properties ---------------------------------------------------------------------------------------------

FRAGMENTS = [
    "。",
    "！",
    "？",
    "；",
    "，",
    "、",
    "：",
    "……",
    "…",
    "”",
    "“",
    "」",
    "「",
    "』",
    "）",
    "（",
    "》",
    ".",
    "!",
    "?",
    ";",
    ",",
    ":",
    "...",
    '"',
    "'",
    ")",
    "(",
    " ",
    "  ",
    "\u3000",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    " \n ",
    "\u2028",
    "3.14",
    "1,000",
    "10:30",
    "https://example.com/a?b=1",
    "www.a.cn",
    "Dr.",
    "e.g.",
    "U.S.",
    "你好",
    "我们",
    "今天天气很好",
    "這個問題",
    "Python",
    "hello world",
    "The",
    "😀",
    "𠀀",
]
document_text = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.text(
            alphabet="的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动", max_size=12
        ),
        st.text(max_size=6),
    ),
    max_size=40,
).map("".join)


def assert_well_formed(document: Document, count, max_tokens: int) -> None:  # type: ignore[no-untyped-def]
    text = document.source
    position = 0
    for segment in document.segments:
        assert segment.start >= position
        assert text[position : segment.start].strip() == ""
        assert text[segment.start : segment.end] == segment.text
        assert segment.text and segment.text == segment.text.strip()
        assert not LINE_BREAK.search(segment.text)
        assert count(segment.text) <= max_tokens
        position = segment.end
    assert text[position:].strip() == ""
    assert non_whitespace("".join(document.texts)) == non_whitespace(text)


def line_shape(text: str) -> list[bool]:
    """For each line: does it hold any text?"""
    return [bool(line.strip()) for line in LINE_BREAK.split(text)]


@given(text=document_text, max_tokens=st.integers(min_value=2, max_value=40))
@settings(max_examples=300, deadline=None)
def test_property_segments_cover_the_input_within_budget(text: str, max_tokens: int) -> None:
    document = split_document(text, simple_count, max_tokens)
    assert_well_formed(document, simple_count, max_tokens)


@given(text=document_text, max_tokens=st.integers(min_value=2, max_value=40))
@settings(max_examples=200, deadline=None)
def test_property_join_keeps_line_structure_and_content(text: str, max_tokens: int) -> None:
    document = split_document(text, simple_count, max_tokens)
    joined = document.join(document.texts)
    assert len(LINE_BREAK.findall(joined)) == len(LINE_BREAK.findall(text))
    assert line_shape(joined) == line_shape(text)
    assert [non_whitespace(line) for line in LINE_BREAK.split(joined)] == [
        non_whitespace(line) for line in LINE_BREAK.split(text)
    ]
    placeholder = document.join(["x"] * len(document.segments))
    assert line_shape(placeholder) == line_shape(text)
    assert LINE_BREAK.findall(placeholder) == LINE_BREAK.findall(text)


@given(text=document_text)
@settings(max_examples=200, deadline=None)
def test_property_with_room_to_spare_no_cut_falls_between_ascii_letters_or_digits(text: str) -> None:
    document = unbounded(text)
    for before, after in pairwise(document.segments):
        if before.end == after.start:
            pair = text[before.end - 1] + text[after.start]
            assert not (pair.isascii() and pair.isalnum()), (pair, document.texts)


@pytest.fixture(scope="module")
def real_tokenizer(request: pytest.FixtureRequest) -> SentencePieceTokenizer:
    folder = DEFAULT_TOKENIZER_DIR
    if not (folder / VOCAB_JSON).is_file():
        folder = Path(request.getfixturevalue("tiny_marian_dir"))
    vocab = json.loads((folder / VOCAB_JSON).read_text(encoding="utf-8"))
    return SentencePieceTokenizer(
        folder / "source.spm",
        folder / "target.spm",
        folder / VOCAB_JSON,
        eos_id=vocab["</s>"],
        unk_id=vocab["<unk>"],
        pad_id=vocab["<pad>"],
    )


@given(text=document_text, max_tokens=st.integers(min_value=4, max_value=64))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_property_real_tokenizer_budget(real_tokenizer: SentencePieceTokenizer, text: str, max_tokens: int) -> None:
    document = split_document(text, real_tokenizer.count_tokens, max_tokens)
    assert_well_formed(document, real_tokenizer.count_tokens, max_tokens)
    assert all(len(ids) <= max_tokens for ids in real_tokenizer.encode_batch(document.texts))


def test_dev_set_paragraph_fits_a_small_real_budget(real_tokenizer: SentencePieceTokenizer) -> None:
    from tests.fixture_corpus import fixture_pairs

    pairs = fixture_pairs()[:300]
    text = "\n\n".join("".join(pair.zh for pair in pairs[i : i + 10]) for i in range(0, len(pairs), 10))
    document = split_document(text, real_tokenizer.count_tokens, 24)
    assert_well_formed(document, real_tokenizer.count_tokens, 24)
    assert line_shape(document.join(document.texts)) == line_shape(text)


def test_join_keeps_whitespace_inside_a_translation_but_never_a_line_break() -> None:
    # a protected span such as code with two spaces must come out byte for byte; a line break may not be added
    document = split_document("运行 `a  b`。\n好。", len, 100)
    assert document.join(["Run `a  b`.", "Good\n\n  now."]) == "Run `a  b`.\nGood now."
