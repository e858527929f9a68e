"""The access log and request ids (``handler.api.access_log``), read from the real output of functions-framework as
``make run`` starts it: one JSON line per request with id, route, status, sizes and time; the caller's
``X-Request-Id`` (or the platform's trace id) kept and returned; a secret sentence sent every way a request can carry
text (our API, the drop-in APIs, the query string, a path, an error) never reaches the log, and does with
``TRANSLATE_LOG_TEXT=1``, which shows the capture sees what it would have to.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from handler.api.router import HttpApi, HttpRequest
from handler.coldstart import Startup
from tests.adapters.conftest import RealHttpClient, Reply, ServerProcess, function_env, start_functions_framework

pytestmark = pytest.mark.slow

SECRET = "机密合同编号七七四九"  # a sentence no log may hold
SECRET_FORMS = (SECRET, json.dumps(SECRET)[1:-1], urllib.parse.quote(SECRET), SECRET.encode("utf-8").hex())
JSON_HEADERS = {"Content-Type": "application/json"}
ACCESS_FIELDS = {"time", "severity", "message", "request_id", "method", "route", "status", "request_bytes",
                 "response_bytes", "duration_ms"}  # fmt: skip


@dataclass
class Served:
    server: ServerProcess
    client: RealHttpClient

    def access_lines(self) -> list[dict[str, Any]]:
        lines = [json.loads(line) for line in self.server.log().splitlines() if line.startswith("{")]
        return [line for line in lines if line.get("logger") == "handler.access"]

    def line_for(self, request_id: str, timeout_s: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:  # the line is written before the response, but stderr may lag
            found = [line for line in self.access_lines() if line["request_id"] == request_id]
            if found:
                assert len(found) == 1, found
                return found[0]
            time.sleep(0.1)
        raise AssertionError(f"no access line for {request_id}:\n{self.server.log()[-3000:]}")


def serve(bundle: Path, folder: Path, **env: str) -> Iterator[Served]:
    server, url = start_functions_framework("translate_http", function_env(bundle, **env), folder)
    yield Served(server, RealHttpClient("functions_framework", url))
    server.stop()


@pytest.fixture(scope="module")
def served(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(tiny_bundle_dir, tmp_path_factory.mktemp("access-log"))


@pytest.fixture(scope="module")
def served_with_text(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(tiny_bundle_dir, tmp_path_factory.mktemp("access-log-text"), TRANSLATE_LOG_TEXT="1")


def send_secret_every_way(client: RealHttpClient, tag: str) -> list[tuple[str, Reply]]:
    """The secret in every place a request can carry text; each request with its own X-Request-Id."""
    quoted = urllib.parse.quote(SECRET)
    requests: list[tuple[str, str, dict[str, str], bytes]] = [
        ("POST", "/translate", JSON_HEADERS, json.dumps({"text": SECRET})),
        ("POST", "/translate", JSON_HEADERS, json.dumps({"texts": [SECRET, "你好"], "spans": True})),
        ("POST", "/translate", JSON_HEADERS, json.dumps({"text": SECRET, "glossary": {SECRET: "X"}})),
        ("POST", "/translate", JSON_HEADERS, json.dumps({"text": SECRET, "colour": SECRET})),  # 400
        ("POST", "/translate", JSON_HEADERS, json.dumps({"text": SECRET * 40})),  # 413
        ("POST", "/translate", {"Content-Type": "text/plain"}, SECRET),  # 415
        ("POST", "/translate", JSON_HEADERS, json.dumps({"q": SECRET, "source": "zh", "target": "en"})),
        ("POST", "/detect", JSON_HEADERS, json.dumps({"q": SECRET})),
        ("POST", "/v2/translate", JSON_HEADERS, json.dumps({"text": [SECRET], "target_lang": "EN-US"})),
        ("GET", f"/translate?q={quoted}", {}, ""),  # 405
        ("GET", f"/languages?q={quoted}", {}, ""),
        ("GET", f"/{quoted}", {}, ""),  # 404
    ]
    replies = []
    for index, (method, path, headers, body) in enumerate(requests):
        request_id = f"{tag}-{index}"
        if body.startswith("{") and index % 2:  # every other JSON body with the characters unescaped
            body = json.dumps(json.loads(body), ensure_ascii=False)
        data = body.encode("utf-8")
        reply = client.call(method, path, {**headers, "X-Request-Id": request_id}, data)
        assert reply.headers["x-request-id"] == request_id
        replies.append((request_id, reply))
    return replies


def test_every_request_is_one_json_access_line_and_the_secret_is_never_logged(served: Served) -> None:
    # GIVEN the secret sent every way WHEN the server's output is read THEN each request has one JSON line ...
    replies = send_secret_every_way(served.client, "quiet")
    assert [reply.status for _, reply in replies] == [200, 200, 200, 400, 413, 415, 200, 200, 200, 405, 200, 404]
    for request_id, reply in replies:
        line = served.line_for(request_id)
        assert ACCESS_FIELDS <= set(line), line
        assert line["status"] == reply.status and line["response_bytes"] == len(reply.body)
        assert line["request_bytes"] >= 0 and line["duration_ms"] >= 0
        assert "?" not in line["route"]
    assert served.line_for("quiet-3")["error_code"] == "invalid_request"
    assert served.line_for("quiet-11")["route"] == "(unknown)"
    # ... AND neither the secret nor a translation of it appears anywhere in the output
    log = served.server.log()
    for form in SECRET_FORMS:
        assert form not in log
    for _, reply in replies[:2]:
        english = reply.json().get("translation") or reply.json()["translations"][0]
        assert len(english) < 8 or english not in log
    assert all(line.startswith("{") for line in log.splitlines() if "handler." in line), (
        "a handler log line is not JSON"
    )


def test_with_log_text_the_bodies_are_logged(served_with_text: Served) -> None:
    # the same requests with TRANSLATE_LOG_TEXT=1: the secret is there, so the test above would see it
    send_secret_every_way(served_with_text.client, "debug")
    for request_id in ("debug-0", "debug-1"):  # escaped and unescaped
        line = served_with_text.line_for(request_id)
        assert any(form in line["request_body"] for form in SECRET_FORMS) and "translation" in line["response_body"]
    assert urllib.parse.quote(SECRET) in served_with_text.line_for("debug-9")["query"]


def test_request_ids_the_callers_the_platforms_or_a_new_one(served: Served) -> None:
    trace = "105445aa7843bc8bf206b12000100000"
    reply = served.client.call("GET", "/healthz", {"X-Cloud-Trace-Context": f"{trace}/1;o=1"})
    assert reply.headers["x-request-id"] == trace
    parent = "0af7651916cd43dd8448eb211c80319c"
    reply = served.client.call("GET", "/healthz", {"traceparent": f"00-{parent}-b7ad6b7169203331-01"})
    assert reply.headers["x-request-id"] == parent
    first = served.client.call("GET", "/healthz").headers["x-request-id"]
    second = served.client.call("GET", "/healthz").headers["x-request-id"]
    assert first != second and len(first) == 32
    # an id that could forge a log line or flood it is replaced
    for bad in ("a b", "x" * 129, 'id"}\n{"forged": 1'):
        replaced = served.client.call("GET", "/healthz", {"X-Request-Id": bad.replace("\n", " ")})
        assert replaced.headers["x-request-id"] != bad and len(replaced.headers["x-request-id"]) == 32
    served.line_for(first)


def test_lambda_events_use_the_platforms_request_id(entry_modules: dict[str, Any]) -> None:
    from tests.adapters.conftest import API_GATEWAY_V2, http_event, reply_from_proxy_response

    event = http_event(API_GATEWAY_V2, "GET", "/healthz", {}, b"")
    event["requestContext"]["requestId"] = "JKJaXmPLvHcESHA="
    reply = reply_from_proxy_response(entry_modules["handler.adapters.aws_lambda"].lambda_handler(event, None))
    assert reply.headers["x-request-id"] == "JKJaXmPLvHcESHA="


def test_an_unexpected_error_logs_its_traceback_and_answers_without_it(
    startup: Startup, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a service that fails unexpectedly, with the JSON lines handler on stderr
    import logging

    from handler.api.access_log import JsonLinesFormatter

    api = HttpApi(startup)

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError(f"boom in {Path(__file__).name}")

    monkeypatch.setattr(startup.service, "translate_detailed", broken)
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLinesFormatter())
    logging.getLogger("handler").addHandler(handler)
    try:
        body = json.dumps({"text": "你好"}).encode()
        response = api.handle(HttpRequest.create("POST", "/translate", {**JSON_HEADERS, "X-Request-Id": "r-500"}, body))
    finally:
        logging.getLogger("handler").removeHandler(handler)
    # THEN the answer is 500 with no trace, path or exception text, and the log has the traceback under the id
    assert response.status == 500 and response.headers["X-Request-Id"] == "r-500"
    for leak in ("Traceback", "File ", ".py", "boom", "RuntimeError"):
        assert leak not in response.body_text()
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    failure = next(line for line in lines if line["logger"] == "handler.api.router")
    assert failure["request_id"] == "r-500" and "Traceback" in failure["exception"] and "boom" in failure["exception"]
    access = next(line for line in lines if line["logger"] == "handler.access")
    assert access["status"] == 500 and access["severity"] == "ERROR" and access["error_code"] == "internal_error"


def test_a_request_the_adapter_could_not_decode_is_answered_like_any_other(
    startup: Startup, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN an adapter that could not decode a request (a Lambda body that is not the base64 its event says)
    from handler.errors import InvalidRequestError

    request = HttpRequest.create("POST", "/translate", {"X-Request-Id": "r-bad-body"})
    with caplog.at_level(logging.INFO, logger="handler.access"):
        response = HttpApi(startup).handle(request, refused=InvalidRequestError("the body is not base64"))
    # THEN the refusal carries the request id and the headers, and has its access line
    assert response.status == 400 and json.loads(response.body)["error"]["code"] == "invalid_request"
    assert response.headers["X-Request-Id"] == "r-bad-body" and response.headers["X-Content-Type-Options"] == "nosniff"
    lines = [record for record in caplog.records if record.name == "handler.access"]
    assert len(lines) == 1 and lines[0].request_id == "r-bad-body" and lines[0].status == 400  # type: ignore[attr-defined]
