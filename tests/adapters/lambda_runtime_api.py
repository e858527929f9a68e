"""A small implementation of the AWS Lambda Runtime API (version 2018-06-01) on loopback, for tests.

The real runtime interface client (``python -m awslambdaric handler.adapters.aws_lambda.lambda_handler``) talks to it
exactly as it talks to Lambda: it long-polls ``GET /2018-06-01/runtime/invocation/next`` for an event and posts
the handler's result to ``.../invocation/{id}/response`` or ``.../invocation/{id}/error``; an initialisation
failure goes to ``/2018-06-01/runtime/init/error``. Protocol:
https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html

A response in the streaming mode (``Lambda-Runtime-Function-Response-Mode: streaming``, chunked transfer encoding;
``python -m handler.adapters.lambda_streaming``) is read chunk by chunk as it arrives: each chunk is recorded with
its arrival time (``Invocation.chunks``) and handed to a reader at once (``Invocation.chunks_as_they_come``), the
request's headers and trailers are kept, and the payload is the raw body.

Like Lambda Managed Instances' Runtime API it takes concurrent ``/next`` polls and ``/response`` posts, and counts
them: ``waiting`` (polls parked now) and ``most_waiting``, ``in_flight`` (invocations delivered and not yet
answered) and ``most_in_flight``. ``hold_answers(n)`` makes every answer wait, before its 202, until ``n`` more
invocations have been delivered (or ``hold_timeout_s`` passed): a runtime that holds ``n`` invocations at once gets
through at once; one that handles one at a time sits in its first answer and ``most_in_flight`` stays 1.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PREFIX = "/2018-06-01/runtime"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:zh-en-translate"


@dataclass
class Invocation:
    request_id: str
    event: Any
    deadline_ms: int
    done: threading.Event = field(default_factory=threading.Event)
    outcome: str = ""  # "response" or "error"
    payload: Any = None
    trace_id: str = ""  # the Lambda-Runtime-Trace-Id it was delivered with
    # a streamed response: the request's headers (lower-case names), each chunk with its time.monotonic() arrival,
    # the trailers
    streamed: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    trailers: dict[str, str] = field(default_factory=dict)
    _arrivals: queue.Queue[tuple[float, bytes] | None] = field(default_factory=queue.Queue)

    def chunks_as_they_come(self, timeout_s: float = 120.0) -> Iterator[tuple[float, bytes]]:
        """Each chunk of a streamed response (arrival time, bytes) as soon as it arrives, until the body ends."""
        while True:
            try:
                chunk = self._arrivals.get(timeout=timeout_s)
            except queue.Empty:
                raise TimeoutError(f"no chunk of the streamed response arrived within {timeout_s} s") from None
            if chunk is None:
                return
            yield chunk

    def wait(self, timeout_s: float = 120.0) -> tuple[str, Any]:
        if not self.done.wait(timeout_s):
            raise TimeoutError(f"the runtime client did not answer within {timeout_s} s")
        return self.outcome, self.payload


PRELUDE_SEPARATOR = b"\0" * 8  # ends a Function URL stream's HTTP prelude


@dataclass
class FunctionUrlStream:
    """A streamed Function URL answer as its client sees it: the prelude, then each NDJSON line with the arrival time
    of the chunk that ended it."""

    prelude: dict[str, Any]
    first_chunk: bytes
    lines: list[tuple[float, dict[str, Any]]]

    def of_type(self, kind: str) -> list[tuple[float, dict[str, Any]]]:
        return [(arrived, line) for arrived, line in self.lines if line["type"] == kind]

    def streamed_while_decoding(self) -> tuple[float, float]:
        """(seconds from the first segment's arrival to the last line's, the decoding's own elapsed seconds);
        ``AssertionError`` unless the first segment came in good time before the end: at least a quarter of the
        decoding after the first window (a response sent whole after the decoding has them arrive together)."""
        segments, progress, done = self.of_type("segment"), self.of_type("progress"), self.of_type("done")
        assert segments and progress and len(done) == 1, [line["type"] for _, line in self.lines]
        decoding_s = done[0][1]["elapsed_ms"] / 1000
        first_share = progress[0][1]["done"] / progress[0][1]["total"]
        waited = done[0][0] - segments[0][0]
        assert waited >= 0.25 * (1 - first_share) * decoding_s, (
            f"the first segment arrived {waited:.3f} s before the end of a {decoding_s:.3f} s decoding whose first "
            f"window was {first_share:.0%} of the text: the answer was not streamed as it was decoded"
        )
        return waited, decoding_s


def read_function_url_stream(invocation: Invocation, timeout_s: float = 180.0) -> FunctionUrlStream:
    """Read ``invocation``'s streamed NDJSON answer chunk by chunk as it arrives: the prelude (sent alone, first),
    then each line."""
    chunks = invocation.chunks_as_they_come(timeout_s=timeout_s)
    try:
        _, first = next(chunks)
    except StopIteration:
        raise AssertionError(f"no streamed response (outcome {invocation.outcome!r}: {invocation.payload!r})") from None
    lines: list[tuple[float, dict[str, Any]]] = []
    pending = b""
    for arrived, chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        lines += [(arrived, json.loads(line)) for line in complete if line]
    assert pending == b"", f"the body ended inside a line: {pending[:200]!r}"
    prelude_json, separator, rest = first.partition(PRELUDE_SEPARATOR)
    assert separator == PRELUDE_SEPARATOR, f"the first chunk has no eight-NUL separator: {first[:300]!r}"
    assert rest == b"", "the prelude is sent alone, before any of the body"
    return FunctionUrlStream(json.loads(prelude_json), first, lines)


class LambdaRuntimeApi:
    """Queue events with ``invoke``; the runtime client picks them up and posts the outcome back."""

    def __init__(self) -> None:
        self._pending: queue.Queue[Invocation] = queue.Queue()
        self._invocations: dict[str, Invocation] = {}
        self._stopping = threading.Event()
        self.init_errors: list[Any] = []
        self.polls = 0
        # concurrency, as the Runtime API sees it
        self._counts = threading.Condition()
        self.waiting = self.most_waiting = 0
        self.delivered = self.answered = self.most_in_flight = 0
        self.hold_until_delivered = 0
        self.hold_timeout_s = 10.0
        self.answer_order: list[str] = []  # request ids, in the order their answers arrived
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        """The value for ``AWS_LAMBDA_RUNTIME_API``."""
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def start(self) -> LambdaRuntimeApi:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def invoke(self, event: Any, *, timeout_s: float = 120.0, time_limit_s: float = 900.0) -> tuple[str, Any]:
        """Deliver ``event`` with ``time_limit_s`` of invocation time left; returns (outcome, payload)."""
        invocation = self.start_invocation(event, time_limit_s=time_limit_s)
        if not invocation.done.wait(timeout_s):
            raise TimeoutError(
                f"the runtime client did not answer within {timeout_s} s (init errors: {self.init_errors})"
            )
        return invocation.outcome, invocation.payload

    def start_invocation(self, event: Any, *, time_limit_s: float = 900.0) -> Invocation:
        """Queue ``event`` with ``time_limit_s`` of invocation time left and return at once (read a streamed
        response with ``Invocation.chunks_as_they_come``, wait for the end with ``Invocation.wait``)."""
        invocation = Invocation(str(uuid.uuid4()), event, int((time.time() + time_limit_s) * 1000))
        self._invocations[invocation.request_id] = invocation
        self._pending.put(invocation)
        return invocation

    @property
    def in_flight(self) -> int:
        return self.delivered - self.answered

    def wait_for_waiting(self, count: int, timeout_s: float = 60.0) -> bool:
        """Whether ``count`` polls of ``/next`` were parked here at once within ``timeout_s``."""
        with self._counts:
            return self._counts.wait_for(lambda: self.most_waiting >= count, timeout=timeout_s)

    def start_counting(self) -> None:
        """``most_waiting`` and ``most_in_flight`` from now on (what is waiting and in flight now)."""
        with self._counts:
            self.most_waiting, self.most_in_flight = self.waiting, self.in_flight

    def hold_answers(self, count: int, timeout_s: float = 10.0) -> None:
        """From now on every answer waits, before its 202, until ``count`` more invocations have been delivered."""
        with self._counts:
            self.hold_until_delivered, self.hold_timeout_s = self.delivered + count, timeout_s

    def _next(self) -> Invocation | None:
        self.polls += 1
        with self._counts:
            self.waiting += 1
            self.most_waiting = max(self.most_waiting, self.waiting)
            self._counts.notify_all()
        try:
            while not self._stopping.is_set():
                try:
                    invocation = self._pending.get(timeout=0.2)
                except queue.Empty:
                    continue
                with self._counts:
                    self.delivered += 1
                    self.most_in_flight = max(self.most_in_flight, self.in_flight)
                    self._counts.notify_all()
                return invocation
            return None
        finally:
            with self._counts:
                self.waiting -= 1

    def _answered(self, invocation: Invocation) -> None:
        """An answer arrived: held while fewer than ``hold_until_delivered`` invocations were delivered."""
        with self._counts:
            self._counts.wait_for(lambda: self.delivered >= self.hold_until_delivered, timeout=self.hold_timeout_s)
            self.answered += 1
            self.answer_order.append(invocation.request_id)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    return json.loads(raw) if raw else None
                except ValueError:
                    return raw.decode("utf-8", "replace")

            def do_GET(self) -> None:  # noqa: N802
                if self.path != f"{PREFIX}/invocation/next":
                    self._reply(404, b'{"errorMessage": "unknown path"}')
                    return
                invocation = api._next()
                if invocation is None:
                    self._reply(503, b'{"errorMessage": "shutting down"}')
                    return
                invocation.trace_id = f"Root=1-{uuid.uuid4().hex[:8]}-{uuid.uuid4().hex[:24]};Sampled=0"
                self._reply(
                    200,
                    json.dumps(invocation.event).encode("utf-8"),
                    {
                        "Content-Type": "application/json",
                        "Lambda-Runtime-Aws-Request-Id": invocation.request_id,
                        "Lambda-Runtime-Deadline-Ms": str(invocation.deadline_ms),
                        "Lambda-Runtime-Invoked-Function-Arn": FUNCTION_ARN,
                        "Lambda-Runtime-Trace-Id": invocation.trace_id,
                    },
                )

            def _read_streamed(self, invocation: Invocation) -> None:
                """A chunked body read chunk by chunk, each recorded and handed on as it arrives; then trailers."""
                invocation.streamed = True
                invocation.headers = {name.lower(): value for name, value in self.headers.items()}
                try:
                    while True:
                        size_line = self.rfile.readline()
                        if not size_line:
                            raise ConnectionError("the streamed response ended before its last chunk")
                        size = int(size_line.split(b";", 1)[0].strip(), 16)
                        if size == 0:
                            break
                        chunk = self.rfile.read(size)
                        if self.rfile.read(2) != b"\r\n":
                            raise ValueError("a chunk is not followed by CRLF")
                        arrival = (time.monotonic(), chunk)
                        invocation.chunks.append(arrival)
                        invocation._arrivals.put(arrival)
                    while (line := self.rfile.readline().rstrip(b"\r\n")) != b"":
                        name, _, value = line.decode("latin-1").partition(":")
                        invocation.trailers[name.strip()] = value.strip()
                finally:
                    invocation._arrivals.put(None)
                invocation.outcome = "response"
                invocation.payload = b"".join(chunk for _, chunk in invocation.chunks)

            def do_POST(self) -> None:  # noqa: N802
                parts = self.path[len(PREFIX) :].strip("/").split("/")
                if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                    invocation = api._invocations.get(parts[1]) if len(parts) == 3 else None
                    if invocation is None or parts[2] != "response":
                        self._reply(400, b'{"errorMessage": "unknown request id"}')
                        self.close_connection = True
                        return
                    if self.headers.get("Lambda-Runtime-Function-Response-Mode", "").lower() != "streaming":
                        self._reply(400, b'{"errorMessage": "a chunked response without the streaming mode"}')
                        self.close_connection = True
                        return
                    self._read_streamed(invocation)
                    api._answered(invocation)
                    invocation.done.set()
                    self._reply(202, b'{"status": "OK"}')
                    return
                body = self._body()
                if self.path == f"{PREFIX}/init/error":
                    api.init_errors.append(body)
                    self._reply(202, b'{"status": "OK"}')
                    return
                if len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
                    invocation = api._invocations.get(parts[1])
                    if invocation is None:
                        self._reply(400, b'{"errorMessage": "unknown request id"}')
                        return
                    invocation.outcome, invocation.payload = parts[2], body
                    invocation.headers = {name.lower(): value for name, value in self.headers.items()}
                    api._answered(invocation)
                    invocation.done.set()
                    self._reply(202, b'{"status": "OK"}')
                    return
                self._reply(404, b'{"errorMessage": "unknown path"}')

        return Handler
