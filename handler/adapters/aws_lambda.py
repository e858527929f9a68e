"""AWS Lambda entry point: ``handler.adapters.aws_lambda.lambda_handler``, one handler dispatching by event shape.

* API Gateway REST API (payload v1: ``httpMethod``), HTTP API (payload v2: ``requestContext.http``) and
  Function URL events (v2 shape, ``*.lambda-url.*`` domain), base64 bodies included → ``handler.api.router``;
  the result is the matching proxy response (``statusCode``, ``headers``, ``body``).
* S3 event notifications (``Records[].eventSource == "aws:s3"``): each ``ObjectCreated:*`` object is translated
  into ``TRANSLATE_OUTPUT_BUCKET`` / ``TRANSLATE_OUTPUT_PREFIX`` (``handler.storage.files``). Keys arrive
  URL-encoded (spaces as "+") and are decoded with ``unquote_plus``. The work must finish before
  ``context.get_remaining_time_in_millis()`` (without a context: ``TRANSLATE_EVENT_TIMEOUT_S``) less
  ``TRANSLATE_DEADLINE_MARGIN_S``; otherwise it fails with a ``DeadlineExceededError`` and writes nothing. S3's
  transient failures are retried with backoff within that deadline (``handler.storage.retry``). A ``.txt`` file
  over ``TRANSLATE_PART_CHARS`` characters fans out instead (``handler.storage.bulk``): its part objects under
  ``TRANSLATE_WORK_PREFIX`` in the output bucket trigger this function again, one invocation per part, and the
  last part assembles the output. A document of DeepL's document API (``handler.storage.documents``) arrives the
  same way: ``POST /v2/document`` writes it to ``TRANSLATE_DOCUMENT_BUCKET`` (the input bucket) under
  ``TRANSLATE_DOCUMENT_PREFIX``, its S3 event translates it with the options its record holds, and the status and
  result routes read the output bucket. Binary answers (a translated ``.docx``) go back base64-encoded.

Every HTTP request carries a deadline (``HttpRequest.deadline``): the invocation's remaining time
(``context.get_remaining_time_in_millis()``) less ``TRANSLATE_DEADLINE_MARGIN_S``. A request whose translation cannot
finish before it is refused at once (503 ``deadline_exceeded``, naming the ways out); a streamed one delivers every
segment done in time and ends with an error line. Without a Lambda context (a test calling the handler) there is none.

Two handlers share this adapter. ``lambda_handler`` answers every HTTP event with the proxy response (buffered; a
streamed answer, ``"stream": true``, is collected whole into the body). ``streaming_handler`` is for a Function URL
whose ``InvokeMode`` is ``RESPONSE_STREAM`` (the template's ``FunctionUrlInvokeMode`` parameter chooses it): it
answers Function URL events with a ``handler.adapters.lambda_streaming.StreamedHttpResponse``, which the image's
entry point (``python -m handler.adapters.lambda_streaming``) sends in the Runtime API's streaming mode, the HTTP
prelude first and each chunk as it comes; every other event is answered exactly as ``lambda_handler`` answers it.

The model is loaded and warmed when this module is imported (the Lambda init phase); a load failure is kept and
answered 503 to HTTP events and raised for S3 events.
"""

from __future__ import annotations

import base64
import binascii
import logging
import threading
import time
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import quote, urlencode

from handler import metrics
from handler.adapters.lambda_runtime import current_trace_id
from handler.adapters.lambda_streaming import StreamedHttpResponse
from handler.api.access_log import configure_logging
from handler.api.messages import UNREADABLE_PATH, HttpRequest, HttpResponse
from handler.api.router import HttpApi
from handler.coldstart import Startup, start
from handler.errors import InvalidRequestError
from handler.storage.dispatch import handle_object_event
from handler.storage.documents import documents_for
from handler.storage.events import s3_created_objects
from handler.storage.object_store import S3Store
from handler.storage.retry import RetryingStore, RetryPolicy, TransientAware
from handler.storage.state import StateLocation, StateStore, bucket_state, local_state

logger = logging.getLogger(__name__)

API_GATEWAY_V1 = "api_gateway_v1"
API_GATEWAY_V2 = "api_gateway_v2"
FUNCTION_URL = "function_url"
S3_NOTIFICATION = "s3"
FORWARDED_PREFIX = "x-forwarded-prefix"  # the path prefix the platform removed (an API Gateway stage)


def event_kind(event: Any) -> str:
    """Which of the supported event shapes ``event`` is; ``InvalidRequestError`` naming them otherwise."""
    if isinstance(event, Mapping):
        records = event.get("Records")
        if (
            isinstance(records, list)
            and records
            and all(isinstance(r, Mapping) and r.get("eventSource") == "aws:s3" for r in records)
        ):
            return S3_NOTIFICATION
        context = event.get("requestContext")
        if isinstance(context, Mapping):
            if "httpMethod" in event:
                return API_GATEWAY_V1
            if event.get("version") == "2.0" and isinstance(context.get("http"), Mapping):
                domain = str(context.get("domainName", ""))
                return FUNCTION_URL if ".lambda-url." in domain else API_GATEWAY_V2
    keys = sorted(event)[:8] if isinstance(event, Mapping) else type(event).__name__
    raise InvalidRequestError(
        "unsupported event: expected an API Gateway REST (v1) or HTTP API (v2) proxy event, a Function URL "
        f"event or an S3 event notification; got {keys}"
    )


class LambdaAdapter:
    """Decodes Lambda events, calls the HTTP surface or the file translation, encodes the result."""

    def __init__(self, startup: Startup, store: TransientAware | None = None, retry: RetryPolicy | None = None) -> None:
        self.startup = startup
        self._store = store
        self._store_lock = threading.Lock()  # several invocations at once on Lambda Managed Instances
        self.retry = retry or RetryPolicy()
        # documents live in the buckets (an instance's /tmp does not outlive it, nor is it shared)
        documents = documents_for(startup.config, startup.require_service, self._state_store, local_fallback=False)
        self.http = HttpApi(startup, documents, state=self._state)  # glossaries: built on the first glossary request

    @property
    def store(self) -> TransientAware:
        if self._store is None:  # boto3 is imported on the first S3 event, not at every cold start
            with self._store_lock:
                if self._store is None:
                    self._store = traced_s3_store()
        return self._store

    def _state_store(self) -> S3Store:
        store = self.store
        return store if isinstance(store, S3Store) else traced_s3_store()

    def _state(self) -> StateLocation:
        """Stored glossaries: in the output bucket (TRANSLATE_OUTPUT_BUCKET) when there is one, else the folder
        TRANSLATE_STATE_DIR (``handler.storage.state``)."""
        config = self.startup.config
        return bucket_state(config, lambda: cast(StateStore, self.store)) or local_state(config)

    def handle(self, event: Any, context: Any, *, stream_function_url: bool = False) -> Any:
        """The result for ``event``; with ``stream_function_url``, a Function URL event's answer is a
        ``StreamedHttpResponse`` (the streaming entry point sends it), every other answer a proxy response."""
        kind = event_kind(event)
        if kind == S3_NOTIFICATION:
            return self.handle_s3(event, context)
        response = self.handle_http(kind, event, context)
        if stream_function_url and kind == FUNCTION_URL:
            return StreamedHttpResponse(response)
        return _proxy_response(response)

    def handle_http(self, kind: str, event: Mapping[str, Any], context: Any) -> HttpResponse:
        deadline = self._http_deadline(context)
        try:
            request = _v1_request(event, deadline) if kind == API_GATEWAY_V1 else _v2_request(event, deadline)
        except binascii.Error as error:
            bad_body = InvalidRequestError(f"the event says the body is base64 but it is not: {error}")
            return self.http.handle(_what_can_be_read(event), refused=bad_body)
        except MalformedEventError as error:  # a field of the wrong type, named
            malformed = InvalidRequestError(f"the {kind} event is malformed: {error}")
            return self.http.handle(_what_can_be_read(event), refused=malformed)
        except (KeyError, TypeError, AttributeError, ValueError) as error:  # a field missing or of the wrong type
            malformed = InvalidRequestError(f"the {kind} event is malformed: {type(error).__name__}: {error}")
            return self.http.handle(_what_can_be_read(event), refused=malformed)
        return self.http.handle(request)

    def handle_s3(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        service = self.startup.require_service()
        deadline = self._deadline(context)
        store = RetryingStore(self.store, deadline, self.retry)
        results = []
        request_id = getattr(context, "aws_request_id", None)
        for source in s3_created_objects(event):  # every record checked before any work
            with metrics.measuring(request_id=request_id):  # one EMF record per object (handler.metrics)
                results.append(handle_object_event(store, source, service, self.startup.config, deadline=deadline))
        return {"results": results}

    def _deadline(self, context: Any) -> float:
        """``time.monotonic()`` value by which file work must end: the invocation's remaining time (without a
        Lambda context: ``TRANSLATE_EVENT_TIMEOUT_S``) less ``TRANSLATE_DEADLINE_MARGIN_S``."""
        config = self.startup.config
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        seconds_left = remaining() / 1000.0 if remaining is not None else config.event_timeout_s
        return time.monotonic() + seconds_left - config.deadline_margin_s

    def _http_deadline(self, context: Any) -> float | None:
        """``time.monotonic()`` value by which an HTTP answer must end: the invocation's remaining time less
        ``TRANSLATE_DEADLINE_MARGIN_S`` (time to send what was done and the error line); None without a context."""
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        if remaining is None:
            return None
        seconds_left = float(remaining()) / 1000.0
        return time.monotonic() + seconds_left - self.startup.config.deadline_margin_s


def traced_s3_store() -> S3Store:
    """An S3 store whose every call carries the X-Ray trace header of the invocation that makes it."""
    store = S3Store()
    store.client.meta.events.register("before-call.s3", invocation_trace_header)
    return store


def invocation_trace_header(params: dict[str, Any], **_: Any) -> None:
    """botocore's own handler (recursion detection) sends ``_X_AMZN_TRACE_ID`` as ``X-Amzn-Trace-Id``; with several
    invocations in one process that variable is not set (``handler.adapters.lambda_runtime``), so the calling
    invocation's own trace id is sent, escaped as botocore escapes it."""
    trace_id = current_trace_id()
    headers = params.get("headers")
    if trace_id and isinstance(headers, dict) and "X-Amzn-Trace-Id" not in headers:
        headers["X-Amzn-Trace-Id"] = quote(trace_id, safe="-=;:+&[]{}\"',")


class MalformedEventError(ValueError):
    """A field of an HTTP event that is missing or of a type the platform never sends (a hand-made test event)."""


def _kind_of(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _text_field(value: Any, name: str, *, required: bool = False) -> str | None:
    """A string field (a number is taken as its digits, as the platform would have sent them)."""
    if value is None and not required:
        return None
    if isinstance(value, str) and (value or not required):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise MalformedEventError(f"{name} must be a {'non-empty ' if required else ''}string; got {_kind_of(value)}")


def _object_field(value: Any, name: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MalformedEventError(f"{name} must be an object (or null); got {_kind_of(value)}")
    return value


def _pairs(value: Any, name: str, *, multi: bool) -> list[tuple[str, str]]:
    """(name, value) pairs of a headers or query object; ``multi``: each value is a list of strings."""
    pairs = []
    for key, item in _object_field(value, name).items():
        items = item if multi and isinstance(item, list) else [item] if not multi else None
        if items is None:
            raise MalformedEventError(f"{name}[{key!r}] must be a list of strings; got {_kind_of(item)}")
        pairs += [(str(key), _text_field(one, f"{name}[{key!r}]", required=False) or "") for one in items]
    return pairs


# --- API Gateway REST API (payload format 1.0) --------------------------------------------------------------
def _v1_request(event: Mapping[str, Any], deadline: float | None = None) -> HttpRequest:
    if event.get("multiValueHeaders"):
        pairs = _pairs(event["multiValueHeaders"], "multiValueHeaders", multi=True)
    else:
        pairs = _pairs(event.get("headers"), "headers", multi=False)
    path = _text_field(event.get("path"), "path") or "/"
    if event.get("multiValueQueryStringParameters"):
        query = _pairs(event["multiValueQueryStringParameters"], "multiValueQueryStringParameters", multi=True)
    else:
        query = _pairs(event.get("queryStringParameters"), "queryStringParameters", multi=False)
    if query:  # the drop-in APIs read GET parameters from the query string
        try:
            path += "?" + urlencode(query)
        except UnicodeEncodeError:  # JSON can carry a lone surrogate ("\ud800") in a parameter
            raise MalformedEventError(
                "the query string parameters hold an unpaired UTF-16 surrogate; send valid Unicode text"
            ) from None
    method = _text_field(event.get("httpMethod"), "httpMethod", required=True) or ""
    context_path = (event.get("requestContext") or {}).get("path")
    bare_path = path.split("?", 1)[0]
    if isinstance(context_path, str) and context_path.endswith(bare_path) and len(context_path) > len(bare_path):
        pairs = _with_prefix(pairs, context_path[: -len(bare_path)])  # the stage: /prod/translate -> /prod
    return HttpRequest.create(method, path, pairs, _body(event), _platform_id(event), deadline=deadline)


# --- HTTP API (payload format 2.0) and Function URLs --------------------------------------------------------
def _v2_request(event: Mapping[str, Any], deadline: float | None = None) -> HttpRequest:
    context = event["requestContext"]
    http = context["http"]
    path = _text_field(event.get("rawPath"), "rawPath") or _text_field(http.get("path"), "requestContext.http.path")
    path = path or "/"
    stage = _text_field(context.get("stage"), "requestContext.stage")
    headers = _pairs(event.get("headers"), "headers", multi=False)
    if stage and stage != "$default":  # a named stage appears in rawPath: /prod/translate
        prefix = f"/{stage}"
        if path == prefix or path.startswith(prefix + "/"):
            path = path[len(prefix) :] or "/"
            headers = _with_prefix(headers, prefix)  # the URLs this API writes (translatedFileUrl) keep it
    query = _text_field(event.get("rawQueryString"), "rawQueryString")
    if query:  # the drop-in APIs read GET parameters from the query string
        path += "?" + query
    method = _text_field(http.get("method"), "requestContext.http.method", required=True) or ""
    return HttpRequest.create(method, path, headers, _body(event), _platform_id(event), deadline=deadline)


def _with_prefix(pairs: list[tuple[str, str]], prefix: str) -> list[tuple[str, str]]:
    """``pairs`` with the platform's path prefix as X-Forwarded-Prefix (replacing any the caller sent)."""
    return [(name, value) for name, value in pairs if name.lower() != FORWARDED_PREFIX] + [(FORWARDED_PREFIX, prefix)]


def _what_can_be_read(event: Mapping[str, Any]) -> HttpRequest:
    """The request of an event that could not be decoded, from whichever fields are sound (for its answer's
    request id and headers and its access line; the body is left out): method and path as the event gives them
    when they are strings, else "-" and an unknown route."""
    context = event.get("requestContext")
    context = context if isinstance(context, Mapping) else {}
    http = context.get("http")
    http = http if isinstance(http, Mapping) else {}
    method = event.get("httpMethod", http.get("method"))
    path = event.get("path", event.get("rawPath", http.get("path")))
    headers = event.get("headers")
    pairs = [(str(k), str(v)) for k, v in headers.items()] if isinstance(headers, Mapping) else []
    request_id = context.get("requestId")
    return HttpRequest.create(
        method if isinstance(method, str) and method else "-",
        path if isinstance(path, str) and path.startswith("/") else UNREADABLE_PATH,
        pairs,
        b"",
        str(request_id) if isinstance(request_id, str) and request_id else None,
    )


def _platform_id(event: Mapping[str, Any]) -> str | None:
    """API Gateway's and Function URLs' id of the request (the access log's request id without X-Request-Id)."""
    request_id = (event.get("requestContext") or {}).get("requestId")
    return str(request_id) if request_id else None


def _proxy_response(response: HttpResponse) -> dict[str, Any]:
    """The response shape API Gateway (v1 and v2) and Function URLs share; a body that is not UTF-8 text (a
    downloaded ``.docx``) is sent base64-encoded. A streamed answer is collected whole (a buffered invocation can
    only answer at the end)."""
    raw = _whole_body(response)
    try:
        body, encoded = raw.decode("utf-8"), False
    except UnicodeDecodeError:
        body, encoded = base64.b64encode(raw).decode("ascii"), True
    return {"statusCode": response.status, "headers": response.headers, "body": body, "isBase64Encoded": encoded}


def _whole_body(response: HttpResponse) -> bytes:
    if response.stream is None:
        return response.body
    try:
        return b"".join(response.stream)
    finally:
        close = getattr(response.stream, "close", None)
        if close is not None:
            close()


def _body(event: Mapping[str, Any]) -> bytes:
    body = event.get("body")
    encoded = event.get("isBase64Encoded", False)
    if not isinstance(encoded, bool | None):
        raise MalformedEventError(f"isBase64Encoded must be true or false; got {_kind_of(encoded)}")
    if body is None:
        return b""
    if not isinstance(body, str):
        raise MalformedEventError(
            f"body must be a string (base64 when isBase64Encoded is true) or null; got {_kind_of(body)}"
        )
    if encoded:
        if not body.isascii():
            raise binascii.Error("the body holds characters outside base64's alphabet (non-ASCII)")
        return base64.b64decode(body, validate=True)
    try:
        return body.encode("utf-8")
    except UnicodeEncodeError as error:  # JSON can carry a lone surrogate ("\ud800") in the event's body string
        raise MalformedEventError(
            f"body holds an unpaired UTF-16 surrogate at character {error.start:,}; send valid Unicode text"
        ) from None


# --- the entry point ----------------------------------------------------------------------------------------
configure_logging()  # the Lambda runtime formats the records (JSON with AWS_LAMBDA_LOG_FORMAT=JSON)
_ADAPTER = LambdaAdapter(start())
_ADAPTER.startup.report_metrics(metrics.AWS_LAMBDA)  # EMF records on standard output (TRANSLATE_METRICS=auto)


def lambda_handler(event: Any, context: Any) -> Any:
    """The function's handler (``handler.adapters.aws_lambda.lambda_handler``)."""
    return _ADAPTER.handle(event, context)


def streaming_handler(event: Any, context: Any) -> Any:
    """The handler of a function whose Function URL streams (``InvokeMode: RESPONSE_STREAM``): Function URL answers
    are sent as they come by ``python -m handler.adapters.lambda_streaming``; everything else as ``lambda_handler``."""
    return _ADAPTER.handle(event, context, stream_function_url=True)
