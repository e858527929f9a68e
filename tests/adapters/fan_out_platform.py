"""The platform side of the fan-out path, on loopback: S3 (moto's server), function processes, event delivery.

AWS runs the fan-out with S3 event notifications (an ``ObjectCreated`` event for every part object written under
``TRANSLATE_WORK_PREFIX``) and asynchronous invocations that are retried when they fail. Here:

* ``Workers`` starts N real function processes
  (``python -m awslambdaric handler.adapters.aws_lambda.lambda_handler``, each behind its own local Lambda Runtime
  API), all pointed at the same S3-protocol server;
* ``Workers.deliver`` hands S3 events to whichever process is free, concurrently, like Lambda's event queue, and
  re-delivers an event whose invocation failed (``retries`` times at most), as asynchronous invocation does;
* ``s3_event`` builds the notification S3 sends for an object (key URL-encoded as S3 does).

``python -m tests.adapters.fan_out_platform`` measures the fan-out on loopback with 1, 2 and 4 worker processes on
the default model (the README's throughput figures).
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

from tests.adapters.conftest import (
    AWS_TEST_ENV,
    RicFunction,
    function_env,
    http_event,
    start_ric_function,
    stop_ric_function,
)
from tests.events import FUNCTION_URL, S3_OBJECT_CREATED, load_event

WORK_PREFIX = "_bulk/"


def s3_event(bucket: str, key: str) -> dict[str, Any]:
    event = load_event(S3_OBJECT_CREATED)
    record = event["Records"][0]
    record["s3"]["bucket"]["name"] = bucket
    record["s3"]["bucket"]["arn"] = f"arn:aws:s3:::{bucket}"
    record["s3"]["object"]["key"] = quote_plus(key, safe="/")
    return event


@dataclass
class Delivery:
    """One invocation's outcome, as the platform saw it."""

    key: str
    attempt: int
    worker: int
    outcome: str  # "response" or "error"
    payload: Any
    seconds: float


@dataclass
class Workers:
    """N function processes sharing one S3-protocol server; ``deliver`` is the platform's event queue."""

    functions: list[RicFunction]
    deliveries: list[Delivery] = field(default_factory=list)

    @classmethod
    def start(cls, count: int, env: dict[str, str], log_dir: Path) -> Workers:
        functions = [start_ric_function(env, log_dir) for _ in range(count)]
        return cls(functions)

    def stop(self) -> None:
        for function in self.functions:
            stop_ric_function(function)

    def warm(self) -> None:
        """Wait until every process has started and loaded the model (one GET /healthz each)."""
        for function in self.functions:
            outcome, payload = function.api.invoke(http_event(FUNCTION_URL, "GET", "/healthz", {}, b""), timeout_s=300)
            assert outcome == "response" and payload["statusCode"] == 200, payload

    def invoke(self, worker: int, event: dict[str, Any], time_limit_s: float = 900.0) -> tuple[str, Any]:
        return self.functions[worker].api.invoke(event, timeout_s=600.0, time_limit_s=time_limit_s)

    def deliver(
        self,
        events: Iterable[tuple[str, dict[str, Any]]],
        *,
        retries: int = 2,
        time_limit_s: Callable[[str, int], float] = lambda key, attempt: 900.0,
    ) -> list[Delivery]:
        """Deliver ``(key, event)`` pairs, each to a free worker, retrying failures; returns every invocation."""
        pending: queue.Queue[tuple[str, dict[str, Any], int] | None] = queue.Queue()
        outstanding = 0
        lock = threading.Lock()
        finished = threading.Event()
        delivered: list[Delivery] = []
        for key, event in events:
            pending.put((key, event, 1))
            outstanding += 1
        if not outstanding:
            return delivered

        def work(worker: int) -> None:
            nonlocal outstanding
            while True:
                item = pending.get()
                if item is None:
                    return
                key, event, attempt = item
                began = time.monotonic()
                outcome, payload = self.invoke(worker, event, time_limit_s(key, attempt))
                with lock:
                    delivered.append(Delivery(key, attempt, worker, outcome, payload, time.monotonic() - began))
                    if outcome == "error" and attempt <= retries:
                        pending.put((key, event, attempt + 1))
                    else:
                        outstanding -= 1
                        if outstanding == 0:
                            finished.set()

        threads = [threading.Thread(target=work, args=(n,), daemon=True) for n in range(len(self.functions))]
        for thread in threads:
            thread.start()
        finished.wait()
        for _ in threads:
            pending.put(None)
        for thread in threads:
            thread.join()
        self.deliveries.extend(delivered)
        return delivered


def part_events(s3: Any, bucket: str, prefix: str = WORK_PREFIX) -> list[tuple[str, dict[str, Any]]]:
    """The notifications S3 sends for the part objects under ``prefix`` (what the template's filter passes)."""
    keys = sorted(
        item["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for item in page.get("Contents", [])
        if "/parts/" in item["Key"] and item["Key"].endswith(".txt")
    )
    return [(key, s3_event(bucket, key)) for key in keys]


# --- the loopback benchmark ------------------------------------------------------------------------------------
def _benchmark(worker_counts: list[int], characters: int, part_chars: int, log_dir: Path) -> dict[str, Any]:
    import boto3
    from moto.server import ThreadedMotoServer

    from build import corpus
    from handler.config import DEFAULT_BUNDLE_DIR
    from tests.adapters.conftest import free_port

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{server.get_host_and_port()[1]}"
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **_credentials())
    sentences = [pair.zh for pair in corpus.dev_pairs()]
    paragraphs, size = [], 0
    while size < characters:
        paragraph = "".join(sentences[len(paragraphs) * 5 % len(sentences) :][:5])
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    text = "\n\n".join(paragraphs) + "\n"
    results: dict[str, Any] = {"characters": len(text), "part_chars": part_chars, "runs": {}}
    for count in worker_counts:
        bucket_in, bucket_out = f"in-{uuid.uuid4().hex[:8]}", f"out-{uuid.uuid4().hex[:8]}"
        s3.create_bucket(Bucket=bucket_in)
        s3.create_bucket(Bucket=bucket_out)
        env = {
            **function_env(
                DEFAULT_BUNDLE_DIR, TRANSLATE_PART_CHARS=str(part_chars), TRANSLATE_OUTPUT_BUCKET=bucket_out
            ),
            "TRANSLATE_MAX_FILE_BYTES": "2000000",
            **AWS_TEST_ENV,
            "AWS_ENDPOINT_URL_S3": endpoint,
        }
        workers = Workers.start(count, env, log_dir)
        try:
            s3.put_object(Bucket=bucket_in, Key="book.txt", Body=text.encode("utf-8"))
            workers.warm()  # every cold start done before the clock starts
            began = time.monotonic()
            plan = workers.deliver([("book.txt", s3_event(bucket_in, "book.txt"))])
            parts = part_events(s3, bucket_out)
            workers.deliver(parts)
            seconds = time.monotonic() - began
            output = s3.get_object(Bucket=bucket_out, Key="translated/book.txt")["Body"].read()
            results["runs"][str(count)] = {
                "workers": count,
                "parts": len(parts),
                "seconds": round(seconds, 1),
                "plan": plan[0].payload["results"][0]["status"],
                "output_bytes": len(output),
            }
            print(json.dumps(results["runs"][str(count)]), file=sys.stderr, flush=True)
        finally:
            workers.stop()
    server.stop()
    one = results["runs"][str(worker_counts[0])]["seconds"]
    for run in results["runs"].values():
        run["speed_up"] = round(one / run["seconds"], 2)
    return results


def _credentials() -> dict[str, str]:
    return {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fan-out speed-up on loopback (moto S3 + awslambdaric processes)")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--characters", type=int, default=24_000)
    parser.add_argument("--part-chars", type=int, default=2_000)
    parser.add_argument("--log-dir", type=Path, default=Path(".fan-out-bench"))
    args = parser.parse_args(argv)
    args.log_dir.mkdir(exist_ok=True)
    counts = [int(n) for n in args.workers.split(",")]
    print(json.dumps(_benchmark(counts, args.characters, args.part_chars, args.log_dir), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
