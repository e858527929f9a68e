"""Protected spans: what is found, how placeholders are checked and restored, and the stitching fallback.

The batch translators here are plain functions standing in for a model: one that copies placeholders as a good
model does, one that loses or repeats them as a weak one does, so both rounds run with known outputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from handler.text.spans import (
    MARKUP_CLOSE,
    MARKUP_OPEN,
    SpanKind,
    contains_placeholder,
    find_spans,
    protect,
    translate_protected,
)

# (text, the kind and text of every span found in it)
CLASSES = [
    ("请访问 https://example.com/docs?id=42 获取更多信息。", [(SpanKind.URL, "https://example.com/docs?id=42")]),
    ("网址是https://example.com/a_(b)。", [(SpanKind.URL, "https://example.com/a_(b)")]),
    ("我的邮箱是 zhang.wei@example.cn，", [(SpanKind.EMAIL, "zhang.wei@example.cn")]),
    ("请关注@zhang_wei和#OpenSource话题", [(SpanKind.MENTION, "@zhang_wei"), (SpanKind.HASHTAG, "#OpenSource")]),
    ("配置在/etc/nginx/nginx.conf里", [(SpanKind.PATH, "/etc/nginx/nginx.conf")]),
    ("打开C:\\Users\\wei\\a.txt文件", [(SpanKind.PATH, "C:\\Users\\wei\\a.txt")]),
    ("编辑src/app/main.py即可", [(SpanKind.PATH, "src/app/main.py")]),
    ("运行`pip install -U numpy`再试", [(SpanKind.CODE, "`pip install -U numpy`")]),
    ("好的👍🏽谢谢🇨🇳", [(SpanKind.EMOJI, "👍🏽"), (SpanKind.EMOJI, "🇨🇳")]),
    ("一家👨‍👩‍👧人", [(SpanKind.EMOJI, "👨‍👩‍👧")]),
    ("增长了3.5%，共1,234,567人", [(SpanKind.NUMBER, "3.5%"), (SpanKind.NUMBER, "1,234,567")]),
    ("电话138-0013-8000，下午2:30", [(SpanKind.NUMBER, "138-0013-8000"), (SpanKind.NUMBER, "2:30")]),
    (
        "发布了iPhone和C++，还有Node.js",
        [(SpanKind.LATIN, "iPhone"), (SpanKind.LATIN, "C++"), (SpanKind.LATIN, "Node.js")],
    ),
    ("收入1.25亿元", [(SpanKind.AMOUNT, "1.25亿元")]),
    ("2024年3月15日举行", [(SpanKind.DATE, "2024年3月15日")]),
]


@pytest.mark.parametrize(("text", "expected"), CLASSES, ids=[text for text, _ in CLASSES])
def test_each_class_of_span_is_found_whole(text: str, expected: list[tuple[SpanKind, str]]) -> None:
    assert [(span.kind, text[span.start : span.end]) for span in find_spans(text)] == expected


def test_converted_spans_carry_their_english() -> None:
    spans = find_spans("公司收入1.25亿元，员工3万人，2024年3月15日", {"员工": "employees"})
    assert [(span.kind, span.target) for span in spans] == [
        (SpanKind.AMOUNT, "125 million yuan"),
        (SpanKind.GLOSSARY, "employees"),
        (SpanKind.AMOUNT, "30,000"),
        (SpanKind.DATE, "March 15, 2024"),
    ]


def test_neighbouring_spans_travel_as_one_placeholder() -> None:
    plan = protect("苹果发布了iPhone 15 Pro和macOS Sonoma。")
    assert plan.model_input == "苹果发布了X1和X2。"
    assert [unit.target for unit in plan.units] == ["iPhone 15 Pro", "macOS Sonoma"]


def test_the_longest_glossary_term_wins() -> None:
    glossary = {"人工智能": "artificial intelligence", "人工智能芯片": "AI chip", "芯片": "chip"}
    spans = find_spans("人工智能芯片和芯片", glossary)
    assert [span.target for span in spans] == ["AI chip", "chip"]


def copying(outputs: dict[str, str]):  # type: ignore[no-untyped-def]
    """A translator that answers from ``outputs`` and records every batch it was given."""
    calls: list[list[str]] = []

    def translate(texts: Sequence[str]) -> list[str]:
        calls.append(list(texts))
        return [outputs[text] for text in texts]

    return translate, calls


URL_SOURCE = "请访问 https://example.com/docs?id=42 获取更多信息。"
CORRUPTED = "Please visit https://cert.com/docs? id 42 for more information."  # what the model did to it


def test_an_output_that_already_carries_every_span_is_kept_as_it_is() -> None:
    translate, calls = copying({"苹果发布了iPhone 15 Pro和3万台电脑。": "Apple released iPhone 15 Pro and 30,000 PCs."})
    [result] = translate_protected(["苹果发布了iPhone 15 Pro和3万台电脑。"], translate)
    assert (result.text, result.method) == ("Apple released iPhone 15 Pro and 30,000 PCs.", "as is")
    assert len(calls) == 1


def test_placeholders_that_come_back_once_are_restored() -> None:
    translate, calls = copying(
        {URL_SOURCE: CORRUPTED, "请访问 X1 获取更多信息。": "Please visit X1 for more information."}
    )
    [result] = translate_protected([URL_SOURCE], translate)
    assert result.text == "Please visit https://example.com/docs?id=42 for more information."
    assert result.method == "placeholders"
    assert calls == [[URL_SOURCE], ["请访问 X1 获取更多信息。"]]


@pytest.mark.parametrize(
    "output",
    ["Please visit for more information.", "Visit X1, X1 again.", "Visit X1 and X2.", "Visit x1."],
    ids=["lost", "repeated", "unknown", "changed"],
)
def test_a_placeholder_that_does_not_come_back_once_falls_back_to_stitching(output: str) -> None:
    translate, calls = copying(
        {
            URL_SOURCE: CORRUPTED,
            "请访问 X1 获取更多信息。": output,
            "请访问": "Please visit",
            "获取更多信息。": "For more information.",
        }
    )
    [result] = translate_protected([URL_SOURCE], translate)
    assert result.text == "Please visit https://example.com/docs?id=42 for more information."
    assert result.method == "stitched"
    assert calls[2] == ["获取更多信息。", "请访问"]
    assert not contains_placeholder(result.text)


def test_markup_that_changes_order_falls_back_to_stitching() -> None:
    opening, closing = chr(MARKUP_OPEN), chr(MARKUP_CLOSE)
    source = f"{opening}你好{closing}世界"
    translate, _ = copying({"X1你好X2世界": "X2 hello X1 world", "你好": "Hello", "世界": "World"})
    [result] = translate_protected([source], translate)
    assert result.method == "stitched"
    assert result.text == f"{opening}Hello{closing} world"


def test_text_without_chinese_never_reaches_the_model() -> None:
    translate, calls = copying({})
    texts = ["This is English.", "12345", "print('hi')  # comment", "😀 ok"]
    assert [result.text for result in translate_protected(texts, translate)] == texts
    assert calls == []


def test_a_glossary_term_at_the_start_of_a_sentence_gets_a_capital() -> None:
    translate, _ = copying(
        {"人工智能正在改变世界。": "AI is changing.", "X1正在改变世界。": "X1 is changing the world."}
    )
    [result] = translate_protected(["人工智能正在改变世界。"], translate, {"人工智能": "artificial intelligence"})
    assert result.text == "Artificial intelligence is changing the world."


def test_stitched_pieces_keep_spaces_and_punctuation_readable() -> None:
    translate, _ = copying({"😀你好😀 hello 123": "Hello hello 123", "X1你好X2": "no placeholders", "你好": "Hello."})
    [result] = translate_protected(["😀你好😀 hello 123"], translate)
    assert result.text == "😀 Hello 😀 hello 123"


def test_only_the_spans_the_model_lost_become_placeholders() -> None:
    source = "苹果发布了iPhone和macOS。"
    translate, calls = copying(
        {source: "Apple released iPhone and Mac OS.", "苹果发布了iPhone和X1。": "Apple released iPhone and X1."}
    )
    [result] = translate_protected([source], translate)
    assert (result.text, result.method) == ("Apple released iPhone and macOS.", "placeholders")
    assert calls == [[source], ["苹果发布了iPhone和X1。"]]
