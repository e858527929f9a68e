"""Fuzzing the cleaner: any text a model, a detokenizer or a protected span could produce.

Properties: ``clean_translation`` raises nothing and ends (a deadline per case, long inputs included: its
repetition patterns use back-references); the result is one line without outer or doubled whitespace and
without special tokens; cleaning it again changes nothing; URLs and e-mail addresses come out unchanged.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from handler.text.cleaning import clean_translation
from tests.fuzz.settings import examples

WORDS = ["the", "people", "of", "China", "I", "don", "'t", "3.14", "1,000", "10:30", "a", "No", "it", "'s", "p.", "m."]
MARKS = [",", ".", "!", "?", ";", ":", "...", "…", "(", ")", "[", "]", '"', "“", "”", "'", "%", "$", "-"]
DEBRIS = ["<unk>", "</s>", "<s>", "<pad>", "▁", "⁇", "，", "。", "！", "（", "）", "「", "」", "【", "】", "\u3000"]
SPANS = ["https://a.cn/x?y=1", "www.example.org/a_b", "someone@example.com", "ftp://h.io/f.txt"]
token = st.one_of(
    st.sampled_from(WORDS + MARKS + DEBRIS + SPANS),
    st.text(st.characters(exclude_categories=()), max_size=6),
    st.sampled_from([" ", "  ", "\n", "\t"]),
)
raw_output = st.lists(token, max_size=50).map(" ".join) | st.lists(token, max_size=50).map("".join)
loop = st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), st.integers(2, 60)).map(
    lambda phrase_times: " ".join(phrase_times[0] * phrase_times[1])
)
SPECIAL = re.compile(r"</?s>|<pad>|<unk>|[▁⁇]")


@given(text=raw_output | loop)
@examples(250)
def test_any_output_is_cleaned_into_one_tidy_line(text: str) -> None:
    cleaned = clean_translation(text)
    assert cleaned == cleaned.strip()
    assert "\n" not in cleaned and "  " not in cleaned
    assert not SPECIAL.search(cleaned)


@given(text=raw_output | loop)
@examples(150)
def test_cleaning_twice_changes_nothing(text: str) -> None:
    once = clean_translation(text)
    assert clean_translation(once) == once


@given(before=raw_output, span=st.sampled_from(SPANS), after=raw_output)
@examples(150)
def test_urls_and_addresses_survive_cleaning(before: str, span: str, after: str) -> None:
    assert span in clean_translation(f"{before} {span} {after}")


LETTERED_WORDS = [word for word in WORDS if word.isalpha()]


@given(phrase=st.lists(st.sampled_from(LETTERED_WORDS), min_size=1, max_size=8), times=st.integers(100, 400))
@examples(30)
def test_a_long_loop_is_cleaned_without_a_hang(phrase: list[str], times: int) -> None:
    cleaned = clean_translation(" ".join(phrase * times))
    assert len(cleaned) < len(" ".join(phrase * times))
