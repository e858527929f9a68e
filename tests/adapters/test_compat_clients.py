"""The LibreTranslate and DeepL drop-in APIs, driven by the clients people use, unmodified from PyPI:
``libretranslatepy`` and the official ``deepl`` library (its ``server_url`` option), over real HTTP on loopback.

Every test runs against each way the function is served:

* ``functions_framework``: ``functions-framework --target translate_http`` (Cloud Functions' own server);
* ``local_server``: the standard-library server of ``python -m handler serve``;
* ``function_url``: an HTTP front that turns each request into a Lambda Function URL event, as AWS's front end does,
  and hands it through a local Lambda Runtime API to the real ``awslambdaric`` process running our handler;
* ``api_gateway_v1``: the same front with API Gateway REST (v1) events, handled by ``lambda_handler`` in this process.

The model is the tiny random bundle (gibberish English): the tests assert the APIs' shapes, errors and behaviour.
"""

from __future__ import annotations

import json
import threading
import urllib.error
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import deepl
import pytest
from libretranslatepy import LibreTranslateAPI

from handler.adapters.local_server import make_server
from handler.api.router import HttpApi
from handler.coldstart import Startup, start
from tests.adapters.conftest import MAX_CHARS, RicFunction, http_event, reply_from_proxy_response
from tests.events import API_GATEWAY_V1, FUNCTION_URL

pytestmark = pytest.mark.slow

SERVINGS = ("functions_framework", "local_server", FUNCTION_URL, API_GATEWAY_V1)
API_KEY = "compat-test-key"


# --- an HTTP front for Lambda events ------------------------------------------------------------------------------
def lambda_front(invoke: Callable[[dict[str, Any]], dict[str, Any]], kind: str) -> ThreadingHTTPServer:
    """A loopback HTTP server that delivers each request to ``invoke`` as a ``kind`` event (query string included)."""

    class Front(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            url = urlsplit(self.path)
            event = http_event(kind, self.command, url.path, dict(self.headers.items()), body)
            if url.query:
                pairs = [pair.split("=", 1) for pair in url.query.split("&")]
                if kind == API_GATEWAY_V1:
                    event["queryStringParameters"] = {name: value for name, value in pairs}
                    event["multiValueQueryStringParameters"] = {name: [value] for name, value in pairs}
                else:
                    event["rawQueryString"] = url.query
            reply = reply_from_proxy_response(invoke(event))
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                if name != "content-length":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

        do_GET = do_POST = do_PUT = do_DELETE = do_OPTIONS = _answer

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            pass

    return ThreadingHTTPServer(("127.0.0.1", 0), Front)


def _serve(server: ThreadingHTTPServer) -> str:
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


def _ric_invoke(function: RicFunction) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        outcome, payload = function.api.invoke(event)
        assert outcome == "response", f"the handler raised: {payload}\n{function.server.log()}"
        return dict(payload)

    return invoke


@pytest.fixture(scope="module")
def fronts() -> Iterator[dict[str, ThreadingHTTPServer]]:
    """The HTTP servers this module starts, stopped when its tests end."""
    servers: dict[str, ThreadingHTTPServer] = {}
    yield servers
    for server in servers.values():
        server.shutdown()
        server.server_close()


@pytest.fixture(params=SERVINGS)
def base_url(request: pytest.FixtureRequest, fronts: dict[str, ThreadingHTTPServer]) -> str:
    """The function's base URL (with a trailing slash), once per way it is served; started on first use."""
    name = request.param
    if name == "functions_framework":
        return str(request.getfixturevalue("functions_framework_url")) + "/"
    if name == "local_server":
        return str(request.getfixturevalue("local_server_url")) + "/"
    if name not in fronts:
        if name == FUNCTION_URL:
            fronts[name] = lambda_front(_ric_invoke(request.getfixturevalue("ric_function")), FUNCTION_URL)
        else:
            handler = request.getfixturevalue("entry_modules")["handler.adapters.aws_lambda"].lambda_handler
            fronts[name] = lambda_front(lambda event: handler(event, None), API_GATEWAY_V1)
        _serve(fronts[name])
    return f"http://127.0.0.1:{fronts[name].server_address[1]}/"


@pytest.fixture(scope="module")
def keyed_url(startup: Startup, fronts: dict[str, ThreadingHTTPServer]) -> str:
    """A local server whose configuration requires ``API_KEY`` (TRANSLATE_API_KEYS)."""
    keyed = start(startup.config.with_overrides(api_keys=(API_KEY,)))
    assert keyed.error is None, keyed.error
    fronts["keyed"] = make_server(HttpApi(keyed), "127.0.0.1", 0)
    return _serve(fronts["keyed"])


# --- LibreTranslate: libretranslatepy ------------------------------------------------------------------------------
def test_libretranslate_translates_simplified_and_traditional(base_url: str) -> None:
    # GIVEN libretranslatepy pointed at the function WHEN it translates zh and zt text THEN English strings come back
    client = LibreTranslateAPI(base_url)
    simplified = client.translate("今天天气很好。", "zh", "en")
    traditional = client.translate("今天天氣很好。", "zt", "en")
    automatic = client.translate("今天天氣很好。", "auto", "en")
    assert isinstance(simplified, str) and simplified.strip()
    # the Traditional text becomes the Simplified one before translation, so all three agree
    assert traditional == simplified == automatic


def test_libretranslate_languages_and_detect(base_url: str) -> None:
    # LibreTranslate >= 1.7.2's codes (its language.py model2iso): zh-Hans and zh-Hant, and they translate
    client = LibreTranslateAPI(base_url)
    languages = {entry["code"]: entry for entry in client.languages()}
    assert languages["zh-Hans"]["targets"] == ["en"] and languages["zh-Hant"]["targets"] == ["en"]
    assert client.detect("这个电脑的内存不够")[0]["language"] == "zh-Hans"
    assert client.detect("這個電腦的記憶體不夠")[0]["language"] == "zh-Hant"
    assert client.translate("今天天氣很好。", "zh-Hant", "en") == client.translate("今天天气很好。", "zh-Hans", "en")


def test_libretranslate_refuses_other_pairs_in_its_error_shape(base_url: str) -> None:
    client = LibreTranslateAPI(base_url)
    with pytest.raises(urllib.error.HTTPError) as raised:
        client.translate("你好", "zh", "fr")
    assert raised.value.code == 400
    assert json.loads(raised.value.read()) == {"error": "fr is not supported"}  # LibreTranslate's words
    with pytest.raises(urllib.error.HTTPError) as raised:
        client.translate("Hallo", "de", "en")
    assert raised.value.code == 400
    assert json.loads(raised.value.read()) == {"error": "de is not supported"}


def test_libretranslate_limits_are_the_function_limits(base_url: str) -> None:
    with pytest.raises(urllib.error.HTTPError) as raised:
        LibreTranslateAPI(base_url).translate("好" * (MAX_CHARS + 1), "zh", "en")
    assert raised.value.code == 400
    assert "TRANSLATE_MAX_CHARS" in json.loads(raised.value.read())["error"]


def test_libretranslate_json_lists_and_settings(base_url: str) -> None:
    import urllib.request

    body = json.dumps({"q": ["你好。", "谢谢你。"], "source": "auto", "target": "en", "alternatives": 2}).encode()
    request = urllib.request.Request(base_url + "translate", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:  # noqa: S310 - loopback
        answer = json.loads(response.read())
    assert len(answer["translatedText"]) == 2 and all(isinstance(t, str) for t in answer["translatedText"])
    assert answer["detectedLanguage"] == [{"language": "zh-Hans", "confidence": 100.0}] * 2
    # up to 2 other translations of each text, distinct and none the main one
    assert len(answer["alternatives"]) == 2
    for main, others in zip(answer["translatedText"], answer["alternatives"], strict=True):
        assert len(others) <= 2 and len(set(others)) == len(others) and main not in others
        assert all(isinstance(other, str) and other for other in others)
    with urllib.request.urlopen(base_url + "frontend/settings") as response:  # noqa: S310 - loopback
        settings = json.loads(response.read())
    assert settings["charLimit"] == MAX_CHARS and settings["keyRequired"] is False


def test_libretranslate_health_as_its_own_health_check_asks(base_url: str) -> None:
    import urllib.request

    # scripts/healthcheck.py of LibreTranslate: GET /health with a JSON body {}, raise_for_status
    request = urllib.request.Request(base_url + "health", b"{}", {"Content-Type": "application/json"}, method="GET")
    with urllib.request.urlopen(request) as response:  # noqa: S310 - loopback
        assert json.loads(response.read()) == {"status": "ok"}
    with urllib.request.urlopen(base_url + "spec") as response:  # noqa: S310 - loopback
        assert "/translate" in json.loads(response.read())["paths"]
    suggest = urllib.request.Request(base_url + "suggest", b"q=a&s=b&source=zh&target=en")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(suggest)  # noqa: S310 - loopback
    assert raised.value.code == 403
    assert json.loads(raised.value.read()) == {"error": "Suggestions are disabled on this server."}


def test_own_api_still_answers_its_own_requests(base_url: str) -> None:
    import urllib.request

    body = json.dumps({"text": "你好。"}).encode()
    request = urllib.request.Request(base_url + "translate", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:  # noqa: S310 - loopback
        assert "translation" in json.loads(response.read())


# --- DeepL: the official client ----------------------------------------------------------------------------------
def _deepl(base_url: str, key: str = "any-key") -> deepl.Translator:
    return deepl.Translator(key, server_url=base_url.rstrip("/"), send_platform_info=False)


def test_deepl_translates_one_text_and_several(base_url: str) -> None:
    translator = _deepl(base_url)
    one = translator.translate_text("今天天气很好。", target_lang="EN-US")
    assert isinstance(one.text, str) and one.text.strip()
    assert one.detected_source_lang == "ZH" and one.billed_characters == len("今天天气很好。")
    several = translator.translate_text(["今天天气很好。", "今天天氣很好。"], source_lang="ZH", target_lang="en-gb")
    assert [result.text for result in several] == [one.text, one.text]  # Traditional converted first


def test_deepl_languages_and_usage(base_url: str) -> None:
    translator = _deepl(base_url)
    assert [language.code for language in translator.get_source_languages()] == ["ZH"]
    assert {language.code for language in translator.get_target_languages()} == {"EN-GB", "EN-US"}
    before = translator.get_usage().character.count
    translator.translate_text("你好", target_lang="EN-US")
    usage = translator.get_usage()
    assert usage.character.count >= (before or 0) + 2  # (another test may translate through the same instance)
    assert not usage.any_limit_reached


def test_deepl_refuses_other_pairs_with_its_status(base_url: str) -> None:
    translator = _deepl(base_url)
    with pytest.raises(deepl.DeepLException, match="this server translates Chinese") as raised:
        translator.translate_text("Hallo", source_lang="DE", target_lang="EN-US")
    assert raised.value.http_status_code == 400
    with pytest.raises(deepl.DeepLException, match="target_lang") as raised:
        translator.translate_text("你好", target_lang="FR")
    assert raised.value.http_status_code == 400


def test_deepl_request_too_large_is_413(base_url: str) -> None:
    with pytest.raises(deepl.DeepLException, match="TRANSLATE_MAX_CHARS") as raised:
        _deepl(base_url).translate_text("好" * (MAX_CHARS + 1), target_lang="EN-US")
    assert raised.value.http_status_code == 413


def test_libretranslate_alternatives_are_bounded(base_url: str) -> None:
    import urllib.request

    def ask(count: object) -> tuple[int, Any]:
        body = json.dumps({"q": "今天天气很好。", "source": "zh", "target": "en", "alternatives": count}).encode()
        request = urllib.request.Request(base_url + "translate", body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request) as response:  # noqa: S310 - loopback
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    # a huge count is refused at once (LibreTranslate #978), naming the limit; the limit itself is answered
    status, answer = ask(10_000)
    assert status == 400 and answer == {"error": "Invalid request: alternatives must be between 0 and 5"}
    status, answer = ask(5)
    assert status == 200 and len(answer["alternatives"]) <= 5
    assert len(set(answer["alternatives"])) == len(answer["alternatives"])
    assert answer["translatedText"] not in answer["alternatives"]
    assert ask(5) == (status, answer)  # deterministic


def test_deepl_glossaries_through_every_adapter(base_url: str) -> None:
    # GIVEN the deepl client WHEN it creates, reads, uses and deletes a glossary THEN every adapter answers alike
    translator = _deepl(base_url)
    created = translator.create_glossary("Everywhere", "ZH", "EN-US", {"人工智能": "artificial-intelligence-term"})
    assert translator.get_glossary(created.glossary_id).entry_count == 1
    assert translator.get_glossary_entries(created) == {"人工智能": "artificial-intelligence-term"}
    assert created.glossary_id in [glossary.glossary_id for glossary in translator.list_glossaries()]
    english = translator.translate_text("人工智能很重要。", source_lang="ZH", target_lang="EN-US", glossary=created)
    assert "artificial-intelligence-term" in english.text.lower()
    translator.delete_glossary(created)
    with pytest.raises(deepl.GlossaryNotFoundException):
        translator.get_glossary(created.glossary_id)


# --- API keys (TRANSLATE_API_KEYS) -------------------------------------------------------------------------------
def test_keys_are_required_when_configured(keyed_url: str) -> None:
    with pytest.raises(urllib.error.HTTPError) as raised:
        LibreTranslateAPI(keyed_url).translate("你好", "zh", "en")
    assert raised.value.code == 400  # LibreTranslate's answer to a missing key (app.py, access_check); a wrong one: 403
    with pytest.raises(urllib.error.HTTPError) as raised:
        LibreTranslateAPI(keyed_url, api_key="wrong").translate("你好", "zh", "en")
    assert raised.value.code == 403
    assert LibreTranslateAPI(keyed_url, api_key=API_KEY).translate("今天天气很好。", "zh", "en").strip()
    with pytest.raises(deepl.AuthorizationException):
        _deepl(keyed_url, "wrong-key").translate_text("你好", target_lang="EN-US")
    assert _deepl(keyed_url, API_KEY).translate_text("今天天气很好。", target_lang="EN-US").text.strip()


def test_get_parameters_arrive_through_every_adapter(base_url: str) -> None:
    import urllib.request

    with urllib.request.urlopen(base_url + "v2/languages?type=target") as response:  # noqa: S310 - loopback
        assert [entry["language"] for entry in json.loads(response.read())] == ["EN-GB", "EN-US"]
