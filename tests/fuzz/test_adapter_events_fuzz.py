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
