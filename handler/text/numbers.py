"""Numbers written with digits and a Chinese unit, as the English amount or date they mean.

A model translating ``1.25亿元`` has to multiply, and small models get it wrong ("1.25 billion", "125 yuan").
``find_amounts`` finds such numbers and says what English they are, so the service can put that English in the
output as a protected span (``handler.text.spans``):

* amounts: ``3万`` -> ``30,000``; ``1.25亿元`` -> ``125 million yuan``; ``5万亿美元`` -> ``5 trillion US dollars``;
  ``2.5千`` -> ``2,500``; ``800元`` -> ``800 yuan``. Below a million the amount is written in full with thousands
  separators; from a million on as ``<number> million|billion|trillion`` (at most three decimals, trailing zeros
  dropped).
* dates: ``2024年3月15日`` -> ``March 15, 2024``; ``2024年3月`` -> ``March 2024``; ``3月15日`` -> ``March 15``;
  ``2024年`` (four digits) -> ``2024``. A month outside 1-12 or a day outside 1-31 is not a date.
* currency signs written before a number stay with it, in the form English writes them: ``¥1,299`` ->
  ``¥1,299``, ``￥3万`` -> ``¥30,000``, ``$5亿`` -> ``$500 million``, ``US$25`` -> ``US$25``. A sign is kept rather
  than named because the sign alone does not say which currency it is (``¥`` is yuan or yen, ``$`` US or another
  dollar); a currency *word* (``元``, ``美元``, ``欧元``) does, and becomes the English word after the amount.
* ranges: a unit written once after two numbers applies to both. ``2018-2030年`` and ``2018年-2030年`` ->
  ``2018-2030``; ``3-5万`` -> ``30,000-50,000``; ``10～20亿美元`` -> ``1-2 billion US dollars``; ``3-5月`` ->
  ``March-May``; ``3月1-5日`` -> ``March 1-5``. The separators ``- － – — ~ ～ 〜`` become ``-``, and ``至`` or ``到``
  becomes `` to `` (``3至5万元`` -> ``30,000 to 50,000 yuan``).

Only digits count (ASCII or full-width, with ``,`` thousands separators and a ``.`` decimal point): numbers
spelled in Chinese characters (三万) are the model's to translate.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal

# multipliers, longest first so that 万亿 wins over 万
MULTIPLIERS: dict[str, int] = {
    "万亿": 10**12,
    "千亿": 10**11,
    "百亿": 10**10,
    "十亿": 10**9,
    "千万": 10**7,
    "百万": 10**6,
    "十万": 10**5,
    "亿": 10**8,
    "万": 10**4,
    "千": 10**3,
}
CURRENCIES: dict[str, str] = {
    "人民币": "yuan",
    "美元": "US dollars",
    "欧元": "euros",
    "日元": "yen",
    "英镑": "pounds",
    "港元": "Hong Kong dollars",
    "港币": "Hong Kong dollars",
    "元": "yuan",
}
# signs written before an amount, as English writes them (full-width forms become the ordinary sign)
SIGNS: dict[str, str] = {"¥": "¥", "￥": "¥", "$": "$", "＄": "$", "€": "€", "£": "£", "￡": "£"}
_DOLLAR_PREFIXES = ("US", "HK", "NT")  # US$25, HK$100, NT$500: the prefix says which dollar, and stays
# a range's separator and its English
RANGE_SEPARATORS: dict[str, str] = {sign: "-" for sign in "-－–—~～〜"} | {"至": " to ", "到": " to "}
MONTHS = "January February March April May June July August September October November December".split()
_SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"))

# thousands separated by commas, or by spaces as in UN documents ("3 747 800")
_NUMBER = (
    r"(?:[0-9０-９]{1,3}(?:(?:[,，]| (?=[0-9０-９]{3}(?![0-9０-９])))[0-9０-９]{3})+|[0-9０-９]+)(?:[.．][0-9０-９]+)?"
)
_INTEGER = r"[0-9０-９]{1,4}"
_YEAR = r"[0-9０-９]{4}"
_MONTH_OR_DAY = r"[0-9０-９]{1,2}"


def _alternatives(words: Mapping[str, object]) -> str:
    return "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))


_MULTIPLIER = _alternatives(MULTIPLIERS)
_CURRENCY = _alternatives(CURRENCIES)
_SIGN = rf"(?P<sign>(?:{'|'.join(_DOLLAR_PREFIXES)})?[$＄]|[¥￥€£￡]) ?"


def _separator(name: str) -> str:
    return rf" ?(?P<{name}>{_alternatives(RANGE_SEPARATORS)}) ?"


# after the number: without a sign a multiplier or a currency word is what makes it an amount; with one, either
# may follow (¥3万, $5亿美元) or neither ($25)
_UNIT = (
    rf"(?(sign)(?: ?(?P<sign_multiplier>{_MULTIPLIER})(?:{_CURRENCY})?| ?(?:{_CURRENCY}))?"
    rf"| ?(?:(?P<multiplier>{_MULTIPLIER})(?P<currency>{_CURRENCY})?|(?P<only_currency>{_CURRENCY})))"
)
# before a range: no digit, letter or hyphen (a longer string of numbers: 138-0013-8000元)
_NOT_INSIDE_A_NUMBER = r"(?<![0-9０-９.,A-Za-z\-－])"
# a digit before the number means we are inside a longer one; a letter, inside an identifier (v3万 is odd enough)
_AMOUNT = re.compile(rf"(?<![0-9０-９.,A-Za-z])(?:{_SIGN})?(?P<number>{_NUMBER}){_UNIT}")
# two numbers, one unit: 3-5万, 10～20亿美元, ¥10-20万, 1.5至2亿元 (the first number may carry its own multiplier);
_AMOUNT_RANGE = re.compile(
    rf"{_NOT_INSIDE_A_NUMBER}(?:{_SIGN})?(?P<low>{_NUMBER})(?: ?(?P<low_multiplier>{_MULTIPLIER}))?"
    rf"{_separator('separator')}(?:(?P<high_sign>[¥￥$＄€£￡]) ?)?(?P<number>{_NUMBER}){_UNIT}"
)
# days: 3月1-5日, 2015年5月2日至5日, 5月30日至6月2日 (a year written before is the range's year)
_DAY_RANGE = re.compile(
    rf"{_NOT_INSIDE_A_NUMBER}(?:(?P<year>{_YEAR}) ?年 ?)?(?P<month>{_MONTH_OR_DAY}) ?月 ?(?P<low>{_MONTH_OR_DAY})"
    rf" ?(?:[日号] ?)?{_separator('separator')}"
    rf"(?:(?P<high_month>{_MONTH_OR_DAY}) ?月 ?)?(?P<high>{_MONTH_OR_DAY}) ?[日号]"
)
# months: 3-5月, 2024年4～6月 (not 3-5月1日: that is no range of months)
_MONTH_RANGE = re.compile(
    rf"{_NOT_INSIDE_A_NUMBER}(?:(?P<year>{_YEAR}) ?年 ?)?(?P<low>{_MONTH_OR_DAY}) ?(?:月 ?)?{_separator('separator')}"
    rf"(?P<high>{_MONTH_OR_DAY}) ?月(?! ?[0-9０-９])"
)
# years: 2018-2030年, 2018年至2030年 (not 1980-1990年代: decades; not 2011年至2014年12月22日: a date ends it)
_YEAR_RANGE = re.compile(
    rf"{_NOT_INSIDE_A_NUMBER}(?P<low>{_YEAR}) ?(?:年 ?)?{_separator('separator')}(?P<high>{_YEAR}) ?年"
    rf"(?!代| ?[0-9０-９]{{1,2}} ?月)"
)
# a space may stand between the digits and the unit, as in UN documents ("2020 年 1 月 15 日")
_DATE = re.compile(
    rf"(?<![0-9０-９.,A-Za-z])(?:(?P<year>[0-9０-９]{{4}}) ?年(?!代))?"  # 1990年代: the 1990s, no year
    rf"(?:(?(year) ?)(?P<month>{_INTEGER}) ?月(?: ?(?P<day>{_INTEGER}) ?[日号])?)?"
)


@dataclass(frozen=True)
class Amount:
    """``text[start:end]`` is a number with a Chinese unit that means ``english``."""

    start: int
    end: int
    english: str
    kind: str  # "amount" or "date"
    # other correct ways to write it ("15 March 2024", "$57"): a translation that already holds one is right
    alternatives: tuple[str, ...] = ()


def find_amounts(text: str) -> list[Amount]:
    """Every amount and date in ``text``, in order, not overlapping: ranges first (``2018-2030年`` is one span, not
    ``2018-`` and a date), then dates (``2024年`` is not an amount), then amounts."""
    found: list[Amount] = []
    for kind, pattern, convert in _FINDERS:
        for match in pattern.finditer(text):
            if any(amount.start < match.end() and match.start() < amount.end for amount in found):
                continue
            converted = convert(match)
            if converted is not None:
                english, alternatives = converted
                found.append(Amount(match.start(), match.end(), english, kind, alternatives))
    return sorted(found, key=lambda amount: amount.start)


def _find_date(match: re.Match[str]) -> tuple[str, tuple[str, ...]] | None:
    english = _date(match)
    return None if english is None else (english, _date_alternatives(match))


def _find_amount(match: re.Match[str]) -> tuple[str, tuple[str, ...]]:
    english = _amount(match)
    return english, _amount_alternatives(english)


def _find_day_range(match: re.Match[str]) -> tuple[str, tuple[str, ...]] | None:
    month, low, high = _month(match.group("month")), _day(match.group("low")), _day(match.group("high"))
    high_month = _month(match.group("high_month")) if match.group("high_month") else month
    if month is None or high_month is None or low is None or high is None:
        return None
    joiner = RANGE_SEPARATORS[match.group("separator")]
    year = f" {_digits(match.group('year'))}" if match.group("year") else ""
    if high_month == month:
        english, day_first = f"{month} {low}{joiner}{high}", f"{low}{joiner}{high} {month}{year}"
    else:
        english, day_first = (
            f"{month} {low}{joiner}{high_month} {high}",
            f"{low} {month}{joiner}{high} {high_month}{year}",
        )
    english += f",{year}" if year else ""
    return english, (*_range_alternatives(english, joiner), day_first)


def _find_month_range(match: re.Match[str]) -> tuple[str, tuple[str, ...]] | None:
    low, high = _month(match.group("low")), _month(match.group("high"))
    if low is None or high is None:
        return None
    joiner = RANGE_SEPARATORS[match.group("separator")]
    year = f" {_digits(match.group('year'))}" if match.group("year") else ""
    english = f"{low}{joiner}{high}{year}"
    return english, _range_alternatives(english, joiner)


def _find_year_range(match: re.Match[str]) -> tuple[str, tuple[str, ...]]:
    joiner = RANGE_SEPARATORS[match.group("separator")]
    english = f"{_digits(match.group('low'))}{joiner}{_digits(match.group('high'))}"
    return english, _range_alternatives(english, joiner)


def _find_amount_range(match: re.Match[str]) -> tuple[str, tuple[str, ...]] | None:
    multiplier = match.group("sign_multiplier") or match.group("multiplier")
    low = _number_words(match.group("low"), match.group("low_multiplier") or multiplier)
    high = _number_words(match.group("number"), multiplier)
    for _, scale in _SCALES:  # one scale word for both ends: "1-2 billion", not "1 billion-2 billion"
        if low.endswith(f" {scale}") and high.endswith(f" {scale}"):
            low = low.removesuffix(f" {scale}")
            break
    joiner = RANGE_SEPARATORS[match.group("separator")]
    if match.group("sign") and match.group("high_sign"):  # $5-$10: the sign written twice stays twice
        high = SIGNS[match.group("high_sign")] + high
    english = _with_currency(f"{low}{joiner}{high}", match)
    return english, (*_range_alternatives(english, joiner), *_amount_alternatives(english))


def _range_alternatives(english: str, joiner: str) -> tuple[str, ...]:
    """The same range with an en dash or "to" between its ends ("2018–2030", "2018 to 2030")."""
    return tuple(english.replace(joiner, other, 1) for other in ("-", "–", " to ") if other != joiner)


def _month(raw: str) -> str | None:
    number = int(_digits(raw))
    return MONTHS[number - 1] if 1 <= number <= 12 else None


def _day(raw: str) -> int | None:
    number = int(_digits(raw))
    return number if 1 <= number <= 31 else None


def _digits(raw: str) -> str:
    """ASCII digits and point of a number, thousands separators removed."""
    return unicodedata.normalize("NFKC", raw).replace(",", "").replace("，", "").replace(" ", "")


def _date(match: re.Match[str]) -> str | None:
    year, month, day = match.group("year"), match.group("month"), match.group("day")
    if not (year or month):
        return None
    if year and not month:
        # a bare year: only when 年 is not the start of a longer unit word (2024年度 is still 2024)
        return _digits(year)
    month_number = int(_digits(month))
    if not 1 <= month_number <= 12:
        return None
    name = MONTHS[month_number - 1]
    if day is not None:
        day_number = int(_digits(day))
        if not 1 <= day_number <= 31:
            return None
        named = f"{name} {day_number}"
        return f"{named}, {_digits(year)}" if year else named
    return f"{name} {_digits(year)}" if year else None


def _date_alternatives(match: re.Match[str]) -> tuple[str, ...]:
    """ "15 March 2024" for "March 15, 2024" (day first, as in British and UN English), "15 March" for "March 15"."""
    year, month, day = match.group("year"), match.group("month"), match.group("day")
    if not (month and day):
        return ()
    named = f"{int(_digits(day))} {MONTHS[int(_digits(month)) - 1]}"
    return (f"{named} {_digits(year)}",) if year else (named,)


_SYMBOLS = {
    "US dollars": ("${}", "US${}", "{} dollars"),
    "yuan": ("{} RMB", "RMB {}", "{} Yuan", "¥{}"),
    "euros": ("€{}", "{} euro"),
    "yen": ("¥{}",),
    "pounds": ("£{}",),
}


def _amount_alternatives(english: str) -> tuple[str, ...]:
    """The same amount with a currency symbol or code ("$57" for "57 US dollars"), and a plain integer of four
    digits or more with thousands separators ("1,000 yuan" for "1000 yuan")."""
    numbers = [english.split(" ", 1)[0]]
    for word in CURRENCIES.values():
        if english.endswith(" " + word):
            numbers = [english[: -len(word) - 1]]
            break
    else:
        word = ""
    number = numbers[0]
    if re.fullmatch(r"\d{4,}", number):
        numbers.append(f"{int(number):,}")
    elif re.fullmatch(r"\d{1,3}(?: \d{3})+", number):
        numbers.append(number.replace(" ", ","))
    forms = [f"{n} {word}" for n in numbers[1:]] if word else numbers[1:]
    for n in numbers:
        forms.extend(form.format(n) for form in _SYMBOLS.get(word, ()))
    return tuple(dict.fromkeys(form for form in forms if form != english))


def _amount(match: re.Match[str]) -> str:
    return _with_currency(
        _number_words(match.group("number"), match.group("sign_multiplier") or match.group("multiplier")), match
    )


def _number_words(raw: str, multiplier: str | None) -> str:
    """A number times its Chinese multiplier in English words; without one, its digits as written."""
    if multiplier is None:
        return _plain(raw)
    return format_amount(Decimal(_digits(raw)) * MULTIPLIERS[multiplier])


def _with_currency(words: str, match: re.Match[str]) -> str:
    """A sign goes before the number as English writes it (``￥`` -> ``¥``, ``US$`` stays); a currency word becomes
    the English word after it; with a sign, a currency word after the number says nothing more and is dropped."""
    sign = match.group("sign")
    if sign:
        return f"{sign[:-1]}{SIGNS[sign[-1]]}{words}"
    currency = match.group("currency") or match.group("only_currency")
    return f"{words} {CURRENCIES[currency]}" if currency else words


def format_amount(value: Decimal) -> str:
    """``30000`` -> ``30,000``; ``125000000`` -> ``125 million``; ``1234567.8`` -> ``1.235 million``."""
    for scale, word in _SCALES:
        if value >= scale:
            scaled = (value / scale).quantize(Decimal("0.001")).normalize()
            return f"{_decimal_text(scaled)} {word}"
    if value == value.to_integral_value():
        return f"{int(value):,}"
    integral, _, fraction = _decimal_text(value.normalize()).partition(".")
    return f"{int(integral):,}.{fraction}"


def _decimal_text(value: Decimal) -> str:
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _plain(raw: str) -> str:
    """A number without a multiplier keeps its digits (ASCII forms of full-width ones)."""
    return unicodedata.normalize("NFKC", raw).replace("，", ",")


_Finder = Callable[[re.Match[str]], "tuple[str, tuple[str, ...]] | None"]
_FINDERS: tuple[tuple[str, re.Pattern[str], _Finder], ...] = (
    ("date", _DAY_RANGE, _find_day_range),
    ("date", _MONTH_RANGE, _find_month_range),
    ("date", _YEAR_RANGE, _find_year_range),
    ("amount", _AMOUNT_RANGE, _find_amount_range),
    ("date", _DATE, _find_date),
    ("amount", _AMOUNT, _find_amount),
)
