"""A text file's bytes decoded: UTF-8 with or without a byte-order mark, UTF-16 or UTF-32 with one, GB18030/GBK or
Big5/Big5-HKSCS told apart by their characters, or the encoding the caller names; binary files (NUL bytes, or more
than 1 % control characters) refused, saying what to send instead.

GB18030 and Big5 cannot be told apart by validity: almost every Big5 byte sequence is also valid GB18030 (請問最近的
捷運站在哪裡？ saved as Big5 reads without error as GB18030, as unrelated characters). A file that is neither
UTF-8 nor marked is therefore decoded both ways and each result scored by how common its characters are
(``COMMON_HANZI``: the 6,000 most frequent Han characters, Simplified and Traditional forms, most frequent first,
written by ``python -m build.common_hanzi``): each non-ASCII character scores ``-log(rank + 10)``, one outside the
list ``-log(UNKNOWN_RANK)``. A real text is mostly made of the first few hundred characters of the list, a
mis-decoded one of characters drawn almost at random from the whole code table, private-use and rare ones included.
The better reading is taken when it wins by at least ``MIN_MARGIN`` (natural log, the whole text's score);
closer than that (a line of two or three characters can be) the file is refused, naming the fix: the ``encoding``
option. The rate of right decisions on real-world samples is measured by tests/runtime_text/test_encoding_detection.py
and written in docs/files.md.
"""

from __future__ import annotations

import codecs
import math
import unicodedata
from functools import cache
from pathlib import Path

from handler.errors import InvalidRequestError

# byte-order marks, longest first (the UTF-32 LE mark begins with the UTF-16 LE one)
_BOMS: tuple[tuple[bytes, str, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32LE with BOM"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32BE with BOM"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8 with BOM"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16LE with BOM"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16BE with BOM"),
)
_ALLOWED_CONTROLS = frozenset("\t\n\r\f\v")
_MAX_CONTROL_SHARE = 0.01  # more control characters than this (or any NUL) means "binary"
SUPPORTED_ENCODINGS = (
    "UTF-8 (with or without BOM), UTF-16 or UTF-32 with a byte-order mark, GB18030/GBK or Big5/Big5-HKSCS"
)
ENCODING_FIX = (
    "name the encoding with the encoding option (--encoding on the command line, the form field encoding on "
    "/v2/document and /translate_file, the charset of an uploaded object's Content-Type), e.g. big5 or gb18030, "
    "or save the file as UTF-8"
)

COMMON_HANZI = Path(__file__).parent / "data" / "common_hanzi.txt"
COMMON_HANZI_COUNT = 6000
UNKNOWN_RANK = 4 * COMMON_HANZI_COUNT  # a character outside the list scores as if ranked here
_RANK_OFFSET = 10  # flattens the top of the list: the 1st character is not 10 times likelier than the 10th
_PUNCTUATION_RANK = 20  # CJK and full-width punctuation and digits: frequent in both scripts
_PUNCTUATION = frozenset(
    "，。、；：？！「」『』（）《》〈〉【】〔〕…—─～·‧•﹐﹑﹒﹔﹕﹖﹗“”‘’　"
    + "".join(chr(code) for code in range(0xFF01, 0xFF5F))
)
_SHORT_UTF8 = 4  # at most this many non-ASCII characters of UTF-8 are checked against a Chinese reading
MIN_MARGIN = 4.0  # the better reading's score over the other's, natural log: e**4 ≈ 55 times likelier

# the multibyte Chinese encodings told apart by their characters: (codec, description)
_GB18030 = ("gb18030", "GB18030")
_BIG5 = ("big5hkscs", "Big5")  # Big5-HKSCS decodes Big5 as Big5 does, and Hong Kong's characters besides
_DESCRIPTION_BY_CODEC = {
    "utf-8": "UTF-8",
    "utf-8-sig": "UTF-8",
    "utf-16": "UTF-16",
    "utf-16-le": "UTF-16LE",
    "utf-16-be": "UTF-16BE",
    "utf-32": "UTF-32",
    "gb18030": "GB18030",
    "gbk": "GBK",
    "gb2312": "GB2312",
    "big5": "Big5",
    "big5hkscs": "Big5-HKSCS",
    "cp950": "Big5 (cp950)",
}


def decode_text(data: bytes, name: str = "the file", encoding: str | None = None) -> tuple[str, str]:
    """Decode ``data`` to text; returns ``(text, encoding description)``. ``encoding`` (a codec name: big5,
    gb18030, utf-16, ...) decodes it as told instead of detecting. ``InvalidRequestError`` if not text, or not
    known to be which Chinese encoding."""
    if encoding:
        return _decoded_as(data, name, encoding)
    for bom, codec, description in _BOMS:
        if data.startswith(bom):
            try:
                return _checked(data[len(bom) :].decode(codec), name), description
            except UnicodeDecodeError as error:
                raise InvalidRequestError(
                    f"{name} starts with a {description.split(' ')[0]} byte-order mark but is not valid "
                    f"{description.split(' ')[0]} (byte {error.start:,}); save it again as UTF-8"
                ) from None
    if b"\x00" in data:
        raise InvalidRequestError(
            f"{name} looks binary (it holds NUL bytes) or is UTF-16 without a byte-order mark; "
            f"send text in {SUPPORTED_ENCODINGS}"
        )
    try:
        utf8 = data.decode("utf-8")
    except UnicodeDecodeError as utf8_error:
        readings = [
            (reading, codec, description)
            for codec, description in (_GB18030, _BIG5)
            if (reading := _decoded_or_none(data, codec)) is not None
        ]
        if not readings:
            raise InvalidRequestError(
                f"{name} is not text in a supported encoding: not UTF-8 (invalid byte 0x{data[utf8_error.start]:02x} "
                f"at offset {utf8_error.start:,}) and not GB18030/GBK or Big5 either; send {SUPPORTED_ENCODINGS}"
            ) from None
        for reading, _, _ in readings:
            _checked(reading, name)  # binary is said before any doubt about the encoding
        text, codec, description = _likelier(readings, name)
        if codec == _BIG5[0] and not _encodes(text, "big5"):
            description = "Big5-HKSCS"
        return _checked(text, name), description
    _refuse_if_short_and_chinese(data, utf8, name)
    return _checked(utf8, name), "UTF-8"


def _refuse_if_short_and_chinese(data: bytes, utf8: str, name: str) -> None:
    """A few GB18030 or Big5 characters can be valid UTF-8 too (谢谢 in GB18030 is the UTF-8 of лл): a UTF-8
    reading of at most ``_SHORT_UTF8`` non-ASCII characters, all of two bytes (below U+0800) and not all Western
    European letters (U+00C0–U+00FF: café, Müller stay UTF-8), that a Chinese reading beats by ``MIN_MARGIN`` is
    refused as ambiguous."""
    foreign = [char for char in utf8 if char >= "\x80"]
    if not foreign or len(foreign) > _SHORT_UTF8 or any(char > "\u07ff" for char in foreign):
        return  # none, enough to trust, or UTF-8 of three bytes or more (Chinese in UTF-8 is never doubted)
    if all("\u00c0" <= char <= "\u00ff" for char in foreign):
        return
    utf8_score = -len(foreign) * math.log(UNKNOWN_RANK + _RANK_OFFSET)
    for codec, description in (_GB18030, _BIG5):
        reading = _decoded_or_none(data, codec)
        if reading is not None and score(reading) - utf8_score >= MIN_MARGIN:
            raise InvalidRequestError(
                f"{name} reads as UTF-8 ({utf8.strip()[:12]!r}) and as {description} ({reading.strip()[:12]!r}): "
                f"too little text to tell which; {ENCODING_FIX}"
            )


def score(text: str) -> float:
    """How likely ``text`` is as Chinese, by the ranks of its non-ASCII characters in ``COMMON_HANZI``: the sum of
    ``-log(rank + 10)``, ``-log(UNKNOWN_RANK)`` for a character outside the list (0 for an ASCII-only text)."""
    ranks = _ranks()
    total = 0.0
    for char in text:
        if char < "\x80":
            continue
        if char in _PUNCTUATION:
            rank = _PUNCTUATION_RANK
        else:
            rank = ranks.get(char, UNKNOWN_RANK)
        total -= math.log(rank + _RANK_OFFSET)
    return total


@cache
def _ranks() -> dict[str, int]:
    characters = "".join(COMMON_HANZI.read_text(encoding="utf-8").split())
    return {char: rank for rank, char in enumerate(characters)}


def _likelier(readings: list[tuple[str, str, str]], name: str) -> tuple[str, str, str]:
    if len(readings) == 1:
        return readings[0]
    (first, *_), (second, *_) = readings
    first_score, second_score = score(first), score(second)
    if abs(first_score - second_score) < MIN_MARGIN:
        sample = first[:12].strip()
        raise InvalidRequestError(
            f"{name} is not UTF-8 and reads as well in GB18030/GBK (Simplified Chinese, e.g. {sample!r}) as in "
            f"Big5 (Traditional Chinese, e.g. {second[:12].strip()!r}): too little text to tell which; {ENCODING_FIX}"
        )
    return readings[0] if first_score > second_score else readings[1]


def _decoded_or_none(data: bytes, codec: str) -> str | None:
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        return None


def _encodes(text: str, codec: str) -> bool:
    try:
        text.encode(codec)
    except UnicodeEncodeError:
        return False
    return True


def check_encoding(encoding: str, name: str = "the file") -> codecs.CodecInfo:
    """The text codec ``encoding`` names (an ``encoding`` option checked as soon as it is given);
    ``InvalidRequestError`` naming a few that are."""
    try:
        info = codecs.lookup(encoding)
    except (LookupError, ValueError):  # ValueError: a NUL character in the name (schemathesis sent one: it was a 500)
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):
        raise InvalidRequestError(
            f"unknown encoding {encoding!r} for {name}; name a text encoding such as utf-8, utf-16, gb18030, gbk, "
            f"big5 or big5hkscs"
        )
    return info


def _decoded_as(data: bytes, name: str, encoding: str) -> tuple[str, str]:
    info = check_encoding(encoding, name)
    codec = "utf-8-sig" if info.name == "utf-8" else info.name  # a UTF-8 byte-order mark is not text
    description = _DESCRIPTION_BY_CODEC.get(info.name, info.name)
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as error:
        raise InvalidRequestError(
            f"{name} is not valid {description} as the encoding option says (byte 0x{data[error.start]:02x} at "
            f"offset {error.start:,}); name the file's real encoding, or leave the option out to detect it"
        ) from None
    return _checked(text, name), description


def _checked(text: str, name: str) -> str:
    controls = sum(1 for ch in text if ch not in _ALLOWED_CONTROLS and unicodedata.category(ch) == "Cc")
    if "\x00" in text or (text and controls / len(text) > _MAX_CONTROL_SHARE):
        raise InvalidRequestError(
            f"{name} looks binary ({controls:,} control characters in {len(text):,}); send plain text in "
            f"{SUPPORTED_ENCODINGS}"
        )
    return text
