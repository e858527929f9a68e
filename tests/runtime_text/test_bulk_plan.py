"""Where the fan-out cuts a long text (``handler.storage.bulk.plan_parts``): nothing lost or added, coarsest cuts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from handler.text.parts import plan_parts

PIECES = ["好", "我们去公园散步吧", "。", "？", "\n", "\n\n", "\r\n", "\r\n\r\n", " ", "\n \n", "abc", "…"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=400), st.integers(min_value=3, max_value=120))
def test_parts_and_separators_rebuild_the_text_exactly(pieces: list[str], limit: int) -> None:
    text = "".join(pieces)
    lead, parts = plan_parts(text, limit)
    assert lead + "".join(part.text + part.separator for part in parts) == text
    assert all(len(part.text) <= limit for part in parts)
    assert all(not part.separator.strip() for part in parts)  # separators are whitespace only


def test_cuts_at_paragraphs_when_they_fit() -> None:
    paragraphs = ["一" * 40, "二" * 40, "三" * 40, "四" * 40]
    lead, parts = plan_parts("\n" + "\n\n".join(paragraphs) + "\n", 90)
    assert lead == "\n"
    assert [part.text for part in parts] == [
        paragraphs[0] + "\n\n" + paragraphs[1],
        paragraphs[2] + "\n\n" + paragraphs[3] + "\n",
    ]
    assert [part.separator for part in parts] == ["\n\n", ""]


def test_a_paragraph_too_long_is_cut_at_sentence_ends_then_hard() -> None:
    sentence = "我们去公园散步吧。"  # 9 characters
    lead, parts = plan_parts(sentence * 5 + "\n\n短。", 20)
    assert [part.text for part in parts] == [sentence * 2, sentence * 2, sentence, "短。"]
    _, hard = plan_parts("好" * 25, 10)
    assert [len(part.text) for part in hard] == [10, 10, 5]
