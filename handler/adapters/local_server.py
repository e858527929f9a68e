"""A local HTTP server for the HTTP surface, on the standard library only (``python -m handler serve``).

For trying the function without any cloud SDK; ``functions-framework --target translate_http`` serves the same
surface the way Cloud Functions does. The standard library's own request log is replaced by the JSON access line
of ``handler.api.access_log`` (the request line it would print holds the query string, which may hold text), and its
own refusals (a request line it cannot parse, a header too long) are answered through ``HttpApi`` like every
other request, so that every answer has its one access line. It reads a body itself: ``Content-Length`` bytes (ASCII
digits, at most ``HttpApi.max_request_bytes``; a longer body is refused with 413 before it is read) or the chunks of
``Transfer-Encoding: chunked``, which the standard library leaves to its handlers.

With ``TRANSLATE_METRICS=prometheus`` it also answers ``GET /metrics``: the running totals of every request's figures
(``handler.metrics``) as Prometheus text, itself uncounted and without an access line; otherwise that path is an
unknown route like any other, and no totals are kept.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from handler import metrics
from handler.adapters.hangup import peer_closed, until_peer_closes
from handler.api.access_log import configure_logging
from handler.api.messages import UNREADABLE_PATH, HttpRequest, HttpResponse, RequestRefusedError
from handler.api.router import HttpApi
from handler.errors import InvalidRequestError, RequestTooLargeError

MAX_CHUNK_LINE = 1024  # a chunk-size line, extensions included
METRICS_PATH = "/metrics"  # TRANSLATE_METRICS=prometheus only
PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")

# the standard library server's own refusals, by status: this API's error codes
TRANSPORT_ERROR_CODES: dict[int, str] = {
    HTTPStatus.REQUEST_URI_TOO_LONG: "request_too_large",
    HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE: "request_too_large",
    HTTPStatus.NOT_IMPLEMENTED: "method_not_allowed",
}

logger = logging.getLogger(__name__)


class ApiRequestHandler(BaseHTTPRequestHandler):
    """One connection's requests, each answered through ``api`` (``make_server`` gives a subclass its ``api``)."""

    api: HttpApi
    protocol_version = "HTTP/1.1"
    server_version = "zh-en-translator"

    def _answer(self) -> None:
        if self.command == "GET" and self.path.split("?", 1)[0] == METRICS_PATH:
            scraped = metrics.prometheus_text()  # None unless TRANSLATE_METRICS=prometheus
            if scraped is not None:
                self._send(HttpResponse(200, {"Content-Type": PROMETHEUS_TYPE}, scraped.encode("utf-8")))
                return
        try:
            body = self._body()
        except (InvalidRequestError, RequestTooLargeError) as unreadable:  # answered unread; nothing more is read
            self._send(self.api.handle(self._request_read_so_far(), refused=unreadable))
            self.close_connection = True
            return
        deadline = self.api.config.request_deadline(time.monotonic())  # TRANSLATE_REQUEST_TIMEOUT_S, if set
        request = HttpRequest.create(self.command, self.path, self.headers.items(), body, deadline=deadline)
        self._send(self.api.handle(request))

    def _body(self) -> bytes:
        """The request's body: ``Content-Length`` bytes, or the chunks of ``Transfer-Encoding: chunked``; a
        length that is not a number, malformed chunks or a body over every route's limit are refused."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._chunked_body()
        raw_length = (self.headers.get("Content-Length") or "0").strip()
        if not (raw_length.isascii() and raw_length.isdigit()):  # "²".isdigit() is true, and int("²") fails
            raise InvalidRequestError(f"Content-Length {raw_length!r} is not a number")
        length = int(raw_length)
        if length > self.api.max_request_bytes:
            raise RequestTooLargeError(
                f"the request body is {length:,} bytes (Content-Length); the limit is {self.api.max_request_bytes:,}"
            )
        return self.rfile.read(length) if length > 0 else b""

    def _chunked_body(self) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            line = self.rfile.readline(MAX_CHUNK_LINE + 1)
            digits = line.split(b";", 1)[0].strip()  # a chunk size, then optional extensions
            if len(line) > MAX_CHUNK_LINE or not digits or not all(c in HEX_DIGITS for c in digits):
                raise InvalidRequestError(
                    f"a chunk of the chunked body has no size in hexadecimal: {line[:40]!r}; send chunks as "
                    "'SIZE\\r\\nDATA\\r\\n' ending with '0\\r\\n\\r\\n', or send a Content-Length"
                )
            length = int(digits, 16)
            if length == 0:
                while self.rfile.readline(MAX_CHUNK_LINE + 1) not in (b"\r\n", b"\n", b""):
                    pass  # trailer fields, ignored
                return b"".join(chunks)
            size += length
            if size > self.api.max_request_bytes:
                raise RequestTooLargeError(
                    f"the chunked request body is over {self.api.max_request_bytes:,} bytes, the limit"
                )
            chunks.append(self.rfile.read(length))
            if self.rfile.readline(MAX_CHUNK_LINE + 1).strip():
                raise InvalidRequestError("a chunk of the chunked body is longer than its size says")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_"):  # every method reaches the API, which answers 405 with Allow for others
            return self._answer
        raise AttributeError(name)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own refusals (a request line or header it cannot parse, one too long) are
        answered by the API like every other request: JSON, request id, headers, one access line."""
        reason = message or HTTPStatus(code).phrase
        refused = RequestRefusedError(code, TRANSPORT_ERROR_CODES.get(code, "invalid_request"), reason)
        self._send(self.api.handle(self._request_read_so_far(), refused=refused))
        self.close_connection = True

    def _request_read_so_far(self) -> HttpRequest:
        """What was read of a refused request: its method, path and headers where they were parsed."""
        command, path = getattr(self, "command", None), getattr(self, "path", None)
        headers = getattr(self, "headers", None)
        return HttpRequest.create(
            command if isinstance(command, str) and command else "-",
            path if isinstance(path, str) and path.startswith("/") else UNREADABLE_PATH,
            headers.items() if headers is not None else (),
        )

    def _send(self, response: HttpResponse) -> None:
        if getattr(self, "request_version", "HTTP/1.1") == "HTTP/0.9":
            self.request_version = "HTTP/1.0"  # a status line and headers in the answer, even to nonsense
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        if response.stream is not None:
            self._send_stream(response.stream)
            return
        if self.command != "HEAD" or response.body:
            self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        self.wfile.write(response.body)

    def _send_stream(self, stream: Iterator[bytes]) -> None:
        """Each chunk as it comes (chunked transfer encoding; HTTP/1.0: the bytes, then the connection closes),
        flushed at once; a client that hung up closes the stream, which stops the work behind it."""
        chunked = self.request_version != "HTTP/1.0"
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.close_connection = True
        self.end_headers()
        chunks = until_peer_closes(stream, self.connection)
        try:
            for chunk in chunks:
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                    self.wfile.flush()
            if peer_closed(self.connection):
                self.close_connection = True
            elif chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        except OSError:  # the client hung up: nothing more to send
            self.close_connection = True
        finally:
            chunks.close()  # type: ignore[attr-defined]  # a generator

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _answer

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # handler.api.router writes the access line (without the path's query string)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        # what is left: a connection that timed out or broke before a request (there is no answer to log)
        logger.warning("local server: a request it could not read (%s)", args[0] if args else "")


def make_server(api: HttpApi, host: str = "127.0.0.1", port: int = 8080) -> ThreadingHTTPServer:
    """A server answering every request through ``api`` (port 0 picks a free port)."""
    configure_logging()
    api.startup.report_metrics(metrics.LOCAL)  # TRANSLATE_METRICS=prometheus: GET /metrics; auto: none
    handler = type("Handler", (ApiRequestHandler,), {"api": api})
    return ThreadingHTTPServer((host, port), handler)
