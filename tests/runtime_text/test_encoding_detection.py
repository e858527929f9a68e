"""Telling the encodings of Chinese text files apart from their bytes (handler.formats.encodings), measured.

The samples are everyday Chinese: Simplified sentences saved as GB18030 and GBK, the same sentences in Taiwan's
Traditional usage saved as Big5, Hong Kong written Cantonese saved as Big5-HKSCS (one line with 𠝹, a character
only HKSCS has), every one also as UTF-8 with and without BOM and UTF-16 with BOM. Each is decoded whole, line by
line, and as every run of four and of two Han characters (a two-character line is the hard case). A decision is
right (the original text), refused (an error naming the encoding option) or wrong (other text, silently): wrong
must never happen; the rates are printed (``pytest -s``) and written in docs/files.md.
"""

from __future__ import annotations

import codecs
from collections import Counter

import pytest

from handler.errors import InvalidRequestError
from handler.formats.encodings import decode_text

SIMPLIFIED = """请问最近的地铁站在哪里？
今天天气很好，我们去公园散步吧。
这个问题我们明天开会再讨论。
你好
谢谢
欢迎光临
对不起，我来晚了。
他在北京大学学习计算机科学。
会议将于下午三点在二楼会议室举行。
请把这份文件翻译成英文，周五之前发给我。
随着经济的发展，人们的生活水平不断提高。
我不知道
没问题
小心地滑
禁止吸烟
出口
新年快乐！
我爱你
等一下
这部电影真的很好看，我已经看了三遍了。"""

TRADITIONAL = """請問最近的捷運站在哪裡？
今天天氣很好，我們去公園散步吧。
這個問題我們明天開會再討論。
你好
謝謝
歡迎光臨
對不起，我來晚了。
他在臺灣大學學習電腦科學。
會議將於下午三點在二樓會議室舉行。
請把這份文件翻譯成英文，週五之前寄給我。
隨著經濟的發展，人們的生活水準不斷提高。
我不知道
沒問題
小心地滑
禁止吸菸
出口
新年快樂！
我愛你
等一下
這部電影真的很好看，我已經看了三遍了。"""

HONG_KONG = """你食咗飯未呀？
我哋聽日去邊度玩？
佢唔喺度，你遲啲再打嚟啦。
呢啲嘢好貴㗎。
唔該晒
冇問題
𠝹開個西瓜先啦。
今日好熱，我哋去飲杯嘢。"""

SUBTITLES = """1
00:00:01,000 --> 00:00:03,500
請問最近的捷運站在哪裡？

2
00:00:04,000 --> 00:00:06,000
往前走兩個路口就到了。
"""

# (texts, codec, the descriptions a right decision may give)
SAMPLES = (
    (SIMPLIFIED, "gb18030", {"GB18030"}),
    (SIMPLIFIED, "gbk", {"GB18030"}),  # GBK is a subset of GB18030: the same bytes, the same text
    (TRADITIONAL, "big5", {"Big5"}),
    (HONG_KONG, "big5hkscs", {"Big5", "Big5-HKSCS"}),
)
UNICODE_SAVES = (
    (b"", "utf-8", "UTF-8"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8 with BOM"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16LE with BOM"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16BE with BOM"),
)


def _is_han(char: str) -> bool:
    return "\u3400" <= char <= "\u9fff" or char >= "\U00020000"


def _cases(texts: str) -> dict[str, list[str]]:
    lines = texts.splitlines()
    cases = {"whole text": [texts], "line": lines}
    for size in (4, 2):
        runs = {line[i : i + size] for line in lines for i in range(len(line) - size + 1)}
        cases[f"{size} characters"] = sorted(run for run in runs if all(_is_han(char) for char in run))
    return cases


def _decision(data: bytes, text: str, accepted: set[str]) -> str:
    try:
        decoded, description = decode_text(data, "sample.txt")
    except InvalidRequestError as error:
        assert "encoding option" in str(error), error  # a refusal names the fix
        return "refused"
    return "right" if decoded == text and description in accepted else "wrong"


def measure() -> Counter[tuple[str, str, str]]:
    """``(encoding, case kind, decision)`` counted over every sample."""
    decisions: Counter[tuple[str, str, str]] = Counter()
    for texts, codec, accepted in SAMPLES:
        for kind, items in _cases(texts).items():
            for text in items:
                decisions[(codec, kind, _decision(text.encode(codec), text, accepted))] += 1
    for bom, codec, description in UNICODE_SAVES:
        for texts in (SIMPLIFIED, TRADITIONAL, HONG_KONG):
            for kind, items in _cases(texts).items():
                for text in items:
                    decision = _decision(bom + text.encode(codec), text, {description})
                    decisions[(description, kind, decision)] += 1
    return decisions


def test_no_sample_is_ever_decoded_wrong_and_short_ones_are_mostly_right() -> None:
    decisions = measure()
    rows: dict[tuple[str, str], Counter[str]] = {}
    for (encoding, kind, decision), count in decisions.items():
        rows.setdefault((encoding, kind), Counter())[decision] += count
    print("\nencoding            sample             right   refused  wrong")
    for (encoding, kind), counts in sorted(rows.items()):
        total = sum(counts.values())
        print(
            f"{encoding:<19} {kind:<16} {counts['right']:>4}/{total:<4} {counts['refused']:>5} {counts['wrong']:>6}"
            f"   {counts['right'] / total:.0%} right"
        )
    assert not any(decision == "wrong" for (_, _, decision) in decisions), "a sample was silently mis-decoded"
    for (encoding, kind), counts in rows.items():
        rate = counts["right"] / sum(counts.values())
        if kind == "2 characters":
            assert rate >= 0.75, (encoding, kind, counts)
        elif kind == "line":
            assert rate >= 0.9, (encoding, kind, counts)
        else:
            assert rate == 1.0, (encoding, kind, counts)
    unicode_rows = [counts for (encoding, _), counts in rows.items() if encoding.startswith("UTF")]
    assert all(counts["right"] == sum(counts.values()) for counts in unicode_rows)  # Unicode is never doubted


def test_the_big5_sentence_of_the_issue_reads_as_itself_not_as_gb18030() -> None:
    sentence = "請問最近的捷運站在哪裡？"
    data = sentence.encode("big5")
    assert data.decode("gb18030") != sentence  # what the old decoder answered, without an error
    assert decode_text(data) == (sentence, "Big5")


def test_a_big5_subtitle_file_reads_as_big5() -> None:
    assert decode_text(SUBTITLES.encode("big5"), "film.srt") == (SUBTITLES, "Big5")


def test_a_hong_kong_only_character_makes_it_big5_hkscs() -> None:
    line = "𠝹開個西瓜先啦，佢哋等緊。"
    with pytest.raises(UnicodeEncodeError):
        line.encode("big5")  # 𠝹 is not in Big5
    assert decode_text(line.encode("big5hkscs")) == (line, "Big5-HKSCS")


def test_a_two_character_line_that_reads_well_both_ways_is_refused_naming_the_encoding_option() -> None:
    with pytest.raises(InvalidRequestError) as refused:
        decode_text("謝謝".encode("big5"), "thanks.txt")
    message = str(refused.value)
    assert message.startswith("thanks.txt ")
    assert "GB18030" in message and "Big5" in message
    assert "--encoding" in message and "encoding option" in message


def test_a_short_gb18030_line_that_is_also_valid_utf8_is_refused_not_read_as_cyrillic() -> None:
    data = "谢谢".encode("gb18030")
    assert data.decode("utf-8") == "лл"  # valid UTF-8 too
    with pytest.raises(InvalidRequestError, match="too little text to tell"):
        decode_text(data)
    assert decode_text(data, encoding="gb18030") == ("谢谢", "GB18030")


def test_accented_latin_and_chinese_in_utf8_are_never_doubted() -> None:
    for text in ("café", "Müller", "中文", "你好", "naïve résumé"):
        assert decode_text(text.encode("utf-8")) == (text, "UTF-8")


@pytest.mark.parametrize(
    ("encoding", "codec", "description"),
    [
        ("big5", "big5", "Big5"),
        ("Big5-HKSCS", "big5hkscs", "Big5-HKSCS"),
        ("gb18030", "gb18030", "GB18030"),
        ("GBK", "gbk", "GBK"),
        ("utf-8", "utf-8", "UTF-8"),
        ("utf-16", "utf-16", "UTF-16"),
    ],
)
def test_the_encoding_option_decodes_as_told(encoding: str, codec: str, description: str) -> None:
    assert decode_text("謝謝".encode(codec), "f.txt", encoding) == ("謝謝", description)


def test_the_encoding_option_drops_a_utf8_byte_order_mark() -> None:
    assert decode_text(codecs.BOM_UTF8 + "你好".encode(), encoding="utf8") == ("你好", "UTF-8")


def test_an_unknown_or_wrong_encoding_option_is_refused_saying_what_to_do() -> None:
    with pytest.raises(InvalidRequestError, match="unknown encoding 'klingon'"):
        decode_text(b"abc", "f.txt", "klingon")
    with pytest.raises(InvalidRequestError, match="unknown encoding 'base64'"):
        decode_text(b"abc", "f.txt", "base64")  # a codec, but not of text
    with pytest.raises(InvalidRequestError, match="not valid UTF-8 as the encoding option says"):
        decode_text("你好".encode("big5"), "f.txt", "utf-8")
