"""The request limits at their exact boundary, on the shipped bundle: the limit itself is allowed, one more is not.

Also the status each typed error is answered with on HTTP (``handler.api.messages.status_for``), the deadline
among them: running out of time means the function cannot answer now (503, retry later), not a bug (500).
"""

from __future__ import annotations

import json

import pytest

from handler.api.router import response_for_error, status_for
from handler.errors import (
    BundleError,
    ConfigurationError,
    DeadlineExceededError,
    InvalidRequestError,
    ModelUnavailableError,
    RequestTooLargeError,
    TranslatorError,
)
from handler.service import TranslationService
from tests.fuzz.shipped import needs_shipped_bundle, shipped_service

MAX_CHARS, MAX_TEXTS = 12, 3


@pytest.fixture(scope="module")
def service() -> TranslationService:
    return shipped_service(max_chars=MAX_CHARS, max_texts=MAX_TEXTS, beam_size=1)


@needs_shipped_bundle
def test_a_text_of_exactly_the_character_limit_is_translated(service: TranslationService) -> None:
    text = "我明天早上八点去机场接你。"[:MAX_CHARS]
    assert len(text) == MAX_CHARS
    assert service.translate(text).strip()
    with pytest.raises(
        RequestTooLargeError,
        match=rf"^text is {MAX_CHARS + 1} characters; the limit is {MAX_CHARS} \(TRANSLATE_MAX_CHARS\)$",
    ):
        service.translate(text + "。")


@needs_shipped_bundle
def test_texts_of_exactly_the_character_limit_in_all_are_translated(service: TranslationService) -> None:
    texts = ["你好。", "谢谢你。", "再见朋友。"]  # 3 + 4 + 5 = 12 characters
    assert sum(map(len, texts)) == MAX_CHARS
    assert all(service.translate_many(texts))
    with pytest.raises(RequestTooLargeError, match=rf"^texts are {MAX_CHARS + 1} characters in all; the limit is"):
        service.translate_many([*texts[:2], texts[2] + "！"])


@needs_shipped_bundle
def test_exactly_the_text_limit_is_translated_and_one_more_is_refused(service: TranslationService) -> None:
    assert len(service.translate_many(["好"] * MAX_TEXTS)) == MAX_TEXTS
    with pytest.raises(
        RequestTooLargeError,
        match=rf"^the request has {MAX_TEXTS + 1} texts; the limit is {MAX_TEXTS} \(TRANSLATE_MAX_TEXTS\)$",
    ):
        service.translate_many(["好"] * (MAX_TEXTS + 1))


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (InvalidRequestError("bad"), 400),
        (RequestTooLargeError("big"), 413),
        (ModelUnavailableError("no model"), 503),
        (BundleError("bad bundle"), 503),
        (DeadlineExceededError("no time left"), 503),
        (ConfigurationError("bad setting"), 500),
        (TranslatorError("other"), 500),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
def test_each_typed_error_has_its_status_and_a_json_answer(error: TranslatorError, status: int) -> None:
    assert status_for(error) == status
    response = response_for_error(error)
    assert response.status == status
    assert json.loads(response.body) == {"error": {"code": error.code, "message": str(error)}}
