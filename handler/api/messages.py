"""The HTTP messages every surface shares, a leaf module: the request and response types, the errors that exist only
at the HTTP edge (one type per status), the status of every error in each API's shape (``status_for``, read from
what each error class declares), and this API's JSON error body. The router (``handler.api.router``) and the
drop-in APIs (``handler.api.compat``) build on it; it imports neither.
"""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from email.message import Message
from enum import Enum
from typing import Any

from handler.errors import InvalidRequestError, TranslatorError

JSON_TYPE = "application/json"
# every body of every API is read by ``read_json``: UTF-8 only, finite numbers of sensible size, bounded nesting
MAX_JSON_DEPTH = 32  # levels of arrays and objects; no request of these APIs nests more than 3
EXACT_INTEGER_FLOAT = 2**53  # up to here a 64-bit float holds every integer exactly
MAX_INTEGER_DIGITS = 30  # more than any 64-bit integer; Python's own limit (4,300) has a message for programmers
TOO_DEEP = (
    f"the JSON body is nested too deeply to read: at most {MAX_JSON_DEPTH} levels of arrays and objects are read, "
    "and no request of these APIs nests more than 3"
)
_UTF16_32_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


@dataclass(frozen=True)
class HttpRequest:
    """A request as every adapter sees it. ``headers`` keys are lower-case (``HttpRequest.create`` does that)."""

    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    platform_request_id: str | None = None  # the platform's id of the request (Lambda's requestContext.requestId)
    # the adapter's time limit for the answer, a time.monotonic() value (Lambda's remaining time, Cloud Run's and
    # Cloud Functions' request timeout); None: no limit
    deadline: float | None = None

    @classmethod
    def create(
        cls,
        method: str,
        path: str,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        body: bytes | None = None,
        platform_request_id: str | None = None,
        deadline: float | None = None,
    ) -> HttpRequest:
        """Normalise: upper-case method, lower-case header names (repeated headers joined with ", ")."""
        pairs = headers.items() if isinstance(headers, Mapping) else headers
        merged: dict[str, str] = {}
        for name, value in pairs:
            key = name.lower()
            merged[key] = f"{merged[key]}, {value}" if key in merged else str(value)
        return cls(method.upper(), path or "/", merged, body or b"", platform_request_id, deadline)


@dataclass(frozen=True)
class HttpResponse:
    """An answer. With ``stream``, the body is that iterator's chunks (``body`` is empty): an adapter sends the
    headers at once, writes and flushes each chunk as it comes, and closes the iterator when the client is gone
    (which stops the work behind it); it never buffers a stream whole."""

    status: int
    headers: dict[str, str]
    body: bytes
    stream: Iterator[bytes] | None = None

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


UNREADABLE_PATH = "/(unreadable)"  # the path of a request its adapter could not read: never a route, logged "(unknown)"
INTERNAL_ERROR_MESSAGE = "internal error while translating; the function's log has the details"


class ErrorShape(Enum):
    """The APIs whose error answers differ: this server's own, DeepL's and LibreTranslate's drop-in ones."""

    OWN = "own"
    DEEPL = "deepl"
    LIBRETRANSLATE = "libretranslate"


def status_for(error: TranslatorError, shape: ErrorShape = ErrorShape.OWN) -> int:
    """The HTTP status ``error`` is answered with in ``shape``'s API: the one place an error becomes a status, read
    from what the error's class declares (``handler.errors.TranslatorError``)."""
    if shape is ErrorShape.DEEPL:
        return error.deepl_status or error.status
    if shape is ErrorShape.LIBRETRANSLATE:
        return error.libretranslate_status
    return error.status


def error_codes() -> tuple[str, ...]:
    """Every code this server's own error body may carry: that of each error of ``handler.errors`` and of the HTTP
    edge (so a new error's code is listed with no other edit)."""
    found: dict[str, None] = {}
    classes: list[type[Exception]] = [TranslatorError, HttpError]
    while classes:
        kind = classes.pop(0)
        if kind.__module__ in ("handler.errors", __name__):
            found[kind.code] = None  # type: ignore[attr-defined]
        classes.extend(kind.__subclasses__())
    return tuple(found)


def media_type_of(content_type: str) -> tuple[str, str | None]:
    """``("application/json", "utf-8")`` from a Content-Type header; ``("", None)`` without one."""
    if not content_type:
        return "", None
    if not content_type.isascii():  # media types and charsets are ASCII tokens; the parser fails on a lone surrogate
        content_type = content_type.encode("ascii", "replace").decode("ascii")
    message = Message()
    message["content-type"] = content_type
    charset = message.get_param("charset")
    return message.get_content_type().lower(), charset if isinstance(charset, str) else None


def content_encoding_problem(headers: Mapping[str, str]) -> str | None:
    """What is wrong with a request's ``Content-Encoding`` (None when there is none, or ``identity``): the bodies are
    read as sent, so a compressed one would otherwise be refused as JSON or text it is not."""
    coding = headers.get("content-encoding", "").strip().lower()
    if coding in ("", "identity"):
        return None
    return f"Content-Encoding {coding!r} is not accepted: send the body uncompressed, without a Content-Encoding header"


class _Refused(Exception):
    """A number the JSON parser met that no request of these APIs holds (raised from its hooks, caught below)."""


def _finite_float(literal: str) -> float | int:
    """A number with a fraction or an exponent; an integral one (``5.0``, ``1e2``) is the integer it equals, as JSON
    Schema's "integer" and every JSON client mean it (JavaScript has no other), so an integer field takes it."""
    value = float(literal)
    if not math.isfinite(value):
        raise _Refused(f"the number {literal[:40]} is out of range; numbers must be finite 64-bit floats")
    if value.is_integer() and abs(value) <= EXACT_INTEGER_FLOAT:
        return int(value)
    return value


def _small_int(literal: str) -> int:
    digits = len(literal.lstrip("-"))
    if digits > MAX_INTEGER_DIGITS:
        raise _Refused(
            f"the integer {literal[:12]}... has {digits:,} digits; no number of these APIs has more than "
            f"{MAX_INTEGER_DIGITS}"
        )
    return int(literal)


def _no_constant(name: str) -> float:
    raise _Refused(f"{name} is not a JSON number (JSON has no NaN or Infinity); give a finite number")


def _depth(value: Any) -> int:
    """How many levels of arrays and objects ``value`` nests (iteratively: a deep value cannot exhaust the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_JSON_DEPTH:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest


def read_json(body: bytes) -> Any:
    """A request body as JSON, or ``InvalidRequestError`` saying what is wrong and what is allowed: UTF-8 only (a
    UTF-8 byte-order mark is skipped, as the parser did before), no NaN or Infinity, no number beyond a 64-bit
    float or of more than ``MAX_INTEGER_DIGITS`` digits, at most ``MAX_JSON_DEPTH`` levels of nesting."""
    for mark, encoding in _UTF16_32_BOMS:
        if body.startswith(mark):
            raise InvalidRequestError(
                f"the body is not UTF-8 encoded JSON: it begins with a {encoding} byte-order mark; send it as UTF-8"
            )
    if b"\x00" in body[:4]:  # no JSON text has a NUL byte among its first characters; UTF-16 and UTF-32 do
        raise InvalidRequestError(
            "the body is not UTF-8 encoded JSON: it has NUL bytes among its first characters, as UTF-16 or UTF-32 "
            "text has; send it as UTF-8"
        )
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidRequestError(f"the body is not UTF-8 encoded JSON: {error}") from None
    try:
        payload = json.loads(text, parse_float=_finite_float, parse_int=_small_int, parse_constant=_no_constant)
    except _Refused as refused:
        raise InvalidRequestError(f"the body is not valid JSON: {refused}") from None
    except RecursionError:  # the parser's own limit, not a fault of the server
        raise InvalidRequestError(TOO_DEEP) from None
    except ValueError as error:
        raise InvalidRequestError(f"the body is not valid JSON: {error}") from None
    if _depth(payload) > MAX_JSON_DEPTH:
        raise InvalidRequestError(TOO_DEEP)
    return payload


# --- responses --------------------------------------------------------------------------------------------
def encode_json(payload: Any) -> bytes:
    """UTF-8 JSON. A lone surrogate a request carried into a message (JSON allows "\\ud800" in a key or a path) is
    written as its escape, so an error that quotes it cannot fail to encode."""
    return json.dumps(payload, ensure_ascii=False).encode("utf-8", "backslashreplace")


def json_response(status: int, payload: Mapping[str, Any]) -> HttpResponse:
    body = encode_json(payload)
    return HttpResponse(status, {"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"}, body)


def error_response(status: int, code: str, message: str) -> HttpResponse:
    """This API's error body, ``{"error": {"code", "message"}}``."""
    return json_response(status, {"error": {"code": code, "message": message}})


def response_for_error(error: TranslatorError) -> HttpResponse:
    """The JSON error response for one of our errors, with the status its class declares (and ``Retry-After``
    where the error says when to retry: ``error_headers``)."""
    response = error_response(status_for(error), error.code, str(error))
    response.headers.update(error_headers(error))
    return response


def error_headers(error: TranslatorError) -> dict[str, str]:
    """The headers an error's answer carries in every API's shape: ``Retry-After`` (seconds) for a refusal that
    says when to come back (``ServerBusyError``: the decoder's queue is full)."""
    retry_after = getattr(error, "retry_after_s", None)
    return {"Retry-After": str(retry_after)} if retry_after is not None else {}
