"""Output cleaning: make a decoded English translation read like ordinary text.

``clean_translation`` removes what a Marian model or its detokenizer can leave behind and nothing else:

* special tokens and SentencePiece debris (``<unk>``, ``<pad>``, ``</s>``, ``<s>``, ``▁``, ``⁇``);
* full-width punctuation copied from the Chinese source (``，。！？；：（）`` and full-width letters and
  digits) becomes its ASCII form;
* spacing: whitespace runs collapse to one space (a translation is one line); no space before
  ``, . ! ? ; : ) ] } %``, one after ``, ; :`` and before a following word after ``! ?``; no space just
  inside brackets or a pair of quotes; contractions split by the tokenizer (``don 't``) are rejoined;
* runs of repeated punctuation (``,,,`` → ``,``, ``!!!!`` → ``!``, ``....`` → ``...``; ``...`` stays an
  ellipsis) and a comma before a full stop;
* degenerate loops: a word said four or more times in a row, or a phrase of two to eight words said three or
  more times in a row, is said once (``the the the the`` → ``the``). Runs without a letter (``0 0 0 0``) stay.

URLs and e-mail addresses are set aside before any rule runs and put back unchanged, and no rule touches
a dot, comma or colon between digits, so ``3.14``, ``1,000``, ``10:30`` and ``https://a.cn/x?y=1`` survive.
"""

from __future__ import annotations

import re
from collections import Counter

_SPECIAL_TOKENS = re.compile(r"</?s>|<pad>|<unk>|<mask>|[▁⁇]")
_FULL_WIDTH = str.maketrans(
    {
        **{chr(code): chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)},  # ！ … ～ → ! … ~
        "\u3000": " ",
        "（": " (",  # a full-width bracket is its own spacing: 50%（约） → 50% (about)
        "）": ") ",
        "。": ".",
        "、": ",",
        "｡": ".",
        "「": '"',
        "」": '"',
        "『": '"',
        "』": '"',
        "【": "[",
        "】": "]",
        "〔": "(",
        "〕": ")",
    }
)
_PROTECTED = re.compile(
    r"(?:https?://|ftp://|www\.)[^\s<>\"“”]*[^\s<>\"“”.,;:!?)\]}'’]"  # URLs, minus trailing punctuation
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # e-mail addresses
)
_PLACEHOLDER_BASE = 0xF0000  # Supplementary Private Use Area-A: hardly ever in a translation, and when one
_PLACEHOLDER_END = 0xFFFFD  # is, the placeholders skip it
_PLACEHOLDER = re.compile("[\U000f0000-\U000ffffd]")

_CONTRACTION = re.compile(r"(?<=[A-Za-z]) ?' ?(s|t|re|ve|ll|d|m)\b|(?<=[A-Za-z]) (n't)\b", re.IGNORECASE)
_SPACE_BEFORE = re.compile(r" +([,!?;:)\]}]|\.(?!\d))")
_SPACE_BEFORE_PERCENT = re.compile(r"(?<=\d) +%")
_SPLIT_TIME_OF_DAY = re.compile(r"\b([aApP])\. ([mM])\.")  # "p. m." (in the training data) -> "p.m."
_SPACE_AFTER_CURRENCY = re.compile(r"([$€£¥]) +(?=\d)")
_SPACE_AFTER_OPENING = re.compile(r"([(\[{]) +")
_SPACE_AFTER_CLAUSE_MARK = re.compile(r"([,;:])(?=[^\W\d_])")
_SPACE_AFTER_STOP = re.compile(r"([!?])(?=[A-Za-z])|(?<=[a-z]{2})(\.)(?=[A-Z][a-z])")
_CURLY_QUOTE_SPACING = (
    (re.compile(r"([“‘]) +"), r"\1"),
    (re.compile(r" +([”])"), r"\1"),
    (re.compile(r"(?<=\w)“"), " “"),
    (re.compile(r"”(?=\w)"), "” "),
)

_REPEATED_MARK = re.compile(r"([,;:!?])(?: ?\1)+")
_LONG_DOTS = re.compile(r"\.{4,}")
_TWO_DOTS = re.compile(r"(?<!\.)\.\.(?!\.)")
_REPEATED_ELLIPSIS = re.compile(r"…{2,}")
_MARK_BEFORE_STOP = re.compile(r"[,;:] ?([.!?])(?!\.)")
_EMPTY_BRACKETS = re.compile(r"(?<!\w)(?:\(\s*\)|\[\s*\])|“\s*”")  # print() stays
_LEADING_MARKS = re.compile(r"^[,;:]+ *")

_WORD = r"[^\W_]+(?:['’-][^\W_]+)*"
_NOT_WORD_BEFORE = r"(?<![\w'’-])"
_NOT_WORD_AFTER = r"(?![\w'’-])"
_MAX_PHRASE_WORDS = 8


def _repetition(words: int, times: int) -> re.Pattern[str]:
    unit = _WORD + rf"(?:[,;]? {_WORD}){{{words - 1}}}"
    return re.compile(rf"{_NOT_WORD_BEFORE}({unit})(?:[,;.!?]? \1{_NOT_WORD_AFTER}){{{times - 1},}}", re.IGNORECASE)


_REPETITIONS = tuple(_repetition(words, 4 if words == 1 else 3) for words in range(1, _MAX_PHRASE_WORDS + 1))
_LETTER = re.compile(r"[^\W\d_]")
_WORD_ONLY = re.compile(_WORD)


def clean_translation(text: str) -> str:
    """``text`` with special tokens, odd spacing, repeated punctuation and repetition loops removed."""
    text = _SPECIAL_TOKENS.sub(" ", text).translate(_FULL_WIDTH)
    text, protected = _protect(text)
    text = " ".join(text.split())
    text = _CONTRACTION.sub(_join_contraction, text)
    text = _tidy(text)
    if _may_repeat(text):
        for pattern in _REPETITIONS:
            text = pattern.sub(_say_once, text)
        text = _tidy(text)
    return _restore(text, protected).strip()


def _protect(text: str) -> tuple[str, dict[str, str]]:
    """Replace URLs and e-mail addresses with placeholder characters no rule touches (ones the text lacks)."""
    taken = set(_PLACEHOLDER.findall(text))
    free = (chr(code) for code in range(_PLACEHOLDER_BASE, _PLACEHOLDER_END + 1) if chr(code) not in taken)
    protected: dict[str, str] = {}

    def stash(match: re.Match[str]) -> str:
        placeholder = next(free, None)
        if placeholder is None:  # tens of thousands of URLs in one translation: leave the rest as they are
            return match.group()
        protected[placeholder] = match.group()
        return placeholder

    return _PROTECTED.sub(stash, text), protected


def _restore(text: str, protected: dict[str, str]) -> str:
    if not protected:
        return text
    return _PLACEHOLDER.sub(lambda match: protected.get(match.group(), match.group()), text)


def _join_contraction(match: re.Match[str]) -> str:
    if match.group(2):
        return match.group(2)
    return "'" + match.group(1)


def _tidy(text: str) -> str:
    """Spacing, punctuation runs and quotes, repeated until nothing changes (one fix can enable another)."""
    for _ in range(4):
        before = text
        text = " ".join(_EMPTY_BRACKETS.sub(" ", text).split())
        text = _fix_quote_spacing(_collapse_repeated_punctuation(_fix_spacing(text)))
        text = _LEADING_MARKS.sub("", " ".join(text.split()))
        if text == before:
            break
    return text


def _fix_spacing(text: str) -> str:
    text = _SPACE_BEFORE.sub(r"\1", text)
    text = _SPACE_BEFORE_PERCENT.sub("%", text)
    text = _SPLIT_TIME_OF_DAY.sub(r"\1.\2.", text)
    text = _SPACE_AFTER_CURRENCY.sub(r"\1", text)
    text = _SPACE_AFTER_OPENING.sub(r"\1", text)
    text = _SPACE_AFTER_CLAUSE_MARK.sub(r"\1 ", text)
    text = _SPACE_AFTER_STOP.sub(lambda match: (match.group(1) or match.group(2)) + " ", text)
    for pattern, replacement in _CURLY_QUOTE_SPACING:
        text = pattern.sub(replacement, text)
    return text


def _collapse_repeated_punctuation(text: str) -> str:
    text = _REPEATED_MARK.sub(r"\1", text)
    text = _LONG_DOTS.sub("...", text)
    text = _TWO_DOTS.sub(".", text)
    text = _REPEATED_ELLIPSIS.sub("…", text)
    return _MARK_BEFORE_STOP.sub(r"\1", text)


def _fix_quote_spacing(text: str) -> str:
    """No space just inside a pair of ASCII double quotes, one between a quote and a word outside it."""
    parts = text.split('"')
    if len(parts) == 1 or len(parts) % 2 == 0:  # no quotes, or an odd number: cannot tell which opens
        return text
    for index in range(1, len(parts), 2):
        parts[index] = parts[index].strip()
        before, after = parts[index - 1], parts[index + 1]
        if before and (before[-1].isalnum() or before[-1] in ",;:"):
            parts[index - 1] = before + " "
        if after and after[0].isalnum():
            parts[index + 1] = " " + after
    return '"'.join(parts)


def _may_repeat(text: str) -> bool:
    """Whether some word occurs three times: every loop the patterns collapse needs one (a fast pre-check)."""
    counts = Counter(_WORD_ONLY.findall(text.lower()))
    return bool(counts) and max(counts.values()) >= 3


def _say_once(match: re.Match[str]) -> str:
    unit = match.group(1)
    return unit if _LETTER.search(unit) else match.group()
