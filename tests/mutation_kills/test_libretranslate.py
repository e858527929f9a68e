"""LibreTranslate's API on the shipped bundle, called as the router calls it (``LibreTranslateApi``): which
``POST /translate`` bodies it claims from this server's own API, every option and how it maps onto the service
(``source`` codes, ``target``, ``format``, ``alternatives``), detection, settings, keys and each failure's status.
The service records the options each request reached it with."""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlencode

import pytest

from handler.api.compat.libretranslate import LANGUAGES, MAX_BODY_BYTES, LibreTranslateApi
from handler.api.messages import HttpRequest, HttpResponse
from handler.coldstart import Startup
from handler.errors import DeadlineExceededError, InvalidRequestError, ModelUnavailableError, RequestTooLargeError
from handler.formats import FILE_SUFFIXES
from handler.text.script_conversion import AUTO, HONG_KONG, SIMPLIFIED, TAIWAN, TRADITIONAL
from tests.fuzz.shipped import NEEDS_SHIPPED_BUNDLE, shipped_config
from tests.mutation_kills.recording import FORM, JSON, KEY, RecordingService

pytestmark = NEEDS_SHIPPED_BUNDLE


def api(**overrides: object) -> tuple[LibreTranslateApi, RecordingService]:
    service = RecordingService(**overrides)
    return LibreTranslateApi(Startup(shipped_config(beam_size=1, **overrides), service, None, 0.0)), service


def request(method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> HttpRequest:
    return HttpRequest.create(method, path, headers or {}, body)


def call(
    libre: LibreTranslateApi, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> HttpResponse:
    return libre.handle(path.partition("?")[0], request(method, path, body, headers))


def translate(libre: LibreTranslateApi, payload: dict[str, Any], headers: dict[str, str] | None = None) -> HttpResponse:
    return call(libre, "POST", "/translate", json.dumps(payload).encode(), {**JSON, **(headers or {})})


def body(response: HttpResponse) -> Any:
    return json.loads(response.body)


def error(response: HttpResponse, status: int) -> str:
    assert response.status == status, response.body
    payload = body(response)
    assert list(payload) == ["error"]
    return str(payload["error"])


# --- which requests are LibreTranslate's ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "headers", "payload", "claimed"),
    [
        ("POST", "/translate", FORM, b"q=%E4%BD%A0&target=en", True),
        ("POST", "/translate", FORM, b"q%5B%5D=a&q%5B%5D=b", True),
        ("POST", "/translate", {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}, b"q=a", True),
        ("POST", "/translate", FORM, b"text=a", False),
        ("POST", "/translate", FORM, b"source=zh&target=en", True),  # no q: LibreTranslate's 400, not ours
        ("POST", "/translate", FORM, b"", False),  # names nothing: this API's 415 (send JSON)
        ("POST", "/translate", FORM, b'{"text": "a"}', False),  # JSON sent as a form: this API's 415
        ("POST", "/translate", FORM, b"q=&target=en", True),  # an empty q is still LibreTranslate's
        ("POST", "/translate", FORM, b"q=\xff\xfe&target=en", True),  # not UTF-8: claimed, then refused
        ("POST", "/translate", {"Content-Type": "multipart/form-data; boundary=x"}, b"", True),
        ("POST", "/translate", JSON, b'{"q": "a", "source": "auto", "target": "en"}', True),
        ("POST", "/translate", {"Content-Type": "application/json; charset=utf-8"}, b'{"q": "a"}', True),
        ("POST", "/translate", JSON, b'{"text": "a"}', False),
        ("POST", "/translate", JSON, b'{"source": "zh", "target": "en"}', True),  # target: LibreTranslate's only
        ("POST", "/translate", JSON, b'{"source": "zh"}', False),  # source: this API's option too
        ("POST", "/translate", JSON, b'{"q": "a", "text": "b"}', False),
        ("POST", "/translate", JSON, b'{"q": "a", "texts": ["b"]}', False),
        ("POST", "/translate", JSON, b'["q"]', False),
        ("POST", "/translate", JSON, b'{"q": NaN}', True),  # unreadable but naming q only
        ("POST", "/translate", JSON, b'{"q": NaN, "text": 1}', False),
        ("POST", "/translate", {"Content-Type": "text/plain"}, b"q=a", False),
        ("POST", "/translate", {}, b'{"q": "a"}', False),
        ("GET", "/translate", FORM, b"q=a", False),
        ("GET", "/languages", {}, b"", True),
        ("POST", "/detect", {}, b"", True),
        ("GET", "/frontend/settings", {}, b"", True),
        ("GET", "/healthz", {}, b"", False),
        ("GET", "/health", {}, b"", True),
        ("GET", "/spec", {}, b"", True),
        ("POST", "/suggest", {}, b"", True),
    ],
)
def test_the_requests_it_claims(method: str, path: str, headers: dict[str, str], payload: bytes, claimed: bool) -> None:
    libre, _ = api()
    assert libre.claims(path, request(method, path, payload, headers)) is claimed


def test_a_method_a_route_does_not_answer_is_405_with_allow() -> None:
    libre, _ = api()
    response = call(libre, "GET", "/translate")
    assert error(response, 405) == "/translate answers POST"
    assert response.headers["Allow"] == "POST"
    response = call(libre, "POST", "/languages")  # LibreTranslate's test_api_get_languages_must_fail_bad_request_type
    assert error(response, 405) == "/languages answers GET"
    assert response.headers["Allow"] == "GET"
    assert call(libre, "HEAD", "/languages").status == 200
    assert call(libre, "HEAD", "/detect").status == 405
    assert error(call(libre, "POST", "/health"), 405) == "/health answers GET"  # LibreTranslate's test_api_health
    assert error(call(libre, "POST", "/spec"), 405) == "/spec answers GET"  # its test_api_spec
    assert error(call(libre, "GET", "/suggest"), 405) == "/suggest answers POST"


def test_languages_and_settings() -> None:
    libre, _ = api(max_chars=1234)
    assert body(call(libre, "GET", "/languages")) == list(LANGUAGES)
    assert body(call(libre, "GET", "/languages")) == [
        {"code": "zh-Hans", "name": "Chinese", "targets": ["en"]},
        {"code": "zh-Hant", "name": "Chinese (traditional)", "targets": ["en"]},
        {"code": "en", "name": "English", "targets": []},
    ]
    assert body(call(libre, "GET", "/frontend/settings")) == {
        "charLimit": 1234,
        "frontendTimeout": 500,
        "apiKeys": False,
        "keyRequired": False,
        "suggestions": False,
        "filesTranslation": True,
        "supportedFilesFormat": list(FILE_SUFFIXES),
        "language": {"source": {"code": "zh", "name": "Chinese"}, "target": {"code": "en", "name": "English"}},
    }
    keyed, _ = api(api_keys=(KEY,))
    settings = body(call(keyed, "GET", "/frontend/settings"))  # open without a key, says one is needed
    assert (settings["apiKeys"], settings["keyRequired"]) == (True, True)


# --- translating: the options --------------------------------------------------------------------------------


def test_one_text_and_a_list() -> None:
    libre, service = api()
    one = body(translate(libre, {"q": "2026年", "source": "zh", "target": "en"}))
    assert list(one) == ["translatedText"] and one["translatedText"].startswith("2026")
    many = body(translate(libre, {"q": ["2026年", "3月"], "source": "zh", "target": "en"}))
    assert isinstance(many["translatedText"], list) and len(many["translatedText"]) == 2
    assert [(o.format, o.source) for o in service.options] == [("text", SIMPLIFIED), ("text", SIMPLIFIED)]


@pytest.mark.parametrize(
    ("source", "variant"),
    [
        ("auto", AUTO),
        ("zh", SIMPLIFIED),
        ("zh-Hans", SIMPLIFIED),
        ("zt", TRADITIONAL),
        ("zh-Hant", TRADITIONAL),
        ("ZH-TW", TAIWAN),
        ("zh-HK", HONG_KONG),
        (" zh ", SIMPLIFIED),
    ],
)
def test_the_source_code_maps_onto_the_chinese_variant(source: str | None, variant: str) -> None:
    libre, service = api()
    payload = {"q": "這体", "target": "en", **({"source": source} if source is not None else {})}
    assert translate(libre, payload).status == 200
    assert service.options[-1].source == variant


def test_an_automatic_source_reports_the_detected_language() -> None:
    libre, _ = api()
    one = body(translate(libre, {"q": "這個軟體", "source": "auto", "target": "en"}))
    assert one["detectedLanguage"] == {"language": "zh-Hant", "confidence": 100.0}
    many = body(translate(libre, {"q": ["这个软件", "你好"], "source": "auto", "target": "en"}))
    assert many["detectedLanguage"] == [
        {"language": "zh-Hans", "confidence": 100.0},
        {"language": "zh-Hans", "confidence": 100.0},
    ]
    assert "detectedLanguage" not in body(translate(libre, {"q": "你好", "source": "zh", "target": "en"}))
    # no Chinese: English, as /detect says; LibreTranslate answers a text of emoji {"confidence": 0.0, "language": "en"}
    others = body(translate(libre, {"q": ["😀 😀", "hello", "你好 abcd"], "source": "auto", "target": "en"}))
    assert others["detectedLanguage"] == [
        {"language": "en", "confidence": 0.0},
        {"language": "en", "confidence": 100.0},
        {"language": "zh-Hans", "confidence": 33.3},
    ]


@pytest.mark.parametrize("target", ["en", "EN", "en-US", "en-gb", " en "])
def test_each_english_target(target: str) -> None:
    libre, _ = api()
    assert translate(libre, {"q": "2026年", "source": "zh", "target": target}).status == 200


@pytest.mark.parametrize(
    ("payload", "problem"),
    [  # LibreTranslate's checks, in its order (libretranslate/app.py, translate(); its test_api_translate.py)
        ({"source": "zh", "target": "en"}, "Invalid request: missing q parameter"),
        ({"q": "", "source": "zh", "target": "en"}, "Invalid request: missing q parameter"),
        ({"q": [], "source": "zh", "target": "en"}, "Invalid request: missing q parameter"),
        ({"q": "你好", "target": "en"}, "Invalid request: missing source parameter"),
        ({"q": "你好", "source": "", "target": "en"}, "Invalid request: missing source parameter"),
        ({"q": "你好", "source": "zh"}, "Invalid request: missing target parameter"),
        ({"q": "", "target": "en"}, "Invalid request: missing q parameter"),  # q first
        ({"q": "你好", "source": "zh", "target": "zz"}, "zz is not supported"),  # its test, word for word
        ({"q": "你好", "source": "ja", "target": "zz"}, "ja is not supported"),  # the source first
        ({"q": "你好", "source": "zh", "target": "fr", "format": "md"}, "fr is not supported"),
    ],
)
def test_libretranslates_400s(payload: dict[str, Any], problem: str) -> None:
    libre, service = api()
    assert error(translate(libre, payload), 400) == problem
    form = urlencode({k: v for k, v in payload.items() if not isinstance(v, list)}).encode()
    if not isinstance(payload.get("q"), list):  # a form body, as libretranslatepy sends, gets the same answer
        assert error(call(libre, "POST", "/translate", form, FORM), 400) == problem
    assert service.options == []


def test_char_limit_is_each_texts_and_the_batch_limit_the_number_of_texts() -> None:
    libre, service = api(max_chars=10, max_texts=3)
    assert body(call(libre, "GET", "/frontend/settings"))["charLimit"] == 10
    # three texts of 10 characters: 30 in all, each within charLimit, as LibreTranslate counts (app.py, translate())
    texts = ["今天天气很好今天天气", "2026年3月1日晴", "一二三四五六七八九十"]
    answer = body(translate(libre, {"q": texts, "source": "zh", "target": "en"}))
    assert len(answer["translatedText"]) == 3
    assert len(service.options) == 3  # the service's own limit is a call's total: one text a call here
    assert error(translate(libre, {"q": "一二三四五六七八九十一", "source": "zh", "target": "en"}), 400) == (
        "Invalid request: request (11) exceeds text limit (10): at most 10 characters a text (TRANSLATE_MAX_CHARS)"
    )
    assert error(translate(libre, {"q": ["你", "好", "吗", "？"], "source": "zh", "target": "en"}), 400) == (
        "Invalid request: request (4) exceeds text limit (3): at most 3 texts a request (TRANSLATE_MAX_TEXTS)"
    )
    # a form's text is counted with its line breaks made \n, as LibreTranslate does for a form (not for JSON)
    crlf = "一二三四\r\n五六七八九"  # 11 characters, 10 once CRLF is LF
    assert (
        call(libre, "POST", "/translate", urlencode({"q": crlf, "source": "zh", "target": "en"}).encode(), FORM).status
        == 200
    )
    assert error(translate(libre, {"q": crlf, "source": "zh", "target": "en"}), 400).startswith(
        "Invalid request: request (11)"
    )


def test_health_spec_and_suggest_answer_as_libretranslate_does() -> None:
    libre, _ = api(api_keys=(KEY,))
    health = call(libre, "GET", "/health")  # open, as LibreTranslate's (its healthcheck.py sends no key)
    assert (health.status, body(health)) == (200, {"status": "ok"})
    spec = body(call(libre, "GET", "/spec"))
    assert spec["openapi"].startswith("3.1") and {"/translate", "/detect", "/health", "/spec", "/suggest"} <= set(
        spec["paths"]
    )
    # suggestions off (LibreTranslate's default): 403 whatever the body, before the key (app.py, suggest())
    for payload in (b"", b'{"q": "a", "s": "b", "source": "zh", "target": "en"}', b"{not json"):
        assert error(call(libre, "POST", "/suggest", payload, JSON), 403) == "Suggestions are disabled on this server."
    broken = LibreTranslateApi(Startup(shipped_config(), None, ModelUnavailableError("the bundle is missing"), 0.0))
    assert error(call(broken, "GET", "/health"), 500) == "the bundle is missing"


@pytest.mark.parametrize(("format", "expected"), [(None, "text"), ("text", "text"), ("html", "html"), ("HTML", "html")])
def test_the_format_maps_onto_the_services(format: str | None, expected: str) -> None:
    libre, service = api()
    payload = {"q": "<p>你好</p>", "source": "zh", "target": "en", **({"format": format} if format is not None else {})}
    response = translate(libre, payload)
    assert response.status == 200
    assert service.options[-1].format == expected
    if expected == "html":
        assert body(response)["translatedText"].startswith("<p>")


def test_another_format_is_refused() -> None:
    libre, _ = api()
    assert error(translate(libre, {"q": "你", "source": "auto", "target": "en", "format": "markdown"}), 400) == (
        "markdown format is not supported; use text or html"
    )


@pytest.mark.parametrize(("alternatives", "asked"), [(None, 0), ("", 0), (0, 0), ("0", 0), (1, 1), ("3", 3), (5.0, 5)])
def test_alternatives_are_answered_when_asked_for(alternatives: object, asked: int) -> None:
    libre, _ = api()
    payload = {
        "q": "今天天气很好。",
        "source": "zh",
        "target": "en",
        **({"alternatives": alternatives} if alternatives is not None else {}),
    }
    response = translate(libre, payload)
    assert response.status == 200, response.body
    answer = body(response)
    if not asked:
        assert "alternatives" not in answer
        return
    found = answer["alternatives"]
    # the shipped model has several translations of this sentence: as many as asked, distinct, none the main one
    assert len(found) == asked and len(set(found)) == asked and answer["translatedText"] not in found
    assert all(isinstance(text, str) and text.strip() for text in found)
    many = body(translate(libre, {**payload, "q": ["今天天气很好。", "2026"]}))
    assert many["translatedText"][0] == answer["translatedText"] and many["alternatives"][0] == found
    assert many["alternatives"][1] == []  # no Chinese: nothing to vary


@pytest.mark.parametrize(
    ("alternatives", "problem"),
    [
        (True, "Invalid request: alternatives must be an integer; got True"),
        (0.5, "Invalid request: alternatives must be an integer; got 0.5"),
        ("two", "Invalid request: alternatives must be an integer; got 'two'"),
        ([1], "Invalid request: alternatives must be an integer; got [1]"),
        (6, "Invalid request: alternatives must be between 0 and 5"),
        (10_000, "Invalid request: alternatives must be between 0 and 5"),
        (-1, "Invalid request: alternatives must be between 0 and 5"),
    ],
)
def test_a_wrong_alternatives_count_is_refused(alternatives: object, problem: str) -> None:
    libre, _ = api()
    assert (
        error(translate(libre, {"q": "你", "source": "auto", "target": "en", "alternatives": alternatives}), 400)
        == problem
    )


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"target": "en"}, "Invalid request: missing q parameter"),
        ({"q": 5, "source": "auto", "target": "en"}, "Invalid request: q must be a string or a list of strings"),
        ({"q": ["a", 1], "source": "auto", "target": "en"}, "Invalid request: q must be a string or a list of strings"),
        ({"q": None, "source": "auto", "target": "en"}, "Invalid request: missing q parameter"),
    ],
)
def test_q_must_be_a_string_or_a_list_of_them(payload: dict[str, Any], problem: str) -> None:
    libre, _ = api()
    assert error(translate(libre, payload), 400) == problem


def test_a_form_body_as_libretranslates_clients_send_it() -> None:
    libre, _ = api()
    response = call(
        libre, "POST", "/translate", urlencode({"q": "2026年", "source": "zh", "target": "en"}).encode(), FORM
    )
    assert body(response)["translatedText"].startswith("2026")


# --- detection ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("这个软件很好", {"language": "zh-Hans", "confidence": 100.0}),
        ("這個軟體很好", {"language": "zh-Hant", "confidence": 100.0}),
        ("你好 ab", {"language": "zh-Hans", "confidence": 50.0}),
        ("你", {"language": "zh-Hans", "confidence": 100.0}),
        # unassigned Han code points: no letters, capped
        ("\U0002fa1e\U0002fa1f", {"language": "zh-Hans", "confidence": 100.0}),
        ("你好 abcd", {"language": "zh-Hans", "confidence": 33.3}),
        ("hello", {"language": "en", "confidence": 100.0}),
        ("123 !", {"language": "en", "confidence": 0.0}),
    ],
)
def test_detect(q: str, expected: dict[str, object]) -> None:
    libre, _ = api()
    response = call(libre, "POST", "/detect", json.dumps({"q": q}).encode(), JSON)
    assert response.status == 200
    assert body(response) == [expected]


def test_detect_looks_at_every_text_of_a_list() -> None:
    libre, _ = api()
    assert body(call(libre, "POST", "/detect", json.dumps({"q": ["hello", "這個軟體"]}).encode(), JSON)) == [
        {"language": "zh-Hant", "confidence": 44.4}
    ]
    for empty in (b"{}", b'{"q": ""}', b'{"q": []}'):  # LibreTranslate: if not q: abort(400)
        assert error(call(libre, "POST", "/detect", empty, JSON), 400) == "Invalid request: missing q parameter"
    assert error(call(libre, "POST", "/detect"), 400) == "Invalid request: missing q parameter"  # its own test
    # a form's empty q field is missing, one of several too; a JSON list may hold "" (LibreTranslate takes [""])
    assert error(call(libre, "POST", "/detect", b"q=a&q=", FORM), 400).startswith("Invalid request: missing q")
    assert call(libre, "POST", "/detect", b'{"q": ["a", ""]}', JSON).status == 200


# --- keys and failures ----------------------------------------------------------------------------------------


def test_with_keys_translate_and_detect_need_one() -> None:
    libre, _ = api(api_keys=(KEY,))
    payload = {"q": "2026年", "source": "auto", "target": "en"}
    assert error(translate(libre, payload), 400) == (  # LibreTranslate: no key where one is needed is 400
        "Visit the server's operator to get an API key: api_key is required (TRANSLATE_API_KEYS is set)"
    )
    assert error(translate(libre, {**payload, "api_key": "wrong"}), 403) == (
        "Invalid API key: this server requires an api_key from its list (TRANSLATE_API_KEYS); ask the server's "
        "operator for one"
    )
    assert translate(libre, {**payload, "api_key": KEY}).status == 200
    assert translate(libre, payload, {"X-API-Key": KEY}).status == 200
    assert error(call(libre, "POST", "/detect", b'{"q": "a"}', JSON), 400).startswith("Visit the server's operator")
    assert error(call(libre, "POST", "/detect", b'{"q": "a"}', {**JSON, "X-API-Key": "wrong"}), 403).startswith(
        "Invalid"
    )
    assert call(libre, "GET", "/languages").status == 200


@pytest.mark.parametrize(
    ("failure", "status"),
    [
        (InvalidRequestError("bad text"), 400),
        (RequestTooLargeError("too long"), 400),
        (ModelUnavailableError("no model"), 500),
        (DeadlineExceededError("no time"), 500),
    ],
)
def test_each_failure_has_libretranslates_status(
    failure: Exception, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    libre, service = api()
    service.failure = failure
    with caplog.at_level(logging.ERROR, logger="handler.api.compat.libretranslate"):
        response = translate(libre, {"q": "你好", "source": "auto", "target": "en"})
    assert error(response, status) == str(failure)
    logged = [r.getMessage() for r in caplog.records if r.name == "handler.api.compat.libretranslate"]
    assert logged == (
        [f"LibreTranslate /translate failed: {type(failure).__name__}: {failure}"] if status >= 500 else []
    )


def test_an_unexpected_error_is_500_without_details(caplog: pytest.LogCaptureFixture) -> None:
    libre, service = api()
    service.failure = RuntimeError("secret detail")
    with caplog.at_level(logging.ERROR, logger="handler.api.compat.libretranslate"):
        response = translate(libre, {"q": "你好", "source": "auto", "target": "en"})
    assert error(response, 500) == "internal error while translating; the function's log has the details"
    assert caplog.records[-1].getMessage() == "LibreTranslate /translate failed with an unexpected error"
    assert caplog.records[-1].exc_info is not None


def test_a_model_that_is_not_there_is_500_and_the_rest_still_answers() -> None:
    libre = LibreTranslateApi(Startup(shipped_config(), None, ModelUnavailableError("the bundle is missing"), 0.0))
    assert error(translate(libre, {"q": "你好", "source": "auto", "target": "en"}), 500) == "the bundle is missing"
    assert call(libre, "GET", "/languages").status == 200
    assert call(libre, "GET", "/frontend/settings").status == 200


def test_a_body_over_the_limit_is_refused() -> None:
    libre, _ = api()
    assert MAX_BODY_BYTES == 10 * 1024 * 1024
    response = call(libre, "POST", "/translate", b"q=" + b"a" * MAX_BODY_BYTES, FORM)
    assert error(response, 400).startswith("the request body is 10,485,762 bytes; the limit is 10,485,760")
    assert call(libre, "POST", "/detect", b"q=" + b"a" * (MAX_BODY_BYTES - 3), FORM).status == 200


def test_its_routes() -> None:
    libre, _ = api()
    assert libre.routes == {
        "/translate": ("POST",),
        "/detect": ("POST",),
        "/languages": ("GET",),
        "/frontend/settings": ("GET",),
        "/translate_file": ("POST",),
        "/download_file/{filename}": ("GET",),
        "/usage": ("GET",),  # this server's: the calling key's usage (LibreTranslate has none)
        "/health": ("GET",),
        "/spec": ("GET",),
        "/suggest": ("POST",),
    }
