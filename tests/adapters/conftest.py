"""Fixtures for the adapter tests: the function's configuration, real servers on loopback, HTTP clients.

Every server here is real and started by the tests: functions-framework (as ``make run`` starts it), the
standard-library local server, the awslambdaric client process against ``LambdaRuntimeApi``, moto's S3 server
and gcp-storage-emulator. The model is the tiny random bundle of ``tests/conftest.py`` (its output is
gibberish, so the tests assert on structure and behaviour, not on wording).
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import importlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import pytest

from handler.coldstart import Startup, start
from handler.config import RuntimeConfig
from handler.model.bundle import ENCODER_ONNX
from tests.adapters.lambda_runtime_api import LambdaRuntimeApi
from tests.events import API_GATEWAY_V1, API_GATEWAY_V2, FUNCTION_URL, load_event

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# small limits so the over-limit cases stay cheap; every adapter under test runs with these
MAX_CHARS = 200
MAX_TEXTS = 4
MAX_FILE_BYTES = 60_000
ALLOWED_ORIGIN = "https://allowed.example"

AWS_TEST_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}


def function_env(bundle_dir: Path, **extra: str) -> dict[str, str]:
    """The TRANSLATE_* variables every function under test runs with."""
    return {
        "TRANSLATE_BUNDLE_DIR": str(bundle_dir),
        "TRANSLATE_MAX_CHARS": str(MAX_CHARS),
        "TRANSLATE_MAX_TEXTS": str(MAX_TEXTS),
        "TRANSLATE_MAX_FILE_BYTES": str(MAX_FILE_BYTES),
        "TRANSLATE_CORS_ORIGINS": ALLOWED_ORIGIN,
        "TRANSLATE_THREADS": "1",
        **extra,
    }


def subprocess_env(variables: Mapping[str, str]) -> dict[str, str]:
    """A clean environment for a function process: PATH, the repo on PYTHONPATH, no inherited TRANSLATE_*."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRANSLATE_", "AWS_", "STORAGE_EMULATOR"))}
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(variables)
    return env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- configuration and cold starts ------------------------------------------------------------------------
@pytest.fixture(scope="session")
def adapter_env(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    # stored glossaries (and documents) of every adapter under test: one temporary folder, not the working directory
    return function_env(tiny_bundle_dir, TRANSLATE_STATE_DIR=str(tmp_path_factory.mktemp("state")))


@pytest.fixture(scope="session")
def adapter_config(adapter_env: dict[str, str]) -> RuntimeConfig:
    return RuntimeConfig.from_env(adapter_env)


@pytest.fixture(scope="session")
def startup(adapter_config: RuntimeConfig) -> Startup:
    loaded = start(adapter_config)
    assert loaded.error is None, loaded.error
    return loaded


@pytest.fixture(scope="session")
def broken_bundle_dir(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny bundle with its encoder truncated: the loader must refuse it (hash and size mismatch)."""
    broken = tmp_path_factory.mktemp("broken") / "bundle"
    shutil.copytree(tiny_bundle_dir, broken)
    encoder = broken / ENCODER_ONNX
    encoder.write_bytes(encoder.read_bytes()[:1000])
    return broken


@pytest.fixture(scope="session")
def broken_startup(broken_bundle_dir: Path) -> Startup:
    failed = start(RuntimeConfig.from_env(function_env(broken_bundle_dir)))
    assert failed.service is None and failed.error is not None
    return failed


@contextlib.contextmanager
def environment(variables: Mapping[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="session")
def entry_modules(adapter_env: dict[str, str]) -> dict[str, ModuleType]:
    """``handler.adapters.aws_lambda`` and ``handler.adapters.gcp`` imported (cold start included), test settings."""
    with environment(adapter_env):
        modules = {}
        for name in ("handler.adapters.aws_lambda", "handler.adapters.gcp"):
            if name in sys.modules:
                modules[name] = importlib.reload(sys.modules[name])
            else:
                modules[name] = importlib.import_module(name)
    return modules


# --- a server process -------------------------------------------------------------------------------------
class ServerProcess:
    """A function process on loopback with its output in a log file (shown when it fails to come up)."""

    def __init__(self, command: list[str], env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_http(self, url: str, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}:\n{self.log()}")
            try:
                port = int(url.rsplit(":", 1)[1])
                with contextlib.closing(http.client.HTTPConnection("127.0.0.1", port, timeout=2)) as connection:
                    connection.request("GET", "/healthz")
                    connection.getresponse().read()
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"server did not answer within {timeout_s} s:\n{self.log()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def start_functions_framework(target: str, env: dict[str, str], log_dir: Path) -> tuple[ServerProcess, str]:
    port = free_port()
    command = [  # functions-framework's server as make run and the Cloud Run image start it
        str(BIN / "python"),
        "-m",
        "handler.adapters.gunicorn_server",
        "--source",
        "main.py",
        "--target",
        target,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    server = ServerProcess(command, subprocess_env(env), log_dir / f"functions-framework-{target}-{port}.log")
    url = f"http://127.0.0.1:{port}"
    try:
        server.wait_http(url)
    except Exception:
        server.stop()
        raise
    return server, url


@pytest.fixture(scope="session")
def functions_framework_url(adapter_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``functions-framework --source main.py --target translate_http`` on loopback, as ``make run`` starts it."""
    server, url = start_functions_framework("translate_http", adapter_env, tmp_path_factory.mktemp("ff-http"))
    yield url
    server.stop()


@pytest.fixture(scope="session")
def local_server_url(startup: Startup) -> Iterator[str]:
    from handler.adapters.local_server import make_server
    from handler.api.router import HttpApi

    server = make_server(HttpApi(startup), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


# --- the Lambda runtime interface client against a local Runtime API --------------------------------------
@dataclass
class RicFunction:
    api: LambdaRuntimeApi
    server: ServerProcess


def start_ric_function(env: dict[str, str], log_dir: Path) -> RicFunction:
    api = LambdaRuntimeApi().start()
    variables = subprocess_env({**env, "AWS_LAMBDA_RUNTIME_API": api.address})
    command = [sys.executable, "-m", "awslambdaric", "handler.adapters.aws_lambda.lambda_handler"]
    server = ServerProcess(command, variables, log_dir / f"awslambdaric-{uuid.uuid4().hex[:6]}.log")
    return RicFunction(api, server)


def stop_ric_function(function: RicFunction) -> None:
    function.server.stop()
    function.api.stop()


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """moto's S3 server in a thread on loopback (a real S3-protocol HTTP server)."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="session")
def s3_client(moto_endpoint: str) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture(scope="session")
def ric_function(
    adapter_env: dict[str, str], moto_endpoint: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RicFunction]:
    """``python -m awslambdaric handler.adapters.aws_lambda.lambda_handler`` with S3 pointed at the moto server."""
    function = start_ric_function(
        {**adapter_env, **AWS_TEST_ENV, "AWS_ENDPOINT_URL_S3": moto_endpoint}, tmp_path_factory.mktemp("ric")
    )
    yield function
    stop_ric_function(function)


@pytest.fixture(scope="session")
def gcs_emulator_host() -> Iterator[str]:
    """gcp-storage-emulator in a thread on loopback, in memory."""
    from gcp_storage_emulator.server import create_server

    port = free_port()
    server = create_server("127.0.0.1", port, in_memory=True)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture(scope="session")
def gcs_client(gcs_emulator_host: str) -> Any:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    return storage.Client(
        project="test-project",
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": gcs_emulator_host},
    )


# --- HTTP clients: one interface, one implementation per adapter -------------------------------------------
@dataclass
class Reply:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


class HttpClient(Protocol):
    name: str

    def call(self, method: str, path: str, headers: Mapping[str, str] | None = None, body: bytes = b"") -> Reply: ...


class RealHttpClient:
    """Plain HTTP to a server on loopback (functions-framework, the local server)."""

    def __init__(self, name: str, base_url: str) -> None:
        self.name = name
        self.host, port = base_url.removeprefix("http://").split(":")
        self.port = int(port)

    def call(self, method: str, path: str, headers: Mapping[str, str] | None = None, body: bytes = b"") -> Reply:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            connection.request(
                method, path, body=body if body or method in ("POST", "PUT") else None, headers=dict(headers or {})
            )
            response = connection.getresponse()
            return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
        finally:
            connection.close()


def http_event(kind: str, method: str, path: str, headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
    """A request as API Gateway v1 / v2 or a Function URL delivers it, built on the sample event."""
    event = load_event(kind)
    try:
        text_body: str | None = body.decode("utf-8") if body else None
    except UnicodeDecodeError:
        text_body = None
    base64_body = kind == FUNCTION_URL or (body and text_body is None)
    if kind == API_GATEWAY_V1:
        event["httpMethod"] = method
        event["path"] = path
        event["requestContext"]["httpMethod"] = method
        event["requestContext"]["path"] = f"/{event['requestContext']['stage']}{path}"
        event["headers"] = {"Host": event["headers"]["Host"], **headers}
        event["multiValueHeaders"] = {name: [value] for name, value in event["headers"].items()}
    else:
        event["rawPath"] = path
        event["requestContext"]["http"]["method"] = method
        event["requestContext"]["http"]["path"] = path
        event["headers"] = {"host": event["headers"]["host"], **{k.lower(): v for k, v in headers.items()}}
    if not body:
        event["body"] = None
        event["isBase64Encoded"] = False
    elif base64_body:
        event["body"] = base64.b64encode(body).decode("ascii")
        event["isBase64Encoded"] = True
    else:
        event["body"] = text_body
        event["isBase64Encoded"] = False
    return event


def reply_from_proxy_response(response: Mapping[str, Any]) -> Reply:
    body = response.get("body") or ""
    raw = base64.b64decode(body) if response.get("isBase64Encoded") else body.encode("utf-8")
    return Reply(int(response["statusCode"]), {k.lower(): v for k, v in response.get("headers", {}).items()}, raw)


class LambdaEventClient:
    """Calls ``handler.adapters.aws_lambda.lambda_handler`` in this process with API Gateway / Function URL events."""

    def __init__(self, kind: str, handler: Any) -> None:
        self.name = kind
        self.kind = kind
        self.handler = handler

    def call(self, method: str, path: str, headers: Mapping[str, str] | None = None, body: bytes = b"") -> Reply:
        response = self.handler(http_event(self.kind, method, path, dict(headers or {}), body), None)
        return reply_from_proxy_response(response)


class RicClient:
    """Sends Function URL events through the Runtime API to the real awslambdaric process."""

    name = "awslambdaric"

    def __init__(self, function: RicFunction) -> None:
        self.function = function

    def call(self, method: str, path: str, headers: Mapping[str, str] | None = None, body: bytes = b"") -> Reply:
        outcome, payload = self.function.api.invoke(http_event(FUNCTION_URL, method, path, dict(headers or {}), body))
        assert outcome == "response", f"the handler raised: {payload}\n{self.function.server.log()}"
        return reply_from_proxy_response(payload)


HTTP_ADAPTERS = ("functions_framework", "local_server", API_GATEWAY_V1, API_GATEWAY_V2, FUNCTION_URL, "awslambdaric")


@pytest.fixture(scope="session")
def http_clients() -> dict[str, Any]:
    """Built lazily, so a test that needs one adapter starts only that one's servers."""
    return {}


def build_client(name: str, request: pytest.FixtureRequest) -> HttpClient:
    if name == "functions_framework":
        return RealHttpClient(name, request.getfixturevalue("functions_framework_url"))
    if name == "local_server":
        return RealHttpClient(name, request.getfixturevalue("local_server_url"))
    if name == "awslambdaric":
        return RicClient(request.getfixturevalue("ric_function"))
    modules = request.getfixturevalue("entry_modules")
    return LambdaEventClient(name, modules["handler.adapters.aws_lambda"].lambda_handler)


@pytest.fixture(params=HTTP_ADAPTERS)
def client(request: pytest.FixtureRequest, http_clients: dict[str, Any]) -> HttpClient:
    """The same HTTP behaviour tests run once per adapter."""
    name = request.param
    if name not in http_clients:
        http_clients[name] = build_client(name, request)
    return http_clients[name]
