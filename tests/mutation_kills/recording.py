"""What the drop-in API tests share: a service on the shipped bundle that records the options each call gets (so
an API's option mapping can be read back) and can be made to fail, and the request headers they send."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from handler.service import TranslateOptions, TranslationService
from tests.fuzz.shipped import shipped_config, shipped_model

KEY = "k-0123456789abcdef"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
JSON = {"Content-Type": "application/json"}


class RecordingService(TranslationService):
    def __init__(self, **overrides: object) -> None:
        super().__init__(shipped_model(), shipped_config(beam_size=1, **overrides))
        self.options: list[TranslateOptions] = []
        self.failure: Exception | None = None

    def translate_many(self, texts: Sequence[str], options: TranslateOptions | None = None, **kwargs: Any) -> list[str]:
        assert options is not None
        self.options.append(options)
        if self.failure is not None:
            raise self.failure
        return super().translate_many(texts, options, **kwargs)
