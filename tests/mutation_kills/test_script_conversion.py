"""Boundaries of the script conversion: every client spelling, the Han ranges, the detection sample and its ties,
which OpenCC configuration each variant uses, and the regional words; with the real OpenCC where text is
converted, and a recording stand-in where the question is which converter was built."""

from __future__ import annotations

import pytest

from handler.errors import InvalidRequestError
from handler.text.script_conversion import (
    AUTO,
    HONG_KONG,
    SIMPLIFIED,
    TAIWAN,
    TRADITIONAL,
    VARIANTS,
    Detection,
    ScriptConverter,
    canonical_variant,
    default_converter,
)

TRADITIONAL_ONLY = "體"  # t2s changes it
SIMPLIFIED_ONLY = "体"  # s2t changes it
SHARED = "你"  # both scripts write it so


def recording() -> tuple[ScriptConverter, list[str]]:
    built: list[str] = []

    class Marking:
        def __init__(self, config: str) -> None:
            built.append(config)
            self.config = config

        def convert(self, text: str) -> str:
            return f"[{self.config}]{text}"

    return ScriptConverter(Marking), built


# --- the variants a client may name ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "variant"),
    [
        ("zh", SIMPLIFIED),
        ("zh-cn", SIMPLIFIED),
        ("ZH-CN", SIMPLIFIED),
        ("zh-sg", SIMPLIFIED),
        ("zh-Hans", SIMPLIFIED),
        ("zh-hans-cn", SIMPLIFIED),
        ("zt", TRADITIONAL),
        ("ZH-HANT", TRADITIONAL),
        ("zh-Hant", TRADITIONAL),
        ("zh-TW", TAIWAN),
        ("zh-hant-tw", TAIWAN),
        ("zh-HK", HONG_KONG),
        ("zh-mo", HONG_KONG),
        ("zh-Hant-HK", HONG_KONG),
        ("auto", AUTO),
        ("AUTO", AUTO),
        ("  zh-tw \t", TAIWAN),
    ],
)
def test_every_client_spelling(spelling: str, variant: str) -> None:
    assert canonical_variant(spelling) == variant


def test_the_variants_themselves_are_accepted() -> None:
    assert [canonical_variant(variant) for variant in VARIANTS] == list(VARIANTS)
    assert VARIANTS == ("auto", "zh-Hans", "zh-Hant", "zh-TW", "zh-HK")


@pytest.mark.parametrize("value", ["ja", "", "zh-", "zh_TW", "zh-Hant-CN-x", "en"])
def test_other_values_are_refused_naming_the_accepted_ones(value: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        canonical_variant(value)
    assert str(caught.value) == (
        f"source {value!r} is not a Chinese variant this server reads; use one of auto, zh-Hans, zh-Hant, zh-TW, "
        "zh-HK (also accepted: zh, zh-CN, zt, zh-MO)"
    )


def test_a_value_that_is_not_a_string_is_refused_not_crashed_on() -> None:
    with pytest.raises(InvalidRequestError, match=r"^source 5 is not a Chinese variant"):
        canonical_variant(5)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match=r"^source None is not"):
        canonical_variant(None)  # type: ignore[arg-type]


# --- which characters count -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "han"),
    [
        (0x4E00, True),
        (0x9FFF, True),
        (0x4DFF, False),
        (0xA000, False),
        (0x3400, True),
        (0x4DBF, True),
        (0x33FF, False),
        (0x4DC0, False),
        (0xF900, True),
        (0xFAFF, True),
        (0xF8FF, False),
        (0xFB00, False),
        (0x20000, True),
        (0x2FA1F, True),
        (0x1FFFF, False),
        (0x2FA20, False),
        (0x3000, False),  # the ideographic space
        (0x3002, False),  # 。
    ],
)
def test_the_han_ranges_and_their_ends(code: int, han: bool) -> None:
    assert ScriptConverter().detect("a" + chr(code) + "b").han == (1 if han else 0)


def test_detection_looks_at_the_first_4000_characters_only() -> None:
    converter = ScriptConverter()
    assert converter.detect("a" * 3999 + TRADITIONAL_ONLY).variant == TRADITIONAL
    assert converter.detect("a" * 4000 + TRADITIONAL_ONLY) == Detection(AUTO, 0, 0, 0)


def test_detection_counts_every_han_character_and_each_distinct_form_once() -> None:
    converter = ScriptConverter()
    assert converter.detect(TRADITIONAL_ONLY * 3 + SHARED * 2) == Detection(TRADITIONAL, 5, 1, 0)
    assert converter.detect(SIMPLIFIED_ONLY * 2 + SHARED) == Detection(SIMPLIFIED, 3, 0, 1)
    assert converter.detect(SHARED * 4) == Detection(AUTO, 4, 0, 0)
    assert converter.detect("") == Detection(AUTO, 0, 0, 0)
    assert converter.detect("no Chinese at all, 2026") == Detection(AUTO, 0, 0, 0)


def test_a_tie_is_undecided_and_one_more_form_decides() -> None:
    converter = ScriptConverter()
    assert converter.detect(TRADITIONAL_ONLY + SIMPLIFIED_ONLY) == Detection(AUTO, 2, 1, 1)
    assert converter.detect("這" + TRADITIONAL_ONLY + SIMPLIFIED_ONLY).variant == TRADITIONAL
    assert converter.detect("这" + TRADITIONAL_ONLY + SIMPLIFIED_ONLY).variant == SIMPLIFIED
    # many occurrences of one form do not outweigh two distinct forms of the other script
    assert converter.detect(TRADITIONAL_ONLY * 9 + "这" + SIMPLIFIED_ONLY).variant == SIMPLIFIED


# --- resolving and converting -----------------------------------------------------------------------------------


def test_resolve_keeps_a_named_variant_and_detects_auto() -> None:
    converter = ScriptConverter()
    assert converter.resolve("這個", TAIWAN) == TAIWAN
    assert converter.resolve("这个", "zh-hk") == HONG_KONG
    assert converter.resolve("這個") == TRADITIONAL
    assert converter.resolve("这个", "auto") == SIMPLIFIED
    assert converter.resolve("你好") == SIMPLIFIED  # undecided: the model's own script
    assert converter.resolve("") == SIMPLIFIED
    with pytest.raises(InvalidRequestError):
        converter.resolve("這個", "ja")


@pytest.mark.parametrize(
    ("variant", "config"),
    [(TRADITIONAL, "tw2sp"), (TAIWAN, "tw2sp"), (HONG_KONG, "hk2s"), ("zt", "tw2sp"), ("zh-mo", "hk2s")],
)
def test_each_traditional_variant_uses_its_opencc_configuration(variant: str, config: str) -> None:
    converter, built = recording()
    assert converter.to_model_script("軟體", variant) == f"[{config}]軟體"
    assert built == [config]


def test_simplified_and_empty_text_build_no_converter() -> None:
    converter, built = recording()
    assert converter.to_model_script("軟體", SIMPLIFIED) == "軟體"
    assert converter.to_model_script("", TAIWAN) == ""
    assert converter.to_model_script("", AUTO) == ""
    assert converter.to_model_script("这个", AUTO) == "这个"
    assert built == []


def test_each_configuration_is_built_once_and_kept() -> None:
    converter, built = recording()
    for _ in range(2):
        converter.to_model_script("軟體", TAIWAN)
        converter.to_model_script("軟體", HONG_KONG)
        converter.to_model_script("軟體", TRADITIONAL)
    assert built == ["tw2sp", "hk2s"]


def test_taiwan_and_hong_kong_text_with_the_real_opencc() -> None:
    converter = default_converter()
    assert converter is default_converter()
    text = "軟體和記憶體，計程車、腳踏車、捷運、鳳梨、優格"
    taiwan = "软件和内存，出租车、自行车、地铁、菠萝、酸奶"
    assert converter.to_model_script(text, TAIWAN) == taiwan
    assert converter.to_model_script(text, TRADITIONAL) == taiwan
    assert converter.to_model_script(text, AUTO) == taiwan
    # Hong Kong's configuration keeps its own vocabulary; the regional words still become the mainland ones
    assert converter.to_model_script(text, HONG_KONG) == "软体和记忆体，出租车、自行车、地铁、菠萝、酸奶"


def test_the_regional_words_apply_to_converted_text_only() -> None:
    converter = ScriptConverter()
    simplified = "计程车、脚踏车、捷运、凤梨、优格"
    assert converter.to_model_script(simplified, SIMPLIFIED) == simplified
    assert converter.to_model_script(simplified, TAIWAN) == "出租车、自行车、地铁、菠萝、酸奶"
    assert converter.to_model_script("坐計程車去捷運站", AUTO) == "坐出租车去地铁站"
