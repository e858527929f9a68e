"""Decoding an uploaded file: byte-order marks, UTF-8, GB18030, and what counts as binary."""

from __future__ import annotations

import codecs

import pytest

from handler.errors import InvalidRequestError
from handler.formats.encodings import decode_text

TEXT = "你好，世界。Hello 😀\n第二行\t末尾"


@pytest.mark.parametrize(
    ("bom", "codec", "description"),
    [
        (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32LE with BOM"),
        (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32BE with BOM"),
        (codecs.BOM_UTF8, "utf-8", "UTF-8 with BOM"),
        (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16LE with BOM"),
        (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16BE with BOM"),
    ],
)
def test_each_byte_order_mark_names_its_encoding(bom: bytes, codec: str, description: str) -> None:
    # the UTF-32LE mark (FF FE 00 00) begins with the UTF-16LE one (FF FE): it must be recognised first
    assert decode_text(bom + TEXT.encode(codec)) == (TEXT, description)


def test_utf8_without_a_mark_and_gb18030() -> None:
    assert decode_text(TEXT.encode("utf-8")) == (TEXT, "UTF-8")
    assert decode_text("你好，世界。".encode("gb18030")) == ("你好，世界。", "GB18030")


def test_a_mark_followed_by_invalid_bytes_is_refused_naming_the_encoding() -> None:
    with pytest.raises(InvalidRequestError, match=r"^f.txt starts with a UTF-32LE byte-order mark but is not valid"):
        decode_text(codecs.BOM_UTF32_LE + b"\x00\x00\x11\x00", "f.txt")  # U+110000 is past Unicode's end


def test_control_characters_beyond_one_percent_mean_binary() -> None:
    # no NUL byte at all, so only the share of control characters can tell
    with pytest.raises(InvalidRequestError, match=r"^f.bin looks binary \(300 control characters in 600\)"):
        decode_text(b"\x01\x02\x1babc" * 100, "f.bin")


def test_one_percent_of_control_characters_is_still_text() -> None:
    # one escape character in 100 characters is allowed (a terminal colour code in a log, say); one in 99 is not
    assert decode_text(b"\x1b" + b"a" * 99) == ("\x1b" + "a" * 99, "UTF-8")
    with pytest.raises(InvalidRequestError, match=r"looks binary \(1 control characters in 99\)"):
        decode_text(b"\x1b" + b"a" * 98)


def test_tabs_line_breaks_and_form_feeds_are_not_control_characters_here() -> None:
    text = "\t\n\r\f\v" * 50 + "好"
    assert decode_text(text.encode("utf-8")) == (text, "UTF-8")


def test_a_nul_character_is_binary_even_in_a_marked_file() -> None:
    with pytest.raises(InvalidRequestError, match="looks binary"):
        decode_text(codecs.BOM_UTF16_LE + "a\x00b".encode("utf-16-le") + "c".encode("utf-16-le") * 300)
