"""Output cleaning removes tokenizer debris, fixes spacing and punctuation runs, and collapses loops."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handler.text.cleaning import clean_translation

CASES = [
    # special tokens and SentencePiece debris
    ("<unk> Zhang San came .", "Zhang San came."),
    ("Zhang San (<unk>) came.", "Zhang San came."),
    ("▁Hello▁world</s><pad>", "Hello world"),
    ("<s>Hi</s> there", "Hi there"),
    ("⁇ what ⁇", "what"),
    ("<pad><pad></s>", ""),
    # whitespace
    ("  spaces\n\tand\nlines  ", "spaces and lines"),
    ("a   b\u3000c", "a b c"),
    ("", ""),
    ("   ", ""),
    # spacing around punctuation
    ("Hello , world !", "Hello, world!"),
    ("Is it ok ?!", "Is it ok?!"),
    ("Wait ; then : go .", "Wait; then: go."),
    ("Note:this is it", "Note: this is it"),
    ("one,two;three", "one, two; three"),
    ("Yes!Indeed. Really?No", "Yes! Indeed. Really? No"),
    ("end.Next one", "end. Next one"),
    ("( see above )", "(see above)"),
    ("[ note ] and { x }", "[note] and {x}"),
    ("50 % of $ 100", "50% of $100"),
    ("It is 0 .5 or .5 metres", "It is 0 .5 or .5 metres"),
    ("I don 't know , it 's fine", "I don't know, it's fine"),
    ("I ' m sure they ' re here", "I'm sure they're here"),
    ("students' books", "students' books"),
    # quotes
    ('He said " hello . "', 'He said "hello."'),
    ('He said"hi"and left', 'He said "hi" and left'),
    ('He said,"hi"', 'He said, "hi"'),
    ('"a" and " b "', '"a" and "b"'),
    ('an odd " quote', 'an odd " quote'),
    ("“ quoted ”text", "“quoted” text"),
    ("said“yes”", "said “yes”"),
    # full-width punctuation copied from the source
    ("你好，世界。", "你好, 世界."),
    ("Ｈｅｌｌｏ，ｗｏｒｌｄ！", "Hello, world!"),
    ("It costs ５０％（about）", "It costs 50% (about)"),
    ("「Go」, he said", '"Go", he said'),
    # repeated punctuation
    ("Hello,,, world", "Hello, world"),
    ("No!!!!", "No!"),
    ("Really???", "Really?"),
    ("Why ? ? ?", "Why?"),
    ("Wait....what", "Wait...what"),
    ("Well... I think so", "Well... I think so"),
    ("It is . . .", "It is..."),
    ("Hmm.. ok", "Hmm. ok"),
    ("word,.", "word."),
    ("word , .", "word."),
    ("ok;;", "ok;"),
    ("so……", "so…"),
    (", leading comma", "leading comma"),
    ("trailing comma,", "trailing comma,"),
    # degenerate loops
    ("the the the the cat", "the cat"),
    ("The The the THE end", "The end"),
    ("the people of the people of the people of the country", "the people of the country"),
    ("I love you, I love you, I love you.", "I love you."),
    ("No, no, no, no, no.", "No."),
    ("He sang: la la la la la.", "He sang: la."),
    ("in the in the in the in the room", "in the room"),
    (
        "The United Nations Development Programme and the United Nations Development Programme and the "
        "United Nations Development Programme and",
        "The United Nations Development Programme and",
    ),
    ("ha ha ha", "ha ha ha"),
    ("very very good", "very very good"),
    ("bye-bye bye-bye bye-bye", "bye-bye bye-bye bye-bye"),
    ("that that is, is", "that that is, is"),
    ("0 0 0 0 0", "0 0 0 0 0"),
    ("1 2 1 2 1 2", "1 2 1 2 1 2"),
    # numbers, times, URLs and addresses stay intact
    ("I have 1,000 apples and 3.14 pies at 10:30 .", "I have 1,000 apples and 3.14 pies at 10:30."),
    ("It's 3:00 p.m. now.", "It's 3:00 p.m. now."),
    ("at three p. m. and 9 A. M.", "at three p.m. and 9 A.M."),
    ("Version 2.0.1 released", "Version 2.0.1 released"),
    ("U.S.A. is big, e.g. Texas", "U.S.A. is big, e.g. Texas"),
    ("Visit https://example.com/a?b=1&c=2. Now!", "Visit https://example.com/a?b=1&c=2. Now!"),
    ("see http://a.cn:8080/x,y;z?q=1!!", "see http://a.cn:8080/x,y;z?q=1!"),
    ("go to www.example.org , please", "go to www.example.org, please"),
    ("Email me at a.b@example.com , thanks", "Email me at a.b@example.com, thanks"),
    ("see https://x.io/a.. b....", "see https://x.io/a. b..."),
    ("print() is a function", "print() is a function"),
    ("-5.5 degrees, +3", "-5.5 degrees, +3"),
]


@pytest.mark.parametrize(("raw", "expected"), CASES)
def test_clean_translation(raw: str, expected: str) -> None:
    assert clean_translation(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), CASES)
def test_cleaning_twice_changes_nothing(raw: str, expected: str) -> None:
    assert clean_translation(expected) == expected


def test_long_degenerate_loop_collapses() -> None:
    assert clean_translation("It is " + "the people of " * 200 + "China.") == "It is the people of China."
    assert clean_translation("the " * 500) == "the"


words = st.sampled_from(["the", "people", "of", "China", "I", "don't", "3.14", "1,000", "10:30", "a", "No"])
marks = st.sampled_from([",", ".", "!", "?", ";", ":", "...", "(", ")", '"', " ", "  ", "<unk>", "▁", "，", "。"])
raw_output = st.lists(st.one_of(words, marks, st.just(" ")), max_size=40).map(" ".join)


@given(raw_output)
@settings(max_examples=300, deadline=None)
def test_property_no_debris_no_double_spaces_numbers_kept(raw: str) -> None:
    cleaned = clean_translation(raw)
    assert cleaned == cleaned.strip()
    assert "  " not in cleaned
    assert not re.search(r"<unk>|<pad>|</s>|▁|，|。", cleaned)
    assert not re.search(r",,|!!|\?\?|;;|::|\.\.\.\.", cleaned)
    assert not re.search(r" [,!?;:)]", cleaned)
    for number in ("3.14", "1,000", "10:30"):
        assert cleaned.count(number) <= raw.count(number)
        if number in raw:
            assert number in cleaned or re.search(r"(?:\b\S+\b[ ,;.!?]*){3,}", raw)  # only a loop may drop one


@given(st.lists(st.one_of(words, marks, st.text(max_size=4)), max_size=40).map("".join))
@settings(max_examples=500, deadline=None)
def test_property_cleaning_is_idempotent(raw: str) -> None:
    once = clean_translation(raw)
    assert clean_translation(once) == once
