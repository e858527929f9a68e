"""Google Cloud Functions entry points (functions-framework).

* ``translate_http`` (``@functions_framework.http``): the HTTP surface of ``handler.api.router``. A streamed answer
  (``"stream": true``) is a streamed Flask response: functions-framework's gunicorn (gthread worker; ``make run``,
  Cloud Run and Cloud Functions gen 2 alike) sends the headers at once and writes each chunk as it comes with
  chunked transfer encoding, nothing buffering it between; a client that hangs up is noticed before the next chunk
  is computed (``handler.adapters.hangup``, on the connection's socket), and the server's closing of the response
  closes the stream, which stops the decoding. Cloud Run and Cloud Functions give a request no remaining-time
  figure either: with ``TRANSLATE_REQUEST_TIMEOUT_S`` (infra/gcp/deploy.sh sets it to the HTTP service's
  ``--timeout``), a request's deadline is its arrival plus that less ``TRANSLATE_DEADLINE_MARGIN_S`` (a
  non-streamed request that cannot finish by then is refused at once, 503 ``deadline_exceeded``; a streamed one
  ends with an error line); without it (``make run``) no deadline.
* ``translate_storage_event`` (``@functions_framework.cloud_event``): a Cloud Storage
  ``google.cloud.storage.object.v1.finalized`` event; the object is translated into ``TRANSLATE_OUTPUT_BUCKET`` /
  ``TRANSLATE_OUTPUT_PREFIX`` (``handler.storage.files``). Object names arrive unencoded in ``data.name``.
  Cloud Functions gives a function no remaining-time figure, so the deadline is the event's arrival plus
  ``TRANSLATE_EVENT_TIMEOUT_S`` (infra/gcp/deploy.sh sets it to the function's ``--timeout``) less
  ``TRANSLATE_DEADLINE_MARGIN_S``: a file that cannot be finished by then fails with ``DeadlineExceededError``
  before the platform stops the function, and nothing is written. Cloud Storage's transient failures are retried
  with backoff within that deadline (``handler.storage.retry``). A ``.txt`` file over ``TRANSLATE_PART_CHARS``
  characters is planned into part objects under ``TRANSLATE_WORK_PREFIX`` in the output bucket
  (``handler.storage.bulk``).
* ``translate_part_event`` (``@functions_framework.cloud_event``): finalize events of the output bucket, deployed
  with retries: the fan-out's part objects are translated (and the last one assembles the output); every other
  object there (translations, manifests, part results) is ignored at once.

DeepL's document API (``handler.storage.documents``): with ``TRANSLATE_OUTPUT_BUCKET`` and
``TRANSLATE_DOCUMENT_BUCKET`` set, an uploaded document is written to the document bucket (the input bucket), and
``translate_storage_event`` translates it with its record's options; without an output bucket (functions-framework
on a workstation) documents stay in the local state folder and a thread of the process translates them.

The model is loaded and warmed when this module is imported; a load failure is kept and answered 503 to HTTP
requests and raised for storage events. ``main.py`` at the repository root re-exports both entries, for source
deploys and ``functions-framework --source main.py --target translate_http``.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from collections.abc import Iterator, Mapping
from typing import Any, cast

import flask
import functions_framework
from cloudevents.http.event import CloudEvent

from handler import metrics
from handler.adapters.hangup import until_peer_closes
from handler.api.access_log import configure_logging, use_cloud_logging
from handler.api.messages import HttpRequest
from handler.api.router import HttpApi
from handler.coldstart import Startup, start
from handler.errors import InvalidRequestError, RequestTooLargeError
from handler.storage.bulk import BulkError
from handler.storage.dispatch import handle_object_event
from handler.storage.documents import documents_for
from handler.storage.events import storage_object
from handler.storage.object_store import GcsStore
from handler.storage.retry import RetryingStore, RetryPolicy, TransientAware
from handler.storage.state import StateLocation, StateStore, bucket_state, local_state

logger = logging.getLogger(__name__)

STORAGE_FINALIZED = "google.cloud.storage.object.v1.finalized"
RAW_URI_KEYS = ("RAW_URI", "REQUEST_URI")  # the request target as sent: gunicorn's, werkzeug's


class GcpAdapter:
    def __init__(self, startup: Startup, store: TransientAware | None = None, retry: RetryPolicy | None = None) -> None:
        self.startup = startup
        self._store = store
        self.retry = retry or RetryPolicy()
        self.http = HttpApi(
            startup,
            documents_for(startup.config, startup.require_service, self._state_store),
            state=self._state,  # built on the first glossary request
        )

    @property
    def store(self) -> TransientAware:
        if self._store is None:  # the storage client is built on the first event, not at every cold start
            self._store = GcsStore()
        return self._store

    def _state_store(self) -> GcsStore:
        store = self.store
        return store if isinstance(store, GcsStore) else GcsStore()

    def _state(self) -> StateLocation:
        """Stored glossaries: in the output bucket (TRANSLATE_OUTPUT_BUCKET) when there is one, else the folder
        TRANSLATE_STATE_DIR (``handler.storage.state``)."""
        config = self.startup.config
        return bucket_state(config, lambda: cast(StateStore, self.store)) or local_state(config)

    def handle_http(self, request: flask.Request) -> flask.Response:
        arrived = time.monotonic()
        path, headers = _path_and_query(request), request.headers.items()
        unreadable: InvalidRequestError | RequestTooLargeError | None = None
        body = b""
        length = request.content_length
        if length is not None and length > self.http.max_request_bytes:  # refused before it is read
            unreadable = RequestTooLargeError(
                f"the request body is {length:,} bytes (Content-Length); the limit is {self.http.max_request_bytes:,}"
            )
        else:
            try:
                body = request.get_data(cache=False)
            except Exception as error:  # the server's own reading of the body: malformed chunks, a body cut short
                unreadable = InvalidRequestError(
                    f"the request body could not be read ({type(error).__name__}: {error}); send it whole, with a "
                    "Content-Length or well-formed chunks"
                )
        deadline = self.startup.config.request_deadline(arrived)
        response = self.http.handle(
            HttpRequest.create(request.method, path, headers, body, deadline=deadline), refused=unreadable
        )
        if response.stream is None:
            return flask.Response(response=response.body, status=response.status, headers=response.headers)
        # handed to the server as it is (direct_passthrough: no re-encoding, no Content-Length, so gunicorn sends it
        # chunked, a write per chunk); the server calls close() when it is done or the client is gone
        chunks = ClosedByTheServer(until_peer_closes(response.stream, client_socket(request.environ)), response.stream)
        return flask.Response(chunks, status=response.status, headers=response.headers, direct_passthrough=True)

    def handle_storage_event(self, event_type: str, data: Any) -> dict[str, str | int] | None:
        arrived = time.monotonic()
        if event_type != STORAGE_FINALIZED:
            logger.warning("ignoring CloudEvent of type %s; this function translates %s", event_type, STORAGE_FINALIZED)
            return None
        config = self.startup.config
        deadline = arrived + config.event_timeout_s - config.deadline_margin_s
        with metrics.measuring():  # the event's figures on a log line of its own (handler.metrics)
            service = self.startup.require_service()
            source = storage_object(data)
            store = RetryingStore(self.store, deadline, self.retry)
            return handle_object_event(store, source, service, config, deadline=deadline)

    def handle_part_event(self, event_type: str, data: Any) -> dict[str, Any] | None:
        """A finalize event of the output bucket: a fan-out part is translated, anything else ignored."""
        name = str(data.get("name", "")) if isinstance(data, Mapping) else ""
        if event_type == STORAGE_FINALIZED and not name.startswith(self.startup.config.work_prefix):
            return None  # a translation or another object of the output bucket: nothing to do, and no model needed
        try:
            return self.handle_storage_event(event_type, data)
        except BulkError as error:  # retrying cannot mend an inconsistent job (the function runs with --retry)
            logger.error("not retrying %s: %s", name, error)
            return {"source": name, "status": "failed", "reason": str(error)}


def client_socket(environ: Mapping[str, Any]) -> socket.socket | None:
    """The connection to the client, where the WSGI server exposes it: gunicorn's ``gunicorn.socket``, werkzeug's
    development server's ``werkzeug.socket`` (``functions-framework --debug``); else None (no hang-up check: a TLS
    socket cannot be peeked at, and its bytes are records, not the client's)."""
    for key in ("gunicorn.socket", "werkzeug.socket"):
        candidate = environ.get(key)
        if isinstance(candidate, socket.socket) and not isinstance(candidate, ssl.SSLSocket):
            return candidate
    return None


class ClosedByTheServer:
    """A streamed body as a WSGI iterable: its chunks, and a ``close()`` that the server calls (PEP 3333) however
    the answer ended (sent whole, the client gone, a write that failed), which closes the stream and so stops the
    work behind it, even where no chunk was asked for yet."""

    def __init__(self, chunks: Iterator[bytes], stream: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        return next(self._chunks)

    def close(self) -> None:
        for closing in (self._chunks, self._stream):
            close = getattr(closing, "close", None)
            if close is not None:
                close()


def _path_and_query(request: flask.Request) -> str:
    """The path with its query string (the drop-in APIs read GET parameters from it), as the client sent it where
    the server keeps that (gunicorn's and werkzeug's ``RAW_URI``): still percent-encoded, as the other adapters hand
    it on, so that an encoded ``?`` or line feed in a download name stays part of the name."""
    for key in RAW_URI_KEYS:  # WSGI environ keys, not environment variables
        raw = request.environ.get(key)
        if isinstance(raw, str) and raw.startswith("/"):
            return raw
    query = request.query_string.decode("latin-1")
    return f"{request.path}?{query}" if query else request.path


configure_logging()  # JSON lines on stderr, which Cloud Logging reads as structured entries
use_cloud_logging()  # with httpRequest and the trace, so that the console shows them under their request
_ADAPTER = GcpAdapter(start())
_ADAPTER.startup.report_metrics(metrics.GOOGLE_CLOUD)  # the figures as log fields (TRANSLATE_METRICS=auto)


@functions_framework.http
def translate_http(request: flask.Request) -> flask.Response:
    return _ADAPTER.handle_http(request)


def _unrouted(error: Exception) -> flask.Response:
    """A path functions-framework's own routes do not match (one holding a line feed: its ``<path:path>`` stops at
    one) reaches the function like every other path, instead of the framework's HTML 404."""
    return _ADAPTER.handle_http(flask.request)


_register_error_handler = getattr(functions_framework, "errorhandler", None)  # set once functions-framework built
if _register_error_handler is not None:  # its app, before it imports this module
    _register_error_handler(404)(_unrouted)


@functions_framework.cloud_event
def translate_storage_event(event: CloudEvent) -> None:
    _ADAPTER.handle_storage_event(str(event["type"]), event.data)


@functions_framework.cloud_event
def translate_part_event(event: CloudEvent) -> None:
    _ADAPTER.handle_part_event(str(event["type"]), event.data)
