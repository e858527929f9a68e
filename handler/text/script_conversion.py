"""Traditional Chinese in, the model's script (Simplified, mainland usage) out: OpenCC's phrase-level converters.

The models are trained on Simplified Chinese. Traditional text (Taiwan, Hong Kong) is converted before it is
translated, with OpenCC's configurations that map characters, variants and regional vocabulary
(``tw2sp``: Taiwan → mainland with phrases, e.g. 軟體 → 软件, 記憶體 → 内存; ``hk2s``: Hong Kong → mainland), plus
a few regional words OpenCC leaves alone (``_REGIONAL_TERMS``: 捷運 → 地铁, 計程車 → 出租车, ...).

A text's variant is one of ``VARIANTS``; ``auto`` detects Traditional text by its characters: the distinct Han
characters that OpenCC's character-level ``t2s`` would change (Traditional-only forms) against those ``s2t`` would
change (Simplified-only forms). More Traditional-only forms than Simplified-only ones means Traditional; text
without either (shared characters only, or no Chinese) is left as it is. The two sets ship in ``HAN_FORMS``
(written from OpenCC by ``python -m build.han_forms``), so detecting needs no OpenCC: its dictionaries (tens of MB of
heap) are loaded only when a text is converted, on first use, and cached.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from handler.errors import InvalidRequestError

AUTO = "auto"
SIMPLIFIED = "zh-Hans"
TRADITIONAL = "zh-Hant"
TAIWAN = "zh-TW"
HONG_KONG = "zh-HK"
VARIANTS = (AUTO, SIMPLIFIED, TRADITIONAL, TAIWAN, HONG_KONG)

# the OpenCC configuration that brings each variant to the model's script (None: already there)
_CONFIG_BY_VARIANT: dict[str, str | None] = {
    SIMPLIFIED: None,
    TRADITIONAL: "tw2sp",  # most Traditional text online is Taiwanese usage; tw2sp also maps its vocabulary
    TAIWAN: "tw2sp",
    HONG_KONG: "hk2s",
}
# Taiwan/Hong Kong words OpenCC's phrase tables leave as they are (after conversion, in Simplified characters):
# the mainland words the models learned. Longest first, applied to converted Traditional text only.
_REGIONAL_TERMS = (
    ("计程车", "出租车"),
    ("脚踏车", "自行车"),
    ("捷运", "地铁"),
    ("凤梨", "菠萝"),
    ("优格", "酸奶"),
)
# other spellings of the variants that clients send (compared case-insensitively)
_ALIASES = {
    "zh": SIMPLIFIED,
    "zh-cn": SIMPLIFIED,
    "zh-sg": SIMPLIFIED,
    "zh-hans": SIMPLIFIED,
    "zh-hans-cn": SIMPLIFIED,
    "zt": TRADITIONAL,
    "zh-hant": TRADITIONAL,
    "zh-tw": TAIWAN,
    "zh-hant-tw": TAIWAN,
    "zh-hk": HONG_KONG,
    "zh-mo": HONG_KONG,
    "zh-hant-hk": HONG_KONG,
    "auto": AUTO,
}
SPELLINGS = tuple(_ALIASES)  # every spelling canonical_variant reads (in any case, white space around)
# CJK Unified Ideographs, Extension A, Compatibility Ideographs, Extensions B-F and the supplement
HAN_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F))
# {"opencc": version, "traditional_only": characters, "simplified_only": characters} (build/han_forms.py)
HAN_FORMS = Path(__file__).resolve().parent / "data" / "han_forms.json"
_SAMPLE_CHARACTERS = 4_000  # detection looks at the first this many characters


def canonical_variant(value: str) -> str:
    """``value`` as one of ``VARIANTS``; ``InvalidRequestError`` listing the accepted spellings otherwise."""
    variant = _ALIASES.get(value.strip().lower()) if isinstance(value, str) else None
    if variant is None:
        raise InvalidRequestError(
            f"source {value!r} is not a Chinese variant this server reads; use one of {', '.join(VARIANTS)} "
            f"(also accepted: zh, zh-CN, zt, zh-MO)"
        )
    return variant


def _is_han(character: str) -> bool:
    code = ord(character)
    return (
        0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2FA1F or 0xF900 <= code <= 0xFAFF
    )


@cache
def _forms() -> tuple[frozenset[str], frozenset[str]]:
    """(Traditional-only, Simplified-only) Han characters, read once from ``HAN_FORMS``."""
    data = json.loads(HAN_FORMS.read_text(encoding="utf-8"))
    return frozenset(data["traditional_only"]), frozenset(data["simplified_only"])


@dataclass(frozen=True)
class Detection:
    """What ``detect`` found: the variant and the character counts it was decided on."""

    variant: str  # SIMPLIFIED, TRADITIONAL, or AUTO when the text gives no sign either way
    han: int  # Han characters in the sample
    traditional_only: int  # of them, in forms only Traditional uses
    simplified_only: int  # of them, in forms only Simplified uses


class ScriptConverter:
    """Converts Chinese text to the model's script; thread-safe, converters built on first use."""

    def __init__(self, factory: Callable[[str], Any] | None = None) -> None:
        self._factory = factory
        self._converters: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _converter(self, config: str) -> Any:
        with self._lock:
            converter = self._converters.get(config)
            if converter is None:
                factory = self._factory
                if factory is None:
                    import opencc  # imported on first use: a request in Simplified never needs it

                    factory = opencc.OpenCC
                converter = factory(config)
                self._converters[config] = converter
            return converter

    def detect(self, text: str) -> Detection:
        """Simplified, Traditional or undecided (AUTO), from the distinct Han characters of the text's start."""
        sample = [ch for ch in text[:_SAMPLE_CHARACTERS] if _is_han(ch)]
        distinct = sorted(set(sample))
        if not distinct:
            return Detection(AUTO, 0, 0, 0)
        traditional_forms, simplified_forms = _forms()
        traditional_only = sum(1 for character in distinct if character in traditional_forms)
        simplified_only = sum(1 for character in distinct if character in simplified_forms)
        if traditional_only > simplified_only:
            variant = TRADITIONAL
        elif simplified_only > traditional_only:
            variant = SIMPLIFIED
        else:
            variant = AUTO
        return Detection(variant, len(sample), traditional_only, simplified_only)

    def resolve(self, text: str, variant: str = AUTO) -> str:
        """The variant ``text`` is in: ``variant`` itself unless it is AUTO, else what ``detect`` decides."""
        variant = canonical_variant(variant)
        if variant != AUTO:
            return variant
        detected = self.detect(text).variant
        return SIMPLIFIED if detected == AUTO else detected

    def to_model_script(self, text: str, variant: str = AUTO) -> str:
        """``text`` in Simplified Chinese (mainland usage); unchanged when it already is."""
        config = _CONFIG_BY_VARIANT[self.resolve(text, variant)]
        if config is None or not text:
            return text
        converted = str(self._converter(config).convert(text))
        for regional, mainland in _REGIONAL_TERMS:
            converted = converted.replace(regional, mainland)
        return converted


_DEFAULT = ScriptConverter()


def default_converter() -> ScriptConverter:
    """The process's converter (its OpenCC dictionaries are loaded once)."""
    return _DEFAULT
