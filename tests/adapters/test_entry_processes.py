"""The deployed entry points as real processes: awslambdaric behind a local Lambda Runtime API (HTTP and S3
events), functions-framework with a Cloud Storage CloudEvent, and both with a broken model bundle (503 / raise).
Plus the two edges that need a special service: unexpected errors (500 without internals) and unknown events.
"""

from __future__ import annotations

import http.client
import json
import logging
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest

from handler.api.router import INTERNAL_ERROR_MESSAGE, HttpApi, HttpRequest
from handler.coldstart import Startup
from handler.errors import InvalidRequestError
from handler.formats.plain_text import translate_text
from tests.adapters.conftest import (
    AWS_TEST_ENV,
    RicClient,
    RicFunction,
    function_env,
    start_functions_framework,
    start_ric_function,
    stop_ric_function,
)
from tests.events import GCS_OBJECT_FINALIZED, S3_OBJECT_CREATED, load_event

pytestmark = pytest.mark.slow

CHINESE = "第一段。今天天气很好。\n\n第二段：我们去公园散步吧。\n"


def s3_event(bucket: str, key: str) -> dict[str, Any]:
    event = load_event(S3_OBJECT_CREATED)
    event["Records"][0]["s3"]["bucket"]["name"] = bucket
    event["Records"][0]["s3"]["object"]["key"] = quote_plus(key, safe="/")
    return event


def new_bucket(s3_client: Any) -> str:
    name = f"ric-{uuid.uuid4().hex[:12]}"
    s3_client.create_bucket(Bucket=name)
    return name


def keys(s3_client: Any, bucket: str) -> list[str]:
    return sorted(item["Key"] for item in s3_client.list_objects_v2(Bucket=bucket).get("Contents", []))


# --- awslambdaric ---------------------------------------------------------------------------------------------
def test_ric_translates_an_s3_upload_end_to_end(ric_function: RicFunction, s3_client: Any, startup: Startup) -> None:
    # GIVEN a GB18030 file with a Chinese key in S3
    bucket, key = new_bucket(s3_client), "上传/报告 2024.txt"
    s3_client.put_object(Bucket=bucket, Key=key, Body=CHINESE.encode("gb18030"))
    # WHEN Lambda delivers the S3 notification to the real runtime client
    outcome, payload = ric_function.api.invoke(s3_event(bucket, key))
    # THEN the handler reports the output and the object holds the UTF-8 translation
    assert outcome == "response", payload
    assert payload["results"] == [
        {
            "source": f"s3://{bucket}/{key}",
            "status": "translated",
            "output": f"s3://{bucket}/translated/{key}",
            "encoding": "GB18030",
            "characters": len(CHINESE),
        }
    ]
    stored = s3_client.get_object(Bucket=bucket, Key=f"translated/{key}")
    assert stored["Body"].read() == translate_text(startup.service, CHINESE).encode("utf-8")  # type: ignore[arg-type]
    assert stored["Metadata"]["bundle-hash"] == startup.service.info()["bundle_hash"]  # type: ignore[union-attr]


def test_ric_fails_a_file_it_cannot_finish_in_time_and_writes_nothing(
    ric_function: RicFunction, s3_client: Any, startup: Startup
) -> None:
    bucket = new_bucket(s3_client)
    s3_client.put_object(Bucket=bucket, Key="a.txt", Body=CHINESE.encode("utf-8"))
    margin = startup.config.deadline_margin_s
    outcome, payload = ric_function.api.invoke(s3_event(bucket, "a.txt"), time_limit_s=margin - 2)
    assert outcome == "error"
    assert payload["errorType"] == "DeadlineExceededError"
    assert "nothing was written" in payload["errorMessage"]
    assert keys(s3_client, bucket) == ["a.txt"]
    assert "nothing was written" in ric_function.server.log()  # the clear logged error


def test_ric_rejects_an_unknown_event_shape(ric_function: RicFunction) -> None:
    outcome, payload = ric_function.api.invoke({"hello": "world"})
    assert outcome == "error" and payload["errorType"] == "InvalidRequestError"
    assert "unsupported event" in payload["errorMessage"]


@pytest.fixture(scope="module")
def broken_ric_function(broken_bundle_dir: Path, moto_endpoint: str, tmp_path_factory: pytest.TempPathFactory):
    function = start_ric_function(
        {**function_env(broken_bundle_dir), **AWS_TEST_ENV, "AWS_ENDPOINT_URL_S3": moto_endpoint},
        tmp_path_factory.mktemp("ric-broken"),
    )
    yield function
    stop_ric_function(function)


def test_ric_with_a_broken_bundle_answers_503_and_raises_for_files(
    broken_ric_function: RicFunction, s3_client: Any
) -> None:
    # GIVEN a function whose bundle fails to load: the import succeeded (no init error) and kept the error
    client = RicClient(broken_ric_function)
    reply = client.call("POST", "/translate", {"Content-Type": "application/json"}, '{"text": "你好"}'.encode())
    assert reply.status == 503, reply.text
    error = reply.json()["error"]
    assert error["code"] in ("bundle_invalid", "model_unavailable") and "encoder.onnx" in error["message"]
    health = client.call("GET", "/healthz")
    assert health.status == 503 and health.json()["warm"] is False
    assert client.call("GET", "/").status == 200  # the page still loads and shows the error
    # AND an S3 event fails loudly, writing nothing
    bucket = new_bucket(s3_client)
    s3_client.put_object(Bucket=bucket, Key="a.txt", Body=CHINESE.encode("utf-8"))
    outcome, payload = broken_ric_function.api.invoke(s3_event(bucket, "a.txt"))
    assert outcome == "error" and "encoder.onnx" in payload["errorMessage"]
    assert keys(s3_client, bucket) == ["a.txt"]
    assert broken_ric_function.api.init_errors == []


# --- functions-framework: Cloud Storage events and a broken bundle ----------------------------------------
@pytest.fixture(scope="module")
def storage_event_url(adapter_env: dict[str, str], gcs_emulator_host: str, tmp_path_factory: pytest.TempPathFactory):
    env = {**adapter_env, "STORAGE_EMULATOR_HOST": gcs_emulator_host, "GOOGLE_CLOUD_PROJECT": "test-project"}
    server, url = start_functions_framework("translate_storage_event", env, tmp_path_factory.mktemp("ff-gcs"))
    yield url
    server.stop()


def post(url: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_functions_framework_translates_a_cloud_storage_upload(
    storage_event_url: str, gcs_client: Any, startup: Startup
) -> None:
    # GIVEN a UTF-16 file in a bucket of the emulator
    bucket = gcs_client.create_bucket(f"ff-{uuid.uuid4().hex[:12]}")
    key = "收件箱/新闻 稿.txt"
    bucket.blob(key).upload_from_string(b"\xff\xfe" + CHINESE.encode("utf-16-le"), content_type="text/plain")
    # WHEN Eventarc posts the finalized CloudEvent (structured mode) to the function
    event = load_event(GCS_OBJECT_FINALIZED)
    event["data"].update(bucket=bucket.name, name=key)
    event["subject"] = f"objects/{key}"
    status, body = post(
        storage_event_url, "/", {"Content-Type": "application/cloudevents+json"}, json.dumps(event).encode()
    )
    # THEN the translation is in the bucket under the output prefix
    assert status == 200, body
    blob = bucket.get_blob(f"translated/{key}")
    assert blob is not None
    assert blob.download_as_bytes() == translate_text(startup.service, CHINESE).encode("utf-8")  # type: ignore[arg-type]
    assert blob.metadata["source-encoding"] == "UTF-16LE with BOM"


def test_functions_framework_with_a_broken_bundle_answers_503(
    broken_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    server, url = start_functions_framework(
        "translate_http", function_env(broken_bundle_dir), tmp_path_factory.mktemp("ff-broken")
    )
    try:
        status, body = post(url, "/translate", {"Content-Type": "application/json"}, b'{"text": "\xe4\xbd\xa0"}')
        assert status == 503
        assert "encoder.onnx" in json.loads(body)["error"]["message"]
        assert b"Traceback" not in body
    finally:
        server.stop()


# --- unexpected errors and unknown events (in process) -------------------------------------------------------
class ServiceWithABug:
    """A service whose translate methods fail with an unexpected exception, as a bug would."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def info(self) -> dict[str, object]:
        return dict(self.real.info())

    def translate(self, *args: object, **kwargs: object) -> str:
        raise RuntimeError("secret internals: /srv/app/handler/service.py line 42")

    def translate_many(self, *args: object, **kwargs: object) -> list[str]:
        raise RuntimeError("secret internals: /srv/app/handler/service.py line 42")


def test_an_unexpected_error_is_500_without_internals(startup: Startup, caplog: pytest.LogCaptureFixture) -> None:
    api = HttpApi(Startup(startup.config, ServiceWithABug(startup.service), None, 0.0))  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR, logger="handler.api.router"):
        response = api.handle(
            HttpRequest.create("POST", "/translate", {"content-type": "application/json"}, b'{"text": "\xe4\xbd\xa0"}')
        )
    assert response.status == 500
    assert json.loads(response.body) == {"error": {"code": "internal_error", "message": INTERNAL_ERROR_MESSAGE}}
    assert b"secret" not in response.body and b"Traceback" not in response.body
    assert any(record.exc_info for record in caplog.records)  # the traceback went to the log


def test_lambda_handler_names_the_supported_events(entry_modules: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequestError, match=r"unsupported event: expected an API Gateway"):
        entry_modules["handler.adapters.aws_lambda"].lambda_handler({"detail-type": "Scheduled Event"}, None)


def test_lambda_event_kinds_are_told_apart(entry_modules: dict[str, Any]) -> None:
    from tests.events import API_GATEWAY_V1, API_GATEWAY_V2, FUNCTION_URL

    kind = entry_modules["handler.adapters.aws_lambda"].event_kind
    assert [kind(load_event(name)) for name in (API_GATEWAY_V1, API_GATEWAY_V2, FUNCTION_URL, S3_OBJECT_CREATED)] == [
        "api_gateway_v1",
        "api_gateway_v2",
        "function_url",
        "s3",
    ]


def test_sample_events_translate_as_delivered(entry_modules: dict[str, Any]) -> None:
    # the sample events exactly as stored (v1 through a stage, v2, a base64 Function URL body) all translate
    from tests.events import API_GATEWAY_V1, API_GATEWAY_V2, FUNCTION_URL

    handler = entry_modules["handler.adapters.aws_lambda"].lambda_handler
    translations = set()
    for name in (API_GATEWAY_V1, API_GATEWAY_V2, FUNCTION_URL):
        response = handler(load_event(name), None)
        assert response["statusCode"] == 200, response
        translations.add(json.loads(response["body"])["translation"])
    assert len(translations) == 1  # the same text ("你好，世界。") in three encodings of the request


def test_http_api_stage_prefix_is_stripped(entry_modules: dict[str, Any]) -> None:
    from tests.events import API_GATEWAY_V2

    event = load_event(API_GATEWAY_V2)
    event["requestContext"]["stage"] = "prod"
    event["rawPath"] = "/prod/translate"
    response = entry_modules["handler.adapters.aws_lambda"].lambda_handler(event, None)
    assert response["statusCode"] == 200, response


def test_invalid_base64_body_is_400(entry_modules: dict[str, Any]) -> None:
    from tests.events import FUNCTION_URL

    event = load_event(FUNCTION_URL)
    event["body"] = "not base64 at all!"
    response = entry_modules["handler.adapters.aws_lambda"].lambda_handler(event, None)
    assert response["statusCode"] == 400 and "base64" in json.loads(response["body"])["error"]["message"]


def test_cold_start_happened_at_import(entry_modules: dict[str, Any]) -> None:
    from handler import coldstart

    report = coldstart.cold_start_report()
    assert report["warm"] is True
    assert all(isinstance(report[name], float) for name in ("import_s", "load_s", "warmup_s"))
