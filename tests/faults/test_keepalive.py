"""`make run`'s server keeps an idle keep-alive connection open longer than gunicorn's default 2 s.

A server that closes an idle connection races with a client reusing it: the request arrives as the connection
is closed, the client gets no answer and may not retry a POST by itself (``handler/adapters/gunicorn_server.py``; the
race is what ``make loadtest``'s soak lost 2 requests of 20,000 to, and ``bench/load/keepalive_race.py`` reproduces
it). Here a client that pauses 3.5 s between two requests on one connection (past gunicorn's default keep-alive
plus its 1 s timer) must get both answers on that connection. Bound: ~10 s (tiny bundle start, the pause, stop).
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import time
from pathlib import Path

import pytest

from handler.adapters.gunicorn_server import KEEPALIVE_ENV, KEEPALIVE_S, server_options
from handler.errors import ConfigurationError
from tests.faults.run_script import READY, LocalRun

PAUSE_S = 3.5  # gunicorn's default keep-alive (2 s) + its 1 s poll loop + a margin


def _closed_by_server(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""


def test_an_idle_connection_is_kept_for_a_client_that_pauses(tiny_bundle_dir: Path) -> None:
    assert KEEPALIVE_S > 60 > PAUSE_S  # longer than the idle timeout of the proxies in front (ALB, nginx)
    run = LocalRun.start({"TRANSLATE_BUNDLE_DIR": str(tiny_bundle_dir)})
    try:
        assert READY.search(run.wait_for_verdict()), run.output
        connection = http.client.HTTPConnection("127.0.0.1", run.port, timeout=60)
        body = json.dumps({"text": "你好"}).encode()
        headers = {"Content-Type": "application/json"}
        try:
            connection.request("POST", "/translate", body=body, headers=headers)
            first = connection.getresponse()
            assert first.status == 200, first.read()
            assert first.getheader("Connection", "").lower() != "close"
            first.read()
            sock = connection.sock
            assert sock is not None
            time.sleep(PAUSE_S)
            assert not _closed_by_server(sock), "the server closed the idle keep-alive connection"
            connection.request("POST", "/translate", body=body, headers=headers)
            second = connection.getresponse()
            assert connection.sock is sock  # the same connection, not a new one
            assert second.status == 200 and isinstance(json.loads(second.read())["translation"], str)
        finally:
            connection.close()
    finally:
        run.stop()


def test_the_keepalive_setting_is_whole_seconds_or_refused_naming_the_variable() -> None:
    assert server_options({}) == {"keepalive": KEEPALIVE_S}
    assert server_options({KEEPALIVE_ENV: " 620 "}) == {"keepalive": 620}
    for bad in ("abc", "0", "-5", "2.5"):
        with pytest.raises(ConfigurationError, match=f"^{KEEPALIVE_ENV}="):
            server_options({KEEPALIVE_ENV: bad})
