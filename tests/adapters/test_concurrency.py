"""Concurrent requests share one model safely: through the real server's threads, and at the process's decoder.

``make run`` and the Cloud Run image serve with functions-framework, whose gunicorn runs one worker process with
``THREADS`` threads (default: 4 per CPU; neither infra/local/run.sh nor the Dockerfile changes it), so requests
do arrive at the one ``TranslationService`` at the same time. Two behaviours are tested:

* every answer to requests sent at once (distinct texts, single and list requests, in shuffled order) equals
  that text's translation when it was sent alone: no request gets another's batch, rows or partial result;
* the process's one decoder (``handler.decoder``) runs at most ``workers`` batches at once (one per part the
  search may use: the cores): with one, many threads translating at once never have two decoding searches in
  flight, share batches (fewer searches than calls), and each still gets its own translation (two batches side
  by side: tests/runtime/test_decoder_rows.py).
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import random
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import pytest

from handler.coldstart import Startup
from handler.service import TranslationService
from tests.adapters.conftest import MAX_CHARS, MAX_TEXTS
from tests.fixture_corpus import fixture_pairs

pytestmark = pytest.mark.slow

CLIENTS = 16  # more than the server's threads on a 2-core machine (8), so its queue is full too
ROUNDS = 2


def distinct_texts(count: int) -> list[str]:
    """``count`` different fixture sentences of varied length, each within the adapters' character limit."""
    chosen = sorted({pair.zh for pair in fixture_pairs() if len(pair.zh) <= MAX_CHARS // MAX_TEXTS}, key=len)
    step = max(1, len(chosen) // count)
    return chosen[::step][:count]


def post(base_url: str, payload: dict[str, Any]) -> dict[str, Any]:
    address = urlsplit(base_url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=120)
    try:
        connection.request("POST", "/translate", json.dumps(payload), {"Content-Type": "application/json"})
        response = connection.getresponse()
        body = response.read()
        assert response.status == 200, body
        answer: dict[str, Any] = json.loads(body)
        return answer
    finally:
        connection.close()


@contextmanager
def stalled_request(base_url: str) -> Iterator[None]:
    """A request whose body never finishes arriving holds one server thread while the block runs."""
    address = urlsplit(base_url)
    with socket.create_connection((address.hostname, address.port), timeout=30) as stalled:
        stalled.sendall(
            b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
            b'{"text": "'
        )
        time.sleep(0.3)  # the server has read the headers and waits for the rest
        yield


def test_concurrent_requests_through_the_server_threads_get_their_own_translations(
    functions_framework_url: str,
) -> None:
    texts = distinct_texts(16)
    assert len(set(texts)) == 16
    groups = [texts[i : i + MAX_TEXTS] for i in range(0, len(texts), MAX_TEXTS)]
    requests: list[dict[str, Any]] = [{"text": text} for text in texts] + [{"texts": group} for group in groups]
    # a list is translated in batches of its own texts, and an INT8 model's activations are quantized per batch, so
    # a text in a list may come out unlike the text alone: each request is compared with itself sent alone
    alone = {json.dumps(payload): post(functions_framework_url, payload) for payload in requests}
    assert len({answer.get("translation") for answer in alone.values()}) > 1, "a mix-up would go unseen"

    def send(payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        return payload, post(functions_framework_url, payload)

    rng = random.Random(7)
    with stalled_request(functions_framework_url):  # one thread held: answers need the server's other threads
        for _ in range(ROUNDS):
            order = rng.sample(requests, len(requests))
            with ThreadPoolExecutor(CLIENTS) as pool:
                answers = list(pool.map(send, order, timeout=300))
            for payload, answer in answers:
                expected = alone[json.dumps(payload)]
                key = "translation" if "text" in payload else "translations"
                assert answer[key] == expected[key], payload


class InFlightRecorder:
    """A decoding protocol that counts its searches in flight, each held a while so that overlaps show."""

    def __init__(self, decoding: Any, hold_s: float = 0.02) -> None:
        self._decoding = decoding
        self._hold_s = hold_s
        self._guard = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.searches = 0

    def search(self, *args: Any, **kwargs: Any) -> Any:
        with self._guard:
            self.in_flight += 1
            self.searches += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self._hold_s)
            return self._decoding.search(*args, **kwargs)
        finally:
            with self._guard:
                self.in_flight -= 1


def test_concurrent_calls_share_batches_decoded_one_at_a_time(startup: Startup) -> None:
    service = startup.require_service()
    recorder = InFlightRecorder(service.model.decoding)
    # one part at a time: a batch's beam search may run as parts side by side (handler.model.parallel_search, tested
    # there), and each part is a search of its own; this test is about the batches of concurrent calls
    model = dataclasses.replace(service.model, decoding=recorder, streams=1)
    shared = TranslationService(model, service.config, service.glossary)
    chosen = distinct_texts(20)
    texts = [*chosen[4:], "".join(chosen[:4])]  # and a text of several sentences: a batch of several rows
    alone = {text: service.translate(text) for text in texts}
    barrier = threading.Barrier(len(texts))

    def translate(text: str) -> str:
        barrier.wait()
        return shared.translate(text)

    with ThreadPoolExecutor(len(texts)) as pool:
        results = list(pool.map(translate, texts, timeout=300))
    assert results == [alone[text] for text in texts]
    # the process's one decoder (handler.decoder) puts concurrent calls' sentences in the same batches: fewer
    # searches than calls (each call alone would take one at least), never two at once
    assert 1 <= recorder.searches < len(texts), recorder.searches
    assert recorder.most_in_flight == 1, f"{recorder.most_in_flight} decoding searches ran at once"
