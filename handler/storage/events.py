"""Storage notifications decoded into the objects to translate: S3 event records and Cloud Storage event data.

The platforms build these events, but a test event, a replayed message or a misconfigured trigger can carry
anything. A malformed record raises ``InvalidRequestError`` naming what is missing or of the wrong type, before
any object is read or written; nothing else escapes from here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote_plus

from handler.errors import InvalidRequestError
from handler.storage.object_store import ObjectRef
from handler.text.validation import require_unicode

logger = logging.getLogger(__name__)

S3_CREATED_PREFIX = "ObjectCreated:"


def _field(record: Any, path: tuple[str, ...], where: str) -> str:
    """The non-empty string at ``path`` inside ``record``; ``InvalidRequestError`` naming the path otherwise."""
    value = record
    for name in path:
        value = value.get(name) if isinstance(value, Mapping) else None
    if not isinstance(value, str) or not value:
        shown = "missing" if value is None else f"a {type(value).__name__}, not a non-empty string"
        raise InvalidRequestError(f"{where}: {'.'.join(path)} is {shown}")
    require_unicode(value, f"{where}: {'.'.join(path)}")  # JSON can carry a lone surrogate ("\ud800")
    return value


def _s3_key(encoded: str, where: str) -> str:
    """An S3 event's key decoded: S3 writes keys URL-encoded (spaces as "+") from their UTF-8 bytes, so an escape
    that does not decode to UTF-8 (``%FF``) names no object; it is refused rather than read as U+FFFD."""
    try:
        return unquote_plus(encoded, errors="strict")
    except UnicodeDecodeError:
        raise InvalidRequestError(
            f"{where}: s3.object.key {encoded[:80]!r} has percent-escapes that are not UTF-8; S3 writes a key as its "
            "URL-encoded UTF-8 bytes"
        ) from None


def s3_created_objects(event: Mapping[str, Any]) -> list[ObjectRef]:
    """The objects of an S3 notification's ``ObjectCreated:*`` records, keys decoded (``unquote_plus``).

    Records of other events are skipped (and logged); every record is checked before any is returned.
    """
    records = event.get("Records")
    if not isinstance(records, list):
        raise InvalidRequestError("S3 event: Records is not a list of records")
    objects: list[ObjectRef] = []
    for index, record in enumerate(records):
        where = f"S3 event record {index}"
        if not isinstance(record, Mapping):
            raise InvalidRequestError(f"{where} is a {type(record).__name__}, not an object")
        name = record.get("eventName")
        if not isinstance(name, str) or not name.startswith(S3_CREATED_PREFIX):
            logger.info("ignoring S3 event %s", name)
            continue
        bucket = _field(record, ("s3", "bucket", "name"), where)
        key = _s3_key(_field(record, ("s3", "object", "key"), where), where)
        objects.append(ObjectRef("s3", bucket, key))
    return objects


def storage_object(data: Any) -> ObjectRef:
    """The object of a Cloud Storage ``object.v1.finalized`` event's data (names arrive unencoded)."""
    where = "Cloud Storage event data"
    if not isinstance(data, Mapping):
        raise InvalidRequestError(f"{where} is {type(data).__name__}, not an object with bucket and name")
    return ObjectRef("gs", _field(data, ("bucket",), where), _field(data, ("name",), where))
