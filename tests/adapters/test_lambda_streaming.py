"""AWS Lambda response streaming, through the image's entry point and a Lambda Runtime API on loopback.

The function process is the image's: ``python -m handler.adapters.lambda_streaming`` with the handler a streaming
Function URL runs (``handler.adapters.aws_lambda.streaming_handler``, what the template's
``FunctionUrlInvokeMode: RESPONSE_STREAM`` sets). The Runtime API (``tests/adapters/lambda_runtime_api.py``) reads
the streamed response chunk by chunk and records when each arrived, so the tests see what a Function URL client
sees: the HTTP prelude, then the NDJSON lines as the function writes them. Also here: the protocol's error trailers,
the buffered answers that must stay as they were (API Gateway events, ``lambda_handler``), and the deadline every
Lambda HTTP request carries (the invocation's remaining time less ``TRANSLATE_DEADLINE_MARGIN_S``).
"""

from __future__ import annotations

import base64
import gzip
import json
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from awslambdaric.lambda_context import LambdaContext

from handler.adapters.lambda_streaming import (
    ERROR_BODY_TRAILER,
    ERROR_TYPE_TRAILER,
    HTTP_INTEGRATION_RESPONSE,
    PRELUDE_SEPARATOR,
    StreamedHttpResponse,
    post_streamed_response,
)
from handler.api.messages import HttpResponse
from tests.adapters.conftest import (
    AWS_TEST_ENV,
    REPO_ROOT,
    ServerProcess,
    function_env,
    http_event,
    subprocess_env,
)
from tests.adapters.lambda_runtime_api import (
    FunctionUrlStream,
    Invocation,
    LambdaRuntimeApi,
    read_function_url_stream,
)
from tests.events import API_GATEWAY_V1, API_GATEWAY_V2, FUNCTION_URL

STREAMING_HANDLER = "handler.adapters.aws_lambda.streaming_handler"
DEADLINE_MARGIN_S = 2.0  # the function's TRANSLATE_DEADLINE_MARGIN_S: an invocation with less time left is late
JSON_HEADERS = {"content-type": "application/json"}


def dev_sentences(count: int, start: int = 0) -> list[str]:
    """``count`` Chinese sentences of the repository's dev set, from sentence ``start``."""
    with gzip.open(REPO_ROOT / "data" / "corpus" / "dev.zh-en.tsv.gz", "rt", encoding="utf-8") as lines:
        return [line.split("\t", 1)[0] for _, line in zip(range(start + count), lines, strict=False)][start:]


@dataclass
class StreamingFunction:
    api: LambdaRuntimeApi
    server: ServerProcess


@pytest.fixture(scope="module")
def streaming_function(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamingFunction]:
    """The image's entry point running the streaming handler, against a Runtime API on loopback."""
    api = LambdaRuntimeApi().start()
    env = function_env(
        tiny_bundle_dir,
        TRANSLATE_MAX_CHARS="20000",
        TRANSLATE_MAX_TEXTS="64",
        TRANSLATE_DEADLINE_MARGIN_S=str(DEADLINE_MARGIN_S),
    )
    variables = subprocess_env({**env, **AWS_TEST_ENV, "AWS_LAMBDA_RUNTIME_API": api.address})
    command = [sys.executable, "-m", "handler.adapters.lambda_streaming", STREAMING_HANDLER]
    log = tmp_path_factory.mktemp("lambda-streaming") / f"function-{uuid.uuid4().hex[:6]}.log"
    server = ServerProcess(command, variables, log)
    yield StreamingFunction(api, server)
    server.stop()
    api.stop()


def read_streamed(invocation: Invocation, function: StreamingFunction) -> FunctionUrlStream:
    try:
        answer = read_function_url_stream(invocation)
    except (AssertionError, TimeoutError) as error:
        raise AssertionError(f"{error}\n{function.server.log()}") from None
    outcome, _ = invocation.wait(30)
    assert outcome == "response", function.server.log()
    return answer


def function_url_post(body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    return http_event(FUNCTION_URL, "POST", "/translate", {**JSON_HEADERS, **(headers or {})}, payload)


# --- streaming for real -----------------------------------------------------------------------------------------
def test_a_function_url_translation_streams_segment_by_segment_through_the_runtime_api(
    streaming_function: StreamingFunction,
) -> None:
    sentences = dev_sentences(48)
    invocation = streaming_function.api.start_invocation(
        function_url_post({"text": "".join(sentences), "stream": True})
    )
    answer = read_streamed(invocation, streaming_function)

    # the Runtime API's streaming mode, as the protocol names it
    headers = invocation.headers
    assert headers["lambda-runtime-function-response-mode"] == "streaming"
    assert headers["transfer-encoding"] == "chunked"
    assert headers["content-type"] == HTTP_INTEGRATION_RESPONSE
    assert {name.strip() for name in headers["trailer"].split(",")} == {ERROR_TYPE_TRAILER, ERROR_BODY_TRAILER}
    assert invocation.trailers == {}
    # the Function URL's prelude: the status and headers as JSON, then exactly eight NUL bytes
    assert answer.first_chunk.endswith(b"}" + b"\0" * 8)
    assert answer.prelude["statusCode"] == 200
    assert answer.prelude["headers"]["Content-Type"].startswith("application/x-ndjson")
    assert answer.prelude["cookies"] == []

    segments, progress, done = answer.of_type("segment"), answer.of_type("progress"), answer.of_type("done")
    assert [line["type"] for _, line in answer.lines][-1] == "done" and len(done) == 1
    assert [line["index"] for _, line in segments] == list(range(len(segments)))
    assert done[0][1]["segments"] == len(segments) >= len(sentences) // 2
    assert len(progress) >= 4, "several decoded batches, each reported"
    # each line is its own chunk, written when it was ready: the first segment came in its own chunk, before the
    # progress of later batches, and the chunks arrived spread over the decoding, not in one burst at the end
    later_progress = [arrived for arrived, line in progress if line["done"] < line["total"]]
    assert segments[0][0] < later_progress[-1] < done[0][0]
    answer.streamed_while_decoding()


def test_the_streamed_translation_equals_the_buffered_one(streaming_function: StreamingFunction) -> None:
    text = "".join(dev_sentences(12))
    answer = read_streamed(
        streaming_function.api.start_invocation(function_url_post({"text": text, "stream": True})), streaming_function
    )
    outcome, buffered = streaming_function.api.invoke(
        http_event(API_GATEWAY_V2, "POST", "/translate", JSON_HEADERS, json.dumps({"text": text}).encode("utf-8"))
    )
    assert outcome == "response" and buffered["statusCode"] == 200
    assert answer.of_type("done")[0][1]["translation"] == json.loads(buffered["body"])["translation"]


def test_server_sent_events_stream_with_their_own_content_type(streaming_function: StreamingFunction) -> None:
    event = function_url_post({"text": "".join(dev_sentences(4)), "stream": True}, {"accept": "text/event-stream"})
    invocation = streaming_function.api.start_invocation(event)
    chunks = [chunk for _, chunk in invocation.chunks_as_they_come(timeout_s=120)]
    prelude, _, _ = chunks[0].partition(PRELUDE_SEPARATOR)
    assert json.loads(prelude)["headers"]["Content-Type"].startswith("text/event-stream")
    body = b"".join(chunks[1:]).decode("utf-8")
    assert body.startswith("event: ") and "event: done\n" in body


def test_a_whole_answer_to_a_streaming_function_url_goes_with_the_prelude_too(
    streaming_function: StreamingFunction,
) -> None:
    """RESPONSE_STREAM makes the Function URL read every answer's status and headers from the prelude."""
    invocation = streaming_function.api.start_invocation(function_url_post({"text": "你好。"}))
    chunks = [chunk for _, chunk in invocation.chunks_as_they_come(timeout_s=120)]
    prelude, separator, _ = chunks[0].partition(PRELUDE_SEPARATOR)
    assert separator and json.loads(prelude)["statusCode"] == 200
    assert json.loads(b"".join(chunks[1:]))["translation"]
    refused = streaming_function.api.start_invocation(function_url_post({"text": "你好。", "beam_size": 99}))
    chunks = [chunk for _, chunk in refused.chunks_as_they_come(timeout_s=120)]
    assert json.loads(chunks[0].partition(PRELUDE_SEPARATOR)[0])["statusCode"] == 400
    assert "error" in json.loads(b"".join(chunks[1:]))


# --- errors after the body began: the protocol's trailers ---------------------------------------------------------
def test_an_error_after_the_body_began_ends_it_with_the_error_trailers() -> None:
    api = LambdaRuntimeApi().start()
    closed: list[bool] = []

    def body() -> Iterator[bytes]:
        try:
            yield b'{"type":"segment","index":0}\n'
            raise RuntimeError("the model broke after the first segment")
        finally:
            closed.append(True)

    try:
        invocation = api.start_invocation({})
        response = HttpResponse(200, {"Content-Type": "application/x-ndjson"}, b"", stream=body())
        post_streamed_response(api.address, invocation.request_id, StreamedHttpResponse(response))
        outcome, payload = invocation.wait(10)
    finally:
        api.stop()
    assert outcome == "response" and closed == [True]
    assert [chunk for _, chunk in invocation.chunks][1:] == [b'{"type":"segment","index":0}\n']
    assert payload.startswith(b'{"statusCode":200,')
    assert invocation.trailers[ERROR_TYPE_TRAILER] == "Function.RuntimeError"
    error = json.loads(base64.b64decode(invocation.trailers[ERROR_BODY_TRAILER]))
    assert error["errorType"] == "RuntimeError"
    assert error["errorMessage"] == "the model broke after the first segment"
    assert any("the model broke" in line for line in error["stackTrace"])


# --- what stays buffered ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", [API_GATEWAY_V1, API_GATEWAY_V2])
def test_api_gateway_events_are_answered_buffered_by_the_streaming_handler(
    streaming_function: StreamingFunction, kind: str
) -> None:
    body = json.dumps({"text": "".join(dev_sentences(3)), "stream": True}).encode("utf-8")
    invocation = streaming_function.api.start_invocation(http_event(kind, "POST", "/translate", JSON_HEADERS, body))
    outcome, payload = invocation.wait(120)
    assert outcome == "response" and not invocation.streamed
    assert payload["statusCode"] == 200 and payload["headers"]["Content-Type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in payload["body"].splitlines()]
    assert lines[-1]["type"] == "done" and lines[-1]["segments"] == len([x for x in lines if x["type"] == "segment"])


def test_a_non_http_event_is_still_the_invocations_error(streaming_function: StreamingFunction) -> None:
    outcome, payload = streaming_function.api.invoke({"unexpected": True})
    assert outcome == "error" and payload["errorType"] == "InvalidRequestError", payload


def test_lambda_handler_answers_a_function_url_stream_whole(entry_modules: dict[str, ModuleType]) -> None:
    handler = entry_modules["handler.adapters.aws_lambda"].lambda_handler
    response = handler(function_url_post({"text": "你好。今天天气很好。", "stream": True}), None)
    assert response["statusCode"] == 200 and response["isBase64Encoded"] is False
    lines = [json.loads(line) for line in response["body"].splitlines()]
    assert [line["type"] for line in lines].count("segment") >= 1 and lines[-1]["type"] == "done"


# --- the invocation's time limit --------------------------------------------------------------------------------
def test_a_request_that_cannot_finish_before_the_invocation_ends_is_refused_at_once(
    streaming_function: StreamingFunction,
) -> None:
    began = time.monotonic()
    invocation = streaming_function.api.start_invocation(
        function_url_post({"text": "".join(dev_sentences(8))}), time_limit_s=DEADLINE_MARGIN_S / 2
    )
    chunks = [chunk for _, chunk in invocation.chunks_as_they_come(timeout_s=120)]
    prelude = json.loads(chunks[0].partition(PRELUDE_SEPARATOR)[0])
    error = json.loads(b"".join(chunks[1:]))["error"]
    assert prelude["statusCode"] == 503 and error["code"] == "deadline_exceeded", error
    assert '"stream": true' in error["message"] and "timeout" in error["message"]
    assert time.monotonic() - began < 30


def test_a_streamed_request_past_the_invocations_time_ends_with_an_error_line(
    streaming_function: StreamingFunction,
) -> None:
    fresh = "".join(dev_sentences(8, start=100))  # none in the translation memory, which answers without decoding
    invocation = streaming_function.api.start_invocation(
        function_url_post({"text": fresh, "stream": True}), time_limit_s=DEADLINE_MARGIN_S / 2
    )
    answer = read_streamed(invocation, streaming_function)
    assert answer.prelude["statusCode"] == 200
    *_, (_, last) = answer.lines
    assert last["type"] == "error" and last["error"]["code"] == "deadline_exceeded", last
    assert "nothing was translated" in last["error"]["message"]
    assert not answer.of_type("done")


def test_api_gateway_requests_carry_the_invocations_remaining_time(entry_modules: dict[str, ModuleType]) -> None:
    adapter = entry_modules["handler.adapters.aws_lambda"]._ADAPTER
    margin = adapter.startup.config.deadline_margin_s
    body = json.dumps({"text": "你好。今天天气很好。"}).encode("utf-8")
    event = http_event(API_GATEWAY_V1, "POST", "/translate", JSON_HEADERS, body)

    def context(seconds_left: float) -> LambdaContext:
        return LambdaContext(str(uuid.uuid4()), None, None, int((time.time() + seconds_left) * 1000))

    late = adapter.handle(event, context(margin / 2))
    assert late["statusCode"] == 503 and json.loads(late["body"])["error"]["code"] == "deadline_exceeded"
    in_time = adapter.handle(event, context(margin + 120))
    assert in_time["statusCode"] == 200, in_time
