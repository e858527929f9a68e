"""Lambda Managed Instances: several invocations at once in one process, one model, through the Runtime API.

The function process is the image's entry point (``python -m handler.adapters.lambda_streaming``, the streaming
handler, which answers API Gateway events buffered and Function URL events streamed) with
``AWS_LAMBDA_MAX_CONCURRENCY`` set as Lambda Managed Instances set it, and JSON logs (the only log format Managed
Instances take). The Runtime API on loopback (``tests/adapters/lambda_runtime_api.py``) counts the ``/next`` polls
parked at once and the invocations delivered and not yet answered, and can hold every answer until N invocations
were delivered: a runtime that handles one invocation at a time then sits in its first answer, and the count of
invocations in flight at once stays 1. Every ``onnxruntime.InferenceSession`` the process (and any process it forks)
opens is written to a file by a ``sitecustomize`` module put first on the function's ``PYTHONPATH``: that counts the
model's loads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from handler.adapters.lambda_runtime import MAX_CONCURRENCY_ENV, ConcurrencyError, max_concurrency
from handler.model.bundle import ENCODER_ONNX
from tests.adapters.conftest import AWS_TEST_ENV, REPO_ROOT, ServerProcess, function_env, http_event, subprocess_env
from tests.adapters.lambda_runtime_api import Invocation, LambdaRuntimeApi, read_function_url_stream
from tests.adapters.test_lambda_streaming import JSON_HEADERS, dev_sentences, function_url_post
from tests.events import API_GATEWAY_V2, S3_OBJECT_CREATED, load_event

WORKERS = 4
STREAMING_HANDLER = "handler.adapters.aws_lambda.streaming_handler"
DEADLINE_MARGIN_S = 2.0
OUTPUT_BUCKET = "zh-en-out"

LOAD_COUNTER = '''\
"""Test hook (tests/adapters/test_lambda_concurrency.py): every onnxruntime session opened from a file, logged."""
import os

_LOG = os.environ.get("MODEL_LOAD_LOG")
if _LOG:
    import onnxruntime as _ort

    class _CountedSession(_ort.InferenceSession):
        def __init__(self, path_or_bytes, *args, **kwargs):
            if isinstance(path_or_bytes, (str, os.PathLike)):
                with open(_LOG, "a", encoding="utf-8") as log:
                    log.write(f"{os.getpid()} {os.fspath(path_or_bytes)}\\n")
            super().__init__(path_or_bytes, *args, **kwargs)

    _ort.InferenceSession = _CountedSession
'''


@dataclass
class Function:
    api: LambdaRuntimeApi
    server: ServerProcess
    load_log: Path
    s3: S3Recorder

    def loads(self) -> list[tuple[int, str]]:
        """(pid, file) of every model session opened so far."""
        if not self.load_log.exists():
            return []
        lines = self.load_log.read_text(encoding="utf-8").splitlines()
        return [(int(pid), path) for pid, path in (line.split(" ", 1) for line in lines)]

    def access_lines(self) -> list[dict[str, Any]]:
        """The access log's records, as the Lambda runtime wrote them (JSON lines on standard output)."""
        records = []
        for line in self.server.log().splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("logger") == "handler.access":
                    records.append(record)
        return records


class S3Recorder:
    """A stand-in S3 endpoint: records each call's path and X-Amzn-Trace-Id header, answers 404 NoSuchKey."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str | None]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def _missing(self) -> None:
                recorder.calls.append((self.command, self.path, self.headers.get("X-Amzn-Trace-Id")))
                body = b"<Error><Code>NoSuchKey</Code><Message>gone</Message></Error>"
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                self.send_response(404)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(0 if self.command == "HEAD" else len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_HEAD = do_PUT = do_POST = _missing  # noqa: N815

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def start_function(bundle: Path, folder: Path, **extra: str) -> Function:
    """The image's entry point with the streaming handler; ``extra``: more environment (the concurrency)."""
    api = LambdaRuntimeApi().start()
    s3 = S3Recorder()
    (folder / "hook").mkdir(parents=True, exist_ok=True)
    (folder / "hook" / "sitecustomize.py").write_text(LOAD_COUNTER, encoding="utf-8")
    load_log = folder / f"loads-{uuid.uuid4().hex[:6]}.txt"
    env = function_env(
        bundle,
        TRANSLATE_MAX_CHARS="20000",
        TRANSLATE_MAX_TEXTS="64",
        TRANSLATE_MEMORY_BYTES="0",  # every request decoded, none answered from a translation memory
        TRANSLATE_DEADLINE_MARGIN_S=str(DEADLINE_MARGIN_S),
        TRANSLATE_OUTPUT_BUCKET=OUTPUT_BUCKET,
    )
    variables = {
        **env,
        **AWS_TEST_ENV,
        "AWS_LAMBDA_RUNTIME_API": api.address,
        "AWS_LAMBDA_FUNCTION_NAME": "zh-en-translate",
        "AWS_LAMBDA_LOG_FORMAT": "JSON",
        "AWS_ENDPOINT_URL_S3": s3.url,
        "MODEL_LOAD_LOG": str(load_log),
        "PYTHONPATH": f"{folder / 'hook'}{os.pathsep}{REPO_ROOT}",
        **extra,
    }
    command = [sys.executable, "-m", "handler.adapters.lambda_streaming", STREAMING_HANDLER]
    server = ServerProcess(command, subprocess_env(variables), folder / f"function-{uuid.uuid4().hex[:6]}.log")
    return Function(api, server, load_log, s3)


def stop_function(function: Function) -> None:
    function.server.stop()
    function.api.stop()
    function.s3.stop()


@pytest.fixture(scope="module")
def concurrent(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Function]:
    """The function as Lambda Managed Instances run it: ``AWS_LAMBDA_MAX_CONCURRENCY=4``."""
    function = start_function(
        tiny_bundle_dir, tmp_path_factory.mktemp("lambda-concurrent"), **{MAX_CONCURRENCY_ENV: str(WORKERS)}
    )
    assert function.api.wait_for_waiting(WORKERS, timeout_s=120), function.server.log()
    yield function
    stop_function(function)


@pytest.fixture
def held(concurrent: Function) -> Iterator[LambdaRuntimeApi]:
    """The Runtime API holding every answer until WORKERS invocations were delivered; counts from now on."""
    api = concurrent.api
    api.start_counting()
    api.hold_answers(WORKERS, timeout_s=10)
    yield api
    api.hold_answers(0)


def api_gateway_post(text: str, request_id: str | None = None) -> dict[str, Any]:
    headers = {**JSON_HEADERS, **({"x-request-id": request_id} if request_id else {})}
    return http_event(API_GATEWAY_V2, "POST", "/translate", headers, json.dumps({"text": text}).encode("utf-8"))


def buffered_translation(invocation: Invocation) -> str:
    outcome, payload = invocation.wait(120)
    assert outcome == "response" and payload["statusCode"] == 200, payload
    return str(json.loads(payload["body"])["translation"])


def streamed_translation(invocation: Invocation) -> str:
    done = read_function_url_stream(invocation).of_type("done")
    assert len(done) == 1 and invocation.wait(30)[0] == "response"
    return str(done[0][1]["translation"])


def texts(count: int) -> list[str]:
    return ["".join(dev_sentences(3, start=200 + 3 * index)) for index in range(count)]


# --- several invocations at once, in one process --------------------------------------------------------------
def test_every_worker_polls_the_runtime_api_at_once(concurrent: Function) -> None:
    assert concurrent.api.most_waiting == WORKERS  # AWS_LAMBDA_MAX_CONCURRENCY polls, no more


def test_buffered_invocations_are_held_at_once_and_each_answers_as_it_would_alone(concurrent: Function) -> None:
    api, sources = concurrent.api, texts(WORKERS)
    alone = [buffered_translation(api.start_invocation(api_gateway_post(text))) for text in sources]
    api.start_counting()
    api.hold_answers(WORKERS, timeout_s=10)
    try:
        together = [api.start_invocation(api_gateway_post(text)) for text in sources]
        answers = [buffered_translation(invocation) for invocation in together]
    finally:
        api.hold_answers(0)
    assert api.most_in_flight == WORKERS, f"{api.most_in_flight} invocation(s) in flight at once, not {WORKERS}"
    assert answers == alone


def test_streamed_invocations_are_held_at_once_and_each_answers_as_it_would_alone(concurrent: Function) -> None:
    api, sources = concurrent.api, texts(WORKERS)
    events = [function_url_post({"text": text, "stream": True}) for text in sources]
    alone = [streamed_translation(api.start_invocation(event)) for event in events]
    api.start_counting()
    api.hold_answers(WORKERS, timeout_s=10)
    try:
        together = [api.start_invocation(event) for event in events]
        answers = [streamed_translation(invocation) for invocation in together]
    finally:
        api.hold_answers(0)
    assert api.most_in_flight == WORKERS, f"{api.most_in_flight} invocation(s) in flight at once, not {WORKERS}"
    assert answers == alone
    assert all(invocation.streamed for invocation in together)


def test_streamed_and_buffered_invocations_share_the_process(held: LambdaRuntimeApi) -> None:
    sources = texts(2)
    streamed = [held.start_invocation(function_url_post({"text": text, "stream": True})) for text in sources]
    buffered = [held.start_invocation(api_gateway_post(text)) for text in sources]
    streamed_answers = [streamed_translation(invocation) for invocation in streamed]
    buffered_answers = [buffered_translation(invocation) for invocation in buffered]
    assert held.most_in_flight == WORKERS
    assert streamed_answers == buffered_answers


def test_one_process_loads_one_model(concurrent: Function) -> None:
    """Checked after the invocations above: AWS's own runtime would have forked a process per worker, each
    loading its copy."""
    assert concurrent.api.answered >= 3 * WORKERS, "the invocations above ran first"
    encoders = [(pid, path) for pid, path in concurrent.loads() if Path(path).name == ENCODER_ONNX]
    assert len(encoders) == 1, f"the model was loaded {len(encoders)} times: {encoders}"
    assert encoders[0][0] == concurrent.server.process.pid
    children = Path(f"/proc/{concurrent.server.process.pid}/task/{concurrent.server.process.pid}/children")
    if children.exists():
        assert children.read_text().split() == [], "the function process forked"


# --- per-invocation state stays with its invocation ---------------------------------------------------------------
def test_each_invocation_keeps_its_own_deadline_and_request_id(concurrent: Function, held: LambdaRuntimeApi) -> None:
    text = texts(1)[0]
    limits = [900.0, DEADLINE_MARGIN_S / 2, 900.0, DEADLINE_MARGIN_S / 2]
    names = [f"inv-{uuid.uuid4().hex[:10]}" for _ in limits]
    invocations = [
        held.start_invocation(api_gateway_post(text, name), time_limit_s=limit)
        for name, limit in zip(names, limits, strict=True)
    ]
    statuses = [invocation.wait(120)[1]["statusCode"] for invocation in invocations]
    assert held.most_in_flight == WORKERS
    assert statuses == [200, 503, 200, 503]  # each its own remaining time, though all were in flight together
    lambda_ids = {name: invocation.request_id for name, invocation in zip(names, invocations, strict=True)}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = {line["request_id"]: line for line in concurrent.access_lines() if line.get("request_id") in lambda_ids}
        if len(lines) == len(names):
            break
        time.sleep(0.1)
    # each access line was written while its invocation ran, and carries that invocation's Lambda request id
    assert {name: line.get("requestId") for name, line in lines.items()} == lambda_ids


def test_each_invocation_calls_s3_with_its_own_trace_id(concurrent: Function, held: LambdaRuntimeApi) -> None:
    keys = [f"inbox/{uuid.uuid4().hex[:12]}.txt" for _ in range(WORKERS)]
    invocations = []
    for key in keys:
        event = load_event(S3_OBJECT_CREATED)
        event["Records"][0]["s3"]["object"]["key"] = key
        invocations.append(held.start_invocation(event))
    for invocation in invocations:
        invocation.wait(120)
    assert held.most_in_flight == WORKERS
    sent = {key: invocation.trace_id for key, invocation in zip(keys, invocations, strict=True)}
    seen: dict[str, set[str | None]] = {}
    for _, path, trace in concurrent.s3.calls:
        called = next((key for key in keys if key in path), None)
        if called is not None:
            seen.setdefault(called, set()).add(trace)
    assert seen == {key: {trace} for key, trace in sent.items()}, concurrent.server.log()[-3000:]


# --- one at a time where the variable is unset; a bad value refused ----------------------------------------------
def test_without_the_variable_one_invocation_at_a_time(tiny_bundle_dir: Path, tmp_path: Path) -> None:
    function = start_function(tiny_bundle_dir, tmp_path)
    try:
        api = function.api
        assert api.wait_for_waiting(1, timeout_s=120), function.server.log()
        invocations = [api.start_invocation(api_gateway_post(text)) for text in texts(3)]
        assert all(buffered_translation(invocation) for invocation in invocations)
        assert (api.most_waiting, api.most_in_flight) == (1, 1)
        event = load_event(S3_OBJECT_CREATED)
        event["Records"][0]["s3"]["object"]["key"] = "inbox/alone.txt"
        invocation = api.start_invocation(event)
        invocation.wait(120)
        traces = {trace for _, path, trace in function.s3.calls if "alone.txt" in path}
        assert traces == {invocation.trace_id}  # _X_AMZN_TRACE_ID, set per invocation as awslambdaric sets it
    finally:
        stop_function(function)


@pytest.mark.parametrize("value", ["0", "-1", "four", "2.5", "", "1601"])
def test_a_bad_max_concurrency_stops_the_start_before_the_model_loads(
    tiny_bundle_dir: Path, tmp_path: Path, value: str
) -> None:
    function = start_function(tiny_bundle_dir, tmp_path, **{MAX_CONCURRENCY_ENV: value})
    try:
        returncode = function.server.process.wait(timeout=60)
        log = function.server.log()
        assert returncode == 1, log
        assert f"{MAX_CONCURRENCY_ENV} must be a whole number from 1 to 1600" in log and repr(value) in log, log
        assert [error["errorType"] for error in function.api.init_errors] == ["Runtime.InvalidMaxConcurrency"]
        assert repr(value) in function.api.init_errors[0]["errorMessage"]
        assert function.loads() == [], "the model was loaded before the setting was checked"
    finally:
        stop_function(function)


@pytest.mark.parametrize(
    ("environ", "workers"), [({}, 1), ({MAX_CONCURRENCY_ENV: "1"}, 1), ({MAX_CONCURRENCY_ENV: " 16 "}, 16)]
)
def test_max_concurrency_reads_the_variable(environ: dict[str, str], workers: int) -> None:
    assert max_concurrency(environ) == workers


def test_a_bad_value_is_named_in_the_error() -> None:
    with pytest.raises(ConcurrencyError, match=r"AWS_LAMBDA_MAX_CONCURRENCY must be .*; got '0x10'"):
        max_concurrency({MAX_CONCURRENCY_ENV: "0x10"})


def test_the_entry_point_still_runs_as_a_module() -> None:
    """``python -m handler.adapters.lambda_streaming`` without a Runtime API says how it is run (no traceback)."""
    env = subprocess_env({})
    result = subprocess.run(
        [sys.executable, "-m", "handler.adapters.lambda_streaming"],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0 and "usage: AWS_LAMBDA_RUNTIME_API=" in result.stderr
