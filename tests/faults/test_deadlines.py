"""Running out of the invocation's time on a big file fails cleanly before the platform stops the function, on
both paths: S3 events (the Lambda context's remaining time) and Cloud Storage events (TRANSLATE_EVENT_TIMEOUT_S,
which infra/gcp/deploy.sh sets to the function's --timeout), in process and through functions-framework."""

from __future__ import annotations

import http.client
import json
import logging
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest
from awslambdaric.lambda_context import LambdaContext

from handler.coldstart import Startup
from handler.config import ENV_DEADLINE_MARGIN_S, ENV_EVENT_TIMEOUT_S
from handler.errors import DeadlineExceededError
from handler.storage.object_store import GcsStore, S3Store
from tests.adapters.conftest import function_env, start_functions_framework
from tests.events import GCS_OBJECT_FINALIZED, S3_OBJECT_CREATED, load_event

pytestmark = pytest.mark.slow

# a distinct Chinese character in each paragraph (digits would all become one protected placeholder)
SENTENCE = "今天天气很好，我们去公园散步，然后在湖边吃午饭。"
LONG_TEXT = "\n".join(f"第{chr(0x4E00 + i)}段。{SENTENCE}" for i in range(400))
BEYOND_MARGIN_S = 0.5  # the invocation's time left beyond TRANSLATE_DEADLINE_MARGIN_S


def _s3_deliver(s3_client: Any, modules: dict[str, Any], startup: Startup, bucket: str, seconds_left: float) -> Any:
    adapter = modules["handler.adapters.aws_lambda"].LambdaAdapter(startup, S3Store(s3_client))
    event = load_event(S3_OBJECT_CREATED)
    event["Records"][0]["s3"]["bucket"]["name"] = bucket
    event["Records"][0]["s3"]["object"]["key"] = quote_plus("long.txt")
    context = LambdaContext(str(uuid.uuid4()), None, None, int((time.time() + seconds_left) * 1000))
    return adapter.handle(event, context)


def _gcs_deliver(gcs_client: Any, modules: dict[str, Any], startup: Startup, bucket: str, seconds_left: float) -> Any:
    config = startup.config.with_overrides(event_timeout_s=seconds_left)  # what the deploy sets from --timeout
    gcp = modules["handler.adapters.gcp"]
    adapter = gcp.GcpAdapter(Startup(config, startup.service, None, 0.0), GcsStore(gcs_client))
    event = load_event(GCS_OBJECT_FINALIZED)
    event["data"].update(bucket=bucket, name="long.txt")
    return adapter.handle_storage_event(event["type"], event["data"])


@pytest.mark.parametrize("cloud", ["s3", "gs"])
def test_a_file_longer_than_the_time_left_fails_before_the_platform_limit(
    request: pytest.FixtureRequest,
    entry_modules: dict[str, Any],
    startup: Startup,
    caplog: pytest.LogCaptureFixture,
    cloud: str,
) -> None:
    seconds_left = startup.config.deadline_margin_s + BEYOND_MARGIN_S  # the platform stops us after this
    bucket = f"deadline-{uuid.uuid4().hex[:12]}"
    if cloud == "s3":
        client = request.getfixturevalue("s3_client")
        client.create_bucket(Bucket=bucket)
        client.put_object(Bucket=bucket, Key="long.txt", Body=LONG_TEXT.encode("utf-8"))
        deliver, keys = _s3_deliver, lambda: [o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]]
    else:
        client = request.getfixturevalue("gcs_client")
        client.create_bucket(bucket).blob("long.txt").upload_from_string(LONG_TEXT.encode("utf-8"))
        deliver, keys = _gcs_deliver, lambda: [blob.name for blob in client.list_blobs(bucket)]
    began = time.monotonic()
    with (
        caplog.at_level(logging.ERROR),
        pytest.raises(
            # either it ran out while translating, or its measured speed says the rest cannot finish in the time left
            DeadlineExceededError,
            match=r"the deadline passed|s are left before the deadline",
        ) as refused,
    ):
        deliver(client, entry_modules, startup, bucket, seconds_left)
    elapsed = time.monotonic() - began
    # it stopped before the platform would; when it started translating, it worked until its deadline (a batch in
    # progress may finish past it)
    assert elapsed < seconds_left, elapsed
    if "the deadline passed" in str(refused.value):
        assert BEYOND_MARGIN_S - 0.1 < elapsed, elapsed
    assert keys() == ["long.txt"]
    errors = [r.getMessage() for r in caplog.records if r.name.startswith("handler")]
    assert len(errors) == 1 and "DeadlineExceededError" in errors[0] and "nothing was written" in errors[0], errors


def test_functions_framework_honours_the_configured_event_timeout(
    tiny_bundle_dir: Path, gcs_emulator_host: str, gcs_client: Any, tmp_path: Path
) -> None:
    # GIVEN the Cloud Storage function deployed with a 2.5 s timeout and a 2 s margin (as deploy.sh sets both)
    env = {
        **function_env(tiny_bundle_dir),
        ENV_EVENT_TIMEOUT_S: "2.5",
        ENV_DEADLINE_MARGIN_S: "2",
        "STORAGE_EMULATOR_HOST": gcs_emulator_host,
        "GOOGLE_CLOUD_PROJECT": "test-project",
    }
    server, url = start_functions_framework("translate_storage_event", env, tmp_path)
    try:
        bucket = gcs_client.create_bucket(f"ff-deadline-{uuid.uuid4().hex[:8]}")
        bucket.blob("long.txt").upload_from_string(LONG_TEXT.encode("utf-8"))
        event = load_event(GCS_OBJECT_FINALIZED)
        event["data"].update(bucket=bucket.name, name="long.txt")
        host, port = url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        began = time.monotonic()
        connection.request("POST", "/", json.dumps(event), {"Content-Type": "application/cloudevents+json"})
        status = connection.getresponse().status
        elapsed = time.monotonic() - began
        # THEN the function fails (so Eventarc retries) within its timeout, having written nothing
        assert status == 500
        assert 0.4 < elapsed < 2.5, elapsed
        assert [blob.name for blob in gcs_client.list_blobs(bucket.name)] == ["long.txt"]
        assert "DeadlineExceededError" in server.log() and "nothing was written" in server.log()
    finally:
        server.stop()
