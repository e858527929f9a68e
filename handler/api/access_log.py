"""Request ids and the access log: one JSON line per HTTP request, never the submitted text unless asked.

Every request gets an id: the caller's ``X-Request-Id`` when it is a plain token (at most 128 characters of
letters, digits and ``-._:@+=/``), else the platform's trace id (Lambda's ``requestContext.requestId``, Google's
``X-Cloud-Trace-Context``, W3C ``traceparent``, AWS ``X-Amzn-Trace-Id``), else a new random one. The response
carries it back in ``X-Request-Id``, and every log record written while the request runs carries it too.

The access line (logger ``handler.access``) holds the request id, method, route (the route template; an unknown
path is logged as ``"(unknown)"`` and the query string never, since either may hold text), status, error code,
request and response sizes in bytes, the time taken in milliseconds and whether an API key was presented. The
submitted text and the translation appear only with ``TRANSLATE_LOG_TEXT=1`` (debugging; never in production).

On Google Cloud (``use_cloud_logging``, called by ``handler.adapters.gcp``) each access line also carries the fields
Cloud Logging reads into its log entry (``cloud_logging_fields``): ``httpRequest`` (method, route, status, sizes,
latency, user agent, client address) and, when the request names a trace (``X-Cloud-Trace-Context`` or
``traceparent``) and the project is known (``GOOGLE_CLOUD_PROJECT``, else ``GCP_PROJECT`` or ``GCLOUD_PROJECT``),
``logging.googleapis.com/trace``, ``/spanId`` and ``/trace_sampled``, so that the console shows the line under the
platform's own entry for the request. Elsewhere the lines keep their host's format (Lambda's JSON log format).

``configure_logging`` makes the ``handler`` loggers write JSON lines to stderr when the host has not configured
logging (functions-framework, ``python -m handler serve``); where it has (the Lambda runtime, which formats
records itself, JSON with ``AWS_LAMBDA_LOG_FORMAT=JSON``; a test runner), records go to the host's handlers with the
same fields as ``extra`` attributes.
"""

from __future__ import annotations

import contextvars
import ipaddress
import json
import logging
import os
import re
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

REQUEST_ID_HEADER = "X-Request-Id"
UNKNOWN_ROUTE = "(unknown)"
MAX_LOGGED_BODY_CHARS = 20_000  # TRANSLATE_LOG_TEXT=1 only: bodies are cut to this many characters

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:@+=/-]{1,128}")
_CLOUD_TRACE = re.compile(r"([0-9a-fA-F]{32})(?:/|$)")  # X-Cloud-Trace-Context: TRACE_ID/SPAN_ID;o=1
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")
_AMZN_ROOT = re.compile(r"(?:^|;)\s*Root=(1-[0-9a-f]{8}-[0-9a-f]{24})")
# X-Cloud-Trace-Context: TRACE_ID[/SPAN_ID][;o=OPTIONS], the span a decimal number; traceparent: its hex span, flags
_CLOUD_TRACE_PARTS = re.compile(r"([0-9a-fA-F]{32})(?:/([0-9]{1,20}))?(?:;o=([0-9]+))?")
_TRACEPARENT_PARTS = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
PROJECT_VARIABLES = ("GOOGLE_CLOUD_PROJECT", "GCP_PROJECT", "GCLOUD_PROJECT")  # the first set names the project
MAX_USER_AGENT = 512

access_logger = logging.getLogger("handler.access")
current_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)

# LogRecord attributes that are not fields of ours
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


def request_id_for(headers: Mapping[str, str], platform_id: str | None = None) -> str:
    """The request's id (lower-case header names): the caller's, the platform's, or a new one."""
    given = headers.get("x-request-id", "").strip()
    if _REQUEST_ID.fullmatch(given):
        return given
    if platform_id and _REQUEST_ID.fullmatch(platform_id):
        return platform_id
    for header, pattern in (
        ("x-cloud-trace-context", _CLOUD_TRACE),
        ("traceparent", _TRACEPARENT),
        ("x-amzn-trace-id", _AMZN_ROOT),
    ):
        found = pattern.search(headers.get(header, "").strip())
        if found:
            return found.group(1)
    return uuid.uuid4().hex


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per record: time, severity (Cloud Logging reads it), logger, message, request id, extras.

    An exception's type, message and traceback go into ``exception`` (logs only; responses never carry them).
    """

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "severity": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None) or current_request_id.get()
        if request_id:
            line["request_id"] = request_id
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and key not in line:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


_HANDLER_NAME = "handler-json-lines"


def configure_logging() -> None:
    """JSON lines on stderr for the ``handler`` loggers, unless the host configured logging (idempotent)."""
    package = logging.getLogger("handler")
    package.setLevel(logging.INFO)
    if any(getattr(h, "name", None) == _HANDLER_NAME for h in package.handlers):
        return
    if logging.getLogger().handlers:
        return  # the host formats and ships the records (the Lambda runtime, a test runner, an application)
    handler = logging.StreamHandler(sys.stderr)
    handler.name = _HANDLER_NAME
    handler.setFormatter(JsonLinesFormatter())
    package.addHandler(handler)
    package.propagate = False


def log_access(fields: Mapping[str, Any]) -> None:
    """Write one access line; ``fields`` are the record's attributes (see the module docstring)."""
    status = int(fields.get("status") or 0)
    message = f"{fields.get('method')} {fields.get('route')} {status}"
    access_logger.log(logging.ERROR if status >= 500 else logging.INFO, message, extra=dict(fields))


def logged_body(body: bytes) -> str:
    """A request or response body as text for the debug log (``TRANSLATE_LOG_TEXT=1``), cut to a bound."""
    text = body.decode("utf-8", "replace")
    return text if len(text) <= MAX_LOGGED_BODY_CHARS else text[:MAX_LOGGED_BODY_CHARS] + "..."


# --- Google Cloud: the fields Cloud Logging reads --------------------------------------------------------------
@dataclass
class _CloudLogging:
    enabled: bool = False
    project: str = ""


_CLOUD_LOGGING = _CloudLogging()


def use_cloud_logging(environ: Mapping[str, str] | None = None) -> None:
    """Access lines carry Cloud Logging's fields from now on (the project: the first of ``PROJECT_VARIABLES`` set;
    without one, no trace field)."""
    environ = os.environ if environ is None else environ
    _CLOUD_LOGGING.project = next((environ[name].strip() for name in PROJECT_VARIABLES if environ.get(name)), "")
    _CLOUD_LOGGING.enabled = True


def trace_of(headers: Mapping[str, str]) -> tuple[str, str | None, bool | None] | None:
    """The trace a request names (lower-case header names): its id, its span as 16 hex digits, whether it is sampled;
    ``X-Cloud-Trace-Context`` first, then ``traceparent``; None when neither is well formed."""
    cloud = _CLOUD_TRACE_PARTS.fullmatch(headers.get("x-cloud-trace-context", "").strip())
    if cloud is not None and int(cloud.group(1), 16):
        trace, span, options = cloud.groups()
        span_hex = f"{int(span):016x}" if span and 0 < int(span) < 2**64 else None
        return trace.lower(), span_hex, None if options is None else bool(int(options) & 1)
    parent = _TRACEPARENT_PARTS.fullmatch(headers.get("traceparent", "").strip())
    if parent is not None and int(parent.group(1), 16) and int(parent.group(2), 16):
        trace, span, flags = parent.groups()
        return trace, span, bool(int(flags, 16) & 1)
    return None


def cloud_logging_fields(method: str, headers: Mapping[str, str], access: Mapping[str, Any]) -> dict[str, Any]:
    """On Google Cloud, the fields of a request's access line (``access``: its route, status, sizes and duration;
    ``headers``: the request's, lower-case names) that Cloud Logging
    reads as the entry's ``httpRequest`` (``google.logging.type.HttpRequest``: sizes as int64 strings, latency as a
    duration string) and trace; elsewhere none. The URL is the route, as on the line: a path may hold text."""
    if not _CLOUD_LOGGING.enabled:
        return {}
    http: dict[str, Any] = {
        "requestMethod": method,
        "requestUrl": str(access["route"]),
        "status": int(access["status"]),
        "requestSize": str(access["request_bytes"]),
        "responseSize": str(access["response_bytes"]),
        "latency": f"{float(access['duration_ms']) / 1000:.6f}s",
    }
    agent = headers.get("user-agent", "").strip()
    if agent:
        http["userAgent"] = agent[:MAX_USER_AGENT]
    client = headers.get("x-forwarded-for", "").split(",")[0].strip()
    try:
        http["remoteIp"] = str(ipaddress.ip_address(client))
    except ValueError:
        pass  # no address, or not one
    fields: dict[str, Any] = {"httpRequest": http}
    trace = trace_of(headers)
    if trace is not None and _CLOUD_LOGGING.project:
        trace_id, span, sampled = trace
        fields["logging.googleapis.com/trace"] = f"projects/{_CLOUD_LOGGING.project}/traces/{trace_id}"
        if span is not None:
            fields["logging.googleapis.com/spanId"] = span
        if sampled is not None:
            fields["logging.googleapis.com/trace_sampled"] = sampled
    return fields
