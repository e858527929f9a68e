"""HTML and Markdown: which text is translated (each block, with its inline markup as markup characters), how the
document is rebuilt around the translations (byte for byte outside them), attribute quoting, the skeleton, and
the refusals. The "translation" replaces every run of Han characters with as many E's (or a table's answer), so
each rebuilt document is known exactly."""

from __future__ import annotations

import re

import pytest

from handler.errors import InvalidRequestError
from handler.text.markup import parse_markup, skeleton
from handler.text.spans import MARKUP_CLOSE, MARKUP_LIMIT, MARKUP_OPEN, MARKUP_STANDALONE


def shown(block: str) -> str:
    """A block with its markup characters written <oN> (opening), <cN> (closing), <sN> (standalone)."""
    out = []
    for character in block:
        code = ord(character)
        if MARKUP_OPEN <= code < MARKUP_CLOSE:
            out.append(f"<o{code - MARKUP_OPEN}>")
        elif MARKUP_CLOSE <= code < MARKUP_STANDALONE:
            out.append(f"<c{code - MARKUP_CLOSE}>")
        elif MARKUP_STANDALONE <= code < MARKUP_LIMIT:
            out.append(f"<s{code - MARKUP_STANDALONE}>")
        else:
            out.append(character)
    return "".join(out)


def english(block: str) -> str:
    return re.sub(r"[\u4e00-\u9fff]+", lambda match: "E" * len(match.group()), block)


def round_trip(text: str, format: str) -> tuple[list[str], str]:
    document = parse_markup(text, format)
    return [shown(block) for block in document.blocks], document.rebuild([english(b) for b in document.blocks])


HTML = [
    ("<p>你好<b>世界</b>！</p>", ["你好<o0>世界<c0>！"], "<p>EE<b>EE</b>！</p>"),
    (
        "<div><p>第一段</p><p>第二段 &amp; 更多&#169;</p></div>",
        ["第一段", "第二段 <s0> 更多<s1>"],
        "<div><p>EEE</p><p>EEE &amp; EE&#169;</p></div>",
    ),
    (
        '<p>看<img src="a.png" alt="一只猫">和<img alt=\'狗\' title=小狗></p>',
        ["一只猫", "狗", "小狗", "看<s0>和<s1>"],
        '<p>E<img src="a.png" alt="EEE">E<img alt=\'E\' title=EE></p>',
    ),
    (
        "<p>代码<code>x = 1</code>和<pre>不翻译</pre>结束</p>",
        ["代码<s0>和", "结束"],
        "<p>EE<code>x = 1</code>E<pre>不翻译</pre>EE</p>",
    ),
    (
        '<script>var a = "中文";</script><p>正文<!-- 注释 -->内容</p>',
        ["正文<s0>内容"],
        '<script>var a = "中文";</script><p>EE<!-- 注释 -->EE</p>',
    ),
    ("<p>换行<br>之后<br/>再见</p>", ["换行<s0>之后<s1>再见"], "<p>EE<br>EE<br/>EE</p>"),
    (
        "<!DOCTYPE html><html><head><title>标题</title></head><body><h1>大标题</h1><p>Only English</p></body></html>",
        ["标题", "大标题"],
        "<!DOCTYPE html><html><head><title>EE</title></head><body><h1>EEE</h1><p>Only English</p></body></html>",
    ),
    (
        "<p>嵌套<span>一<span>二</span>三</span>四</p>",
        ["嵌套<o0>一<o1>二<c0>三<c1>四"],
        "<p>EE<span>E<span>E</span>E</span>E</p>",
    ),
    ("<p>无引号<img alt=猫咪></p>", ["猫咪", "无引号<s0>"], "<p>EEE<img alt=EE></p>"),
    ("<ul><li>项目一</li><li>项目二</li></ul>", ["项目一", "项目二"], "<ul><li>EEE</li><li>EEE</li></ul>"),
    ('<p>空<abbr title="">缩写</abbr></p>', ["空<o0>缩写<c0>"], '<p>E<abbr title="">EE</abbr></p>'),
    ("文本在前<p>段落</p>文本在后", ["文本在前", "段落", "文本在后"], "EEEE<p>EE</p>EEEE"),
    (
        "<textarea>不动</textarea><svg><text>图形</text></svg><p>好</p>",
        ["好"],
        "<textarea>不动</textarea><svg><text>图形</text></svg><p>E</p>",
    ),
    ("<p>未闭合<code>代码", ["未闭合<s0>"], "<p>EEE<code>代码"),
    ("<p>多行\n文本</p>\n", ["多行\n文本"], "<p>EE\nEE</p>\n"),
    ("<p>外<code>一<code>二</code>三</code>后</p>", ["外<s0>后"], "<p>E<code>一<code>二</code>三</code>E</p>"),
    ("<p>图<img src=x.png/>片<br />完</p>", ["图<s0>片<s1>完"], "<p>E<img src=x.png/>E<br />E</p>"),
    ("<p>Hi <b>there</b> 你</p>", ["Hi <o0>there<c0> 你"], "<p>Hi <b>there</b> E</p>"),
    ('<p>English <b title="标题">bold</b></p>', ["标题"], '<p>English <b title="EE">bold</b></p>'),
    ("<?xml version='1.0'?><p>你</p>", ["你"], "<?xml version='1.0'?><p>E</p>"),
    ("<p>你<![CDATA[x]]>好</p>", ["你<s0>好"], "<p>E<![CDATA[x]]>E</p>"),
    ("<p>你</p><!-- 外面的注释 -->", ["你"], "<p>E</p><!-- 外面的注释 -->"),
    ("<P>大写<B>标签</B></P>", ["大写<o0>标签<c0>"], "<P>EE<B>EE</B></P>"),
    ("<p>选<input type=checkbox>项</p>", ["选", "项"], "<p>E<input type=checkbox>E</p>"),  # not inline
    ("<p>选<kbd>Ctrl</kbd>键</p>", ["选<s0>键"], "<p>E<kbd>Ctrl</kbd>E</p>"),
]


@pytest.mark.parametrize(("source", "blocks", "rebuilt"), HTML, ids=[source[:40] for source, _, _ in HTML])
def test_html_blocks_and_rebuild(source: str, blocks: list[str], rebuilt: str) -> None:
    assert round_trip(source, "html") == (blocks, rebuilt)
    document = parse_markup(source, "html")
    assert document.rebuild(document.blocks) == source  # unchanged translations give the source back


MARKDOWN = [
    (
        "# 标题\n\n段落**加粗**和*斜体*，还有`代码`。",
        ["标题", "段落<o0>加粗<c0>和<o1>斜体<c1>，还有<s0>。"],
        "# EE\n\nEE**EE**E*EE*，EE`代码`。",
    ),
    (
        '- 项目一\n- 项目二 [链接](http://a.com "标题")',
        ["项目一", "项目二 <o0>链接<c0>"],
        '- EEE\n- EEE [EE](http://a.com "标题")',
    ),
    ("> 引用的文字\n> 第二行", ["引用的文字", "第二行"], "> EEEEE\n> EEE"),
    ("```\n代码块不翻译\n```\n\n正文", ["正文"], "```\n代码块不翻译\n```\n\nEE"),
    (
        "| 表头 | 列二 |\n|---|---|\n| 单元格 | 数据 |",
        ["表头", "列二", "单元格", "数据"],
        "| EE | EE |\n|---|---|\n| EEE | EE |",
    ),
    ("图片![替代文字](a.png)后面", ["图片<s0>后面"], "EE![替代文字](a.png)EE"),
    ("转义\\*星号\\*和&amp;实体", ["转义<s0>星号<s1>和<s2>实体"], "EE\\*EE\\*E&amp;EE"),
    ("    缩进代码", [], "    缩进代码"),
    ("<div>HTML块</div>\n\n普通~~删除~~文字", ["普通<o0>删除<c0>文字"], "<div>HTML块</div>\n\nEE~~EE~~EE"),
    ("第一行\n第二行  \n第三行", ["第一行", "第二行", "第三行"], "EEE\nEEE  \nEEE"),
    ("English only *here*", [], "English only *here*"),
    ("1. 第一\n2. 第二", ["第一", "第二"], "1. EE\n2. EE"),
    ("链接<http://a.com>自动", ["链接<o0>http://a.com<c0>自动"], "EE<http://a.com>EE"),
    ("混合**粗*斜*粗**完\n", ["混合<o0>粗<o1>斜<c0>粗<c1>完"], "EE**E*E*E**E\n"),
    ("同一行**重复**和**重复**", ["同一行<o0>重复<c0>和<o1>重复<c1>"], "EEE**EE**E**EE**"),
    ("  前后空格的段落  ", ["前后空格的段落"], "  EEEEEEE  "),
    ("段落一\n\n段落二\n", ["段落一", "段落二"], "EEE\n\nEEE\n"),
    ("中文<b>内联</b>标签", ["中文<s0>内联<s1>标签"], "EE<b>EE</b>EE"),
    ("`只有代码`", [], "`只有代码`"),
    ("代码`a`和`b`连着", ["代码<s0>和<s1>连着"], "EE`a`E`b`EE"),
]


@pytest.mark.parametrize(("source", "blocks", "rebuilt"), MARKDOWN, ids=[source[:40] for source, _, _ in MARKDOWN])
def test_markdown_blocks_and_rebuild(source: str, blocks: list[str], rebuilt: str) -> None:
    assert round_trip(source, "markdown") == (blocks, rebuilt)
    document = parse_markup(source, "markdown")
    assert document.rebuild(document.blocks) == source
    assert "" not in document.layout


def test_plain_text_is_one_block() -> None:
    document = parse_markup("<b>你好</b> *x*", "text")
    assert (document.blocks, document.layout) == (["<b>你好</b> *x*"], [0])
    assert document.rebuild(["Hello"]) == "Hello"


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        parse_markup("你好", "rst")
    assert str(caught.value) == "format must be one of text, html, markdown; got 'rst'"


def test_rebuild_needs_one_translation_per_block() -> None:
    document = parse_markup("<p>一</p><p>二</p>", "html")
    with pytest.raises(ValueError, match=r"^2 blocks, 1 translations$"):
        document.rebuild(["x"])


@pytest.mark.parametrize("format", ["html", "markdown"])
def test_private_use_characters_in_the_source_are_refused(format: str) -> None:
    for character in (chr(MARKUP_OPEN), chr(MARKUP_LIMIT - 1), chr(MARKUP_STANDALONE)):
        with pytest.raises(InvalidRequestError) as caught:
            parse_markup(f"你好{character}", format)
        assert str(caught.value) == (
            "the text holds private-use characters U+F0000 to U+107FFF, which the html and markdown formats "
            "reserve for markup; remove them or use format text"
        )
    assert parse_markup(f"你好{chr(MARKUP_LIMIT)}", format).blocks == [f"你好{chr(MARKUP_LIMIT)}"]
    assert parse_markup(f"你好{chr(MARKUP_OPEN - 1)}", format).blocks == [f"你好{chr(MARKUP_OPEN - 1)}"]


def test_too_much_markup_is_refused_with_advice() -> None:
    standalone = MARKUP_LIMIT - MARKUP_STANDALONE  # 32,768 standalone markup characters per document
    assert len(parse_markup("你" + "\\*你" * standalone, "markdown").blocks) == 1
    for too_much, format in (
        ("你" + "\\*你" * (standalone + 1), "markdown"),
        ("<p>你" + "<br>" * (standalone + 1), "html"),
    ):
        with pytest.raises(InvalidRequestError, match=r"^the document has too much markup to translate; split it$"):
            parse_markup(too_much, format)


# --- attribute values ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "translation", "rebuilt"),
    [
        ('<img alt="猫">', 'a "cat"', '<img alt="a &quot;cat&quot;">'),
        ("<img alt='猫'>", "the cat's", "<img alt='the cat&#39;s'>"),
        ("<img alt=猫>", "cat", "<img alt=cat>"),
        ("<img alt=猫>", "a cat", '<img alt="a cat">'),
        ("<img alt=猫>", 'a "b"', '<img alt="a &quot;b&quot;">'),
        ("<img alt=猫>", "a=b", '<img alt="a=b">'),
        ("<img alt=猫>", "R&D", "<img alt=R&amp;D>"),
        ('<img alt="猫">', "R&D", '<img alt="R&amp;D">'),
        ('<img alt="猫">', "Tom &amp; Jerry", '<img alt="Tom &amp; Jerry">'),
        ('<img alt="猫">', "a &quot;cat&quot;", '<img alt="a &quot;cat&quot;">'),  # entities the value held
        ('<img alt="猫">', "&#169; &#xA9; &copy", '<img alt="&#169; &#xA9; &amp;copy">'),
        ('<img ALT="猫" data-alt="狗">', "cat", '<img ALT="cat" data-alt="狗">'),
        ('<img src="猫.png" title="猫">', "cat", '<img src="猫.png" title="cat">'),
        ('<a title = "猫" href=x>链接</a>', "cat", '<a title = "cat" href=x>链接</a>'),
    ],
)
def test_a_translated_attribute_keeps_its_quoting(source: str, translation: str, rebuilt: str) -> None:
    document = parse_markup(source, "html")
    assert document.rebuild([translation if block == "猫" else block for block in document.blocks]) == rebuilt


def test_attribute_values_without_chinese_are_not_blocks() -> None:
    document = parse_markup('<img alt="a cat" title="">', "html")
    assert document.blocks == []
    assert document.rebuild([]) == '<img alt="a cat" title="">'


# --- skeletons -------------------------------------------------------------------------------------------------


def test_the_html_skeleton_is_the_markup_with_translated_values_blanked() -> None:
    source = '<p>你好<b class="x">世界</b><img alt="猫" src=a.png><!-- c -->&amp;</p>'
    assert skeleton(source, "html") == [
        "<p>",
        '<b class="x">',
        "</b>",
        "<img alt=… src=a.png>",
        "<!-- c -->",
        "&amp;",
        "</p>",
    ]
    assert skeleton("<img title='标题' ALT=x data-alt=\"y\"/>", "html") == ['<img title=… ALT=… data-alt="y"/>']
    assert skeleton("纯文本", "html") == []


def test_the_markdown_skeleton_lists_tokens_code_and_targets() -> None:
    source = (
        "# 标题\n\n段落**加粗**和`代码`[链](http://a.com)![图](b.png)\n\n```py\nx=1\n```\n\n    ind\n\n"
        "<div>h</div>\n\n\\*x"
    )
    assert skeleton(source, "markdown") == [
        "heading_open:#::{}",
        "inline:::{}",
        "heading_close:#::{}",
        "paragraph_open:::{}",
        "inline:::{}",
        "  strong_open:**::{}",
        "  strong_close:**::{}",
        "  code_inline:`:代码:{}",
        "  link_open:::{'href': 'http://a.com'}",
        "  link_close:::{}",
        "  image:::{'src': 'b.png'}",
        "paragraph_close:::{}",
        "fence:```:py:{}",
        "x=1\n",
        "code_block:::{}",
        "ind\n",
        "html_block:::{}",
        "<div>h</div>\n",
        "paragraph_open:::{}",
        "inline:::{}",
        "  text_special:\\*:*:{}",
        "paragraph_close:::{}",
    ]


def test_a_translation_has_the_sources_skeleton() -> None:
    for source, format in (("<p>你<b title='标'>好</b></p>", "html"), ("# 你\n\n**好** [链](u)", "markdown")):
        document = parse_markup(source, format)
        assert skeleton(document.rebuild([english(b) for b in document.blocks]), format) == skeleton(source, format)
    assert skeleton("anything", "text") == []


def test_the_markdown_skeleton_keeps_block_attributes_and_inline_html_but_not_line_breaks() -> None:
    assert skeleton("3. 第一\n4. 第二\n\n一行\n二行<b>粗</b>", "markdown") == [
        "ordered_list_open:.::{'start': 3}",
        "list_item_open:.:3:{}",
        "paragraph_open:::{}",
        "inline:::{}",
        "paragraph_close:::{}",
        "list_item_close:.::{}",
        "list_item_open:.:4:{}",
        "paragraph_open:::{}",
        "inline:::{}",
        "paragraph_close:::{}",
        "list_item_close:.::{}",
        "ordered_list_close:.::{}",
        "paragraph_open:::{}",
        "inline:::{}",
        "  html_inline::<b>:{}",
        "  html_inline::</b>:{}",
        "paragraph_close:::{}",
    ]
