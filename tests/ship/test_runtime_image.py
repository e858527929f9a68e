"""The runtime images' contents, proven without a Docker engine.

For each runtime target of the Dockerfile (``lambda``, ``cloudrun``) this builds what the image would hold:
a fresh virtual environment with exactly the lock file the target's ``pip install --require-hashes`` installs,
and an app folder with exactly the files its ``COPY`` lines copy (``COPY --from`` resolved back to the build
context, ``.dockerignore`` applied), read-only like a function's file system. It then runs the image's own entry
(the Lambda handler named by ``CMD``; ``functions-framework`` with the image's ``ENV``) with the image's
environment, translates, checks the file-event paths that need no bucket, and proves torch and transformers are
absent. Finally it reports the size of what the image adds to ``python:3.11-slim`` (packages + app + bundle).

The CSANMT tokenizer's libraries are installed by the Dockerfile's own conditional ``RUN`` line (executed here with
the stand-in's python and pip) only when the baked bundle's manifest says family csanmt: the default image must not
hold jieba, an image baking a CSANMT bundle must, and translates with it.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

from tests.csanmt.conftest import csanmt_bundle_dir, csanmt_tiny_dir  # noqa: F401  (fixtures, used by name)
from tests.ship.dockerfile_model import REPO_ROOT, Dockerfile, materialise

pytestmark = pytest.mark.slow

SIZE_BUDGET_MB = 250.0
DEFAULT_BUNDLE = REPO_ROOT / "model_artifacts" / "default"
EVENTS = REPO_ROOT / "tests" / "events"
FORBIDDEN = ("torch", "transformers", "optimum", "onnx", "tokenizers")  # build-time only
EXPECTED_LOCK = {"lambda": "requirements/runtime-aws.txt", "cloudrun": "requirements/runtime-gcp.txt"}


@dataclass
class BuiltImage:
    target: str
    root: Path  # stands for the image's "/"
    app: Path  # the image's WORKDIR
    python: Path
    environ: dict[str, str]
    lock: Path
    packages_mb: float  # what `pip install -r <lock>` added to a bare virtual environment
    environment_mb: float  # the whole virtual environment (python, pip and setuptools included)
    app_mb: float
    bundle_mb: float
    bundle_is_default: bool


def _size_mb(path: Path) -> float:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


FAMILY_LOCK = "requirements/csanmt.txt"


def _family_install(dockerfile: Dockerfile, target: str) -> str:
    """The target's conditional install of the CSANMT tokenizer lock (a `RUN` that installs a COPY of it)."""
    copied = [i.value[-1] for i in dockerfile.instructions(target) if i.cmd == "COPY" and i.value[0] == FAMILY_LOCK]
    assert len(copied) == 1, f"{target}: expected one COPY of {FAMILY_LOCK}, found {copied}"
    runs = [i.value[0] for i in dockerfile.instructions(target) if i.cmd == "RUN" and copied[0] in i.value[0]]
    assert len(runs) == 1 and "--require-hashes" in runs[0] and "csanmt" in runs[0], runs
    return runs[0]


INSTALLER_LOCK = "requirements/installer.txt"


def _installer_install(dockerfile: Dockerfile, target: str) -> str:
    """The target's install of the pinned installer, which must come before every other `pip install`."""
    copied = [i.value[-1] for i in dockerfile.instructions(target) if i.cmd == "COPY" and i.value[0] == INSTALLER_LOCK]
    assert len(copied) == 1, f"{target}: expected one COPY of {INSTALLER_LOCK}, found {copied}"
    installs = [i.value[0] for i in dockerfile.instructions(target) if i.cmd == "RUN" and "pip install" in i.value[0]]
    assert installs and copied[0] in installs[0] and "--require-hashes" in installs[0], (
        f"{target}: the first `pip install` must install {INSTALLER_LOCK} with --require-hashes: {installs}"
    )
    return installs[0]


def _lock_file(dockerfile: Dockerfile, target: str) -> str:
    """The lock file the target installs: `RUN pip install --require-hashes -r X`, X being a COPY of a lock file."""
    skipped = {_family_install(dockerfile, target), _installer_install(dockerfile, target)}
    installs = [
        i.value[0]
        for i in dockerfile.instructions(target)
        if i.cmd == "RUN" and "pip install" in i.value[0] and i.value[0] not in skipped
    ]
    assert len(installs) == 1, f"{target}: expected one `pip install`, found {installs}"
    words = shlex.split(installs[0])
    assert "--require-hashes" in words, f"{target} installs without --require-hashes: {installs[0]}"
    installed = words[words.index("-r") + 1]
    copies = [i.value for i in dockerfile.instructions(target) if i.cmd == "COPY" and i.value[-1] == installed]
    assert len(copies) == 1, f"{target}: no COPY puts a lock file at {installed}"
    return copies[0][0]


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{command} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


def _make_read_only(path: Path) -> None:
    for item in [path, *path.rglob("*")]:
        mode = item.stat().st_mode
        item.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _make_writable(path: Path) -> None:
    for item in [path, *path.rglob("*")]:
        item.chmod(item.stat().st_mode | stat.S_IWUSR)


def _build(
    target: str,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    bundle_dir: Path | None = None,
) -> BuiltImage:
    """The stand-in image of ``target``, baking ``bundle_dir`` (default: the committed default bundle)."""
    dockerfile = Dockerfile()
    lock = _lock_file(dockerfile, target)
    assert lock == EXPECTED_LOCK[target]

    bundle_is_default = bundle_dir is None and (DEFAULT_BUNDLE / "manifest.json").exists()
    if bundle_dir is None and not bundle_is_default:
        bundle_dir = request.getfixturevalue("tiny_bundle_dir")
    overrides = {} if bundle_dir is None else {"model_artifacts/default": bundle_dir}
    root = tmp_path_factory.mktemp(f"image-{target}")
    materialise(dockerfile.copies(target, overrides=overrides), root)
    app = root / dockerfile.workdir(target).relative_to("/")
    (root / "tmp").mkdir(exist_ok=True)

    venv = root / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    bare_mb = _size_mb(venv)
    copied_lock = root / "tmp" / "requirements.txt"
    assert copied_lock.read_bytes() == (REPO_ROOT / lock).read_bytes()
    # the Dockerfile's own lines, their absolute paths under our stand-in "/", their python and pip ours: the
    # pinned installer, then the lock file with it, then the family's conditional line
    install_environ = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "PIP_QUIET": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    installer_install = _installer_install(dockerfile, target).replace("/tmp/", f"{root}/tmp/")
    _run(["/bin/sh", "-c", installer_install], cwd=root, env=install_environ)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--require-hashes", "-r", str(copied_lock)])
    family_install = _family_install(dockerfile, target).replace("/tmp/", f"{root}/tmp/")
    _run(["/bin/sh", "-c", family_install], cwd=root, env=install_environ)
    environment_mb = _size_mb(venv)

    # the container's environment: the Dockerfile's ENV, with absolute paths moved under our stand-in "/"
    environ = {
        name: (str(root) + value if value.startswith("/") else value) for name, value in dockerfile.env(target).items()
    }
    environ.update(PATH=f"{venv / 'bin'}:/usr/bin:/bin", LANG="C.UTF-8", PYTHONNOUSERSITE="1")

    bundle = app / "model_artifacts" / "default"
    built = BuiltImage(
        target=target,
        root=root,
        app=app,
        python=venv / "bin" / "python",
        environ=environ,
        lock=REPO_ROOT / lock,
        packages_mb=environment_mb - bare_mb,
        environment_mb=environment_mb,
        app_mb=_size_mb(app) - _size_mb(bundle),
        bundle_mb=_size_mb(bundle),
        bundle_is_default=bundle_is_default,
    )
    _make_read_only(app)  # a function's file system is read-only except /tmp
    return built


@pytest.fixture(scope="module")
def build_image(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Builds each target's stand-in image once per module, on first use."""
    built: dict[str, BuiltImage] = {}

    def build(target: str) -> BuiltImage:
        if target not in built:
            built[target] = _build(target, request, tmp_path_factory)
        return built[target]

    yield build
    for image in built.values():
        _make_writable(image.app)


@pytest.fixture(params=sorted(EXPECTED_LOCK))
def image(request: pytest.FixtureRequest, build_image) -> BuiltImage:
    return build_image(request.param)


@pytest.fixture
def lambda_image(build_image) -> BuiltImage:
    return build_image("lambda")


@pytest.fixture
def cloudrun_image(build_image) -> BuiltImage:
    return build_image("cloudrun")


@pytest.fixture(scope="module")
def csanmt_lambda_image(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The Lambda image baking the tiny CSANMT bundle (``tests/csanmt``'s ``csanmt_bundle_dir``)."""
    image = _build("lambda", request, tmp_path_factory, request.getfixturevalue("csanmt_bundle_dir"))
    yield image
    _make_writable(image.app)


def _python(image: BuiltImage, script: str, stdin: str = "", extra_env: dict[str, str] | None = None) -> dict:
    result = subprocess.run(
        [str(image.python), "-c", script],
        cwd=image.app,
        env={**image.environ, **(extra_env or {})},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"the script failed in the {image.target} image:\n{result.stderr}"
    return json.loads(result.stdout.strip().splitlines()[-1])


ABSENCE_CHECK = f"""
import importlib.util
absent = {{"installed": [n for n in {FORBIDDEN!r} if importlib.util.find_spec(n) is not None]}}
"""


def test_image_has_no_build_time_packages(image: BuiltImage) -> None:
    found = _python(image, ABSENCE_CHECK + "import json; print(json.dumps(absent))")
    assert found["installed"] == [], f"the {image.target} image installs build-time packages: {found['installed']}"
    lock_text = image.lock.read_text().lower()
    for name in FORBIDDEN:
        assert f"\n{name}==" not in lock_text, f"{image.lock.name} pins {name}"


LAMBDA_SCRIPT = """
import importlib, json, sys
request = json.load(sys.stdin)
import awslambdaric.bootstrap  # the loop the ENTRYPOINT `python -m handler.adapters.lambda_streaming` runs
module_name, function_name = request["cmd"].rsplit(".", 1)
handler = getattr(importlib.import_module(module_name), function_name)  # loads and warms the model
from handler.coldstart import cold_start_report

class Context:
    def get_remaining_time_in_millis(self):
        return 120_000

out = {"responses": [handler(event, Context()) for event in request["http_events"]]}
try:
    out["s3"] = handler(request["s3_event"], Context())
except Exception as error:
    out["s3"] = f"{type(error).__name__}: {error}"
out["loaded"] = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "transformers", "optimum", "onnx"})
out["cold_start"] = cold_start_report()
print(json.dumps(out))
"""


def _function_url_event(method: str, path: str, body: dict | None) -> dict:
    event = json.loads((EVENTS / "function_url.json").read_text())
    event["rawPath"] = path
    event["requestContext"]["http"].update(method=method, path=path)
    event["body"] = None if body is None else json.dumps(body, ensure_ascii=False)
    event["isBase64Encoded"] = False
    return event


def test_lambda_image_answers_http_and_refuses_self_triggering_uploads(lambda_image: BuiltImage) -> None:
    image = lambda_image
    dockerfile = Dockerfile()
    entrypoint = dockerfile.last("lambda", "ENTRYPOINT")
    cmd = dockerfile.last("lambda", "CMD")
    assert entrypoint is not None and list(entrypoint.value) == ["python", "-m", "handler.adapters.lambda_streaming"]
    assert cmd is not None and len(cmd.value) == 1

    s3_event = json.loads((EVENTS / "s3_object_created.json").read_text())
    bucket = s3_event["Records"][0]["s3"]["bucket"]["name"]
    s3_event["Records"][0]["s3"]["object"]["key"] = "translated/report.txt"  # under the output prefix
    request = {
        "cmd": cmd.value[0],
        "http_events": [
            _function_url_event("POST", "/translate", {"text": "你好，世界。"}),
            _function_url_event("GET", "/healthz", None),
        ],
        "s3_event": s3_event,
    }
    aws = {  # no request leaves this machine: the self-trigger check comes before any S3 call
        "TRANSLATE_OUTPUT_BUCKET": bucket,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    out = _python(image, LAMBDA_SCRIPT, stdin=json.dumps(request), extra_env=aws)

    translate, health = out["responses"]
    assert translate["statusCode"] == 200, translate
    body = json.loads(translate["body"])
    assert body["translation"].strip(), body
    assert health["statusCode"] == 200 and json.loads(health["body"])["warm"] is True, health
    [refused] = out["s3"]["results"]  # refused and reported, not raised: a retry could never succeed
    assert refused["status"] == "refused" and refused["reason"].startswith("refusing to translate"), out["s3"]
    assert out["loaded"] == []
    assert out["cold_start"]["error"] is None and out["cold_start"]["warm"] is True, out["cold_start"]
    print(f"\nlambda image: cold start {out['cold_start']}; translation: {body['translation']!r}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _http(url: str, body: dict | None = None, timeout: float = 60.0) -> tuple[int, str, str]:
    data = None if body is None else json.dumps(body).encode()
    headers = {} if body is None else {"Content-Type": "application/json"}
    request = urllib.request.Request(url, data=data, headers=headers, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read().decode()


def _stop(server: subprocess.Popen[str]) -> None:
    """SIGTERM, as Cloud Run sends; gunicorn kills a worker that has not stopped after its 30 s graceful timeout."""
    os.killpg(server.pid, signal.SIGTERM)
    began = time.monotonic()
    try:
        server.wait(timeout=60)
        print(f"functions-framework stopped {time.monotonic() - began:.1f} s after SIGTERM")
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        pytest.fail("functions-framework did not stop within 60 s of SIGTERM")


def test_cloudrun_image_serves_with_its_own_command(cloudrun_image: BuiltImage) -> None:
    image = cloudrun_image
    dockerfile = Dockerfile()
    cmd = dockerfile.last("cloudrun", "CMD")
    assert cmd is not None
    assert image.environ["FUNCTION_TARGET"] == "translate_http"
    port = _free_port()
    # the image binds 0.0.0.0; tests stay on loopback
    environ = {**image.environ, "HOST": "127.0.0.1", "PORT": str(port)}
    command = [str(image.root / "venv" / "bin" / cmd.value[0]), *cmd.value[1:]]
    server = subprocess.Popen(
        command,
        cwd=image.app,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 180
        while True:
            if server.poll() is not None:
                pytest.fail(f"functions-framework exited:\n{server.stdout.read() if server.stdout else ''}")
            try:
                status, _, health_text = _http(base + "healthz", timeout=5)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                assert time.monotonic() < deadline, "functions-framework did not answer within 180 s"
                time.sleep(0.3)
        assert status == 200, health_text
        health = json.loads(health_text)
        assert health["warm"] is True

        # the request is served by gunicorn's worker, forked after the model was loaded in the parent process
        status, content_type, text = _http(base + "translate", {"text": "你好，世界。"})
        assert status == 200, text
        assert content_type.startswith("application/json")
        assert json.loads(text)["translation"].strip()

        status, content_type, page = _http(base)
        assert status == 200 and content_type.startswith("text/html") and "<html" in page.lower()
        print(f"\ncloudrun image: cold start {health['cold_start']}")
    finally:
        _stop(server)


STORAGE_SCRIPT = """
import json, logging, sys
from cloudevents.http import CloudEvent

class Remember(logging.Handler):
    messages = []
    def emit(self, record):
        self.messages.append(record.getMessage())

logging.getLogger().addHandler(Remember())
import main  # FUNCTION_SOURCE
entry = getattr(main, sys.argv[1])
attributes = {
    "type": "google.cloud.storage.object.v1.finalized",
    "source": "//storage.googleapis.com/projects/_/buckets/uploads",
}
event = CloudEvent(attributes, {"bucket": "uploads", "name": "translated/report.txt"})
try:
    entry(event)
    outcome = "no error"
except Exception as error:
    outcome = f"{type(error).__name__}: {error}"
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "transformers", "optimum", "onnx"})
print(json.dumps({"outcome": outcome, "loaded": loaded, "logged": Remember.messages}))
"""


def test_cloudrun_image_refuses_self_triggering_storage_events(cloudrun_image: BuiltImage) -> None:
    image = cloudrun_image
    storage = {  # the emulator address is never contacted: the self-trigger check comes first
        "TRANSLATE_OUTPUT_BUCKET": "uploads",
        "STORAGE_EMULATOR_HOST": "http://127.0.0.1:9",
        "GOOGLE_CLOUD_PROJECT": "test-project",
    }
    out = _python(image, STORAGE_SCRIPT.replace("sys.argv[1]", "'translate_storage_event'"), extra_env=storage)
    assert out["outcome"] == "no error", out  # refused and logged, not raised: a retry could never succeed
    assert [m for m in out["logged"] if m.startswith("refusing to translate gs://uploads/translated/report.txt")], out
    assert out["loaded"] == []


def test_image_size_is_within_budget(image: BuiltImage) -> None:
    added = image.packages_mb + image.app_mb + image.bundle_mb
    which = "model_artifacts/default" if image.bundle_is_default else "a tiny test bundle: no default yet"
    report = (
        f"\n{image.target} image on top of python:3.11-slim: packages {image.packages_mb:.1f} MB "
        f"(whole virtual environment {image.environment_mb:.1f} MB with python/pip/setuptools), "
        f"app {image.app_mb:.2f} MB, bundle {image.bundle_mb:.1f} MB "
        f"({which})"
        f" = {added:.1f} MB; with the whole environment {image.environment_mb + image.app_mb + image.bundle_mb:.1f} MB"
    )
    print(report)
    if not image.bundle_is_default:
        pytest.skip("model_artifacts/default is not built yet; the size budget applies to the shipped bundle" + report)
    assert added < SIZE_BUDGET_MB, report


def test_image_files_are_exactly_the_copied_ones(image: BuiltImage) -> None:
    files = {p.relative_to(image.app).as_posix() for p in image.app.rglob("*") if p.is_file()}
    top = {PurePosixPath(f).parts[0] for f in files}
    expected = {"handler", "model_artifacts"} | ({"main.py"} if image.target == "cloudrun" else set())
    assert top == expected
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    assert {f for f in files if f.startswith("handler/")} == {
        p.relative_to(REPO_ROOT).as_posix()
        for p in (REPO_ROOT / "handler").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


TOKENIZER_CHECK = """
import importlib.util, json
print(json.dumps({"found": [n for n in ("jieba", "subword_nmt", "sacremoses") if importlib.util.find_spec(n)]}))
"""


def test_the_default_image_has_no_csanmt_tokenizer(lambda_image: BuiltImage) -> None:
    assert _python(lambda_image, TOKENIZER_CHECK)["found"] == []


def test_an_image_baking_a_csanmt_bundle_installs_its_tokenizer_and_translates(csanmt_lambda_image: BuiltImage) -> None:
    """GIVEN the Dockerfile's lines and a CSANMT bundle as model_artifacts/default WHEN the Lambda image is built
    THEN it holds jieba, subword-nmt and sacremoses, answers POST /translate, and reports its size."""
    image = csanmt_lambda_image
    assert _python(image, TOKENIZER_CHECK)["found"] == ["jieba", "subword_nmt", "sacremoses"]
    cmd = Dockerfile().last("lambda", "CMD")
    assert cmd is not None
    request = {
        "cmd": cmd.value[0],
        "http_events": [
            _function_url_event("POST", "/translate", {"text": "我们喜欢机器翻译。", "beam_size": 4}),
            _function_url_event("GET", "/healthz", None),
        ],
        "s3_event": json.loads((EVENTS / "s3_object_created.json").read_text()),
    }
    out = _python(image, LAMBDA_SCRIPT, stdin=json.dumps(request), extra_env={"AWS_DEFAULT_REGION": "us-east-1"})
    translate, health = out["responses"]
    assert translate["statusCode"] == 200, translate
    assert isinstance(json.loads(translate["body"])["translation"], str)
    assert health["statusCode"] == 200 and json.loads(health["body"])["warm"] is True, health
    assert out["loaded"] == [] and out["cold_start"]["error"] is None
    added = image.packages_mb + image.app_mb + image.bundle_mb
    print(
        f"\ncsanmt lambda image (tiny CSANMT bundle): packages {image.packages_mb:.1f} MB, app {image.app_mb:.2f} MB, "
        f"bundle {image.bundle_mb:.1f} MB = {added:.1f} MB; cold start {out['cold_start']}"
    )
