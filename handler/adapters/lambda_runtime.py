"""The Lambda Runtime API loop of the image: one process, one model, as many invocations at a time as Lambda sends.

On-demand Lambda gives an execution environment one invocation at a time. Lambda Managed Instances give it up to
``AWS_LAMBDA_MAX_CONCURRENCY`` at once: the Runtime API then takes that many concurrent
``GET /2018-06-01/runtime/invocation/next`` long polls and their ``/response`` and ``/error`` posts
(https://docs.aws.amazon.com/lambda/latest/dg/runtimes-custom.html, "Building custom runtimes for Lambda Managed
Instances"). AWS's Python runtime serves that with one process per concurrent invocation (awslambdaric's
``MultiConcurrentRunner`` forks them), each loading its own copy of the model. This loop runs
``AWS_LAMBDA_MAX_CONCURRENCY`` worker threads in the one process instead (unset: 1, on-demand Lambda; the same code),
each doing next -> handler -> response or error, buffered and streamed results alike; their translations all feed
the process's one decoder (``handler.decoder``), which batches them together.

What is awslambdaric's is kept: the handler is loaded by ``awslambdaric.bootstrap._get_handler`` (an import failure
is posted to ``/runtime/init/error``), each invocation is handled by ``bootstrap.handle_event_request`` (the
``LambdaContext`` with the invocation's own deadline from ``Lambda-Runtime-Deadline-Ms``, the error JSON and X-Ray
fault of an exception), and the log lines are awslambdaric's (its text or JSON formatter, ``AWS_LAMBDA_LOG_FORMAT``).
What is not: awslambdaric's runtime client is one C object shared by the process (one curl handle), unusable from
several threads, so each worker here talks to the Runtime API with the standard library's ``http.client``, one
connection per call.

Per-invocation state stays in its thread. The request id on each log line comes from a context variable set by the
worker (awslambdaric reads a module global). The X-Ray trace id (``Lambda-Runtime-Trace-Id``) is
``current_trace_id()``, also a context variable; the process-global ``_X_AMZN_TRACE_ID`` environment variable, which
awslambdaric sets per invocation, is set only when one invocation runs at a time: with several, one invocation's
trace id would be read by another's code (botocore reads it for every AWS call). AWS's multi-concurrent runtimes keep
it per request too (Node.js in AsyncLocalStorage, Java in a thread-local map); ``handler.adapters.aws_lambda`` adds
the invocation's own trace id to its S3 calls instead.

A bad ``AWS_LAMBDA_MAX_CONCURRENCY`` (not a whole number from 1 to 1600, AWS's bound on
``PerExecutionEnvironmentMaxConcurrency``) stops the start with a message naming it, before the model is loaded, and
is posted to ``/runtime/init/error``. A response the Runtime API refuses, or whose connection breaks, is logged and
the worker goes on; a Runtime API that cannot be polled any more (five tries) ends the process, so Lambda replaces
the environment.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

RUNTIME_API_VERSION = "2018-06-01"
MAX_CONCURRENCY_ENV = "AWS_LAMBDA_MAX_CONCURRENCY"
MAX_CONCURRENCY = 1600  # AWS's bound on PerExecutionEnvironmentMaxConcurrency
TRACE_ID_ENV = "_X_AMZN_TRACE_ID"
ERROR_TYPE_HEADER = "Lambda-Runtime-Function-Error-Type"
XRAY_CAUSE_HEADER = "Lambda-Runtime-Function-XRay-Error-Cause"
INVOCATION_ID_HEADER = "Lambda-Runtime-Invocation-Id"
MAX_XRAY_CAUSE_BYTES = 1024 * 1024  # awslambdaric leaves a larger X-Ray fault out
INVALID_CONCURRENCY = "Runtime.InvalidMaxConcurrency"
NEXT_ATTEMPTS = 5  # polls of /next before the loop gives up (awslambdaric's multi-concurrent client: the same)
FIRST_RETRY_S = 0.1

_REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("lambda_request_id", default=None)
_TRACE_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("lambda_trace_id", default=None)
_TENANT_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("lambda_tenant_id", default=None)


def current_request_id() -> str | None:
    """The Lambda request id of the invocation this thread is handling (None outside one)."""
    return _REQUEST_ID.get()


def current_trace_id() -> str | None:
    """The X-Ray trace header (``Lambda-Runtime-Trace-Id``) of the invocation this thread is handling."""
    return _TRACE_ID.get()


class ConcurrencyError(ValueError):
    """``AWS_LAMBDA_MAX_CONCURRENCY`` holds something other than a whole number from 1 to 1600."""


class RuntimeApiError(Exception):
    """The Runtime API answered a call with an unexpected status (the status and answer are in the message)."""


def max_concurrency(environ: Mapping[str, str]) -> int:
    """How many invocations the loop holds at once: ``AWS_LAMBDA_MAX_CONCURRENCY``, 1 when it is unset."""
    raw = environ.get(MAX_CONCURRENCY_ENV)
    if raw is None:
        return 1
    text = raw.strip()
    if not re.fullmatch(r"[0-9]{1,5}", text) or not 1 <= int(text) <= MAX_CONCURRENCY:
        raise ConcurrencyError(
            f"{MAX_CONCURRENCY_ENV} must be a whole number from 1 to {MAX_CONCURRENCY} (the invocations one "
            f"execution environment handles at once; Lambda Managed Instances set it from the function's "
            f"PerExecutionEnvironmentMaxConcurrency, on-demand Lambda leaves it unset); got {raw!r}"
        )
    return int(text)


@dataclass(frozen=True)
class Invocation:
    """What ``GET /runtime/invocation/next`` delivered: the event and its headers."""

    request_id: str
    body: bytes
    content_type: str | None
    deadline_ms: int
    trace_id: str | None = None
    function_arn: str | None = None
    client_context: str | None = None
    cognito_identity: str | None = None
    tenant_id: str | None = None
    invocation_id: str | None = None

    @classmethod
    def from_reply(cls, headers: Any, body: bytes) -> Invocation:
        request_id = headers.get("Lambda-Runtime-Aws-Request-Id")
        deadline = headers.get("Lambda-Runtime-Deadline-Ms")
        if not request_id or deadline is None or not deadline.strip().isdigit():
            raise RuntimeApiError(f"the next invocation lacks its request id or deadline: {dict(headers.items())}")
        return cls(
            request_id=request_id,
            body=body,
            content_type=headers.get("Content-Type"),
            deadline_ms=int(deadline),
            trace_id=headers.get("Lambda-Runtime-Trace-Id"),
            function_arn=headers.get("Lambda-Runtime-Invoked-Function-Arn"),
            client_context=headers.get("Lambda-Runtime-Client-Context"),
            cognito_identity=headers.get("Lambda-Runtime-Cognito-Identity"),
            tenant_id=headers.get("Lambda-Runtime-Aws-Tenant-Id"),
            invocation_id=headers.get(INVOCATION_ID_HEADER),
        )


@dataclass(frozen=True)
class ResultKinds:
    """How results reach the Runtime API: awslambdaric's marshaller (bytes and content type of a result) and, for
    the one kind it cannot marshal, its type and the function that posts it (``address, request_id, result``)."""

    marshaller: Any
    streamed_type: type | None = None
    post_streamed: Callable[[str, str, Any], None] | None = None


class RuntimeApiClient:
    """One worker's calls to the Runtime API at ``address``: a new ``http.client`` connection per call, so workers
    share nothing. Implements what ``awslambdaric.bootstrap.handle_event_request`` calls on its client."""

    def __init__(self, address: str, results: ResultKinds) -> None:
        from awslambdaric.lambda_runtime_client import _user_agent

        self.address = address
        self.results = results
        self.marshaller = results.marshaller
        self.user_agent = _user_agent()

    def _call(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
        import http.client

        connection = http.client.HTTPConnection(self.address)
        try:
            connection.request(method, path, body, {"User-Agent": self.user_agent, **(headers or {})})
            reply = connection.getresponse()
            return reply.status, reply.headers, reply.read()
        finally:
            connection.close()

    def next_invocation(self) -> Invocation:
        """The next event (a long poll), retried with backoff when the Runtime API cannot be reached."""
        delay = FIRST_RETRY_S
        attempt = 1
        while True:
            try:
                status, headers, body = self._call("GET", f"/{RUNTIME_API_VERSION}/runtime/invocation/next")
                if status == 200:
                    return Invocation.from_reply(headers, body)
                error: Exception = RuntimeApiError(f"/invocation/next answered {status}: {_excerpt(body)}")
            except OSError as broken:
                error = broken
            if attempt == NEXT_ATTEMPTS:
                raise error
            logger.warning("polling the Runtime API failed (%s), attempt %d of %d", error, attempt, NEXT_ATTEMPTS)
            time.sleep(delay)
            delay, attempt = delay * 2, attempt + 1

    def _post(self, path: str, body: bytes, headers: dict[str, str]) -> None:
        status, _, answer = self._call("POST", f"/{RUNTIME_API_VERSION}/runtime/{path}", body, headers)
        if status != 202:
            raise RuntimeApiError(f"the Runtime API answered {status} to /{path}: {_excerpt(answer)}")

    def post_invocation_result(
        self, invoke_id: str, result_data: Any, content_type: str = "application/json", invocation_id: str | None = None
    ) -> None:
        streamed = self.results.streamed_type
        if streamed is not None and isinstance(result_data, streamed) and self.results.post_streamed is not None:
            self.results.post_streamed(self.address, invoke_id, result_data)
            return
        body = result_data if isinstance(result_data, bytes) else str(result_data).encode("utf-8")
        headers = {"Content-Type": content_type, **_invocation_header(invocation_id)}
        self._post(f"invocation/{invoke_id}/response", body, headers)

    def post_invocation_error(
        self, invoke_id: str, error_response_data: str, xray_fault: str, invocation_id: str | None = None
    ) -> None:
        headers = {"Content-Type": "application/json", **_invocation_header(invocation_id)}
        error_type = _json_field(error_response_data, "errorType")
        if error_type:
            headers[ERROR_TYPE_HEADER] = error_type
        cause = _ascii_json(xray_fault)
        if cause and len(cause) < MAX_XRAY_CAUSE_BYTES:
            headers[XRAY_CAUSE_HEADER] = cause
        self._post(f"invocation/{invoke_id}/error", error_response_data.encode("utf-8"), headers)

    def post_init_error(self, error_response_data: Mapping[str, Any], error_type: str | None = None) -> None:
        body = json.dumps(error_response_data).encode("utf-8")
        kind = error_type or str(error_response_data.get("errorType") or "Runtime.Unknown")
        self._post("init/error", body, {"Content-Type": "application/json", ERROR_TYPE_HEADER: _header_text(kind)})


def _invocation_header(invocation_id: str | None) -> dict[str, str]:
    return {INVOCATION_ID_HEADER: invocation_id} if invocation_id else {}


def _excerpt(answer: bytes) -> str:
    return answer[:500].decode("utf-8", "replace")


def _json_field(text: str, name: str) -> str:
    try:
        value = json.loads(text).get(name)
    except (ValueError, AttributeError):
        return ""
    return _header_text(value) if isinstance(value, str) else ""


def _header_text(value: str) -> str:
    """``value`` as an HTTP header value: ASCII, no line breaks."""
    return value.encode("ascii", "backslashreplace").decode("ascii").replace("\r", " ").replace("\n", " ")


def _ascii_json(text: str) -> str:
    """A JSON document written in ASCII only (a header value), or "" when it is none."""
    try:
        return json.dumps(json.loads(text))
    except ValueError:
        return ""


class _InvocationLogFilter(logging.Filter):
    """awslambdaric's log filter, with the request id of the invocation the logging thread handles (awslambdaric's
    reads one module global, which several invocations at once would overwrite)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.aws_request_id = _REQUEST_ID.get() or ""
        record.tenant_id = _TENANT_ID.get()
        return True


class _LockedSink:
    """awslambdaric's log sink written by one thread at a time (a framed record is one write, an error several)."""

    def __init__(self, sink: Any) -> None:
        self._sink = sink
        self._lock = threading.Lock()

    def log(self, msg: str, frame_type: bytes | None = None) -> None:
        with self._lock:
            self._sink.log(msg, frame_type=frame_type)

    def log_error(self, message_lines: list[str]) -> None:
        with self._lock:
            self._sink.log_error(message_lines)


def _setup_logging(sink: _LockedSink) -> None:
    """awslambdaric's logging (formatter, level, ``AWS_LAMBDA_LOG_FORMAT``) with the per-invocation request id."""
    from awslambdaric import bootstrap

    bootstrap._setup_logging(bootstrap._AWS_LAMBDA_LOG_FORMAT, bootstrap._AWS_LAMBDA_LOG_LEVEL, sink)
    for handler in logging.getLogger().handlers:
        for found in [f for f in handler.filters if isinstance(f, bootstrap.LambdaLoggerFilter)]:
            handler.removeFilter(found)
            handler.addFilter(_InvocationLogFilter())


class InvocationLoop:
    """``workers`` threads, each polling the Runtime API for an invocation, handling it and posting its result."""

    def __init__(self, request_handler: Any, address: str, results: ResultKinds, sink: Any, workers: int) -> None:
        self.request_handler = request_handler
        self.address = address
        self.results = results
        self.sink = sink
        self.workers = workers
        self._stopped = threading.Event()
        self.failure: BaseException | None = None

    def run(self) -> BaseException:
        """Start the workers and wait; returns the failure that stopped one (the process must then end). The
        workers are daemon threads: the main thread only waits."""
        for number in range(1, self.workers + 1):
            threading.Thread(target=self._work, name=f"lambda-invocation-{number}", daemon=True).start()
        self._stopped.wait()
        assert self.failure is not None
        return self.failure

    def _work(self) -> None:
        client = RuntimeApiClient(self.address, self.results)
        try:
            while True:
                self.handle(client, client.next_invocation())
        except BaseException as error:  # the Runtime API is gone: end the process (Lambda replaces it)
            logger.critical("the Runtime API loop stopped: %s: %s", type(error).__name__, error, exc_info=True)
            self.failure = error
            self._stopped.set()

    def handle(self, client: RuntimeApiClient, invocation: Invocation) -> None:
        """One invocation, from its event to the result posted, in this thread's scope."""
        from awslambdaric import bootstrap

        with self._scope(invocation):
            try:
                bootstrap.handle_event_request(
                    client,
                    self.request_handler,
                    invocation.request_id,
                    invocation.body,
                    invocation.content_type,
                    invocation.client_context,
                    invocation.cognito_identity,
                    invocation.function_arn,
                    invocation.deadline_ms,
                    invocation.tenant_id,
                    self.sink,
                    invocation.invocation_id,
                )
            except (RuntimeApiError, OSError) as error:  # this result is lost; the other invocations go on
                logger.error("the result of %s did not reach the Runtime API: %s", invocation.request_id, error)

    @contextlib.contextmanager
    def _scope(self, invocation: Invocation) -> Iterator[None]:
        tokens = (
            _REQUEST_ID.set(invocation.request_id),
            _TRACE_ID.set(invocation.trace_id),
            _TENANT_ID.set(invocation.tenant_id),
        )
        if self.workers == 1:  # one invocation at a time: awslambdaric's process-wide globals, as before
            from awslambdaric import bootstrap

            bootstrap._GLOBAL_AWS_REQUEST_ID = invocation.request_id
            bootstrap._GLOBAL_TENANT_ID = invocation.tenant_id
            bootstrap.update_xray_env_variable(invocation.trace_id)
        try:
            yield
        finally:
            for variable, token in zip((_REQUEST_ID, _TRACE_ID, _TENANT_ID), tokens, strict=True):
                variable.reset(token)


def refuse_start(address: str | None, error: ConcurrencyError) -> None:
    """A bad setting: said on stderr and to ``/runtime/init/error``, then the process ends (status 1)."""
    print(f"lambda runtime: {error}", file=sys.stderr, flush=True)
    if address:
        body = {"errorMessage": str(error), "errorType": INVALID_CONCURRENCY, "stackTrace": []}
        try:
            RuntimeApiClient(address, ResultKinds(marshaller=None)).post_init_error(body, INVALID_CONCURRENCY)
        except (RuntimeApiError, OSError) as unposted:
            print(f"lambda runtime: the init error could not be posted: {unposted}", file=sys.stderr, flush=True)
    sys.exit(1)


def run(handler_name: str, address: str, workers: int, results: ResultKinds) -> None:
    """Load ``handler_name`` (the init phase: the model loads and warms) and serve invocations, ``workers`` at a
    time, until the Runtime API is gone; never returns."""
    from awslambdaric import bootstrap
    from awslambdaric.lambda_runtime_exception import FaultException

    sys.stdout = bootstrap.Unbuffered(sys.stdout)
    sys.stderr = bootstrap.Unbuffered(sys.stderr)
    with bootstrap.create_log_sink() as raw_sink:
        sink = _LockedSink(raw_sink)
        client = RuntimeApiClient(address, results)
        error_result = None
        try:
            _setup_logging(sink)
            request_handler = bootstrap._get_handler(handler_name)
        except FaultException as fault:
            error_result = bootstrap.make_error(fault.msg, fault.exception_type, fault.trace)
        except Exception:
            error_result = bootstrap.build_fault_result(sys.exc_info(), None)
        if error_result is not None:
            from awslambdaric.lambda_literals import lambda_unhandled_exception_warning_message

            logging.warning(lambda_unhandled_exception_warning_message)
            bootstrap.log_error(error_result, sink)
            client.post_init_error(error_result)
            sys.exit(1)
        if workers > 1:  # no process-wide trace id: each invocation's is its thread's (current_trace_id)
            os.environ.pop(TRACE_ID_ENV, None)
        InvocationLoop(request_handler, address, results, sink, workers).run()
    sys.stdout.flush()
    os._exit(1)  # a worker lost the Runtime API (logged): Lambda replaces the environment
