"""Budget cuts inside words and URLs, and how ``Document.join`` puts translations back on one line."""

from __future__ import annotations

import pytest

from handler.text.segmentation import Document, Segment, split_document


def chars(text: str) -> int:
    """One token per character plus end-of-sequence: budgets are easy to reason about."""
    return len(text) + 1


@pytest.mark.parametrize(
    ("text", "budget", "expected"),
    [
        ("请访问https://example.com/a/b", 12, ["请访问", "https://exa", "mple.com/a/", "b"]),
        ("请访问https://example.com/a/b", 8, ["请访问", "https:/", "/exampl", "e.com/a", "/b"]),
        ("中文中文中文abcdefghijklmnop", 10, ["中文中文中文", "abcdefghi", "jklmnop"]),
        ("中ab", 3, ["中", "ab"]),
        ("中文abc def", 5, ["中文", "abc", "def"]),
        ("abcdefghij", 6, ["abcde", "fghij"]),
        ("一二三四五六七八", 4, ["一二三", "四五六", "七八"]),
        ("一二三ab四五", 5, ["一二三", "ab四五"]),
    ],
)
def test_a_budget_cut_moves_back_to_the_start_of_an_ascii_run(text: str, budget: int, expected: list[str]) -> None:
    document = split_document(text, chars, budget)
    assert document.texts == expected
    assert all(chars(piece) <= budget for piece in document.texts)
    assert document.join(document.texts).replace(" ", "") == text.replace(" ", "")


def test_pieces_of_one_word_are_joined_without_a_space() -> None:
    document = split_document("请访问https://example.com/a/b", chars, 12)
    assert document.join(document.texts) == "请访问 https://example.com/a/b"
    two = split_document("abcdef", chars, 4)
    assert two.texts == ["abc", "def"] and two.join(["ABC", "DEF"]) == "ABCDEF"


def test_sentences_on_one_line_are_joined_with_one_space() -> None:
    document = split_document("Hi. Go now. 你好。", chars, 100)
    assert document.texts == ["Hi.", "Go now.", "你好。"]
    assert document.join(["Hi.", "Go now.", "Hello."]) == "Hi. Go now. Hello."
    assert document.join(["", "Go now.", "Hello."]) == "Go now. Hello."  # an empty translation adds nothing


def test_the_first_translation_gets_no_space_before_it() -> None:
    document = split_document("  你好", chars, 100)
    assert document.join(["Hello"]) == "  Hello"


def test_a_cut_right_after_a_non_ascii_character_is_not_inside_a_word() -> None:
    # "你a|bc": the character before the cut is "a" (a word character) and the one after is "b": inside a word
    inside = Document("你abc", (Segment("你a", 0, 2), Segment("bc", 2, 4)))
    assert inside.join(["X", "Y"]) == "XY"
    # "你|abc": the character before the cut is "你": a new word, so a space
    outside = Document("你abc", (Segment("你", 0, 1), Segment("abc", 1, 4)))
    assert outside.join(["X", "Y"]) == "X Y"
    # "ab|你c": the character after the cut is "你"
    after = Document("ab你c", (Segment("ab", 0, 2), Segment("你c", 2, 4)))
    assert after.join(["X", "Y"]) == "X Y"


def test_join_wants_one_translation_per_segment() -> None:
    document = split_document("你好。再见。", chars, 100)
    with pytest.raises(ValueError, match="expected 2 translations, got 1"):
        document.join(["Hello."])
    with pytest.raises(ValueError, match="expected 2 translations, got 3"):
        document.join(["a", "b", "c"])


def test_a_dot_after_one_letter_is_an_initial_after_two_a_sentence_end() -> None:
    assert split_document("Ask J. Smith.", chars, 100).texts == ["Ask J. Smith."]
    assert split_document("Ask XI. Go now.", chars, 100).texts == ["Ask XI.", "Go now."]
    assert split_document("Ask Dr. Wang.", chars, 100).texts == ["Ask Dr. Wang."]


# --- sentence ends: closers, quotes, initials -----------------------------------------------------------------


def test_end_marks_taken_in_by_a_sentence_do_not_stop_the_next_sentences() -> None:
    # "！" after the closing quote belongs to the first sentence; the line's later sentences are still cut
    assert split_document("他说：“好！”！我们走吧。你呢？", chars, 100).texts == [
        "他说：“好！”！",
        "我们走吧。",
        "你呢？",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a quote left open in the previous sentence does not change whether this one's quote closes
        ('他说"好。她说"走。"我们', ['他说"好。', '她说"走。"', "我们"]),
        # only the quotes before the end mark count, not those after it
        ('她说"走。"好"', ['她说"走。"', '好"']),
        # the third quote of a sentence closes (an odd count), whatever follows
        ('他说"甲"和"走。"然后', ['他说"甲"和"走。"', "然后"]),
    ],
)
def test_an_ascii_quote_after_an_end_mark_closes_a_quote_opened_in_that_sentence(
    text: str, expected: list[str]
) -> None:
    assert split_document(text, chars, 100).texts == expected


def test_a_dot_after_an_initial_that_follows_another_dot_is_not_a_sentence_end() -> None:
    # "中.J." : the word before the last dot is ".J", an initial once its dots are stripped
    assert split_document("请看中.J. Smith的书。", chars, 100).texts == ["请看中.J. Smith的书。"]


# --- clause cuts ------------------------------------------------------------------------------------------------


def test_a_full_width_clause_mark_is_a_cut_whatever_follows_it() -> None:
    assert split_document("我们买了苹果，Apple公司的股票", chars, 10).texts == ["我们买了苹果，", "Apple公司的股", "票"]


def test_an_ascii_comma_is_a_cut_before_whitespace_or_chinese_but_not_inside_a_number() -> None:
    assert split_document("我们买了苹果,香蕉和橘子,还有别的", chars, 8).texts == [
        "我们买了苹果,",
        "香蕉和橘子,",
        "还有别的",
    ]
    assert split_document("苹果和梨, 香蕉和橘子", chars, 8).texts == ["苹果和梨,", "香蕉和橘子"]
    # a number's comma is no cut, and the clause marks after it still are
    assert split_document("价格是1,000元，数量是二十个，总计两万", chars, 12).texts == [
        "价格是1,000元，",
        "数量是二十个，总计两万",
    ]


def test_an_ascii_comma_at_the_very_end_of_the_text_is_handled() -> None:
    assert split_document("甲乙丙丁戊，己庚辛壬癸,", chars, 8).texts == ["甲乙丙丁戊，", "己庚辛壬癸,"]


def test_clauses_that_fit_together_are_packed_up_to_the_last_one() -> None:
    assert split_document("甲甲甲，乙，丙", chars, 6).texts == ["甲甲甲，", "乙，丙"]


# --- whitespace cuts, then the budget -------------------------------------------------------------------------


def test_a_clause_over_the_budget_is_cut_at_whitespace_before_any_budget_cut() -> None:
    assert split_document("中 文中文中", chars, 5).texts == ["中", "文中文中"]
    # a clause over the budget goes to the whitespace level first, not straight to budget cuts
    assert split_document("中 文中文中，好", chars, 6).texts == ["中", "文中文中，", "好"]


def test_a_later_budget_cut_moves_back_to_the_start_of_its_ascii_run() -> None:
    # the second piece "五abc|def" would end inside "abcdef": it stops before the run instead
    assert split_document("一二三四五abcdef", chars, 5).texts == ["一二三四", "五", "abcd", "ef"]


def test_a_budget_cut_between_an_ascii_run_and_chinese_stays_where_it_is() -> None:
    assert split_document("一二abc中文字", chars, 6).texts == ["一二abc", "中文字"]


def test_every_piece_fits_the_budget_even_when_token_counts_are_not_monotone() -> None:
    # A real tokenizer's count of a longer prefix can be smaller (pieces merge). Here six "乙" alone cost 20 extra
    # tokens: the longest prefix that fits ends inside "abc...", the ASCII run's start (after the six "乙") does
    # not fit, so the cut stays at the longest prefix instead of moving back to the run.
    def lumpy(text: str) -> int:
        return len(text) + 1 + (20 if text == "乙" * 6 else 0)

    document = split_document("乙乙乙乙乙乙abcdefghij", lumpy, 9)
    assert document.texts == ["乙乙乙乙乙乙ab", "cdefghij"]
    assert all(lumpy(piece) <= 9 for piece in document.texts)
