"""Traditional Chinese to the model's script (``handler.text.script_conversion``): detection, variants, conversion."""

from __future__ import annotations

import pytest

from handler.errors import InvalidRequestError
from handler.service import TranslateOptions
from handler.text.script_conversion import (
    AUTO,
    HONG_KONG,
    SIMPLIFIED,
    TAIWAN,
    TRADITIONAL,
    ScriptConverter,
    canonical_variant,
    default_converter,
)


@pytest.fixture(scope="module")
def converter() -> ScriptConverter:
    return default_converter()


@pytest.mark.parametrize(
    ("text", "variant"),
    [
        ("請問最近的捷運站在哪裡？", TRADITIONAL),
        ("这个电脑的内存不够。", SIMPLIFIED),
        ("我們的軟體很好用", TRADITIONAL),
        ("你好", AUTO),  # characters both scripts share: no sign either way
        ("Hello, world 123", AUTO),
        ("", AUTO),
    ],
)
def test_detects_the_script_from_the_characters(converter: ScriptConverter, text: str, variant: str) -> None:
    assert converter.detect(text).variant == variant


def test_detection_counts_the_distinguishing_characters(converter: ScriptConverter) -> None:
    found = converter.detect("這個電腦的記憶體不夠")
    assert (found.han, found.traditional_only, found.simplified_only) == (10, 8, 0)


@pytest.mark.parametrize(
    ("text", "variant", "expected"),
    [
        # OpenCC's Taiwan phrases map the vocabulary, not only the characters
        ("這個電腦的記憶體不夠，軟體也很舊。", TAIWAN, "这个电脑的内存不够，软件也很旧。"),
        # regional words OpenCC leaves alone become the mainland words the model learned
        ("請問最近的捷運站在哪裡？", AUTO, "请问最近的地铁站在哪里？"),
        ("我想坐計程車。", HONG_KONG, "我想坐出租车。"),
        # Simplified text and text without Chinese pass through untouched, even with a Traditional variant named
        ("请问最近的地铁站在哪里？", AUTO, "请问最近的地铁站在哪里？"),
        ("<b>Hello</b> 2026", TRADITIONAL, "<b>Hello</b> 2026"),
        ("乾隆", SIMPLIFIED, "乾隆"),  # told it is Simplified: nothing is converted
    ],
)
def test_converts_to_the_models_script(converter: ScriptConverter, text: str, variant: str, expected: str) -> None:
    assert converter.to_model_script(text, variant) == expected


@pytest.mark.parametrize(
    ("spelling", "variant"),
    [("zh", SIMPLIFIED), ("zh-CN", SIMPLIFIED), ("zt", TRADITIONAL), ("ZH-HANT", TRADITIONAL), ("zh-tw", TAIWAN)],
)
def test_client_spellings_of_the_variants(spelling: str, variant: str) -> None:
    assert canonical_variant(spelling) == variant


def test_unknown_variant_is_refused_with_the_accepted_ones() -> None:
    with pytest.raises(InvalidRequestError, match=r"source 'ja' is not a Chinese variant .*zh-Hant, zh-TW, zh-HK"):
        TranslateOptions(source="ja")
    assert TranslateOptions(source="zt").source == TRADITIONAL


def _recording_converter() -> tuple[ScriptConverter, list[str]]:
    """A converter whose OpenCC stand-in changes nothing and records the configurations it was built with."""
    built: list[str] = []

    class Identity:
        def __init__(self, config: str) -> None:
            built.append(config)

        def convert(self, text: str) -> str:
            return text

    return ScriptConverter(Identity), built


def test_converters_are_built_once_and_on_first_use() -> None:
    converter, built = _recording_converter()
    assert built == []
    converter.to_model_script("測試", TAIWAN)
    converter.to_model_script("測試", TAIWAN)
    assert built == ["tw2sp"]


def test_detection_loads_no_converter_and_simplified_text_never_does() -> None:
    converter, built = _recording_converter()
    assert converter.detect("這個電腦的記憶體不夠").variant == TRADITIONAL
    assert converter.to_model_script("这个电脑的内存不够。", AUTO) == "这个电脑的内存不够。"
    assert built == []  # OpenCC's dictionaries (31.5 MB of heap) stay unloaded
    converter.to_model_script("這個電腦的記憶體不夠", AUTO)
    assert built == ["tw2sp"]


def test_the_shipped_character_forms_are_what_the_pinned_opencc_says() -> None:
    import json

    from build.han_forms import compute_forms
    from handler.text.script_conversion import HAN_FORMS

    # if this fails after an OpenCC upgrade, run: python -m build.han_forms
    assert json.loads(HAN_FORMS.read_text(encoding="utf-8")) == compute_forms()
