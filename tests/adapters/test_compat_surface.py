"""The drop-in APIs' edges, in-process through ``HttpApi``: routes, methods, form fields, formats and the errors
of each API's own shape (``{"error": ...}`` for LibreTranslate, ``{"message": ...}`` for DeepL)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest

from handler.api.router import HttpApi, HttpRequest, HttpResponse
from handler.coldstart import Startup

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture(scope="module")
def api(startup: Startup) -> HttpApi:
    return HttpApi(startup)


def call(
    api: HttpApi, method: str, path: str, fields: Any = None, headers: dict[str, str] | None = None
) -> HttpResponse:
    body = urlencode(fields, doseq=True).encode() if fields is not None else b""
    return api.handle(HttpRequest.create(method, path, headers if headers is not None else FORM, body))


def body(response: HttpResponse) -> Any:
    return json.loads(response.body)


def test_deepl_form_with_repeated_text_fields(api: HttpApi) -> None:
    reply = call(api, "POST", "/v2/translate", [("text", "你好。"), ("text", "谢谢。"), ("target_lang", "EN-US")])
    assert reply.status == 200
    assert [t["billed_characters"] for t in body(reply)["translations"]] == [3, 3]


def test_deepl_unknown_route_method_and_tag_handling(api: HttpApi) -> None:
    unknown = call(api, "POST", "/v2/no-such-route")
    assert unknown.status == 404 and "/v2/translate" in body(unknown)["message"]
    no_file = call(api, "POST", "/v2/document", {"target_lang": "EN-US"})  # the document API: a multipart file
    assert no_file.status == 400 and "'file'" in body(no_file)["message"]
    wrong_method = call(api, "GET", "/v2/translate")
    assert wrong_method.status == 405 and wrong_method.headers["Allow"] == "POST"
    assert call(api, "OPTIONS", "/v2/translate").status == 204
    unknown_tags = call(api, "POST", "/v2/translate", {"text": "你好", "target_lang": "EN-US", "tag_handling": "json"})
    assert unknown_tags.status == 400 and "tag_handling" in body(unknown_tags)["message"]
    glossary = call(api, "POST", "/v2/translate", {"text": "你好", "target_lang": "EN-US", "glossary_id": "g1"})
    assert glossary.status == 400 and "requires the source_lang" in body(glossary)["message"]


def test_libretranslate_html_keeps_the_markup(api: HttpApi) -> None:
    reply = call(
        api, "POST", "/translate", {"q": "<p>今天天气很好。</p>", "source": "zh", "target": "en", "format": "html"}
    )
    assert reply.status == 200, reply.body
    translated = body(reply)["translatedText"]
    assert translated.startswith("<p>") and translated.endswith("</p>")


def test_libretranslate_wrong_method_and_missing_q(api: HttpApi) -> None:
    wrong = call(api, "GET", "/detect")
    assert wrong.status == 405 and "error" in body(wrong)
    missing = api.handle(HttpRequest.create("POST", "/detect", FORM, b"source=zh"))
    assert missing.status == 400 and body(missing) == {"error": "Invalid request: missing q parameter"}


def test_own_api_form_body_without_q_is_still_refused_as_ours(api: HttpApi) -> None:
    reply = call(api, "POST", "/translate", {"text": "你好"})
    assert reply.status == 415 and body(reply)["error"]["code"] == "unsupported_media_type"


def test_unavailable_model_in_each_apis_shape(broken_startup: Startup) -> None:
    broken = HttpApi(broken_startup)
    libre = call(broken, "POST", "/translate", {"q": "你好", "source": "zh", "target": "en"})
    assert libre.status == 500 and "encoder.onnx" in body(libre)["error"]
    deepl = call(broken, "POST", "/v2/translate", {"text": "你好", "target_lang": "EN-US"})
    assert deepl.status == 503 and "encoder.onnx" in body(deepl)["message"]
    assert call(broken, "GET", "/languages").status == 200  # what needs no model still answers
