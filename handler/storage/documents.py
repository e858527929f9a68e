"""Document jobs: a whole file uploaded, translated in the background, downloaded once (DeepL's document API).

Framework-free: ``handler.api.compat.deepl`` maps HTTP to these calls. ``DocumentJobs`` has three operations:

* ``create(upload)`` checks the file (its suffix must be one of ``handler.storage.files.FILE_SUFFIXES``: else
  ``InvalidRequestError`` listing them; over ``TRANSLATE_MAX_FILE_BYTES``: ``RequestTooLargeError``; empty:
  ``InvalidRequestError``), stores it and its record and starts its translation; it returns the ``document_id``
  (32 hexadecimal digits) and the ``document_key`` (``secrets.token_urlsafe``, 256 bits). Only the key's SHA-256
  is stored; every later call compares digests with ``hmac.compare_digest``.
* ``status(id, key)``: ``queued``, ``translating`` (with ``seconds_remaining`` estimated from the progress),
  ``done`` (with ``billed_characters``) or ``error`` (with ``error_message``: a corrupt subtitle, a binary
  ``.txt``; no result is ever written then).
* ``take_result(id, key)``: the translation, once. The record moves to ``downloaded`` by a conditional write (of
  two concurrent downloads one gets the file, the other ``DocumentNotFoundError``), then the source, the result
  and any fan-out objects are deleted; the record stays as a tombstone without text, so a second download is told
  why there is nothing. Before ``done``: ``DocumentNotReadyError``.

An unknown id is ``DocumentNotFoundError``; a wrong key ``DocumentKeyError`` (the id exists, but the caller may not
see it). The record (``documents/<id>.json`` in the state location, ``handler.storage.state``) holds the file name,
sizes, the status, the times, and the options the translation applies (``options``: ``TranslateOptions`` values as
JSON, the Chinese variant and a ``glossary`` mapping; ``target`` and ``formality`` as asked).

Two backends:

* ``LocalDocuments`` (the local server; functions-framework without an output bucket): record, source
  (``documents/<id>/source.<ext>``) and result (``documents/<id>/result.<ext>``) in the local state folder; a
  background thread of the process translates one document at a time from a bounded queue
  (``LOCAL_QUEUE_SIZE``: a full queue is ``DocumentQueueFullError``, HTTP 429, which DeepL's clients retry). A
  server restarted with documents left queued or translating queues them again. Documents not downloaded within
  ``RETENTION_S`` are deleted by the next upload.
* ``BucketDocuments`` (AWS and GCP: ``TRANSLATE_OUTPUT_BUCKET`` and ``TRANSLATE_DOCUMENT_BUCKET`` set): the
  record lives under the state prefix of the output bucket; the source is written to the document bucket (the
  deployment's input bucket) as ``TRANSLATE_DOCUMENT_PREFIX<id>/document.<ext>``, and its upload event translates
  it like any other upload (``translate_document_upload``: the record's options applied, fan-out included), into
  ``TRANSLATE_OUTPUT_PREFIX`` + that key in the output bucket. So a document larger than one invocation's time
  completes through the fan-out. The status is read from the record (an event writes ``translating`` and, for a
  file that can never be translated, ``error``), the output object (``done``) and the fan-out's manifest
  (progress). Documents never downloaded are removed by the buckets' lifecycle rules (infra templates).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import queue
import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from handler.config import (
    ENV_DOCUMENT_BUCKET,
    ENV_MAX_FILE_BYTES,
    ENV_OUTPUT_BUCKET,
    RuntimeConfig,
)
from handler.errors import (
    ConfigurationError,
    InvalidRequestError,
    RequestTooLargeError,
    TranslatorError,
)
from handler.service import TranslateOptions, TranslationService
from handler.storage import files
from handler.storage.bulk import JobLayout, handle_object_event, job_id, read_progress
from handler.storage.files import (
    FILE_SUFFIXES,
    UploadRefusedError,
    decode_text,
    format_for,
    plan_output,
    translate_file_bytes,
)
from handler.storage.object_store import ObjectRef, VersionedStore
from handler.storage.state import StateLocation, StateStore

logger = logging.getLogger(__name__)

RECORD_FORMAT = 1
DOCUMENTS_DIR = "documents/"
RECORD_CONTENT_TYPE = "application/json"
RETENTION_S = 24 * 3600  # a document not downloaded within a day is deleted (local: by the next upload)
LOCAL_QUEUE_SIZE = 16  # documents waiting for the local worker; one more is refused (429)
ESTIMATED_CHARS_PER_S = 500.0  # the speed assumed before a translation has measured its own
MAX_SWAP_ATTEMPTS = 20
ID_PATTERN = re.compile(r"[0-9A-F]{32}")

QUEUED, TRANSLATING, DONE, ERROR, DOWNLOADED = "queued", "translating", "done", "error", "downloaded"

# errors a retry cannot mend: the document's status becomes "error" at once
PERMANENT_ERRORS: tuple[type[TranslatorError], ...] = (InvalidRequestError, RequestTooLargeError, UploadRefusedError)


class DocumentNotFoundError(TranslatorError):
    """No document with this id (never uploaded, expired, or already downloaded): HTTP 404."""

    code = "document_not_found"
    status = 404


class DocumentKeyError(TranslatorError):
    """The document exists but the ``document_key`` is not its key: HTTP 403."""

    code = "document_key_invalid"
    status = 403


class DocumentNotReadyError(TranslatorError):
    """The translation is not finished yet: HTTP 503 (DeepL's clients wait and ask again)."""

    code = "document_not_ready"
    status = 503


class DocumentQueueFullError(TranslatorError):
    """The local worker has ``LOCAL_QUEUE_SIZE`` documents waiting: HTTP 429 (DeepL's clients retry later)."""

    code = "document_queue_full"
    status = 429


@dataclass(frozen=True)
class DocumentUpload:
    """What an upload asks for."""

    name: str  # the file name the client gave (its suffix chooses the format)
    data: bytes
    options: Mapping[str, Any] = field(default_factory=dict)  # TranslateOptions values as JSON (source, glossary)
    target: str = "EN-US"
    formality: str | None = None


@dataclass(frozen=True)
class DocumentHandle:
    document_id: str
    document_key: str


@dataclass(frozen=True)
class DocumentStatus:
    document_id: str
    status: str  # queued, translating, done, error
    seconds_remaining: int | None = None
    billed_characters: int | None = None
    error_message: str | None = None


@dataclass(frozen=True)
class DocumentResult:
    data: bytes
    name: str
    content_type: str


class DocumentJobs(Protocol):
    def create(self, upload: DocumentUpload) -> DocumentHandle: ...

    def status(self, document_id: str, document_key: str) -> DocumentStatus: ...

    def take_result(self, document_id: str, document_key: str) -> DocumentResult: ...

    def state(self) -> StateLocation: ...


def suffix_of(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 or (dot == 0 and len(name) > 1) else ""


def check_upload(upload: DocumentUpload, config: RuntimeConfig) -> str:
    """The upload's suffix; ``InvalidRequestError`` / ``RequestTooLargeError`` saying what is allowed."""
    suffix = suffix_of(upload.name)
    if suffix not in FILE_SUFFIXES:
        shown = f"{suffix!r}" if suffix else "no suffix"
        raise InvalidRequestError(
            f"{upload.name!r} has {shown}; this server translates documents with the suffixes "
            f"{', '.join(FILE_SUFFIXES)}"
        )
    if len(upload.data) > config.max_file_bytes:
        raise RequestTooLargeError(
            f"{upload.name!r} is {len(upload.data):,} bytes; the limit is {config.max_file_bytes:,} "
            f"({ENV_MAX_FILE_BYTES})"
        )
    if not upload.data:
        raise InvalidRequestError(f"{upload.name!r} is empty; upload a document with text to translate")
    TranslateOptions.from_stored(upload.options)  # InvalidRequestError now rather than an error status later
    return suffix


def content_type_for(name: str) -> str:
    """What a translation of the file ``name`` is served as: its format's content type."""
    return files.content_type_for(format_for(name))


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _json(payload: Mapping[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, sort_keys=True).encode("utf-8")


def _characters(data: bytes, name: str) -> int | None:
    """The characters a text document bills (None for a format that is not text, or data that is not)."""
    try:
        return len(decode_text(data, name)[0])
    except InvalidRequestError:
        return None


def _remaining(characters: int | None, done: int, elapsed: float) -> int:
    """Seconds left at the measured speed (``done`` characters in ``elapsed`` seconds), or the assumed one."""
    total = characters or 0
    speed = done / elapsed if done > 0 and elapsed > 0 else ESTIMATED_CHARS_PER_S
    return max(1, round(max(0, total - done) / speed)) if total > done else 1


class _Records:
    """The records of one state location, updated with compare-and-swap."""

    def __init__(self, state: StateLocation) -> None:
        self.location = state

    def ref(self, document_id: str) -> ObjectRef:
        return self.location.ref(f"{DOCUMENTS_DIR}{document_id}.json")

    def create(self, record: dict[str, Any]) -> None:
        if not self.location.store.write_if(self.ref(record["id"]), _json(record), {}, None, RECORD_CONTENT_TYPE):
            raise TranslatorError(f"document id {record['id']} exists already")  # 128 random bits: never

    def load(self, document_id: str) -> dict[str, Any] | None:
        if not ID_PATTERN.fullmatch(document_id):
            return None
        found = self.location.store.read_versioned(self.ref(document_id))
        return None if found is None else dict(json.loads(found.data))

    def checked(self, document_id: str, document_key: str) -> dict[str, Any]:
        """The record, if ``document_key`` is its key."""
        record = self.load(document_id)
        if record is None:
            raise DocumentNotFoundError(
                f"document {document_id!r} not found: it was never uploaded here, has expired, or its id is mistyped"
            )
        if not hmac.compare_digest(_digest(document_key or "").encode(), str(record["key_sha256"]).encode()):
            raise DocumentKeyError(f"the document_key is not the key of document {document_id}")
        return record

    def update(self, document_id: str, change: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
        """Apply ``change`` (True: it changed the record) atomically; the record as stored (None: there is none)."""
        ref = self.ref(document_id)
        for _ in range(MAX_SWAP_ATTEMPTS):
            found = self.location.store.read_versioned(ref)
            if found is None:
                return None
            record = dict(json.loads(found.data))
            if not change(record):
                return record
            if self.location.store.write_if(ref, _json(record), {}, found.version, RECORD_CONTENT_TYPE):
                return record
        raise TranslatorError(f"the record of document {document_id} changed {MAX_SWAP_ATTEMPTS} times meanwhile")

    def mark_downloaded(self, document_id: str) -> bool:
        """Move a done record to downloaded; False when another download got there first."""
        won = False

        def downloaded(record: dict[str, Any]) -> bool:
            nonlocal won
            if record["status"] != DONE:
                return False
            record.update(status=DOWNLOADED, downloaded=time.time(), name="", options={})
            won = True
            return True

        self.update(document_id, downloaded)
        return won


def _new_record(upload: DocumentUpload, suffix: str, **extra: Any) -> tuple[dict[str, Any], str]:
    document_id = secrets.token_hex(16).upper()
    key = secrets.token_urlsafe(32)
    record = {
        "format": RECORD_FORMAT,
        "id": document_id,
        "key_sha256": _digest(key),
        "name": upload.name,
        "suffix": suffix,
        "bytes": len(upload.data),
        "characters": _characters(upload.data, upload.name),
        "created": time.time(),
        "status": QUEUED,
        "options": dict(upload.options),
        "target": upload.target,
        "formality": upload.formality,
        **extra,
    }
    return record, key


def _status_of(record: dict[str, Any]) -> DocumentStatus:
    status = record["status"]
    if status == DOWNLOADED:
        raise DocumentNotFoundError(
            f"document {record['id']} was downloaded already; a translation is deleted after its first download"
        )
    if status == ERROR:
        return DocumentStatus(record["id"], ERROR, error_message=str(record.get("error") or "translation failed"))
    if status == DONE:
        return DocumentStatus(record["id"], DONE, 0, record.get("characters"))
    return DocumentStatus(record["id"], status, _remaining(record.get("characters"), 0, 0))


def _not_ready(status: DocumentStatus) -> TranslatorError:
    if status.status == ERROR:
        return DocumentNotFoundError(
            f"document {status.document_id} could not be translated ({status.error_message}); there is no result"
        )
    return DocumentNotReadyError(f"document {status.document_id} is {status.status}; download it once it is done")


def _listed(store: StateStore, bucket: str, prefix: str) -> list[str]:
    try:
        return store.list_keys(bucket, prefix)
    except Exception:  # logged; the lifecycle rules remove what stays
        logger.exception("could not list %s/%s to delete it", bucket, prefix)
        return []


def _delete_all(store: StateStore, refs: list[ObjectRef], document_id: str) -> None:
    """Delete a document's objects. After a download (its record says so) a failure here is
    logged, never answered, or the caller would lose a translation it can no longer fetch."""
    for ref in refs:
        try:
            store.delete(ref)
        except Exception:
            logger.exception(
                "document %s: could not delete %s (the lifecycle rules, or locally the next upload, will)",
                document_id,
                ref,
            )


def _failure_message(error: BaseException) -> str:
    if isinstance(error, TranslatorError):
        return str(error)
    return "internal error while translating the document; the function's log has the details"


# --- the local server: a folder and a worker thread ---------------------------------------------------------------
class LocalDocuments:
    """Documents in a local state folder, translated by one background thread of this process."""

    def __init__(
        self,
        config: RuntimeConfig,
        service: Callable[[], TranslationService],
        location: Callable[[], StateLocation],
        queue_size: int = LOCAL_QUEUE_SIZE,
    ) -> None:
        self.config = config
        self._service = service
        self._location = location
        self._records: _Records | None = None
        self._queue: queue.Queue[str] = queue.Queue(maxsize=queue_size)
        self._progress: dict[str, tuple[int, int, float]] = {}  # id -> (done, total characters, started)
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None

    def state(self) -> StateLocation:
        return self.records.location

    @property
    def records(self) -> _Records:
        with self._lock:
            if self._records is None:
                self._records = _Records(self._location())
            return self._records

    def _source(self, record: Mapping[str, Any]) -> ObjectRef:
        return self.state().ref(f"{DOCUMENTS_DIR}{record['id']}/source{record['suffix']}")

    def _result(self, record: Mapping[str, Any]) -> ObjectRef:
        return self.state().ref(f"{DOCUMENTS_DIR}{record['id']}/result{record['suffix']}")

    def create(self, upload: DocumentUpload) -> DocumentHandle:
        suffix = check_upload(upload, self.config)
        self._service()  # ModelUnavailableError now rather than an error status later
        self._start_worker()
        self._purge_expired()
        if self._queue.full():
            raise DocumentQueueFullError(
                f"{self._queue.maxsize} documents are waiting to be translated; try again in a minute"
            )
        record, key = _new_record(upload, suffix)
        store = self.state().store
        store.write_if(self._source(record), upload.data, {}, None, content_type_for(upload.name))
        self.records.create(record)
        try:
            self._queue.put_nowait(record["id"])
        except queue.Full:
            self._discard(record)
            raise DocumentQueueFullError(
                f"{self._queue.maxsize} documents are waiting to be translated; try again in a minute"
            ) from None
        logger.info("document %s (%s, %s bytes) queued", record["id"], suffix, f"{len(upload.data):,}")
        return DocumentHandle(record["id"], key)

    def status(self, document_id: str, document_key: str) -> DocumentStatus:
        record = self.records.checked(document_id, document_key)
        progress = self._progress.get(document_id)
        if record["status"] == TRANSLATING and progress is not None:
            done, total, started = progress
            return DocumentStatus(document_id, TRANSLATING, _remaining(total, done, time.monotonic() - started))
        return _status_of(record)

    def take_result(self, document_id: str, document_key: str) -> DocumentResult:
        record = self.records.checked(document_id, document_key)
        status = _status_of(record)
        if status.status != DONE:
            raise _not_ready(status)
        data = self.state().store.read(self._result(record))
        if not self.records.mark_downloaded(document_id):
            raise DocumentNotFoundError(f"document {document_id} was downloaded already, by another request")
        _delete_all(self.state().store, [self._source(record), self._result(record)], document_id)
        return DocumentResult(data, record["name"], content_type_for(record["name"]))

    # --- the worker ---------------------------------------------------------------------------------------------
    def _start_worker(self) -> None:
        with self._lock:
            if self._worker is not None and self._worker.is_alive():
                return
            self._worker = threading.Thread(target=self._work, name="document-worker", daemon=True)
            self._worker.start()
        self._requeue_unfinished()

    def _requeue_unfinished(self) -> None:
        """Documents a previous process left queued or translating (a restart) are queued again."""
        for key in self.state().keys(DOCUMENTS_DIR):
            name = key[len(DOCUMENTS_DIR) :]
            if "/" in name or not name.endswith(".json"):
                continue
            record = self.records.load(name[: -len(".json")])
            if record is not None and record["status"] in (QUEUED, TRANSLATING) and record["id"] not in self._progress:
                try:
                    self._queue.put_nowait(record["id"])
                except queue.Full:
                    return

    def _work(self) -> None:
        while True:
            document_id = self._queue.get()
            try:
                self._translate(document_id)
            except Exception:  # the worker never dies; _translate records every failure it can
                logger.exception("document %s: the worker failed", document_id)
            finally:
                self._queue.task_done()

    def _translate(self, document_id: str) -> None:
        started = time.monotonic()

        def begin(record: dict[str, Any]) -> bool:
            if record["status"] not in (QUEUED, TRANSLATING):
                return False
            record.update(status=TRANSLATING, started=time.time())
            return True

        record = self.records.update(document_id, begin)
        if record is None or record["status"] != TRANSLATING:
            return  # downloaded, expired or finished by another process meanwhile
        self._progress[document_id] = (0, record.get("characters") or 0, started)

        def progress(done: int, total: int) -> None:
            self._progress[document_id] = (done, total, started)

        try:
            data = self.state().store.read(self._source(record))
            options = TranslateOptions.from_stored(record.get("options") or {})
            translated, encoding = translate_file_bytes(
                self._service(), data, record["name"], options, progress=progress
            )
            self.state().store.write_if(self._result(record), translated, {}, None, content_type_for(record["name"]))
        except Exception as error:
            message = _failure_message(error)
            if isinstance(error, TranslatorError):
                logger.warning("document %s could not be translated: %s", document_id, message)
            else:
                logger.exception("document %s could not be translated", document_id)
            _record_failure(self.records, document_id, message, final=True)
            return
        finally:
            measured = self._progress.pop(document_id, None)
        characters = record.get("characters")
        if characters is None and measured is not None:
            characters = measured[1]

        def finish(current: dict[str, Any]) -> bool:
            if current["status"] != TRANSLATING:  # expired meanwhile, or finished by another process
                return False
            current.update(status=DONE, finished=time.time(), encoding=encoding, characters=characters)
            return True

        self.records.update(document_id, finish)
        logger.info("document %s translated in %.1f s", document_id, time.monotonic() - started)

    # --- housekeeping -------------------------------------------------------------------------------------------
    def _discard(self, record: Mapping[str, Any]) -> None:
        """Delete a document and its record (refused at upload, or expired)."""
        _delete_all(
            self.state().store,
            [self._source(record), self._result(record), self.records.ref(record["id"])],
            record["id"],
        )

    def _purge_expired(self) -> None:
        horizon = time.time() - RETENTION_S
        for key in self.state().keys(DOCUMENTS_DIR):
            name = key[len(DOCUMENTS_DIR) :]
            if "/" in name or not name.endswith(".json"):
                continue
            record = self.records.load(name[: -len(".json")])
            if record is not None and float(record.get("created", 0)) < horizon and record["id"] not in self._progress:
                self._discard(record)


# --- AWS and GCP: the deployment's buckets and the event path ---------------------------------------------------
# a suffix the templates' upload triggers do not name, as the one of the same format they do (.htm -> .html)
SOURCE_SUFFIXES = {".htm": ".html", ".xhtml": ".html", ".markdown": ".md"}


def document_source(config: RuntimeConfig, scheme: str, document_id: str, suffix: str) -> ObjectRef:
    """Where an uploaded document waits for its upload event: the document bucket, under the document prefix, with
    the suffix of its format that the upload triggers name (``SOURCE_SUFFIXES``)."""
    suffix = SOURCE_SUFFIXES.get(suffix, suffix)
    return ObjectRef(scheme, config.document_bucket, f"{config.document_prefix}{document_id}/document{suffix}")


_SOURCE_KEY = re.compile(r"(?P<id>[0-9A-F]{32})/document\.[A-Za-z0-9]+")


def document_id_of(source: ObjectRef, config: RuntimeConfig) -> str | None:
    """The document id when ``source`` is a document's source object, else None."""
    if not config.document_bucket or source.bucket != config.document_bucket:
        return None
    if not source.key.startswith(config.document_prefix):
        return None
    match = _SOURCE_KEY.fullmatch(source.key[len(config.document_prefix) :])
    return match["id"] if match else None


class BucketDocuments:
    """Documents in the deployment's buckets, translated by its upload events."""

    def __init__(
        self, config: RuntimeConfig, service: Callable[[], TranslationService], store: Callable[[], StateStore]
    ) -> None:
        if not config.output_bucket or not config.document_bucket:
            raise ConfigurationError(
                f"documents in buckets need {ENV_OUTPUT_BUCKET} (their records and translations) and "
                f"{ENV_DOCUMENT_BUCKET} (the input bucket whose upload events translate them)"
            )
        self.config = config
        self._service = service
        self._store = store
        self._location: StateLocation | None = None
        self._lock = threading.Lock()

    def state(self) -> StateLocation:
        with self._lock:
            if self._location is None:
                self._location = StateLocation(self._store(), self.config.output_bucket, self.config.state_prefix)
            return self._location

    @property
    def records(self) -> _Records:
        return _Records(self.state())

    def create(self, upload: DocumentUpload) -> DocumentHandle:
        suffix = check_upload(upload, self.config)
        service = self._service()
        state = self.state()
        record, key = _new_record(upload, suffix)
        source = document_source(self.config, state.store.scheme, record["id"], suffix)
        # the fan-out's job id, should the event plan one (the same settings and bundle on every function)
        record["job"] = job_id(source, upload.data, str(service.info().get("bundle_hash", "")), self.config.part_chars)
        self.records.create(record)
        if not state.store.write_if(source, upload.data, {}, None, content_type_for(upload.name)):
            raise TranslatorError(f"{source} exists already")
        logger.info("document %s (%s, %s bytes) written to %s", record["id"], suffix, f"{len(upload.data):,}", source)
        return DocumentHandle(record["id"], key)

    def _refs(self, record: Mapping[str, Any]) -> tuple[ObjectRef, ObjectRef, JobLayout]:
        scheme = self.state().store.scheme
        source = document_source(self.config, scheme, record["id"], record["suffix"])
        layout = JobLayout.of(scheme, self.config.output_bucket, self.config.work_prefix, str(record.get("job", "")))
        return source, plan_output(source, self.config), layout

    def status(self, document_id: str, document_key: str) -> DocumentStatus:
        record = self.records.checked(document_id, document_key)
        if record["status"] in (ERROR, DOWNLOADED, DONE):
            return _status_of(record)
        store = self.state().store
        _, output, layout = self._refs(record)
        if store.version(output) is not None:
            return DocumentStatus(document_id, DONE, 0, record.get("characters"))
        if record.get("job") and store.version(layout.manifest) is not None:
            progress = read_progress(store, layout.manifest)
            if progress.status == "superseded":
                return DocumentStatus(document_id, ERROR, error_message="the translation was superseded")
            manifest = json.loads(store.read(layout.manifest))
            done = sum(part["characters"] for part in manifest["parts"] if part["index"] in progress.done)
            total = sum(part["characters"] for part in manifest["parts"])
            elapsed = time.time() - float(record.get("started") or record["created"])
            return DocumentStatus(document_id, TRANSLATING, _remaining(total, done, elapsed))
        elapsed = time.time() - float(record.get("started") or record["created"])
        stale_after = 3 * self.config.event_timeout_s  # the first try and the platform's retries
        if elapsed > stale_after:
            if record["status"] == TRANSLATING:
                last = record.get("last_error") or "no invocation reported an error"
                message = f"the translation did not complete within {stale_after:.0f} s (last error: {last})"
            else:  # no upload event began it: the trigger, or a function that could not start (its log says why)
                message = (
                    f"no upload event began translating the document within {stale_after:.0f} s; the function's "
                    "log and its failed-events queue say why"
                )
            return DocumentStatus(document_id, ERROR, error_message=message)
        return DocumentStatus(document_id, record["status"], _remaining(record.get("characters"), 0, elapsed))

    def take_result(self, document_id: str, document_key: str) -> DocumentResult:
        status = self.status(document_id, document_key)
        if status.status != DONE:
            raise _not_ready(status)
        record = self.records.checked(document_id, document_key)
        source, output, layout = self._refs(record)
        store = self.state().store
        data = store.read(output)

        def done(current: dict[str, Any]) -> bool:
            if current["status"] in (DONE, DOWNLOADED):
                return False
            current.update(status=DONE, finished=time.time())
            return True

        self.records.update(document_id, done)
        if not self.records.mark_downloaded(document_id):
            raise DocumentNotFoundError(f"document {document_id} was downloaded already, by another request")
        refs = [output, source]
        if record.get("job"):
            refs += [layout.ref(key) for key in _listed(store, layout.bucket, layout.prefix)]
        _delete_all(store, refs, document_id)
        return DocumentResult(data, record["name"], content_type_for(record["name"]))


def translate_document_upload(
    store: VersionedStore,
    source: ObjectRef,
    document_id: str,
    service: TranslationService,
    config: RuntimeConfig,
    *,
    deadline: float | None = None,
) -> dict[str, Any]:
    """The upload event of a document's source object: translated with its record's options (fan-out included).

    A failure no retry can mend (a corrupt or binary file) sets the record's status to ``error`` and is not raised
    (the platform would retry it in vain); any other failure is noted in the record and raised, so the platform
    retries the event. Without a record (expired, downloaded) the event is ignored.
    """
    records = _Records(StateLocation(store, config.output_bucket, config.state_prefix))  # type: ignore[arg-type]
    record = records.load(document_id)
    if record is None or record["status"] in (DONE, ERROR, DOWNLOADED):
        reason = "no record" if record is None else f"the document is {record['status']}"
        logger.info("ignoring the upload event of document %s: %s", document_id, reason)
        return {"source": str(source), "status": "ignored", "reason": reason}

    def begin(current: dict[str, Any]) -> bool:
        if current["status"] != QUEUED:
            return False
        current.update(status=TRANSLATING, started=time.time())
        return True

    records.update(document_id, begin)
    try:
        result = handle_object_event(store, source, service, config, deadline=deadline, options=record.get("options"))
    except PERMANENT_ERRORS as error:
        _record_failure(records, document_id, str(error), final=True)
        return {"source": str(source), "status": "failed", "document": document_id, "reason": str(error)}
    except Exception as error:
        _record_failure(records, document_id, _failure_message(error), final=False)
        raise
    if result.get("status") == "refused":
        _record_failure(records, document_id, str(result.get("reason")), final=True)
    elif result.get("status") == "translated":

        def finished(current: dict[str, Any]) -> bool:
            if current["status"] != TRANSLATING:
                return False
            current.update(status=DONE, finished=time.time())
            if current.get("characters") is None and result.get("characters"):
                current["characters"] = int(result["characters"])
            return True

        records.update(document_id, finished)
    return {**result, "document": document_id}


def _record_failure(records: _Records, document_id: str, message: str, *, final: bool) -> None:
    def failed(current: dict[str, Any]) -> bool:
        if current["status"] in (DONE, DOWNLOADED):
            return False
        if final:
            current.update(status=ERROR, error=message, finished=time.time())
        else:
            current["last_error"] = message
        return True

    try:
        records.update(document_id, failed)
    except Exception:  # the event's own failure is what the platform must see
        logger.exception("document %s: could not record its failure", document_id)


def handle_storage_object(
    store: VersionedStore,
    source: ObjectRef,
    service: TranslationService,
    config: RuntimeConfig,
    *,
    deadline: float | None = None,
) -> dict[str, Any]:
    """What the file adapters do with an "object created" event: a document's source, or any other upload."""
    document_id = document_id_of(source, config)
    if document_id is not None:
        return translate_document_upload(store, source, document_id, service, config, deadline=deadline)
    return handle_object_event(store, source, service, config, deadline=deadline)


# --- what each adapter serves ------------------------------------------------------------------------------------
class UnavailableDocuments:
    """A deployment that has nowhere to keep documents (a Lambda function without an output bucket)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def _refuse(self) -> ConfigurationError:
        return ConfigurationError(f"this deployment cannot keep documents: {self.reason}")

    def create(self, upload: DocumentUpload) -> DocumentHandle:
        raise self._refuse()

    def status(self, document_id: str, document_key: str) -> DocumentStatus:
        raise self._refuse()

    def take_result(self, document_id: str, document_key: str) -> DocumentResult:
        raise self._refuse()

    def state(self) -> StateLocation:
        raise self._refuse()


def documents_for(
    config: RuntimeConfig,
    service: Callable[[], TranslationService],
    bucket_store: Callable[[], StateStore] | None = None,
    *,
    local_fallback: bool = True,
) -> DocumentJobs:
    """The backend an adapter serves: its buckets when ``bucket_store`` is given and an output bucket is configured;
    otherwise the local folder (``local_fallback``) or a refusal saying what to configure."""
    if bucket_store is not None and config.output_bucket:
        if not config.document_bucket:
            return UnavailableDocuments(
                f"set {ENV_DOCUMENT_BUCKET} to the input bucket, whose upload events translate the documents"
            )
        return BucketDocuments(config, service, bucket_store)
    if local_fallback:
        from handler.storage.state import local_state

        return LocalDocuments(config, service, lambda: local_state(config))
    return UnavailableDocuments(
        f"set {ENV_OUTPUT_BUCKET} and {ENV_DOCUMENT_BUCKET}: documents live in the deployment's buckets"
    )
