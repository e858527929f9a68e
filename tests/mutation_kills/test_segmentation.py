"""Budget cuts inside words and URLs, and how ``Document.join`` puts translations back on one line."""

from __future__ import annotations

import pytest

from handler.segmentation import Document, Segment, split_document


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
