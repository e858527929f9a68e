"""XLIFF 1.2 and 2.x (``handler.formats.xliff``): targets written with their inline codes in place, final units,
notes and ``translate="no"`` left alone, states and languages set, refusals; every result read with lxml."""

from __future__ import annotations

import re

import pytest
from lxml import etree

from handler.errors import InvalidRequestError, TranslatorError
from handler.formats import FORMATS, accepted_format, format_for, translate_file
from handler.formats.xliff import STATE_1, STATE_2, XLIFF
from handler.text.spans import MARKUP_CLOSE, MARKUP_OPEN, MARKUP_STANDALONE
from tests.formats import xliff_samples as samples
from tests.formats.inspection import assert_translated
from tests.fuzz.shipped import needs_shipped_bundle, shipped_service

N1 = {"x": samples.XLIFF_1}
N2 = {"x": samples.XLIFF_2}
HAN = re.compile("[\u4e00-\u9fff]+")


def o(i: int) -> str:
    return chr(MARKUP_OPEN + i)


def c(i: int) -> str:
    return chr(MARKUP_CLOSE + i)


def s(j: int) -> str:
    return chr(MARKUP_STANDALONE + j)


def fake_english(line: str) -> str:
    """A predictable 'translation': every run of Han characters becomes 'en', CJK punctuation ASCII."""
    return HAN.sub("en", line).replace("。", ".").replace("，", ", ").replace("？", "?")


def translated(data: bytes, english: dict[int, str] | None = None) -> bytes:
    parsed = XLIFF.parse(data, "x.xlf")
    lines = [(english or {}).get(i, fake_english(line)) for i, line in enumerate(parsed.lines)]
    return parsed.rebuild(lines)


def element(data: bytes, path: str, ns: dict[str, str]) -> etree._Element:
    found = etree.fromstring(data).find(path, ns)
    assert found is not None, path
    return found


def raw(data: bytes, tag: str, uid: str) -> bytes:
    """The bytes of the element ``<tag id="uid">`` as they are in ``data``."""
    found = re.search(f'<{tag} id="{re.escape(uid)}".*?</{tag}>'.encode(), data, re.DOTALL)
    assert found is not None, uid
    return found.group()


def inner(target: etree._Element) -> str:
    """A target's content as XML, without namespace declarations."""
    whole = etree.tostring(target, encoding=str, with_tail=False)
    whole = re.sub(r' xmlns(:\w+)?="[^"]*"', "", whole)
    return whole[whole.index(">") + 1 : whole.rindex("<")]


def test_registered_for_both_suffixes() -> None:
    assert XLIFF in FORMATS
    assert format_for("messages.xlf") is XLIFF
    assert accepted_format("Messages.XLIFF") is XLIFF
    assert XLIFF.content_type == "application/xliff+xml"


# --- XLIFF 1.2 --------------------------------------------------------------------------------------------------

CODES_LINE = f"请{o(0)}点击{c(0)}下面的{s(0)}按钮{o(1)}保存{s(1)}文件{c(1)}，然后{s(2)}关闭{s(3)}窗口。"


def test_v1_lines_one_per_unit_to_translate_with_codes_as_markup_characters() -> None:
    parsed = XLIFF.parse(samples.sample_file(), "x.xlf")
    assert parsed.lines == [
        "欢迎使用我们的翻译服务。",
        CODES_LINE,  # <bx/> before the sentence and <ex/><it> after it never reach the model
        "文件已保存。",
        f"第一行文字{s(0)}第二行文字",  # a line break is a void character
        f"确定要{o(0)}删除{c(0)}这个项目吗？",
        f"{o(0)}第一句话。{c(0)}{o(1)}第二句话。{c(1)}",  # <seg-source>'s segments
    ]
    assert parsed.characters == sum(len(line) for line in parsed.lines)
    assert "\n" not in "".join(parsed.lines)


def test_v1_target_after_source_with_codes_where_the_english_puts_them() -> None:
    english = f"Then {s(2)}close{s(3)} the window{o(1)}{s(1)}after saving{c(1)}: click {o(0)}the button{c(0)}{s(0)}."
    out = translated(samples.sample_file(), {1: english})
    unit = element(out, ".//x:trans-unit[@id='codes']", N1)
    source, target = unit.find("x:source", N1), unit.find("x:target", N1)
    assert target is not None and source is not None
    assert list(unit).index(target) == list(unit).index(source) + 1
    assert inner(target) == (
        '<bx id="1" rid="1"/>Then <bpt id="6">&lt;b&gt;</bpt>close<ept id="6">&lt;/b&gt;</ept> the window'
        '<g id="4"><ph id="5">&lt;br/&gt;</ph>after saving</g>: click <g id="2" ctype="bold">the button</g>'
        '<x id="3" ctype="image"/>.<ex id="7" rid="1"/><it id="8" pos="open">&lt;i&gt;</it>'
    )
    assert (target.get("state"), target.get("state-qualifier")) == STATE_1
    assert samples.codes_of(target, samples.XLIFF_1) == samples.codes_of(source, samples.XLIFF_1)


def test_v1_codes_the_translation_dropped_are_appended_never_lost() -> None:
    out = translated(samples.sample_file(), {1: "Click the button below, save the file and close the window."})
    unit = element(out, ".//x:trans-unit[@id='codes']", N1)
    target, source = unit.find("x:target", N1), unit.find("x:source", N1)
    assert target is not None and source is not None
    assert samples.codes_of(target, samples.XLIFF_1) == samples.codes_of(source, samples.XLIFF_1)
    assert inner(target).startswith('<bx id="1" rid="1"/>Click the button below, save the file and close the window.')
    assert inner(target).endswith('<ex id="7" rid="1"/><it id="8" pos="open">&lt;i&gt;</it>')


def test_v1_final_translated_no_chinese_and_translate_no_units_stay_byte_for_byte() -> None:
    source = samples.sample_file()
    out = translated(source)
    for uid in ("approved", "translated", "brand", "version", "menu.file"):
        before = element(source, f".//x:trans-unit[@id='{uid}']", N1)
        after = element(out, f".//x:trans-unit[@id='{uid}']", N1)
        assert etree.tostring(after) == etree.tostring(before), uid
        assert raw(source, "trans-unit", uid) in out
    notes = [etree.tostring(note) for note in etree.fromstring(out).iter(f"{{{samples.XLIFF_1}}}note")]
    assert notes == [etree.tostring(note) for note in etree.fromstring(source).iter(f"{{{samples.XLIFF_1}}}note")]


def test_v1_languages_states_empty_target_xml_space_and_segments() -> None:
    out = translated(samples.sample_file(), {3: f"First line{s(0)}second line"})
    assert element(out, "x:file", N1).get("target-language") == "en"
    empty = element(out, ".//x:trans-unit[@id='empty-target']", N1)
    assert [child.tag.split("}")[1] for child in empty] == ["source", "target"]
    target = empty[1]
    assert target.text == "en." and (target.get("state"), target.get("state-qualifier")) == STATE_1
    lines = element(out, ".//x:trans-unit[@id='two-lines']/x:target", N1)
    assert lines.text == "First line\nsecond line"
    assert lines.get("{http://www.w3.org/XML/1998/namespace}space") == "preserve"
    for uid in ("welcome", "dialog.delete"):  # right after the source, before the note
        unit = element(out, f".//x:trans-unit[@id='{uid}']", N1)
        assert [child.tag.split("}")[1] for child in unit] == ["source", "target", "note"]
    segmented = element(out, ".//x:trans-unit[@id='dialog.segmented']", N1)
    assert [child.tag.split("}")[1] for child in segmented] == ["source", "seg-source", "target"]
    assert inner(segmented[2]) == '<mrk mtype="seg" mid="1">en.</mrk><mrk mtype="seg" mid="2">en.</mrk>'
    term = element(out, ".//x:trans-unit[@id='dialog.delete']/x:target", N1)
    assert inner(term) == 'en<mrk mtype="term">en</mrk>en?'


def test_v1_translating_the_output_again_changes_nothing() -> None:
    out = translated(samples.sample_file())
    again = XLIFF.parse(out, "x.xlf")
    assert again.lines == []
    assert again.rebuild([]) == out


# --- XLIFF 2.x --------------------------------------------------------------------------------------------------


def test_v2_one_line_per_segment_and_targets_in_each_segment() -> None:
    source = samples.sample_file_v2()
    parsed = XLIFF.parse(source, "x.xlf")
    assert parsed.lines == [
        "用户指南",
        f"请{o(0)}点击{s(0)}这里{c(0)}继续阅读。",
        f"按{s(0)}保存{s(1)}键{s(2)}完成。",
        f"在{s(0)}里修改{o(0)}设置{c(0)}。",  # <mrk translate="no"> is a void: config.yaml never reaches the model
        f"第一行文字{s(0)}第二行文字",
    ]
    english = {1: f"Please {o(0)}click{s(0)}here{c(0)} to read on.", 2: f"Press{s(0)}Save{s(1)}to finish{s(2)}."}
    out = parsed.rebuild([english.get(i, fake_english(line)) for i, line in enumerate(parsed.lines)])
    assert element(out, ".", N2).get("trgLang") == "en"
    unit = element(out, ".//x:unit[@id='codes']", N2)
    kinds = [child.tag.split("}")[1] for child in unit]
    assert kinds == ["originalData", "segment", "ignorable", "segment", "segment"]
    first, second, final = unit.findall("x:segment", N2)
    for segment in (first, second):
        assert [child.tag.split("}")[1] for child in segment] == ["source", "target"]
        assert (segment.get("state"), segment.get("subState")) == STATE_2
    assert (
        inner(first[1])
        == 'Please <pc id="1" dataRefStart="d2" dataRefEnd="d3">click<ph id="2" dataRef="d1"/>here</pc> to read on.'
    )
    assert (
        inner(second[1])
        == 'Press<sc id="3" type="fmt" subType="xlf:b"/>Save<ec startRef="3"/>to finish<cp hex="0001"/>.'
    )
    before = element(source, ".//x:unit[@id='codes']", N2)
    assert etree.tostring(final) == etree.tostring(before.findall("x:segment", N2)[2])  # state="final": untouched
    for path in ("x:originalData", "x:ignorable"):
        assert etree.tostring(unit.find(path, N2)) == etree.tostring(before.find(path, N2))
    kept = element(out, ".//x:unit[@id='empty-target']/x:segment/x:target", N2)
    assert inner(kept) == 'en<mrk id="m1" translate="no">config.yaml</mrk>en<mrk id="m2" type="term">en</mrk>.'


def test_v2_translate_no_no_chinese_and_notes_stay_byte_for_byte() -> None:
    source = samples.sample_file_v2()
    out = translated(source)
    for uid in ("brand", "version", "menu.file"):
        before = element(source, f".//x:unit[@id='{uid}']", N2)
        assert etree.tostring(element(out, f".//x:unit[@id='{uid}']", N2)) == etree.tostring(before), uid
        assert raw(source, "unit", uid) in out
    notes = [etree.tostring(note) for note in etree.fromstring(out).iter(f"{{{samples.XLIFF_2}}}notes")]
    assert notes == [etree.tostring(note) for note in etree.fromstring(source).iter(f"{{{samples.XLIFF_2}}}notes")]
    assert XLIFF.parse(out, "x.xlf").lines == []


@pytest.mark.parametrize("make", [samples.sample_file, samples.sample_file_v2])
def test_what_a_user_sees_is_english_with_the_structure_kept(make: object) -> None:
    assert callable(make)
    source = make()
    assert_translated(samples.inspect, source, translated(source))


def test_a_file_of_sentences_and_the_fan_out_join() -> None:
    source = samples.file_of(
        ["今天天气很好。", "我们去公园散步吧。", "他喜欢读书。", "这本书很有意思。", "谢谢你的帮助。"]
    )
    parsed = XLIFF.parse(source, "big.xlf")
    assert len(parsed.lines) == 5
    whole = translated(source)
    assert_translated(samples.inspect, source, whole)
    english = "\n".join(fake_english(line) for line in parsed.lines)
    assert XLIFF.join(english, lambda: source, "big.xlf") == whole


# --- choices and refusals ---------------------------------------------------------------------------------------


def v1(units: str, file_attributes: str = 'source-language="zh-CN"') -> bytes:
    return (
        f'<xliff xmlns="{samples.XLIFF_1}" version="1.2"><file original="a" datatype="plaintext" {file_attributes}>'
        f"<body>{units}</body></file></xliff>"
    ).encode()


def test_nearest_translate_attribute_decides_and_source_language_is_not_checked() -> None:
    data = v1(
        '<group translate="no"><trans-unit id="a" translate="yes"><source>你好</source></trans-unit>'
        '<trans-unit id="b"><source>再见</source></trans-unit></group>',
        'source-language="en" target-language="en-US"',
    )
    assert XLIFF.parse(data, "x.xlf").lines == ["你好"]
    out = translated(data)
    assert element(out, "x:file", N1).get("target-language") == "en-US"
    assert element(out, ".//x:trans-unit[@id='a']/x:target", N1).text == "en"


def test_a_file_with_nothing_to_translate_comes_back_byte_for_byte() -> None:
    data = b'<?xml version="1.0"?>\n' + v1("<trans-unit id='a'><source>Hello</source></trans-unit>")
    assert translated(data) == data
    approved = v1(
        '<trans-unit id="a" approved="yes"><source>取消</source><target state="new">Cancel</target></trans-unit>'
    )
    assert XLIFF.parse(approved, "x.xlf").lines == []  # approved="yes" decides, whatever the target's state
    assert translated(approved) == approved


def test_declaration_kept_as_utf8() -> None:
    data = b"<?xml version='1.0' encoding='UTF-8' standalone='yes'?>\n" + v1(
        '<trans-unit id="a"><source>你好</source></trans-unit>'
    )
    assert translated(data).startswith(b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<xliff ')
    assert translated(v1('<trans-unit id="a"><source>你好</source></trans-unit>')).startswith(b"<xliff ")


def test_wrong_number_of_translations_is_an_error() -> None:
    parsed = XLIFF.parse(samples.sample_file(), "x.xlf")
    with pytest.raises(TranslatorError, match="has 1 units, not 6"):
        parsed.rebuild(["one"])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (v1('<trans-unit id="a"><source>你好</source></trans-unit>', 'target-language="de"'), "into 'de'"),
        (
            f'<xliff xmlns="{samples.XLIFF_2}" version="2.0" srcLang="zh" trgLang="fr"><file id="f"><unit id="u">'
            "<segment><source>你好</source></segment></unit></file></xliff>".encode(),
            "into 'fr'",
        ),
    ],
)
def test_another_target_language_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        XLIFF.parse(data, "x.xlf")


BILLION_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE xliff [<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
    b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>'
    b'<xliff xmlns="urn:oasis:names:tc:xliff:document:1.2" version="1.2"><file original="a" datatype="x" '
    b'source-language="zh"><body><trans-unit id="1"><source>&c;</source></trans-unit></body></file></xliff>'
)
XXE = (
    b'<?xml version="1.0"?><!DOCTYPE xliff [<!ENTITY secret SYSTEM "file:///etc/passwd">]>'
    b'<xliff xmlns="urn:oasis:names:tc:xliff:document:1.2" version="1.2"><file original="a" datatype="x" '
    b'source-language="zh"><body><trans-unit id="1"><source>\xe4\xbd\xa0&secret;</source></trans-unit></body></file>'
    b"</xliff>"
)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x89PNG\r\n\x1a\n not xml", "not a file in XLIFF 1.2 or 2.x: x.xlf is not well-formed XML"),
        (b"<html><body>\xe4\xbd\xa0\xe5\xa5\xbd</body></html>", "has a root element <html>, not <xliff>"),
        (b'<xliff version="1.2"><file/></xliff>', "has an <xliff> root in no namespace"),
        (b'<xliff xmlns="urn:oasis:names:tc:xliff:document:1.1" version="1.1"/>', "is XLIFF 1.1, which"),
        (f'<xliff xmlns="{samples.XLIFF_2}" version="3.0" srcLang="zh"/>'.encode(), "is XLIFF 3.0, which"),
        (f'<xliff xmlns="{samples.XLIFF_1}" version="2.0"/>'.encode(), "is XLIFF 2.0, which"),
        (BILLION_LAUGHS, "declares XML entities"),
        (XXE, "declares XML entities"),
    ],
)
def test_refusals(data: bytes, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=re.escape(message)) as refused:
        XLIFF.parse(data, "x.xlf")
    assert "root:" not in str(refused.value)  # nothing of /etc/passwd


@needs_shipped_bundle
@pytest.mark.parametrize("make", [samples.sample_file, samples.sample_file_v2])
def test_translated_by_the_shipped_model(make: object) -> None:
    assert callable(make)
    source = make()
    result = translate_file(source, "guide.xliff", shipped_service())
    assert result.content_type == "application/xliff+xml"
    assert_translated(samples.inspect, source, result.data)
    assert XLIFF.parse(result.data, "guide.xliff").lines == []  # every translated target is marked for review
