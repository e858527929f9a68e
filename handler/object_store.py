"""Object stores the file adapters read from and write to: Amazon S3 (boto3) and Google Cloud Storage.

Each store reads an object's size and bytes and writes a whole object in one request, so a reader sees the old
state or the complete new object, never a partial one (a single S3 PUT and a single-request Cloud Storage upload
are atomic). The SDKs are imported when a store is built, so an AWS deployment never needs the Google SDK and
the other way round.

Endpoints follow each SDK's own settings: ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` for S3-compatible
servers, ``STORAGE_EMULATOR_HOST`` for a Cloud Storage emulator.
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

    def write(self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str]) -> None: ...


class S3Store:
    """Amazon S3 or any S3-protocol server, through boto3."""

    scheme = "s3"

    def __init__(self, client: Any | None = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("s3")
        self.client = client

    def size(self, ref: ObjectRef) -> int:
        return int(self.client.head_object(Bucket=ref.bucket, Key=ref.key)["ContentLength"])

    def read(self, ref: ObjectRef) -> bytes:
        response = self.client.get_object(Bucket=ref.bucket, Key=ref.key)
        body = response["Body"]
        try:
            return bytes(body.read())
        finally:
            body.close()

    def write(self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str]) -> None:
        """One PutObject: S3 stores the whole object or nothing. Metadata values must be ASCII (an S3 rule)."""
        self.client.put_object(
            Bucket=ref.bucket,
            Key=ref.key,
            Body=data,
            ContentType=OUTPUT_CONTENT_TYPE,
            Metadata=dict(metadata),
        )


class GcsStore:
    """Google Cloud Storage through google-cloud-storage."""

    scheme = "gs"

    def __init__(self, client: Any | None = None) -> None:
        if client is None:
            from google.cloud import storage

            client = storage.Client()
        self.client = client

    def size(self, ref: ObjectRef) -> int:
        blob = self.client.bucket(ref.bucket).get_blob(ref.key)
        if blob is None:
            raise FileNotFoundError(f"{ref} does not exist")
        return int(blob.size)

    def read(self, ref: ObjectRef) -> bytes:
        return bytes(self.client.bucket(ref.bucket).blob(ref.key).download_as_bytes())

    def write(self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str]) -> None:
        """One single-request upload: Cloud Storage creates the object only once the request completes."""
        if len(data) > _GCS_SINGLE_REQUEST_LIMIT:
            raise RequestTooLargeError(
                f"the translation for {ref} is {len(data):,} bytes; one upload request carries at most "
                f"{_GCS_SINGLE_REQUEST_LIMIT:,}; lower {ENV_MAX_FILE_BYTES} so that inputs stay smaller"
            )
        blob = self.client.bucket(ref.bucket).blob(ref.key)
        blob.metadata = dict(metadata)
        blob.upload_from_string(data, content_type=OUTPUT_CONTENT_TYPE)
