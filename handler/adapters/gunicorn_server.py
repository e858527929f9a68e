"""functions-framework's own server (gunicorn) with the keep-alive this function needs (``make run``, Cloud Run).

    python -m handler.adapters.gunicorn_server [--target translate_http] [--source main.py] [--signature-type http]
                                      [--host 0.0.0.0] [--port 8080]

The same as the ``functions-framework`` command (its options but ``--debug`` and ``--asgi``, read from the same
environment variables:
``FUNCTION_TARGET``, ``FUNCTION_SOURCE``, ``FUNCTION_SIGNATURE_TYPE``, ``HOST``, ``PORT``; ``WORKERS``,
``THREADS`` and ``GUNICORN_LOG_LEVEL`` as functions-framework reads them), with two differences: gunicorn keeps an
idle keep-alive connection open for ``KEEPALIVE_S`` (75) seconds instead of its default 2 (``GUNICORN_KEEPALIVE``,
in seconds, sets another value, e.g. 620 behind a Google Cloud external load balancer, whose own idle timeout is
600 s); and ``/robots.txt`` and ``/favicon.ico`` reach the function like every other path (see
``route_every_path_to_the_function``).

Why: a server that closes an idle connection races with a client that reuses it. When gunicorn's keep-alive
timer fires at the moment a request arrives on that connection, the connection is closed with the request
unread and the client gets no answer at all (an empty reply; locust's status 0), and since the request is a
POST no well-behaved client may retry it by itself (RFC 9110 section 9.2.2). With a 2 s keep-alive that
happens to a client that pauses about 2 s between requests, and, on a starved machine (load average 10-17 on
2 cores), to one that does not pause at all: the soak of ``make loadtest`` lost 2 of 20,000 requests that way,
and ``tests/faults/test_keepalive.py`` reproduces it. With a keep-alive longer than the idle timeout of the
clients and proxies in front (AWS ALB and nginx: 60 s), the client side always closes an idle connection first,
which is race-free. An idle connection costs a socket, not a thread (gthread worker); gunicorn answers with
``Connection: close`` once ``worker_connections`` (1,000) minus the threads are kept alive.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any

from handler.errors import ConfigurationError

KEEPALIVE_S = 75  # longer than the 60 s idle timeout of AWS ALB and nginx's upstream keep-alive
KEEPALIVE_ENV = "GUNICORN_KEEPALIVE"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default=env.get("FUNCTION_TARGET"), help="the function (FUNCTION_TARGET)")
    parser.add_argument("--source", default=env.get("FUNCTION_SOURCE"), help="its source file (FUNCTION_SOURCE)")
    parser.add_argument(
        "--signature-type",
        default=env.get("FUNCTION_SIGNATURE_TYPE", "http"),
        choices=["http", "event", "cloudevent", "typed"],
    )
    parser.add_argument("--host", default=env.get("HOST", "0.0.0.0"))  # noqa: S104 - as functions-framework
    parser.add_argument("--port", type=int, default=int(env.get("PORT", "8080")))
    args = parser.parse_args(argv)
    if not args.target:
        parser.error("--target or FUNCTION_TARGET is required")
    return args


def server_options(environ: Mapping[str, str] = os.environ) -> dict[str, object]:
    """gunicorn settings on top of functions-framework's own (workers, threads, log level, timeout)."""
    raw = environ.get(KEEPALIVE_ENV, "").strip()
    if raw and not (raw.isdigit() and int(raw) > 0):
        raise ConfigurationError(
            f"{KEEPALIVE_ENV}={raw!r}: give the keep-alive in whole seconds, at least 1 (default {KEEPALIVE_S})"
        )
    return {"keepalive": int(raw) if raw else KEEPALIVE_S}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        options = server_options()
    except ConfigurationError as error:
        raise SystemExit(f"gunicorn_server: {error}") from None
    from functions_framework import create_app
    from functions_framework._http import create_server  # what the functions-framework command calls

    app = create_app(args.target, args.source, args.signature_type)  # type: ignore[no-untyped-call]
    route_every_path_to_the_function(app)
    create_server(app, False, **options).run(args.host, args.port)  # type: ignore[no-untyped-call]


def route_every_path_to_the_function(app: Any) -> None:
    """functions-framework answers ``/robots.txt`` and ``/favicon.ico`` itself (an HTML 404 the function never
    sees, so no access line); here they reach the function like every other path, which answers them (404 JSON,
    with its request id, headers and access line). An HTTP function's app only; a Cloud Functions source deploy
    runs functions-framework's own command and keeps its 404s."""
    run, own_404 = app.view_functions.get("run"), app.view_functions.get("error")
    if run is None or own_404 is None:  # not an HTTP function, or a functions-framework that routes otherwise
        return
    app.view_functions["error"] = lambda: run(path="")


if __name__ == "__main__":
    main()
