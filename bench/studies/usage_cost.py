"""What counting a key's usage costs a request (``handler.api.quotas`` over each store of ``handler.storage.usage``).

    python -m bench.studies.usage_cost [--requests 2000] [--stores local redis dynamodb-moto process]

Each request of a key does what a translating request does: ``count_request`` (the key's ``rate``) and ``charge``
(its characters), one thread, one after another; the figure is the time these calls add to a request (median and
95th percentile over ``--requests``), for a key with both limits (two atomic conditional writes) and a key without
limits (its characters batched: ``FLUSH_S``). The stores: ``local`` (the SQLite file in a temporary state folder),
``redis`` (Debian's redis-server started here on loopback), ``dynamodb-moto`` (moto's server in this process: its
Python, not DynamoDB's latency, which only a deployment measures), ``process`` (memory: the bookkeeping alone).
A script, not a test: its figures mean something on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from handler.api.quotas import Quotas
from handler.config import RuntimeConfig
from handler.storage.redis_client import RedisClient
from handler.storage.usage import Counters, DynamoCounters, ProcessCounters, RedisCounters, SqliteCounters

LIMITED = "limited-key;chars=1000000000/month;rate=1000000000/minute"
FREE = "free-key"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def redis_store() -> Iterator[Counters]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    port = _free_port()
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        client = RedisClient(f"redis://127.0.0.1:{port}")
        for _ in range(100):
            try:
                client.command("PING")
                break
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.05)
        yield RedisCounters(client)
    finally:
        server.terminate()
        server.wait()


@contextmanager
def moto_store() -> Iterator[Counters]:
    import boto3
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    credentials = {"region_name": "us-east-1", "aws_access_key_id": "x", "aws_secret_access_key": "x"}
    client = boto3.client("dynamodb", endpoint_url=f"http://127.0.0.1:{port}", **credentials)
    table = f"usage-{uuid.uuid4().hex[:6]}"
    client.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "counter", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "counter", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        yield DynamoCounters(table, client)
    finally:
        server.stop()


@contextmanager
def local_store() -> Iterator[Counters]:
    with tempfile.TemporaryDirectory() as folder:
        yield SqliteCounters(Path(folder) / "usage.sqlite3")


@contextmanager
def process_store() -> Iterator[Counters]:
    yield ProcessCounters()


STORES: dict[str, Callable[[], object]] = {
    "process": process_store,
    "local": local_store,
    "redis": redis_store,
    "dynamodb-moto": moto_store,
}


def measure(counters: Counters, key: str, requests: int) -> list[float]:
    """Microseconds each request's counting took."""
    quotas = Quotas(RuntimeConfig(api_keys=(LIMITED, FREE)), lambda: counters)
    took = []
    for _ in range(requests):
        began = time.perf_counter()
        quotas.count_request(key)
        quotas.charge(key, 40)
        took.append((time.perf_counter() - began) * 1e6)
    quotas.flush()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--stores", nargs="+", default=list(STORES), choices=list(STORES))
    arguments = parser.parse_args()
    print("| store | key | median per request | 95th percentile | writes per request |")
    print("|---|---|---:|---:|---|")
    for name in arguments.stores:
        with STORES[name]() as counters:  # type: ignore[attr-defined]
            for key, label, writes in ((LIMITED, "chars= and rate=", "2 (conditional)"),
                                       (FREE, "no limits", "1 per 5 s, batched")):  # fmt: skip
                secret = key.split(";")[0]  # what a client presents
                measure(counters, secret, 50)  # connections, statements prepared, scripts loaded
                took = sorted(measure(counters, secret, arguments.requests))
                median, p95 = statistics.median(took), took[int(0.95 * len(took))]
                print(f"| {name} | {label} | {median:,.0f} µs | {p95:,.0f} µs | {writes} |")


if __name__ == "__main__":
    main()
