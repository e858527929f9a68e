"""Numbers with Chinese units become the English amount or date they mean."""

from __future__ import annotations

import pytest

from handler.text.numbers import find_amounts

CASES = [
    ("1.25亿元", "125 million yuan"),
    ("3万", "30,000"),
    ("0.5万", "5,000"),
    ("2.5千", "2,500"),
    ("3.14159万", "31,415.9"),
    ("1,200万", "12 million"),
    ("12亿", "1.2 billion"),
    ("5万亿美元", "5 trillion US dollars"),
    ("800元", "800 yuan"),
    ("１２万", "120,000"),
    ("2024年3月15日", "March 15, 2024"),
    ("2024年3月", "March 2024"),
    ("3月15日", "March 15"),
    ("2024年", "2024"),
]


@pytest.mark.parametrize(("chinese", "english"), CASES, ids=[zh for zh, _ in CASES])
def test_an_amount_or_date_is_converted(chinese: str, english: str) -> None:
    [amount] = find_amounts(f"共{chinese}。")
    assert (amount.start, amount.end, amount.english) == (1, 1 + len(chinese), english)


@pytest.mark.parametrize("text", ["13月5日", "版本3.0发布", "v3万", "三万人"])
def test_what_is_not_an_amount_is_left_alone(text: str) -> None:
    assert find_amounts(text) == []


def test_a_space_between_digits_and_units_is_allowed_but_not_taken_from_the_text_around() -> None:
    text = "截至 2020 年 1 月 15 日,在 2024年 的 3 月 5 日"
    assert [(text[a.start : a.end], a.english) for a in find_amounts(text)] == [
        ("2020 年 1 月 15 日", "January 15, 2020"),
        ("2024年", "2024"),
        ("3 月 5 日", "March 5"),
    ]
