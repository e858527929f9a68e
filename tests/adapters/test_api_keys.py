"""API keys (``handler.api.keys``) through functions-framework as ``make run`` starts it, keys from both
``TRANSLATE_API_KEYS`` and ``TRANSLATE_API_KEYS_FILE``: 401 with the JSON error shape and ``WWW-Authenticate``
without a valid key, every accepted way of presenting one, the precedence between them, the drop-in APIs' own
key fields, the open routes (page, health, description) saying a key is required without showing it, and the
comparison running over every configured key.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from handler.api import keys as api_keys
from handler.api.keys import ApiKeys, presented_key
from handler.coldstart import start
from handler.config import ENV_API_KEYS_FILE, RuntimeConfig, read_key_file
from handler.errors import ConfigurationError
from tests.adapters.conftest import RealHttpClient, function_env, start_functions_framework

pytestmark = pytest.mark.slow

ENV_KEY = "env-key-7f3a9c"
FILE_KEYS = ("file-key-one-51d2", "file-key-two-c08e")
ALL_KEYS = (ENV_KEY, *FILE_KEYS)
JSON_HEADERS = {"Content-Type": "application/json"}
BODY = json.dumps({"text": "你好。"}).encode()


@pytest.fixture(scope="module")
def keyed(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealHttpClient]:
    folder = tmp_path_factory.mktemp("keys")
    key_file = folder / "api-keys.txt"
    key_file.write_text(f"# the service's keys\n{FILE_KEYS[0]}\n\n  {FILE_KEYS[1]}  \n", encoding="utf-8")
    env = function_env(tiny_bundle_dir, TRANSLATE_API_KEYS=ENV_KEY, TRANSLATE_API_KEYS_FILE=str(key_file))
    server, url = start_functions_framework("translate_http", env, folder)
    yield RealHttpClient("functions_framework", url)
    server.stop()


def assert_unauthorized(reply, pattern: str) -> None:  # type: ignore[no-untyped-def]
    assert reply.status == 401, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    error = reply.json()["error"]
    assert error["code"] == "unauthorized" and pattern in error["message"]
    assert "Bearer" in reply.headers["www-authenticate"] and "X-API-Key" in reply.headers["www-authenticate"]
    assert not any(key in reply.text for key in ALL_KEYS)


# --- this server's API ------------------------------------------------------------------------------------
def test_without_a_key_translate_is_401(keyed: RealHttpClient) -> None:
    assert_unauthorized(keyed.call("POST", "/translate", JSON_HEADERS, BODY), "an API key is required")


@pytest.mark.parametrize(
    "headers",
    [
        {"X-API-Key": "wrong"},
        {"Authorization": "Bearer wrong"},
        {"X-API-Key": ENV_KEY[:-1]},
        {"X-API-Key": ENV_KEY + "x"},
    ],
)
def test_a_wrong_key_is_401(keyed: RealHttpClient, headers: dict[str, str]) -> None:
    assert_unauthorized(keyed.call("POST", "/translate", {**JSON_HEADERS, **headers}, BODY), "not valid")


@pytest.mark.parametrize("key", ALL_KEYS)
@pytest.mark.parametrize("scheme", ["X-API-Key", "Bearer"])
def test_every_configured_key_passes_in_either_header(keyed: RealHttpClient, key: str, scheme: str) -> None:
    header = {"X-API-Key": key} if scheme == "X-API-Key" else {"Authorization": f"Bearer {key}"}
    reply = keyed.call("POST", "/translate", {**JSON_HEADERS, **header}, BODY)
    assert reply.status == 200, reply.text
    assert reply.json()["translation"]


def test_x_api_key_comes_before_authorization(keyed: RealHttpClient) -> None:
    # GIVEN Authorization holding something else (on Google Cloud: the platform's identity token)
    right_header = {"X-API-Key": ENV_KEY, "Authorization": "Bearer eyJ-an-identity-token"}
    assert keyed.call("POST", "/translate", {**JSON_HEADERS, **right_header}, BODY).status == 200
    wrong_header = {"X-API-Key": "wrong", "Authorization": f"Bearer {ENV_KEY}"}
    assert_unauthorized(keyed.call("POST", "/translate", {**JSON_HEADERS, **wrong_header}, BODY), "not valid")


def test_an_unrelated_authorization_scheme_is_no_key(keyed: RealHttpClient) -> None:
    headers = {**JSON_HEADERS, "Authorization": f"AWS4-HMAC-SHA256 Credential={ENV_KEY}"}
    assert_unauthorized(keyed.call("POST", "/translate", headers, BODY), "an API key is required")


# --- the open routes --------------------------------------------------------------------------------------
def test_page_health_and_description_stay_open_and_say_a_key_is_required(keyed: RealHttpClient) -> None:
    page = keyed.call("GET", "/")
    health = keyed.call("GET", "/healthz")
    description = keyed.call("GET", "/openapi.json")
    assert page.status == health.status == description.status == 200
    assert '"keyRequired": true' in page.text and 'id="api-key"' in page.text
    assert health.json()["api_key_required"] is True
    assert "requires an API key" in description.json()["info"]["description"]
    preflight = keyed.call("OPTIONS", "/translate", {"Origin": "https://allowed.example"})
    assert preflight.status == 204 and "X-API-Key" in preflight.headers["access-control-allow-headers"]
    for reply in (page, health, description, preflight):
        assert not any(key in reply.text for key in ALL_KEYS)


# --- the drop-in APIs: their own key fields, and this server's headers -----------------------------------
def test_libretranslate_takes_its_api_key_field_or_the_headers(keyed: RealHttpClient) -> None:
    def translate(fields: dict[str, str], headers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
        body = json.dumps({"q": "你好", "source": "zh", "target": "en", **fields}).encode()
        return keyed.call("POST", "/translate", {**JSON_HEADERS, **(headers or {})}, body)

    assert translate({}).status == 400 and "api_key" in translate({}).json()["error"]  # LibreTranslate: no key 400
    assert translate({"api_key": "wrong"}).status == 403
    assert translate({"api_key": FILE_KEYS[1]}).status == 200
    assert translate({}, {"X-API-Key": ENV_KEY}).status == 200
    assert translate({"api_key": ENV_KEY}, {"X-API-Key": "wrong"}).status == 403  # the header comes first
    settings = keyed.call("GET", "/frontend/settings").json()
    assert settings["keyRequired"] is True and not any(key in json.dumps(settings) for key in ALL_KEYS)


def test_deepl_takes_its_auth_header_or_auth_key_or_ours(keyed: RealHttpClient) -> None:
    def usage(headers: dict[str, str], query: str = "") -> int:
        return keyed.call("GET", "/v2/usage" + query, headers).status

    assert usage({}) == 403
    assert usage({"Authorization": "DeepL-Auth-Key wrong"}) == 403
    assert usage({"Authorization": f"DeepL-Auth-Key {FILE_KEYS[0]}"}) == 200
    assert usage({}, f"?auth_key={ENV_KEY}") == 200
    assert usage({"X-API-Key": ENV_KEY}) == 200
    assert usage({"Authorization": f"Bearer {ENV_KEY}"}) == 200


# --- the scheme itself --------------------------------------------------------------------------------------
def test_the_comparison_runs_over_every_configured_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN three keys WHEN the first, the last or no key matches THEN all three are compared every time
    keys = ApiKeys.of(ALL_KEYS)
    calls: list[int] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append(len(a))
        return real(a, b)

    monkeypatch.setattr(api_keys.hmac, "compare_digest", counting)
    for presented, expected in ((ALL_KEYS[0], True), (ALL_KEYS[-1], True), ("nope", False), ("", False)):
        calls.clear()
        assert keys.accepts(presented) is expected
        assert calls == [32, 32, 32]  # SHA-256 digests: equal lengths, whatever the keys' lengths
    assert ApiKeys.of(()).accepts(None) and not keys.accepts(None)


def test_precedence_of_the_presented_key() -> None:
    both = {"x-api-key": "a", "authorization": "Bearer b"}
    assert presented_key(both, "c") == "a"
    assert presented_key({"authorization": "DeepL-Auth-Key b"}, "c") == "b"
    assert presented_key({"authorization": "Basic dXNlcjpwdw=="}, "c") == "c"
    assert presented_key({}, None) is None


def test_a_key_file_that_cannot_be_used_stops_the_start_naming_the_variable(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("# no key yet\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=ENV_API_KEYS_FILE + ".*holds no key"):
        read_key_file(empty, ENV_API_KEYS_FILE)
    failed = start(environ={ENV_API_KEYS_FILE: str(tmp_path / "missing.txt")})
    assert isinstance(failed.error, ConfigurationError) and ENV_API_KEYS_FILE in str(failed.error)
    assert failed.service is None  # nothing translates: the keys could not be read, so nothing may pass
    keys = RuntimeConfig.from_env({"TRANSLATE_API_KEYS": "a, b,,", ENV_API_KEYS_FILE: str(_file(tmp_path, "b\nc"))})
    assert keys.api_keys == ("a", "b", "c")


def _file(folder: Path, text: str) -> Path:
    path = folder / "keys.txt"
    path.write_text(text, encoding="utf-8")
    return path
