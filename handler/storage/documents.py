"""Documents: a whole file given to DeepL's document API, translated in the background, downloaded once.

"Document" means that here (docs/architecture.md, Words); the fan-out's "jobs" are ``handler.storage.bulk``'s.
Framework-free: ``handler.api.compat.deepl`` maps HTTP to these calls. ``Documents`` has three operations:

* ``create(upload)`` checks the file (its suffix must name a format, ``handler.formats.accepted_format``: else
  ``InvalidRequestError`` listing them; over ``TRANSLATE_MAX_FILE_BYTES``: ``RequestTooLargeError``; empty:
  ``InvalidRequestError``), stores it and its record (with its owner) and starts its translation; it returns the
  ``document_id`` (32 hexadecimal digits) and the ``document_key`` (``secrets.token_urlsafe``, 256 bits). Only the
  key's SHA-256 is stored; every later call compares digests with ``hmac.compare_digest``.
* ``status(id, key, owner)``: ``queued``, ``translating`` (with ``seconds_remaining`` estimated from the progress),
  ``done`` (with ``billed_characters``) or ``error`` (with ``error_message``: a corrupt subtitle, a binary
  ``.txt``; no result is ever written then, and the source is deleted before the error is recorded, so a failed
  document keeps no text).
* ``take_result(id, key, owner)``: the translation, once. The record moves to ``downloaded`` by a conditional write
  (of two concurrent downloads one gets the file, the other ``DocumentNotFoundError``), then the source, the result
  and any fan-out objects are deleted; the record stays as a tombstone without text, so a second download is told
  why there is nothing. Before ``done``: ``DocumentNotReadyError``.

A document belongs to the API key that uploaded it (``handler.storage.owners``), as a stored glossary does:
``DocumentUpload.owner`` is recorded (``owner``: ``shared`` without ``TRANSLATE_API_KEYS``, else the key's digest,
never the key), and ``status`` and ``take_result`` are given the caller's owner. An unknown id, and another owner's
document whatever its ``document_key``, is ``DocumentNotFoundError`` in the same words; a wrong ``document_key`` of
the caller's own document is ``DocumentKeyError`` (the id exists, but the caller may not see it). A record written
before documents had owners reads as ``shared``: keyed callers no longer see it.

The record (``documents/<id>.json`` in the state location, ``handler.storage.state``) holds the file name, sizes,
the status, the times, the owner, and the options the translation applies (``options``: ``TranslateOptions`` values
as JSON, the Chinese variant and a ``glossary`` mapping; ``target`` and ``formality`` as asked).

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
  it like any other upload (``handler.storage.dispatch`` hands it to ``translate_document_upload``, which keeps the
  record and applies its options; fan-out included), into
  ``TRANSLATE_OUTPUT_PREFIX`` + that key in the output bucket. So a document larger than one invocation's time
  completes through the fan-out. The status is read from the record (an event writes ``translating`` and, for a
  file that can never be translated, ``error``, deleting the source), the output object (``done``) and the
  fan-out's manifest (progress). Documents never downloaded are removed by the buckets' lifecycle rules (infra
  templates).
"""

from __future__ import annotations

import builtins
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
from dataclasses import asdict, dataclass, field, fields
from typing import Protocol

from handler import metrics
from handler.config import ENV_DOCUMENT_BUCKET, ENV_OUTPUT_BUCKET, RuntimeConfig
from handler.errors import ConfigurationError, InvalidRequestError, RequestTooLargeError, TranslatorError
from handler.formats import (
    FileFormat,
    accepted_format,
    check_size,
    content_type_for,
    format_for,
    suffix_of,
    translate_file,
)
from handler.formats.encodings import check_encoding
from handler.service import TranslateOptions, TranslationService
from handler.storage.bulk import JobLayout, job_id, read_progress
from handler.storage.files import META_ENCODING, Outcome, UploadRefusedError, plan_output
from handler.storage.object_store import ObjectRef, VersionedStore
from handler.storage.owners import SHARED_OWNER
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
    options: Mapping[str, object] = field(default_factory=dict)  # TranslateOptions values as JSON (source, glossary)
    target: str = "EN-US"
    formality: str | None = None
    encoding: str | None = None  # a text document's encoding as the client names it (else detected)
    owner: str = SHARED_OWNER  # whose it is: handler.storage.owners.owner_of the uploading key

    def source_metadata(self) -> dict[str, str]:
        """The metadata its source object is written with: the encoding, read back by ``read_upload``."""
        return {META_ENCODING: self.encoding} if self.encoding else {}


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


class Documents(Protocol):
    """``owner``: the caller's (``handler.storage.owners.owner_of``); another owner's document is not found."""

    def create(self, upload: DocumentUpload) -> DocumentHandle: ...

    def status(self, document_id: str, document_key: str, owner: str = SHARED_OWNER) -> DocumentStatus: ...

    def take_result(self, document_id: str, document_key: str, owner: str = SHARED_OWNER) -> DocumentResult: ...

    def state(self) -> StateLocation: ...


def check_upload(upload: DocumentUpload, config: RuntimeConfig) -> FileFormat:
    """The upload's format; ``InvalidRequestError`` / ``RequestTooLargeError`` saying what is allowed."""
    fmt = accepted_format(upload.name)
    check_size(len(upload.data), config.max_file_bytes, repr(upload.name))
    if not upload.data:
        raise InvalidRequestError(f"{upload.name!r} is empty; upload a document with text to translate")
    TranslateOptions.from_stored(upload.options)  # InvalidRequestError now rather than an error status later
    if upload.encoding:
        check_encoding(upload.encoding, repr(upload.name))
    return fmt


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _characters(fmt: FileFormat, data: bytes, name: str, encoding: str | None = None) -> int | None:
    """The characters a text document bills (None for a binary format, or data its format cannot read)."""
    if fmt.binary:
        return None
    try:
        return fmt.read(data, name, encoding).characters
    except InvalidRequestError:
        return None


@dataclass
class DocumentRecord:
    """``documents/<id>.json``: one document's name, sizes, status, times and the options its translation applies;
    reads and writes itself as JSON. Only the key's SHA-256 is kept, and of the API key that uploaded it only its
    owner digest (``handler.storage.owners``)."""

    id: str
    key_sha256: str
    name: str
    suffix: str
    bytes: int
    characters: int | None
    created: float
    status: str
    options: dict[str, object]
    target: str
    formality: str | None
    job: str | None = None  # the fan-out's job id, should the upload event plan one (buckets)
    started: float | None = None
    finished: float | None = None
    downloaded: float | None = None
    encoding: str | None = None
    error: str | None = None  # why it could not be translated (status "error")
    last_error: str | None = None  # an invocation's failure the platform retries
    owner: str = SHARED_OWNER  # whose it is (a record written before documents had owners: shared)
    format: int = RECORD_FORMAT

    def to_json(self) -> builtins.bytes:
        record = {name: value for name, value in asdict(self).items() if value is not None or name in _ALWAYS}
        return json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8")

    @classmethod
    def from_json(cls, data: builtins.bytes) -> DocumentRecord:
        record = json.loads(data)
        known = {f.name for f in fields(cls)}
        return cls(**{name: value for name, value in record.items() if name in known})

    def since(self) -> float:
        """When its translation began (or, before, when it was uploaded)."""
        return self.started or self.created


_ALWAYS = {"characters", "formality"}  # written as null when unknown, as records always had them


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

    def create(self, record: DocumentRecord) -> None:
        if not self.location.store.write_if(self.ref(record.id), record.to_json(), {}, None, RECORD_CONTENT_TYPE):
            raise TranslatorError(f"document id {record.id} exists already")  # 128 random bits: never

    def load(self, document_id: str) -> DocumentRecord | None:
        if not ID_PATTERN.fullmatch(document_id):
            return None
        found = self.location.store.read_versioned(self.ref(document_id))
        return None if found is None else DocumentRecord.from_json(found.data)

    def checked(self, document_id: str, document_key: str, owner: str) -> DocumentRecord:
        """The record, if it is ``owner``'s and ``document_key`` is its key. Another owner's document is not found,
        in the same words as an unknown id, whatever the ``document_key``: its existence is not told."""
        record = self.load(document_id)
        if record is None or not hmac.compare_digest(str(record.owner).encode(), owner.encode()):
            keyed = "" if owner == SHARED_OWNER else " (a document belongs to the API key that uploaded it)"
            raise DocumentNotFoundError(
                f"document {document_id!r} not found: it was never uploaded here, has expired, or its id is mistyped"
                + keyed
            )
        if not hmac.compare_digest(_digest(document_key or "").encode(), str(record.key_sha256).encode()):
            raise DocumentKeyError(f"the document_key is not the key of document {document_id}")
        return record

    def update(self, document_id: str, change: Callable[[DocumentRecord], bool]) -> DocumentRecord | None:
        """Apply ``change`` (True: it changed the record) atomically; the record as stored (None: there is none)."""
        ref = self.ref(document_id)
        for _ in range(MAX_SWAP_ATTEMPTS):
            found = self.location.store.read_versioned(ref)
            if found is None:
                return None
            record = DocumentRecord.from_json(found.data)
            if not change(record):
                return record
            if self.location.store.write_if(ref, record.to_json(), {}, found.version, RECORD_CONTENT_TYPE):
                return record
        raise TranslatorError(f"the record of document {document_id} changed {MAX_SWAP_ATTEMPTS} times meanwhile")

    def mark_downloaded(self, document_id: str) -> bool:
        """Move a done record to downloaded; False when another download got there first."""
        won = False

        def downloaded(record: DocumentRecord) -> bool:
            nonlocal won
            if record.status != DONE:
                return False
            record.status = DOWNLOADED
            record.downloaded = time.time()
            record.name = ""
            record.options = {}
            won = True
            return True

        self.update(document_id, downloaded)
        return won


def _new_record(upload: DocumentUpload, fmt: FileFormat) -> tuple[DocumentRecord, str]:
    key = secrets.token_urlsafe(32)
    record = DocumentRecord(
        id=secrets.token_hex(16).upper(),
        key_sha256=_digest(key),
        name=upload.name,
        suffix=suffix_of(upload.name),
        bytes=len(upload.data),
        characters=_characters(fmt, upload.data, upload.name, upload.encoding),
        created=time.time(),
        status=QUEUED,
        options=dict(upload.options),
        target=upload.target,
        formality=upload.formality,
        owner=upload.owner,
    )
    return record, key


def _status_of(record: DocumentRecord) -> DocumentStatus:
    status = record.status
    if status == DOWNLOADED:
        raise DocumentNotFoundError(
            f"document {record.id} was downloaded already; a translation is deleted after its first download"
        )
    if status == ERROR:
        return DocumentStatus(record.id, ERROR, error_message=str(record.error or "translation failed"))
    if status == DONE:
        return DocumentStatus(record.id, DONE, 0, record.characters)
    return DocumentStatus(record.id, status, _remaining(record.characters, 0, 0))


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

    def _source(self, record: DocumentRecord) -> ObjectRef:
        return self.state().ref(f"{DOCUMENTS_DIR}{record.id}/source{record.suffix}")

    def _result(self, record: DocumentRecord) -> ObjectRef:
        return self.state().ref(f"{DOCUMENTS_DIR}{record.id}/result{record.suffix}")

    def create(self, upload: DocumentUpload) -> DocumentHandle:
        fmt = check_upload(upload, self.config)
        self._service()  # ModelUnavailableError now rather than an error status later
        self._start_worker()
        self._purge_expired()
        if self._queue.full():
            raise DocumentQueueFullError(
                f"{self._queue.maxsize} documents are waiting to be translated; try again in a minute"
            )
        record, key = _new_record(upload, fmt)
        store = self.state().store
        store.write_if(self._source(record), upload.data, upload.source_metadata(), None, content_type_for(upload.name))
        self.records.create(record)
        try:
            self._queue.put_nowait(record.id)
        except queue.Full:
            self._discard(record)
            raise DocumentQueueFullError(
                f"{self._queue.maxsize} documents are waiting to be translated; try again in a minute"
            ) from None
        logger.info("document %s (%s, %s bytes) queued", record.id, record.suffix, f"{len(upload.data):,}")
        return DocumentHandle(record.id, key)

    def status(self, document_id: str, document_key: str, owner: str = SHARED_OWNER) -> DocumentStatus:
        record = self.records.checked(document_id, document_key, owner)
        progress = self._progress.get(document_id)
        if record.status == TRANSLATING and progress is not None:
            done, total, started = progress
            return DocumentStatus(document_id, TRANSLATING, _remaining(total, done, time.monotonic() - started))
        return _status_of(record)

    def take_result(self, document_id: str, document_key: str, owner: str = SHARED_OWNER) -> DocumentResult:
        record = self.records.checked(document_id, document_key, owner)
        status = _status_of(record)
        if status.status != DONE:
            raise _not_ready(status)
        data = self.state().store.read(self._result(record))
        if not self.records.mark_downloaded(document_id):
            raise DocumentNotFoundError(f"document {document_id} was downloaded already, by another request")
        _delete_all(self.state().store, [self._source(record), self._result(record)], document_id)
        return DocumentResult(data, record.name, content_type_for(record.name))

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
            if record is not None and record.status in (QUEUED, TRANSLATING) and record.id not in self._progress:
                try:
                    self._queue.put_nowait(record.id)
                except queue.Full:
                    return

    def _work(self) -> None:
        while True:
            document_id = self._queue.get()
            try:
                with metrics.measuring("document"):  # this process's own figures (handler.metrics)
                    self._translate(document_id)
            except Exception:  # the worker never dies; _translate records every failure it can
                logger.exception("document %s: the worker failed", document_id)
            finally:
                self._queue.task_done()

    def _translate(self, document_id: str) -> None:
        started = time.monotonic()

        def begin(record: DocumentRecord) -> bool:
            if record.status not in (QUEUED, TRANSLATING):
                return False
            record.status = TRANSLATING
            record.started = time.time()
            return True

        record = self.records.update(document_id, begin)
        if record is None or record.status != TRANSLATING:
            return  # downloaded, expired or finished by another process meanwhile
        self._progress[document_id] = (0, record.characters or 0, started)
        metrics.add("documents_started")

        def progress(done: int, total: int) -> None:
            self._progress[document_id] = (done, total, started)

        try:
            found = self.state().store.read_versioned(self._source(record))
            if found is None:
                raise TranslatorError(f"document {document_id}: its source is gone")
            options = TranslateOptions.from_stored(record.options or {})
            encoding = found.metadata.get(META_ENCODING) or None
            translated = translate_file(
                found.data, record.name, self._service(), options, progress=progress, encoding=encoding
            )
            self.state().store.write_if(self._result(record), translated.data, {}, None, translated.content_type)
            encoding = translated.source.encoding
            metrics.add("bytes_read", len(found.data))
            metrics.add("characters", translated.source.characters)
            metrics.add("bytes_written", len(translated.data))
        except Exception as error:
            metrics.add("documents_failed")
            metrics.refused(metrics.error_code_of(error))
            message = _failure_message(error)
            if isinstance(error, TranslatorError):
                logger.warning("document %s could not be translated: %s", document_id, message)
            else:
                logger.exception("document %s could not be translated", document_id)
            _record_error(self.records, document_id, message, self._source(record))
            return
        finally:
            measured = self._progress.pop(document_id, None)
        characters = record.characters
        if characters is None and measured is not None:
            characters = measured[1]

        def finish(current: DocumentRecord) -> bool:
            if current.status != TRANSLATING:  # expired meanwhile, or finished by another process
                return False
            current.status = DONE
            current.finished = time.time()
            current.encoding = encoding
            current.characters = characters
            return True

        self.records.update(document_id, finish)
        metrics.add("documents_finished")
        logger.info("document %s translated in %.1f s", document_id, time.monotonic() - started)

    # --- housekeeping -------------------------------------------------------------------------------------------
    def _discard(self, record: DocumentRecord) -> None:
        """Delete a document and its record (refused at upload, or expired)."""
        _delete_all(
            self.state().store,
            [self._source(record), self._result(record), self.records.ref(record.id)],
            record.id,
        )

    def _purge_expired(self) -> None:
        horizon = time.time() - RETENTION_S
        for key in self.state().keys(DOCUMENTS_DIR):
            name = key[len(DOCUMENTS_DIR) :]
            if "/" in name or not name.endswith(".json"):
                continue
            record = self.records.load(name[: -len(".json")])
            if record is not None and record.created < horizon and record.id not in self._progress:
                self._discard(record)


# --- AWS and GCP: the deployment's buckets and the event path ---------------------------------------------------
def document_source(config: RuntimeConfig, scheme: str, document_id: str, suffix: str) -> ObjectRef:
    """Where an uploaded document waits for its upload event: the document bucket, under the document prefix, with
    its format's first suffix, the one the templates' upload triggers name (``.htm`` -> ``.html``)."""
    suffix = format_for(suffix).suffixes[0]
    return ObjectRef(scheme, config.document_bucket, f"{config.document_prefix}{document_id}/document{suffix}")


# a document's source key below the document prefix (``document_source``; ``handler.storage.dispatch`` reads it)
SOURCE_KEY = re.compile(r"(?P<id>[0-9A-F]{32})/document\.[A-Za-z0-9]+")


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
        fmt = check_upload(upload, self.config)
        service = self._service()
        state = self.state()
        record, key = _new_record(upload, fmt)
        source = document_source(self.config, state.store.scheme, record.id, record.suffix)
        # the fan-out's job id, should the event plan one (the same settings and bundle on every function)
        record.job = job_id(source, upload.data, str(service.info().get("bundle_hash", "")), self.config.part_chars)
        self.records.create(record)
        if not state.store.write_if(source, upload.data, upload.source_metadata(), None, content_type_for(upload.name)):
            raise TranslatorError(f"{source} exists already")
        logger.info(
            "document %s (%s, %s bytes) written to %s", record.id, record.suffix, f"{len(upload.data):,}", source
        )
        return DocumentHandle(record.id, key)

    def _refs(self, record: DocumentRecord) -> tuple[ObjectRef, ObjectRef, JobLayout]:
        scheme = self.state().store.scheme
        source = document_source(self.config, scheme, record.id, record.suffix)
        layout = JobLayout.of(scheme, self.config.output_bucket, self.config.work_prefix, record.job or "")
        return source, plan_output(source, self.config), layout

    def status(self, document_id: str, document_key: str, owner: str = SHARED_OWNER) -> DocumentStatus:
        record = self.records.checked(document_id, document_key, owner)
        if record.status in (ERROR, DOWNLOADED, DONE):
            return _status_of(record)
        store = self.state().store
        _, output, layout = self._refs(record)
        if store.version(output) is not None:
            return DocumentStatus(document_id, DONE, 0, record.characters)
        if record.job and store.version(layout.manifest) is not None:
            progress = read_progress(store, layout.manifest)
            if progress.status == "superseded":
                return DocumentStatus(document_id, ERROR, error_message="the translation was superseded")
            elapsed = time.time() - record.since()
            remaining = _remaining(progress.characters, progress.characters_done, elapsed)
            return DocumentStatus(document_id, TRANSLATING, remaining)
        elapsed = time.time() - record.since()
        stale_after = 3 * self.config.event_timeout_s  # the first try and the platform's retries
        if elapsed > stale_after:
            if record.status == TRANSLATING:
                last = record.last_error or "no invocation reported an error"
                message = f"the translation did not complete within {stale_after:.0f} s (last error: {last})"
            else:  # no upload event began it: the trigger, or a function that could not start (its log says why)
                message = (
                    f"no upload event began translating the document within {stale_after:.0f} s; the function's "
                    "log and its failed-events queue say why"
                )
            return DocumentStatus(document_id, ERROR, error_message=message)
        return DocumentStatus(document_id, record.status, _remaining(record.characters, 0, elapsed))

    def take_result(self, document_id: str, document_key: str, owner: str = SHARED_OWNER) -> DocumentResult:
        status = self.status(document_id, document_key, owner)
        if status.status != DONE:
            raise _not_ready(status)
        record = self.records.checked(document_id, document_key, owner)
        source, output, layout = self._refs(record)
        store = self.state().store
        data = store.read(output)

        def done(current: DocumentRecord) -> bool:
            if current.status in (DONE, DOWNLOADED):
                return False
            current.status = DONE
            current.finished = time.time()
            return True

        self.records.update(document_id, done)
        if not self.records.mark_downloaded(document_id):
            raise DocumentNotFoundError(f"document {document_id} was downloaded already, by another request")
        refs = [output, source]
        if record.job:
            refs += [layout.ref(key) for key in _listed(store, layout.bucket, layout.prefix)]
        _delete_all(store, refs, document_id)
        return DocumentResult(data, record.name, content_type_for(record.name))


def translate_document_upload(
    store: VersionedStore,
    source: ObjectRef,
    document_id: str,
    config: RuntimeConfig,
    translate: Callable[..., Outcome],
) -> Outcome:
    """The upload event of a document's source object: ``translate(options=...)`` (the upload's path, fan-out
    included: ``handler.storage.dispatch.handle_upload``) with its record's options, the record kept up to date.

    A failure no retry can mend (a corrupt or binary file) sets the record's status to ``error`` and is not raised
    (the platform would retry it in vain); any other failure is noted in the record and raised, so the platform
    retries the event. Without a record (expired, downloaded) the event is ignored.
    """
    records = _Records(StateLocation(store, config.output_bucket, config.state_prefix))  # type: ignore[arg-type]
    record = records.load(document_id)
    if record is None or record.status in (DONE, ERROR, DOWNLOADED):
        reason = "no record" if record is None else f"the document is {record.status}"
        logger.info("ignoring the upload event of document %s: %s", document_id, reason)
        return {"source": str(source), "status": "ignored", "reason": reason}

    def begin(current: DocumentRecord) -> bool:
        if current.status != QUEUED:
            return False
        current.status = TRANSLATING
        current.started = time.time()
        return True

    records.update(document_id, begin)
    metrics.add("documents_started")
    try:
        result = translate(options=record.options)
    except PERMANENT_ERRORS as error:
        _record_error(records, document_id, str(error), source)
        metrics.add("documents_failed")
        metrics.refused(error.code)
        return {"source": str(source), "status": "failed", "document": document_id, "reason": str(error)}
    except Exception as error:
        _record_failure(records, document_id, _failure_message(error), final=False)
        metrics.add("documents_failed")
        raise
    if result.get("status") == "refused":
        _record_error(records, document_id, str(result.get("reason")), source)
        metrics.add("documents_failed")
    elif result.get("status") == "translated":
        metrics.add("documents_finished")

        def finished(current: DocumentRecord) -> bool:
            if current.status != TRANSLATING:
                return False
            current.status = DONE
            current.finished = time.time()
            characters = result.get("characters")
            if current.characters is None and isinstance(characters, int):
                current.characters = characters
            return True

        records.update(document_id, finished)
    return {**result, "document": document_id}


def _record_failure(records: _Records, document_id: str, message: str, *, final: bool) -> None:
    """Note a failure in the record (``final``: the status becomes ``error``); a failure to write it is logged."""

    def failed(current: DocumentRecord) -> bool:
        if current.status in (DONE, DOWNLOADED):
            return False
        if final:
            current.status = ERROR
            current.error = message
            current.finished = time.time()
        else:
            current.last_error = message
        return True

    try:
        records.update(document_id, failed)
    except Exception:  # the event's own failure is what the platform must see
        logger.exception("document %s: could not record its failure", document_id)


def _record_error(records: _Records, document_id: str, message: str, source: ObjectRef) -> None:
    """The document could not be translated, and no retry will mend it: its source is deleted, then its status
    becomes ``error``, so that whoever sees the error finds no text kept (rather than the source waiting for the
    retention to end). Nothing reads the source again: the error is final, a repeated event is ignored, and a
    document finished meanwhile is downloaded from its result."""
    _delete_all(records.location.store, [source], document_id)
    _record_failure(records, document_id, message, final=True)


# --- what each adapter serves ------------------------------------------------------------------------------------
class UnavailableDocuments:
    """A deployment that has nowhere to keep documents (a Lambda function without an output bucket)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def _refuse(self) -> ConfigurationError:
        return ConfigurationError(f"this deployment cannot keep documents: {self.reason}")

    def create(self, upload: DocumentUpload) -> DocumentHandle:
        raise self._refuse()

    def status(self, document_id: str, document_key: str, owner: str = SHARED_OWNER) -> DocumentStatus:
        raise self._refuse()

    def take_result(self, document_id: str, document_key: str, owner: str = SHARED_OWNER) -> DocumentResult:
        raise self._refuse()

    def state(self) -> StateLocation:
        raise self._refuse()


def documents_for(
    config: RuntimeConfig,
    service: Callable[[], TranslationService],
    bucket_store: Callable[[], StateStore] | None = None,
    *,
    local_fallback: bool = True,
) -> Documents:
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
