"""The HTTP surface, identical on every adapter and free of any web framework.

An adapter turns its platform's request into an ``HttpRequest``, calls ``HttpApi.handle`` and turns the
``HttpResponse`` back into its platform's shape. Routes (``handler.api.own_routes``: one table, from which the routing,
its 404 and 405, and the OpenAPI paths come; the drop-in APIs' are theirs, ``handler.api.compat``):

``POST /translate``  JSON ``{"text": "..."}`` or ``{"texts": ["...", ...]}`` plus options (``beam_size``,
                     ``format``, ``glossary``, ...) → ``{"translation": "..."}`` or ``{"translations": [...]}``
                     with ``model``, ``bundle_hash`` and ``elapsed_ms``; ``"spans": true`` adds ``spans``, each
                     translation's protected spans and glossary hits (``kind``, ``source``, ``target``).
                     ``"scores": true`` adds ``scores``: each translation's segments with their source and English
                     offsets, a confidence (0..1), ``low_confidence``, ``reasons`` and flags (``handler.api.scores``).
``GET /``            the two-pane web page (``handler.api.page``) with the limits injected.
``GET /healthz``     model name, bundle hash, warm state, cold-start timings, limits and whether an API key is
                     required (503 while unavailable).
``GET /openapi.json`` the OpenAPI 3.1 description of every route, this one and the drop-in APIs' included
                     (``handler.api.openapi``).

Every error is ``{"error": {"code": "...", "message": "..."}}`` (the drop-in APIs' routes answer in their own shapes,
also when the adapter refused a body unread: ``CompatApis.refusal``); ``handler.api.messages`` is the only place that
maps the ``handler.errors`` hierarchy to HTTP statuses. Unexpected exceptions are logged with their traceback and
answered 500 with a message that holds no internals.

With API keys configured (``handler.api.keys``), ``POST /translate`` without a valid key is answered 401 with a
``WWW-Authenticate`` header, and a key over its rate or character quota 429 with ``Retry-After``
(``handler.api.quotas``, shared with the drop-in APIs); the page, ``/healthz``, ``/openapi.json`` and CORS
preflights stay open (they carry no translation and no secret, and a browser, a load balancer's health check or a
client generator must reach them without one). Every request gets an id (``X-Request-Id``) and one JSON access line
(``handler.api.access_log``); every response carries the security headers of ``SECURITY_HEADERS`` (the page more,
``PAGE_SECURITY_HEADERS``).
"""

from __future__ import annotations

import contextvars
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from handler import metrics
from handler.api.access_log import (
    REQUEST_ID_HEADER,
    UNKNOWN_ROUTE,
    cloud_logging_fields,
    current_request_id,
    log_access,
    logged_body,
    request_id_for,
)
from handler.api.compat import MAX_BODY_BYTES as COMPAT_MAX_BODY_BYTES
from handler.api.compat import CompatApis
from handler.api.keys import ApiKeys, presented_key
from handler.api.messages import (
    INTERNAL_ERROR_MESSAGE,
    JSON_TYPE,
    UNREADABLE_PATH,
    HttpError,
    HttpRequest,
    HttpResponse,
    MethodNotAllowedError,
    NotFoundError,
    RequestRefusedError,
    UnsupportedMediaTypeError,
    content_encoding_problem,
    error_response,
    json_response,
    media_type_of,
    read_json,
    response_for_error,
    status_for,
)
from handler.api.openapi import build_document
from handler.api.own_routes import OWN_ROUTES
from handler.api.own_shapes import SPANS_FIELD, TranslateRequest
from handler.api.page import PAGE_SECURITY_HEADERS, page_security_policy, render_page
from handler.api.quotas import Quotas
from handler.api.scores import SCORES_FIELD, segments_json
from handler.api.shapes import ObjectFields, json_kind, read_shape
from handler.api.streamed import (
    StreamOutcome,
    stream_body,
    stream_headers,
    wants_event_stream,
)
from handler.coldstart import Startup
from handler.config import ENV_API_KEYS, ENV_API_KEYS_FILE, ENV_MAX_CHARS, RuntimeConfig
from handler.errors import (
    DeadlineExceededError,
    InvalidRequestError,
    RequestTooLargeError,
    TranslatorError,
    UnauthorizedError,
)
from handler.service import StreamFinished, TextTranslation, TranslateOptions
from handler.storage.documents import Documents, documents_for
from handler.storage.glossaries import GlossaryStore
from handler.storage.state import StateLocation, local_state

# the names adapters and tests take from here, defined in the leaf modules
__all__ = [
    "INTERNAL_ERROR_MESSAGE",
    "UNREADABLE_PATH",
    "HttpApi",
    "HttpError",
    "HttpRequest",
    "HttpResponse",
    "RequestRefusedError",
    "error_response",
    "response_for_error",
    "status_for",
]

logger = logging.getLogger(__name__)


# methods each route of OWN_ROUTES answers (HEAD is answered like GET, without a body; OPTIONS is the CORS preflight)
ROUTES: dict[str, tuple[str, ...]] = {template: OWN_ROUTES.allowed(template) for template in OWN_ROUTES.templates()}

# on every response (setdefault: a route's own value wins): what a scanner expects of an API
SECURITY_HEADERS: dict[str, str] = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
}
READ_MARGIN_BYTES = 1024 * 1024  # read beyond the largest body limit (see HttpApi.max_request_bytes)
HSTS = "max-age=31536000"  # only on requests that arrived over HTTPS (X-Forwarded-Proto: https)


class HttpApi:
    """Routes requests to the translation service; built once per cold start from a ``Startup``."""

    def __init__(
        self,
        startup: Startup,
        documents: Documents | None = None,
        state: StateLocation | Callable[[], StateLocation] | None = None,
    ) -> None:
        """``documents``: where DeepL's document API and LibreTranslate's files live (the adapter's choice,
        ``handler.storage.documents.documents_for``); default: the local state folder, translated in this process.
        ``state``: where stored glossaries live (``handler.storage.state``), or a function building it on first
        use; default: the local folder ``TRANSLATE_STATE_DIR``."""
        self.startup = startup
        self.config = startup.config
        self.keys = ApiKeys.of(startup.config.api_keys)
        config = startup.config
        if documents is None:
            documents = documents_for(config, startup.require_service)
        self.glossaries = GlossaryStore(
            state if state is not None else (lambda: local_state(config)), keys_required=self.keys.required
        )
        # each key's usage and limits, one count for every API (the store opened on first use)
        self.quotas = Quotas(config)
        # LibreTranslate and DeepL routes, answered in their own shapes
        self.compat = CompatApis(startup, documents, self.glossaries, self.quotas)
        self.known_routes = frozenset((*ROUTES, *self.compat.routes()))
        info = startup.service.info() if startup.service is not None else {}
        self._model = info.get("model")
        self._bundle_hash = info.get("bundle_hash")
        self._page = render_page(startup, self.keys.required)
        self._page_csp = page_security_policy(self._page)
        self._openapi: bytes | None = None  # built on its first request, not at every cold start
        # JSON escapes a character in at most 12 bytes (an emoji: "\ud83d\ude00"); the margin covers keys, options
        # and a batch
        self.max_body_bytes = 12 * self.config.max_chars + 64 * self.config.max_texts + 65_536
        # an adapter that reads bodies itself refuses a longer one unread (413): the largest limit of any route plus
        # a margin, so that each API refuses a body just over its own limit itself, in its own error shape
        self.max_request_bytes = max(self.max_body_bytes, COMPAT_MAX_BODY_BYTES) + READ_MARGIN_BYTES

    # --- entry point --------------------------------------------------------------------------------------
    def handle(self, request: HttpRequest, refused: TranslatorError | HttpError | None = None) -> HttpResponse:
        """The response to ``request``. ``refused``: the adapter could not decode the request (a body that is not
        the base64 its event says, a malformed event, a request line its server could not parse), and that error is
        the answer, finished like every other (request id, headers, one access line)."""
        began = time.perf_counter()
        request_id = request_id_for(request.headers, request.platform_request_id)
        token = current_request_id.set(request_id)
        # the request's figures (handler.metrics): the service and the decoder add to them while it runs
        record = metrics.Record(http=True, request_id=request_id, began=began)
        close_record = metrics.open_record(record)
        try:
            if refused is None:
                response, error_code = self._answer(request)
            elif isinstance(refused, HttpError):
                response, error_code = error_response(refused.status, refused.code, str(refused)), refused.code
            else:  # a body refused unread: in the shape of the API its path and headers name
                path = _normalise_path(request.path)
                response = self.compat.refusal(path, request, refused) or response_for_error(refused)
                error_code = refused.code
            response.headers.update(self._cors_headers(request))
            for name, value in SECURITY_HEADERS.items():
                response.headers.setdefault(name, value)
            if request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower() == "https":
                response.headers.setdefault("Strict-Transport-Security", HSTS)
            response.headers[REQUEST_ID_HEADER] = request_id
            if request.method == "HEAD":
                response = HttpResponse(response.status, response.headers, b"")
            if response.stream is not None:  # logged when it ends, in this request's context
                context = contextvars.copy_context()

                def ended(sent: int, response: HttpResponse = response) -> None:
                    self._log_stream_end(request, response, began, record, sent)

                stream = _ContextStream(context, response.stream, ended)
                return HttpResponse(response.status, response.headers, b"", stream)
            self._log(request, response, error_code, began, record)
        finally:
            close_record()
            current_request_id.reset(token)
        return response

    def _answer(self, request: HttpRequest) -> tuple[HttpResponse, str | None]:
        """The response and, for this API's own errors, their code."""
        try:
            return self._route(request), None
        except HttpError as error:
            response = error_response(error.status, error.code, str(error))
            if isinstance(error, MethodNotAllowedError):
                response.headers["Allow"] = ", ".join(error.allowed)
            return response, error.code
        except TranslatorError as error:
            route = self._route_name(request)
            if status_for(error) >= 500:
                logger.error("%s %s failed: %s: %s", request.method, route, type(error).__name__, error)
            response = response_for_error(error)
            if isinstance(error, UnauthorizedError):
                response.headers["WWW-Authenticate"] = self.keys.www_authenticate()
            return response, error.code
        except Exception:
            logger.exception("%s %s failed with an unexpected error", request.method, self._route_name(request))
            return error_response(500, "internal_error", INTERNAL_ERROR_MESSAGE), "internal_error"

    def _route_name(self, request: HttpRequest) -> str:
        """The route for logs: a known path, else a placeholder (a path or a query string may hold text)."""
        path = _normalise_path(request.path)
        return path if path in self.known_routes else self.compat.route_of(path) or UNKNOWN_ROUTE

    def _log_stream_end(
        self, request: HttpRequest, response: HttpResponse, began: float, record: metrics.Record, sent: int
    ) -> None:
        """A stream's access line: the bytes sent, and whether it finished, failed (its error code) or was closed
        by the client first (before its first chunk included)."""
        outcome: StreamOutcome | None = getattr(response.stream, "outcome", None)
        error_code = outcome.error_code if outcome is not None else None
        ended = "closed by the client" if outcome is not None and not outcome.finished and not error_code else None
        self._log(request, HttpResponse(response.status, response.headers, b""), error_code, began, record, sent, ended)

    def _log(
        self,
        request: HttpRequest,
        response: HttpResponse,
        error_code: str | None,
        began: float,
        record: metrics.Record,
        streamed_bytes: int | None = None,
        stream_ended: str | None = None,
    ) -> None:
        """The request's access line, with its figures (``handler.metrics``, which also gets the record) and, on
        Google Cloud, the fields Cloud Logging reads (``handler.api.access_log.cloud_logging_fields``)."""
        work = record.work
        fields: dict[str, object] = {
            "request_id": current_request_id.get(),  # as a field too, for a host's own formatter (Lambda's)
            "method": request.method,
            "route": self._route_name(request),
            "status": response.status,
            "request_bytes": len(request.body),
            "response_bytes": len(response.body) if streamed_bytes is None else streamed_bytes,
            "duration_ms": round((time.perf_counter() - began) * 1000, 2),
        }
        if streamed_bytes is not None:
            fields["streamed"] = stream_ended or "complete"
        if error_code is not None:
            fields["error_code"] = error_code
        if work.from_memory or work.decoded:  # segments answered from the translation memory / by the model
            fields["segments_from_memory"] = work.from_memory
            fields["segments_decoded"] = work.decoded
        record.route, record.error_code = str(fields["route"]), error_code
        record.add("bytes_read", len(request.body))
        record.add("bytes_written", len(response.body) if streamed_bytes is None else streamed_bytes)
        metrics.finish(record)
        fields.update(record.log_fields())
        fields.update(cloud_logging_fields(request.method, request.headers, fields))
        if self.config.log_text:  # TRANSLATE_LOG_TEXT=1: debugging only, the texts go to the log
            fields["query"] = request.path.partition("?")[2]
            fields["request_body"] = logged_body(request.body)
            if not response.headers.get("Content-Type", "").startswith("text/html"):
                fields["response_body"] = logged_body(response.body)
        log_access(fields)

    def _route(self, request: HttpRequest) -> HttpResponse:
        """The drop-in APIs' answer where the path is theirs, else the answer of the route ``OWN_ROUTES`` finds (404
        and 405 from the table), the key checked first where the route takes one."""
        path = _normalise_path(request.path)
        compat = self.compat.handle(path, request)
        if compat is not None:
            return compat
        found = OWN_ROUTES.find(request.method, path)
        if found.template is None:
            raise NotFoundError(f"no route for {path}; the routes are {', '.join(ROUTES)}")
        if found.route is None:
            allowed = ROUTES[found.template]
            raise MethodNotAllowedError(f"{path} answers {' and '.join(allowed)}, not {request.method}", allowed)
        if found.route.auth:
            self._require_key(request)
            self.quotas.count_request(presented_key(request.headers))
        answer: HttpResponse = getattr(self, "_" + found.route.handler)(request)
        return answer

    def _require_key(self, request: HttpRequest) -> None:
        if self.keys.accepts(presented_key(request.headers)):
            return
        given = presented_key(request.headers) is not None
        raise UnauthorizedError(
            ("the API key is not valid" if given else "an API key is required")
            + f": send it as 'X-API-Key: KEY' or 'Authorization: Bearer KEY' (the keys are {ENV_API_KEYS} / "
            f"{ENV_API_KEYS_FILE}; ask the operator for one)"
        )

    # --- routes -------------------------------------------------------------------------------------------
    def _preflight(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse(204, {"Allow": ", ".join(ROUTES["/translate"])}, b"")

    def _openapi_document(self, request: HttpRequest) -> HttpResponse:
        if self._openapi is None:  # (two first requests at once build the same document twice: harmless)
            self._openapi = json.dumps(build_document(self.config), ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-cache"}
        return HttpResponse(200, headers, self._openapi)

    def _web_page(self, request: HttpRequest) -> HttpResponse:
        headers = {
            "Content-Type": "text/html; charset=utf-8",
            "Content-Security-Policy": self._page_csp,
            **PAGE_SECURITY_HEADERS,
        }
        return HttpResponse(200, headers, self._page)

    def _health(self, request: HttpRequest) -> HttpResponse:
        report = self.startup.health()
        report["api_key_required"] = self.keys.required  # whether, never which
        return json_response(200 if self.startup.service is not None else 503, report)

    def _translate(self, request: HttpRequest) -> HttpResponse:
        asked = _read_translate_request(self._json_body(request), self.config)
        text, texts, options, with_spans = asked.text, asked.texts, asked.options, asked.spans
        service = self.startup.require_service()
        began = time.perf_counter()
        given = texts if texts is not None else [text or ""]
        # the key's characters, taken before the work (429 past its quota) and given back if it fails to start
        charge = self.quotas.charge(presented_key(request.headers), sum(len(one) for one in given))
        if asked.stream:  # refused here, before the answer begins, exactly as without stream
            event_stream = wants_event_stream(request.headers.get("accept", ""))
            outcome = StreamOutcome()

            def finished(event: StreamFinished) -> dict[str, Any]:
                answer = self._answer_json(list(event.translations), texts is not None, with_spans, options, began)
                return {**answer, "segments": event.units, "characters": event.characters}

            try:
                sentences = service.translate_stream(given, options, deadline=request.deadline)
            except TranslatorError:
                charge.refund()
                raise
            body = stream_body(
                sentences, many=texts is not None, finished_json=finished, event_stream=event_stream, outcome=outcome
            )
            return HttpResponse(200, stream_headers(event_stream), b"", _Stream(body, outcome))
        try:
            details = service.translate_detailed(given, options, deadline=request.deadline)
        except TranslatorError as error:
            charge.refund()
            if not isinstance(error, DeadlineExceededError):
                raise
            raise DeadlineExceededError(
                f"{error}. This function's time limit ends the request before it could finish: send it with "
                '"stream": true (every sentence done in time is delivered), translate it as a document (DeepL\'s '
                "/v2/document, or an upload to the input bucket), or raise the function's timeout"
            ) from None
        return json_response(200, self._answer_json(details, texts is not None, with_spans, options, began))

    def _answer_json(
        self,
        details: list[TextTranslation],
        many: bool,
        with_spans: bool,
        options: TranslateOptions,
        began: float,
    ) -> dict[str, Any]:
        """The answer to ``POST /translate`` (and the last line of its stream)."""
        result: dict[str, Any]
        if many:
            result = {"translations": [detail.text for detail in details]}
            if with_spans:
                result[SPANS_FIELD] = [_spans_json(detail) for detail in details]
            if options.scores:
                result[SCORES_FIELD] = [segments_json(detail.segments) for detail in details]
        else:
            result = {"translation": details[0].text}
            if with_spans:
                result[SPANS_FIELD] = _spans_json(details[0])
            if options.scores:
                result[SCORES_FIELD] = segments_json(details[0].segments)
        result.update(
            model=self._model,
            bundle_hash=self._bundle_hash,
            elapsed_ms=round((time.perf_counter() - began) * 1000, 1),
        )
        return result

    def _json_body(self, request: HttpRequest) -> Any:
        raw_type = request.headers.get("content-type", "")
        media_type, charset = media_type_of(raw_type)
        if media_type != JSON_TYPE and not media_type.endswith("+json"):
            found = f"Content-Type {raw_type!r}" if raw_type else "no Content-Type"
            raise UnsupportedMediaTypeError(
                f"POST /translate takes a JSON body with Content-Type: application/json; got {found}. "
                'Example: {"text": "你好，世界"}'
            )
        if charset and charset.lower() not in ("utf-8", "utf8"):
            raise UnsupportedMediaTypeError(f"JSON must be UTF-8; got charset={charset}")
        encoding_problem = content_encoding_problem(request.headers)
        if encoding_problem:
            raise UnsupportedMediaTypeError(encoding_problem)
        if len(request.body) > self.max_body_bytes:
            raise RequestTooLargeError(
                f"the request body is {len(request.body):,} bytes; the limit is {self.max_body_bytes:,} bytes, "
                f"which follows from the character limit of {self.config.max_chars:,} ({ENV_MAX_CHARS})"
            )
        return read_json(request.body)  # InvalidRequestError: not UTF-8, not JSON, non-finite, too deep

    # --- CORS ---------------------------------------------------------------------------------------------
    def _cors_headers(self, request: HttpRequest) -> dict[str, str]:
        """Empty unless the configuration allows the request's origin (default: same origin only)."""
        origins = self.config.cors_origins
        origin = request.headers.get("origin", "").rstrip("/")
        if not origins or not origin:
            return {}
        if "*" in origins:
            allow = "*"
        elif origin in origins:
            allow = origin
        else:
            return {}
        headers = {"Access-Control-Allow-Origin": allow}
        if allow != "*":
            headers["Vary"] = "Origin"
        if request.method == "OPTIONS":
            # GET: /languages, /v2/usage, ...; DELETE: /v2/glossaries/{glossary_id}
            headers["Access-Control-Allow-Methods"] = "GET, POST, DELETE, OPTIONS"
            # Authorization: Bearer or DeepL-Auth-Key; X-API-Key: handler.api.keys; X-Request-Id: the caller's id
            headers["Access-Control-Allow-Headers"] = "Content-Type, Authorization, X-API-Key, X-Request-Id"
            headers["Access-Control-Max-Age"] = "600"
        else:
            headers["Access-Control-Expose-Headers"] = REQUEST_ID_HEADER
        return headers


# --- request parsing --------------------------------------------------------------------------------------
def _read_translate_request(payload: Any, config: RuntimeConfig) -> TranslateRequest:
    """The body as its shape (``handler.api.own_shapes``), which declares it once for this reading and the document."""
    if not isinstance(payload, dict):
        raise InvalidRequestError(
            f'the body must be a JSON object such as {{"text": "你好"}}; got a JSON {json_kind(payload)}'
        )
    asked: TranslateRequest = read_shape(TranslateRequest, ObjectFields(payload), config)
    return asked


class _Stream:
    """A streamed body with the outcome its access line reports."""

    def __init__(self, chunks: Iterator[bytes], outcome: StreamOutcome) -> None:
        self._chunks = chunks
        self.outcome = outcome

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        return next(self._chunks)

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()


class _ContextStream:
    """A streamed body pulled in its request's context (id, work counters), whichever thread pulls it; closing it
    closes the stream (which stops the work behind it) and, once, however it ended, writes its access line."""

    def __init__(self, context: contextvars.Context, chunks: Iterator[bytes], ended: Callable[[int], None]) -> None:
        self._context = context
        self._chunks = chunks
        self._ended = ended
        self._sent = 0
        self._closed = False

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        if self._closed:
            raise StopIteration
        try:
            chunk = self._context.run(next, self._chunks)
        except BaseException:
            self.close()
            raise
        self._sent += len(chunk)
        return chunk

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        close = getattr(self._chunks, "close", None)
        try:
            if close is not None:
                self._context.run(close)
        finally:
            self._context.run(self._ended, self._sent)


def _spans_json(detail: TextTranslation) -> list[dict[str, str]]:
    """Each protected span of a translation: its kind, its source text and the text the translation carries."""
    return [{"kind": span.kind.value, "source": span.source, "target": span.target} for span in detail.spans]


def _normalise_path(path: str) -> str:
    path = path.split("?", 1)[0]
    if len(path) > 1:
        path = path.rstrip("/")
    return path or "/"
