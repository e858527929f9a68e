#!/usr/bin/env bash
# Serves the function on this machine (`make run`): functions-framework runs main.py's translate_http, the same
# entry point as Cloud Functions, with the bundle in TRANSLATE_BUNDLE_DIR (default model_artifacts/default).
# Prints the URL and the cold-start timings once the model is loaded and warmed ("ready in ..."); when the model or
# a setting is bad it prints "START FAILED" with the reason instead (never "ready") and keeps serving that reason
# (503 / 500 configuration_error) until stopped; Ctrl+C stops it.
# Usage: HOST=127.0.0.1 PORT=8080 infra/local/run.sh [VENV]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VENV="${1:-.venv-run}"
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8080}"
URL="http://$HOST:$PORT/"
[[ -x "$VENV/bin/functions-framework" ]] || { echo "run.sh: no $VENV/bin/functions-framework (make run installs it)" >&2; exit 2; }

echo "starting the translation function on $URL (loading and warming the model)..."
# A watcher in the background waits for GET /healthz and prints what it says about the cold start; the server
# then replaces this shell (same process id, which the watcher follows), so Ctrl+C reaches it directly.
"$VENV/bin/python" - "$URL" "$$" <<'PY' &
import json, os, sys, time, urllib.error, urllib.request

url, server = sys.argv[1], int(sys.argv[2])
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
            sys.exit(f"no answer from {url}healthz after 300 s")
        time.sleep(0.2)


def find(data, key):
    if isinstance(data, dict):
        if key in data:
            return data[key]
        for value in data.values():
            found = find(value, key)
            if found is not None:
                return found
    return None


timings = (("import_s", "import"), ("load_s", "load"), ("warmup_s", "warm-up"))
parts = [f"{label} {find(health, key):.2f} s" for key, label in timings if isinstance(find(health, key), (int, float))]
if health.get("warm") is not True:
    # never "ready": the server runs (so the page and /healthz show the reason) but cannot translate
    error = health.get("error") or {}
    code, message = error.get("code", "model_unavailable"), error.get("message", json.dumps(health))
    status = 500 if code == "configuration_error" else 503
    print(f"START FAILED after {time.monotonic() - started:.1f} s: {code}: {message}", flush=True)
    print(f"the server at {url} answers every translation {status} {code} until this is fixed and it is "
          "restarted; Ctrl+C stops", flush=True)
    sys.exit(0)
print(f"model: {find(health, 'model')} (bundle {find(health, 'bundle_hash')})", flush=True)
print("cold start: " + (", ".join(parts) if parts else json.dumps(health)), flush=True)
print(f"ready in {time.monotonic() - started:.1f} s: open {url} (API: POST {url}translate, health: GET {url}healthz); "
      "Ctrl+C stops", flush=True)
PY
exec "$VENV/bin/functions-framework" --source main.py --target translate_http --host "$HOST" --port "$PORT"
