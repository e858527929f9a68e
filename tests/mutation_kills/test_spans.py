"""Protected spans at their boundaries: sentence punctuation around URLs and code-like tokens, what joins spans
into one unit, placeholders, the rounds of ``translate_protected`` (which inputs the model sees, which output
is kept), restoring around markup, and stitching's spacing and capitals. The batch translators are plain
functions with known outputs standing in for a model."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from handler.text.spans import (
    MARKUP_CLOSE,
    MARKUP_OPEN,
    MARKUP_STANDALONE,
    ProtectedSpan,
    SpanKind,
    carries_units,
    contains_placeholder,
    find_spans,
    group_units,
    has_chinese,
    placeholder,
    protect,
    restore,
    stitch,
    translate_protected,
    with_placeholders,
)

OPEN, CLOSE, STANDALONE = chr(MARKUP_OPEN), chr(MARKUP_CLOSE), chr(MARKUP_STANDALONE)


def spans_of(text: str, glossary: dict[str, str] | None = None) -> list[tuple[str, str]]:
    return [(span.kind.value, text[span.start : span.end]) for span in find_spans(text, glossary)]


def units_of(text: str) -> list[str]:
    return [unit.target for unit in protect(text).units]


class Model:
    """Answers from a table (the input itself when it is not there), recording every batch."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.batches: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> list[str]:
        self.batches.append(list(texts))
        return [self.answers.get(text, text) for text in texts]


# --- sentence punctuation is not part of a URL or a token ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("访问https://example.com.", "https://example.com"),  # a sentence-final period
        ("访问https://example.com/a.html.", "https://example.com/a.html"),
        ("访问https://example.com/a).", "https://example.com/a"),
        ("访问https://example.com/a_(b).", "https://example.com/a_(b)"),
        ("访问https://example.com/a_(b)).", "https://example.com/a_(b)"),
        ("见(https://example.com/a)。", "https://example.com/a"),
        ("访问www.example.com!", "www.example.com"),
        ("网址https://a.com/b,c;", "https://a.com/b,c"),
        ('打开"https://a.com/x"吧', "https://a.com/x"),
        ("打开https://a.com/x]}>吧", "https://a.com/x"),
        ("打开FTP://a.com/x?吧", "FTP://a.com/x"),
        ("访问https://a.com/?x=1 获取", "https://a.com/?x=1"),
    ],
)
def test_a_url_ends_before_the_sentences_punctuation(text: str, url: str) -> None:
    assert spans_of(text)[0] == ("url", url)


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("设置x=1.", "x=1"),
        ("先设置(x=1).然后", "(x=1)"),
        ("先设置((x=1)然后", "((x=1)"),  # a bracket that something inside closes stays
        ("函数(y=2，", "y=2"),
        ('写成"a=b"。', "a=b"),
        ("写成'a=b'。", "a=b"),
        ("写成[a=b]。", "a=b"),
        ("写成{a=b}。", "a=b"),
        ("写成(a)=b。", "(a)=b"),
        ("写成a->b。", "a->b"),
        ("写成a<=b。", "a<=b"),
        ("写成a~b。", "a~b"),
        ("写成a^b。", "a^b"),
        ("写成_=_。", "_=_"),
        ("写成a_=b。", "a_=b"),
    ],
)
def test_a_code_like_token_is_kept_without_the_punctuation_around_it(text: str, token: str) -> None:
    assert spans_of(text)[0] == ("expression", token)


@pytest.mark.parametrize("text", ["写成a=。", "写成=a。", "写成a==。", "写成~a。", "写成==。", "写成(a)。"])
def test_an_operator_at_either_end_makes_no_expression(text: str) -> None:
    assert all(kind != "expression" for kind, _ in spans_of(text))


def test_a_version_is_one_latin_word_not_a_word_and_a_number() -> None:
    assert spans_of("请升级到v1.2.3版本") == [("latin", "v1.2.3")]
    assert spans_of("取x.5的值") == [("latin", "x.5")]
    assert spans_of("版本1.2.3发布") == [("number", "1.2.3")]
    assert protect("请升级到v1.2.3版本。").model_input == "请升级到X1版本。"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("路径./a/b和../c/d", [("path", "./a/b"), ("path", "../c/d")]),
        ("路径~/x/y吧", [("path", "~/x/y")]),
        ("找@user.name-x吧", [("mention", "@user.name-x")]),
        ("标签#Tag1吧", [("hashtag", "#Tag1")]),
        ("比例50%和3‰", [("number", "50%"), ("number", "3‰")]),
        ("电话+86 138", [("number", "+86"), ("number", "138")]),
        ("用C#和$var", [("latin", "C#"), ("latin", "$var")]),
        ("数字１２３个", [("number", "１２３")]),
    ],
)
def test_other_classes_at_their_edges(text: str, expected: list[tuple[str, str]]) -> None:
    assert spans_of(text) == expected


def test_glossary_terms_longest_first_and_every_occurrence() -> None:
    glossary = {"人工": "artificial", "人工智能": "AI", "智能": "intelligence"}
    text = "人工智能和人工以及智能，人工智能"
    assert spans_of(text, glossary) == [
        ("glossary", "人工智能"),
        ("glossary", "人工"),
        ("glossary", "智能"),
        ("glossary", "人工智能"),
    ]
    assert [span.target for span in find_spans(text, glossary)] == ["AI", "artificial", "intelligence", "AI"]
    assert spans_of("中axb", {"中a.b": "x"}) == [("latin", "axb")]  # a term is matched literally, not as a pattern
    assert spans_of("人工智能", None) == []


def test_markup_characters_are_spans_of_their_own() -> None:
    text = f"{OPEN}你好{CLOSE}{STANDALONE}"
    assert [(span.kind, span.target) for span in find_spans(text)] == [
        (SpanKind.MARKUP, OPEN),
        (SpanKind.MARKUP, CLOSE),
        (SpanKind.MARKUP, STANDALONE),
    ]


def test_has_chinese() -> None:
    assert has_chinese("abc中") and has_chinese("\u3400") and has_chinese("\U00020000") and has_chinese("\uf900")
    assert not has_chinese("abc。，") and not has_chinese("") and not has_chinese("\u33ff")


# --- units -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "units"),
    [
        ("用R&D部门", ["R&D"]),
        ("用Wi-Fi 6 / 6E和", ["Wi-Fi 6 / 6E"]),
        ("买iPhone 15 Pro，", ["iPhone 15 Pro"]),
        ("用a, b吧", ["a, b"]),
        ("用a: b吧", ["a: b"]),
        ("用a - b吧", ["a - b"]),
        ("用a+b吧", ["a+b"]),
        ("用a  b吧", ["a  b"]),
        ("用a\tb吧", ["a\tb"]),
        ("用a\u00a0b吧", ["a\u00a0b"]),
        ("用a -/ b吧", ["a", "b"]),  # two joiners: two units
        ("用a // b吧", ["a", "b"]),
        ("用a 。b吧", ["a", "b"]),
        ("用3万 iPhone吧", ["30,000", "iPhone"]),  # a converted span travels alone
        ("用iPhone 3万吧", ["iPhone", "30,000"]),
        ("用3万 5千吧", ["30,000", "5,000"]),
    ],
)
def test_spans_joined_by_spaces_or_one_joiner_form_one_unit(text: str, units: list[str]) -> None:
    assert units_of(text) == units


def test_markup_and_text_spans_stay_apart() -> None:
    text = f"用{OPEN}iPhone{CLOSE}吧"
    assert [unit.target for unit in group_units(text, find_spans(text))] == [OPEN, "iPhone", CLOSE]
    two = f"用{CLOSE}{OPEN}吧"
    assert [unit.target for unit in group_units(two, find_spans(two))] == [CLOSE + OPEN]


def test_a_unit_of_spaced_thousands_accepts_commas() -> None:
    [unit] = protect("共有27 000人").units
    assert (unit.target, unit.alternatives) == ("27 000", ("27,000",))
    [single] = protect("共有27人").units
    assert single.alternatives == ()
    [amount] = protect("共3万人").units
    assert amount.alternatives == ()
    [date] = protect("在2024年3月15日").units
    assert date.alternatives == ("15 March 2024",)
    [words] = protect("用iPhone 15吧").units
    assert words.alternatives == ()


def test_glue_marks_opening_and_closing_tags() -> None:
    opening, text_unit, closing = protect(f"用{OPEN}iPhone{CLOSE}吧").units
    assert (opening.glue_right, opening.glue_left, opening.is_markup) == (True, False, True)
    assert (closing.glue_right, closing.glue_left, closing.is_markup) == (False, True, True)
    assert (text_unit.glue_right, text_unit.glue_left, text_unit.is_markup) == (False, False, False)
    [standalone] = protect(f"用{STANDALONE}吧").units
    assert (standalone.glue_right, standalone.glue_left) == (False, False)
    last_open = protect(f"用{chr(MARKUP_CLOSE - 1)}吧").units[0]
    first_close = protect(f"用{chr(MARKUP_CLOSE)}吧").units[0]
    last_close = protect(f"用{chr(MARKUP_STANDALONE - 1)}吧").units[0]
    assert (last_open.glue_right, first_close.glue_left, last_close.glue_left) == (True, True, True)
    assert (first_close.glue_right, last_close.glue_right) == (False, False)


# --- protecting and placeholders ----------------------------------------------------------------------------------


def test_protect_cuts_the_source_into_pieces_and_units() -> None:
    plan = protect("访问https://a.com和iPhone 15吧")
    assert plan.model_input == "访问X1和X2吧"
    assert [(text, unit is not None) for text, unit in plan.pieces()] == [
        ("访问", False),
        ("https://a.com", True),
        ("和", False),
        ("iPhone 15", True),
        ("吧", False),
    ]
    assert plan.spans() == [
        ProtectedSpan(SpanKind.URL, "https://a.com", "https://a.com"),
        ProtectedSpan(SpanKind.LATIN, "iPhone", "iPhone"),
        ProtectedSpan(SpanKind.NUMBER, "15", "15"),
    ]
    edges = protect("iPhone吧")
    assert [(text, unit is not None) for text, unit in edges.pieces()] == [("iPhone", True), ("吧", False)]
    assert edges.model_input == "X1吧"


def test_text_without_chinese_has_units_but_no_model_input() -> None:
    plan = protect("Visit https://a.com now")
    assert plan.model_input is None
    assert [unit.target for unit in plan.units] == ["Visit https://a.com now"]
    assert protect("人工智能", {"人工智能": "AI"}).units[0].target == "AI"
    assert protect("AI only", {"AI": "x"}).units[0].target == "AI only"  # no Chinese: no glossary either


def test_placeholders() -> None:
    assert [placeholder(n) for n in (1, 2, 10)] == ["X1", "X2", "X10"]
    plan = protect("用a和b和c吧")
    assert with_placeholders(plan.source, plan.units) == "用X1和X2和X3吧"
    assert with_placeholders(plan.source, plan.units[1:]) == "用a和X1和X2吧"
    assert with_placeholders(plan.source, plan.units[:1]) == "用X1和b和c吧"
    assert with_placeholders(plan.source, []) == plan.source
    for text in ("X1", "a X12 b", "(X3)", "X1."):
        assert contains_placeholder(text), text
    for text in ("AX1", "X", "x1", "_X1", "9X1"):
        assert not contains_placeholder(text), text
    assert contains_placeholder("X1a") and contains_placeholder("X1_")  # what follows the digits is not checked


# --- carrying, restoring -------------------------------------------------------------------------------------


def test_carries_units_counts_occurrences_and_accepts_other_forms_and_a_capital() -> None:
    plan = protect("用iPhone和iPhone吧")
    assert carries_units(plan, "use iPhone and iPhone")
    assert not carries_units(plan, "use iPhone and the phone")
    glossary = protect("人工智能很好", {"人工智能": "artificial intelligence"})
    assert carries_units(glossary, "Artificial intelligence is good")
    assert carries_units(glossary, "artificial intelligence is good")
    assert not carries_units(glossary, "AI is good")
    date = protect("在2024年3月15日")
    assert carries_units(date, "on 15 March 2024") and carries_units(date, "on March 15, 2024")
    assert not carries_units(date, "on March 2024")
    upper = protect("用ABC吧")
    assert not carries_units(upper, "use abc")
    assert carries_units(protect("没有单位"), "anything")


def test_restore_replaces_each_placeholder_once_and_in_order() -> None:
    plan = protect("用a和b吧")
    assert restore(plan, "use X1 and X2") == "use a and b"
    assert restore(plan, "X2 before X1") == "b before a"  # text units may move
    assert restore(plan, "use X1 and X1") is None
    assert restore(plan, "use X1") is None
    assert restore(plan, "use X1, X2 and X3") is None
    assert restore(plan, "use X0 and X1") is None
    assert restore(plan, "use X1 and X2 X2") is None
    only_second = [plan.units[1]]
    assert restore(plan, "use a and X1", only_second) == "use a and b"
    assert restore(plan, "use a and b", only_second) is None


def test_restore_glues_tags_to_their_text_and_keeps_their_order() -> None:
    plan = protect(f"{OPEN}你好{CLOSE}世界")
    assert restore(plan, "X1 Hello X2 world") == f"{OPEN}Hello{CLOSE} world"
    assert restore(plan, "X1Hello X2world") == f"{OPEN}Hello{CLOSE}world"
    assert restore(plan, "X2 Hello X1 world") is None  # markup out of order
    tail = protect(f"你好{OPEN}")
    assert restore(tail, "Hello X1  ") == f"Hello {OPEN}"


def test_restore_capitalises_chosen_english_at_the_start_only() -> None:
    plan = protect("人工智能改变了人工智能", {"人工智能": "artificial intelligence"})
    assert restore(plan, "X1 changed X2") == "Artificial intelligence changed artificial intelligence"
    assert restore(plan, "  X1 changed X2") == "  Artificial intelligence changed artificial intelligence"
    url = protect("https://a.com 很好")
    assert restore(url, "X1 is good") == "https://a.com is good"
    amount = protect("3万人")
    assert restore(amount, "X1 people") == "30,000 people"
    # a chosen English that already has a capital in its first word keeps its case
    brand = protect("苹果手机很好", {"苹果手机": "iPhone"})
    assert restore(brand, "X1 is good") == "iPhone is good"
    assert stitched("苹果手机很好", {"很好": "Is good."}, {"苹果手机": "iPhone"}) == "iPhone is good"
    mixed = protect("电子邮件很好", {"电子邮件": "e-mail address"})
    assert restore(mixed, "X1 is good") == "E-mail address is good"
    # only the first word decides: "web API" starts a sentence as "Web API", "the Beatles fan" as "The Beatles fan"
    api = protect("网络接口很好", {"网络接口": "web API"})
    assert restore(api, "X1 is good") == "Web API is good"
    fan = protect("披头士迷很好", {"披头士迷": "the Beatles fan"})
    assert restore(fan, "X1 is good") == "The Beatles fan is good"


# --- the rounds ----------------------------------------------------------------------------------------------


def test_round_one_keeps_a_plain_output_and_says_how_it_was_made() -> None:
    model = Model({"你好。": "Hello.", "用iPhone吧": "Use iPhone."})
    plain, as_is = translate_protected(["你好。", "用iPhone吧"], model)
    assert (plain.text, plain.method, plain.spans, plain.model_inputs) == ("Hello.", "plain", (), ("你好。",))
    assert (as_is.text, as_is.method, as_is.model_inputs) == ("Use iPhone.", "as is", ("用iPhone吧",))
    assert as_is.spans == (ProtectedSpan(SpanKind.LATIN, "iPhone", "iPhone"),)
    assert model.batches == [["你好。", "用iPhone吧"]]


def test_unchanged_segments_never_reach_the_model() -> None:
    model = Model({})
    [result] = translate_protected(["Visit https://a.com"], model)
    assert (result.text, result.method, result.model_inputs) == ("Visit https://a.com", "unchanged", ())
    assert [span.kind for span in result.spans] == [SpanKind.LATIN, SpanKind.URL]
    assert model.batches == []
    assert translate_protected([], model) == [] and model.batches == []


def test_round_two_gives_placeholders_to_the_lost_units_only() -> None:
    source = "用iPhone和macOS吧"
    model = Model({source: "Use iPhone and Mac OS.", "用iPhone和X1吧": "Use iPhone and X1."})
    [result] = translate_protected([source], model)
    assert (result.text, result.method, result.model_inputs) == (
        "Use iPhone and macOS.",
        "placeholders",
        ("用iPhone和X1吧",),
    )
    assert model.batches == [[source], ["用iPhone和X1吧"]]


def test_round_two_output_that_loses_a_kept_unit_goes_to_round_three() -> None:
    source = "用iPhone和macOS吧"
    model = Model(
        {
            source: "Use iPhone and Mac OS.",
            "用iPhone和X1吧": "Use the phone and X1.",
            "用X1和X2吧": "Use X1 and X2.",
        }
    )
    [result] = translate_protected([source], model)
    assert (result.text, result.method, result.model_inputs) == (
        "Use iPhone and macOS.",
        "placeholders",
        ("用X1和X2吧",),
    )
    assert model.batches == [[source], ["用iPhone和X1吧"], ["用X1和X2吧"]]


def test_when_every_unit_is_lost_round_two_is_skipped() -> None:
    source = "用iPhone和macOS吧"
    model = Model({source: "Use a phone.", "用X1和X2吧": "Use X1 and X2."})
    [result] = translate_protected([source], model)
    assert result.text == "Use iPhone and macOS."
    assert model.batches == [[source], ["用X1和X2吧"]]


def test_a_unit_shaped_like_a_placeholder_skips_round_two() -> None:
    source = "用X1和macOS吧"  # the text itself holds X1: a partial placeholder input would be ambiguous
    model = Model({source: "Use X1 and Mac OS.", "用X1和X2吧": "Use X1 and X2."})
    [result] = translate_protected([source], model)
    assert result.text == "Use X1 and macOS."
    assert model.batches == [[source], ["用X1和X2吧"]]


def test_markup_skips_round_one() -> None:
    source = f"{OPEN}你好{CLOSE}"
    model = Model({"X1你好X2": "X1Hello X2"})
    [result] = translate_protected([source], model)
    assert (result.text, result.method) == (f"{OPEN}Hello{CLOSE}", "placeholders")
    assert model.batches == [["X1你好X2"]]


def test_stitching_translates_the_chinese_pieces_once_each() -> None:
    sources = ["访问https://a.com获取信息。", "请访问https://b.com获取信息。"]
    model = Model(
        {
            sources[0]: "Visit the site.",
            sources[1]: "Please visit the site.",
            "访问X1获取信息。": "Visit for information.",
            "请访问X1获取信息。": "Please visit for information.",
            "访问": "Visit",
            "请访问": "Please visit",
            "获取信息。": "For information.",
        }
    )
    first, second = translate_protected(sources, model)
    assert first.text == "Visit https://a.com for information."
    assert second.text == "Please visit https://b.com for information."
    assert (first.method, first.model_inputs) == ("stitched", ("访问", "获取信息。"))
    assert model.batches[-1] == ["获取信息。", "请访问", "访问"] or sorted(model.batches[-1]) == sorted(
        ["获取信息。", "请访问", "访问"]
    )
    assert len(model.batches[-1]) == 3  # the shared piece once


# --- stitching -----------------------------------------------------------------------------------------------


def stitched(source: str, answers: dict[str, str], glossary: dict[str, str] | None = None) -> str:
    plan = protect(source, glossary)
    return stitch(
        plan, {text.strip(): answers.get(text.strip(), text.strip()) for text, unit in plan.pieces() if unit is None}
    )


def test_stitching_spaces_punctuation_and_capitals() -> None:
    assert stitched("访问https://a.com获取信息。", {"访问": "Visit.", "获取信息。": "For information."}) == (
        "Visit https://a.com for information."
    )
    # a piece that does not end a sentence loses its period; one that does keeps it
    assert stitched("用iPhone。好的", {"用": "Use.", "。好的": "OK."}) == "Use iPhone OK"
    # a piece starting with a name, an acronym or I keeps its capital inside a sentence
    assert stitched("用iPhone我很好", {"用": "Use", "我很好": "I am fine."}) == "Use iPhone I am fine"
    assert stitched("用iPhone美国", {"用": "Use", "美国": "USA"}) == "Use iPhone USA"
    assert stitched("用iPhone麦当劳", {"用": "Use", "麦当劳": "McDonald"}) == "Use iPhone McDonald"
    assert stitched("用iPhone是的", {"用": "Use", "是的": "Yes"}) == "Use iPhone yes"
    assert stitched("用iPhone我的", {"用": "Use", "我的": "I'm"}) == "Use iPhone I'm"


def test_stitching_capitalises_chosen_english_at_the_start_and_keeps_verbatim_case() -> None:
    glossary = {"人工智能": "artificial intelligence"}
    assert stitched("人工智能很好", {"很好": "Is good."}, glossary) == "Artificial intelligence is good"
    assert stitched("iPhone很好", {"很好": "Is good."}) == "iPhone is good"
    assert stitched("3万人", {"人": "People"}) == "30,000 people"


def test_stitching_joins_without_doubled_or_missing_spaces() -> None:
    text = stitched("访问 https://a.com ，然后（iPhone）", {"访问": "Visit", "，然后（": "Then ("})
    assert "  " not in text
    assert text == "Visit https://a.com then (iPhone)"
    assert stitched("用“iPhone”吧", {"用“": 'Use "', "”吧": '" OK'}) == 'Use "iPhone" OK'
    assert stitched("50%的人", {"的人": "Of people"}) == "50% of people"
    assert stitched("在/tmp/a里", {"在": "In", "里": "Inside"}) == "In /tmp/a inside"


def test_stitching_glues_tags_to_their_text() -> None:
    plan = protect(f"{OPEN}你好{CLOSE}世界")
    assert stitch(plan, {"你好": "Hello", "世界": "World"}) == f"{OPEN}Hello{CLOSE} world"
    plan = protect(f"说{OPEN}你好{CLOSE}。")
    assert stitch(plan, {"说": "Say", "你好": "Hello", "。": "."}) == f"Say {OPEN}hello{CLOSE}."
