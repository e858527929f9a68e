"""Each event decoder's malformed fields (issue 25): API Gateway v1 / v2 and Function URL events, S3 notifications and
Cloud Storage CloudEvent data that a test event, a replayed message or a misconfigured trigger can carry.

* An HTTP event that cannot be read as a request is answered 400 with this API's JSON error naming the field and
  what it must be (never a 500, never an exception out of the handler), through the real ``lambda_handler`` and
  through the awslambdaric process.
* A storage event with a malformed record fails with ``InvalidRequestError`` naming the record and field, before
  any object is read or written (the store is never touched); through awslambdaric the invocation's error is that
  typed error, so the platform's retries and dead-letter queue see what was wrong.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from handler.coldstart import Startup
from handler.errors import InvalidRequestError
from tests.adapters.conftest import RicFunction
from tests.events import (
    API_GATEWAY_V1,
    API_GATEWAY_V2,
    FUNCTION_URL,
    GCS_OBJECT_FINALIZED,
    S3_OBJECT_CREATED,
    load_event,
)

HTTP_KINDS = (API_GATEWAY_V1, API_GATEWAY_V2, FUNCTION_URL)
Edit = Callable[[dict[str, Any]], None]


def _http(event: dict[str, Any]) -> dict[str, Any]:
    """The event's requestContext.http (v2 and Function URLs) or, for v1, the event itself (httpMethod)."""
    return event["requestContext"]["http"] if "http" in event["requestContext"] else event


def _set(**fields: Any) -> Edit:
    return lambda event: event.update(fields)


def _headers(value: Any) -> Edit:
    def edit(event: dict[str, Any]) -> None:
        event["headers"] = value
        event.pop("multiValueHeaders", None)

    return edit


def _query(value: Any) -> Edit:
    return _set(queryStringParameters=value, multiValueQueryStringParameters=None)


HTTP_CASES: list[tuple[str, Edit, str]] = [
    ("body not base64", _set(body="***", isBase64Encoded=True), r"the event says the body is base64 but it is not"),
    ("base64 body not ASCII", _set(body="你好", isBase64Encoded=True), r"base64 but it is not: .*outside base64"),
    ("flag a string", _set(body="{}", isBase64Encoded="true"), r"isBase64Encoded must be true or false; got str"),
    ("body a number", _set(body=5, isBase64Encoded=False), r"body must be a string \(base64 when isBase64Encoded"),
    ("body an object", _set(body={"text": "你好"}), r"body must be a string .*got dict"),
    ("body a surrogate", _set(body='{"text": "\ud800"}', isBase64Encoded=False), r"body holds an unpaired UTF-16"),
    (
        "base64 of invalid UTF-8",
        _set(body=base64.b64encode(b'{"text": "\xff"}').decode(), isBase64Encoded=True),
        r"the body is not UTF-8 encoded JSON",
    ),
    ("headers a list", _headers(["content-type"]), r"headers must be an object \(or null\); got list"),
    ("header value a list", _headers({"content-type": ["application/json"]}), r"headers\['content-type'\] must be"),
    ("method missing", lambda event: _http(event).pop("httpMethod" if "httpMethod" in event else "method"), r""),
    ("method empty", lambda event: _http(event).update({"httpMethod" if "httpMethod" in event else "method": ""}), r""),
]
V1_CASES: list[tuple[str, Edit, str]] = [
    ("multi header a string", _set(multiValueHeaders={"content-type": "x"}), r"\['content-type'\] must be a list"),
    (
        "query a list",
        _query([1]),
        r"queryStringParameters must be an object",
    ),
    (
        "query a surrogate",
        _query({"q": "\udc00"}),
        r"query string parameters hold an unpaired",
    ),
    ("path an object", _set(path={"a": 1}), r"path must be a string; got dict"),
]
V2_CASES: list[tuple[str, Edit, str]] = [
    ("raw query a list", _set(rawQueryString=["a=1"]), r"rawQueryString must be a string; got list"),
    ("raw path an object", _set(rawPath={"a": 1}), r"rawPath must be a string; got dict"),
    ("stage a list", lambda event: event["requestContext"].update(stage=["prod"]), r"requestContext.stage must be"),
]


def http_cases() -> list[Any]:
    cases = []
    for kind in HTTP_KINDS:
        for name, edit, pattern in HTTP_CASES + (V1_CASES if kind == API_GATEWAY_V1 else V2_CASES):
            cases.append(pytest.param(kind, edit, pattern, id=f"{kind}-{name}"))
    return cases


def malformed(kind: str, edit: Edit) -> dict[str, Any]:
    event = load_event(kind)
    edit(event)
    return event


def assert_400(response: dict[str, Any], pattern: str) -> None:
    assert response["statusCode"] == 400, response
    error = json.loads(response["body"])["error"]
    assert error["code"] == "invalid_request" and re.search(pattern, error["message"]), error
    assert response["headers"]["X-Request-Id"]


@pytest.mark.parametrize(("kind", "edit", "pattern"), http_cases())
def test_a_malformed_http_event_is_a_400_naming_the_field(
    entry_modules: dict[str, Any], kind: str, edit: Edit, pattern: str
) -> None:
    event = malformed(kind, edit)
    if kind == API_GATEWAY_V1 and "httpMethod" not in event:  # no longer an API Gateway event at all
        with pytest.raises(InvalidRequestError, match=r"unsupported event: expected an API Gateway REST"):
            entry_modules["handler.adapters.aws_lambda"].lambda_handler(event, None)
        return
    method_pattern = r"(httpMethod|requestContext.http.method) must be a non-empty string"
    assert_400(entry_modules["handler.adapters.aws_lambda"].lambda_handler(event, None), pattern or method_pattern)


@pytest.mark.parametrize(
    ("kind", "edit", "pattern"),
    [case for case in http_cases() if case.values[0] == FUNCTION_URL and case.values[2]],
)
def test_a_malformed_http_event_is_a_400_through_awslambdaric(
    ric_function: RicFunction, kind: str, edit: Edit, pattern: str
) -> None:
    outcome, payload = ric_function.api.invoke(malformed(kind, edit))
    assert outcome == "response", payload
    assert_400(payload, pattern)


# --- storage notifications ----------------------------------------------------------------------------------
class UntouchableStore:
    """A store that fails the test if anything is read or written through it."""

    scheme = "s3"

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the store was used ({name}) for a malformed event")


def _record(event: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = event["Records"][0]
    return record


def _key(value: Any) -> Edit:
    return lambda event: _record(event)["s3"]["object"].update(key=value)


S3_CASES: list[tuple[str, Edit, str]] = [
    ("Records an object", lambda event: event.update(Records={"0": {}}), r""),
    (
        "a record a string",
        lambda event: event["Records"].append("ObjectCreated:Put"),
        r"unsupported event: .*or an S3 event notification",
    ),
    ("key missing", lambda event: _record(event)["s3"]["object"].pop("key"), r"record 0: s3.object.key is missing"),
    ("key a number", _key(5), r"s3.object.key is a int, not a non-empty string"),
    ("key empty", _key(""), r"s3.object.key is a str, not a non-empty string"),
    ("key a lone surrogate", _key("inbox/\ud800.txt"), r"s3.object.key holds an unpaired UTF-16 surrogate"),
    ("key escapes not UTF-8", _key("inbox/%FF%FE.txt"), r"percent-escapes that are not UTF-8"),
    ("key escapes a surrogate", _key("%ED%A0%80.txt"), r"percent-escapes that are not UTF-8"),
    ("bucket a list", lambda event: _record(event)["s3"]["bucket"].update(name=["b"]), r"s3.bucket.name is a list"),
    ("s3 a string", lambda event: _record(event).update(s3="uploads"), r"s3.bucket.name is missing"),
]


@pytest.mark.parametrize(("name", "edit", "pattern"), S3_CASES, ids=[case[0] for case in S3_CASES])
def test_a_malformed_s3_record_fails_typed_before_any_object_is_touched(
    entry_modules: dict[str, Any], startup: Startup, name: str, edit: Edit, pattern: str
) -> None:
    adapter = entry_modules["handler.adapters.aws_lambda"].LambdaAdapter(startup, store=UntouchableStore())
    event = malformed(S3_OBJECT_CREATED, edit)
    with pytest.raises(InvalidRequestError, match=pattern or r"unsupported event|Records is not a list") as raised:
        adapter.handle(event, None)
    assert raised.value.code == "invalid_request"


def test_a_malformed_s3_record_is_the_invocations_typed_error_through_awslambdaric(ric_function: RicFunction) -> None:
    outcome, payload = ric_function.api.invoke(malformed(S3_OBJECT_CREATED, _key("inbox/%FF.txt")))
    assert outcome == "error", payload
    assert payload["errorType"] == "InvalidRequestError"
    assert "percent-escapes that are not UTF-8" in payload["errorMessage"]


def test_a_key_that_decodes_to_odd_but_valid_text_is_kept_as_decoded(entry_modules: dict[str, Any]) -> None:
    from handler.storage.events import s3_created_objects

    event = malformed(S3_OBJECT_CREATED, _key("a+b%2Bc%20%E6%96%B0.txt"))
    assert [ref.key for ref in s3_created_objects(event)] == ["a b+c 新.txt"]


GCS_CASES: list[tuple[str, Any, str]] = [
    ("data a list", ["bucket", "name"], r"Cloud Storage event data is list, not an object with bucket and name"),
    ("data bytes", b'{"bucket": "b"}', r"event data is bytes"),
    ("name missing", {"bucket": "b"}, r"Cloud Storage event data: name is missing"),
    ("name a number", {"bucket": "b", "name": 7}, r"name is a int, not a non-empty string"),
    ("bucket empty", {"bucket": "", "name": "a.txt"}, r"bucket is a str, not a non-empty string"),
    ("name a lone surrogate", {"bucket": "b", "name": "\udc80.txt"}, r"name holds an unpaired UTF-16 surrogate"),
]


@pytest.mark.parametrize(("name", "data", "pattern"), GCS_CASES, ids=[case[0] for case in GCS_CASES])
def test_malformed_cloud_storage_data_fails_typed_before_any_object_is_touched(
    entry_modules: dict[str, Any], startup: Startup, name: str, data: Any, pattern: str
) -> None:
    gcp = entry_modules["handler.adapters.gcp"]
    adapter = gcp.GcpAdapter(startup, store=UntouchableStore())
    with pytest.raises(InvalidRequestError, match=pattern):
        adapter.handle_storage_event(gcp.STORAGE_FINALIZED, data)


@pytest.mark.parametrize("data", [None, ["a"], "work/x", {"name": 5}, {"bucket": "b"}])
def test_malformed_data_on_the_parts_trigger_is_ignored_not_retried(
    entry_modules: dict[str, Any], startup: Startup, data: Any
) -> None:
    # the output bucket's trigger ignores every object that is not a fan-out part; data without a part's name is
    # no part, and nothing is read (retrying it could never succeed)
    gcp = entry_modules["handler.adapters.gcp"]
    assert gcp.GcpAdapter(startup, store=UntouchableStore()).handle_part_event(gcp.STORAGE_FINALIZED, data) is None


def test_the_sample_events_stay_well_formed() -> None:
    # the cases above edit these samples; unedited they decode (a guard against editing the samples themselves)
    from handler.storage.events import s3_created_objects, storage_object

    assert s3_created_objects(load_event(S3_OBJECT_CREATED))
    assert storage_object(load_event(GCS_OBJECT_FINALIZED)["data"]).key
