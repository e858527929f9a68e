"""The shipped model on Traditional Chinese: converted first, it translates as it does the Simplified text."""

from __future__ import annotations

import pytest

from handler.config import DEFAULT_BUNDLE_DIR, RuntimeConfig
from handler.model.bundle import MANIFEST
from handler.service import TranslateOptions, TranslationService

pytestmark = [
    pytest.mark.shipped_model,
    pytest.mark.skipif(
        not (DEFAULT_BUNDLE_DIR / MANIFEST).exists(), reason="no default bundle in model_artifacts/default"
    ),
]

PAIRS = [
    # (Traditional, Taiwan usage), (Simplified, mainland usage)
    ("請問最近的捷運站在哪裡？", "请问最近的地铁站在哪里？"),
    ("這個電腦的記憶體不夠。", "这个电脑的内存不够。"),
    ("我們明天見。", "我们明天见。"),
]


@pytest.fixture(scope="module")
def service() -> TranslationService:
    from handler.model.loader import load_model

    config = RuntimeConfig(threads=1)
    return TranslationService(load_model(config), config)


@pytest.mark.parametrize(("traditional", "simplified"), PAIRS)
def test_traditional_translates_like_simplified(service: TranslationService, traditional: str, simplified: str) -> None:
    expected = service.translate(simplified, TranslateOptions(beam_size=4))
    assert service.translate(traditional, TranslateOptions(beam_size=4)) == expected  # detected
    assert service.translate(traditional, TranslateOptions(beam_size=4, source="zh-TW")) == expected  # named


def test_issue_example_without_conversion_is_worse(service: TranslationService) -> None:
    converted = service.translate("請問最近的捷運站在哪裡？", TranslateOptions(beam_size=4))
    raw = service.translate("請問最近的捷運站在哪裡？", TranslateOptions(beam_size=4, source="zh-Hans"))
    assert "subway" in converted.lower() and "subway" not in raw.lower()
