"""AWS Lambda response streaming: the image's entry point, the Runtime API loop with a streaming response.

    python -m handler.adapters.lambda_streaming handler.adapters.aws_lambda.lambda_handler      (the image's CMD)
    python -m handler.adapters.lambda_streaming handler.adapters.aws_lambda.streaming_handler   (Function URL streams)

awslambdaric (AWS's Python runtime interface client, 4.2.2) has no streaming mode: it posts a handler's result
whole. This entry point runs the Runtime API loop of ``handler.adapters.lambda_runtime`` (awslambdaric's logging,
context, init and invocation errors; ``AWS_LAMBDA_MAX_CONCURRENCY`` invocations at a time in one process on Lambda
Managed Instances, one on on-demand Lambda) with one more kind of result sent differently: a
``StreamedHttpResponse``, which only ``streaming_handler`` returns (for Function URL events), goes to the Runtime API
in its documented streaming mode:

* ``POST /2018-06-01/runtime/invocation/{id}/response`` with ``Lambda-Runtime-Function-Response-Mode: streaming``,
  ``Transfer-Encoding: chunked``, ``Content-Type: application/vnd.awslambda.http-integration-response`` and a
  ``Trailer`` header naming the two error trailers;
* the body: the Function URL's HTTP prelude (``{"statusCode", "headers", "cookies"}`` JSON) and eight NUL bytes as
  the first chunk, sent at once, then each chunk of the answer's body written as it comes (``HttpResponse.stream``:
  a translation's NDJSON or SSE lines; a whole answer is one chunk), then the last chunk;
* an error after the body began (the body's iterator raised) ends the body with the trailers
  ``Lambda-Runtime-Function-Error-Type`` (``Function.<exception type>``) and ``Lambda-Runtime-Function-Error-Body``
  (base64 of awslambdaric's error JSON: ``errorMessage``, ``errorType``, ``stackTrace``); Lambda counts the
  invocation as answered and passes the error on. (A translation's own failures never get here: the router ends the
  stream with an ``error`` line, ``handler.api.streamed``.)

Every other result (``lambda_handler``'s, S3 and fan-out events, API Gateway events) is marshalled by awslambdaric's
marshaller and posted whole, as ``python -m awslambdaric`` posts it. The body's iterator is always closed when the
post ends, which stops the decoding behind it; a Runtime API connection that breaks mid-stream is logged and the
worker goes on to its next invocation, as do the others, each streaming its own answer on its own connection.
Protocol: https://docs.aws.amazon.com/lambda/latest/dg/runtimes-custom.html (response streaming).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from handler.adapters.lambda_runtime import (
    RUNTIME_API_VERSION,
    ConcurrencyError,
    ResultKinds,
    RuntimeApiError,
    max_concurrency,
    refuse_start,
    run,
)
from handler.api.messages import HttpResponse

logger = logging.getLogger(__name__)

HTTP_INTEGRATION_RESPONSE = "application/vnd.awslambda.http-integration-response"
PRELUDE_SEPARATOR = b"\0" * 8
RESPONSE_MODE_HEADER = "Lambda-Runtime-Function-Response-Mode"
STREAMING_MODE = "streaming"
ERROR_TYPE_TRAILER = "Lambda-Runtime-Function-Error-Type"
ERROR_BODY_TRAILER = "Lambda-Runtime-Function-Error-Body"
ACCEPTED = 202  # the Runtime API's answer to a response it took


@dataclass(frozen=True)
class StreamedHttpResponse:
    """A Function URL answer sent with the HTTP integration prelude: the status and headers first, then the body as
    it comes. Only the entry point of this module can send it (``awslambdaric`` alone cannot marshal it)."""

    response: HttpResponse

    def prelude(self) -> bytes:
        """The JSON status, headers and cookies, then the eight NUL bytes that end them."""
        headers = {name: value for name, value in self.response.headers.items() if name.lower() != "set-cookie"}
        cookies = [value for name, value in self.response.headers.items() if name.lower() == "set-cookie"]
        prelude = {"statusCode": self.response.status, "headers": headers, "cookies": cookies}
        return json.dumps(prelude, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + PRELUDE_SEPARATOR

    def chunks(self) -> Iterator[bytes]:
        """The body: the stream's chunks as they come, or the whole body as one chunk."""
        if self.response.stream is not None:
            return self.response.stream
        return iter([self.response.body])

    def close(self) -> None:
        """Stop the work behind a stream (and let its access line be written)."""
        close = getattr(self.response.stream, "close", None)
        if close is not None:
            close()


class _ChunkedPost:
    """One ``POST`` to the Runtime API whose body is written chunk by chunk (chunked transfer encoding)."""

    def __init__(self, address: str, path: str, headers: dict[str, str]) -> None:
        import http.client  # on the first streamed answer, not at every cold start (it imports ssl)

        self.connection = http.client.HTTPConnection(address)
        self.connection.connect()
        if self.connection.sock is not None:  # each chunk leaves at once, not held back for the next (Nagle)
            self.connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connection.putrequest("POST", path, skip_accept_encoding=True)
        for name, value in headers.items():
            self.connection.putheader(name, value)
        self.connection.endheaders()

    def write(self, chunk: bytes) -> None:
        if chunk:  # an empty chunk would end the body
            self.connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))

    def finish(self, trailers: dict[str, str]) -> tuple[int, bytes]:
        """The last chunk and ``trailers``; the Runtime API's status and answer."""
        lines = "".join(f"{name}: {value}\r\n" for name, value in trailers.items())
        self.connection.send(b"0\r\n" + lines.encode("ascii") + b"\r\n")
        reply = self.connection.getresponse()
        return reply.status, reply.read()

    def close(self) -> None:
        self.connection.close()


def error_trailers(error: BaseException) -> dict[str, str]:
    """The protocol's trailers for an error after the body began, the body in awslambdaric's error shape."""
    body = {
        "errorMessage": str(error),
        "errorType": type(error).__name__,
        "stackTrace": traceback.format_exception(type(error), error, error.__traceback__)[1:],
    }
    return {
        ERROR_TYPE_TRAILER: f"Function.{type(error).__name__}",
        ERROR_BODY_TRAILER: base64.b64encode(json.dumps(body).encode("utf-8")).decode("ascii"),
    }


def post_streamed_response(address: str, request_id: str, result: StreamedHttpResponse) -> None:
    """Send ``result`` to the Runtime API at ``address`` as invocation ``request_id``'s streamed response."""
    headers = {
        RESPONSE_MODE_HEADER: STREAMING_MODE,
        "Transfer-Encoding": "chunked",
        "Content-Type": HTTP_INTEGRATION_RESPONSE,
        "Trailer": f"{ERROR_TYPE_TRAILER}, {ERROR_BODY_TRAILER}",
    }
    path = f"/{RUNTIME_API_VERSION}/runtime/invocation/{request_id}/response"
    try:
        post = _ChunkedPost(address, path, headers)
    except OSError:
        result.close()
        raise
    trailers: dict[str, str] = {}
    try:
        post.write(result.prelude())
        chunks = result.chunks()
        while True:
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            except Exception as error:  # the body failed after it began: the protocol's trailers say so
                logger.error("a streamed response failed after it began: %s: %s", type(error).__name__, error)
                trailers = error_trailers(error)
                break
            post.write(chunk)
        status, answer = post.finish(trailers)
    except OSError as error:  # the Runtime API's connection broke: nothing more can be sent for this invocation
        logger.error("the Runtime API connection broke while a response was streamed: %s", error)
        return
    finally:
        result.close()
        post.close()
    if status != ACCEPTED:
        raise RuntimeApiError(
            f"the Runtime API answered {status} to the streamed response of {request_id}: "
            f"{answer[:500].decode('utf-8', 'replace')}"
        )


def result_kinds() -> ResultKinds:
    """awslambdaric's marshaller, which passes a ``StreamedHttpResponse`` through unmarshalled, and
    ``post_streamed_response`` to send it: what the Runtime API loop needs to post every result."""
    from awslambdaric.lambda_runtime_marshaller import LambdaMarshaller

    class StreamingMarshaller(LambdaMarshaller):  # type: ignore[misc]
        def marshal_response(self, response: Any) -> tuple[Any, str]:
            if isinstance(response, StreamedHttpResponse):
                return response, HTTP_INTEGRATION_RESPONSE
            return super().marshal_response(response)  # type: ignore[no-any-return]

    return ResultKinds(StreamingMarshaller(), StreamedHttpResponse, post_streamed_response)


def main(args: list[str]) -> None:
    """``python -m handler.adapters.lambda_streaming <handler>``: the Runtime API loop (``handler.adapters.
    lambda_runtime``), ``AWS_LAMBDA_MAX_CONCURRENCY`` invocations at a time (unset: one), streamed answers included."""
    address = os.environ.get("AWS_LAMBDA_RUNTIME_API")
    try:
        workers = max_concurrency(os.environ)
    except ConcurrencyError as error:
        refuse_start(address, error)
        return
    handler_name = args[1] if len(args) > 1 else os.environ.get("_HANDLER", "")
    if not address or not handler_name:
        sys.exit("usage: AWS_LAMBDA_RUNTIME_API=host:port python -m handler.adapters.lambda_streaming <module.handler>")
    run(handler_name, address, workers, result_kinds())


if __name__ == "__main__":
    # run the module proper (handler.adapters.lambda_streaming), not this __main__ copy: the handler module imports
    # StreamedHttpResponse from it, and the client must recognise that very class
    from handler.adapters import lambda_streaming

    lambda_streaming.main(sys.argv)
