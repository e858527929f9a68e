"""Which body a streamed ``POST /translate`` gets by its ``Accept`` header (``handler.api.accept``,
``handler.api.streamed.wants_event_stream``): NDJSON or server-sent events, by the weights (``q``) of the media
ranges that name them, over real HTTP (functions-framework and the local server on loopback, the suite's tiny
model); and the parser's reading of headers it cannot read whole."""

from __future__ import annotations

import json

import pytest

from handler.api.accept import parse_accept, preferred
from tests.adapters.conftest import HttpClient, build_client

NDJSON = "application/x-ndjson; charset=utf-8"
EVENTS = "text/event-stream; charset=utf-8"
SERVERS = ("functions_framework", "local_server")

ACCEPT_CASES = [  # (Accept, the body's type)
    (None, NDJSON),
    ("text/event-stream", EVENTS),
    ("text/event-stream, application/x-ndjson;q=0.5", EVENTS),  # issue 43: it got NDJSON
    ("application/x-ndjson;q=0.5, text/event-stream", EVENTS),
    ("text/event-stream;q=0.4, application/x-ndjson;q=0.9", NDJSON),
    ("text/event-stream, application/x-ndjson", NDJSON),  # equal weights: the default
    ("application/x-ndjson;q=0, */*", EVENTS),  # q=0: not acceptable
    ("text/event-stream;q=0, */*", NDJSON),
    ("text/*", EVENTS),
    ("*/*", NDJSON),
    ("text/event-stream, */*", EVENTS),  # equal weights: the one named more specifically
    ("*/*;q=0.5, text/event-stream;q=0.2", NDJSON),  # the most specific range gives a type its weight
    ("text/*;q=0.9, text/event-stream;q=0.1, application/*;q=0.5", NDJSON),
    ("TEXT/Event-Stream ; Q=1, application/x-ndjson ;q=0.3", EVENTS),  # names and q without case
    ("text/event-stream;charset=utf-8, application/x-ndjson;q=0.5", EVENTS),  # a parameter the answer has
    ("text/event-stream;charset=latin1, application/x-ndjson;q=0.5", NDJSON),  # one it has not
    ("text/html", NDJSON),  # neither acceptable: the header is disregarded, as before (no 406)
    ("application/x-ndjson;q=0, text/event-stream;q=0", NDJSON),
    ("text/event-stream;q=0", NDJSON),
]


@pytest.fixture(params=SERVERS)
def server(request: pytest.FixtureRequest, http_clients: dict[str, HttpClient]) -> HttpClient:
    if request.param not in http_clients:
        http_clients[request.param] = build_client(request.param, request)
    return http_clients[request.param]


@pytest.mark.parametrize(("accept", "expected"), ACCEPT_CASES, ids=[str(case[0]) for case in ACCEPT_CASES])
def test_a_streamed_answer_takes_the_type_the_accept_header_weighs_highest(
    server: HttpClient, accept: str | None, expected: str
) -> None:
    # GIVEN a streamed request with this Accept header
    headers = {"Content-Type": "application/json", **({"Accept": accept} if accept is not None else {})}
    reply = server.call("POST", "/translate", headers, json.dumps({"text": "你好。", "stream": True}).encode())
    # THEN the answer is that type, and its body is framed as the type says
    assert reply.status == 200 and reply.headers["content-type"] == expected, (reply.status, reply.headers)
    if expected == EVENTS:
        frames = reply.text.split("\n\n")
        assert frames[-1] == "" and all(frame.startswith("event: ") for frame in frames[:-1]), reply.text
        assert frames[-2].startswith("event: done\ndata: {")
    else:
        events = [json.loads(line) for line in reply.text.splitlines()]
        assert events[-1]["type"] == "done", events


# --- the parser --------------------------------------------------------------------------------------------------
OFFERED = ("application/x-ndjson", "text/event-stream")


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        ("text/event-stream;q=2, application/x-ndjson;q=0.5", "application/x-ndjson"),  # q over 1: left out
        ("text/event-stream;q=abc, application/x-ndjson;q=0.5", "application/x-ndjson"),
        ("text/event-stream;q=.9, application/x-ndjson;q=0.5", "text/event-stream"),  # ".9", as Java sends
        ("*/event-stream", "application/x-ndjson"),  # no media range: left out, nothing readable, the default
        (";;, ,", "application/x-ndjson"),
        ('text/event-stream;x="a,b";q=0.9, application/x-ndjson;q=0.5', "application/x-ndjson"),  # x: not ours
        ('text/*;x="a,b";q=0.9, text/event-stream;q=0.8, application/x-ndjson;q=0.5', "text/event-stream"),
        ("text/event-stream;q=0.5;ext=1, application/x-ndjson;q=0.4", "text/event-stream"),  # after q: ignored
        ("text/event-stream;q=0.3, text/event-stream;q=0.9, application/x-ndjson;q=0.5", "application/x-ndjson"),
        ("application/json", None),
    ],
)
def test_the_parser_weighs_what_it_can_read(accept: str, expected: str | None) -> None:
    assert preferred(accept, OFFERED) == expected


def test_a_quoted_comma_stays_in_its_parameter() -> None:
    ranges = parse_accept('text/plain;format="a,b";q=0.5, text/html')
    assert [(r.type, r.subtype, sorted(r.parameters), r.quality) for r in ranges] == [
        ("text", "plain", [("format", "a,b")], 0.5),
        ("text", "html", [], 1.0),
    ]
