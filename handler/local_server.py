"""A local HTTP server for the HTTP surface, on the standard library only (``python -m handler serve``).

For trying the function without any cloud SDK; ``functions-framework --target translate_http`` serves the same
surface the way Cloud Functions does.
"""

from __future__ import annotations

import logging
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from handler.http_api import HttpApi, HttpRequest

logger = logging.getLogger(__name__)


def make_server(api: HttpApi, host: str = "127.0.0.1", port: int = 8080) -> ThreadingHTTPServer:
    """A server answering every request through ``api`` (port 0 picks a free port)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "zh-en-translator"

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
            request = HttpRequest.create(self.command, self.path, self.headers.items(), body)  # query kept
            response = api.handle(request)
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            if self.command != "HEAD" or response.body:
                self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            self.wfile.write(response.body)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _answer

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            logger.info("%s %s", self.address_string(), format % args)

    return ThreadingHTTPServer((host, port), Handler)
