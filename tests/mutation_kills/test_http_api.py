"""``HttpApi``, the framework-free HTTP surface every adapter calls, on the shipped bundle without torch.

Requests go through ``HttpApi.handle`` as an adapter sends them (``HttpRequest.create``), and the tests read
what a client and an operator see: status, headers, JSON body, the page and its configuration, the access line
(logger ``handler.access``) and the failure lines (logger ``handler.api.router``). The adapter tests
(``tests/adapters/``) check the same surface through real servers, on the torch-built tiny bundle.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import time
from collections.abc import Sequence
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest

from handler.api import page
from handler.api.router import (
    INTERNAL_ERROR_MESSAGE,
    PAGE_SECURITY_HEADERS,
    SECURITY_HEADERS,
    HttpApi,
    HttpRequest,
    HttpResponse,
    RequestRefusedError,
    media_type_of,
)
from handler.coldstart import Startup
from handler.config import RuntimeConfig
from handler.errors import ConfigurationError, InvalidRequestError, ModelUnavailableError
from handler.model import licence
from handler.service import TextTranslation, TranslateOptions, TranslationService
from tests.fuzz.shipped import NEEDS_SHIPPED_BUNDLE, shipped_config, shipped_model

pytestmark = NEEDS_SHIPPED_BUNDLE

MAX_CHARS, MAX_TEXTS = 200, 4
ORIGIN = "https://allowed.example"
JSON_HEADERS = {"Content-Type": "application/json"}
LIMITS = {"max_chars": MAX_CHARS, "max_texts": MAX_TEXTS, "beam_size": 1}
KEY = "k-0123456789abcdef"
KEYS_HINT = (
    ": send it as 'X-API-Key: KEY' or 'Authorization: Bearer KEY' (the keys are TRANSLATE_API_KEYS / "
    "TRANSLATE_API_KEYS_FILE; ask the operator for one)"
)


def config(**overrides: object) -> RuntimeConfig:
    return shipped_config(**{**LIMITS, "cors_origins": (ORIGIN,), **overrides})


def make_api(service: TranslationService | None = None, **overrides: object) -> HttpApi:
    settings = config(**overrides)
    return HttpApi(Startup(settings, service or TranslationService(shipped_model(), settings), None, 0.0))


def unavailable_api(message: str = "the model is not there") -> HttpApi:
    return HttpApi(Startup(config(), None, ModelUnavailableError(message), 0.0))


@pytest.fixture
def api() -> (
    HttpApi
):  # one per test: building it (the page, the OpenAPI document, the limits) is part of what is tested
    return make_api()


def call(
    api: HttpApi, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> HttpResponse:
    return api.handle(HttpRequest.create(method, path, headers or {}, body))


def post(api: HttpApi, payload: object, path: str = "/translate", **headers: str) -> HttpResponse:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    return call(api, "POST", path, {**JSON_HEADERS, **headers}, body)


def error_of(response: HttpResponse, status: int, code: str) -> str:
    assert response.status == status, response.body_text()
    body = json.loads(response.body)
    assert list(body) == ["error"] and list(body["error"]) == ["code", "message"] and body["error"]["code"] == code
    return str(body["error"]["message"])


def access_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == "handler.access"]


# --- requests as adapters build them --------------------------------------------------------------------------


def test_a_request_is_normalised_method_headers_path_and_body() -> None:
    request = HttpRequest.create("post", "", [("X-Thing", "1"), ("x-thing", "2"), ("Accept", "a")], None, "p-1")
    assert request == HttpRequest("POST", "/", {"x-thing": "1, 2", "accept": "a"}, b"", "p-1")
    mapping = HttpRequest.create("GET", "/x", {"Content-Type": "text/plain"}, b"b")
    assert (mapping.headers, mapping.body) == ({"content-type": "text/plain"}, b"b")


def test_media_type_of_a_content_type_header() -> None:
    assert media_type_of("") == ("", None)
    assert media_type_of("Application/JSON; Charset=UTF-8") == ("application/json", "UTF-8")
    assert media_type_of("application/json") == ("application/json", None)


def test_an_rfc_2231_charset_parameter_is_no_charset_and_no_500(api: HttpApi) -> None:
    content_type = "application/json; charset*=utf-8''utf-8"  # the email parser reads it as a tuple
    assert media_type_of(content_type) == ("application/json", None)
    assert call(api, "POST", "/translate", {"Content-Type": content_type}, b'{"text": "a"}').status == 200


# --- POST /translate ------------------------------------------------------------------------------------------


def test_one_text_is_translated_with_the_model_and_timing(api: HttpApi) -> None:
    response = post(api, {"text": "今天天气很好。"})
    assert response.status == 200, response.body_text()
    assert response.headers["Content-Type"] == "application/json; charset=utf-8"
    assert response.headers["Cache-Control"] == "no-store"
    body = json.loads(response.body)
    info = api.startup.service.info()  # type: ignore[union-attr]
    assert set(body) == {"translation", "model", "bundle_hash", "elapsed_ms"}
    assert body["translation"] == api.startup.service.translate("今天天气很好。")  # type: ignore[union-attr]
    assert (body["model"], body["bundle_hash"]) == (info["model"], info["bundle_hash"])
    assert isinstance(body["elapsed_ms"], float) and body["elapsed_ms"] >= 0
    assert body["elapsed_ms"] == round(body["elapsed_ms"], 1)


def test_texts_are_translated_in_order_and_an_empty_text_is_empty(api: HttpApi) -> None:
    texts = ["你好。", "谢谢你。", "Plain."]
    body = json.loads(post(api, {"texts": texts}).body)
    assert body["translations"] == api.startup.service.translate_many(texts)  # type: ignore[union-attr]
    assert "spans" not in body and body["model"]
    assert json.loads(post(api, {"text": ""}).body)["translation"] == ""
    assert json.loads(post(api, {"texts": []}).body)["translations"] == []


def test_spans_true_lists_each_translations_protected_spans(api: HttpApi) -> None:
    text = "请访问 https://example.com/a 获取信息。"
    one = json.loads(post(api, {"text": text, "spans": True}).body)
    assert one["spans"] == [{"kind": "url", "source": "https://example.com/a", "target": "https://example.com/a"}]
    many = json.loads(post(api, {"texts": [text, "你好。"], "spans": True}).body)
    assert many["spans"] == [one["spans"], []]
    assert "spans" not in json.loads(post(api, {"text": text, "spans": False}).body)
    message = error_of(post(api, {"text": text, "spans": "yes"}), 400, "invalid_request")
    assert message == '"spans" must be true or false; got a JSON string'


def test_options_reach_the_service(api: HttpApi) -> None:
    glossary = json.loads(post(api, {"text": "这个模型很好。", "glossary": {"模型": "Frobnicator"}}).body)
    assert "Frobnicator" in glossary["translation"]
    html = json.loads(post(api, {"text": "<p>你好。</p>", "format": "html"}).body)
    assert html["translation"].startswith("<p>") and html["translation"].endswith("</p>")
    message = error_of(post(api, {"text": "你好", "colour": "blue"}), 400, "invalid_request")
    assert message.startswith("unknown option colour; allowed options: beam_size, ")
    # every name the request takes beside its text, the flags that are not options included
    assert message.endswith(", scores, spans, stream"), message


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (["你好"], 'the body must be a JSON object such as {"text": "你好"}; got a JSON array'),
        (None, 'the body must be a JSON object such as {"text": "你好"}; got a JSON null'),
        (True, 'the body must be a JSON object such as {"text": "你好"}; got a JSON boolean'),
        (1.5, 'the body must be a JSON object such as {"text": "你好"}; got a JSON number'),
        ("你好", 'the body must be a JSON object such as {"text": "你好"}; got a JSON string'),
        ({}, 'give exactly one of "text" (a string) or "texts" (a list of strings); found neither'),
        (
            {"text": "a", "texts": ["b"]},
            'give exactly one of "text" (a string) or "texts" (a list of strings); found both',
        ),
        ({"text": 5}, '"text" must be a string; got a JSON number'),
        ({"text": {"a": 1}}, '"text" must be a string; got a JSON object'),
        ({"texts": "你好"}, '"texts" must be a list of strings; got a JSON string'),
        ({"texts": ["你好", None]}, '"texts"[1] must be a string; got a JSON null'),
        ({"texts": ["你好", False]}, '"texts"[1] must be a string; got a JSON boolean'),
        ({"texts": ["你好", 3]}, '"texts"[1] must be a string; got a JSON number'),
    ],
)
def test_a_wrong_shape_is_400_saying_what_was_found(api: HttpApi, payload: object, message: str) -> None:
    assert error_of(post(api, payload), 400, "invalid_request") == message


def test_a_lone_surrogate_is_400_naming_where(api: HttpApi) -> None:
    text = call(api, "POST", "/translate", JSON_HEADERS, b'{"text": "ab\\ud800c"}')
    assert error_of(text, 400, "invalid_request") == (
        '"text" holds an unpaired UTF-16 surrogate at character 2; send valid Unicode text'
    )
    texts = call(api, "POST", "/translate", JSON_HEADERS, b'{"texts": ["ok", "\\udfff"]}')
    assert error_of(texts, 400, "invalid_request") == (
        '"texts"[1] holds an unpaired UTF-16 surrogate at character 0; send valid Unicode text'
    )


def test_a_body_that_is_not_json_or_not_utf8_is_400(api: HttpApi) -> None:
    message = error_of(call(api, "POST", "/translate", JSON_HEADERS, b'{"text": "x'), 400, "invalid_request")
    assert message.startswith("the body is not valid JSON: Unterminated string")
    message = error_of(call(api, "POST", "/translate", JSON_HEADERS, b'{"text": "\xff"}'), 400, "invalid_request")
    assert message.startswith("the body is not UTF-8 encoded JSON: 'utf-8' codec can't decode byte 0xff")


@pytest.mark.parametrize(
    ("content_type", "found"),
    [(None, "no Content-Type"), ("text/plain", "Content-Type 'text/plain'"), ("json", "Content-Type 'json'")],
)
def test_a_body_that_is_not_declared_json_is_415(api: HttpApi, content_type: str | None, found: str) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = call(api, "POST", "/translate", headers, b'{"text": "a"}')
    assert error_of(response, 415, "unsupported_media_type") == (
        f"POST /translate takes a JSON body with Content-Type: application/json; got {found}. "
        'Example: {"text": "你好，世界"}'
    )
    assert "你好，世界".encode() in response.body  # the JSON carries the characters, not escapes
    assert "你好，世界" in response.body_text()


@pytest.mark.parametrize("content_type", ["application/json; charset=UTF-8", "application/json;charset=utf8",
                                          "application/problem+json", "APPLICATION/JSON"])  # fmt: skip
def test_json_media_types_in_utf8_are_accepted(api: HttpApi, content_type: str) -> None:
    assert call(api, "POST", "/translate", {"Content-Type": content_type}, b'{"text": "a"}').status == 200


def test_a_charset_other_than_utf8_is_415(api: HttpApi) -> None:
    response = call(api, "POST", "/translate", {"Content-Type": "application/json; charset=gbk"}, b'{"text": "a"}')
    assert error_of(response, 415, "unsupported_media_type") == "JSON must be UTF-8; got charset=gbk"


def test_the_body_limit_follows_the_character_limit_and_is_exact(api: HttpApi) -> None:
    limit = 12 * MAX_CHARS + 64 * MAX_TEXTS + 65_536
    start = b'{"text": "\xe4\xbd\xa0\xe5\xa5\xbd"}'
    at_limit = start + b" " * (limit - len(start))
    assert call(api, "POST", "/translate", JSON_HEADERS, at_limit).status == 200
    message = error_of(call(api, "POST", "/translate", JSON_HEADERS, at_limit + b" "), 413, "request_too_large")
    assert message == (
        f"the request body is {limit + 1:,} bytes; the limit is {limit:,} bytes, which follows from the character "
        f"limit of {MAX_CHARS} (TRANSLATE_MAX_CHARS)"
    )


def test_too_many_characters_is_413_from_the_service(api: HttpApi) -> None:
    message = error_of(post(api, {"text": "好" * (MAX_CHARS + 1)}), 413, "request_too_large")
    assert message == f"text is {MAX_CHARS + 1} characters; the limit is {MAX_CHARS} (TRANSLATE_MAX_CHARS)"


# --- routes ---------------------------------------------------------------------------------------------------


def test_paths_are_normalised_before_routing(api: HttpApi) -> None:
    for path in ("/translate/", "/translate?x=1", "/translate/?x=1"):
        assert post(api, {"text": "a"}, path=path).status == 200, path
    assert call(api, "GET", "/healthz/").status == 200
    assert call(api, "GET", "/healthz?a=1?b=2").status == 200  # the path ends at the first "?"
    assert call(api, "GET", "/healthzX").status == 404  # a path is matched whole
    assert call(api, "GET", "//").headers["Content-Type"].startswith("text/html")
    assert call(api, "GET", "/?a=b").headers["Content-Type"].startswith("text/html")


def test_an_unknown_path_is_404_listing_the_routes(api: HttpApi) -> None:
    message = error_of(call(api, "GET", "/nope/?q=1"), 404, "not_found")
    assert message == "no route for /nope; the routes are /, /healthz, /openapi.json, /translate"


def test_a_wrong_method_is_405_with_allow(api: HttpApi) -> None:
    response = call(api, "GET", "/translate")
    assert error_of(response, 405, "method_not_allowed") == "/translate answers POST and OPTIONS, not GET"
    assert response.headers["Allow"] == "POST, OPTIONS"
    response = post(api, {"text": "a"}, path="/healthz")
    assert error_of(response, 405, "method_not_allowed") == "/healthz answers GET and HEAD, not POST"
    assert response.headers["Allow"] == "GET, HEAD"


def test_options_is_204_with_allow_and_no_body(api: HttpApi) -> None:
    response = call(api, "OPTIONS", "/translate")
    assert (response.status, response.headers["Allow"], response.body) == (204, "POST, OPTIONS", b"")


def test_the_drop_in_apis_are_routed_before_ours(api: HttpApi, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="handler.access"):
        response = call(api, "GET", "/languages")
    assert response.status == 200 and isinstance(json.loads(response.body), list)
    assert access_lines(caplog)[-1].route == "/languages"  # type: ignore[attr-defined]


def test_the_openapi_document_is_served(api: HttpApi) -> None:
    response = call(api, "GET", "/openapi.json")
    assert response.status == 200
    assert response.headers["Content-Type"] == "application/json; charset=utf-8"
    assert response.headers["Cache-Control"] == "no-cache"
    document = json.loads(response.body)
    assert document["openapi"].startswith("3.1") and "/translate" in document["paths"]
    request = document["components"]["schemas"]["TranslateRequest"]["properties"]  # the deployment's limits
    assert request["text"]["maxLength"] == MAX_CHARS and request["texts"]["maxItems"] == MAX_TEXTS


def test_head_answers_like_get_without_a_body(api: HttpApi) -> None:
    get, head = call(api, "GET", "/healthz"), call(api, "HEAD", "/healthz")
    assert (head.status, head.body) == (200, b"") and get.body
    assert head.headers["Content-Type"] == get.headers["Content-Type"] == "application/json; charset=utf-8"


# --- health and the page --------------------------------------------------------------------------------------


def test_healthz_reports_the_start_and_whether_a_key_is_required(api: HttpApi) -> None:
    response = call(api, "GET", "/healthz")
    health = json.loads(response.body)
    assert response.status == 200 and response.headers["Cache-Control"] == "no-store"
    assert health == {**json.loads(json.dumps(api.startup.health())), "api_key_required": False}
    assert health["status"] == "ok" and health["limits"]["max_chars"] == MAX_CHARS
    keyed = json.loads(call(make_api(api_keys=(KEY,)), "GET", "/healthz").body)
    assert keyed["api_key_required"] is True
    down = call(unavailable_api(), "GET", "/healthz")
    assert down.status == 503
    report = json.loads(down.body)
    assert report["status"] == "unavailable" and report["api_key_required"] is False
    assert report["error"] == {"code": "model_unavailable", "message": "the model is not there"}


def test_healthz_and_the_page_say_the_shipped_bundle_is_a_non_commercial_demo() -> None:
    # GIVEN the shipped default bundle (CC BY-NC-SA 4.0, says its model card), loaded or not
    for api in (make_api(), unavailable_api()):
        # THEN /healthz names its licence and the page's header carries the one-line demo notice
        reported = json.loads(call(api, "GET", "/healthz").body)["licence"]
        assert reported["name"] == "CC BY-NC-SA 4.0" and reported["commercial_use"] is False
        assert reported["notice"].startswith("Non-commercial demo model (CC BY-NC-SA 4.0): not for commercial use;")
        assert "`make model MODEL=Helsinki-NLP/opus-mt-zh-en`" in reported["notice"]
        assert page_config(call(api, "GET", "/"))["licenceNotice"] == reported["notice"]


@pytest.mark.parametrize(
    ("stated", "expected"),
    [
        ("Apache-2.0", {"name": "Apache-2.0", "commercial_use": True, "notice": None}),
        ("", {"name": None, "commercial_use": None, "notice": None}),  # and no model card: unknown
        ("cc-by-nc-4.0", {"name": "cc-by-nc-4.0", "commercial_use": False}),
    ],
)
def test_healthz_names_any_bundles_licence_and_only_a_non_commercial_one_gets_the_notice(
    tmp_path: Path, stated: str, expected: dict[str, object]
) -> None:
    # GIVEN a bundle folder whose manifest states ``stated`` (the function could not load it: only the manifest)
    manifest = json.loads((shipped_config().bundle_dir / "manifest.json").read_text(encoding="utf-8"))
    (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "licence": stated}), encoding="utf-8")
    startup = Startup(config(bundle_dir=tmp_path), None, ModelUnavailableError("not loaded"), 0.0)
    # THEN /healthz reports that licence, and the page shows a notice only for a non-commercial one
    reported = json.loads(call(HttpApi(startup), "GET", "/healthz").body)["licence"]
    assert {key: reported[key] for key in expected} == expected
    notice = page_config(call(HttpApi(startup), "GET", "/"))["licenceNotice"]
    assert notice == reported["notice"] and (notice is not None) == (reported["commercial_use"] is False)


def page_config(response: HttpResponse) -> dict[str, Any]:
    found = re.search(r'<script id="page-config" type="application/json">(.*?)</script>', response.body_text(), re.S)
    assert found, response.body_text()[:500]
    return json.loads(found[1])  # type: ignore[no-any-return]


def test_the_page_carries_the_limits_and_its_own_headers(api: HttpApi) -> None:
    response = call(api, "GET", "/")
    assert response.status == 200 and response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert page_config(response) == {
        "maxChars": MAX_CHARS,
        "maxTexts": MAX_TEXTS,
        "defaultBeamSize": 1,
        "maxBeamSize": 8,
        "maxCharsVariable": "TRANSLATE_MAX_CHARS",
        "available": True,
        "keyRequired": False,
        "error": None,
        "licenceNotice": licence.read(shipped_config().bundle_dir).notice,
    }
    for name, value in PAGE_SECURITY_HEADERS.items():
        assert response.headers[name] == value
    assert response.headers["X-Frame-Options"] == "DENY"
    # the browser runs exactly the page's inline scripts: each one's hash is in the policy
    scripts = re.findall(rb"<script>(.*?)</script>", response.body, re.S)
    assert scripts
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s).digest()).decode()}'" for s in scripts)
    assert response.headers["Content-Security-Policy"] == (
        f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; connect-src 'self'; "
        "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def test_the_page_of_an_unavailable_function_says_why_and_cannot_be_broken_out_of() -> None:
    response = call(unavailable_api("no bundle in </script><b>x</b>"), "GET", "/")
    assert page_config(response)["available"] is False
    assert page_config(response)["error"] == "no bundle in </script><b>x</b>"
    raw = re.search(r'<script id="page-config" type="application/json">(.*?)</script>', response.body_text(), re.S)
    assert raw and "<" not in raw[1] and ">" not in raw[1]  # nothing in it can close or open an element
    assert page_config(call(make_api(api_keys=(KEY,)), "GET", "/"))["keyRequired"] is True


def test_the_policy_lists_every_inline_script_of_the_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    template = tmp_path / "index.html"
    scripts = (b"let a = 1;", b"let b = 2;")
    template.write_bytes(
        b'<script id="page-config" type="application/json">__TRANSLATOR_PAGE_CONFIG__</script>'
        + b"".join(b"<script>" + script + b"</script>" for script in scripts)
    )
    monkeypatch.setattr(page, "WEB_PAGE", template)
    policy = call(make_api(), "GET", "/").headers["Content-Security-Policy"]
    hashes = [f"'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'" for script in scripts]
    assert f"script-src {hashes[0]} {hashes[1]}; " in policy


def test_a_page_template_without_its_placeholder_stops_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template = tmp_path / "index.html"
    template.write_text("<html>no placeholder</html>", encoding="utf-8")
    monkeypatch.setattr(page, "WEB_PAGE", template)
    with pytest.raises(ConfigurationError) as caught:
        unavailable_api()
    assert str(caught.value) == f"{template} lacks the __TRANSLATOR_PAGE_CONFIG__ placeholder"


# --- API keys -------------------------------------------------------------------------------------------------


def test_translate_needs_a_valid_key_and_everything_else_stays_open() -> None:
    keyed = make_api(api_keys=(KEY,))
    missing = post(keyed, {"text": "你好"})
    assert error_of(missing, 401, "unauthorized") == "an API key is required" + KEYS_HINT
    assert missing.headers["WWW-Authenticate"] == (
        'Bearer realm="zh-en-translate", ApiKey realm="zh-en-translate", header="X-API-Key"'
    )
    wrong = post(keyed, {"text": "你好"}, **{"X-API-Key": "nope"})
    assert error_of(wrong, 401, "unauthorized") == "the API key is not valid" + KEYS_HINT
    assert post(keyed, {"text": "你好"}, **{"X-API-Key": KEY}).status == 200
    assert post(keyed, {"text": "你好"}, Authorization=f"Bearer {KEY}").status == 200
    open_routes = (("GET", "/"), ("GET", "/healthz"), ("GET", "/openapi.json"), ("OPTIONS", "/translate"))
    assert [call(keyed, method, path).status for method, path in open_routes] == [200, 200, 200, 204]


# --- headers every answer carries -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [("POST", "/translate", b'{"text": "a"}'), ("POST", "/translate", b"{"), ("GET", "/healthz", b""),
     ("GET", "/nope", b""), ("GET", "/translate", b"")],
)  # fmt: skip
def test_every_answer_has_the_security_headers_and_a_request_id(
    api: HttpApi, method: str, path: str, body: bytes
) -> None:
    response = call(api, method, path, JSON_HEADERS, body)
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value, name
    assert re.fullmatch(r"[0-9a-f]{32}", response.headers["X-Request-Id"])
    assert "Strict-Transport-Security" not in response.headers
    assert call(api, method, path, {**JSON_HEADERS, "X-Request-Id": "mine-1"}, body).headers["X-Request-Id"] == "mine-1"


def test_the_page_keeps_its_own_policy_over_the_default(api: HttpApi) -> None:
    policy = call(api, "GET", "/").headers["Content-Security-Policy"]
    assert "script-src 'sha256-" in policy and policy != SECURITY_HEADERS["Content-Security-Policy"]


@pytest.mark.parametrize(("proto", "hsts"), [("https", True), ("HTTPS, http", True), (" https ,x", True),
                                             ("http", False), ("http, https", False)])  # fmt: skip
def test_hsts_only_when_the_request_arrived_over_https(api: HttpApi, proto: str, hsts: bool) -> None:
    headers = call(api, "GET", "/healthz", {"X-Forwarded-Proto": proto}).headers
    assert headers.get("Strict-Transport-Security") == ("max-age=31536000" if hsts else None)


# --- CORS -----------------------------------------------------------------------------------------------------


def test_cors_allows_the_configured_origin(api: HttpApi) -> None:
    for origin in (ORIGIN, ORIGIN + "/"):
        headers = post(api, {"text": "a"}, Origin=origin).headers
        assert headers["Access-Control-Allow-Origin"] == ORIGIN
        assert headers["Vary"] == "Origin"
        assert headers["Access-Control-Expose-Headers"] == "X-Request-Id"
        assert "Access-Control-Allow-Methods" not in headers
    error = call(api, "POST", "/translate", {**JSON_HEADERS, "Origin": ORIGIN}, b"{")
    assert error.status == 400 and error.headers["Access-Control-Allow-Origin"] == ORIGIN


def test_cors_preflight_lists_methods_headers_and_max_age(api: HttpApi) -> None:
    response = call(api, "OPTIONS", "/translate", {"Origin": ORIGIN, "Access-Control-Request-Method": "POST"})
    assert response.status == 204
    assert response.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert response.headers["Access-Control-Allow-Methods"] == "GET, POST, DELETE, OPTIONS"
    assert response.headers["Access-Control-Allow-Headers"] == "Content-Type, Authorization, X-API-Key, X-Request-Id"
    assert response.headers["Access-Control-Max-Age"] == "600"
    assert "Access-Control-Expose-Headers" not in response.headers


CORS_NAMES = ("Access-Control-Allow-Origin", "Vary", "Access-Control-Expose-Headers", "Access-Control-Allow-Methods")


def test_no_cors_headers_for_other_origins_without_an_origin_or_without_configured_origins(api: HttpApi) -> None:
    closed = make_api(cors_origins=())
    for response in (
        post(api, {"text": "a"}, Origin="https://evil.example"),
        post(api, {"text": "a"}),
        post(closed, {"text": "a"}, Origin=ORIGIN),
        call(api, "OPTIONS", "/translate", {"Origin": "https://evil.example"}),
    ):
        assert not set(CORS_NAMES) & set(response.headers), response.headers


def test_an_origin_is_matched_whole(api: HttpApi) -> None:
    for origin in (ORIGIN + "X", ORIGIN + ".evil.example", "https://allowed"):
        assert "Access-Control-Allow-Origin" not in post(api, {"text": "a"}, Origin=origin).headers, origin


def test_cors_star_allows_every_origin_without_vary() -> None:
    star = make_api(cors_origins=("*",))
    headers = post(star, {"text": "a"}, Origin="http://localhost:3000").headers
    assert headers["Access-Control-Allow-Origin"] == "*" and "Vary" not in headers
    assert headers["Access-Control-Expose-Headers"] == "X-Request-Id"
    assert "Access-Control-Allow-Origin" not in post(star, {"text": "a"}).headers


# --- errors and logs ------------------------------------------------------------------------------------------


class BrokenService(TranslationService):
    """A service whose translation fails with an error that is not ours."""

    def translate_detailed(
        self, texts: Sequence[str], options: TranslateOptions | None = None, *, deadline: float | None = None
    ) -> list[TextTranslation]:
        raise RuntimeError(f"boom in {Path(__file__).name}")


def test_an_unexpected_error_is_500_without_internals_and_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = config()
    broken = make_api(BrokenService(shipped_model(), settings))
    with caplog.at_level(logging.INFO, logger="handler"):
        response = post(broken, {"text": "你好"}, path="/translate/?secret=1", **{"X-Request-Id": "r-500"})
    assert error_of(response, 500, "internal_error") == INTERNAL_ERROR_MESSAGE
    for leak in ("Traceback", "boom", "RuntimeError", ".py"):
        assert leak not in response.body_text()
    [failure] = [record for record in caplog.records if record.name == "handler.api.router"]
    assert failure.levelno == logging.ERROR
    assert failure.getMessage() == "POST /translate failed with an unexpected error"
    assert failure.exc_info and "boom" in str(failure.exc_info[1])
    [access] = access_lines(caplog)
    assert access.levelno == logging.ERROR and access.error_code == "internal_error"  # type: ignore[attr-defined]
    assert access.request_id == "r-500" and access.status == 500  # type: ignore[attr-defined]


def test_an_unavailable_model_is_503_and_logged_as_an_error(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="handler"):
        response = post(unavailable_api(), {"text": "你好"}, path="/translate?x")
    assert error_of(response, 503, "model_unavailable") == "the model is not there"
    [failure] = [record for record in caplog.records if record.name == "handler.api.router"]
    assert failure.levelno == logging.ERROR
    assert failure.getMessage() == "POST /translate failed: ModelUnavailableError: the model is not there"


def test_a_configuration_error_is_500_and_logged_as_an_error(caplog: pytest.LogCaptureFixture) -> None:
    error = ConfigurationError("TRANSLATE_BEAM_SIZE=0 is not allowed: an integer from 1 to 8")
    misconfigured = HttpApi(Startup(config(), None, error, 0.0))
    with caplog.at_level(logging.INFO, logger="handler"):
        response = post(misconfigured, {"text": "你好"})
    assert error_of(response, 500, "configuration_error") == str(error)
    [failure] = [record for record in caplog.records if record.name == "handler.api.router"]
    assert failure.levelno == logging.ERROR
    assert failure.getMessage() == f"POST /translate failed: ConfigurationError: {error}"


class SlowService(TranslationService):
    """The shipped service, taking at least ``SLOW_S`` for each translation."""

    def translate_detailed(
        self, texts: Sequence[str], options: TranslateOptions | None = None, *, deadline: float | None = None
    ) -> list[TextTranslation]:
        time.sleep(SLOW_S)
        return super().translate_detailed(texts, options, deadline=deadline)


SLOW_S = 0.05


def test_elapsed_ms_is_the_translations_time_and_the_access_line_spans_it(caplog: pytest.LogCaptureFixture) -> None:
    slow = make_api(SlowService(shipped_model(), config()))
    with caplog.at_level(logging.INFO, logger="handler.access"):
        response = post(slow, {"text": "你好。"})
    elapsed = json.loads(response.body)["elapsed_ms"]
    [line] = access_lines(caplog)
    assert 1000 * SLOW_S <= elapsed <= line.duration_ms < 60_000  # type: ignore[attr-defined]


def test_a_refused_request_is_not_logged_as_a_failure(api: HttpApi, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="handler"):
        post(api, {"text": 5})
        post(api, {"text": "好" * (MAX_CHARS + 1)})
    assert [record for record in caplog.records if record.name == "handler.api.router"] == []
    assert [record.levelno for record in access_lines(caplog)] == [logging.INFO, logging.INFO]


def test_a_request_the_adapter_could_not_decode_is_answered_like_any_other(
    api: HttpApi, caplog: pytest.LogCaptureFixture
) -> None:
    request = HttpRequest.create("POST", "/translate", {"X-Request-Id": "r-bad-body", "Origin": ORIGIN})
    with caplog.at_level(logging.INFO, logger="handler.access"):
        response = api.handle(request, refused=InvalidRequestError("the body is not base64"))
    assert error_of(response, 400, "invalid_request") == "the body is not base64"
    assert response.headers["X-Request-Id"] == "r-bad-body" and response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Access-Control-Allow-Origin"] == ORIGIN
    [line] = access_lines(caplog)
    assert (line.request_id, line.status, line.error_code) == ("r-bad-body", 400, "invalid_request")  # type: ignore[attr-defined]


def test_a_request_its_transport_refused_is_answered_with_the_transports_status(
    api: HttpApi, caplog: pytest.LogCaptureFixture
) -> None:
    request = HttpRequest.create("GET", "/(unreadable)", {}, None, "platform-id-1")
    refusal = RequestRefusedError(
        HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "header_too_large", "a header is too long"
    )
    with caplog.at_level(logging.INFO, logger="handler.access"):
        response = api.handle(request, refused=refusal)
    assert error_of(response, 431, "header_too_large") == "a header is too long"
    assert response.headers["X-Request-Id"] == "platform-id-1"  # the platform's id, as no header gave one
    assert response.headers["X-Frame-Options"] == "DENY"
    [line] = access_lines(caplog)
    assert (line.status, line.error_code, line.route) == (431, "header_too_large", "(unknown)")  # type: ignore[attr-defined]
    assert type(line.status) is int  # type: ignore[attr-defined]  # the number, not HTTPStatus's name


def test_each_request_has_one_access_line_with_route_status_and_sizes(
    api: HttpApi, caplog: pytest.LogCaptureFixture
) -> None:
    body = json.dumps({"text": "你好。"}).encode()
    with caplog.at_level(logging.INFO, logger="handler.access"):
        ok = call(api, "POST", "/translate/?q=secret", {**JSON_HEADERS, "X-Request-Id": "r-1"}, body)
        missing = call(api, "GET", "/secret-path", {"X-Request-Id": "r-2"})
        head = call(api, "HEAD", "/healthz", {"X-Request-Id": "r-3"})
    first, second, third = access_lines(caplog)
    assert first.getMessage() == "POST /translate 200" and first.levelno == logging.INFO
    assert (first.request_id, first.method, first.route, first.status) == ("r-1", "POST", "/translate", 200)  # type: ignore[attr-defined]
    assert (first.request_bytes, first.response_bytes) == (len(body), len(ok.body))  # type: ignore[attr-defined]
    # milliseconds to two decimals, spanning the translation the body reports
    assert json.loads(ok.body)["elapsed_ms"] <= first.duration_ms < 60_000  # type: ignore[attr-defined]
    assert isinstance(second.duration_ms, float) and 0 < second.duration_ms == round(second.duration_ms, 2)  # type: ignore[attr-defined]
    for absent in ("error_code", "query", "request_body", "response_body"):
        assert not hasattr(first, absent), absent
    assert (second.route, second.status, second.error_code) == ("(unknown)", 404, "not_found")  # type: ignore[attr-defined]
    assert second.getMessage() == "GET (unknown) 404" and missing.status == 404
    assert (third.status, third.response_bytes, head.body) == (200, 0, b"")  # type: ignore[attr-defined]


def test_with_log_text_the_bodies_and_the_query_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    debug = make_api(log_text=True)
    body = json.dumps({"text": "机密合同"}, ensure_ascii=False).encode()
    with caplog.at_level(logging.INFO, logger="handler.access"):
        response = call(debug, "POST", "/translate?q=机密?&x=1", JSON_HEADERS, body)
        call(debug, "GET", "/")
        preflight = call(debug, "OPTIONS", "/translate")  # no Content-Type, no body
    translate, page, options = access_lines(caplog)
    assert translate.query == "q=机密?&x=1" and translate.request_body == body.decode()  # type: ignore[attr-defined]
    assert translate.response_body == response.body_text()  # type: ignore[attr-defined]
    assert page.request_body == "" and not hasattr(page, "response_body")  # type: ignore[attr-defined]
    assert preflight.status == 204 and (options.status, options.response_body) == (204, "")  # type: ignore[attr-defined]
