"""``POST /translate`` with ``"stream": true`` (``handler.api.streamed``) through the local server on loopback, read
by a real HTTP client line by line: NDJSON and server-sent events, the first segment before the decoding ended,
the last line equal to the answer without ``stream``, refusals before the answer begins, a client that hangs up
after one line, and deadlines (the adapter's time limit) for streamed and whole requests."""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from build import corpus
from handler.adapters.local_server import make_server
from handler.api.messages import HttpRequest
from handler.api.router import HttpApi
from handler.coldstart import Startup
from handler.service import TranslationService
from tests.fuzz.shipped import NEEDS_SHIPPED_BUNDLE, shipped_config, shipped_model
from tests.runtime_text.test_translation_memory import CountingDecoding

pytestmark = list(NEEDS_SHIPPED_BUNDLE)

JSON = {"Content-Type": "application/json"}


def article(sentences: int = 40) -> str:
    return "".join(pair.zh for pair in corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR)[:sentences])


class Served:
    """The local server on a free port, its service decoding through a counter, no translation memory."""

    def __init__(self, **overrides: Any) -> None:
        config = shipped_config(**{"memory_bytes": 0, "max_chars": 20_000, **overrides})
        self.service = TranslationService(shipped_model(), config)
        self.counting = CountingDecoding(self.service.model.decoding)
        self.service.model = type(self.service.model)(**{**vars(self.service.model), "decoding": self.counting})
        self.api = HttpApi(Startup(config, self.service, None, 0.0))
        self.server = make_server(self.api, "127.0.0.1", 0)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def post(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        connection.request("POST", "/translate", json.dumps(body).encode(), {**JSON, **(headers or {})})
        return connection.getresponse()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    server = Served()
    yield server
    server.close()


def lines_of(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    while line := response.readline():
        yield json.loads(line)


def check_described(api: HttpApi, events: list[dict[str, Any]]) -> None:
    """Each event is what the OpenAPI document says a TranslateStreamEvent is."""
    document = json.loads(api.handle(HttpRequest.create("GET", "/openapi.json")).body)
    schema = {"$ref": "#/components/schemas/TranslateStreamEvent", "components": document["components"]}
    validator = jsonschema.Draft202012Validator(schema)
    for event in events:
        validator.validate(event)


def test_segments_arrive_one_by_one_before_the_decoding_ends(served: Served) -> None:
    text = article()
    response = served.post({"text": text, "stream": True})
    assert response.status == 200 and response.getheader("Content-Type") == "application/x-ndjson; charset=utf-8"
    assert response.getheader("Transfer-Encoding") == "chunked" and response.getheader("Content-Length") is None
    events = []
    rows_at_first_segment = None
    for event in lines_of(response):
        if event["type"] == "segment" and rows_at_first_segment is None:
            rows_at_first_segment = served.counting.rows  # what the model had decoded when the client read it
        events.append(event)
    rows = served.counting.rows
    assert rows_at_first_segment is not None and rows_at_first_segment < rows / 2
    kinds = [event["type"] for event in events]
    assert kinds[-1] == "done" and kinds.count("done") == 1 and "error" not in kinds
    assert kinds.index("segment") < max(i for i, kind in enumerate(kinds) if kind == "progress")
    segments = [event for event in events if event["type"] == "segment"]
    assert [event["index"] for event in segments] == list(range(len(segments))) == list(range(events[-1]["segments"]))
    for event in segments:
        start, end = event["source_span"]
        assert text[start:end] == event["source"] and event["translation"]
    # the last line carries what the answer without stream carries, and the same translation
    whole = json.loads(served.post({"text": text}).read())
    done = events[-1]
    assert done["translation"] == whole["translation"]
    assert set(done) == set(whole) | {"type", "segments", "characters"}
    assert done["characters"] == len(text) and done["bundle_hash"] == whole["bundle_hash"]
    check_described(served.api, events)


def test_server_sent_events_carry_the_same_events(served: Served) -> None:
    body = {"texts": ["今天天气很好。我们去公园散步吧。", "谢谢。"], "stream": True, "scores": True, "spans": True}
    response = served.post(body, {"Accept": "text/event-stream"})
    assert response.getheader("Content-Type") == "text/event-stream; charset=utf-8"
    frames = response.read().decode().split("\n\n")
    assert frames[-1] == ""
    events = []
    for frame in frames[:-1]:
        kind, data = frame.split("\n")
        assert kind.startswith("event: ") and data.startswith("data: ")
        event = json.loads(data[len("data: ") :])
        assert event["type"] == kind[len("event: ") :]
        events.append(event)
    segments = [event for event in events if event["type"] == "segment"]
    assert [(event["text"], event["source"]) for event in segments] == [
        (0, "今天天气很好。"),
        (0, "我们去公园散步吧。"),
        (1, "谢谢。"),
    ]
    assert all(len(event["scores"]) == 1 and 0 <= event["scores"][0]["confidence"] <= 1 for event in segments)
    done = events[-1]
    whole = json.loads(served.post({k: v for k, v in body.items() if k != "stream"}).read())
    assert done["translations"] == whole["translations"] and done["spans"] == whole["spans"]
    assert done["scores"] == whole["scores"]
    check_described(served.api, events)


def test_every_format_streams_its_blocks_and_ends_with_the_whole_document(served: Served) -> None:
    for fmt, text in (
        ("html", "<h1>天气</h1><p>今天天气很好。我们去公园散步吧。</p><img alt='一只猫' src='c.png'>"),
        ("markdown", "# 天气\n\n今天天气很好。我们去公园散步吧。\n\n- 一只猫\n- 两只狗\n"),
    ):
        events = list(lines_of(served.post({"text": text, "format": fmt, "stream": True})))
        whole = json.loads(served.post({"text": text, "format": fmt}).read())
        assert events[-1]["translation"] == whole["translation"]
        blocks = [event for event in events if event["type"] == "segment"]
        assert len(blocks) == events[-1]["segments"] >= 3
        assert blocks[1]["source"] == "今天天气很好。我们去公园散步吧。"  # a block, both its sentences
        assert all(event["translation"] in whole["translation"] for event in blocks)


def test_what_is_refused_is_refused_before_the_answer_begins(served: Served) -> None:
    for body, status, code in (
        ({"text": "你好" * 10_001, "stream": True}, 413, "request_too_large"),
        ({"text": "你好", "stream": True, "beam_size": 99}, 400, "invalid_request"),
        ({"text": "你好", "stream": "yes"}, 400, "invalid_request"),
        ({"text": "你好", "stream": True, "format": "pdf"}, 400, "invalid_request"),
    ):
        response = served.post(body)
        assert response.status == status and response.getheader("Content-Type", "").startswith("application/json")
        assert json.loads(response.read())["error"]["code"] == code
    keyed = Served(api_keys=("secret-key-123456",))
    try:
        response = keyed.post({"text": "你好", "stream": True})
        assert response.status == 401 and json.loads(response.read())["error"]["code"] == "unauthorized"
        response = keyed.post({"text": "你好", "stream": True}, {"X-API-Key": "secret-key-123456"})
        assert response.status == 200 and list(lines_of(response))[-1]["type"] == "done"
    finally:
        keyed.close()


def test_a_client_that_hangs_up_after_one_line_leaves_nothing_running(caplog: pytest.LogCaptureFixture) -> None:
    server = Served(batch_tokens=64)  # many small batches: the hang-up is seen between two of them
    threads_before = _threads()
    try:
        with caplog.at_level(logging.INFO, logger="handler.access"):
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
            connection.request("POST", "/translate", json.dumps({"text": article(80), "stream": True}).encode(), JSON)
            response = connection.getresponse()
            assert json.loads(response.readline())["type"] in ("progress", "segment")
            rows_at_close = server.counting.rows
            connection.sock.close()  # type: ignore[union-attr]  # the client is gone
            connection.close()
            deadline = time.monotonic() + 60
            while not any(getattr(r, "streamed", None) for r in caplog.records) and time.monotonic() < deadline:
                time.sleep(0.05)
        logged = [vars(record) for record in caplog.records if record.name == "handler.access"]
        assert [line["streamed"] for line in logged] == ["closed by the client"]
        batch_rows = max(1, 64 // server.service.config.beam_size)  # the most sentences one batch holds
        assert server.counting.rows <= rows_at_close + batch_rows  # at most the batch under way when it hung up
        assert server.counting.rows < len(article(80)) // 20  # far from the whole text
        assert server.service.decoder.idle()  # nothing of the closed stream waits in the decoder
        deadline = time.monotonic() + 10
        while _threads() > threads_before + 1 and time.monotonic() < deadline:  # + the server's own
            time.sleep(0.05)
        assert _threads() <= threads_before + 1
    finally:
        server.close()


def test_the_adapters_time_limit_ends_a_stream_with_an_error_line_and_refuses_a_whole_request(served: Served) -> None:
    api = served.api
    body = json.dumps({"text": article(), "stream": True}).encode()
    remembering = Served(memory_bytes=16 * 1024 * 1024)
    try:
        remembering.service.translate(article())  # every sentence in the memory: a late stream is still not answered
        passed = time.monotonic() - 1  # a deadline already gone: the answer begins, and ends at once with the error
        late = remembering.api.handle(HttpRequest.create("POST", "/translate", JSON, body, deadline=passed))
        assert late.status == 200 and late.stream is not None
        events = [json.loads(line) for chunk in late.stream for line in chunk.splitlines()]
        assert [event["type"] for event in events] == ["error"]
        assert "nothing was translated" in events[0]["error"]["message"]
    finally:
        remembering.close()
    deadline = time.monotonic() + 5
    response = api.handle(HttpRequest.create("POST", "/translate", JSON, body, deadline=deadline))
    assert response.status == 200 and response.stream is not None
    events = []
    for chunk in response.stream:  # a slow client: the deadline passes after the first segment
        events.extend(json.loads(line) for line in chunk.splitlines())
        if events[-1]["type"] == "segment":
            time.sleep(max(0.0, deadline - time.monotonic()) + 0.01)
    kinds = [event["type"] for event in events]
    assert kinds.count("segment") == 1 and kinds[-1] == "error" and "done" not in kinds
    assert events[-1]["error"]["code"] == "deadline_exceeded"
    assert "characters were translated and sent" in events[-1]["error"]["message"]
    check_described(api, events)
    whole = json.dumps({"text": article()}).encode()
    served.service.translate(article(5))  # the measured speed, which the estimate needs
    soon = time.monotonic() + 0.001
    refused = api.handle(HttpRequest.create("POST", "/translate", JSON, whole, deadline=soon))
    assert refused.status == 503
    message = json.loads(refused.body)["error"]["message"]
    assert '"stream": true' in message and "/v2/document" in message and "timeout" in message


def test_a_stream_closed_before_its_first_chunk_still_writes_its_access_line(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    body = json.dumps({"text": article(), "stream": True}).encode()
    with caplog.at_level(logging.INFO, logger="handler.access"):
        response = served.api.handle(HttpRequest.create("POST", "/translate", JSON, body))
        assert response.stream is not None
        rows = served.counting.rows
        response.stream.close()  # type: ignore[attr-defined]  # a client gone before the first chunk was asked for
        response.stream.close()  # type: ignore[attr-defined]  # closing twice writes one line
    logged = [vars(record) for record in caplog.records if record.name == "handler.access"]
    assert [(line["streamed"], line["response_bytes"]) for line in logged] == [("closed by the client", 0)]
    assert served.counting.rows == rows  # nothing was decoded for it


def _threads() -> int:
    """The threads of this process but the decoder's (``handler.decoder``: it outlives a request by design, until
    it has been idle for a while)."""
    return sum(1 for thread in threading.enumerate() if thread.name != "decoder")
