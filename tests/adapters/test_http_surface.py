"""The HTTP surface's behaviour, run identically against every HTTP adapter (the ``client`` fixture):
functions-framework on loopback, the local server, API Gateway v1 / v2 and Function URL events through
``lambda_handler``, and the real awslambdaric process behind a local Lambda Runtime API.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.adapters.conftest import ALLOWED_ORIGIN, MAX_CHARS, MAX_TEXTS, HttpClient

pytestmark = pytest.mark.slow

JSON_HEADERS = {"Content-Type": "application/json"}


def post_json(client: HttpClient, payload: object, path: str = "/translate"):
    return client.call("POST", path, JSON_HEADERS, json.dumps(payload, ensure_ascii=False).encode("utf-8"))


def assert_error(reply, status: int, code: str, message_pattern: str) -> str:
    assert reply.status == status, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    error = reply.json()["error"]
    assert error["code"] == code
    assert re.search(message_pattern, error["message"]), error["message"]
    assert "Traceback" not in reply.text and 'File "' not in reply.text
    return str(error["message"])


# --- success ----------------------------------------------------------------------------------------------
def test_translate_one_text(client: HttpClient) -> None:
    # GIVEN a Chinese sentence WHEN it is posted THEN one translation comes back with the model and timing
    reply = post_json(client, {"text": "你好，世界。"})
    assert reply.status == 200, reply.text
    assert reply.headers["content-type"] == "application/json; charset=utf-8"
    body = reply.json()
    assert isinstance(body["translation"], str) and body["translation"].strip()
    assert body["model"] and re.fullmatch(r"[0-9a-f]{16}", body["bundle_hash"])
    assert isinstance(body["elapsed_ms"], (int, float)) and body["elapsed_ms"] >= 0


def test_translate_is_deterministic_across_calls(client: HttpClient) -> None:
    first = post_json(client, {"text": "今天天气很好。"}).json()["translation"]
    second = post_json(client, {"text": "今天天气很好。"}).json()["translation"]
    assert first == second


def test_translate_many_texts_gives_one_translation_each(client: HttpClient) -> None:
    texts = ["你好。", "谢谢你。", "我们明天见。"]
    reply = post_json(client, {"texts": texts})
    assert reply.status == 200, reply.text
    translations = reply.json()["translations"]
    # (batched and single outputs may differ: INT8 activations are quantized per batch)
    assert len(translations) == 3 and all(isinstance(t, str) and t.strip() for t in translations)


def test_beam_size_option_is_accepted(client: HttpClient) -> None:
    reply = post_json(client, {"text": "你好。", "beam_size": 2})
    assert reply.status == 200, reply.text


def test_content_type_with_charset_is_accepted(client: HttpClient) -> None:
    body = json.dumps({"text": "你好。"}).encode()
    reply = client.call("POST", "/translate", {"Content-Type": "application/json; charset=UTF-8"}, body)
    assert reply.status == 200, reply.text


def test_trailing_slash_reaches_the_same_route(client: HttpClient) -> None:
    assert post_json(client, {"text": "你好。"}, path="/translate/").status == 200


def test_page_is_served_with_the_limits(client: HttpClient) -> None:
    reply = client.call("GET", "/")
    assert reply.status == 200
    assert reply.headers["content-type"] == "text/html; charset=utf-8"
    assert "script-src 'sha256-" in reply.headers["content-security-policy"]
    page = reply.text
    assert 'id="source"' in page and 'id="output"' in page and 'id="translate"' in page
    config = json.loads(re.search(r'<script id="page-config" type="application/json">(.*?)</script>', page, re.S)[1])
    assert config["maxChars"] == MAX_CHARS and config["available"] is True
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page  # no CDN


def test_healthz_reports_model_bundle_warm_state_and_timings(client: HttpClient) -> None:
    reply = client.call("GET", "/healthz")
    assert reply.status == 200, reply.text
    health = reply.json()
    assert health["status"] == "ok" and health["warm"] is True
    assert health["model"] and re.fullmatch(r"[0-9a-f]{16}", health["bundle_hash"])
    assert health["cold_start"]["warm"] is True
    assert health["limits"]["max_chars"] == MAX_CHARS and health["limits"]["max_texts"] == MAX_TEXTS
    # the tiny bundle's checkpoint stated no licence and it has no model card: named unknown, no demo notice
    assert health["licence"] == {"name": None, "commercial_use": None, "notice": None}


def test_head_answers_like_get_without_a_body(client: HttpClient) -> None:
    reply = client.call("HEAD", "/healthz")
    assert reply.status == 200 and reply.body == b""


# --- errors -----------------------------------------------------------------------------------------------
def test_malformed_json_is_400(client: HttpClient) -> None:
    reply = client.call("POST", "/translate", JSON_HEADERS, b'{"text": "unterminated')
    assert_error(reply, 400, "invalid_request", r"not valid JSON")


@pytest.mark.parametrize(
    ("payload", "pattern"),
    [
        ({"text": 5}, r'"text" must be a string; got a JSON number'),
        ({"texts": "你好"}, r'"texts" must be a list of strings; got a JSON string'),
        ({"texts": ["你好", None]}, r'"texts"\[1\] must be a string; got a JSON null'),
        (["你好"], r"must be a JSON object"),
        ({}, r'exactly one of "text".*found neither'),
        ({"text": "a", "texts": ["b"]}, r"found both"),
        ({"text": "你好", "beam_size": 9}, r"beam_size"),
        ({"text": "你好", "beam_size": "4"}, r"beam_size"),
        ({"text": "你好", "colour": "blue"}, r"colour"),
    ],
)
def test_wrong_shapes_and_types_are_400(client: HttpClient, payload: object, pattern: str) -> None:
    assert_error(post_json(client, payload), 400, "invalid_request", pattern)


def test_unpaired_surrogate_is_400(client: HttpClient) -> None:
    reply = client.call("POST", "/translate", JSON_HEADERS, b'{"text": "\\ud800abc"}')
    assert_error(reply, 400, "invalid_request", r"unpaired UTF-16 surrogate")


def test_get_on_translate_is_405_with_allow(client: HttpClient) -> None:
    reply = client.call("GET", "/translate")
    assert_error(reply, 405, "method_not_allowed", r"/translate answers POST")
    assert "POST" in reply.headers["allow"]


def test_post_on_page_is_405(client: HttpClient) -> None:
    assert_error(post_json(client, {"text": "你好"}, path="/"), 405, "method_not_allowed", r"GET")


def test_too_many_characters_is_413_naming_limit_and_variable(client: HttpClient) -> None:
    reply = post_json(client, {"text": "好" * (MAX_CHARS + 1)})
    message = assert_error(reply, 413, "request_too_large", r"TRANSLATE_MAX_CHARS")
    assert f"{MAX_CHARS}" in message and f"{MAX_CHARS + 1}" in message


def test_too_many_characters_over_several_texts_is_413(client: HttpClient) -> None:
    reply = post_json(client, {"texts": ["好" * (MAX_CHARS // 2 + 1)] * 2})
    assert_error(reply, 413, "request_too_large", r"TRANSLATE_MAX_CHARS")


def test_too_many_texts_is_413_naming_limit_and_variable(client: HttpClient) -> None:
    reply = post_json(client, {"texts": ["你好"] * (MAX_TEXTS + 1)})
    message = assert_error(reply, 413, "request_too_large", r"TRANSLATE_MAX_TEXTS")
    assert str(MAX_TEXTS) in message


def test_huge_body_is_413_before_parsing(client: HttpClient) -> None:
    body = b'{"text": "' + b"a" * (6 * MAX_CHARS + 64 * MAX_TEXTS + 70_000) + b'"}'
    reply = client.call("POST", "/translate", JSON_HEADERS, body)
    assert_error(reply, 413, "request_too_large", r"TRANSLATE_MAX_CHARS")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_wrong_content_type_is_415(client: HttpClient, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    reply = client.call("POST", "/translate", headers, json.dumps({"text": "你好"}).encode())
    assert_error(reply, 415, "unsupported_media_type", r"application/json")


def test_non_utf8_charset_is_415(client: HttpClient) -> None:
    reply = client.call("POST", "/translate", {"Content-Type": "application/json; charset=gbk"}, b'{"text": "a"}')
    assert_error(reply, 415, "unsupported_media_type", r"UTF-8")


def test_unknown_path_is_404(client: HttpClient) -> None:
    assert_error(client.call("GET", "/nope"), 404, "not_found", r"/nope")


# --- CORS -------------------------------------------------------------------------------------------------
def test_cors_allows_the_configured_origin(client: HttpClient) -> None:
    body = json.dumps({"text": "你好"}).encode()
    reply = client.call("POST", "/translate", {**JSON_HEADERS, "Origin": ALLOWED_ORIGIN}, body)
    assert reply.status == 200
    assert reply.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    assert "Origin" in reply.headers["vary"]


def test_cors_headers_are_absent_for_other_origins(client: HttpClient) -> None:
    body = json.dumps({"text": "你好"}).encode()
    reply = client.call("POST", "/translate", {**JSON_HEADERS, "Origin": "https://evil.example"}, body)
    assert "access-control-allow-origin" not in reply.headers


def test_cors_preflight(client: HttpClient) -> None:
    headers = {
        "Origin": ALLOWED_ORIGIN,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    reply = client.call("OPTIONS", "/translate", headers)
    assert reply.status == 204
    assert reply.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    assert "POST" in reply.headers["access-control-allow-methods"]
    assert "Content-Type" in reply.headers["access-control-allow-headers"]


def test_errors_carry_cors_headers_too(client: HttpClient) -> None:
    reply = client.call("POST", "/translate", {**JSON_HEADERS, "Origin": ALLOWED_ORIGIN}, b"{")
    assert reply.status == 400 and reply.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
