"""Numbers with Chinese units: every multiplier's value, every currency word and sign, each range form and
separator, the month and day limits at their boundaries, the formatting thresholds, and the alternatives a
correct translation may already hold."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from handler.text.numbers import Amount, find_amounts, format_amount


def only(text: str) -> Amount:
    [amount] = find_amounts(text)
    return amount


# --- every multiplier, by its value (a multiplier wrong by 10x changes the amount) --------------------------------


@pytest.mark.parametrize(
    ("text", "english"),
    [
        ("3千", "3,000"),
        ("3万", "30,000"),
        ("3十万", "300,000"),
        ("3百万", "3 million"),
        ("3千万", "30 million"),
        ("3亿", "300 million"),
        ("3十亿", "3 billion"),
        ("3百亿", "30 billion"),
        ("3千亿", "300 billion"),
        ("3万亿", "3 trillion"),
        ("10万亿", "10 trillion"),
        ("1.2345亿", "123.45 million"),
        ("1234567.8万", "12.346 billion"),
        ("0.0001万", "1"),
        ("０.５万", "5,000"),
        ("1，200万", "12 million"),
        ("3.14159万", "31,415.9"),
    ],
)
def test_each_multiplier(text: str, english: str) -> None:
    amount = only(f"共{text}。")
    assert (amount.start, amount.end, amount.english, amount.kind) == (1, 1 + len(text), english, "amount")


# --- currencies: words after, signs before ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "english", "alternatives"),
    [
        ("5元", "5 yuan", ("5 RMB", "RMB 5", "5 Yuan", "¥5")),
        ("5人民币", "5 yuan", ("5 RMB", "RMB 5", "5 Yuan", "¥5")),
        ("5美元", "5 US dollars", ("$5", "US$5", "5 dollars")),
        ("5欧元", "5 euros", ("€5", "5 euro")),
        ("5日元", "5 yen", ("¥5",)),
        ("5英镑", "5 pounds", ("£5",)),
        ("5港元", "5 Hong Kong dollars", ()),
        ("5港币", "5 Hong Kong dollars", ()),
        ("5.5元", "5.5 yuan", ("5.5 RMB", "RMB 5.5", "5.5 Yuan", "¥5.5")),
        ("3万元", "30,000 yuan", ("30,000 RMB", "RMB 30,000", "30,000 Yuan", "¥30,000")),
        ("2万美元", "20,000 US dollars", ("$20,000", "US$20,000", "20,000 dollars")),
        ("5000万美元", "50 million US dollars", ("$50 million", "US$50 million", "50 million dollars")),
        ("1万亿欧元", "1 trillion euros", ("€1 trillion", "1 trillion euro")),
        ("1,234,567元", "1,234,567 yuan", ("1,234,567 RMB", "RMB 1,234,567", "1,234,567 Yuan", "¥1,234,567")),
        ("1000日元", "1000 yen", ("1,000 yen", "¥1000", "¥1,000")),
        (
            "1000美元",
            "1000 US dollars",
            ("1,000 US dollars", "$1000", "US$1000", "1000 dollars", "$1,000", "US$1,000", "1,000 dollars"),
        ),
        (
            "1 000元",
            "1 000 yuan",
            ("1,000 yuan", "1 000 RMB", "RMB 1 000", "1 000 Yuan", "¥1 000", "1,000 RMB", "RMB 1,000", "1,000 Yuan")
            + ("¥1,000",),
        ),
        (
            "3 747 800元",
            "3 747 800 yuan",
            ("3,747,800 yuan", "3 747 800 RMB", "RMB 3 747 800", "3 747 800 Yuan", "¥3 747 800", "3,747,800 RMB")
            + ("RMB 3,747,800", "3,747,800 Yuan", "¥3,747,800"),
        ),
    ],
)
def test_each_currency_word_and_its_alternatives(text: str, english: str, alternatives: tuple[str, ...]) -> None:
    amount = only(f"共{text}。")
    assert (amount.start, amount.end, amount.english) == (1, 1 + len(text), english)
    assert amount.alternatives == alternatives


@pytest.mark.parametrize(
    ("text", "english"),
    [
        ("$5", "$5"),
        ("＄5", "$5"),
        ("€5", "€5"),
        ("£5", "£5"),
        ("￡5", "£5"),
        ("¥5", "¥5"),
        ("￥5", "¥5"),
        ("$ 5", "$5"),
        ("US$25", "US$25"),
        ("HK$100", "HK$100"),
        ("NT$500", "NT$500"),
        ("¥3万", "¥30,000"),
        ("￥3万", "¥30,000"),
        ("$5亿美元", "$500 million"),
        ("$5美元", "$5"),
        ("¥1,299", "¥1,299"),
    ],
)
def test_each_currency_sign_stays_with_its_amount(text: str, english: str) -> None:
    amount = only(f"价格{text}。")
    assert (amount.start, amount.end, amount.english, amount.kind, amount.alternatives) == (
        2,
        2 + len(text),
        english,
        "amount",
        (),
    )


@pytest.mark.parametrize("text", ["3 747 800", "12.5", "1000000", "v3万", "A3万", "3.万", ".5万", "1,2345万"])
def test_digits_without_a_unit_or_inside_an_identifier_are_no_amount(text: str) -> None:
    assert find_amounts(text) == []


# --- dates and their limits --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "english", "alternatives"),
    [
        ("2024年3月15日", "March 15, 2024", ("15 March 2024",)),
        ("2024年3月15号", "March 15, 2024", ("15 March 2024",)),
        ("2020 年 1 月 15 日", "January 15, 2020", ("15 January 2020",)),
        ("2024年3月", "March 2024", ()),
        ("3月15日", "March 15", ("15 March",)),
        ("12月31日", "December 31", ("31 December",)),
        ("1月1日", "January 1", ("1 January",)),
        ("2024年", "2024", ()),
        ("2024年度", "2024", ()),
    ],
)
def test_dates(text: str, english: str, alternatives: tuple[str, ...]) -> None:
    amount = only(f"在{text}，")
    assert (amount.english, amount.kind, amount.alternatives) == (english, "date", alternatives)
    assert amount.start == 1


@pytest.mark.parametrize(
    "text", ["13月", "0月", "3月32日", "3月0日", "2024年13月", "2024年0月5日", "3月", "15日", "3号"]
)
def test_a_month_or_day_outside_its_range_is_no_date(text: str) -> None:
    assert [a for a in find_amounts(text) if a.kind == "date" and "月" in text[a.start : a.end]] == []


def test_the_decades_are_no_year() -> None:
    # 1990年代 is "the 1990s": turning it into "1990" loses the decade
    assert find_amounts("1990年代") == []
    assert find_amounts("1980-1990年代") == []


# --- ranges: one unit written after two numbers ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "english", "kind", "alternatives"),
    [
        ("2018-2030年", "2018-2030", "date", ("2018–2030", "2018 to 2030")),
        ("2018年-2030年", "2018-2030", "date", ("2018–2030", "2018 to 2030")),
        ("2018年至2030年", "2018 to 2030", "date", ("2018-2030", "2018–2030")),
        ("2018～2030年", "2018-2030", "date", ("2018–2030", "2018 to 2030")),
        ("3-5万", "30,000-50,000", "amount", ("30,000–50,000", "30,000 to 50,000")),
        ("3 - 5万", "30,000-50,000", "amount", ("30,000–50,000", "30,000 to 50,000")),
        ("3.5-4.5万", "35,000-45,000", "amount", ("35,000–45,000", "35,000 to 45,000")),
        (
            "10～20亿美元",
            "1-2 billion US dollars",
            "amount",
            ("1–2 billion US dollars", "1 to 2 billion US dollars", "$1-2 billion", "US$1-2 billion")
            + ("1-2 billion dollars",),
        ),
        (
            "3至5万元",
            "30,000 to 50,000 yuan",
            "amount",
            ("30,000-50,000 yuan", "30,000–50,000 yuan", "30,000 to 50,000 RMB", "RMB 30,000 to 50,000")
            + ("30,000 to 50,000 Yuan", "¥30,000 to 50,000"),
        ),
        (
            "1.5至2亿元",
            "150 to 200 million yuan",
            "amount",
            ("150-200 million yuan", "150–200 million yuan", "150 to 200 million RMB", "RMB 150 to 200 million")
            + ("150 to 200 million Yuan", "¥150 to 200 million"),
        ),
        ("1.5万-2亿", "15,000-200 million", "amount", ("15,000–200 million", "15,000 to 200 million")),
        ("5千万-2亿", "50-200 million", "amount", ("50–200 million", "50 to 200 million")),
        ("3千亿-1万亿", "300 billion-1 trillion", "amount", ("300 billion–1 trillion", "300 billion to 1 trillion")),
        ("$5-$10", "$5-$10", "amount", ("$5–$10", "$5 to $10")),
        ("$5-10", "$5-10", "amount", ("$5–10", "$5 to 10")),
        ("¥10-20万", "¥100,000-200,000", "amount", ("¥100,000–200,000", "¥100,000 to 200,000")),
        ("3-5月", "March-May", "date", ("March–May", "March to May")),
        ("12月-2月", "December-February", "date", ("December–February", "December to February")),
        ("2024年4～6月", "April-June 2024", "date", ("April–June 2024", "April to June 2024")),
        ("3月1-5日", "March 1-5", "date", ("March 1–5", "March 1 to 5", "1-5 March")),
        ("3月1日-5日", "March 1-5", "date", ("March 1–5", "March 1 to 5", "1-5 March")),
        ("2024年3月1-5日", "March 1-5, 2024", "date", ("March 1–5, 2024", "March 1 to 5, 2024", "1-5 March 2024")),
        ("2015年5月2日至5日", "May 2 to 5, 2015", "date", ("May 2-5, 2015", "May 2–5, 2015", "2 to 5 May 2015")),
        ("5月30日至6月2日", "May 30 to June 2", "date", ("May 30-June 2", "May 30–June 2", "30 May to 2 June")),
        ("5月30日到6月2日", "May 30 to June 2", "date", ("May 30-June 2", "May 30–June 2", "30 May to 2 June")),
        (
            "2015年5月30日至6月2日",
            "May 30 to June 2, 2015",
            "date",
            ("May 30-June 2, 2015", "May 30–June 2, 2015", "30 May to 2 June 2015"),
        ),
    ],
)
def test_ranges(text: str, english: str, kind: str, alternatives: tuple[str, ...]) -> None:
    amount = only(f"（{text}）")
    assert (amount.start, amount.end, amount.english, amount.kind) == (1, 1 + len(text), english, kind)
    assert amount.alternatives == alternatives


@pytest.mark.parametrize("separator", ["-", "－", "–", "—", "~", "～", "〜"])  # each written separator becomes "-"
def test_each_range_separator(separator: str) -> None:
    assert only(f"3{separator}5万").english == "30,000-50,000"
    assert only(f"2018{separator}2030年").english == "2018-2030"


@pytest.mark.parametrize("text", ["0-5月", "3-13月", "1-0月", "3月1-32日", "3月0-5日", "13月1-5日", "5月30日至13月2日"])
def test_a_range_with_a_month_or_day_out_of_range_is_no_date_range(text: str) -> None:
    assert not any(a.english.count("-") or " to " in a.english for a in find_amounts(text) if a.kind == "date")


def test_a_longer_string_of_numbers_is_no_range() -> None:
    assert [(a.start, a.english) for a in find_amounts("138-0013-8000元")] == [(9, "8000 yuan")]


def test_amounts_come_in_order_without_overlaps() -> None:
    found = find_amounts("2024年3月15日，公司收入3-5万元，利润$5亿，2018-2030年。")
    assert [(a.english, a.kind) for a in found] == [
        ("March 15, 2024", "date"),
        ("30,000-50,000 yuan", "amount"),
        ("$500 million", "amount"),
        ("2018-2030", "date"),
    ]
    assert all(a.end <= b.start for a, b in zip(found, found[1:], strict=False))


# --- the formatting thresholds ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "english"),
    [
        ("999999", "999,999"),
        ("999999.5", "999,999.5"),
        ("1000000", "1 million"),
        ("1234567.8", "1.235 million"),
        ("999999999", "1000 million"),
        ("1000000000", "1 billion"),
        ("1500000000", "1.5 billion"),
        ("1000000000000", "1 trillion"),
        ("25000000000000", "25 trillion"),
        ("1500", "1,500"),
        ("1234.50", "1,234.5"),
        ("0.5", "0.5"),
        ("7", "7"),
        ("30000", "30,000"),
        ("100000000", "100 million"),
    ],
)
def test_format_amount(value: str, english: str) -> None:
    assert format_amount(Decimal(value)) == english


# --- the pattern builders (called once at import, so tested directly: mutmut's workers import before a mutant) --


def test_alternatives_put_the_longest_word_first_and_escape_each() -> None:
    from handler.text.numbers import _alternatives, _separator

    assert _alternatives({"万": 1, "万亿": 2, "千": 3}) == "万亿|万|千"
    assert _alternatives({"a": 0, "a.b": 0, "$": 0}) == r"a\.b|a|\$"
    assert _alternatives({}) == ""
    pattern = re.compile(_separator("joiner"))
    assert pattern.fullmatch(" 至 ")["joiner"] == "至"  # type: ignore[index]
    assert [pattern.fullmatch(sign) is not None for sign in ("-", "－", "–", "—", "~", "～", "〜", "到", "+")] == [
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        False,
    ]
