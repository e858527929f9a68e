"""The storage service failing under a file event, on both clouds, with real servers behind a fault proxy:

* S3: ``LambdaAdapter`` with boto3 (``s3_client_config``) → ``FaultProxy`` → moto's S3 server;
* Cloud Storage: ``GcpAdapter`` with google-cloud-storage → ``FaultProxy`` → gcp-storage-emulator.

The proxy answers 500/503, drops the connection (before, halfway through the upload, or after the server acted),
cuts a download short, or stalls, while the function reads the upload or writes its translation. Either way:

* a transient fault (once) is retried with backoff within the invocation, which then writes the right object;
* a lasting fault fails the invocation (``StorageError``, so the platform retries the event) with one logged error,
  no partial or empty output object, and the same event delivered again once the storage is back writes the
  right object;
* retries stop before the invocation's deadline: the invocation fails before the platform would stop it.

Attempts time out after 1 s here (``StoreTimeouts(1, 1)``; 3 s / 10 s in production) and back off 50-200 ms, so
the whole module takes about 40 s, most of it in the stalls.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus

import pytest
from awslambdaric.lambda_context import LambdaContext

from handler.coldstart import Startup
from handler.errors import StorageError
from handler.formats.plain_text import translate_text
from handler.storage.object_store import GcsStore, S3Store, StoreTimeouts, s3_client_config
from handler.storage.retry import RetryPolicy
from tests.events import GCS_OBJECT_FINALIZED, S3_OBJECT_CREATED, load_event
from tests.faults.fault_proxy import Fault, FaultProxy

pytestmark = pytest.mark.slow

CHINESE = "今天天气很好。我们去公园散步吧。\n\n这个多少钱？太贵了。\n"
SOURCE_KEY = "inbox/notes.txt"
OUTPUT_KEY = "translated/inbox/notes.txt"
TIMEOUTS = StoreTimeouts(connect_s=1.0, read_s=1.0)
POLICY = RetryPolicy(attempts=3, first_backoff_s=0.05, max_backoff_s=0.2)


def lambda_context(seconds_left: float) -> LambdaContext:
    return LambdaContext(str(uuid.uuid4()), None, None, int((time.time() + seconds_left) * 1000))


@dataclass
class Cloud:
    """One backend: a client straight to the server (setup, checks) and the adapter's store through the proxy."""

    name: str
    proxy: FaultProxy
    direct: Any
    through_proxy: Any
    adapter_class: Any
    read_request: dict[str, Any]  # the methods and path of the requests that read the upload
    download: dict[str, Any]  # the request that carries the upload's bytes
    write_request: dict[str, Any]

    def bucket(self) -> str:
        name = f"fault-{uuid.uuid4().hex[:12]}"
        if self.name == "s3":
            self.direct.create_bucket(Bucket=name)
        else:
            self.direct.create_bucket(name)
        return name

    def put(self, bucket: str, key: str, data: bytes) -> None:
        if self.name == "s3":
            self.direct.put_object(Bucket=bucket, Key=key, Body=data)
        else:
            self.direct.bucket(bucket).blob(key).upload_from_string(data, content_type="text/plain")

    def objects(self, bucket: str) -> dict[str, bytes]:
        if self.name == "s3":
            listed = self.direct.list_objects_v2(Bucket=bucket).get("Contents", [])
            return {o["Key"]: self.direct.get_object(Bucket=bucket, Key=o["Key"])["Body"].read() for o in listed}
        return {blob.name: blob.download_as_bytes() for blob in self.direct.list_blobs(bucket)}

    def adapter(self, startup: Startup) -> Any:
        store = S3Store(self.through_proxy) if self.name == "s3" else GcsStore(self.through_proxy, TIMEOUTS)
        return self.adapter_class(startup, store, POLICY)

    def deliver(self, adapter: Any, bucket: str, seconds_left: float = 900.0) -> Any:
        if self.name == "s3":
            event = load_event(S3_OBJECT_CREATED)
            event["Records"][0]["s3"]["bucket"]["name"] = bucket
            event["Records"][0]["s3"]["object"]["key"] = quote_plus(SOURCE_KEY, safe="/")
            return adapter.handle(event, lambda_context(seconds_left))["results"][0]
        event = load_event(GCS_OBJECT_FINALIZED)
        event["data"].update(bucket=bucket, name=SOURCE_KEY)
        return adapter.handle_storage_event(event["type"], event["data"])


@pytest.fixture(scope="module")
def s3_cloud(moto_endpoint: str, entry_modules: dict[str, Any]) -> Any:
    import boto3

    proxy = FaultProxy(moto_endpoint, "s3").start()
    credentials = {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    direct = boto3.client("s3", endpoint_url=moto_endpoint, **credentials)
    through = boto3.client("s3", endpoint_url=proxy.url, config=s3_client_config(TIMEOUTS), **credentials)
    yield Cloud(
        "s3",
        proxy,
        direct,
        through,
        entry_modules["handler.adapters.aws_lambda"].LambdaAdapter,
        read_request={"methods": frozenset({"HEAD", "GET"}), "path": r"^/[^/]+/inbox/"},
        download={"methods": frozenset({"GET"}), "path": r"^/[^/]+/inbox/"},
        write_request={"methods": frozenset({"PUT"}), "path": r"^/[^/]+/translated/"},
    )
    proxy.stop()


@pytest.fixture(scope="module")
def gcs_cloud(gcs_emulator_host: str, entry_modules: dict[str, Any]) -> Any:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    proxy = FaultProxy(gcs_emulator_host, "gcs").start()

    def client(endpoint: str) -> Any:
        return storage.Client(
            project="test-project", credentials=AnonymousCredentials(), client_options={"api_endpoint": endpoint}
        )

    yield Cloud(
        "gs",
        proxy,
        client(gcs_emulator_host),
        client(proxy.url),
        entry_modules["handler.adapters.gcp"].GcpAdapter,
        read_request={"methods": frozenset({"GET"}), "path": r"/o/inbox%2F"},
        download={"methods": frozenset({"GET"}), "path": r"/o/inbox%2F.*alt=media"},
        write_request={"methods": frozenset({"POST"}), "path": r"/upload/storage/v1/b/[^/]+/o\?"},
    )
    proxy.stop()


@pytest.fixture(params=["s3", "gs"])
def cloud(request: pytest.FixtureRequest) -> Any:
    cloud = request.getfixturevalue("s3_cloud" if request.param == "s3" else "gcs_cloud")
    cloud.proxy.clear()
    yield cloud
    cloud.proxy.clear()


def fault(cloud: Cloud, phase: str, kind: str, times: int) -> Fault:
    if kind == "truncate":  # only a download has a body to cut
        where = cloud.download
    else:
        where = cloud.read_request if phase == "read" else cloud.write_request
    if kind.startswith("status"):
        return Fault("status", status=int(kind.split()[1]), times=times, **where)
    return Fault(kind, times=times, **where)


def handler_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR and r.name.startswith("handler")]


def expected(startup: Startup) -> bytes:
    assert startup.service is not None
    return translate_text(startup.service, CHINESE).encode("utf-8")


TRANSIENT = [
    ("read", "status 503"),
    ("read", "status 500"),
    ("read", "drop"),
    ("read", "truncate"),
    ("read", "stall"),
    ("write", "status 503"),
    ("write", "status 500"),
    ("write", "drop"),
    ("write", "drop_midway"),
    ("write", "drop_answer"),
    ("write", "stall"),
]


@pytest.mark.parametrize(("phase", "kind"), TRANSIENT, ids=[f"{p}-{k.replace(' ', '')}" for p, k in TRANSIENT])
def test_a_transient_fault_is_retried_and_the_right_object_written(
    cloud: Cloud, startup: Startup, caplog: pytest.LogCaptureFixture, phase: str, kind: str
) -> None:
    # GIVEN an upload, and a storage service that fails once while it is read (or its translation written)
    bucket = cloud.bucket()
    cloud.put(bucket, SOURCE_KEY, CHINESE.encode("utf-8"))
    spoiled = cloud.proxy.inject(fault(cloud, phase, kind, times=1))
    # WHEN the event arrives
    with caplog.at_level(logging.WARNING):
        result = cloud.deliver(cloud.adapter(startup), bucket)
    # THEN the fault happened, was retried (a warning), and the translation is complete and right
    assert spoiled.hits == 1, cloud.proxy.requests
    assert result["status"] == "translated"
    assert cloud.objects(bucket) == {SOURCE_KEY: CHINESE.encode("utf-8"), OUTPUT_KEY: expected(startup)}
    retries = [r.getMessage() for r in caplog.records if r.name == "handler.storage.retry"]
    assert len(retries) == 1 and "retrying in" in retries[0], retries
    assert handler_errors(caplog) == []


LASTING = [
    ("read", "status 503"),
    ("read", "drop"),
    ("read", "truncate"),
    ("read", "stall"),
    ("write", "status 503"),
    ("write", "drop_midway"),
    ("write", "stall"),
]


@pytest.mark.parametrize(("phase", "kind"), LASTING, ids=[f"{p}-{k.replace(' ', '')}" for p, k in LASTING])
def test_a_lasting_fault_fails_the_event_cleanly_and_the_redelivery_completes(
    cloud: Cloud, startup: Startup, caplog: pytest.LogCaptureFixture, phase: str, kind: str
) -> None:
    # GIVEN an upload, and a storage service that keeps failing
    bucket = cloud.bucket()
    cloud.put(bucket, SOURCE_KEY, CHINESE.encode("utf-8"))
    spoiled = cloud.proxy.inject(fault(cloud, phase, kind, times=-1))
    adapter = cloud.adapter(startup)
    # WHEN the event arrives THEN it fails (the platform will retry it), after POLICY.attempts tries
    with caplog.at_level(logging.WARNING), pytest.raises(StorageError, match=r"failed 3 times"):
        cloud.deliver(adapter, bucket)
    assert spoiled.hits == POLICY.attempts
    # with one logged error, and no output object at all (neither partial nor empty)
    errors = handler_errors(caplog)
    assert len(errors) == 1 and "nothing was written" in errors[0] and "StorageError" in errors[0], errors
    assert cloud.objects(bucket) == {SOURCE_KEY: CHINESE.encode("utf-8")}
    # AND once the storage is back, the same event delivered again writes the right object
    cloud.proxy.clear()
    assert cloud.deliver(adapter, bucket)["status"] == "translated"
    assert cloud.objects(bucket) == {SOURCE_KEY: CHINESE.encode("utf-8"), OUTPUT_KEY: expected(startup)}


@pytest.mark.parametrize("kind", ["status 503", "stall"])
def test_retries_stop_before_the_invocation_deadline(
    cloud: Cloud, startup: Startup, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    # GIVEN an invocation with 1.5 s left beyond the safety margin (Lambda: its context; Cloud Functions:
    # TRANSLATE_EVENT_TIMEOUT_S), many attempts allowed, and a storage service that keeps failing the write
    margin = startup.config.deadline_margin_s
    seconds_left = margin + 1.5
    config = startup.config.with_overrides(event_timeout_s=seconds_left)
    patient = RetryPolicy(attempts=100, first_backoff_s=0.2, max_backoff_s=0.4)
    store = S3Store(cloud.through_proxy) if cloud.name == "s3" else GcsStore(cloud.through_proxy, TIMEOUTS)
    adapter = cloud.adapter_class(Startup(config, startup.service, None, 0.0), store, patient)
    bucket = cloud.bucket()
    cloud.put(bucket, SOURCE_KEY, CHINESE.encode("utf-8"))
    cloud.proxy.inject(fault(cloud, "write", kind, times=-1))
    began = time.monotonic()
    # WHEN the event arrives THEN retrying stops for lack of time, well before the platform's limit
    with caplog.at_level(logging.WARNING), pytest.raises(StorageError, match="too little to retry"):
        cloud.deliver(adapter, bucket, seconds_left=seconds_left)
    elapsed = time.monotonic() - began
    assert elapsed < 1.5 + TIMEOUTS.read_s + 0.5 < seconds_left, elapsed
    assert len(handler_errors(caplog)) == 1
    assert cloud.objects(bucket) == {SOURCE_KEY: CHINESE.encode("utf-8")}
