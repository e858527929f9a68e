"""An attacker's input: no user input reaches a shell, a path outside the bundle folder or a URL fetch, and no
object key leads a translation out of the output prefix, on S3 and on Cloud Storage.

* Keys: an upload whose key, read as a path, climbs out (``..`` segments with ``/`` or ``\\``, encoded ``%2E%2E``
  and ``%2F``, once or twice, absolute keys, drive letters, control characters) is refused (logged, reported, not
  retried) and nothing is written; harmless oddities (``%2F`` kept literally, dots inside a name) are translated
  to exactly ``TRANSLATE_OUTPUT_PREFIX + key``: the key is never decoded a second time.
* Requests: hostile texts, markup, glossaries and drop-in API fields (URLs of a canary server on loopback,
  ``file://`` URLs, shell syntax, ``../`` and absolute paths) go through the HTTP surface in process while a PEP 578
  audit hook records every process start, socket connection and file opened: there are none, and the canary
  server receives nothing.
* The code: ``handler/`` imports no module that starts processes or fetches URLs, and calls no shell.
"""

from __future__ import annotations

import ast
import http.server
import json
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest

from handler.api.router import HttpApi, HttpRequest
from handler.coldstart import Startup
from handler.storage.object_store import GcsStore, S3Store
from tests.events import GCS_OBJECT_FINALIZED, S3_OBJECT_CREATED, load_event

REPO_ROOT = Path(__file__).resolve().parents[2]
CHINESE = "今天天气很好。\n"
PREFIX = "translated/"

UNSAFE_KEYS = {
    "parent": "../evil.txt",
    "nested parent": "inbox/../../evil.txt",
    "dot": "./evil.txt",
    "absolute": "/etc/evil.txt",
    "backslash parent": "..\\evil.txt",
    "backslash nested": "inbox\\..\\..\\evil.txt",
    "drive": "C:\\evil.txt",
    "encoded dots": "inbox/%2E%2E/%2E%2E/evil.txt",
    "encoded separators": "a%2F..%2F..%2Fevil.txt",
    "double encoded": "a%252F..%252F..%252Fevil.txt",
    "encoded backslash": "a%5C..%5C..%5Cevil.txt",
    "encoded absolute": "%2Fetc%2Fevil.txt",
    "control character": "inbox/evil\r\n.txt",
}
SAFE_ODD_KEYS = {
    "literal %2F": "a%2Fb.txt",
    "dots inside names": "报告..最终版/v1.2...txt",
    "plus and spaces": "收件箱/1+1 = 2.txt",
    "percent sign": "100%.txt",
}


class Backend:
    def __init__(self, scheme: str, client: Any, modules: dict[str, Any]) -> None:
        self.scheme = scheme
        self.client = client
        self.modules = modules

    def bucket(self) -> str:
        name = f"hostile-{uuid.uuid4().hex[:12]}"
        self.client.create_bucket(Bucket=name) if self.scheme == "s3" else self.client.create_bucket(name)
        return name

    def put(self, bucket: str, key: str, data: bytes) -> None:
        if self.scheme == "s3":
            self.client.put_object(Bucket=bucket, Key=key, Body=data)
        else:
            self.client.bucket(bucket).blob(key).upload_from_string(data, content_type="text/plain")

    def keys(self, bucket: str) -> list[str]:
        if self.scheme == "s3":
            return sorted(o["Key"] for o in self.client.list_objects_v2(Bucket=bucket).get("Contents", []))
        return sorted(blob.name for blob in self.client.list_blobs(bucket))

    def deliver(self, startup: Startup, bucket: str, key: str) -> Any:
        if self.scheme == "s3":
            adapter = self.modules["handler.adapters.aws_lambda"].LambdaAdapter(startup, S3Store(self.client))
            event = load_event(S3_OBJECT_CREATED)
            event["Records"][0]["s3"]["bucket"]["name"] = bucket
            event["Records"][0]["s3"]["object"]["key"] = quote_plus(key, safe="/")  # as S3 encodes it
            return adapter.handle(event, None)["results"][0]
        adapter = self.modules["handler.adapters.gcp"].GcpAdapter(startup, GcsStore(self.client))
        event = load_event(GCS_OBJECT_FINALIZED)
        event["data"].update(bucket=bucket, name=key)
        return adapter.handle_storage_event(event["type"], event["data"])


@pytest.fixture(params=["s3", "gs"])
def backend(request: pytest.FixtureRequest, entry_modules: dict[str, Any]) -> Backend:
    client = request.getfixturevalue("s3_client" if request.param == "s3" else "gcs_client")
    return Backend(request.param, client, entry_modules)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(UNSAFE_KEYS))
def test_a_key_that_could_leave_the_output_prefix_is_refused(backend: Backend, startup: Startup, name: str) -> None:
    key = UNSAFE_KEYS[name]
    bucket = backend.bucket()
    # (moto cannot store CR/LF in a key, gcp-storage-emulator no ".."; the refusal comes before any read anyway)
    if "\r" not in key and (backend.scheme == "s3" or ".." not in key):
        backend.put(bucket, key, CHINESE.encode("utf-8"))
    before = backend.keys(bucket)
    result = backend.deliver(startup, bucket, key)
    assert result["status"] == "refused", result
    assert "could lead outside the output prefix" in result["reason"]
    assert backend.keys(bucket) == before  # nothing written, anywhere in the bucket


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SAFE_ODD_KEYS))
def test_an_odd_but_harmless_key_is_translated_exactly_under_the_prefix(
    backend: Backend, startup: Startup, name: str
) -> None:
    key = SAFE_ODD_KEYS[name]
    bucket = backend.bucket()
    backend.put(bucket, key, CHINESE.encode("utf-8"))
    result = backend.deliver(startup, bucket, key)
    assert result["status"] == "translated", result
    assert result["output"] == f"{backend.scheme}://{bucket}/{PREFIX}{key}"
    assert backend.keys(bucket) == sorted([key, PREFIX + key])


# --- requests: no process, no connection, no file -------------------------------------------------------------
class _Recorder:
    """A PEP 578 audit hook (hooks cannot be removed, so it records only while ``active``)."""

    WATCHED = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "pty.spawn")

    def __init__(self) -> None:
        self.active = False
        self.events: list[tuple[str, str]] = []
        sys.addaudithook(self)

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active:
            return
        if event in self.WATCHED or event.startswith(("socket.connect", "socket.getaddrinfo", "urllib.Request")):
            self.events.append((event, repr(args)[:200]))
        elif event == "open" and args and isinstance(args[0], (str, bytes, Path)):
            self.events.append((event, str(args[0])))


_RECORDER: _Recorder | None = None


def recorder() -> _Recorder:
    global _RECORDER
    if _RECORDER is None:
        _RECORDER = _Recorder()
    return _RECORDER


@pytest.fixture(scope="module")
def canary() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on loopback that records every request it gets: nothing may reach it."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()
    server.server_close()


def hostile_requests(base: str) -> list[tuple[str, dict[str, Any]]]:
    texts = [
        f"请访问 {base}/text 获取更多信息。",
        "打开 file:///etc/passwd 看看。",
        "路径是 ../../../../../etc/passwd 和 /etc/shadow 。",
        "运行 $(touch /tmp/pwned) 和 `id`; rm -rf / | cat /etc/passwd",
        "共享 \\\\server\\share\\secret.txt 和 C:\\Windows\\win.ini",
        f"<script src='{base}/script'></script>",
    ]
    requests: list[tuple[str, dict[str, Any]]] = [("/translate", {"text": text}) for text in texts]
    requests += [
        ("/translate", {"texts": texts[:3], "spans": True}),
        (
            "/translate",
            {"text": f"<p><img src='{base}/img'><a href='{base}/a' title='链接'>世界</a></p>", "format": "html"},
        ),
        ("/translate", {"text": f"![图]({base}/md) [链接]({base}/link) `$(id)`", "format": "markdown"}),
        ("/translate", {"text": "你好，朋友", "glossary": {"你好": f"{base}/glossary", "朋友": "../../etc/passwd"}}),
        ("/translate", {"text": "你好", "format": "../../etc/passwd"}),
        ("/translate", {"text": "你好", "source": "file:///etc/passwd"}),
        ("/", {"q": f"{base}/libre 你好", "source": "zh", "target": "en", "format": "html"}),
        ("/translate", {"q": [f"{base}/libre", "/etc/passwd"], "source": "auto", "target": "en"}),
        ("/detect", {"q": "$(id) 你好"}),
        ("/v2/translate", {"text": [f"{base}/deepl 你好"], "target_lang": "EN", "tag_handling": "html"}),
    ]
    return requests


@pytest.mark.slow
def test_no_request_starts_a_process_opens_a_file_or_connects_anywhere(
    startup: Startup, canary: tuple[str, list[str]], tiny_bundle_dir: Path
) -> None:
    base, hits = canary
    api = HttpApi(startup)
    requests = hostile_requests(base)

    def send(path: str, body: dict[str, Any]) -> int:
        request = HttpRequest.create(
            "POST", path, {"Content-Type": "application/json"}, json.dumps(body, ensure_ascii=False).encode()
        )
        return api.handle(request).status

    for path, body in requests:  # once unwatched: lazy imports and first-use caches may open files
        send(path, body)
    watch = recorder()
    watch.active = True
    try:
        statuses = [send(path, body) for path, body in requests]
    finally:
        watch.active = False
    assert all(status < 500 for status in statuses), statuses
    assert statuses.count(200) >= len(requests) - 4, statuses  # the refusals: format, source, and the like
    assert watch.events == [], watch.events  # no process, no socket, no file
    assert hits == [], hits  # and the canary server never heard from us


# --- the code itself ---------------------------------------------------------------------------------------------
FORBIDDEN_MODULES = {"subprocess", "socket", "http.client", "urllib.request", "requests", "httpx", "urllib3",
                     "ftplib", "smtplib", "telnetlib", "pty", "aiohttp", "pycurl"}  # fmt: skip
FORBIDDEN_CALLS = {"system", "popen", "execv", "execve", "execl", "execlp", "execvp", "spawnv", "spawnl",
                   "posix_spawn", "startfile", "eval", "exec"}  # fmt: skip
# the only network code in handler/, each on a connection its platform or its operator names, never an address taken
# from a request: streaming's hang-up check peeks at the client's own socket, the Cloud adapter finds that socket in
# its server's environ, the Lambda runtime loop and its streaming answers talk to the Runtime API
# (AWS_LAMBDA_RUNTIME_API), as awslambdaric does, and the key quotas' Redis client to TRANSLATE_USAGE_STORE
ALLOWED_NETWORK_IMPORTS = {
    "adapters/hangup.py": {"socket"},
    "adapters/gcp.py": {"socket"},
    "adapters/lambda_streaming.py": {"socket", "http.client"},
    "adapters/lambda_runtime.py": {"http.client"},
    "storage/redis_client.py": {"socket"},
}


def test_the_handler_imports_nothing_that_starts_processes_or_fetches_urls() -> None:
    found = []
    for path in sorted((REPO_ROOT / "handler").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            allowed = ALLOWED_NETWORK_IMPORTS.get(path.relative_to(REPO_ROOT / "handler").as_posix(), set())
            found += [f"{path.name}: import {n}" for n in names if n in FORBIDDEN_MODULES - allowed]
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in FORBIDDEN_CALLS:
                    found.append(f"{path.name}:{node.lineno}: {name}()")
                if any(k.arg == "shell" for k in node.keywords):
                    found.append(f"{path.name}:{node.lineno}: shell=")
    assert found == []


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/translate", "application/json"),  # this server's API (LibreTranslate's check reads the body first)
        ("/v2/translate", "application/json"),  # DeepL's
        ("/detect", "application/json"),  # LibreTranslate's
    ],
)
@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_a_body_nested_beyond_the_parser_is_a_400_not_a_500(
    startup: Startup, path: str, content_type: str, opening: str
) -> None:
    # GIVEN a JSON body nested 5,000 levels deep (it used to exhaust the parser: 500 internal_error)
    body = (opening * 5_000).encode("ascii")
    api = HttpApi(startup)
    response = api.handle(HttpRequest.create("POST", path, {"Content-Type": content_type}, body))
    # THEN a 400 in the API's own error shape that says what is wrong
    assert response.status == 400, response.body[:300]
    answer = json.loads(response.body)
    message = answer["error"]["message"] if path == "/translate" else answer.get("message") or answer.get("error")
    assert "nested too deeply" in str(message)
