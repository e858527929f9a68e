"""Cloud Logging reads our lines (``handler.api.access_log.cloud_logging_fields``, ``handler.metrics``): the JSON access
lines functions-framework writes (as on Cloud Functions and Cloud Run) carry ``logging.googleapis.com/trace`` (from
``X-Cloud-Trace-Context`` or ``traceparent``, with the project of ``GOOGLE_CLOUD_PROJECT``), its span and sampling,
and ``httpRequest`` as Cloud Logging's ``google.logging.type.HttpRequest`` defines it (sizes as int64 strings, the
latency as a duration string), plus the request's figures as fields (the log-based metrics read them); a storage
event's figures are a line of their own. The Lambda runtime's lines carry none of Google's fields.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.conftest import (
    RealHttpClient,
    RicFunction,
    ServerProcess,
    function_env,
    http_event,
    start_functions_framework,
)
from tests.adapters.test_entry_processes import post
from tests.events import FUNCTION_URL, GCS_OBJECT_FINALIZED, load_event

pytestmark = pytest.mark.slow

PROJECT = "test-project"
TRACE = "105445aa7843bc8bf206b12000100000"
JSON = {"Content-Type": "application/json"}
DURATION = re.compile(r"[0-9]+(\.[0-9]{1,9})?s")  # google.protobuf.Duration in JSON


def json_lines(server: ServerProcess, logger: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("logger") == logger]


def line_for(server: ServerProcess, request_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # stderr may lag the response
        found = [line for line in json_lines(server, "handler.access") if line.get("request_id") == request_id]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no access line for {request_id}:\n{server.log()[-3000:]}")


@pytest.fixture(scope="module")
def served(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, str]]:
    env = function_env(tiny_bundle_dir, GOOGLE_CLOUD_PROJECT=PROJECT)
    server, url = start_functions_framework("translate_http", env, tmp_path_factory.mktemp("cloud-logging"))
    yield server, url
    server.stop()


def test_an_access_line_carries_the_trace_and_http_request_cloud_logging_reads(
    served: tuple[ServerProcess, str],
) -> None:
    server, url = served
    client = RealHttpClient("functions_framework", url)
    text = "我们明天一起去图书馆看书吧。"
    body = json.dumps({"text": text}).encode()
    headers = {
        **JSON,
        "X-Cloud-Trace-Context": f"{TRACE}/1234567890;o=1",
        "User-Agent": "trace-test/1.0",
        "X-Forwarded-For": "203.0.113.7, 10.0.0.1",
        "X-Request-Id": "traced-1",
    }
    # GIVEN a request as Cloud Run delivers it WHEN it is answered THEN its line names the trace in the project ...
    reply = client.call("POST", "/translate", headers, body)
    assert reply.status == 200
    line = line_for(server, "traced-1")
    assert line["logging.googleapis.com/trace"] == f"projects/{PROJECT}/traces/{TRACE}"
    assert line["logging.googleapis.com/spanId"] == f"{1234567890:016x}"
    assert line["logging.googleapis.com/trace_sampled"] is True
    # ... AND the request as an HttpRequest (the route as its URL: a path may hold text)
    http = line["httpRequest"]
    assert http["requestMethod"] == "POST" and http["requestUrl"] == "/translate" and http["status"] == 200
    assert http["requestSize"] == str(len(body)) and http["responseSize"] == str(len(reply.body))
    assert DURATION.fullmatch(http["latency"]) and float(http["latency"][:-1]) * 1000 <= line["duration_ms"] + 1
    assert http["userAgent"] == "trace-test/1.0" and http["remoteIp"] == "203.0.113.7"
    # ... AND the request's figures, which the log-based metrics read
    assert line["characters"] == len(text) and line["segments"] >= 1 and line["decode_ms"] > 0
    assert line["bytes_read"] == len(body) and line["bytes_written"] == len(reply.body)
    assert line["severity"] == "INFO"

    # a W3C traceparent, not sampled
    parent = "0af7651916cd43dd8448eb211c80319c"
    client.call("GET", "/healthz", {"traceparent": f"00-{parent}-b7ad6b7169203331-00", "X-Request-Id": "traced-2"})
    line = line_for(server, "traced-2")
    assert line["logging.googleapis.com/trace"] == f"projects/{PROJECT}/traces/{parent}"
    assert line["logging.googleapis.com/spanId"] == "b7ad6b7169203331"
    assert line["logging.googleapis.com/trace_sampled"] is False
    assert line["httpRequest"]["requestMethod"] == "GET" and "remoteIp" not in line["httpRequest"]

    # no trace header, or a malformed one: no trace field, the request still described
    client.call("GET", "/healthz", {"X-Cloud-Trace-Context": "not-a-trace", "X-Request-Id": "untraced"})
    line = line_for(server, "untraced")
    assert not any(key.startswith("logging.googleapis.com/") for key in line) and line["httpRequest"]["status"] == 200


def test_the_cold_start_is_on_the_first_line_only(served: tuple[ServerProcess, str]) -> None:
    server, url = served
    RealHttpClient("functions_framework", url).call("GET", "/healthz", {"X-Request-Id": "later"})
    line_for(server, "later")
    cold = [line for line in json_lines(server, "handler.access") if line.get("cold_start")]
    assert len(cold) == 1 and cold[0]["cold_start_ms"] > 0, cold


def test_a_storage_events_figures_are_a_log_line_of_their_own(
    adapter_env: dict[str, str], gcs_emulator_host: str, gcs_client: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    env = {**adapter_env, "STORAGE_EMULATOR_HOST": gcs_emulator_host, "GOOGLE_CLOUD_PROJECT": PROJECT}
    server, url = start_functions_framework("translate_storage_event", env, tmp_path_factory.mktemp("ff-events"))
    try:
        bucket = gcs_client.create_bucket(f"metrics-{uuid.uuid4().hex[:12]}")
        text = "这个文件需要翻译成英文。\n"
        bucket.blob("in/a.txt").upload_from_string(text.encode(), content_type="text/plain")
        event = load_event(GCS_OBJECT_FINALIZED)
        event["data"].update(bucket=bucket.name, name="in/a.txt")
        status, _ = post(url, "/", {"Content-Type": "application/cloudevents+json"}, json.dumps(event).encode())
        assert status == 200
        deadline = time.monotonic() + 10
        while not (lines := json_lines(server, "handler.metrics")) and time.monotonic() < deadline:
            time.sleep(0.1)
        (line,) = lines
        assert line["route"] == "upload" and line["characters"] == len(text) and line["segments"] >= 1
        assert line["bytes_read"] == len(text.encode()) and line["bytes_written"] > 0 and line["decode_ms"] > 0
        assert line["cold_start"] == 1 and "error_code" not in line
    finally:
        server.stop()


def test_lambdas_lines_carry_none_of_googles_fields(ric_function: RicFunction) -> None:
    event = http_event(FUNCTION_URL, "GET", "/healthz", {"X-Cloud-Trace-Context": f"{TRACE}/1;o=1"}, b"")
    outcome, payload = ric_function.api.invoke(event)
    assert outcome == "response" and payload["statusCode"] == 200
    log = ric_function.server.log()
    assert "GET /healthz 200" in log
    assert "logging.googleapis.com" not in log and "httpRequest" not in log
