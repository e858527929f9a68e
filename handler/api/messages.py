"""The HTTP messages every surface shares, a leaf module: the request and response types, the errors that exist only
at the HTTP edge (one type per status), the status of each of ``handler.errors``' errors, and this API's JSON
error body. The router (``handler.api.router``) and the drop-in APIs (``handler.api.compat``) build on it; it
imports neither.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

from handler.errors import (
    ConfigurationError,
    DeadlineExceededError,
    InvalidRequestError,
    ModelUnavailableError,
    RequestTooLargeError,
    TranslatorError,
    UnauthorizedError,
)

JSON_TYPE = "application/json"
# a JSON body nested beyond what the parser takes (Python's recursion limit, about 1,000 levels)
TOO_DEEP = "the JSON body is nested too deeply to read; no request of these APIs nests more than a few levels"


@dataclass(frozen=True)
class HttpRequest:
    """A request as every adapter sees it. ``headers`` keys are lower-case (``HttpRequest.create`` does that)."""

    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    platform_request_id: str | None = None  # the platform's id of the request (Lambda's requestContext.requestId)

    @classmethod
    def create(
        cls,
        method: str,
        path: str,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        body: bytes | None = None,
        platform_request_id: str | None = None,
    ) -> HttpRequest:
        """Normalise: upper-case method, lower-case header names (repeated headers joined with ", ")."""
        pairs = headers.items() if isinstance(headers, Mapping) else headers
        merged: dict[str, str] = {}
        for name, value in pairs:
            key = name.lower()
            merged[key] = f"{merged[key]}, {value}" if key in merged else str(value)
        return cls(method.upper(), path or "/", merged, body or b"", platform_request_id)


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def body_text(self) -> str:
        return self.body.decode("utf-8")


# --- errors that exist only at the HTTP edge (one type per status) -------------------------------------------
class HttpError(Exception):
    status = 500
    code = "internal_error"


class NotFoundError(HttpError):
    status = 404
    code = "not_found"


class MethodNotAllowedError(HttpError):
    status = 405
    code = "method_not_allowed"

    def __init__(self, message: str, allowed: tuple[str, ...]) -> None:
        super().__init__(message)
        self.allowed = allowed


class UnsupportedMediaTypeError(HttpError):
    status = 415
    code = "unsupported_media_type"


class RequestRefusedError(HttpError):
    """A request the adapter's transport refused before this API could read it (a malformed request line, a
    header too large, a Content-Length that is not a number), answered with the transport's status."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = int(status)  # an HTTPStatus is logged as its number
        self.code = code


# most specific first: BundleError is a ModelUnavailableError
STATUS_BY_ERROR: tuple[tuple[type[TranslatorError], int], ...] = (
    (UnauthorizedError, 401),
    (InvalidRequestError, 400),
    (RequestTooLargeError, 413),
    (ModelUnavailableError, 503),
    (DeadlineExceededError, 503),
    (ConfigurationError, 500),
    (TranslatorError, 500),
)

UNREADABLE_PATH = "/(unreadable)"  # the path of a request its adapter could not read: never a route, logged "(unknown)"
INTERNAL_ERROR_MESSAGE = "internal error while translating; the function's log has the details"


def status_for(error: TranslatorError) -> int:
    for kind, status in STATUS_BY_ERROR:
        if isinstance(error, kind):
            return status
    return 500


def media_type_of(content_type: str) -> tuple[str, str | None]:
    """``("application/json", "utf-8")`` from a Content-Type header; ``("", None)`` without one."""
    if not content_type:
        return "", None
    message = Message()
    message["content-type"] = content_type
    charset = message.get_param("charset")
    return message.get_content_type().lower(), charset if isinstance(charset, str) else None


# --- responses --------------------------------------------------------------------------------------------
def json_response(status: int, payload: Mapping[str, Any]) -> HttpResponse:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    return HttpResponse(status, {"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"}, body)


def error_response(status: int, code: str, message: str) -> HttpResponse:
    """This API's error body, ``{"error": {"code", "message"}}``."""
    return json_response(status, {"error": {"code": code, "message": message}})


def response_for_error(error: TranslatorError) -> HttpResponse:
    """The JSON error response for one of our errors, with the status ``STATUS_BY_ERROR`` gives it."""
    return error_response(status_for(error), error.code, str(error))
