"""API keys: which key a request presents, which keys are accepted, and what a refused client is told.

``presented_key`` and ``ApiKeys`` are checked directly (the header names are lower-case, as every adapter hands
them to the core), then through ``HttpApi.handle`` on the shipped bundle: the whole key, nothing but the key.
"""

from __future__ import annotations

import json

import pytest

from handler.api.keys import ApiKeys, presented_key
from handler.api.router import HttpApi, HttpRequest
from handler.coldstart import Startup
from handler.service import TranslationService
from tests.fuzz.shipped import needs_shipped_bundle, shipped_config, shipped_model

KEY = "k-0123456789abcdef"
OTHER = "k-fedcba9876543210"
CHALLENGE = 'Bearer realm="zh-en-translate", ApiKey realm="zh-en-translate", header="X-API-Key"'


# --- which key a request presents -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "parameter", "expected"),
    [
        ({"x-api-key": KEY}, None, KEY),
        ({"x-api-key": f"  {KEY}\t"}, None, KEY),
        ({"authorization": f"Bearer {KEY}"}, None, KEY),
        ({"authorization": f"bearer {KEY}"}, None, KEY),
        ({"authorization": f"BEARER {KEY}"}, None, KEY),
        ({"authorization": f"DeepL-Auth-Key {KEY}"}, None, KEY),
        ({"authorization": f"deepl-auth-key {KEY}:fx"}, None, f"{KEY}:fx"),
        ({"authorization": f"  Bearer   {KEY}  "}, None, KEY),
        ({}, KEY, KEY),
        ({}, None, None),
        ({}, "", None),
        ({"x-api-key": ""}, None, None),
        ({"x-api-key": "   "}, None, None),
        ({"authorization": ""}, None, None),
        ({"authorization": "Bearer"}, None, None),
        ({"authorization": "Bearer    "}, None, None),
        ({"authorization": "Bearer "}, KEY, KEY),
        ({"authorization": f"Basic {KEY}"}, None, None),
        ({"authorization": f"Token {KEY}"}, None, None),
        ({"authorization": f"Bearerx {KEY}"}, None, None),
        ({"authorization": "AWS4-HMAC-SHA256 Credential=AKIA/20261201/us-east-1/lambda/aws4_request"}, None, None),
        ({"authorization": "AWS4-HMAC-SHA256 Credential=AKIA"}, KEY, KEY),
    ],
)
def test_the_presented_key(headers: dict[str, str], parameter: str | None, expected: str | None) -> None:
    assert presented_key(headers, parameter) == expected
    if parameter is None:
        assert presented_key(headers) == expected


def test_the_api_key_header_comes_first_then_authorization_then_the_parameter() -> None:
    assert presented_key({"x-api-key": KEY, "authorization": f"Bearer {OTHER}"}, "third") == KEY
    assert presented_key({"authorization": f"Bearer {OTHER}"}, "third") == OTHER
    assert presented_key({"x-api-key": " ", "authorization": f"Bearer {OTHER}"}, "third") == OTHER
    assert presented_key({"authorization": "Basic abc"}, "third") == "third"
    # on Google Cloud, Authorization carries the platform's identity token: X-API-Key wins over it
    assert presented_key({"authorization": "Bearer eyJhbGciOi.identity.token", "x-api-key": KEY}) == KEY


def test_header_names_are_the_lower_case_ones_the_adapters_hand_over() -> None:
    # the core sees lower-case names; a capitalised name is not the header
    assert presented_key({"X-API-Key": KEY}) is None
    assert presented_key({"Authorization": f"Bearer {KEY}"}) is None


# --- which keys are accepted ------------------------------------------------------------------------------------


def test_without_configured_keys_every_request_passes() -> None:
    for keys in (ApiKeys(), ApiKeys.of(())):
        assert keys.required is False
        assert keys.accepts(None) is True
        assert keys.accepts("") is True
        assert keys.accepts("anything") is True


def test_only_the_whole_key_is_accepted() -> None:
    keys = ApiKeys.of((KEY,))
    assert keys.required is True
    assert keys.accepts(KEY) is True
    refused = [
        None,
        "",
        KEY[:-1],  # a prefix
        KEY[:4],
        KEY + "0",  # the key and more
        KEY + " ",
        " " + KEY,
        KEY.upper(),
        KEY[1:],
        "x" + KEY[1:],
        KEY[:-1] + "0",
    ]
    for key in refused:
        assert keys.accepts(key) is False, repr(key)


def test_every_configured_key_is_accepted_and_only_those() -> None:
    keys = ApiKeys.of((KEY, OTHER, "third-key"))
    assert [keys.accepts(key) for key in (KEY, OTHER, "third-key")] == [True, True, True]
    assert keys.accepts("fourth-key") is False
    assert keys.accepts(KEY + OTHER) is False
    assert ApiKeys.of((KEY,)).accepts(OTHER) is False


def test_an_empty_configured_key_does_not_open_the_door() -> None:
    keys = ApiKeys.of(("",))
    assert keys.required is True
    assert keys.accepts("") is False
    assert keys.accepts(None) is False
    assert keys.accepts("x") is False


def test_keys_are_kept_only_as_digests() -> None:
    keys = ApiKeys.of((KEY, "ключ-密钥"))
    assert len(keys.digests) == 2
    assert all(isinstance(digest, bytes) and len(digest) == 32 for digest in keys.digests)
    assert KEY not in repr(keys) and KEY.encode() not in b"".join(keys.digests)
    assert keys.accepts("ключ-密钥") is True
    assert keys.accepts("ключ-密") is False


def test_a_key_with_a_lone_surrogate_is_compared_not_crashed_on() -> None:
    # a header decoded with surrogateescape can hold lone surrogates; the check refuses them, raising nothing
    keys = ApiKeys.of((KEY,))
    assert keys.accepts("\udcff" + KEY) is False
    assert keys.accepts("\ud800") is False
    assert ApiKeys.of(("\udcff",)).accepts("\udcff") is True
    assert ApiKeys.of(("\udcff",)).accepts("\udcfe") is False


def test_the_challenge_names_both_schemes() -> None:
    assert ApiKeys.of((KEY,)).www_authenticate() == CHALLENGE
    assert ApiKeys().www_authenticate() == CHALLENGE


# --- through the API -------------------------------------------------------------------------------------------


def keyed_api(*keys: str) -> HttpApi:
    settings = shipped_config(api_keys=keys, max_chars=50, beam_size=1)
    return HttpApi(Startup(settings, TranslationService(shipped_model(), settings), None, 0.0))


def translate(api: HttpApi, headers: dict[str, str]) -> tuple[int, dict[str, object], dict[str, str]]:
    response = api.handle(
        HttpRequest.create("POST", "/translate", {"Content-Type": "application/json", **headers}, b'{"text": "2026"}')
    )
    return response.status, json.loads(response.body), response.headers


@needs_shipped_bundle
def test_the_api_accepts_the_whole_key_in_any_of_its_headers_and_refuses_a_prefix() -> None:
    api = keyed_api(KEY, OTHER)
    for headers in (
        {"X-API-Key": KEY},
        {"x-api-key": OTHER},
        {"Authorization": f"Bearer {KEY}"},
        {"Authorization": f"DeepL-Auth-Key {OTHER}"},
    ):
        status, body, _ = translate(api, headers)
        assert status == 200, (headers, body)
        assert body["translation"] == "2026"
    for headers in ({"X-API-Key": KEY[:-1]}, {"X-API-Key": KEY + "x"}, {"Authorization": f"Bearer {KEY[:8]}"}):
        status, body, response_headers = translate(api, headers)
        assert status == 401, headers
        assert body["error"]["message"].startswith("the API key is not valid: ")  # type: ignore[index]
        assert response_headers["WWW-Authenticate"] == CHALLENGE
        assert KEY[:8] not in json.dumps(body)
    status, body, _ = translate(api, {"Authorization": f"Basic {KEY}"})
    assert status == 401
    assert body["error"]["message"].startswith("an API key is required: ")  # type: ignore[index]
