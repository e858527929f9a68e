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

Only digits count (ASCII or full-width, with ``,`` thousands separators and a ``.`` decimal point): numbers
spelled in Chinese characters (三万) are the model's to translate.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

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
MONTHS = "January February March April May June July August September October November December".split()
_SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"))

# thousands separated by commas, or by spaces as in UN documents ("3 747 800")
_NUMBER = (
    r"(?:[0-9０-９]{1,3}(?:(?:[,，]| (?=[0-9０-９]{3}(?![0-9０-９])))[0-9０-９]{3})+|[0-9０-９]+)(?:[.．][0-9０-９]+)?"
)
_INTEGER = r"[0-9０-９]{1,4}"


def _alternatives(words: Mapping[str, object]) -> str:
    return "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))


# a digit before the number means we are inside a longer one; a letter, inside an identifier (v3万 is odd enough)
_AMOUNT = re.compile(
    rf"(?<![0-9０-９.,A-Za-z])(?P<number>{_NUMBER}) ?(?:(?P<multiplier>{_alternatives(MULTIPLIERS)})"
    rf"(?P<currency>{_alternatives(CURRENCIES)})?|(?P<only_currency>{_alternatives(CURRENCIES)}))"
)
# a space may stand between the digits and the unit, as in UN documents ("2020 年 1 月 15 日")
_DATE = re.compile(
    rf"(?<![0-9０-９.,A-Za-z])(?:(?P<year>[0-9０-９]{{4}}) ?年)?"
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
    """Every amount and date in ``text``, in order, not overlapping (dates first: ``2024年`` is not an amount)."""
    found: list[Amount] = []
    taken: list[tuple[int, int]] = []
    for match in _DATE.finditer(text):
        english = _date(match)
        if english is not None:
            found.append(Amount(match.start(), match.end(), english, "date", _date_alternatives(match)))
            taken.append((match.start(), match.end()))
    for match in _AMOUNT.finditer(text):
        if any(start < match.end() and match.start() < end for start, end in taken):
            continue
        english = _amount(match)
        if english is not None:
            found.append(Amount(match.start(), match.end(), english, "amount", _amount_alternatives(english)))
    return sorted(found, key=lambda amount: amount.start)


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


def _amount(match: re.Match[str]) -> str | None:
    try:
        number = Decimal(_digits(match.group("number")))
    except InvalidOperation:  # pragma: no cover - the pattern only admits digits and one point
        return None
    multiplier = match.group("multiplier")
    currency = match.group("currency") or match.group("only_currency")
    value = number * MULTIPLIERS[multiplier] if multiplier else number
    words = format_amount(value) if multiplier else _plain(match.group("number"))
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
