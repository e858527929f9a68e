"""Fuzzing the segmenter: any text, any budget that holds one character, three ways of counting tokens.

Properties: ``split_document`` raises nothing (the only error it has, ``ValueError`` for a budget too small
for one character, cannot happen with these budgets); every input character is accounted for (the gaps
between segments are whitespace, and gaps and segments put together are the input, character for character);
every segment fits the budget and holds no line break; joining the segments back keeps every line's content.
A deadline per case guards against a hang.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from handler.text.segmentation import LINE_BREAKS, Document, split_document
from tests.fuzz.settings import examples
from tests.fuzz.shipped import needs_shipped_bundle, shipped_tokenizer

LINE_BREAK = re.compile(f"[{LINE_BREAKS}]")

# the characters the segmenter treats specially, so that random text hits its branches often
SPECIAL = (
    "。！？；｡．︒﹒﹖﹗﹔.!?;…⋯”’」』）)】〕〗〙〛》〉］]｝}｣\"'，、：﹐﹑﹕︰,: \t\u3000\u00a0\u2028\u2029"
    "\n\r\x0b\x0c\x1c\x1d\x1e\x85"
)
any_character = st.characters(exclude_categories=()) | st.characters(categories=["Cs"])  # lone surrogates too
fragments = st.one_of(
    st.text(alphabet=st.sampled_from(SPECIAL), max_size=4),
    st.text(alphabet="你好世界的一是在不了有和人这中大为上个国我以要他时来", min_size=1, max_size=12),
    st.text(alphabet="abcXYZ019-_/%@.", min_size=1, max_size=12),
    st.sampled_from(["Dr.", "e.g.", "3.14", "1,000", "10:30", "https://a.cn/x?y=1", "U.S.", "...", "……"]),
    st.text(any_character, max_size=8),
)
texts = st.lists(fragments, max_size=30).map("".join)


def length_count(text: str) -> int:
    return len(text) + 1  # one token per character, plus end-of-sequence


def lumpy_count(text: str) -> int:
    """Not monotone in the length (real tokenizers are not either): ASCII runs are cheap, others dear."""
    return 1 + sum(1 if char.isascii() else 3 for char in text) // 2 + text.count(" ") % 3


def assert_nothing_lost(document: Document, count, max_tokens: int) -> None:  # type: ignore[no-untyped-def]
    source = document.source
    rebuilt: list[str] = []
    position = 0
    for segment in document.segments:
        assert position <= segment.start < segment.end <= len(source)
        gap = source[position : segment.start]
        assert gap.strip() == "", f"content {gap!r} between segments is lost"
        assert source[segment.start : segment.end] == segment.text
        assert segment.text == segment.text.strip() and not LINE_BREAK.search(segment.text)
        assert count(segment.text) <= max_tokens
        rebuilt += [gap, segment.text]
        position = segment.end
    assert source[position:].strip() == ""
    rebuilt.append(source[position:])
    assert "".join(rebuilt) == source


def non_whitespace(text: str) -> str:
    return "".join(text.split())


def assert_join_keeps_lines(document: Document) -> None:
    joined = document.join(document.texts)
    source = document.source
    assert LINE_BREAK.findall(joined) == LINE_BREAK.findall(source)
    assert [non_whitespace(line) for line in LINE_BREAK.split(joined)] == [
        non_whitespace(line) for line in LINE_BREAK.split(source)
    ]


@given(text=texts, max_tokens=st.integers(min_value=2, max_value=30))
@examples(200)
def test_any_text_is_cut_within_budget_and_nothing_is_lost(text: str, max_tokens: int) -> None:
    document = split_document(text, length_count, max_tokens)
    assert_nothing_lost(document, length_count, max_tokens)
    assert_join_keeps_lines(document)


@given(text=texts, max_tokens=st.integers(min_value=4, max_value=30))
@examples(150)
def test_a_count_that_is_not_monotone_still_loses_nothing(text: str, max_tokens: int) -> None:
    document = split_document(text, lumpy_count, max_tokens)
    assert_nothing_lost(document, lumpy_count, max_tokens)
    assert_join_keeps_lines(document)


@given(text=st.text(any_character, max_size=3_000), max_tokens=st.integers(min_value=2, max_value=600))
@examples(100)
def test_long_random_texts_are_cut_without_a_hang(text: str, max_tokens: int) -> None:
    document = split_document(text, length_count, max_tokens)
    assert_nothing_lost(document, length_count, max_tokens)


@needs_shipped_bundle
@given(text=texts.filter(lambda t: not any("\ud800" <= c <= "\udfff" for c in t)), max_tokens=st.integers(8, 64))
@examples(200)
def test_the_shipped_tokenizers_budget_holds_and_nothing_is_lost(text: str, max_tokens: int) -> None:
    count = shipped_tokenizer().count_tokens
    document = split_document(text, count, max_tokens)
    assert_nothing_lost(document, count, max_tokens)
    assert all(len(ids) <= max_tokens for ids in shipped_tokenizer().encode_batch(document.texts))


@given(
    word=st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=400),
    before=st.sampled_from(["", "访问 ", "你好。"]),
    after=st.sampled_from(["", " 谢谢", "。"]),
    max_tokens=st.integers(min_value=2, max_value=40),
)
@examples(200)
def test_a_word_longer_than_the_budget_is_joined_back_without_spaces(
    word: str, before: str, after: str, max_tokens: int
) -> None:
    # a URL or a long number cut at the budget comes back whole when its pieces are kept as they are
    document = split_document(before + word + after, length_count, max_tokens)
    joined = document.join(document.texts)
    assert joined.replace(" ", "") == (before + word + after).replace(" ", "")  # nothing lost
    if not before and not after and not any(char in ".!?;,:\"')" for char in word):
        assert joined == word  # only budget cuts: no space added
