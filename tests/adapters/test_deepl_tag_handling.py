"""DeepL's tag handling through the unmodified ``deepl`` client: ``tag_handling="xml"`` with inline tags and
``ignore_tags``, ``outline_detection`` and the splitting parameters, and ``tag_handling="html"`` keeping
``translate="no"``, ``class="notranslate"`` and ``ignore_tags`` as written (``handler.text.markup``)."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

import deepl
import pytest

XML = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<document>\n  <meta><title>今天天气很好。</title></meta>\n  <content>\n'
    '    <par>我们明天<x id="1"/>去北京。</par>\n    <par>请打开<ph>设置 &amp; 选项</ph>页面。</par>\n  </content>\n'
    "</document>"
)


def _deepl(url: str) -> deepl.Translator:
    return deepl.Translator("any-key", server_url=url, send_platform_info=False)


def _elements(text: str) -> list[tuple[str, dict[str, str]]]:
    return [(element.tag, element.attrib) for element in ElementTree.fromstring(text.encode("utf-8")).iter()]


def test_xml_keeps_inline_tags_and_ignored_text_and_stays_well_formed(local_server_url: str) -> None:
    result = _deepl(local_server_url).translate_text(XML, target_lang="EN-US", tag_handling="xml", ignore_tags=["ph"])
    assert _elements(result.text) == _elements(XML)  # every element and attribute, in order: well-formed
    assert '<x id="1"/>' in result.text
    assert "<ph>设置 &amp; 选项</ph>" in result.text  # ignore_tags: byte for byte
    assert "今天天气很好" not in result.text  # the rest was translated


def test_xml_fragment_and_the_splitting_parameters(local_server_url: str) -> None:
    translator = _deepl(local_server_url)
    fragment = translator.translate_text(
        "请打开<x>设置</x>来配置系统。", target_lang="EN-US", tag_handling="xml", ignore_tags="x"
    )
    assert "<x>设置</x>" in fragment.text and "配置系统" not in fragment.text
    ElementTree.fromstring(f"<root>{fragment.text}</root>")
    structured = translator.translate_text(
        "<doc><par>今天天气很好。</par><par>我们明天去北京。</par></doc>",
        target_lang="EN-US",
        tag_handling="xml",
        outline_detection=False,
        splitting_tags=["par"],
        non_splitting_tags="b",
    )
    assert [tag for tag, _ in _elements(structured.text)] == ["doc", "par", "par"]


def test_html_keeps_translate_no_notranslate_and_ignore_tags(local_server_url: str) -> None:
    html = (
        '<h1>今天天气很好。</h1><p translate="no">台北今天天气很好。</p>'
        '<p>我们<span class="notranslate">明天</span>去<keep>北京</keep>。</p>'
    )
    result = _deepl(local_server_url).translate_text(html, target_lang="EN-US", tag_handling="html", ignore_tags="keep")
    assert '<p translate="no">台北今天天气很好。</p>' in result.text
    assert '<span class="notranslate">明天</span>' in result.text and "<keep>北京</keep>" in result.text
    assert result.text.startswith("<h1>") and "<h1>今天天气很好。</h1>" not in result.text


def test_unknown_tag_handling_is_400(local_server_url: str) -> None:
    translator = _deepl(local_server_url)
    with pytest.raises(deepl.DeepLException, match="tag_handling") as raised:
        translator.translate_text("你好", target_lang="EN-US", tag_handling="json")
    assert raised.value.http_status_code == 400
