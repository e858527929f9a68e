#!/usr/bin/env bash
# Serves the function on this machine (`make run`): functions-framework runs main.py's translate_http, the same
# entry point as Cloud Functions, with the bundle in TRANSLATE_BUNDLE_DIR (default model_artifacts/default).
# Prints the URL and the cold-start timings once the model is loaded and warmed (a JSON line, "event": "ready",
# "message": "ready in ..."); when the model or a setting is bad it prints "START FAILED" with the reason instead
# ("event": "start_failed"; never "ready") and keeps serving that reason (503 / 500 configuration_error) until
# stopped; Ctrl+C stops it.
# Usage: HOST=127.0.0.1 PORT=8080 infra/local/run.sh [VENV]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VENV="${1:-.venv-run}"
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8080}"
URL="http://$HOST:$PORT/"
[[ -x "$VENV/bin/functions-framework" ]] || { echo "run.sh: no $VENV/bin/functions-framework (make run installs it)" >&2; exit 2; }

# A watcher in the background waits for GET /healthz and says what it reports about the cold start; the server
# then replaces this shell (same process id, which the watcher follows), so Ctrl+C reaches it directly. What it
# prints are JSON lines of logger handler.run in the format of every other line (handler/api/access_log.py), each with
# an "event": "starting", then "ready" (url, model, bundle, cold_start timings) or "start_failed" (code, reason,
# status); the "message" says the same for a person. A bundle under a non-commercial licence (the shipped default
# is a CC BY-NC-SA demo; /healthz's "licence", handler/model/licence.py) adds one line just before it, "event":
# "licence_notice": the notice that it is a non-commercial demo and how to build a production model.
"$VENV/bin/python" - "$URL" "$$" <<'PY' &
import json, logging, os, sys, time, urllib.error, urllib.request

from handler.api.access_log import configure_logging

url, server = sys.argv[1], int(sys.argv[2])
configure_logging()
log = logging.getLogger("handler.run")
log.info(f"starting the translation function on {url} (loading and warming the model)...",
         extra={"event": "starting", "url": url})
started = time.monotonic()
while True:
    try:
        os.kill(server, 0)
    except ProcessLookupError:
        sys.exit(0)  # the server stopped; its error is on the terminal already
    try:
        with urllib.request.urlopen(url + "healthz", timeout=5) as response:
            health = json.load(response)
        break
    except urllib.error.HTTPError as error:  # 503: running, but the model could not load
        health = json.load(error)
        break
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        if time.monotonic() - started > 300:
            log.error(f"no answer from {url}healthz after 300 s", extra={"event": "start_failed", "url": url})
            sys.exit(1)
        time.sleep(0.2)

seconds = round(time.monotonic() - started, 1)
cold_start = health.get("cold_start") or {}
licence = health.get("licence") or {}
if licence.get("notice"):  # a non-commercial demo says so, just above the verdict
    log.warning(licence["notice"], extra={"event": "licence_notice", "licence": licence})
if health.get("warm") is not True:
    # never "ready": the server runs (so the page and /healthz show the reason) but cannot translate
    error = health.get("error") or {}
    code, reason = error.get("code", "model_unavailable"), error.get("message", json.dumps(health))
    status = 500 if code == "configuration_error" else 503
    log.error(
        f"START FAILED after {seconds:.1f} s: {code}: {reason} (the server at {url} answers every translation "
        f"{status} {code} until this is fixed and it is restarted; Ctrl+C stops)",
        extra={"event": "start_failed", "url": url, "seconds": seconds, "code": code, "reason": reason,
               "status": status, "cold_start": cold_start},
    )
    sys.exit(0)
timings = (("import_s", "import"), ("load_s", "load"), ("warmup_s", "warm-up"))
parts = [f"{label} {cold_start[key]:.2f} s" for key, label in timings if isinstance(cold_start.get(key), (int, float))]
log.info(
    f"ready in {seconds:.1f} s: model {health.get('model')} (bundle {health.get('bundle_hash')}), cold start: "
    + (", ".join(parts) if parts else "(no timings)")
    + f"; open {url} (API: POST {url}translate, health: GET {url}healthz); Ctrl+C stops",
    extra={"event": "ready", "url": url, "seconds": seconds, "model": health.get("model"),
           "bundle_hash": health.get("bundle_hash"), "bundle_dir": cold_start.get("bundle_dir"),
           "cold_start": cold_start},
)
PY
# gunicorn's threads: requests served at once, whose sentences the process's one decoder batches together (16, as
# the Google Cloud HTTP services' HTTP_CONCURRENCY: docs/deployment.md; functions-framework's own default is 4 a CPU)
export THREADS="${THREADS:-16}"
# glibc gives each of the server's threads its own heap unless told otherwise (8 threads: worker RSS ~167 -> ~125 MB)
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
# functions-framework's server with a keep-alive longer than any client's idle timeout (handler/adapters/gunicorn_server.py)
exec "$VENV/bin/python" -m handler.adapters.gunicorn_server --source main.py --target translate_http --host "$HOST" --port "$PORT"
