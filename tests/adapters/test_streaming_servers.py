"""Streamed ``POST /translate`` through the servers Google Cloud runs, as real processes on loopback.

* ``functions-framework --source main.py --target translate_http``: what Cloud Functions gen 2 runs for a source
  deploy (functions-framework's gunicorn, gthread worker);
* ``infra/local/run.sh`` (``make run``), which execs ``python -m handler.adapters.gunicorn_server``: the Cloud Run
  image's command.

Each reads the answer line by line as it arrives and shows that it streams: when the first segment line came, the
request was still being decoded (its access line, written when the stream ends, was not in the server's log yet,
and progress lines of later batches were still to come). A client that reads one line and hangs up leaves nothing
running: the access line says ``"streamed": "closed by the client"``, fewer segments than the text's were decoded,
and the translation memory (which holds every decoded segment) stops growing. With ``TRANSLATE_REQUEST_TIMEOUT_S``
(what ``infra/gcp/deploy.sh`` sets to the HTTP service's ``--timeout``) a request that cannot finish in time is
refused at once, or, streamed, ends with an error line.

The model is the suite's tiny random bundle, decoding in batches of ``TRANSLATE_BATCH_TOKENS=64`` so that a text of
40 sentences takes many batches (the first unit is decoded alone, then windows of batches: ``handler.streaming``).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from handler.api.access_log import access_logger
from handler.config import RuntimeConfig
from tests.adapters.conftest import BIN, ServerProcess, free_port, function_env, subprocess_env
from tests.fixture_corpus import fixture_pairs

pytestmark = pytest.mark.slow

SENTENCES = 40  # a text of this many of the suite's sentences
BATCH_TOKENS = "64"  # the smallest allowed: many batches, so the stream has far to go after its first segment
ACCESS_LOGGER = access_logger.name
WAIT_S = 60.0  # the most a test waits for a server to write a request's access line


def text_of(first: int, count: int = SENTENCES) -> str:
    """``count`` distinct sentences of the suite's corpus from ``first`` on, as one text (each test its own, so the
    translation memory answers none of them)."""
    sentences = list(dict.fromkeys(pair.zh for pair in fixture_pairs()))[first : first + count]
    assert len(sentences) == count
    return "".join(
        sentence if sentence.endswith(("。", "？", "！", "?", "!")) else sentence + "。" for sentence in sentences
    )


# --- the servers ----------------------------------------------------------------------------------------------------
@dataclass
class Server:
    name: str
    process: ServerProcess
    port: int

    def log_lines(self) -> list[dict[str, Any]]:
        lines = []
        for line in self.process.log().splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict):
                    lines.append(record)
        return lines

    def access_line(self, request_id: str) -> dict[str, Any] | None:
        return next(
            (
                line
                for line in self.log_lines()
                if line.get("logger") == ACCESS_LOGGER and line.get("request_id") == request_id
            ),
            None,
        )

    def wait_access_line(self, request_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            found = self.access_line(request_id)
            if found is not None:
                return found
            time.sleep(0.05)
        raise AssertionError(
            f"{self.name}: no access line for request {request_id} in {WAIT_S} s:\n{self.process.log()}"
        )

    def memory(self) -> dict[str, int]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request("GET", "/healthz")
            report = json.loads(connection.getresponse().read())
        finally:
            connection.close()
        return report["translation_memory"]  # type: ignore[no-any-return]


def start(name: str, command: list[str], env: dict[str, str], log_dir: Path, port: int) -> Server:
    process = ServerProcess(command, subprocess_env(env), log_dir / f"{name}-{port}.log")
    try:
        process.wait_http(f"http://127.0.0.1:{port}")
    except Exception:
        process.stop()
        raise
    return Server(name, process, port)


def streaming_env(tiny_bundle_dir: Path, state_dir: Path, **extra: str) -> dict[str, str]:
    return function_env(
        tiny_bundle_dir,
        TRANSLATE_MAX_CHARS="20000",
        TRANSLATE_BATCH_TOKENS=BATCH_TOKENS,
        TRANSLATE_STATE_DIR=str(state_dir),
        **extra,
    )


def functions_framework(env: dict[str, str], log_dir: Path) -> Server:
    """The ``functions-framework`` command, as Cloud Functions gen 2 runs a source deploy."""
    port = free_port()
    command = [str(BIN / "functions-framework"), "--source", "main.py", "--target", "translate_http"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    return start("functions-framework", command, env, log_dir, port)


def make_run(env: dict[str, str], log_dir: Path) -> Server:
    """``make run``'s script with this suite's virtual environment: it execs ``handler.adapters.gunicorn_server``,
    the Cloud Run image's command."""
    port = free_port()
    command = ["bash", "infra/local/run.sh", str(BIN.parent)]
    return start("make run", command, {**env, "HOST": "127.0.0.1", "PORT": str(port)}, log_dir, port)


SERVERS = ("functions-framework", "make run")


@pytest.fixture(scope="module", params=SERVERS)
def server(
    request: pytest.FixtureRequest, tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    log_dir = tmp_path_factory.mktemp("streaming-servers")
    env = streaming_env(tiny_bundle_dir, log_dir / "state")
    started = (functions_framework if request.param == "functions-framework" else make_run)(env, log_dir)
    yield started
    started.process.stop()


# --- a client that reads the answer as it comes ---------------------------------------------------------------------
@dataclass
class Arrival:
    event: dict[str, Any]
    access_line_written: bool  # whether the server had written the request's access line when this line came
    seconds: float  # when it came, from the request's start


@dataclass
class Streamed:
    status: int
    headers: dict[str, str]
    request_id: str
    arrivals: list[Arrival] = field(default_factory=list)

    def types(self) -> list[str]:
        return [arrival.event["type"] for arrival in self.arrivals]


def post_stream(server: Server, text: str, *, lines: int | None = None) -> Streamed:
    """``POST /translate`` with ``"stream": true``, read line by line as the lines arrive; after each line, whether
    the server had already written the request's access line (it does when the stream ends). With ``lines``, the
    client reads until that many segment lines came and then hangs up."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        body = json.dumps({"text": text, "stream": True}).encode("utf-8")
        began = time.monotonic()
        connection.request("POST", "/translate", body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        headers = {name.lower(): value for name, value in response.getheaders()}
        streamed = Streamed(response.status, headers, headers["x-request-id"])
        if response.status != 200:
            streamed.arrivals.append(Arrival(json.loads(response.read()), True, time.monotonic() - began))
            return streamed
        while True:
            line = response.readline()
            if not line:
                return streamed
            written = server.access_line(streamed.request_id) is not None
            streamed.arrivals.append(Arrival(json.loads(line), written, time.monotonic() - began))
            if lines is not None and streamed.types().count("segment") >= lines:
                return streamed  # hangs up: the connection is closed below, with the rest unread
    finally:
        connection.close()


# --- streaming ------------------------------------------------------------------------------------------------------
def test_the_first_segment_arrives_while_the_rest_is_still_being_decoded(server: Server) -> None:
    # GIVEN a text of 40 sentences, which the server decodes in many batches
    text = text_of(0)
    # WHEN a client posts it with "stream": true and reads the answer line by line as it arrives
    streamed = post_stream(server, text)
    # THEN the answer is NDJSON: progress and segment lines, the segments in order, and a done line last
    assert streamed.status == 200, streamed.arrivals
    assert streamed.headers["content-type"].startswith("application/x-ndjson")
    assert streamed.headers["transfer-encoding"] == "chunked" and "content-length" not in streamed.headers
    types = streamed.types()
    assert types[-1] == "done", types
    segments = [arrival.event for arrival in streamed.arrivals if arrival.event["type"] == "segment"]
    done = streamed.arrivals[-1].event
    assert [segment["index"] for segment in segments] == list(range(done["segments"]))
    assert len(segments) >= SENTENCES
    at = 0
    for segment in segments:  # the whole translation is the segments' English, in order
        at = done["translation"].index(segment["translation"].strip(), at)
    # AND it streamed: when the first segment line came, the request was still running (its access line, written
    # as the stream ends, was not in the log yet) and the progress lines of later batches were still to come
    first = types.index("segment")
    assert not streamed.arrivals[first].access_line_written, f"{server.name} sent the answer only once it was done"
    assert types[first + 1 :].count("progress") >= 2, types
    # AND the access line, once the stream ended, says it was sent whole
    access = server.wait_access_line(streamed.request_id)
    assert access["streamed"] == "complete" and access["status"] == 200
    assert access["segments_decoded"] >= SENTENCES


def test_a_client_that_hangs_up_leaves_nothing_running(server: Server) -> None:
    # GIVEN a text of 40 sentences the server has not translated before
    text = text_of(SENTENCES)
    before = server.memory()["entries"]
    # WHEN a client reads the first segment line of its stream and hangs up
    streamed = post_stream(server, text, lines=1)
    assert streamed.types().count("segment") == 1 and "done" not in streamed.types()
    # THEN the server closes the stream: its access line says the client closed it, and the decoding stopped short
    access = server.wait_access_line(streamed.request_id)
    assert access["streamed"] == "closed by the client", access
    assert access["status"] == 200 and "error_code" not in access
    # every decoded segment goes into the translation memory; the batches under way at the hang-up end (a batch is
    # never cut short, and two may run at once), then nothing more is decoded
    decoded = settled_entries(server) - before
    assert 1 <= decoded < SENTENCES, f"{decoded} of {SENTENCES} segments were decoded"
    # AND nothing decodes on: the memory holds no more segments a while later, and the server answers the next request
    time.sleep(1.0)
    assert server.memory()["entries"] - before == decoded
    follow_up = post_stream(server, text_of(2 * SENTENCES, 3))
    assert follow_up.types()[-1] == "done"


def settled_entries(server: Server, quiet_s: float = 0.5, within_s: float = 30.0) -> int:
    """The translation memory's entries once they stop growing for ``quiet_s`` (the batches under way have ended)."""
    entries = server.memory()["entries"]
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        now = server.memory()["entries"]
        if now == entries:
            return int(now)
        entries = now
    raise AssertionError(f"the server went on decoding for {within_s:g} s after the client hung up")


# --- the request timeout --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def timed_server(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``make run`` with a request timeout one millisecond longer than the margin: no request can finish in time."""
    log_dir = tmp_path_factory.mktemp("timed-server")
    env = streaming_env(
        tiny_bundle_dir, log_dir / "state", TRANSLATE_REQUEST_TIMEOUT_S="10.001", TRANSLATE_DEADLINE_MARGIN_S="10"
    )
    started = make_run(env, log_dir)
    yield started
    started.process.stop()


def test_a_request_that_cannot_finish_in_the_request_timeout_is_refused_at_once(timed_server: Server) -> None:
    # GIVEN a deployment whose request timeout leaves no time (TRANSLATE_REQUEST_TIMEOUT_S, as deploy.sh sets it)
    connection = http.client.HTTPConnection("127.0.0.1", timed_server.port, timeout=120)
    try:
        # WHEN a text of 40 sentences is posted without "stream"
        body = json.dumps({"text": text_of(0)}).encode("utf-8")
        connection.request("POST", "/translate", body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = json.loads(response.read())
    finally:
        connection.close()
    # THEN it is refused with 503 deadline_exceeded, and the message names the ways out
    assert response.status == 503, answer
    error = answer["error"]
    assert error["code"] == "deadline_exceeded"
    for way_out in ('"stream": true', "/v2/document", "timeout"):
        assert way_out in error["message"], error["message"]
    assert timed_server.memory()["entries"] == 0  # nothing was decoded for it


def test_a_streamed_request_past_the_request_timeout_ends_with_an_error_line(timed_server: Server) -> None:
    # GIVEN the same deployment; WHEN the text is posted with "stream": true
    streamed = post_stream(timed_server, text_of(0))
    # THEN the answer began (200, NDJSON) and its last line is the deadline's error, saying how far it got
    assert streamed.status == 200, streamed.arrivals
    last = streamed.arrivals[-1].event
    assert last["type"] == "error" and last["error"]["code"] == "deadline_exceeded", last
    assert f"of {len(text_of(0)):,} characters" in last["error"]["message"]
    access = timed_server.wait_access_line(streamed.request_id)
    assert access["error_code"] == "deadline_exceeded" and access["streamed"] == "complete"


def test_a_request_deadline_is_the_arrival_plus_the_request_timeout_less_the_margin() -> None:
    deployed = RuntimeConfig.from_env({"TRANSLATE_REQUEST_TIMEOUT_S": "300", "TRANSLATE_DEADLINE_MARGIN_S": "10"})
    assert deployed.request_deadline(1000.0) == 1290.0
    assert RuntimeConfig.from_env({}).request_deadline(1000.0) is None  # make run, locally: no time limit
