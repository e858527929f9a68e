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


# currency signs before a number stay with it, in the form English writes them (handler.text.numbers says why)
SIGNS = [
    ("¥1,299", "¥1,299"),
    ("￥45.80", "¥45.80"),
    ("＄25", "$25"),
    ("$1,499", "$1,499"),
    ("€320", "€320"),
    ("£2.80", "£2.80"),
    ("￡5", "£5"),
    ("US$799", "US$799"),
    ("NT$500", "NT$500"),
    ("HK$1.5亿", "HK$150 million"),
    ("$5亿", "$500 million"),
    ("￥3000万", "¥30 million"),
    ("¥800元", "¥800"),
    ("$5亿美元", "$500 million"),
    ("¥ 99", "¥99"),
]


@pytest.mark.parametrize(("chinese", "english"), SIGNS, ids=[zh for zh, _ in SIGNS])
def test_a_currency_sign_stays_with_its_amount(chinese: str, english: str) -> None:
    [amount] = find_amounts(f"售价{chinese}。")
    assert (amount.start, amount.end, amount.english, amount.kind) == (2, 2 + len(chinese), english, "amount")


# a unit written once after two numbers applies to both; "-" and the like become "-", 至 and 到 "to"
RANGES = [
    ("2018-2030年", "2018-2030", "date"),
    ("2018-2030 年", "2018-2030", "date"),
    ("2018年-2030年", "2018-2030", "date"),
    ("2020—2025年", "2020-2025", "date"),
    ("2019年至2021年", "2019 to 2021", "date"),
    ("4～6月", "April-June", "date"),
    ("3月-5月", "March-May", "date"),
    ("3月1-5日", "March 1-5", "date"),
    ("3月1日-5日", "March 1-5", "date"),
    ("2015年5月2日至5日", "May 2 to 5, 2015", "date"),
    ("2020 年 1 月 31 日至 3 月 15 日", "January 31 to March 15, 2020", "date"),
    ("5月30日-6月2日", "May 30-June 2", "date"),
    ("2024年4～6月", "April-June 2024", "date"),
    ("3-5万", "30,000-50,000", "amount"),
    ("3-5万元", "30,000-50,000 yuan", "amount"),
    ("30~50万", "300,000-500,000", "amount"),
    ("10～20亿美元", "1-2 billion US dollars", "amount"),
    ("1.5-2亿元", "150-200 million yuan", "amount"),
    ("5000万-1.2亿", "50-120 million", "amount"),
    ("50万-1.2亿", "500,000-120 million", "amount"),
    ("5千-1万", "5,000-10,000", "amount"),
    ("2万至3万元", "20,000 to 30,000 yuan", "amount"),
    ("8千到1.2万元", "8,000 to 12,000 yuan", "amount"),
    ("3-5元", "3-5 yuan", "amount"),
    ("¥10-20万", "¥100,000-200,000", "amount"),
    ("¥300-500", "¥300-500", "amount"),
    ("$5-$10", "$5-$10", "amount"),
]


@pytest.mark.parametrize(("chinese", "english", "kind"), RANGES, ids=[zh for zh, _, _ in RANGES])
def test_a_range_with_one_unit_is_a_range(chinese: str, english: str, kind: str) -> None:
    [amount] = find_amounts(f"（{chinese}）")
    assert (amount.start, amount.end, amount.english, amount.kind) == (1, 1 + len(chinese), english, kind)


def test_a_range_may_already_be_written_with_an_en_dash_or_to() -> None:
    [years] = find_amounts("2018-2030年")
    assert years.alternatives == ("2018–2030", "2018 to 2030")
    [amount] = find_amounts("3至5万元")
    assert {"30,000-50,000 yuan", "30,000–50,000 yuan"} <= set(amount.alternatives)
    [days] = find_amounts("3月1-5日")
    assert "1-5 March" in days.alternatives
    [days] = find_amounts("2015年5月30日至6月2日")
    assert "30 May to 2 June 2015" in days.alternatives


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("3-5年", []),  # a duration: 年 after numbers that are not years
        ("13-15月", []),  # no month 13
        ("3月1-32日", []),  # no day 32
        ("138-0013-8000元", [("8000元", "8000 yuan")]),  # a phone-like string, not a range
        ("2018-2030", []),  # no unit: a plain number span (handler.text.spans)
        ("1980-1990年代", []),  # decades: not a range of years, and 1990年代 is no year ("the 1990s")
        # a year range cut short by a date: the year and the date
        ("2011年至2014年12月22日", [("2011年", "2011"), ("2014年12月22日", "December 22, 2014")]),
        ("$HOME", []),
        ("USD$5", []),  # a sign inside an identifier
    ],
)
def test_what_is_not_a_range_or_a_sign_is_left_alone(text: str, found: list[tuple[str, str]]) -> None:
    assert [(text[a.start : a.end], a.english) for a in find_amounts(text)] == found
