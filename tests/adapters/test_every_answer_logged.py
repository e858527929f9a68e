"""Every HTTP answer of every adapter has exactly one access line, the adapters' own refusals included.

Requests an adapter refuses before the HTTP surface reads them: a Lambda event whose body is not the base64 it
says, or whose fields are of the wrong type; the local server's Content-Length that is not a number, a method it
has no handler for, a request line it cannot parse, a header line too long; the paths functions-framework answers
itself (``/robots.txt``, ``/favicon.ico``). Each answer carries a request id, the security headers and a JSON
error, and its access line (the real adapters: ``handler.adapters.aws_lambda``'s entry point,
``handler.adapters.local_server``'s server on loopback, ``make run``'s functions-framework server) has the id, route,
status and sizes, never the text.
Bound: ~15 s with the tiny bundle (one functions-framework server).
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.conftest import (
    API_GATEWAY_V1,
    FUNCTION_URL,
    RealHttpClient,
    ServerProcess,
    function_env,
    http_event,
    reply_from_proxy_response,
    start_functions_framework,
)

pytestmark = pytest.mark.slow

SECRET = "机密合同编号七七四九"


def _access_records(caplog: pytest.LogCaptureFixture, request_id: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "handler.access" and getattr(r, "request_id", None) == request_id]


def _assert_refusal(headers: dict[str, str], body: bytes, status: int, code: str) -> str:
    assert json.loads(body)["error"]["code"] == code, body
    assert headers["x-content-type-options"] == "nosniff" and headers["content-type"].startswith("application/json")
    return headers["x-request-id"]


# --- AWS Lambda ----------------------------------------------------------------------------------------------
def test_lambda_events_it_cannot_decode_have_their_access_line(
    entry_modules: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    lambda_handler = entry_modules["handler.adapters.aws_lambda"].lambda_handler
    # a Function URL event whose body is not the base64 it says
    bad_base64 = http_event(FUNCTION_URL, "POST", "/translate", {"X-Request-Id": "lambda-bad-base64"}, b"")
    bad_base64.update(body="%%%not-base64", isBase64Encoded=True)
    non_ascii = http_event(FUNCTION_URL, "POST", "/translate", {"X-Request-Id": "lambda-non-ascii"}, b"")
    non_ascii.update(body=SECRET, isBase64Encoded=True)
    # an API Gateway REST event with a header list that is not a list
    malformed = http_event(API_GATEWAY_V1, "POST", "/translate", {"X-Request-Id": "lambda-malformed"}, b"")
    malformed["multiValueHeaders"] = {"X-Request-Id": 7}
    # an event with a method of the wrong type and no readable path or headers
    unreadable = http_event(API_GATEWAY_V1, "GET", "/healthz", {}, b"")
    unreadable.update(httpMethod=["GET"], path=None, headers=None, multiValueHeaders={"a": 1})
    unreadable["requestContext"]["requestId"] = "lambda-unreadable"
    with caplog.at_level(logging.INFO, logger="handler.access"):
        replies = {
            name: reply_from_proxy_response(lambda_handler(event, None))
            for name, event in (
                ("lambda-bad-base64", bad_base64),
                ("lambda-non-ascii", non_ascii),
                ("lambda-malformed", malformed),
                ("lambda-unreadable", unreadable),
            )
        }
    for request_id, reply in replies.items():
        assert reply.status == 400, reply
        assert _assert_refusal(reply.headers, reply.body, 400, "invalid_request") == request_id
        [line] = _access_records(caplog, request_id)
        assert line.status == 400 and line.error_code == "invalid_request"  # type: ignore[attr-defined]
        assert line.response_bytes == len(reply.body) and line.request_bytes == 0  # type: ignore[attr-defined]
    assert _access_records(caplog, "lambda-bad-base64")[0].route == "/translate"  # type: ignore[attr-defined]
    assert "base64 but it is not" in json.loads(replies["lambda-bad-base64"].body)["error"]["message"]
    assert _access_records(caplog, "lambda-unreadable")[0].route == "(unknown)"  # type: ignore[attr-defined]
    assert _access_records(caplog, "lambda-unreadable")[0].method == "-"  # type: ignore[attr-defined]
    assert SECRET not in caplog.text


# --- the local server ----------------------------------------------------------------------------------------
def _raw_exchange(url: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """One request as bytes on a new connection; the status, headers and body of the answer."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(raw)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(65536)
            assert chunk, received
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        while len(body) < int(headers.get("content-length", "0")):
            chunk = connection.recv(65536)
            assert chunk, body
            body += chunk
    return int(lines[0].split()[1]), headers, body


def test_the_local_servers_own_refusals_have_their_access_line(
    local_server_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    cases = [
        (b"POST /translate HTTP/1.1\r\nX-Request-Id: local-length\r\nContent-Length: abc\r\n\r\n", 400,
         "invalid_request", "/translate"),
        (b"TRACE /translate HTTP/1.1\r\nX-Request-Id: local-trace\r\n\r\n", 405, "method_not_allowed", "/translate"),
        (("GARBAGE " + SECRET + "\r\n\r\n").encode(), 400, "invalid_request", "(unknown)"),
        (b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431, "request_too_large", "/healthz"),
    ]  # fmt: skip
    with caplog.at_level(logging.INFO, logger="handler.access"):
        answers = [(_raw_exchange(local_server_url, raw), *expected) for raw, *expected in cases]
        time.sleep(0.2)  # the line is written before the answer; the server thread may still be finishing
    for (status, headers, body), want_status, code, route in answers:
        assert status == want_status, body
        request_id = _assert_refusal(headers, body, status, code)
        [line] = _access_records(caplog, request_id)
        assert line.status == status and type(line.status) is int and line.route == route  # type: ignore[attr-defined]
        assert line.response_bytes == len(body)  # type: ignore[attr-defined]
    assert answers[1][0][1]["allow"] == "POST, OPTIONS"
    assert SECRET not in caplog.text


# --- functions-framework (make run, Cloud Run) ---------------------------------------------------------------
@pytest.fixture(scope="module")
def served(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, str]]:
    server, url = start_functions_framework(
        "translate_http", function_env(tiny_bundle_dir), tmp_path_factory.mktemp("every-answer")
    )
    yield server, url
    server.stop()


def test_the_paths_functions_framework_answers_itself_reach_the_function(served: tuple[ServerProcess, str]) -> None:
    server, url = served
    client = RealHttpClient("functions_framework", url)
    for path in ("/robots.txt", "/favicon.ico"):
        request_id = f"ff{path.replace('/', '-').replace('.', '-')}"
        reply = client.call("GET", path, {"X-Request-Id": request_id})
        assert reply.status == 404, reply
        assert _assert_refusal(reply.headers, reply.body, 404, "not_found") == request_id
        deadline = time.monotonic() + 10
        while True:
            records = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
            lines = [r for r in records if r.get("logger") == "handler.access" and r.get("request_id") == request_id]
            if lines or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert len(lines) == 1, server.log()[-3000:]
        assert lines[0]["status"] == 404 and lines[0]["route"] == "(unknown)"
        assert lines[0]["response_bytes"] == len(reply.body)
