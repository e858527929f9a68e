"""A fault-injecting HTTP/1.1 proxy for loopback tests: clients talk to it as if it were the storage server.

It forwards each request to the real server (moto's S3 server, gcp-storage-emulator) and relays the answer,
except for requests a ``Fault`` matches (method, and a regular expression searched in the path and query), which
it spoils in one of these ways:

``status``          answer ``status`` (500, 503, ...) with a body in the server's error format; nothing forwarded
``drop``            read the request, then close the connection without answering; nothing forwarded
``drop_midway``     forward the request line, headers and half the body, then close both connections
``drop_answer``     forward the whole request, let the server act on it, close the client's connection unanswered
``truncate``        forward, relay the status, the headers and half the body of the answer, then close
``stall``           read the request and answer nothing for ``stall_s`` seconds (or until the proxy stops)

A fault spoils its first ``times`` matching requests (``times=-1``: every one until ``clear()``). ``requests``
records every request as ``(method, path, outcome)``: the outcome is "forwarded" or the fault's action.
"""

from __future__ import annotations

import http.client
import re
import socket
import socketserver
import threading
from dataclasses import dataclass, field
from typing import BinaryIO

S3_ERROR_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>injected by the fault proxy'
    b"</Message><RequestId>fault</RequestId></Error>"
)
_S3_CODES = {500: b"InternalError", 503: b"ServiceUnavailable", 502: b"BadGateway"}
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade", "trailer"}


def error_body(flavour: str, status: int) -> tuple[bytes, str]:
    """A body the client SDK parses as the server's own error answer: S3 XML or Google JSON."""
    if flavour == "s3":
        return S3_ERROR_BODY.replace(b"{code}", _S3_CODES.get(status, b"InternalError")), "application/xml"
    body = f'{{"error": {{"code": {status}, "message": "injected by the fault proxy", "errors": []}}}}'
    return body.encode(), "application/json; charset=UTF-8"


@dataclass
class Fault:
    action: str
    methods: frozenset[str]
    path: str = ""  # a regular expression searched in the request target (path and query)
    times: int = 1
    status: int = 503
    stall_s: float = 60.0
    hits: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        assert self.action in ("status", "drop", "drop_midway", "drop_answer", "truncate", "stall"), self.action

    def matches(self, method: str, target: str) -> bool:
        return method in self.methods and re.search(self.path, target) is not None


@dataclass
class Request:
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name), None)


class FaultProxy:
    def __init__(self, upstream: str, flavour: str) -> None:
        """``upstream``: ``http://host:port`` of the real server; ``flavour``: "s3" or "gcs" (error bodies)."""
        host, port = upstream.removeprefix("http://").rstrip("/").split(":")
        self.upstream = (host, int(port))
        self.flavour = flavour
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.connection, self.rfile)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def inject(self, fault: Fault) -> Fault:
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()
            self.requests.clear()

    def outcomes(self) -> list[str]:
        with self._lock:
            return [outcome for _, _, outcome in self.requests]

    # --- serving ----------------------------------------------------------------------------------------------
    def _fault_for(self, request: Request) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.matches(request.method, request.target) and (fault.times < 0 or fault.hits < fault.times):
                    fault.hits += 1
                    return fault
        return None

    def _serve(self, client: socket.socket, reader: BinaryIO) -> None:
        while not self._stopping.is_set():
            try:
                request = _read_request(reader, client)
            except (OSError, ValueError):
                return
            if request is None:
                return
            fault = self._fault_for(request)
            with self._lock:
                self.requests.append((request.method, request.target, fault.action if fault else "forwarded"))
            try:
                if fault is None:
                    self._forward(client, request)
                    continue
                self._spoil(client, request, fault)
            except OSError:
                pass
            return  # a spoilt request ends its connection

    def _spoil(self, client: socket.socket, request: Request, fault: Fault) -> None:
        if fault.action == "status":
            body, content_type = error_body(self.flavour, fault.status)
            head = (
                f"HTTP/1.1 {fault.status} {http.client.responses.get(fault.status, 'Error')}\r\n"
                f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            client.sendall(head.encode("latin-1") + body)
        elif fault.action == "stall":
            self._stopping.wait(fault.stall_s)
        elif fault.action == "drop_midway":
            with socket.create_connection(self.upstream, timeout=10) as upstream:
                upstream.sendall(_head(request) + request.body[: len(request.body) // 2])
        elif fault.action == "drop_answer":
            self._exchange(request)
        elif fault.action == "truncate":
            status, reason, headers, body = self._exchange(request)
            client.sendall(_response_head(status, reason, headers, len(body)) + body[: len(body) // 2])
        # "drop" and every spoilt exchange: the connection closes now, unanswered or cut short
        _close(client)

    def _exchange(self, request: Request) -> tuple[int, str, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(*self.upstream, timeout=30)
        try:
            connection.putrequest(request.method, request.target, skip_host=True, skip_accept_encoding=True)
            for name, value in request.headers:
                if name.lower() not in _HOP_BY_HOP:
                    connection.putheader(name, value)
            connection.putheader("Content-Length", str(len(request.body)))
            connection.endheaders(request.body)
            response = connection.getresponse()
            body = response.read()
            headers = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP]
            if request.method == "HEAD":  # keep the server's Content-Length: it describes the object
                return response.status, response.reason, headers, b""
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
            return response.status, response.reason, headers, body
        finally:
            connection.close()

    def _forward(self, client: socket.socket, request: Request) -> None:
        status, reason, headers, body = self._exchange(request)
        length = None if request.method == "HEAD" else len(body)
        client.sendall(_response_head(status, reason, headers, length) + body)


def _read_request(reader: BinaryIO, client: socket.socket) -> Request | None:
    line = reader.readline(65537)
    if not line:
        return None
    method, target, _version = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    headers: list[tuple[str, str]] = []
    while True:
        raw = reader.readline(65537).decode("latin-1").rstrip("\r\n")
        if not raw:
            break
        name, _, value = raw.partition(":")
        headers.append((name.strip(), value.strip()))
    request = Request(method, target, [(k, v) for k, v in headers if k.lower() != "expect"], b"")
    if any(k.lower() == "expect" and v.lower() == "100-continue" for k, v in headers):
        client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")  # boto3 waits for it (up to a second) before the body
    if (request.header("transfer-encoding") or "").lower() == "chunked":
        chunks = []
        while True:
            size = int(reader.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while reader.readline() not in (b"\r\n", b"\n", b""):
                    pass
                break
            chunks.append(reader.read(size))
            reader.readline()
        request.body = b"".join(chunks)
    else:
        request.body = reader.read(int(request.header("content-length") or 0))
    return request


def _head(request: Request) -> bytes:
    lines = [f"{request.method} {request.target} HTTP/1.1"]
    lines += [f"{k}: {v}" for k, v in request.headers if k.lower() not in _HOP_BY_HOP and k.lower() != "content-length"]
    lines += [f"Content-Length: {len(request.body)}", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


def _response_head(status: int, reason: str, headers: list[tuple[str, str]], length: int | None) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers)]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines += ["", ""]
    return "\r\n".join(lines).encode("latin-1")


def _close(connection: socket.socket) -> None:
    try:
        connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
