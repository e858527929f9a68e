"""Security headers through the real server (functions-framework as ``make run`` starts it), and CORS with
``TRANSLATE_CORS_ORIGINS=*`` through the standard-library server: the headers a scanner expects on the page, the
API's on every other answer (errors and the drop-in APIs included), HSTS only behind HTTPS.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest

from handler.adapters.local_server import make_server
from handler.api.router import PAGE_SECURITY_HEADERS, SECURITY_HEADERS, HttpApi
from handler.coldstart import Startup
from tests.adapters.conftest import RealHttpClient

pytestmark = pytest.mark.slow

JSON_HEADERS = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def real(functions_framework_url: str) -> RealHttpClient:
    return RealHttpClient("functions_framework", functions_framework_url)


def test_the_page_has_every_header_a_scanner_expects(real: RealHttpClient) -> None:
    headers = real.call("GET", "/").headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["cross-origin-opener-policy"] == "same-origin"
    assert headers["cross-origin-resource-policy"] == "same-origin"
    assert "camera=()" in headers["permissions-policy"] and "microphone=()" in headers["permissions-policy"]
    assert headers["cache-control"] == "no-cache"
    policy = headers["content-security-policy"]
    for directive in ("default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'"):
        assert directive in policy
    assert "script-src 'sha256-" in policy and "unsafe-eval" not in policy
    assert "strict-transport-security" not in headers  # plain HTTP on loopback: HSTS would be ignored or wrong


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/translate", {"text": "你好"}),
        ("POST", "/translate", {"text": 5}),  # 400
        ("GET", "/healthz", None),
        ("GET", "/openapi.json", None),
        ("GET", "/nope", None),  # 404
        ("GET", "/languages", None),  # LibreTranslate
        ("POST", "/v2/translate", {"text": ["你好"], "target_lang": "EN-US"}),  # DeepL
    ],
)
def test_every_api_answer_has_the_api_headers(real: RealHttpClient, method: str, path: str, body: object) -> None:
    data = json.dumps(body).encode() if body is not None else b""
    reply = real.call(method, path, JSON_HEADERS if body is not None else {}, data)
    assert reply.headers["content-type"].startswith("application/json")
    for name, value in SECURITY_HEADERS.items():
        assert reply.headers[name.lower()] == value, name
    assert "no-store" in reply.headers["cache-control"] or path == "/openapi.json"
    for name in PAGE_SECURITY_HEADERS:  # the page's own are not needed on JSON
        assert name.lower() not in reply.headers or name == "Cache-Control"


def test_hsts_behind_https(real: RealHttpClient) -> None:
    reply = real.call("GET", "/healthz", {"X-Forwarded-Proto": "https"})
    assert reply.headers["strict-transport-security"].startswith("max-age=")


# --- CORS with "*" ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def any_origin(startup: Startup) -> Iterator[RealHttpClient]:
    opened = Startup(startup.config.with_overrides(cors_origins=("*",)), startup.service, None, 0.0)
    server = make_server(HttpApi(opened), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield RealHttpClient("local_server", f"http://127.0.0.1:{server.server_address[1]}")
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("origin", ["https://anyone.example", "http://localhost:3000"])
def test_cors_star_allows_every_origin(any_origin: RealHttpClient, origin: str) -> None:
    body = json.dumps({"text": "你好"}).encode()
    reply = any_origin.call("POST", "/translate", {**JSON_HEADERS, "Origin": origin}, body)
    assert reply.status == 200
    assert reply.headers["access-control-allow-origin"] == "*"
    assert "vary" not in reply.headers  # the same answer for every origin
    assert reply.headers["access-control-expose-headers"] == "X-Request-Id"
    preflight = any_origin.call("OPTIONS", "/translate", {"Origin": origin, "Access-Control-Request-Method": "POST"})
    assert preflight.status == 204 and preflight.headers["access-control-allow-origin"] == "*"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert "X-API-Key" in preflight.headers["access-control-allow-headers"]


def test_cors_star_adds_nothing_without_an_origin(any_origin: RealHttpClient) -> None:
    reply = any_origin.call("GET", "/healthz")
    assert "access-control-allow-origin" not in reply.headers
