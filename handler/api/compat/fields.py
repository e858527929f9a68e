"""What the drop-in APIs share: reading JSON, form-encoded and multipart bodies, query strings, API keys, JSON
responses."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email import errors as email_errors
from email.message import Message
from email.parser import BytesParser
from typing import Any
from urllib.parse import parse_qs

from handler.api.keys import ApiKeys, presented_key
from handler.api.messages import (
    JSON_TYPE,
    HttpRequest,
    HttpResponse,
    content_encoding_problem,
    encode_json,
    media_type_of,
    read_json,
)
from handler.api.routes import Found, Route
from handler.api.shapes import json_kind
from handler.errors import InvalidRequestError, RequestTooLargeError, UnauthorizedError

FORM_TYPE = "application/x-www-form-urlencoded"
MULTIPART_TYPE = "multipart/form-data"  # what a browser's FormData sends (LibreTranslate's own page does)
_MULTIPART_BROKEN = (
    email_errors.NoBoundaryInMultipartDefect,
    email_errors.StartBoundaryNotFoundDefect,
    email_errors.CloseBoundaryNotFoundDefect,
    email_errors.MultipartInvariantViolationDefect,
)

__all__ = [
    "HttpRequest",
    "HttpResponse",
    "RequestFields",
    "UnauthorizedError",
    "UploadedFile",
    "json_response",
    "key_is_valid",
    "read_fields",
]


class ApiStatus(Exception):
    """An answer of a drop-in API other than 200, in that API's own error shape (status and message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class UploadedFile:
    """A file part of a ``multipart/form-data`` body: the name the client gave it and its bytes, as sent."""

    filename: str
    data: bytes


@dataclass(frozen=True)
class RequestFields:
    """A request's parameters: query string, then the body (JSON object or form); repeated form keys are lists."""

    values: Mapping[str, Any]
    form: bool  # the body was form-encoded (or empty), so every value is a string or a list of strings

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def text(self, name: str, default: str | None = None) -> str | None:
        """One string parameter; a repeated form parameter or a non-string JSON value is an error."""
        value = self.values.get(name)
        if value is None:
            return default
        if isinstance(value, list) and self.form and len(value) == 1:
            value = value[0]
        if isinstance(value, list) and self.form:
            raise InvalidRequestError(f"{name!r} must be a string, given once; it is given {len(value)} times")
        if not isinstance(value, str):
            raise InvalidRequestError(f"{name!r} must be a string; got a JSON {json_kind(value)}")
        return value

    def __contains__(self, name: str) -> bool:
        return name in self.values


def read_fields(
    request: HttpRequest, max_body_bytes: int, files: dict[str, UploadedFile] | None = None
) -> RequestFields:
    """The query string's and the body's parameters (the body wins); JSON or form-encoded bodies. ``files``: a
    route that takes file uploads receives a multipart body's file parts there (otherwise a file is refused)."""
    values: dict[str, Any] = {}
    _, _, query = request.path.partition("?")
    values.update(_form(query))
    if len(request.body) > max_body_bytes:
        raise RequestTooLargeError(f"the request body is {len(request.body):,} bytes; the limit is {max_body_bytes:,}")
    encoding_problem = content_encoding_problem(request.headers)
    if encoding_problem and request.body:
        raise InvalidRequestError(encoding_problem)
    media_type, _charset = media_type_of(request.headers.get("content-type", ""))
    body = request.body.strip()
    if media_type == JSON_TYPE or media_type.endswith("+json") or (not media_type and body[:1] == b"{"):
        payload = read_json(request.body) if body else {}  # InvalidRequestError: not UTF-8, not JSON, too deep
        if not isinstance(payload, dict):
            raise InvalidRequestError(f"the JSON body must be an object; got a JSON {json_kind(payload)}")
        values.update(payload)
        return RequestFields(values, form=False)
    if media_type == MULTIPART_TYPE and body:
        values.update(_multipart(request.headers.get("content-type", ""), request.body, files))
        return RequestFields(values, form=True)
    if body and media_type not in ("", FORM_TYPE, "text/plain"):
        raise InvalidRequestError(
            f"the body must be JSON ({JSON_TYPE}) or form-encoded ({FORM_TYPE} or {MULTIPART_TYPE}); got {media_type}"
        )
    try:
        values.update(_form(request.body.decode("utf-8")))
    except UnicodeDecodeError:
        raise InvalidRequestError("the form body is not UTF-8") from None
    return RequestFields(values, form=True)


def _form(encoded: str) -> dict[str, Any]:
    """Form fields; a field given once is a string, a repeated one (or one named ``x[]``) a list."""
    return _fields(parse_qs(encoded, keep_blank_values=True))


def _fields(pairs: Mapping[str, list[str]]) -> dict[str, Any]:
    """Each form field's values: a string when given once, a list when repeated or named ``x[]``."""
    fields: dict[str, Any] = {}
    for name, items in pairs.items():
        key = name[:-2] if name.endswith("[]") else name
        fields[key] = items if len(items) > 1 or name.endswith("[]") else items[0]
    return fields


def _multipart(content_type: str, body: bytes, files: dict[str, UploadedFile] | None = None) -> dict[str, Any]:
    """The text fields of a ``multipart/form-data`` body, as ``_form`` gives them; ``InvalidRequestError`` saying
    what is wrong with a body that does not follow its boundary, a part without a name, a file or non-UTF-8 text."""
    allowed = f"send the fields as {MULTIPART_TYPE} with the boundary its Content-Type names, or as {FORM_TYPE}"
    header = content_type.encode("ascii", "replace")
    message = BytesParser().parsebytes(b"Content-Type: " + header + b"\r\n\r\n" + body)
    boundary = message.get_boundary()
    if not boundary:
        raise InvalidRequestError(f"the {MULTIPART_TYPE} body has no boundary in its Content-Type; {allowed}")
    if body.strip() == b"--" + boundary.encode("ascii", "replace") + b"--":  # no field at all (an empty FormData)
        return {}
    broken = [type(defect).__name__ for defect in message.defects if isinstance(defect, _MULTIPART_BROKEN)]
    parts = message.get_payload() if message.is_multipart() else None
    if broken or not isinstance(parts, list):
        found = ", ".join(broken) or "no parts"
        raise InvalidRequestError(
            f"the {MULTIPART_TYPE} body does not follow its boundary {boundary!r} ({found}); {allowed}"
        )
    pairs: dict[str, list[str]] = {}
    for index, part in enumerate(parts):
        if not isinstance(part, Message):
            raise InvalidRequestError(f"part {index} of the {MULTIPART_TYPE} body is not a field; {allowed}")
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):  # (an empty name is a field like any other, as in a form-encoded body)
            raise InvalidRequestError(
                f'part {index} of the {MULTIPART_TYPE} body has no name (Content-Disposition: form-data; name="q")'
            )
        filename = part.get_filename()
        if filename is not None and files is None:
            raise InvalidRequestError(f"the field {name!r} is a file; this API translates text fields, not files")
        payload = part.get_payload(decode=True)
        if filename is not None and files is not None:
            if name in files:
                raise InvalidRequestError(f"the file field {name!r} is given twice; send one file")
            files[name] = UploadedFile(str(filename), payload if isinstance(payload, bytes) else b"")
            continue
        try:
            text = payload.decode("utf-8") if isinstance(payload, bytes) else ""
        except UnicodeDecodeError:
            raise InvalidRequestError(f"the field {name!r} of the {MULTIPART_TYPE} body is not UTF-8") from None
        pairs.setdefault(name, []).append(text)
    return _fields(pairs)


def key_is_valid(request: HttpRequest, parameter: str | None, keys: ApiKeys) -> bool:
    """Whether the request's key passes (``handler.api.keys``: X-API-Key, then Authorization, then ``parameter``)."""
    return keys.accepts(presented_key(request.headers, parameter))


def json_response(status: int, payload: Any, headers: Mapping[str, str] | None = None) -> HttpResponse:
    body = encode_json(payload)
    all_headers = {"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store", **(headers or {})}
    return HttpResponse(status, all_headers, body)


def route_or_refusal(
    method: str, found: Found, allowed: tuple[str, ...], error_body: Callable[[str], Any]
) -> Route | HttpResponse:
    """A drop-in route found for a request (``handler.api.routes``), or its answer before any handler: 204 to a CORS
    preflight, for any of the route's paths; 405 with ``Allow`` and the API's own error body (``error_body``) to a
    method its path does not take."""
    if method == "OPTIONS":
        return HttpResponse(204, {"Allow": ", ".join((*allowed, "OPTIONS"))}, b"")
    if found.route is None:
        message = error_body(f"{found.template} answers {' and '.join(allowed)}")
        return json_response(405, message, {"Allow": ", ".join(allowed)})
    return found.route
