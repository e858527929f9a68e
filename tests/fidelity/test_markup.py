"""HTML and Markdown: blocks to translate, markup kept byte for byte, skeletons compared."""

from __future__ import annotations

import re

import pytest

from handler.errors import InvalidRequestError
from handler.text.markup import parse_markup, skeleton

HTML = (
    "<!DOCTYPE html><html><head><title>标题</title><style>p{color:red}</style></head>\n"
    '<body><p><b>你好</b>，<a href="x" title="链接">世界</a> &amp; 朋友<br>再见</p>\n'
    '<img alt="一只猫" src=c.png><img alt=狗><pre>代码 不译</pre><p>English only</p><!-- 注释 -->'
    '<script>var a="中文";</script><p>运行<code>ls 目录</code>即可</p></body></html>'
)
MARKDOWN = """# 标题 `code`

- 列表**加粗**项 [文档](http://x.com/a) 结束
- 第二项 ![猫](a.png)

| 名称 | 值 |
|---|---|
| 苹果 | 3元 |

```python
print('你好')
```
> 引用 &amp; 段落
  续行
"""
_MARKUP = re.compile("[\U000f0000-\U00107fff]")


def english(document):  # type: ignore[no-untyped-def]
    """A stand-in translation of every block: "EN<i>", then each of the block's markup characters followed by a
    word (so that emphasis and links keep some text)."""
    return [
        f"EN{index}" + "".join(f"{char}w" for char in _MARKUP.findall(block))
        for index, block in enumerate(document.blocks)
    ]


@pytest.mark.parametrize(("source", "format"), [(HTML, "html"), (MARKDOWN, "markdown")])
def test_the_untranslated_document_rebuilds_byte_for_byte(source: str, format: str) -> None:
    document = parse_markup(source, format)
    assert document.rebuild(document.blocks) == source


def test_html_translates_text_nodes_and_alt_title_but_nothing_else() -> None:
    document = parse_markup(HTML, "html")
    plain = [_MARKUP.sub("", block) for block in document.blocks]
    assert plain == ["标题", "链接", "你好，世界  朋友再见", "一只猫", "狗", "运行即可"]
    out = document.rebuild(english(document))
    assert '<a href="x" title="EN1">' in out and 'alt="EN3"' in out and "alt=EN4>" in out
    for kept in ("<pre>代码 不译</pre>", "<!-- 注释 -->", '<script>var a="中文";</script>', "<code>ls 目录</code>"):
        assert kept in out
    assert skeleton(out, "html") == skeleton(HTML, "html")


def test_markdown_keeps_code_link_targets_and_line_syntax() -> None:
    document = parse_markup(MARKDOWN, "markdown")
    out = document.rebuild(english(document))
    lines = out.splitlines()
    assert lines[0] == "# EN0`code`w"
    assert "](http://x.com/a)" in out and "![猫](a.png)" in out and "print('你好')" in out
    assert lines[5:8] == ["| EN3 | EN4 |", "|---|---|", "| EN5 | EN6 |"]
    assert skeleton(out, "markdown") == skeleton(MARKDOWN, "markdown")


def test_an_attribute_translation_is_escaped_for_its_quotes() -> None:
    document = parse_markup('<img alt="猫">', "html")
    assert document.rebuild(['a "cat" & dog']) == '<img alt="a &quot;cat&quot; &amp; dog">'
    unquoted = parse_markup("<img alt=猫>", "html")
    assert unquoted.rebuild(["a cat"]) == '<img alt="a cat">'
    assert unquoted.rebuild(["cat"]) == "<img alt=cat>"


def test_markup_characters_in_the_input_are_refused() -> None:
    with pytest.raises(InvalidRequestError, match="private-use characters"):
        parse_markup("<p>\U000f0000</p>", "html")
