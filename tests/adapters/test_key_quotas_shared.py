"""Key limits across instances: two server processes (functions-framework, as ``make run`` and Cloud Run start it)
share one usage store, and 200 requests sent at once, split between them, are counted without one lost or one too
many (``handler.api.quotas``, ``handler.storage.usage``), for each store the function uses:

* ``local``: the state folder's SQLite file (``TRANSLATE_STATE_DIR`` shared, the local server's);
* ``dynamodb``: a DynamoDB table on moto's server (``TRANSLATE_USAGE_STORE=dynamodb:TABLE``, AWS), answering one
  request at a time: DynamoDB applies each ``UpdateItem`` atomically, which moto's threaded server does not model
  (two of its threads both passed the condition at 990 of 1,000 and one addition was lost: 101 requests passed);
* ``redis``: Debian's real ``redis-server`` (``redis://HOST:PORT``, Memorystore on Google Cloud). ``make test``
  installs it where it may (the Makefile's ``redis`` target); where it is missing these tests fail, never skip.

Each burst: a key with ``chars=1000/month`` sends 200 texts of 10 characters (exactly 100 pass, DeepL's 456 for the
rest, and its usage is 1,000), a key with ``rate=150/month`` 200 requests (exactly 150 pass), and a key without
limits 200 texts of 7 characters, whose counts each process batches: 1,400 once both have written them.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from handler.storage.redis_client import RedisClient
from tests.adapters.conftest import (
    AWS_TEST_ENV,
    RealHttpClient,
    Reply,
    ServerProcess,
    free_port,
    function_env,
    start_functions_framework,
)

pytestmark = pytest.mark.slow

REQUESTS = 200
QUOTA = "k-quota-3b8e51"
RATE = "k-rate-d40f72"
FREE = "k-free-91c6a3"
KEYS = f"{QUOTA};name=quota;chars=1000/month,{RATE};name=rate;rate=150/month,{FREE};name=free"
REDIS_SERVER = "/usr/bin/redis-server"


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Debian's redis-server on a free loopback port, in memory (no snapshot, no append-only file)."""
    if shutil.which("redis-server") is None:
        pytest.fail("Debian's redis-server is not installed: `make test` installs it (apt-get install redis-server)")
    port = free_port()
    folder = tmp_path_factory.mktemp("redis")
    server = ServerProcess(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder)],
        {"PATH": "/usr/bin:/bin"},
        folder / "redis.log",
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
            probe.sendall(b"PING\r\n")
            if probe.recv(16).startswith(b"+PONG"):
                break
        assert time.monotonic() < deadline and server.process.poll() is None, server.log()
        time.sleep(0.1)
    yield f"redis://127.0.0.1:{port}/0"
    server.stop()


@pytest.fixture(scope="module")
def dynamodb_endpoint() -> Iterator[str]:
    """moto's server on loopback, one request at a time (each ``UpdateItem`` atomic, as DynamoDB applies it)."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    application = DomainDispatcherApplication(create_backend_app)
    one_at_a_time = threading.Lock()

    def serialized(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        with one_at_a_time:
            return list(application(environ, start_response))

    server = make_server("127.0.0.1", free_port(), serialized, threaded=True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


@pytest.fixture(scope="module")
def dynamodb_table(dynamodb_endpoint: str) -> str:
    """A usage table as infra/aws/template.yaml creates it (partition key ``counter``, TTL on ``expires_at``)."""
    import boto3

    client = boto3.client("dynamodb", endpoint_url=dynamodb_endpoint, **_credentials())
    name = f"usage-{uuid.uuid4().hex[:8]}"
    client.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "counter", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "counter", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"})
    return name


def _credentials() -> dict[str, str]:
    return {
        "region_name": AWS_TEST_ENV["AWS_REGION"],
        "aws_access_key_id": AWS_TEST_ENV["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": AWS_TEST_ENV["AWS_SECRET_ACCESS_KEY"],
    }


@pytest.fixture(params=["local", "dynamodb", "redis"])
def two_servers(
    request: pytest.FixtureRequest, tiny_bundle_dir: Path, tmp_path: Path
) -> Iterator[tuple[RealHttpClient, RealHttpClient]]:
    """Two server processes whose keys' usage is counted in one store."""
    extra: dict[str, str] = {"TRANSLATE_STATE_DIR": str(tmp_path / "state")}  # the local store: this folder's file
    if request.param == "dynamodb":
        table = request.getfixturevalue("dynamodb_table")
        endpoint = request.getfixturevalue("dynamodb_endpoint")
        extra |= {**AWS_TEST_ENV, "AWS_ENDPOINT_URL_DYNAMODB": endpoint, "TRANSLATE_USAGE_STORE": f"dynamodb:{table}"}
    elif request.param == "redis":
        extra["TRANSLATE_USAGE_STORE"] = request.getfixturevalue("redis_url")
        RedisClient(extra["TRANSLATE_USAGE_STORE"]).command("FLUSHDB")  # each run's counts from 0
    env = function_env(tiny_bundle_dir, TRANSLATE_API_KEYS=KEYS, **extra)
    servers = [start_functions_framework("translate_http", env, tmp_path) for _ in range(2)]
    yield RealHttpClient("first", servers[0][1]), RealHttpClient("second", servers[1][1])
    for server, _ in servers:
        server.stop()


def burst(calls: list[Callable[[], Reply]]) -> list[Reply]:
    """Every call at once: each on its own thread, released together."""
    start = threading.Barrier(len(calls))

    def run(call: Callable[[], Reply]) -> Reply:
        start.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def deepl_translate(server: RealHttpClient, key: str, text: str) -> Callable[[], Reply]:
    body = json.dumps({"text": [text], "target_lang": "EN-US"}).encode()  # English: passed through, billed
    headers = {"Content-Type": "application/json", "Authorization": f"DeepL-Auth-Key {key}"}
    return lambda: server.call("POST", "/v2/translate", headers, body)


def usage(server: RealHttpClient, key: str) -> Any:
    reply = server.call("GET", "/usage", {"X-API-Key": key})
    assert reply.status == 200, reply.text
    return reply.json()


def test_two_processes_share_each_keys_limits_without_losing_a_count(
    two_servers: tuple[RealHttpClient, RealHttpClient],
) -> None:
    first, second = two_servers
    servers = [first, second] * (REQUESTS // 2)

    replies = burst([deepl_translate(server, QUOTA, "abcdefghij") for server in servers])
    statuses = [reply.status for reply in replies]
    assert statuses.count(200) == 100 and statuses.count(456) == 100, sorted(set(statuses))
    assert all("Quota exceeded" in reply.json()["message"] for reply in replies if reply.status == 456)
    assert {int(reply.headers["retry-after"]) > 0 for reply in replies if reply.status == 456} == {True}
    assert usage(first, QUOTA)["characters"]["used"] == usage(second, QUOTA)["characters"]["used"] == 1000

    headers = {"Authorization": f"DeepL-Auth-Key {RATE}"}
    replies = burst([lambda server=server: server.call("GET", "/v2/languages", headers) for server in servers])
    statuses = [reply.status for reply in replies]
    assert statuses.count(200) == 150 and statuses.count(429) == 50, sorted(set(statuses))
    assert usage(second, RATE)["requests"] == {**usage(second, RATE)["requests"], "used": 150, "limit": 150}

    replies = burst([deepl_translate(server, FREE, "abcdefg") for server in servers])
    assert {reply.status for reply in replies} == {200}
    usage(first, FREE), usage(second, FREE)  # reading its usage writes each process's batched counts first
    assert usage(first, FREE)["characters"] == {**usage(first, FREE)["characters"], "used": 1400, "limit": None}
