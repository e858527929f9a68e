"""Closed-loop clients for the load benchmarks (``bench.load.loadtest``, ``bench.load.serving``): locust's
``FastHttpUser``s with no wait time, each posting its next text to ``POST /translate`` when it has an answer.

``drive`` hands every request's end to the caller (``Reply``: status, body, ``Retry-After``, or the transport's
failure), which judges it; it returns the wall time from the first send to the last answer. ``STOP`` (set by the
benchmarks' SIGINT / SIGTERM handlers) ends a run after the requests on the wire.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import gevent
import gevent.event
import locust  # noqa: F401 - patches the standard library for gevent on import, before any socket or thread
from locust import FastHttpUser, constant, task
from locust.env import Environment
from locust.exception import StopUser

STOP = gevent.event.Event()  # set by SIGINT / SIGTERM: the current run ends after the requests in flight
REQUEST_TIMEOUT_S = 900.0  # a request at the limit may wait behind many others in the server's queue


@dataclass(frozen=True)
class Reply:
    """One request's end: its text's place in the run and size class, its seconds, and what came back."""

    index: int
    size_class: str
    characters: int
    seconds: float
    status: int  # 0: no HTTP answer
    retry_after: str | None
    content: bytes
    error: str | None  # the transport's failure (no HTTP answer, an exception), else None


def drive(base_url: str, texts: list[tuple[str, str]], clients: int, on_reply: Callable[[Reply], None]) -> float:
    """Post ``texts`` ((size class, text) pairs) by ``clients`` closed-loop clients, started at once; ``on_reply``
    hears each request's end (on locust's greenlet). The wall time from the first send to the last answer, or, once
    ``STOP`` is set, to the end of the requests on the wire."""
    pending = iter(enumerate(texts))
    finished = gevent.event.Event()
    counter = {"done": 0, "in_flight": 0}

    class Client(FastHttpUser):
        host = base_url
        wait_time = constant(0)
        network_timeout = REQUEST_TIMEOUT_S
        connection_timeout = 30.0

        @task
        def translate(self) -> None:
            try:
                if STOP.is_set():
                    raise StopIteration
                index, (size_class, text) = next(pending)
            except StopIteration:
                raise StopUser() from None
            counter["in_flight"] += 1
            began = time.perf_counter()
            status, retry_after, content, error = 0, None, b"", None
            try:
                with self.client.post("/translate", json={"text": text}, catch_response=True) as response:
                    status, content = response.status_code, response.content or b""
                    retry_after = response.headers.get("Retry-After") if response.headers else None
                    if status == 0:  # no HTTP answer: say what the connection did
                        error = f"no HTTP answer: {response.error!r}"
                    response.success()  # locust's own statistics are not used
            except Exception as exception:  # noqa: BLE001 - every failure is counted and shown, never lost
                status, error = 0, f"{type(exception).__name__}: {exception}"
            seconds = time.perf_counter() - began
            on_reply(Reply(index, size_class, len(text), seconds, status, retry_after, content, error))
            counter["done"] += 1
            counter["in_flight"] -= 1
            if counter["done"] == len(texts):
                finished.set()

    runner = Environment(user_classes=[Client]).create_local_runner()
    began = time.perf_counter()
    runner.start(clients, spawn_rate=clients)  # one dispatch: every client starts at once
    gevent.wait([finished, STOP], count=1)
    while STOP.is_set() and counter["in_flight"]:  # stopped early: let the requests on the wire finish
        time.sleep(0.1)
    wall_s = time.perf_counter() - began
    runner.quit()
    return wall_s
