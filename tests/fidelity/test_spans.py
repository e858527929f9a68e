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
    restore,
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
    # currency signs and ranges (handler.text.numbers)
    ("价格从 ¥1,299 降到了 ¥999。", [(SpanKind.AMOUNT, "¥1,299"), (SpanKind.AMOUNT, "¥999")]),
    ("价格$5和$10", [(SpanKind.AMOUNT, "$5"), (SpanKind.AMOUNT, "$10")]),  # two prices, not math
    ("规划期为（2018-2030 年）。", [(SpanKind.DATE, "2018-2030 年")]),
    ("投资3-5万元", [(SpanKind.AMOUNT, "3-5万元")]),
    # code-like tokens with an operator, without the sentence's punctuation
    ("请安装 numpy>=2.1.3 后再运行", [(SpanKind.EXPRESSION, "numpy>=2.1.3")]),
    ("如果x!=0，就继续", [(SpanKind.EXPRESSION, "x!=0")]),
    ("版本要求python>=3.9,<4.0，请升级", [(SpanKind.EXPRESSION, "python>=3.9,<4.0")]),
    ("检查 len(items)>0。", [(SpanKind.EXPRESSION, "len(items)>0")]),
    ("先设置(x=1).然后", [(SpanKind.EXPRESSION, "(x=1)")]),
    ("函数(y=2，", [(SpanKind.EXPRESSION, "y=2")]),
    ('写成"a=b"。', [(SpanKind.EXPRESSION, "a=b")]),
    ("2^10=1024，对", [(SpanKind.EXPRESSION, "2^10=1024")]),
    ("计算2^10的值", [(SpanKind.EXPRESSION, "2^10")]),
    ("支持3.8~3.11版本", [(SpanKind.EXPRESSION, "3.8~3.11")]),
    ("设置--max-len=512参数", [(SpanKind.EXPRESSION, "--max-len=512")]),
    ("请访问 https://a.com/?x=1 获取", [(SpanKind.URL, "https://a.com/?x=1")]),  # a URL, not an expression
    # inline math
    ("公式$E=mc^2$说明", [(SpanKind.MATH, "$E=mc^2$")]),
    ("公式 \\(a^2+b^2=c^2\\) 是", [(SpanKind.MATH, "\\(a^2+b^2=c^2\\)")]),
    ("方程$$x^2-5x+6=0$$的根", [(SpanKind.MATH, "$$x^2-5x+6=0$$")]),
    ("根据\\[x=1\\]可以", [(SpanKind.MATH, "\\[x=1\\]")]),
    ("设$x$为正整数", [(SpanKind.MATH, "$x$")]),
    # angle-bracketed text in plain text
    ("粘贴<img src=x onerror=alert(1)>这样", [(SpanKind.TAG, "<img src=x onerror=alert(1)>")]),
    ("把<name>替换", [(SpanKind.TAG, "<name>")]),
    ("返回List<String>类型", [(SpanKind.LATIN, "List"), (SpanKind.TAG, "<String>")]),
    ("把 <script>alert('hi')</script> 当作", [(SpanKind.TAG, "<script>alert('hi')</script>")]),
    ("请用<b>加粗</b>表示", [(SpanKind.TAG, "<b>"), (SpanKind.TAG, "</b>")]),  # the Chinese inside is translated
    ("如果a<b且c>d", [(SpanKind.EXPRESSION, "a<b"), (SpanKind.EXPRESSION, "c>d")]),  # comparisons, not a tag
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


@pytest.mark.parametrize(
    "text",
    [
        "价格 $ 5 和 $10",
        "从$5到$ 10",
        "$5-$10元",
        "$ x$",
        "$x $",
        "$中文$",
        "\\(中文\\)",
        "<中文>",
        "< b>",
        "a < b",
        "x=",
        "=1",
    ],
)
def test_what_is_not_math_a_tag_or_an_expression_is_not_one(text: str) -> None:
    kinds = {span.kind for span in find_spans(text)}
    assert not kinds & {SpanKind.MATH, SpanKind.TAG, SpanKind.EXPRESSION}, find_spans(text)


def test_delimited_spans_win_over_what_is_inside_them() -> None:
    text = "运行`price=3万`，公式$3x=1.5$不变，<a href=https://x.cn/?p=1>链接"
    assert [(span.kind, text[span.start : span.end]) for span in find_spans(text, {"链接": "link"})] == [
        (SpanKind.CODE, "`price=3万`"),
        (SpanKind.MATH, "$3x=1.5$"),
        (SpanKind.TAG, "<a href=https://x.cn/?p=1>"),
        (SpanKind.GLOSSARY, "链接"),
    ]


def test_currency_signs_and_ranges_carry_their_english() -> None:
    spans = find_spans("售价￥45.80，预计3-5万元，（2018-2030 年）")
    assert [(span.kind, span.target) for span in spans] == [
        (SpanKind.AMOUNT, "¥45.80"),
        (SpanKind.AMOUNT, "30,000-50,000 yuan"),
        (SpanKind.DATE, "2018-2030"),
    ]


def test_a_generic_type_is_one_unit() -> None:
    assert [unit.target for unit in protect("返回List<String>和Map<String, Integer>。").units] == [
        "List<String>",
        "Map<String, Integer>",
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


# a sentence of each issue-25 class, and what its English must hold byte for byte
NEW_CLASSES = [
    ("价格从 ¥1,299 降到了 ¥999。", ["¥1,299", "¥999"]),
    ("这本书卖￥45.80。", ["¥45.80"]),
    ("请安装 numpy>=2.1.3 后再运行。", ["numpy>=2.1.3"]),
    ("著名的公式$E=mc^2$说明了质量和能量的关系。", ["$E=mc^2$"]),
    ("公式 \\(a^2+b^2=c^2\\) 是勾股定理。", ["\\(a^2+b^2=c^2\\)"]),
    ("请不要粘贴<img src=x onerror=alert(1)>这样的代码。", ["<img src=x onerror=alert(1)>"]),
    ("这个方法返回List<String>类型。", ["List<String>"]),
    ("规划期为（2018-2030 年）。", ["2018-2030"]),
    ("市场规模将达到10～20亿美元。", ["1-2 billion US dollars"]),
]


@pytest.mark.parametrize(("source", "expected"), NEW_CLASSES, ids=[source for source, _ in NEW_CLASSES])
def test_each_new_class_comes_through_stitching_with_a_model_that_keeps_nothing(
    source: str, expected: list[str]
) -> None:
    """A model that answers "Text." to everything: the stitched output holds every span as English writes it."""
    [result] = translate_protected([source], lambda texts: ["Text." for _ in texts])
    assert result.method == "stitched"
    for text in expected:
        assert text in result.text
    assert not contains_placeholder(result.text)


def test_placeholders_side_by_side_are_each_counted() -> None:
    # GIVEN markup around a word, so that the model input holds two placeholders with nothing between them
    plan = protect('代码 \U000f0000print("你好")\U000f8000 在这里。')
    assert plan.model_input == '代码 X1X2("你好")X3 在这里。'
    # WHEN the output repeats one of them inside a run THEN it is not accepted (that "X2" would reach the user)
    assert restore(plan, 'The X1X2 ("X2 is the") X3 here.') is None
    # AND a run that comes back as it went is restored placeholder by placeholder
    assert restore(plan, 'The code X1X2("hello")X3 is here.') == 'The code \U000f0000print("hello")\U000f8000 is here.'
