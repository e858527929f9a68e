"""Object stores the file adapters read from and write to: Amazon S3 (boto3) and Google Cloud Storage.

Each store reads an object's size and bytes and writes a whole object in one request, so a reader sees the old
state or the complete new object, never a partial one (a single S3 PUT and a single-request Cloud Storage upload
are atomic). The SDKs are imported when a store is built, so an AWS deployment never needs the Google SDK and
the other way round.

Endpoints follow each SDK's own settings: ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` for S3-compatible
servers, ``STORAGE_EMULATOR_HOST`` for a Cloud Storage emulator.

Each request is one attempt bounded by ``StoreTimeouts`` (connect 3 s, read 10 s: a stalled server fails the
attempt instead of the whole invocation); the SDKs' own retries are off, and ``transient(error)`` says which
failures ``handler.storage.retry.RetryingStore`` may retry within the invocation's deadline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from handler.config import ENV_MAX_FILE_BYTES
from handler.errors import RequestTooLargeError

OUTPUT_CONTENT_TYPE = "text/plain; charset=utf-8"

# google-cloud-storage switches to a resumable (multi-request) upload above this size; we stay at one request
_GCS_SINGLE_REQUEST_LIMIT = 8 * 1024 * 1024

# S3 error codes worth another attempt besides any HTTP 5xx (SlowDown is S3's throttling answer)
_S3_TRANSIENT_CODES = frozenset({"SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "Throttling"})


@dataclass(frozen=True)
class StoreTimeouts:
    """Seconds one storage request may take to connect, and to wait for each read of its answer."""

    connect_s: float = 3.0
    read_s: float = 10.0


def s3_client_config(timeouts: StoreTimeouts | None = None) -> Any:
    """botocore's ``Config`` for ``S3Store``: these timeouts and one attempt per call (``RetryingStore`` retries)."""
    from botocore.config import Config

    timeouts = timeouts or StoreTimeouts()
    return Config(connect_timeout=timeouts.connect_s, read_timeout=timeouts.read_s, retries={"total_max_attempts": 1})


@dataclass(frozen=True)
class ObjectRef:
    """One object: ``scheme`` is "s3" or "gs", ``key`` is the decoded object key / name."""

    scheme: str
    bucket: str
    key: str

    def __str__(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.key}"


class ObjectStore(Protocol):
    scheme: str

    def size(self, ref: ObjectRef) -> int: ...

    def read(self, ref: ObjectRef) -> bytes: ...

    def write(
        self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str], content_type: str = OUTPUT_CONTENT_TYPE
    ) -> None: ...


@dataclass(frozen=True)
class VersionedObject:
    """An object's bytes with the version a conditional write can name (S3: the ETag; Cloud Storage: generation)."""

    data: bytes
    version: str
    metadata: dict[str, str]


class VersionedStore(ObjectStore, Protocol):
    """What the fan-out path needs beyond ``ObjectStore``: versions, conditional writes and listings.

    ``write_if`` writes only while the object is at ``version`` (None: only while it does not exist) and returns
    False, writing nothing, otherwise: the store decides atomically (S3 ``If-Match`` / ``If-None-Match``, Cloud
    Storage ``ifGenerationMatch``), so of two concurrent writers at most one succeeds.
    """

    def version(self, ref: ObjectRef) -> str | None: ...

    def read_versioned(self, ref: ObjectRef) -> VersionedObject | None: ...

    def write_if(
        self,
        ref: ObjectRef,
        data: bytes,
        metadata: Mapping[str, str],
        version: str | None,
        content_type: str = OUTPUT_CONTENT_TYPE,
    ) -> bool: ...

    def list_keys(self, bucket: str, prefix: str) -> list[str]: ...


class S3Store:
    """Amazon S3 or any S3-protocol server, through boto3."""

    scheme = "s3"

    def __init__(self, client: Any | None = None) -> None:
        """``client``: a boto3 S3 client, best built with ``config=s3_client_config()``; default: that one."""
        if client is None:
            import boto3

            client = boto3.client("s3", config=s3_client_config())
        self.client = client

    def transient(self, error: BaseException) -> bool:
        """A failure another attempt may not meet: no connection, a timeout, a cut body, 5xx, throttling."""
        from botocore.exceptions import (
            ClientError,
            HTTPClientError,
            IncompleteReadError,
            ResponseStreamingError,
        )
        from botocore.exceptions import ConnectionError as BotocoreConnectionError
        from urllib3.exceptions import HTTPError as Urllib3Error

        if isinstance(error, ClientError):
            status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            return status >= 500 or status == 429 or _s3_code(error) in _S3_TRANSIENT_CODES
        return isinstance(
            error,
            (
                BotocoreConnectionError,
                HTTPClientError,
                IncompleteReadError,
                ResponseStreamingError,
                Urllib3Error,
                ConnectionError,
                TimeoutError,
            ),
        )

    def size(self, ref: ObjectRef) -> int:
        return int(self.client.head_object(Bucket=ref.bucket, Key=ref.key)["ContentLength"])

    def read(self, ref: ObjectRef) -> bytes:
        return _body_bytes(self.client.get_object(Bucket=ref.bucket, Key=ref.key))

    def write(
        self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str], content_type: str = OUTPUT_CONTENT_TYPE
    ) -> None:
        """One PutObject: S3 stores the whole object or nothing. Metadata values must be ASCII (an S3 rule)."""
        self.client.put_object(
            Bucket=ref.bucket,
            Key=ref.key,
            Body=data,
            ContentType=content_type,
            Metadata=dict(metadata),
        )

    def version(self, ref: ObjectRef) -> str | None:
        from botocore.exceptions import ClientError

        try:
            return str(self.client.head_object(Bucket=ref.bucket, Key=ref.key)["ETag"])
        except ClientError as error:
            if _s3_code(error) in ("404", "NoSuchKey", "NotFound"):
                return None
            raise

    def read_versioned(self, ref: ObjectRef) -> VersionedObject | None:
        from botocore.exceptions import ClientError

        try:
            response = self.client.get_object(Bucket=ref.bucket, Key=ref.key)
        except ClientError as error:
            if _s3_code(error) in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        return VersionedObject(_body_bytes(response), str(response["ETag"]), dict(response.get("Metadata") or {}))

    def write_if(
        self,
        ref: ObjectRef,
        data: bytes,
        metadata: Mapping[str, str],
        version: str | None,
        content_type: str = OUTPUT_CONTENT_TYPE,
    ) -> bool:
        """One conditional PutObject (S3 conditional writes: ``If-None-Match: *`` or ``If-Match: ETag``)."""
        from botocore.exceptions import ClientError

        condition = {"IfNoneMatch": "*"} if version is None else {"IfMatch": version}
        try:
            self.client.put_object(
                Bucket=ref.bucket,
                Key=ref.key,
                Body=data,
                ContentType=content_type,
                Metadata=dict(metadata),
                **condition,
            )
        except ClientError as error:
            # 412: the condition failed; 409: a concurrent conditional write to the same key won
            if _s3_code(error) in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409"):
                return False
            raise
        return True

    def delete(self, ref: ObjectRef, version: str | None = None) -> bool:
        """DeleteObject (only while the object is at ``version``, when given); False when it was not there."""
        if self.version(ref) is None:
            return False
        condition = {} if version is None else {"IfMatch": version}
        self.client.delete_object(Bucket=ref.bucket, Key=ref.key, **condition)
        return True

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        keys: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys.extend(str(item["Key"]) for item in page.get("Contents", []))
        return sorted(keys)


def _body_bytes(response: Mapping[str, Any]) -> bytes:
    """A GetObject response's body, read whole and closed."""
    body = response["Body"]
    try:
        return bytes(body.read())
    finally:
        body.close()


def _s3_code(error: Any) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


class GcsStore:
    """Google Cloud Storage through google-cloud-storage."""

    scheme = "gs"

    def __init__(self, client: Any | None = None, timeouts: StoreTimeouts | None = None) -> None:
        if client is None:
            from google.cloud import storage

            client = storage.Client()
        self.client = client
        timeouts = timeouts or StoreTimeouts()
        # every call: one attempt ("retry": None turns the SDK's own retry off), bounded by these timeouts
        self._once = {"timeout": (timeouts.connect_s, timeouts.read_s), "retry": None}

    def transient(self, error: BaseException) -> bool:
        """The SDK's own retry predicate (what its DEFAULT_RETRY retries: 429, 5xx, connection errors, timeouts,
        cut bodies), plus a download whose checksum does not match (a body cut short)."""
        from google.cloud.storage.exceptions import DataCorruption
        from google.cloud.storage.retry import _should_retry

        return isinstance(error, DataCorruption) or bool(_should_retry(error))

    def size(self, ref: ObjectRef) -> int:
        blob = self.client.bucket(ref.bucket).get_blob(ref.key, **self._once)
        if blob is None:
            raise FileNotFoundError(f"{ref} does not exist")
        return int(blob.size)

    def read(self, ref: ObjectRef) -> bytes:
        return bytes(self.client.bucket(ref.bucket).blob(ref.key).download_as_bytes(**self._once))

    def write(
        self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str], content_type: str = OUTPUT_CONTENT_TYPE
    ) -> None:
        """One single-request upload: Cloud Storage creates the object only once the request completes."""
        if len(data) > _GCS_SINGLE_REQUEST_LIMIT:
            raise RequestTooLargeError(
                f"the translation for {ref} is {len(data):,} bytes; one upload request carries at most "
                f"{_GCS_SINGLE_REQUEST_LIMIT:,}; lower {ENV_MAX_FILE_BYTES} so that inputs stay smaller"
            )
        blob = self.client.bucket(ref.bucket).blob(ref.key)
        blob.metadata = dict(metadata)
        blob.upload_from_string(data, content_type=content_type, **self._once)

    def version(self, ref: ObjectRef) -> str | None:
        blob = self.client.bucket(ref.bucket).get_blob(ref.key, **self._once)
        return None if blob is None else _generation(blob)

    def read_versioned(self, ref: ObjectRef) -> VersionedObject | None:
        bucket = self.client.bucket(ref.bucket)
        blob = bucket.get_blob(ref.key, **self._once)
        if blob is None:
            return None
        # downloaded through a blob the client names itself: the media link a server returns (the Cloud Storage
        # emulator's) may not encode a "%" in the name, so "a%2Fb.txt" would be fetched as "a/b.txt"
        data = bucket.blob(ref.key).download_as_bytes(if_generation_match=blob.generation, **self._once)
        return VersionedObject(bytes(data), _generation(blob), dict(blob.metadata or {}))

    def write_if(
        self,
        ref: ObjectRef,
        data: bytes,
        metadata: Mapping[str, str],
        version: str | None,
        content_type: str = OUTPUT_CONTENT_TYPE,
    ) -> bool:
        """One single-request upload with ``ifGenerationMatch`` (0: only if the object does not exist)."""
        from google.api_core.exceptions import PreconditionFailed

        if len(data) > _GCS_SINGLE_REQUEST_LIMIT:
            raise RequestTooLargeError(
                f"{ref} would be {len(data):,} bytes; one upload request carries at most {_GCS_SINGLE_REQUEST_LIMIT:,}"
            )
        blob = self.client.bucket(ref.bucket).blob(ref.key)
        blob.metadata = dict(metadata)
        # "": an object whose generation the server did not report (emulators): written unconditionally
        condition = {} if version == "" else {"if_generation_match": int(version or 0)}
        try:
            blob.upload_from_string(data, content_type=content_type, **condition, **self._once)
        except PreconditionFailed:
            return False
        return True

    def delete(self, ref: ObjectRef, version: str | None = None) -> bool:
        """Delete the blob (only while it is at generation ``version``, when given); False when it was not there."""
        from google.api_core.exceptions import NotFound, PreconditionFailed

        condition = {} if not version else {"if_generation_match": int(version)}
        try:
            self.client.bucket(ref.bucket).blob(ref.key).delete(**condition, **self._once)
        except NotFound:
            return False
        except PreconditionFailed:
            return False
        return True

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        return sorted(str(blob.name) for blob in self.client.list_blobs(bucket, prefix=prefix, **self._once))


def _generation(blob: Any) -> str:
    """A blob's generation as a version string ("" when the server reports none, as some emulators do)."""
    return "" if blob.generation is None else str(blob.generation)
