"""DeepL's API (v2) on the shipped bundle, called as the router calls it (``DeepLApi.handle``): the routes and
methods, every option and how it maps onto the service's options (``source_lang`` ZH / ZH-HANS / ZH-HANT,
``target_lang``, ``tag_handling``), the billing counter, the keys, and the status of each failure. The service
records the options each request reached it with, so a mapping is checked where it lands."""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlencode

import pytest

from handler.api.compat.deepl import CHARACTER_LIMIT, MAX_BODY_BYTES, DeepLApi
from handler.api.messages import HttpRequest, HttpResponse
from handler.coldstart import Startup
from handler.errors import (
    BundleError,
    ConfigurationError,
    DeadlineExceededError,
    InvalidRequestError,
    ModelUnavailableError,
    RequestTooLargeError,
    StorageError,
    TranslatorError,
)
from handler.service import TranslateOptions
from handler.text.script_conversion import AUTO, SIMPLIFIED, TRADITIONAL
from tests.fuzz.shipped import NEEDS_SHIPPED_BUNDLE, shipped_config
from tests.mutation_kills.recording import FORM, JSON, KEY, RecordingService

pytestmark = NEEDS_SHIPPED_BUNDLE


def api(**overrides: object) -> tuple[DeepLApi, RecordingService]:
    service = RecordingService(**overrides)
    return DeepLApi(Startup(shipped_config(beam_size=1, **overrides), service, None, 0.0)), service


def keyed(*keys: str) -> tuple[DeepLApi, RecordingService]:
    service = RecordingService(api_keys=keys)
    return DeepLApi(Startup(shipped_config(api_keys=keys), service, None, 0.0)), service


def call(
    deepl: DeepLApi, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> HttpResponse:
    request = HttpRequest.create(method, path, headers or {}, body)
    return deepl.handle(path.partition("?")[0], request)


def post_form(deepl: DeepLApi, fields: list[tuple[str, str]], headers: dict[str, str] | None = None) -> HttpResponse:
    return call(deepl, "POST", "/v2/translate", urlencode(fields).encode(), {**FORM, **(headers or {})})


def body(response: HttpResponse) -> Any:
    return json.loads(response.body)


def message(response: HttpResponse, status: int) -> str:
    assert response.status == status, response.body
    assert response.headers["Content-Type"] == "application/json; charset=utf-8"
    payload = body(response)
    assert list(payload) == ["message"]
    return str(payload["message"])


# --- routes -----------------------------------------------------------------------------------------------------


def test_the_routes_it_claims() -> None:
    deepl, _ = api()
    assert deepl.routes == {
        "/v2/translate": ("POST",),
        "/v2/languages": ("GET", "POST"),
        "/v2/usage": ("GET", "POST"),
        "/v2/document": ("POST",),
        "/v2/document/{document_id}": ("POST",),
        "/v2/document/{document_id}/result": ("POST",),
        "/v2/glossaries": ("GET", "POST"),
        "/v2/glossaries/{glossary_id}": ("GET", "DELETE"),
        "/v2/glossaries/{glossary_id}/entries": ("GET",),
        "/v2/glossary-language-pairs": ("GET",),
        "/v3/glossaries": ("GET", "POST"),
        "/v3/glossaries/{glossary_id}": ("GET", "DELETE"),
        "/v3/glossaries/{glossary_id}/entries": ("GET",),
    }
    request = HttpRequest.create("GET", "/v2/x")
    assert deepl.claims("/v2/translate", request) and deepl.claims("/v2/anything", request)
    assert deepl.claims("/v3/glossaries", request) and deepl.claims("/v3/anything", request)
    assert not deepl.claims("/translate", request) and not deepl.claims("/v1/translate", request)
    uid = "def3a26b-3e84-45b3-84ae-0c0aaf3525f7"
    assert deepl.route_of(f"/v2/glossaries/{uid}") == "/v2/glossaries/{glossary_id}"
    assert deepl.route_of(f"/v2/glossaries/{uid}/entries") == "/v2/glossaries/{glossary_id}/entries"
    assert deepl.route_of(f"/v3/glossaries/{uid}") == "/v3/glossaries/{glossary_id}"
    assert deepl.route_of(f"/v3/glossaries/{uid}/entries") == "/v3/glossaries/{glossary_id}/entries"
    assert deepl.route_of(f"/v4/glossaries/{uid}") is None
    assert deepl.route_of(f"/v2/glossaries/{uid}/other") is None and deepl.route_of("/v2/nothing") is None
    assert deepl.route_of("/v2/glossaries/abc") is None and deepl.route_of(f"/v2/glossaries/{uid.upper()}") is None
    assert message(call(deepl, "GET", "/v2/other"), 404) == (
        "/v2/other is not a DeepL route this server answers; it has /v2/translate, /v2/languages, "
        "/v2/usage, /v2/document, /v2/document/{document_id}, /v2/document/{document_id}/result, /v2/glossaries, "
        "/v2/glossaries/{glossary_id}, /v2/glossaries/{glossary_id}/entries, /v2/glossary-language-pairs, "
        "/v3/glossaries, /v3/glossaries/{glossary_id}, /v3/glossaries/{glossary_id}/entries"
    )
    assert message(call(deepl, "GET", "/v2/glossaries/abc/entries"), 404).startswith(
        "Glossary not found: /v2/glossaries/abc/entries names no glossary; a glossary is /v2/glossaries/{glossary_id}"
    )


def test_a_method_a_route_does_not_answer_is_405_with_allow() -> None:
    deepl, _ = api()
    response = call(deepl, "GET", "/v2/translate")
    assert message(response, 405) == "/v2/translate answers POST"
    assert response.headers["Allow"] == "POST"
    response = call(deepl, "DELETE", "/v2/usage")
    assert message(response, 405) == "/v2/usage answers GET and POST"
    assert response.headers["Allow"] == "GET, POST"
    assert call(deepl, "HEAD", "/v2/usage").status == 200
    assert call(deepl, "HEAD", "/v2/translate").status == 405


def test_languages() -> None:
    deepl, _ = api()
    assert body(call(deepl, "GET", "/v2/languages")) == [{"language": "ZH", "name": "Chinese"}]
    assert body(call(deepl, "GET", "/v2/languages?type=source")) == [{"language": "ZH", "name": "Chinese"}]
    targets = body(call(deepl, "GET", "/v2/languages?type=TARGET"))
    assert [language["language"] for language in targets] == ["EN-GB", "EN-US"]
    assert all(language["supports_formality"] is False for language in targets)
    assert body(call(deepl, "POST", "/v2/languages", b"type=target", FORM)) == targets
    assert message(call(deepl, "GET", "/v2/languages?type=both"), 400) == (
        "Value for 'type' not supported: 'both'; use source or target"
    )


def test_usage_counts_the_characters_translated() -> None:
    deepl, _ = api()
    assert body(call(deepl, "GET", "/v2/usage")) == {"character_count": 0, "character_limit": CHARACTER_LIMIT}
    assert CHARACTER_LIMIT == 1_000_000_000_000
    assert post_form(deepl, [("text", "你好"), ("text", "2026年"), ("target_lang", "EN")]).status == 200
    assert body(call(deepl, "GET", "/v2/usage"))["character_count"] == 7
    assert post_form(deepl, [("text", "谢谢"), ("target_lang", "EN")]).status == 200
    assert body(call(deepl, "POST", "/v2/usage"))["character_count"] == 9
    post_form(deepl, [("text", "谢谢"), ("target_lang", "FR")])  # refused: not billed
    assert body(call(deepl, "GET", "/v2/usage"))["character_count"] == 9


# --- translating: the options --------------------------------------------------------------------------------


def test_a_translation_answers_in_deepls_shape() -> None:
    deepl, service = api()
    response = post_form(deepl, [("text", "2026年"), ("text", "你好"), ("target_lang", "EN-US")])
    assert response.status == 200
    translations = body(response)["translations"]
    assert [(t["detected_source_language"], t["billed_characters"]) for t in translations] == [("ZH", 5), ("ZH", 2)]
    assert translations[0]["text"].startswith("2026")
    assert list(translations[0]) == ["detected_source_language", "text", "billed_characters"]
    assert (service.options[0].format, service.options[0].source) == ("text", AUTO)


@pytest.mark.parametrize(
    ("source_lang", "variant"),
    [
        (None, AUTO),
        ("ZH", AUTO),
        ("zh", AUTO),
        ("ZH-HANS", SIMPLIFIED),
        ("zh-hans", SIMPLIFIED),
        ("ZH-HANT", TRADITIONAL),
        (" zh-Hant ", TRADITIONAL),
    ],
)
def test_source_lang_maps_onto_the_chinese_variant(source_lang: str | None, variant: str) -> None:
    deepl, service = api()
    fields = [("text", "這体"), ("target_lang", "EN")] + ([("source_lang", source_lang)] if source_lang else [])
    assert post_form(deepl, fields).status == 200
    assert service.options[-1].source == variant


def test_zh_hant_text_that_detection_cannot_decide_is_converted_as_traditional() -> None:
    # 這 is Traditional-only and 体 Simplified-only: detection is undecided, so only ZH-HANT converts 這
    deepl, service = api()
    assert service.scripts.to_model_script("這体", TRADITIONAL) != "這体"
    assert service.scripts.to_model_script("這体", AUTO) == "這体"
    traditional = body(post_form(deepl, [("text", "這体"), ("target_lang", "EN"), ("source_lang", "ZH-HANT")]))
    assert service.options[-1].source == TRADITIONAL
    assert traditional["translations"][0]["text"] == service.translate_many(["这体"], TranslateOptions())[0]


@pytest.mark.parametrize("target", ["EN", "en", "EN-US", "en-gb", " EN-GB "])
def test_each_english_target(target: str) -> None:
    deepl, _ = api()
    assert post_form(deepl, [("text", "2026年"), ("target_lang", target)]).status == 200


def test_a_missing_or_other_target_is_refused() -> None:
    deepl, service = api()
    assert message(post_form(deepl, [("text", "你好")]), 400) == (
        "Parameter 'target_lang' not specified; this server translates to EN, EN-US or EN-GB"
    )
    assert message(post_form(deepl, [("text", "你好"), ("target_lang", " ")]), 400).startswith(
        "Parameter 'target_lang' not specified"
    )
    assert message(post_form(deepl, [("text", "你好"), ("target_lang", "de")]), 400) == (
        "Value for 'target_lang' not supported: DE; this server translates Chinese to English (target_lang EN, "
        "EN-US or EN-GB)"
    )
    assert message(post_form(deepl, [("text", "你好"), ("target_lang", "EN"), ("source_lang", "ja")]), 400) == (
        "Value for 'source_lang' not supported: JA; this server translates Chinese (source_lang ZH, ZH-HANS or "
        "ZH-HANT) to English"
    )
    assert service.options == []


@pytest.mark.parametrize(
    ("tag_handling", "tagged"),
    [(None, False), ("html", True), ("HTML", True), ("xml", True), ("XML", True)],
)
def test_tag_handling_cuts_the_markup_before_the_service(tag_handling: str | None, tagged: bool) -> None:
    # the markup is cut on the route (handler.text.markup.translate_tagged): the service translates plain text
    deepl, service = api()
    fields = [("text", "<p>你好</p>"), ("target_lang", "EN")]
    if tag_handling is not None:
        fields.append(("tag_handling", tag_handling))
    response = post_form(deepl, fields)
    assert response.status == 200
    assert service.options[-1].format == "text"
    text = body(response)["translations"][0]["text"]
    if tagged:
        assert text.startswith("<p>") and text.endswith("</p>")


def test_unknown_tag_handling_and_bad_glossary_ids_are_refused() -> None:
    deepl, service = api()
    assert message(post_form(deepl, [("text", "你"), ("target_lang", "EN"), ("tag_handling", "JSON")]), 400) == (
        "Value for 'tag_handling' not supported: json; use html or xml"
    )
    bad_outline = [("text", "你"), ("target_lang", "EN"), ("tag_handling", "xml"), ("outline_detection", "2")]
    assert message(post_form(deepl, bad_outline), 400) == "Value for 'outline_detection' not supported: '2'; use 0 or 1"
    assert message(post_form(deepl, [("text", "你"), ("target_lang", "EN"), ("glossary_id", "g-1")]), 400) == (
        "Use of a glossary requires the source_lang parameter to be specified (ZH)"
    )
    with_source = [("text", "你"), ("source_lang", "ZH"), ("target_lang", "EN"), ("glossary_id", "g-1")]
    assert message(post_form(deepl, with_source), 400) == (
        "Value for 'glossary_id' not supported: 'g-1' is not a glossary ID (a UUID such as "
        "def3a26b-3e84-45b3-84ae-0c0aaf3525f7, as POST /v2/glossaries returns)"
    )
    several = [("text", "你"), ("source_lang", "ZH"), ("target_lang", "EN"), ("glossary_ids", "a,b")]
    assert "glossary_ids (v3 multilingual glossaries) is not supported" in message(post_form(deepl, several), 400)
    assert post_form(deepl, [("text", "2026年"), ("target_lang", "EN"), ("glossary_id", "")]).status == 200
    assert len(service.options) == 1 and service.options[0].glossary is None


@pytest.mark.parametrize("name", ["tag_handling", "model_type", "formality", "source_lang"])
def test_an_empty_value_of_an_enumeration_is_refused_as_deepl_refuses_one_it_does_not_hold(name: str) -> None:
    # schemathesis found tag_handling= and model_type= answered 200 though the document's enum holds no empty value
    deepl, service = api()
    refused = message(post_form(deepl, [("text", "你好"), ("target_lang", "EN"), (name, "")]), 400)
    assert refused.startswith(f"Value for '{name}' not supported: ")
    assert service.options == []


def test_the_other_options_are_accepted_and_ignored() -> None:
    deepl, _ = api()
    fields = [("text", "2026年"), ("target_lang", "EN"), ("formality", "prefer_more"), ("split_sentences", "0")]
    assert post_form(deepl, fields).status == 200
    refused = [("text", "2026年"), ("target_lang", "EN-US"), ("formality", "More")]
    assert message(post_form(deepl, refused), 400).startswith("Target language EN-US does not support formality")


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"target_lang": "EN"}, "Parameter 'text' not specified"),
        ({"target_lang": "EN", "text": []}, "Parameter 'text' must be a string or a non-empty list of strings"),
        ({"target_lang": "EN", "text": ["a", 1]}, "Parameter 'text' must be a string or a non-empty list of strings"),
        ({"target_lang": "EN", "text": {"a": 1}}, "Parameter 'text' must be a string or a non-empty list of strings"),
        ({"target_lang": "EN", "text": 5}, "Parameter 'text' must be a string or a non-empty list of strings"),
    ],
)
def test_text_must_be_a_string_or_a_list_of_them(payload: dict[str, Any], problem: str) -> None:
    deepl, _ = api()
    assert message(call(deepl, "POST", "/v2/translate", json.dumps(payload).encode(), JSON), 400) == problem


def test_a_json_body_with_one_text_or_a_list() -> None:
    deepl, _ = api()
    one = call(deepl, "POST", "/v2/translate", json.dumps({"text": "2026年", "target_lang": "EN"}).encode(), JSON)
    assert [t["text"][:4] for t in body(one)["translations"]] == ["2026"]
    many = call(
        deepl, "POST", "/v2/translate", json.dumps({"text": ["2026年", "3月"], "target_lang": "EN"}).encode(), JSON
    )
    assert len(body(many)["translations"]) == 2


# --- keys and failures ----------------------------------------------------------------------------------------


def test_with_keys_a_request_needs_one() -> None:
    deepl, _ = keyed(KEY)
    fields = [("text", "2026年"), ("target_lang", "EN")]
    assert message(post_form(deepl, fields), 403) == (
        "Authorization failure: send 'Authorization: DeepL-Auth-Key KEY' with one of this server's keys "
        "(TRANSLATE_API_KEYS)"
    )
    assert post_form(deepl, fields, {"Authorization": f"DeepL-Auth-Key {KEY}"}).status == 200
    assert post_form(deepl, [*fields, ("auth_key", KEY)]).status == 200
    assert post_form(deepl, [*fields, ("auth_key", KEY[:-1])]).status == 403
    assert call(deepl, "GET", "/v2/usage").status == 403
    assert call(deepl, "GET", "/v2/languages", headers={"X-API-Key": KEY}).status == 200


def test_without_keys_any_key_passes() -> None:
    deepl, _ = api()
    assert (
        post_form(deepl, [("text", "2026年"), ("target_lang", "EN")], {"Authorization": "DeepL-Auth-Key x"}).status
        == 200
    )


@pytest.mark.parametrize(
    ("failure", "status"),
    [
        (InvalidRequestError("bad text"), 400),
        (RequestTooLargeError("too long"), 413),
        (ModelUnavailableError("no model"), 503),
        (DeadlineExceededError("no time"), 503),
        (BundleError("the bundle is broken"), 503),
        (ConfigurationError("TRANSLATE_X is wrong"), 500),
        (StorageError("the store is down"), 500),
        (TranslatorError("anything else"), 500),
    ],
)
def test_each_failure_has_deepls_status(failure: Exception, status: int, caplog: pytest.LogCaptureFixture) -> None:
    deepl, service = api()
    service.failure = failure
    with caplog.at_level(logging.ERROR, logger="handler.api.compat.deepl"):
        response = post_form(deepl, [("text", "你好"), ("target_lang", "EN")])
    assert message(response, status) == str(failure)
    logged = [r.getMessage() for r in caplog.records if r.name == "handler.api.compat.deepl"]
    if status >= 500:
        assert logged == [f"DeepL /v2/translate failed: {type(failure).__name__}: {failure}"]
    else:
        assert logged == []


def test_an_unexpected_error_is_500_without_details(caplog: pytest.LogCaptureFixture) -> None:
    deepl, service = api()
    service.failure = RuntimeError("secret detail")
    with caplog.at_level(logging.ERROR, logger="handler.api.compat.deepl"):
        response = post_form(deepl, [("text", "你好"), ("target_lang", "EN")])
    assert message(response, 500) == "internal error while translating; the function's log has the details"
    assert "secret" not in response.body.decode()
    assert caplog.records[-1].getMessage() == "DeepL /v2/translate failed with an unexpected error"
    assert caplog.records[-1].exc_info is not None


def test_a_model_that_is_not_there_is_503() -> None:
    deepl = DeepLApi(Startup(shipped_config(), None, ModelUnavailableError("the bundle is missing"), 0.0))
    assert message(post_form(deepl, [("text", "你好"), ("target_lang", "EN")]), 503) == "the bundle is missing"
    assert call(deepl, "GET", "/v2/languages").status == 200


def test_a_body_over_the_limit_is_413() -> None:
    deepl, _ = api()
    assert MAX_BODY_BYTES == 10 * 1024 * 1024
    response = call(deepl, "POST", "/v2/translate", b"text=" + b"a" * MAX_BODY_BYTES, FORM)
    assert message(response, 413).startswith("the request body is 10,485,765 bytes; the limit is 10,485,760")
    assert call(deepl, "POST", "/v2/usage", b"a" * (MAX_BODY_BYTES - 1), FORM).status == 200
