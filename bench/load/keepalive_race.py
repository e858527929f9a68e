"""The keep-alive race of a gunicorn server that closes idle connections, reproduced (a diagnosis script).

    python -m bench.load.keepalive_race [--seconds 180] [--probes 40] [--gap-min 1.0] [--gap-max 3.0] [--starve]
                                   [--keepalive S] [--server-venv .venv-run]

Starts `make run`'s server (infra/local/run.sh, the default bundle) and, from gevent greenlets in this process,
``--probes`` clients (geventhttpclient, locust's client: it checks that a pooled connection is still open before
reusing it and, as RFC 9110 asks, never retries a POST by itself) that each post one word, pause a random
``--gap-min``..``--gap-max`` seconds and post again on the same connection, while four more clients keep the
server busy. ``--starve`` stops and resumes the gunicorn worker (SIGSTOP / SIGCONT, 0.05-0.6 s stopped every
0.05-0.3 s), as a starved machine does to a process (the soak that lost 2 requests ran at load average 10-17 on
2 cores). ``--keepalive S`` serves with ``GUNICORN_KEEPALIVE=S`` (2: gunicorn's default). It prints the requests
answered and every request that got no HTTP answer, with the pause before it.

Measured on this 2-core machine, ``--seconds 150 --starve`` (40 probes, pauses 1-3 s, load average ~5): with
``--keepalive 2``, 27 of 938 probe requests got no answer (``HTTPConnectionClosed: connection closed.``, after
pauses of 1.6-2.4 s: the server closed the connection as the request arrived); with the default 75 s, 0 of 777.
"""

from __future__ import annotations

import gevent.monkey

gevent.monkey.patch_all()

import argparse  # noqa: E402 - after gevent's patching, as locust does
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gevent  # noqa: E402
from geventhttpclient import HTTPClient  # noqa: E402

from bench.load.served_function import REPO_ROOT, ServedFunction  # noqa: E402

HEADERS = {"Content-Type": "application/json"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--probes", type=int, default=40)
    parser.add_argument("--gap-min", type=float, default=1.0)
    parser.add_argument("--gap-max", type=float, default=3.0)
    parser.add_argument("--starve", action="store_true", help="SIGSTOP/SIGCONT the gunicorn worker at random")
    parser.add_argument("--keepalive", type=int, help="GUNICORN_KEEPALIVE for the server (default: its own, 75 s)")
    parser.add_argument("--server-venv", type=Path, default=REPO_ROOT / ".venv-run")
    args = parser.parse_args(argv)
    if args.keepalive is not None:
        os.environ["GUNICORN_KEEPALIVE"] = str(args.keepalive)  # the server inherits this environment
    with tempfile.TemporaryDirectory(prefix="keepalive-") as scratch:
        served = ServedFunction.start(
            args.server_venv, REPO_ROOT / "model_artifacts" / "default", {}, Path(scratch) / "server.log"
        )
        worker = served.worker_pid()
        host, port = "127.0.0.1", int(served.base_url.rsplit(":", 1)[1])
        answered, busy, stops = [0], [0], [0]
        failures: list[tuple[float, str]] = []
        end = time.monotonic() + args.seconds

        def probe(seed: int) -> None:
            pauses = random.Random(seed)
            client = HTTPClient(host, port, concurrency=1, network_timeout=120, connection_timeout=30)
            while time.monotonic() < end:
                pause = pauses.uniform(args.gap_min, args.gap_max)
                gevent.sleep(pause)
                try:
                    response = client.request("POST", "/translate", body=json.dumps({"text": "你好"}), headers=HEADERS)
                    response.read()
                    if response.status_code != 200:
                        failures.append((pause, f"HTTP {response.status_code}"))
                    else:
                        answered[0] += 1
                except Exception as error:  # noqa: BLE001 - a request with no HTTP answer is what we count
                    failures.append((pause, f"{type(error).__name__}: {error}"))

        def keep_busy() -> None:
            client = HTTPClient(host, port, concurrency=1, network_timeout=300)
            while time.monotonic() < end:
                sentence = json.dumps({"text": "今天的天气很好。"})
                client.request("POST", "/translate", body=sentence, headers=HEADERS).read()
                busy[0] += 1

        def starve() -> None:
            moments = random.Random(99)
            while time.monotonic() < end:
                gevent.sleep(moments.uniform(0.05, 0.3))
                os.kill(worker, signal.SIGSTOP)
                stops[0] += 1
                gevent.sleep(moments.uniform(0.05, 0.6))
                os.kill(worker, signal.SIGCONT)

        try:
            jobs = [gevent.spawn(probe, seed) for seed in range(args.probes)]
            jobs += [gevent.spawn(keep_busy) for _ in range(4)]
            if args.starve:
                jobs.append(gevent.spawn(starve))
            gevent.joinall(jobs)
        finally:
            os.kill(worker, signal.SIGCONT)
            served.stop()
    keepalive = args.keepalive if args.keepalive is not None else "default (75)"
    print(
        f"keep-alive {keepalive} s, starve {args.starve}: probe requests answered {answered[0]:,}, "
        f"without an answer {len(failures)}; busy requests {busy[0]:,}; worker stopped {stops[0]:,} times"
    )
    for pause, error in failures[:20]:
        print(f"  after a pause of {pause:.3f} s: {error}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
