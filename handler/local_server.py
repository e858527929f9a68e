"""A local HTTP server for the HTTP surface, on the standard library only (``python -m handler serve``).

For trying the function without any cloud SDK; ``functions-framework --target translate_http`` serves the same
surface the way Cloud Functions does. The standard library's own request log is replaced by the JSON access line
of ``handler.access_log`` (the request line it would print holds the query string, which may hold text).
"""

from __future__ import annotations

import logging
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from handler.access_log import configure_logging
from handler.http_api import HttpApi, HttpRequest, HttpResponse, error_response

logger = logging.getLogger(__name__)


def make_server(api: HttpApi, host: str = "127.0.0.1", port: int = 8080) -> ThreadingHTTPServer:
    """A server answering every request through ``api`` (port 0 picks a free port)."""
    configure_logging()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "zh-en-translator"

        def _answer(self) -> None:
            raw_length = self.headers.get("Content-Length") or "0"
            if not raw_length.isdigit():
                self._send(error_response(400, "invalid_request", f"Content-Length {raw_length!r} is not a number"))
                self.close_connection = True
                return
            length = int(raw_length)
            body = self.rfile.read(length) if length > 0 else b""
            request = HttpRequest.create(self.command, self.path, self.headers.items(), body)  # query kept
            self._send(api.handle(request))

        def _send(self, response: HttpResponse) -> None:
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            if self.command != "HEAD" or response.body:
                self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            self.wfile.write(response.body)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _answer

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            pass  # handler.http_api writes the access line (without the path's query string)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            logger.warning("local server: a request it could not read (%s)", args[0] if args else "")

    return ThreadingHTTPServer((host, port), Handler)
