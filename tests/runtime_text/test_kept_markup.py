"""Text that must stay as written (``handler.text.markup``): HTML's ``translate="no"`` (and ``translate="yes"``
inside it), ``class="notranslate"``, and DeepL's tag handling (``parse_tagged``: html and xml with ``ignore_tags``,
``non_splitting_tags``, ``splitting_tags``, ``outline_detection``).

The translation here is a stand-in that marks every block it is given (``EN(...)`` around the block, every Chinese
character replaced and an ``&`` and a ``<`` added), so the tests see exactly which text went to the translator and
what came back in place; the parser, the layout and the rebuild are the real ones."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

import pytest

from handler.errors import InvalidRequestError
from handler.options import TranslateOptions
from handler.text.markup import TagRules, parse_markup, parse_tagged, translate_tagged
from tests.fuzz.shipped import needs_shipped_bundle, shipped_service

HAN = re.compile(r"[\u4e00-\u9fff]")


def english(block: str) -> str:
    """A translation that keeps the markup characters and leaves no Chinese: what a faithful model does."""
    return "EN(" + HAN.sub("z", block) + " R&D <3)"


def translated_html(source: str) -> str:
    document = parse_markup(source, "html")
    return document.rebuild([english(block) for block in document.blocks])


def tagged(source: str, tag_handling: str, **rules: object) -> str:
    return translate_tagged([source], tag_handling, TagRules(**rules), lambda blocks: [english(b) for b in blocks])[0]  # type: ignore[arg-type]


def test_translate_no_keeps_the_element_and_its_content_byte_for_byte() -> None:
    kept = '<p translate="no" title="标题">台北 101 <b>不要翻译</b></p>'
    output = translated_html(f"<div><p>今天天气很好。</p>{kept}<p>明天见。</p></div>")
    assert kept in output
    assert "EN(zzzzzz。" in output and "EN(zzz。" in output


def test_notranslate_class_among_other_classes_and_inline() -> None:
    span = '<span class="brand notranslate">微信支付</span>'
    div = '<div class=notranslate>保持<img alt="图片"></div>'
    output = translated_html(f"<p>请打开{span}设置。</p>{div}")
    assert output == f"<p>EN(zzz{span}zz。 R&D <3)</p>{div}"  # inline: it stays inside the sentence


def test_translate_yes_inside_translate_no_is_translated_again() -> None:
    source = '<section translate="no">保持这个<p translate="yes">翻译这个</p>也保持</section>'
    output = translated_html(source)
    assert output == '<section translate="no">保持这个<p translate="yes">EN(zzzz R&D <3)</p>也保持</section>'


def test_translate_no_on_a_void_element_keeps_its_alt_text() -> None:
    output = translated_html('<p>图片：<img translate="no" alt="原文"> 完</p><img alt="翻译">')
    assert '<img translate="no" alt="原文">' in output and 'alt="翻译"' not in output


def test_an_ordinary_html_document_is_still_translated() -> None:
    # the attribute's absence or translate="yes" change nothing: the document is translated as before
    assert translated_html('<p translate="yes">你好</p>') == '<p translate="yes">EN(zz R&D <3)</p>'


def test_deepl_html_ignore_tags_and_splitting_tags() -> None:
    output = tagged("<p>请打开<keep>设置</keep>页面。</p>", "html", ignore_tags=frozenset({"KEEP"}))
    assert "<keep>设置</keep>" in output and "页面" not in output
    split = parse_tagged("<p>第一<em>句</em>第二</p>", "html", TagRules(splitting_tags=frozenset({"em"})))
    assert split.blocks == ["第一", "句", "第二"]
    joined = parse_tagged("<p>第一<div>句</div>第二</p>", "html", TagRules(non_splitting_tags=frozenset({"div"})))
    assert len(joined.blocks) == 1


XML_DOCUMENT = """<?xml version="1.0" encoding="UTF-8"?>
<document>
  <meta>
    <title>文件的标题</title>
  </meta>
  <content>
    <par>按<x id="1"/>继续，然后打开<b>设置</b>。</par>
    <par>请勿翻译<ph>产品名称 &amp; 版本</ph>这个。</par>
  </content>
</document>"""


def test_xml_inline_tags_kept_and_output_well_formed() -> None:
    output = tagged(XML_DOCUMENT, "xml", ignore_tags=frozenset({"ph"}))
    root = ElementTree.fromstring(output.encode("utf-8"))  # well-formed, though the translations hold & and <
    assert [element.tag for element in root.iter()] == [
        element.tag for element in ElementTree.fromstring(XML_DOCUMENT.encode("utf-8")).iter()
    ]
    assert '<x id="1"/>' in output and "<b>" in output
    assert "<ph>产品名称 &amp; 版本</ph>" in output  # ignore_tags: as written
    assert "R&amp;D &lt;3" in output
    assert not HAN.search(output.replace("<ph>产品名称 &amp; 版本</ph>", ""))


def test_xml_outline_detection_splits_at_elements_that_hold_text() -> None:
    document = parse_tagged(XML_DOCUMENT, "xml", TagRules())
    assert len(document.blocks) == 3  # the title and the two par elements; x and b stay inside their sentence
    assert all("<" not in block for block in document.blocks)


def test_xml_without_outline_detection_splits_only_at_splitting_tags() -> None:
    source = "<doc><par>第一句。</par><par>第二句。</par></doc>"
    assert len(parse_tagged(source, "xml", TagRules(outline_detection=False)).blocks) == 1
    rules = TagRules(outline_detection=False, splitting_tags=frozenset({"par"}))
    assert parse_tagged(source, "xml", rules).blocks == ["第一句。", "第二句。"]
    inline = TagRules(non_splitting_tags=frozenset({"par"}))
    assert len(parse_tagged(source, "xml", inline).blocks) == 1


def test_xml_tag_names_are_case_sensitive() -> None:
    output = tagged("<Doc><Keep>不要</Keep><keep>翻译</keep></Doc>", "xml", ignore_tags=frozenset({"Keep"}))
    assert "<Keep>不要</Keep>" in output and "<keep>EN(zz" in output


def test_xml_fragment_with_inline_ignore_tag() -> None:
    output = tagged("请打开页面<x>设置</x>来配置系统。", "xml", ignore_tags=frozenset({"x"}))
    assert output.startswith("EN(") and "<x>设置</x>" in output
    ElementTree.fromstring(f"<root>{output}</root>")


def test_unknown_tag_handling_is_refused() -> None:
    with pytest.raises(InvalidRequestError, match="html, xml"):
        parse_tagged("你好", "json", TagRules())


@needs_shipped_bundle
def test_kept_traditional_text_is_not_converted_to_simplified() -> None:
    # the service converts Traditional to the model's Simplified script: only the blocks it translates, never
    # what stays as written, and the blocks in the whole text's variant (the markup parsed before the conversion)
    service = shipped_service(beam_size=1)
    kept = '<p translate="no">臺灣的雲</p>'
    output = service.translate_many([f"<p>今天天氣很好。</p>{kept}"], TranslateOptions(format="html"))[0]
    assert output.endswith(kept) and not HAN.search(output[: -len(kept)])


@needs_shipped_bundle
def test_an_html_file_keeps_its_translate_no_elements() -> None:
    from handler.formats import translate_file

    kept = '<span class="notranslate">微信支付</span>'
    page = f'<html><body><h1>今天天气很好。</h1><p>请使用{kept}付款。</p><p translate="no">不要翻译。</p></body></html>'
    english = translate_file(page.encode("utf-8"), "page.html", shipped_service(beam_size=1)).data.decode("utf-8")
    assert kept in english and '<p translate="no">不要翻译。</p>' in english and "今天" not in english
