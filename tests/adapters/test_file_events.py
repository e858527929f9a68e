"""File translation from object-store events, the same tests on both clouds:

* S3: ``LambdaAdapter`` with boto3 against moto's S3 server on loopback, driven by S3 event notifications;
* Cloud Storage: ``GcpAdapter`` with google-cloud-storage against gcp-storage-emulator on loopback, driven by
  ``google.cloud.storage.object.v1.finalized`` CloudEvents.
"""

from __future__ import annotations

import codecs
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, quote_plus, unquote

import pytest
from awslambdaric.lambda_context import LambdaContext

from handler.coldstart import Startup
from handler.errors import DeadlineExceededError, InvalidRequestError, ModelUnavailableError, RequestTooLargeError
from handler.formats.plain_text import translate_text
from handler.storage.object_store import OUTPUT_CONTENT_TYPE, GcsStore, S3Store
from tests.adapters.conftest import MAX_FILE_BYTES

# handler.adapters.aws_lambda and handler.adapters.gcp load the model when imported: the ``entry_modules``
# fixture imports them with the test configuration, and the backends take their adapter classes from there
from tests.events import GCS_OBJECT_FINALIZED, S3_OBJECT_CREATED, load_event

pytestmark = pytest.mark.slow

CHINESE = "今天天气很好。我们去公园散步吧。\n\n这个多少钱？太贵了。\n第三行。\n"


def lambda_context(seconds_left: float) -> LambdaContext:
    """The context class the Lambda runtime client itself builds, with a deadline ``seconds_left`` away."""
    return LambdaContext(str(uuid.uuid4()), None, None, int((time.time() + seconds_left) * 1000))


@dataclass
class StoredObject:
    data: bytes
    content_type: str
    metadata: dict[str, str]


class S3Backend:
    scheme = "s3"
    stored_content_type = OUTPUT_CONTENT_TYPE

    def __init__(self, client: Any, modules: dict[str, Any]) -> None:
        self.client = client
        self.adapter_class = modules["handler.adapters.aws_lambda"].LambdaAdapter

    def adapter(self, startup: Startup) -> Any:
        return self.adapter_class(startup, S3Store(self.client))

    def bucket(self) -> str:
        name = f"test-{uuid.uuid4().hex[:12]}"
        self.client.create_bucket(Bucket=name)
        return name

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=bucket, Key=key, Body=data)

    def get(self, bucket: str, key: str) -> StoredObject:
        response = self.client.get_object(Bucket=bucket, Key=key)
        return StoredObject(response["Body"].read(), response["ContentType"], response["Metadata"])

    def keys(self, bucket: str) -> list[str]:
        return sorted(item["Key"] for item in self.client.list_objects_v2(Bucket=bucket).get("Contents", []))

    def deliver(self, adapter: Any, bucket: str, key: str, seconds_left: float = 900.0) -> Any:
        event = load_event(S3_OBJECT_CREATED)
        record = event["Records"][0]
        record["s3"]["bucket"]["name"] = bucket
        record["s3"]["bucket"]["arn"] = f"arn:aws:s3:::{bucket}"
        record["s3"]["object"]["key"] = quote_plus(key, safe="/")  # how S3 encodes keys in notifications
        return adapter.handle(event, lambda_context(seconds_left))["results"][0]


class GcsBackend:
    scheme = "gs"
    stored_content_type = "text/plain"  # gcp-storage-emulator drops the charset parameter Cloud Storage keeps

    def __init__(self, client: Any, modules: dict[str, Any]) -> None:
        self.client = client
        self.adapter_class = modules["handler.adapters.gcp"].GcpAdapter

    def adapter(self, startup: Startup) -> Any:
        return self.adapter_class(startup, GcsStore(self.client))

    def bucket(self) -> str:
        name = f"test-{uuid.uuid4().hex[:12]}"
        self.client.create_bucket(name)
        return name

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.client.bucket(bucket).blob(key).upload_from_string(data, content_type="text/plain")

    def get(self, bucket: str, key: str) -> StoredObject:
        blob = self.client.bucket(bucket).get_blob(key)
        return StoredObject(blob.download_as_bytes(), blob.content_type, dict(blob.metadata or {}))

    def keys(self, bucket: str) -> list[str]:
        return sorted(blob.name for blob in self.client.list_blobs(bucket))

    def deliver(self, adapter: Any, bucket: str, key: str, seconds_left: float = 900.0) -> Any:
        event = load_event(GCS_OBJECT_FINALIZED)
        event["source"] = f"//storage.googleapis.com/projects/_/buckets/{bucket}"
        event["subject"] = f"objects/{key}"
        event["data"].update(bucket=bucket, name=key, id=f"{bucket}/{key}/1")
        return adapter.handle_storage_event(event["type"], event["data"])


@pytest.fixture(params=["s3", "gs"])
def backend(request: pytest.FixtureRequest, entry_modules: dict[str, Any]) -> Any:
    if request.param == "s3":
        return S3Backend(request.getfixturevalue("s3_client"), entry_modules)
    return GcsBackend(request.getfixturevalue("gcs_client"), entry_modules)


@pytest.fixture
def s3_backend(s3_client: Any, entry_modules: dict[str, Any]) -> S3Backend:
    return S3Backend(s3_client, entry_modules)


def expected_translation(startup: Startup, text: str) -> bytes:
    assert startup.service is not None
    return translate_text(startup.service, text).encode("utf-8")


# --- encodings --------------------------------------------------------------------------------------------
ENCODINGS = {
    "utf-8": (lambda text: text.encode("utf-8"), "UTF-8"),
    "utf-8 with BOM": (lambda text: codecs.BOM_UTF8 + text.encode("utf-8"), "UTF-8 with BOM"),
    "utf-16-le with BOM": (lambda text: codecs.BOM_UTF16_LE + text.encode("utf-16-le"), "UTF-16LE with BOM"),
    "utf-16-be with BOM": (lambda text: codecs.BOM_UTF16_BE + text.encode("utf-16-be"), "UTF-16BE with BOM"),
    "gb18030": (lambda text: text.encode("gb18030"), "GB18030"),
    "gbk": (lambda text: text.encode("gbk"), "GB18030"),
}


@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_each_encoding_gives_the_same_utf8_translation(backend: Any, startup: Startup, encoding: str) -> None:
    # GIVEN the same Chinese text uploaded in one of the supported encodings
    encode, description = ENCODINGS[encoding]
    bucket = backend.bucket()
    backend.put(bucket, "inbox/notes.txt", encode(CHINESE))
    # WHEN the upload event arrives
    result = backend.deliver(backend.adapter(startup), bucket, "inbox/notes.txt")
    # THEN the UTF-8 translation is written next to it under the output prefix, with metadata
    assert result["status"] == "translated" and result["encoding"] == description
    assert result["output"] == f"{backend.scheme}://{bucket}/translated/inbox/notes.txt"
    stored = backend.get(bucket, "translated/inbox/notes.txt")
    assert stored.data == expected_translation(startup, CHINESE)
    assert stored.data.count(b"\n") == CHINESE.count("\n")  # paragraphs and lines kept
    assert stored.content_type == backend.stored_content_type
    info = startup.service.info()  # type: ignore[union-attr]
    assert stored.metadata["bundle-hash"] == info["bundle_hash"]
    assert stored.metadata["source-key"] == "inbox/notes.txt"
    assert stored.metadata["source-bucket"] == bucket
    assert stored.metadata["source-encoding"] == description
    assert backend.keys(bucket) == ["inbox/notes.txt", "translated/inbox/notes.txt"]


def test_crlf_line_endings_are_kept(backend: Any, startup: Startup) -> None:
    bucket = backend.bucket()
    backend.put(bucket, "dos.txt", CHINESE.replace("\n", "\r\n").encode("utf-8"))
    backend.deliver(backend.adapter(startup), bucket, "dos.txt")
    data = backend.get(bucket, "translated/dos.txt").data
    assert data.count(b"\r\n") == CHINESE.count("\n") and b"\n" not in data.replace(b"\r\n", b"")


def test_keys_with_spaces_and_chinese_are_decoded(backend: Any, startup: Startup) -> None:
    # GIVEN a key with spaces, Chinese and a plus sign (S3 sends it URL-encoded, "+" for spaces)
    key = "收件箱/新闻 稿 1+1.txt"
    bucket = backend.bucket()
    backend.put(bucket, key, CHINESE.encode("utf-8"))
    result = backend.deliver(backend.adapter(startup), bucket, key)
    assert result["status"] == "translated"
    stored = backend.get(bucket, f"translated/{key}")
    assert stored.data == expected_translation(startup, CHINESE)
    assert stored.metadata["source-key"] == quote(key, safe="/")
    assert unquote(stored.metadata["source-key"]) == key


def test_same_event_twice_gives_the_same_object(backend: Any, startup: Startup) -> None:
    bucket = backend.bucket()
    backend.put(bucket, "a.txt", CHINESE.encode("utf-8"))
    adapter = backend.adapter(startup)
    first = backend.deliver(adapter, bucket, "a.txt")
    data_first = backend.get(bucket, "translated/a.txt")
    second = backend.deliver(adapter, bucket, "a.txt")
    data_second = backend.get(bucket, "translated/a.txt")
    assert first == second
    assert data_first == data_second
    assert backend.keys(bucket) == ["a.txt", "translated/a.txt"]


def test_output_bucket_and_prefix_are_configurable(backend: Any, startup: Startup) -> None:
    source_bucket, output_bucket = backend.bucket(), backend.bucket()
    backend.put(source_bucket, "doc.txt", CHINESE.encode("utf-8"))
    config = startup.config.with_overrides(output_bucket=output_bucket, output_prefix="")
    adapter = backend.adapter(Startup(config, startup.service, None, 0.0))
    result = backend.deliver(adapter, source_bucket, "doc.txt")
    assert result["output"] == f"{backend.scheme}://{output_bucket}/doc.txt"
    assert backend.get(output_bucket, "doc.txt").data == expected_translation(startup, CHINESE)
    assert backend.keys(source_bucket) == ["doc.txt"]


def test_empty_file_gives_an_empty_translation(backend: Any, startup: Startup) -> None:
    bucket = backend.bucket()
    backend.put(bucket, "empty.txt", b"")
    assert backend.deliver(backend.adapter(startup), bucket, "empty.txt")["status"] == "translated"
    assert backend.get(bucket, "translated/empty.txt").data == b""


# --- refusals: nothing written ----------------------------------------------------------------------------
def test_an_object_under_the_output_prefix_is_refused(
    backend: Any, startup: Startup, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN the trigger also fires for our own outputs (same bucket, key under the output prefix)
    bucket = backend.bucket()
    backend.put(bucket, "translated/a.txt", b"already English")
    with caplog.at_level(logging.ERROR, logger="handler.storage.files"):
        result = backend.deliver(backend.adapter(startup), bucket, "translated/a.txt")
    # THEN it is refused with a logged error, not retried, and nothing is written
    assert result["status"] == "refused"
    assert "trigger the function again" in result["reason"]
    assert any("refusing to translate" in record.getMessage() for record in caplog.records)
    assert backend.keys(bucket) == ["translated/a.txt"]


def test_an_empty_prefix_in_the_input_bucket_is_refused(backend: Any, startup: Startup) -> None:
    bucket = backend.bucket()
    backend.put(bucket, "a.txt", CHINESE.encode("utf-8"))
    config = startup.config.with_overrides(output_prefix="")
    result = backend.deliver(backend.adapter(Startup(config, startup.service, None, 0.0)), bucket, "a.txt")
    assert result["status"] == "refused" and "TRANSLATE_OUTPUT_PREFIX" in result["reason"]
    assert backend.get(bucket, "a.txt").data == CHINESE.encode("utf-8")
    assert backend.keys(bucket) == ["a.txt"]


def test_too_large_file_is_refused_and_nothing_written(backend: Any, startup: Startup) -> None:
    bucket = backend.bucket()
    backend.put(bucket, "big.txt", ("好" * (MAX_FILE_BYTES // 3 + 1)).encode("utf-8"))
    with pytest.raises(RequestTooLargeError, match=rf"{MAX_FILE_BYTES:,} \(TRANSLATE_MAX_FILE_BYTES\)"):
        backend.deliver(backend.adapter(startup), bucket, "big.txt")
    assert backend.keys(bucket) == ["big.txt"]


@pytest.mark.parametrize(
    ("data", "pattern"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", r"looks binary"),
        (b"caf\xe9 cr\xe8me \xff\xfe\xfd\x80", r"not UTF-8 .* and not GB18030"),
        (codecs.BOM_UTF16_LE + b"\x00\xd8", r"UTF-16LE byte-order mark but is not valid"),
    ],
)
def test_binary_or_undecodable_file_is_refused(backend: Any, startup: Startup, data: bytes, pattern: str) -> None:
    bucket = backend.bucket()
    backend.put(bucket, "photo.txt", data)
    with pytest.raises(InvalidRequestError, match=pattern):
        backend.deliver(backend.adapter(startup), bucket, "photo.txt")
    assert backend.keys(bucket) == ["photo.txt"]


def test_unavailable_model_raises_for_file_events(backend: Any, broken_startup: Startup) -> None:
    bucket = backend.bucket()
    backend.put(bucket, "a.txt", CHINESE.encode("utf-8"))
    with pytest.raises(ModelUnavailableError):
        backend.deliver(backend.adapter(broken_startup), bucket, "a.txt")
    assert backend.keys(bucket) == ["a.txt"]


# --- Lambda deadlines (Cloud Functions gives no remaining time) --------------------------------------------
def test_no_time_left_fails_before_reading_and_writes_nothing(
    s3_backend: S3Backend, startup: Startup, caplog: pytest.LogCaptureFixture
) -> None:
    backend = s3_backend
    bucket = backend.bucket()
    backend.put(bucket, "a.txt", CHINESE.encode("utf-8"))
    margin = startup.config.deadline_margin_s
    with caplog.at_level(logging.ERROR), pytest.raises(DeadlineExceededError, match="nothing was written"):
        backend.deliver(backend.adapter(startup), bucket, "a.txt", seconds_left=margin - 1)
    assert backend.keys(bucket) == ["a.txt"]
    assert any("nothing was written" in record.getMessage() for record in caplog.records)


def test_a_file_longer_than_the_time_left_fails_and_writes_nothing(s3_backend: S3Backend, startup: Startup) -> None:
    # GIVEN a long document and 0.3 s of invocation time beyond the safety margin
    backend = s3_backend
    bucket = backend.bucket()
    # (a distinct Chinese character in each paragraph: digits would all become one protected placeholder)
    sentence = "今天天气很好，我们去公园散步，然后在湖边吃午饭。"
    long_text = "\n".join(f"第{chr(0x4E00 + i)}段。{sentence}" for i in range(400))
    backend.put(bucket, "long.txt", long_text.encode("utf-8"))
    margin = startup.config.deadline_margin_s
    # WHEN the event arrives THEN the translation stops with DeadlineExceededError and writes nothing
    with pytest.raises(DeadlineExceededError):
        backend.deliver(backend.adapter(startup), bucket, "long.txt", seconds_left=margin + 0.3)
    assert backend.keys(bucket) == ["long.txt"]


def test_events_other_than_object_created_are_ignored(s3_backend: S3Backend, startup: Startup) -> None:
    backend = s3_backend
    bucket = backend.bucket()
    event = load_event(S3_OBJECT_CREATED)
    event["Records"][0]["eventName"] = "ObjectRemoved:Delete"
    event["Records"][0]["s3"]["bucket"]["name"] = bucket
    assert backend.adapter(startup).handle(event, lambda_context(60)) == {"results": []}
    assert backend.keys(bucket) == []


def test_gcs_events_of_other_types_are_ignored(
    gcs_client: Any, entry_modules: dict[str, Any], startup: Startup
) -> None:
    backend = GcsBackend(gcs_client, entry_modules)
    event = load_event(GCS_OBJECT_FINALIZED)
    adapter = backend.adapter(startup)
    assert adapter.handle_storage_event("google.cloud.storage.object.v1.deleted", event["data"]) is None
