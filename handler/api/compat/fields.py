"""What the drop-in APIs share: reading JSON or form bodies, query strings, API keys, JSON responses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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
from handler.errors import InvalidRequestError, RequestTooLargeError, UnauthorizedError

FORM_TYPE = "application/x-www-form-urlencoded"

__all__ = [
    "HttpRequest",
    "HttpResponse",
    "RequestFields",
    "UnauthorizedError",
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
            raise InvalidRequestError(f"{name!r} must be a string; got a JSON {_json_kind(value)}")
        return value

    def __contains__(self, name: str) -> bool:
        return name in self.values


def read_fields(request: HttpRequest, max_body_bytes: int) -> RequestFields:
    """The query string's and the body's parameters (the body wins); JSON or form-encoded bodies."""
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
            raise InvalidRequestError(f"the JSON body must be an object; got a JSON {_json_kind(payload)}")
        values.update(payload)
        return RequestFields(values, form=False)
    if body and media_type not in ("", FORM_TYPE, "text/plain"):
        raise InvalidRequestError(
            f"the body must be JSON ({JSON_TYPE}) or form-encoded ({FORM_TYPE}); got {media_type}"
        )
    try:
        values.update(_form(request.body.decode("utf-8")))
    except UnicodeDecodeError:
        raise InvalidRequestError("the form body is not UTF-8") from None
    return RequestFields(values, form=True)


def _form(encoded: str) -> dict[str, Any]:
    """Form fields; a field given once is a string, a repeated one (or one named ``x[]``) a list."""
    fields: dict[str, Any] = {}
    for name, items in parse_qs(encoded, keep_blank_values=True).items():
        key = name[:-2] if name.endswith("[]") else name
        fields[key] = items if len(items) > 1 or name.endswith("[]") else items[0]
    return fields


def key_is_valid(request: HttpRequest, parameter: str | None, keys: ApiKeys) -> bool:
    """Whether the request's key passes (``handler.api.keys``: X-API-Key, then Authorization, then ``parameter``)."""
    return keys.accepts(presented_key(request.headers, parameter))


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "array" if isinstance(value, list) else "object" if isinstance(value, dict) else "string"


def json_response(status: int, payload: Any, headers: Mapping[str, str] | None = None) -> HttpResponse:
    body = encode_json(payload)
    all_headers = {"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store", **(headers or {})}
    return HttpResponse(status, all_headers, body)
