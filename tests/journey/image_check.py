"""``make image-check``: the product's whole path on this machine, walked as a user walks it, with real images.

    python -m tests.journey.image_check [--base-image IMAGE] [--keep]

1. checkpoints a user can have: a tiny random Marian (the suite's own maker) and a tiny random CSANMT in
   ModelScope's layout (written by modelscope's own model code), each exported with ``make model`` (the Marian
   with looser INT8 limits through ``VERIFY_ARGS``, as a user of a small model would);
2. each of those bundles and the shipped default baked into both images with ``make image BUNDLE=...`` /
   ``make image-gcp BUNDLE=...`` (buildah, on a stand-in base image made with ``tests/journey/stand_in_base.sh``
   unless ``--base-image`` names one), each image's size over its base printed;
3. every image run with its own entry point and called: the Lambda image through a Lambda Runtime API on loopback
   (a Function URL event for ``POST /translate`` and ``GET /healthz``), the Cloud Run image over HTTP; ``/healthz``
   must name the baked model and its family; the Lambda image run again with the command a streaming Function URL
   sets (``FunctionUrlInvokeMode: RESPONSE_STREAM``) must stream a 40-sentence ``"stream": true`` translation in
   the Runtime API's streaming mode, its first segment arriving well before the decoding ends; the Cloud Run image
   must stream the same translation as NDJSON over HTTP, read line by line, the same way, and translate one file
   of every format with a samples module (``tests/formats``: ``.pptx``, ``.xlsx``, ``.xlf``, ``.po``, ``.odt``,
   ``.epub``) through LibreTranslate's ``/translate_file``, each read back with the user's library;
4. every deploy target with ``DEPLOY`` unset: the printed commands must carry the chosen bundle;
5. the staged Cloud Functions source of the CSANMT bundle installed into a clean venv from its own
   requirements.txt, served by functions-framework from that folder, translating;
6. a large upload completing through the Cloud Run recipe's three services (the cloudrun image with each service's
   env file as ``deploy.sh env`` writes it) on the Cloud Storage emulator, Eventarc's deliveries played by this
   script: every object finalized in a bucket is delivered to the service triggered on that bucket.

Exit status 0 when every check passed; the first failure stops the run with what it saw. The figures printed at the
end (build time, size over the base, time to the first answer) are the ones the README quotes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.adapters.lambda_runtime_api import LambdaRuntimeApi, read_function_url_stream
from tests.conftest import build_tiny_marian
from tests.csanmt import oracle
from tests.csanmt.conftest import tiny_request
from tests.events import FUNCTION_URL, GCS_OBJECT_FINALIZED, load_event

REPO_ROOT = Path(__file__).resolve().parents[2]
STAND_IN_BASE = REPO_ROOT / "tests" / "journey" / "stand_in_base.sh"
DEFAULT_STAND_IN = "localhost/stand-in-python:3.11-slim"
PREFIX = "journey"  # bundle folders model_artifacts/journey-*, containers journey-*
IMAGE_PREFIX = "localhost/image-check"  # images localhost/image-check-<bundle folder>:<target>
# The Marian limits a user of a tiny random model passes (tests/conftest.py measures why they are needed)
TINY_MARIAN_VERIFY_ARGS = "--min-int8-top1-agreement 0.75 --min-int8-exact-match 0.15"
SENTENCE = "今天天气很好，我们去公园散步吧。"
TARGETS = ("lambda", "cloudrun")
LAMBDA_RUNTIME_API = "AWS_LAMBDA_RUNTIME_API"
STREAMING_HANDLER = "handler.adapters.aws_lambda.streaming_handler"  # the template's RESPONSE_STREAM command
STREAMED_SENTENCES = 40


class CheckFailed(Exception):
    """One step of the journey did not do what a user needs."""


def say(message: str) -> None:
    print(f"[image-check {time.strftime('%H:%M:%S')}] {message}", flush=True)


COMMAND_LOG: list[Path] = []  # main() names the file every command's whole output is appended to


def run(
    command: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path = REPO_ROOT, timeout: float = 1800
) -> str:
    """Run a command a user would type; its output is returned (and shown when it fails; all of it in the log)."""
    completed = subprocess.run(
        list(command), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    for path in COMMAND_LOG:
        with path.open("a", encoding="utf-8") as log:
            log.write(f"$ {' '.join(command)}\n(exit {completed.returncode})\n{completed.stdout}\n{completed.stderr}\n")
    if completed.returncode != 0:
        shown = f"{completed.stdout[-4000:]}\n{completed.stderr[-4000:]}"
        raise CheckFailed(f"`{' '.join(command)}` exited {completed.returncode}:\n{shown}")
    return completed.stdout


def make(*arguments: str, timeout: float = 1800) -> str:
    return run(["make", "--no-print-directory", *arguments], timeout=timeout)


# --- the engine ------------------------------------------------------------------------------------------------
def image_bytes(image: str) -> int:
    return int(run(["podman", "image", "inspect", "--format", "{{.Size}}", image]).strip())


def image_config(image: str) -> dict[str, Any]:
    return json.loads(run(["podman", "image", "inspect", "--format", "{{json .Config}}", image]))  # type: ignore[no-any-return]


@dataclass
class Container:
    """One running container (``buildah run --isolation chroot``: the host's network, so loopback is shared)."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    started: float

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=20)
        subprocess.run(["buildah", "rm", self.name], capture_output=True, check=False)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-6000:]


def start_container(image: str, env: dict[str, str], log_dir: Path, cmd: list[str] | None = None) -> Container:
    """Run ``image``'s own entry point and command (or ``cmd``, as Lambda's ImageConfig.Command replaces it), as its
    user, with ``env`` added to the image's environment."""
    config = image_config(image)
    command = [*(config.get("Entrypoint") or []), *(cmd if cmd is not None else config.get("Cmd") or [])]
    name = f"{PREFIX}-{uuid.uuid4().hex[:10]}"
    run(["buildah", "from", "--pull=never", "--name", name, image])
    arguments = ["buildah", "run", "--isolation", "chroot"]
    if config.get("User"):
        arguments += ["--user", str(config["User"])]
    for key, value in env.items():
        arguments += ["--env", f"{key}={value}"]
    log = log_dir / f"{name}.log"
    process = subprocess.Popen(
        [*arguments, name, "--", *command],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stop() ends the server and buildah together
    )
    return Container(name, process, log, time.perf_counter())


# --- HTTP, as a client sees it ---------------------------------------------------------------------------------
def http(method: str, url: str, body: bytes = b"", headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body or None, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def wait_healthy(url: str, container: Container, timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if container.process.poll() is not None:
            raise CheckFailed(f"the container exited ({container.process.returncode}):\n{container.output()}")
        try:
            status, body = http("GET", f"{url}/healthz")
            if status == 200:
                return json.loads(body)  # type: ignore[no-any-return]
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.2)
    raise CheckFailed(f"{url}/healthz did not answer 200 within {timeout:.0f} s:\n{container.output()}")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def translate_body() -> bytes:
    return json.dumps({"text": SENTENCE}).encode("utf-8")


# --- the bundles a user builds -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Bundle:
    folder: str  # model_artifacts/<name>
    name: str  # the manifest's
    family: str


def read_bundle(folder: str) -> Bundle:
    manifest = json.loads((REPO_ROOT / folder / "manifest.json").read_text(encoding="utf-8"))
    return Bundle(folder, manifest["name"], manifest.get("family", "marian"))


CALIBRATE = "CALIBRATE_PAIRS=120"  # enough for the held-out split; a tiny random model needs no more


def build_bundles(work: Path) -> list[Bundle]:
    """``make model`` on a tiny Marian and a tiny CSANMT checkpoint: the bundles land in model_artifacts/."""
    began = time.perf_counter()
    marian_dir = build_tiny_marian(work / "tiny-marian")
    csanmt_dir = work / "tiny-csanmt"
    oracle.make_tiny(csanmt_dir, tiny_request())
    say(f"checkpoints made in {time.perf_counter() - began:.0f} s: {marian_dir} (Marian), {csanmt_dir} (CSANMT)")
    bundles = []
    for checkpoint, name, extra in (
        (marian_dir, f"{PREFIX}-marian", [f"VERIFY_ARGS={TINY_MARIAN_VERIFY_ARGS}", CALIBRATE]),
        (csanmt_dir, f"{PREFIX}-csanmt", [CALIBRATE]),
    ):
        began = time.perf_counter()
        make("model", f"MODEL={checkpoint}", f"NAME={name}", "FORCE=1", *extra)
        bundle = read_bundle(f"model_artifacts/{name}")
        ignored = subprocess.run(["git", "check-ignore", "-q", f"{bundle.folder}/manifest.json"], cwd=REPO_ROOT)
        if ignored.returncode != 0:
            raise CheckFailed(f"{bundle.folder}, written by make model, is not ignored by git")
        say(
            f"make model MODEL={checkpoint.name} NAME={name}: {bundle.family} bundle {bundle.name!r} "
            f"in {time.perf_counter() - began:.0f} s (git-ignored)"
        )
        bundles.append(bundle)
    return bundles


# --- the images ------------------------------------------------------------------------------------------------
@dataclass
class Figures:
    bundle: Bundle
    target: str
    build_s: float
    added_mb: float
    first_answer_s: float = 0.0
    request_ms: float = 0.0
    translation: str = ""


def build_image(bundle: Bundle, target: str, base_image: str, base_mb: float) -> Figures:
    image = f"{IMAGE_PREFIX}-{Path(bundle.folder).name}"
    began = time.perf_counter()
    make(
        "image" if target == "lambda" else "image-gcp",
        f"BUNDLE={bundle.folder}",
        f"IMAGE={image}",
        f"BASE_IMAGE={base_image}",
        "CONTAINER=buildah",
    )
    built = time.perf_counter() - began
    added = image_bytes(f"{image}:{target}") / 1e6 - base_mb
    say(f"{image}:{target} built in {built:.0f} s, {added:.1f} MB over the base")
    return Figures(bundle, target, built, added)


def image_name(figures: Figures) -> str:
    return f"{IMAGE_PREFIX}-{Path(figures.bundle.folder).name}:{figures.target}"


def check_health(report: dict[str, Any], bundle: Bundle, where: str) -> None:
    if report.get("model") != bundle.name or report.get("family") != bundle.family:
        raise CheckFailed(
            f"{where}: /healthz names model {report.get('model')!r} family {report.get('family')!r}; "
            f"the baked bundle is {bundle.name!r} ({bundle.family})"
        )
    if report.get("confidence_calibrated") is not True:  # make model calibrated it; the image must carry that
        raise CheckFailed(f"{where}: /healthz says the confidence is not calibrated: {report!r}")


def check_translation(status: int, body: bytes, where: str) -> str:
    if status != 200:
        raise CheckFailed(f"{where}: POST /translate answered {status}: {body[:500]!r}")
    translation = json.loads(body)["translation"]
    if not isinstance(translation, str) or not translation.strip():
        raise CheckFailed(f"{where}: POST /translate answered an empty translation: {body[:500]!r}")
    return translation


def function_url_event(method: str, path: str, body: bytes = b"") -> dict[str, Any]:
    from tests.adapters.conftest import http_event

    headers = {"content-type": "application/json"} if body else {}
    return http_event(FUNCTION_URL, method, path, headers, body)


def lambda_env(api: LambdaRuntimeApi) -> dict[str, str]:
    return {
        LAMBDA_RUNTIME_API: api.address,
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_LAMBDA_FUNCTION_NAME": "zh-en-translate",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "2048",
    }


def run_lambda_image(figures: Figures, log_dir: Path) -> None:
    api = LambdaRuntimeApi().start()
    container = start_container(image_name(figures), lambda_env(api), log_dir)
    try:
        outcome, payload = api.invoke(function_url_event("POST", "/translate", translate_body()), timeout_s=300)
        figures.first_answer_s = time.perf_counter() - container.started
        if outcome != "response":
            raise CheckFailed(f"{image_name(figures)}: the invocation failed: {payload}\n{container.output()}")
        body = payload["body"].encode("utf-8")
        figures.translation = check_translation(payload["statusCode"], body, image_name(figures))
        began = time.perf_counter()
        outcome, payload = api.invoke(function_url_event("POST", "/translate", translate_body()))
        figures.request_ms = (time.perf_counter() - began) * 1000
        outcome, payload = api.invoke(function_url_event("GET", "/healthz"))
        if outcome != "response" or payload["statusCode"] != 200:
            raise CheckFailed(f"{image_name(figures)}: GET /healthz: {outcome} {payload}")
        check_health(json.loads(payload["body"]), figures.bundle, image_name(figures))
    finally:
        container.stop()
        api.stop()


def streamed_text() -> str:
    """The first sentences of the repository's dev set, one text."""
    import gzip

    with gzip.open(REPO_ROOT / "data" / "corpus" / "dev.zh-en.tsv.gz", "rt", encoding="utf-8") as lines:
        return "".join(line.split("\t", 1)[0] for _, line in zip(range(STREAMED_SENTENCES), lines, strict=False))


def run_lambda_image_streaming(figures: Figures, log_dir: Path) -> None:
    """The Lambda image with the streaming Function URL's command: a ``"stream": true`` translation arrives in the
    Runtime API's streaming mode, prelude first, its first segment well before the decoding ends."""
    where = f"{image_name(figures)} ({STREAMING_HANDLER})"
    api = LambdaRuntimeApi().start()
    container = start_container(image_name(figures), lambda_env(api), log_dir, cmd=[STREAMING_HANDLER])
    try:
        body = json.dumps({"text": streamed_text(), "stream": True}, ensure_ascii=False).encode("utf-8")
        invocation = api.start_invocation(function_url_event("POST", "/translate", body))
        try:
            answer = read_function_url_stream(invocation, timeout_s=600)
        except (AssertionError, TimeoutError) as error:
            raise CheckFailed(f"{where}: no streamed answer: {error}\n{container.output()}") from None
        mode = invocation.headers.get("lambda-runtime-function-response-mode")
        if mode != "streaming" or answer.prelude.get("statusCode") != 200:
            raise CheckFailed(f"{where}: response mode {mode!r}, prelude {answer.prelude!r}")
        kinds = [line["type"] for _, line in answer.lines]
        if not kinds or kinds[-1] != "done" or "segment" not in kinds:
            raise CheckFailed(f"{where}: the stream's lines were {kinds[-5:]} ... {answer.lines[-1:]!r}")
        try:
            waited, decoding_s = answer.streamed_while_decoding()
        except AssertionError as error:
            raise CheckFailed(f"{where}: {error}") from None
        say(
            f"{where} streamed {kinds.count('segment')} segments: the first {waited:.2f} s before the last line, "
            f"of a {decoding_s:.2f} s translation"
        )
    finally:
        container.stop()
        api.stop()


def run_cloudrun_image(figures: Figures, log_dir: Path) -> None:
    port = free_port()
    container = start_container(image_name(figures), {"PORT": str(port), "HOST": "127.0.0.1"}, log_dir)
    url = f"http://127.0.0.1:{port}"
    try:
        report = wait_healthy(url, container)
        check_health(report, figures.bundle, image_name(figures))
        status, body = http("POST", f"{url}/translate", translate_body(), {"Content-Type": "application/json"})
        figures.first_answer_s = time.perf_counter() - container.started
        figures.translation = check_translation(status, body, image_name(figures))
        began = time.perf_counter()
        http("POST", f"{url}/translate", translate_body(), {"Content-Type": "application/json"})
        figures.request_ms = (time.perf_counter() - began) * 1000
        check_cloudrun_stream(url, image_name(figures))
        check_every_format(url, image_name(figures))
    finally:
        container.stop()


def check_every_format(url: str, where: str) -> None:
    """One file of every format with a samples module (``tests/formats``) through LibreTranslate's
    ``/translate_file`` in the running image (its own lxml and polib), read back with the user's library."""
    import requests

    from tests.formats.samples import sample_documents, samples_for

    for name, data in sample_documents().items():
        reply = requests.post(
            f"{url}/translate_file", files={"file": (name, data)}, data={"source": "zh", "target": "en"}, timeout=300
        )
        if reply.status_code != 200:
            raise CheckFailed(f"{where}: /translate_file of {name} answered {reply.status_code}: {reply.text[:500]}")
        download = requests.get(reply.json()["translatedFileUrl"], timeout=60)
        samples = samples_for(name)
        assert samples is not None
        before, after = samples.inspect(data), samples.inspect(download.content)
        if download.status_code != 200 or after.structure != before.structure:
            raise CheckFailed(f"{where}: the translation of {name} lost its structure ({download.status_code})")
    say(f"{where} translated a {', '.join(sample_documents())} through /translate_file, structure kept")


def check_cloudrun_stream(url: str, where: str) -> None:
    """A 40-sentence ``"stream": true`` translation from the Cloud Run image's server, read line by line as it
    arrives: NDJSON (its media type, chunked, one JSON event a line, ``done`` last, a line per segment), the first
    segment line well before the ``done`` line (at least a quarter of the decoding after the first window; an answer
    sent whole once decoded has every line arrive at once)."""
    from http.client import HTTPConnection  # (this module's http() is the buffered client)

    host, port = url.removeprefix("http://").split(":")
    connection = HTTPConnection(host, int(port), timeout=600)
    lines: list[tuple[float, dict[str, Any]]] = []
    try:
        body = json.dumps({"text": streamed_text(), "stream": True}, ensure_ascii=False).encode("utf-8")
        connection.request("POST", "/translate", body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        content_type, framing = response.getheader("Content-Type", ""), response.getheader("Transfer-Encoding", "")
        if response.status != 200 or not content_type.startswith("application/x-ndjson") or framing != "chunked":
            raise CheckFailed(
                f"{where}: a streamed POST /translate answered {response.status} {content_type!r} (Transfer-Encoding "
                f"{framing!r}): {response.read()[:500]!r}"
            )
        while line := response.readline():
            try:
                event = json.loads(line)
                kind = event["type"]
            except (ValueError, TypeError, KeyError):
                raise CheckFailed(f"{where}: the stream has a line that is no NDJSON event: {line[:300]!r}") from None
            lines.append((time.perf_counter(), event))
            if kind in ("done", "error"):
                break
        trailing = response.read()
    finally:
        connection.close()
    kinds = [event["type"] for _, event in lines]
    if not kinds or kinds[-1] != "done" or trailing:
        raise CheckFailed(f"{where}: the stream did not end with its done line: {kinds[-5:]} {trailing[:200]!r}")
    segments = [(arrived, event) for arrived, event in lines if event["type"] == "segment"]
    progress = [event for _, event in lines if event["type"] == "progress"]
    done_at, done = lines[-1]
    if not segments or not progress or len(segments) != done["segments"]:
        raise CheckFailed(f"{where}: {len(segments)} segment lines, {len(progress)} progress lines; done says {done}")
    decoding_s = done["elapsed_ms"] / 1000
    first_share = progress[0]["done"] / progress[0]["total"]
    waited = done_at - segments[0][0]
    if waited < 0.25 * (1 - first_share) * decoding_s:
        raise CheckFailed(
            f"{where}: the first segment arrived {waited:.3f} s before the done line, of a {decoding_s:.3f} s "
            f"decoding whose first window was {first_share:.0%} of the text: the answer was not streamed"
        )
    say(
        f"{where} streamed {len(segments)} segments as NDJSON: the first {waited:.2f} s before the done line, of a "
        f"{decoding_s:.2f} s translation"
    )


# --- the deploy targets ----------------------------------------------------------------------------------------
def check_deploy_targets(bundle: Bundle) -> None:
    """Every deploy target, DEPLOY unset: the printed commands carry the chosen bundle."""
    aws = make("deploy-aws", f"BUNDLE={bundle.folder}")
    for command in ("sam build", "sam deploy"):
        line = next((line for line in aws.splitlines() if line.startswith(command)), "")
        if f"Bundle={bundle.folder}" not in line:
            raise CheckFailed(f"make deploy-aws BUNDLE={bundle.folder}: `{command}` does not carry it:\n{aws}")
    functions = make("deploy-gcp", f"BUNDLE={bundle.folder}")
    stage = next((line for line in functions.splitlines() if "infra/gcp/deploy.sh stage" in line), "")
    if not stage.startswith(f"BUNDLE={bundle.folder} "):
        raise CheckFailed(f"make deploy-gcp BUNDLE={bundle.folder} does not stage that bundle:\n{functions}")
    cloudrun = make("deploy-cloudrun", f"BUNDLE={bundle.folder}")
    if f"make image-gcp BUNDLE={bundle.folder}" not in cloudrun:
        raise CheckFailed(
            f"make deploy-cloudrun BUNDLE={bundle.folder} does not build that bundle's image:\n{cloudrun}"
        )
    services = [line for line in cloudrun.splitlines() if line.startswith("gcloud run deploy")]
    if [line.split("--env-vars-file ")[-1].strip("'\"").split("/")[-1] for line in services] != [
        f"env-run-{service}.yaml" for service in ("http", "files", "parts")
    ]:
        raise CheckFailed(f"make deploy-cloudrun does not deploy the http, files and parts services:\n{cloudrun}")
    triggers = [line for line in cloudrun.splitlines() if line.startswith("gcloud eventarc triggers create")]
    if len(triggers) != 2 or not any("bucket=<OUTPUT_BUCKET>" in line for line in triggers):
        raise CheckFailed(f"make deploy-cloudrun does not trigger the parts service on the output bucket:\n{cloudrun}")
    say(f"deploy-aws, deploy-gcp and deploy-cloudrun print commands that ship {bundle.folder}")


def check_staged_functions_source(bundle: Bundle, work: Path, log_dir: Path) -> float:
    """The Cloud Functions source deploy.sh stages, installed as the buildpack would, loads and serves the bundle."""
    stage = work / "gcf-stage"
    run(["bash", "infra/gcp/deploy.sh", "stage", str(stage)], env={**os.environ, "BUNDLE": bundle.folder})
    venv = work / "gcf-venv"
    began = time.perf_counter()
    run([sys.executable, "-m", "venv", str(venv)])
    run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "-r",
            str(stage / "source" / "requirements.txt"),
        ],
        timeout=1200,
    )
    installed = time.perf_counter() - began
    port = free_port()
    log = log_dir / "gcf-source.log"
    clean_env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(work), "LANG": "C.UTF-8"}
    server = subprocess.Popen(
        [
            str(venv / "bin" / "functions-framework"),
            "--source",
            "main.py",
            "--target",
            "translate_http",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=stage / "source",
        env=clean_env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    started = time.perf_counter()
    stand_in = Container("", server, log, started)
    try:
        url = f"http://127.0.0.1:{port}"
        check_health(wait_healthy(url, stand_in), bundle, "staged Cloud Functions source")
        status, body = http("POST", f"{url}/translate", translate_body(), {"Content-Type": "application/json"})
        translation = check_translation(status, body, "staged Cloud Functions source")
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=20)
    say(
        f"staged Cloud Functions source of {bundle.folder}: installed in a clean venv in {installed:.0f} s, "
        f"served {translation!r}"
    )
    return installed


# --- the Cloud Run recipe on the Cloud Storage emulator --------------------------------------------------------
def recipe_env(work: Path, output_bucket: str) -> dict[str, dict[str, str]]:
    """Each Cloud Run service's settings, from the env files ``deploy.sh`` writes for it."""
    import yaml

    folder = work / "run-env"
    run(
        ["bash", "infra/gcp/deploy.sh", "env", str(folder)],
        env={**os.environ, "PLATFORM": "run", "OUTPUT_BUCKET": output_bucket, "INPUT_BUCKET": "journey-uploads"},
    )
    return {
        service: {
            key: str(value) for key, value in yaml.safe_load((folder / f"env-run-{service}.yaml").read_text()).items()
        }
        for service in ("http", "files", "parts")
    }


@contextmanager
def storage_emulator() -> Iterator[str]:
    from gcp_storage_emulator.server import create_server

    port = free_port()
    server = create_server("127.0.0.1", port, in_memory=True)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def finalized(bucket: str, name: str, generation: str) -> tuple[dict[str, str], bytes]:
    """The binary-mode CloudEvent Eventarc delivers to a Cloud Run service for a finalized object."""
    event = load_event(GCS_OBJECT_FINALIZED)
    data = {
        **event["data"],
        "bucket": bucket,
        "name": name,
        "id": f"{bucket}/{name}/{generation}",
        "generation": generation,
    }
    headers = {
        "Content-Type": "application/json",
        "ce-specversion": "1.0",
        "ce-id": uuid.uuid4().hex,
        "ce-source": f"//storage.googleapis.com/projects/_/buckets/{bucket}",
        "ce-type": event["type"],
        "ce-subject": f"objects/{name}",
        "ce-time": event["time"],
    }
    return headers, json.dumps(data).encode("utf-8")


def large_upload_through_cloud_run(image: str, work: Path, log_dir: Path) -> tuple[int, float]:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    from tests.adapters.test_fan_out import book

    part_chars = 1_500  # the one setting changed from env.yaml's: small parts, so a short book fans out
    uploads, output = f"up-{uuid.uuid4().hex[:8]}", f"out-{uuid.uuid4().hex[:8]}"
    settings = recipe_env(work, output)
    with storage_emulator() as emulator:
        client = storage.Client(
            project="journey", credentials=AnonymousCredentials(), client_options={"api_endpoint": emulator}
        )
        client.create_bucket(uploads)
        client.create_bucket(output)
        services: dict[str, tuple[Container, str]] = {}
        try:
            for service in ("files", "parts"):
                port = free_port()
                env = {
                    **settings[service],
                    "PORT": str(port),
                    "HOST": "127.0.0.1",
                    "STORAGE_EMULATOR_HOST": emulator,
                    "GOOGLE_CLOUD_PROJECT": "journey",
                    "TRANSLATE_PART_CHARS": str(part_chars),
                }
                container = start_container(image, env, log_dir)
                services[service] = (container, f"http://127.0.0.1:{port}")
            for container, url in services.values():
                wait_healthy_event_service(url, container)
            text = book(4_000)
            blob = client.bucket(uploads).blob("book.txt")
            blob.upload_from_string(text.encode("utf-8"), content_type="text/plain")
            began = time.perf_counter()
            headers, body = finalized(uploads, "book.txt", str(blob.generation or 1))
            status, answer = http("POST", services["files"][1] + "/", body, headers)
            if status != 200:
                raise CheckFailed(
                    f"the files service answered {status}: {answer[:500]!r}\n{services['files'][0].output()}"
                )
            delivered: set[str] = set()
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                blobs = list(client.list_blobs(output))
                names = {item.name for item in blobs}
                if "translated/book.txt" in names and not (set(names) - delivered - {"translated/book.txt"}):
                    break
                for item in blobs:
                    if item.name in delivered:
                        continue
                    delivered.add(item.name)
                    headers, body = finalized(output, item.name, str(item.generation or 1))
                    status, answer = http("POST", services["parts"][1] + "/", body, headers)
                    if status != 200:
                        raise CheckFailed(
                            f"the parts service answered {status} for {item.name}: {answer[:500]!r}\n"
                            f"{services['parts'][0].output()}"
                        )
                time.sleep(0.2)
            result = client.bucket(output).get_blob("translated/book.txt")
            if result is None:
                raise CheckFailed(f"no translated/book.txt in the output bucket after 600 s; it holds {sorted(names)}")
            translated = result.download_as_bytes().decode("utf-8")
            seconds = time.perf_counter() - began
        finally:
            for container, _ in services.values():
                container.stop()
    parts = sum(1 for name in delivered if "/parts/" in name)
    source_paragraphs = [p for p in text.split("\n") if p.strip()]
    if len([p for p in translated.split("\n") if p.strip()]) != len(source_paragraphs) or parts < 2:
        raise CheckFailed(
            f"the assembled translation has {translated.count(chr(10))} lines for "
            f"{len(source_paragraphs)} paragraphs ({parts} parts)"
        )
    say(
        f"a {len(text):,}-character upload fanned out into {parts} parts through the Cloud Run services and was "
        f"assembled in {seconds:.1f} s ({len(source_paragraphs)} paragraphs in, {len(source_paragraphs)} out)"
    )
    return parts, seconds


def wait_healthy_event_service(url: str, container: Container, timeout: float = 180) -> None:
    """An event service answers no /healthz of its own: it is up once its server accepts connections."""
    import socket

    host, port = url.removeprefix("http://").split(":")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if container.process.poll() is not None:
            raise CheckFailed(f"the event service exited ({container.process.returncode}):\n{container.output()}")
        try:
            with socket.create_connection((host, int(port)), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise CheckFailed(f"the event service at {url} did not start within {timeout:.0f} s:\n{container.output()}")


# --- the run ---------------------------------------------------------------------------------------------------
def stand_in_base(name: str) -> str:
    say(f"making the stand-in base image {name} (debootstrap, podman import)")
    print(run(["bash", str(STAND_IN_BASE), name], timeout=900).strip(), flush=True)
    return name


def report(figures: list[Figures], base_image: str, base_mb: float) -> None:
    print(f"\nimages on {base_image} ({base_mb:.1f} MB); sizes are what each image adds to it", flush=True)
    print("| bundle | family | image | build | added to the base | process start → first translation | next request |")
    print("|---|---|---|---|---|---|---|")
    for item in figures:
        print(
            f"| {item.bundle.folder} | {item.bundle.family} | {item.target} | {item.build_s:.0f} s | "
            f"{item.added_mb:.1f} MB | {item.first_answer_s:.2f} s | {item.request_ms:.0f} ms |"
        )
    print(flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.journey.image_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-image", help=f"the Python base image (default: make {DEFAULT_STAND_IN})")
    parser.add_argument("--keep", action="store_true", help="keep the journey's images and bundles afterwards")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="image-check-"))
    log_dir = work / "logs"
    log_dir.mkdir()
    COMMAND_LOG.append(log_dir / "commands.log")
    bundles: list[Bundle] = []
    try:
        base_image = args.base_image or stand_in_base(DEFAULT_STAND_IN)
        base_mb = image_bytes(base_image) / 1e6
        bundles = build_bundles(work)
        every = [read_bundle("model_artifacts/default"), *bundles]
        figures: list[Figures] = []
        for bundle in every:
            for target in TARGETS:
                item = build_image(bundle, target, base_image, base_mb)
                (run_lambda_image if target == "lambda" else run_cloudrun_image)(item, log_dir)
                say(
                    f"{image_name(item)} answered {item.translation!r} {item.first_answer_s:.2f} s after its process "
                    f"started; /healthz names {bundle.name!r} ({bundle.family})"
                )
                if target == "lambda":
                    run_lambda_image_streaming(item, log_dir)
                figures.append(item)
        for bundle in every:
            check_deploy_targets(bundle)
        csanmt = next(bundle for bundle in bundles if bundle.family == "csanmt")
        check_staged_functions_source(csanmt, work, log_dir)
        large_upload_through_cloud_run(f"{IMAGE_PREFIX}-default:cloudrun", work, log_dir)
        report(figures, base_image, base_mb)
    except CheckFailed as failure:
        print(
            f"\nimage-check FAILED: {failure}\n(logs, every command's output in commands.log: {log_dir})",
            file=sys.stderr,
            flush=True,
        )
        return 1
    finally:
        if not args.keep:
            for bundle in bundles:
                shutil.rmtree(REPO_ROOT / bundle.folder, ignore_errors=True)
            names = [
                f"{IMAGE_PREFIX}-{name}:{target}"
                for name in ("default", f"{PREFIX}-marian", f"{PREFIX}-csanmt")
                for target in TARGETS
            ]
            subprocess.run(["buildah", "rmi", *names], capture_output=True, check=False)
    shutil.rmtree(work, ignore_errors=True)
    print(f"image-check passed in {time.perf_counter() - began:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
