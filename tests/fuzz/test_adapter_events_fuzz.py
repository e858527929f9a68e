"""Fuzzing the Lambda adapter's event decoding: API Gateway v1/v2 and Function URL events of any shape.

A platform event is JSON another program built; a malformed one (a test event, a hand-written invocation) must be
answered with a proxy response (400 when it cannot be read as a request), or refused with ``InvalidRequestError``
when it matches no supported shape; never another exception.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handler.api.messages import HttpRequest
from handler.coldstart import Startup
from handler.errors import TranslatorError
from tests.fuzz.settings import examples
from tests.fuzz.shipped import NEEDS_SHIPPED_BUNDLE, shipped_config, shipped_service

pytestmark = NEEDS_SHIPPED_BUNDLE

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
methods = st.sampled_from(["GET", "POST", "HEAD", "OPTIONS"]) | json_values
paths = st.sampled_from(["/", "/healthz", "/translate", "/prod/translate"]) | json_values
bodies = st.sampled_from(['{"text": "你好"}', "eyJ0ZXh0IjogIuS9oOWlvSJ9", "not json", ""]) | json_values
headers = st.sampled_from([{"content-type": "application/json"}, {}]) | json_values
v1_events = st.fixed_dictionaries(
    {"httpMethod": methods, "requestContext": st.dictionaries(st.text(max_size=6), json_values, max_size=2)},
    optional={
        "path": paths,
        "headers": headers,
        "multiValueHeaders": json_values,
        "queryStringParameters": json_values,
        "multiValueQueryStringParameters": json_values,
        "body": bodies,
        "isBase64Encoded": st.booleans() | json_values,
    },
)
v2_events = st.fixed_dictionaries(
    {
        "version": st.just("2.0"),
        "requestContext": st.fixed_dictionaries(
            {"http": st.fixed_dictionaries({}, optional={"method": methods, "path": paths})},
            optional={
                "stage": st.sampled_from(["$default", "prod"]) | json_values,
                "domainName": st.sampled_from(["x.lambda-url.us-east-1.on.aws", "api.example.com"]) | json_values,
                "requestId": json_values,
            },
        ),
    },
    optional={
        "rawPath": paths,
        "rawQueryString": json_values,
        "headers": headers,
        "body": bodies,
        "isBase64Encoded": st.booleans() | json_values,
    },
)


@pytest.fixture(scope="module")
def adapter() -> Any:
    from handler.adapters.aws_lambda import LambdaAdapter

    config = shipped_config(max_chars=40, beam_size=1)
    return LambdaAdapter(Startup(config, shipped_service(max_chars=40, beam_size=1), None, 0.0))


@given(event=v1_events | v2_events | json_values)
@examples(80)
def test_any_http_event_is_answered_with_a_proxy_response(adapter: Any, event: Any) -> None:
    try:
        response = adapter.handle(event, None)
    except TranslatorError as error:  # no supported shape: the Lambda invocation fails with our typed error
        assert error.code == "invalid_request"
        return
    assert response["statusCode"] in (200, 204, 400, 404, 405, 413, 415), response
    assert isinstance(response["body"], str)
    if response["statusCode"] >= 400 and response["body"]:  # (HEAD is answered without a body)
        assert json.loads(response["body"])["error"]["message"]


# --- the drop-in APIs' routes and the bodies they read ------------------------------------------------------
# each route of the DeepL and LibreTranslate descriptions (handler.api.openapi deepl_paths, libretranslate_paths)
# and this server's /translate, which LibreTranslate's shares
DROP_IN_ROUTES = {
    "/v2/translate": "deepl",
    "/v2/languages": "deepl",
    "/v2/usage": "deepl",
    "/v2/document": "deepl",  # not a route of this server: DeepL's 404
    "/translate": "either",
    "/detect": "libretranslate",
    "/languages": "libretranslate",
    "/frontend/settings": "libretranslate",
}
field_names = st.sampled_from(
    ["text", "q", "target_lang", "source_lang", "target", "source", "format", "tag_handling", "type", "auth_key",
     "api_key", "alternatives", "glossary_id", "q[]", "text[]", "context"]
)  # fmt: skip
field_values = (
    st.sampled_from(["你好", "EN-US", "en", "zh", "ZH-HANT", "html", "target", "", "2"])
    | st.text(max_size=8)
    | st.text(st.characters(categories=["Cs", "Lo"]), max_size=3)  # lone surrogates, as JSON can carry them
)
HOSTILE_VALUES = ["\ud800", "EN\udfff", "ZH\ud800", "", " ", "\x00", [], [None], {}, 5, -0.0, True, None]
DEEPL_NAMES = ["text", "target_lang", "source_lang", "tag_handling", "type", "auth_key", "glossary_id", "text[]"]
LIBRE_NAMES = ["q", "source", "target", "format", "api_key", "alternatives", "q[]"]
names_for = {
    "deepl": st.sampled_from(DEEPL_NAMES),
    "libretranslate": st.sampled_from(LIBRE_NAMES),
    "either": st.sampled_from(LIBRE_NAMES + ["text", "texts", "beam_size", "glossary", "source", "format", "x\ud800"]),
}
VALID_REQUESTS = {
    "deepl": {"text": ["你好"], "target_lang": "EN-US"},
    "libretranslate": {"q": ["你好"], "source": "auto", "target": "en", "alternatives": 1},
}
json_numbers = st.sampled_from(["1e999", "-1e999", "NaN", "Infinity", "-0", "2.5", "1" * 40, "true", "null"])


@st.composite
def drop_in_bodies(draw: st.DrawFn, route: str) -> tuple[dict[str, str], bytes]:
    """A body of each type a drop-in client sends, valid or broken: JSON objects (with number forms JSON parsers
    disagree on, deep nesting), form fields (repeated, bracketed, percent-escapes), multipart, other encodings."""
    kind = draw(st.sampled_from(["json", "json", "json", "json-raw", "form", "form", "multipart", "bytes", "none"]))
    if kind == "json":
        # a valid request of either API (or none), with some of its fields replaced or added
        templates = [
            {},
            *(VALID_REQUESTS[name] for name in VALID_REQUESTS if DROP_IN_ROUTES[route] in (name, "either")),
        ]
        payload = dict(draw(st.sampled_from(templates)))
        for _ in range(draw(st.integers(1, 3))):  # one to three fields replaced or added, most with a hostile value
            others = field_values | st.lists(field_values, max_size=3) | json_values
            hostile = draw(st.booleans())  # half of the values are of the kinds that broke an API before
            payload[draw(names_for[DROP_IN_ROUTES[route]])] = draw(
                st.sampled_from(HOSTILE_VALUES) if hostile else others
            )
        return {"Content-Type": "application/json"}, json.dumps(payload, ensure_ascii=draw(st.booleans())).encode(
            "utf-8", "surrogatepass"
        )
    if kind == "json-raw":  # literals json.dumps never writes, nesting beyond the limit, other encodings
        name, number = draw(field_names), draw(json_numbers)
        depth = draw(st.sampled_from([1, 40, 2000]))
        nested = "[" * depth + "]" * depth
        text = f'{{"{name}": {number}, "q": "你好", "target": "en", "x": {nested}}}'
        encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-be", "utf-32", "gb18030"]))
        return {"Content-Type": "application/json"}, text.encode(encoding)
    if kind == "form":
        pairs = draw(st.lists(st.tuples(field_names, field_values), max_size=6))
        body = "&".join(f"{name}={value}" for name, value in pairs) + draw(st.sampled_from(["", "&%", "&q=%FF", "&=&"]))
        return {"Content-Type": "application/x-www-form-urlencoded"}, body.encode("utf-8", "surrogatepass")
    if kind == "multipart":
        boundary = draw(st.sampled_from(["B", "", '"x y"']))
        body = draw(st.sampled_from([b'--B\r\nContent-Disposition: form-data; name="q"\r\n\r\nx\r\n--B--\r\n', b"--"]))
        return {"Content-Type": f"multipart/form-data; boundary={boundary}"}, body
    if kind == "bytes":
        content_type = draw(st.sampled_from(["application/json", "text/plain", "application/xml", ""]))
        return ({"Content-Type": content_type} if content_type else {}), draw(st.binary(max_size=40))
    return {}, b""


@pytest.mark.parametrize("route", sorted(DROP_IN_ROUTES))
@given(
    method=st.sampled_from(["POST", "POST", "GET", "HEAD", "PUT"]),
    query=st.sampled_from(["", "?type=target", "?type=a&type=b", "?auth_key=%FF", "?%", "?q=x&q[]=y"]),
    data=st.data(),
    coding=st.sampled_from([None, None, None, "gzip"]),
)
@examples(120)
def test_any_drop_in_request_is_answered_below_500_in_its_apis_shape(
    adapter: Any, route: str, method: str, query: str, data: st.DataObject, coding: str | None
) -> None:
    headers, raw = data.draw(drop_in_bodies(route), label="body")
    if coding:
        headers = {**headers, "Content-Encoding": coding}
    response = adapter.http.handle(HttpRequest.create(method, route + query, headers, raw))
    assert response.status < 500, (response.status, response.body[:300])
    if response.status < 400 or not response.body:  # (HEAD is answered without a body)
        return
    answer = json.loads(response.body)
    shapes = {  # each API's error body: DeepL's message, LibreTranslate's error string, this server's error object
        "deepl": isinstance(answer, dict) and isinstance(answer.get("message"), str),
        "libretranslate": isinstance(answer, dict) and isinstance(answer.get("error"), str),
        "own": isinstance(answer, dict) and isinstance(answer.get("error"), dict) and answer["error"].get("message"),
    }
    expected = DROP_IN_ROUTES[route]
    assert shapes["own"] or shapes["libretranslate"] if expected == "either" else shapes[expected], answer


# --- the storage event decoders --------------------------------------------------------------------------------
keys = st.sampled_from(["a.txt", "%FF.txt", "%ED%A0%80", "a+b%2B.txt", "\ud800", "", "../x.txt"]) | json_values
s3_records = st.fixed_dictionaries(
    {},
    optional={
        "eventSource": st.just("aws:s3") | json_values,
        "eventName": st.sampled_from(["ObjectCreated:Put", "ObjectRemoved:Delete"]) | json_values,
        "s3": st.fixed_dictionaries(
            {},
            optional={
                "bucket": st.fixed_dictionaries({}, optional={"name": st.just("b") | json_values}) | json_values,
                "object": st.fixed_dictionaries({}, optional={"key": keys, "size": json_values}) | json_values,
            },
        )
        | json_values,
    },
)


@given(event=st.fixed_dictionaries({"Records": st.lists(s3_records | json_values, max_size=3) | json_values}))
@examples(150)
def test_any_s3_notification_decodes_or_fails_typed(event: Any) -> None:
    from handler.storage.events import s3_created_objects

    try:
        objects = s3_created_objects(event)
    except TranslatorError as error:
        assert error.code == "invalid_request" and str(error).startswith("S3 event")
        return
    for ref in objects:  # what comes out names an object: non-empty, valid Unicode bucket and key
        assert ref.bucket and ref.key and ref.key.encode("utf-8") and ref.bucket.encode("utf-8")


@given(data=st.fixed_dictionaries({}, optional={"bucket": keys, "name": keys, "size": json_values}) | json_values)
@examples(150)
def test_any_cloud_storage_event_data_decodes_or_fails_typed(data: Any) -> None:
    from handler.storage.events import storage_object

    try:
        ref = storage_object(data)
    except TranslatorError as error:
        assert error.code == "invalid_request" and str(error).startswith("Cloud Storage event data")
        return
    assert ref.bucket and ref.key and ref.key.encode("utf-8") and ref.bucket.encode("utf-8")
