"""A text file's bytes decoded: UTF-8 with or without a byte-order mark, UTF-16 or UTF-32 with one, GB18030/GBK;
binary files (NUL bytes, or more than 1 % control characters) refused, saying what to send instead."""

from __future__ import annotations

import codecs
import unicodedata

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
SUPPORTED_ENCODINGS = "UTF-8 (with or without BOM), UTF-16 or UTF-32 with a byte-order mark, or GB18030/GBK"


def decode_text(data: bytes, name: str = "the file") -> tuple[str, str]:
    """Decode ``data`` to text; returns ``(text, encoding description)``. ``InvalidRequestError`` if not text."""
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
        return _checked(data.decode("utf-8"), name), "UTF-8"
    except UnicodeDecodeError as utf8_error:
        try:
            return _checked(data.decode("gb18030"), name), "GB18030"
        except UnicodeDecodeError:
            raise InvalidRequestError(
                f"{name} is not text in a supported encoding: not UTF-8 (invalid byte 0x{data[utf8_error.start]:02x} "
                f"at offset {utf8_error.start:,}) and not GB18030/GBK either; send {SUPPORTED_ENCODINGS}"
            ) from None


def _checked(text: str, name: str) -> str:
    controls = sum(1 for ch in text if ch not in _ALLOWED_CONTROLS and unicodedata.category(ch) == "Cc")
    if "\x00" in text or (text and controls / len(text) > _MAX_CONTROL_SHARE):
        raise InvalidRequestError(
            f"{name} looks binary ({controls:,} control characters in {len(text):,}); send plain text in "
            f"{SUPPORTED_ENCODINGS}"
        )
    return text
