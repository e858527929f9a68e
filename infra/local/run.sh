#!/usr/bin/env bash
# Serves the function on this machine (`make run`): functions-framework runs main.py's translate_http, the same
# entry point as Cloud Functions, with the bundle in TRANSLATE_BUNDLE_DIR (default model_artifacts/default).
# Prints the URL and the cold-start timings once the model is loaded and warmed; Ctrl+C stops it.
# Usage: HOST=127.0.0.1 PORT=8080 infra/local/run.sh [VENV]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VENV="${1:-.venv-run}"
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8080}"
URL="http://$HOST:$PORT/"

echo "starting the translation function on $URL (loading and warming the model)..."
"$VENV/bin/functions-framework" --source main.py --target translate_http --host "$HOST" --port "$PORT" &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' INT TERM EXIT

# Wait for GET /healthz, then print what it says about the cold start.
"$VENV/bin/python" - "$URL" "$server" <<'PY'
import json, os, sys, time, urllib.error, urllib.request

url, server = sys.argv[1], int(sys.argv[2])
started = time.monotonic()
while True:
    try:
        os.kill(server, 0)
    except ProcessLookupError:
        sys.exit("the function did not start (its error is above)")
    try:
        with urllib.request.urlopen(url + "healthz", timeout=5) as response:
            health = json.load(response)
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


parts = [f"{label} {find(health, key):.2f} s" for key, label in
         (("import_s", "import"), ("load_s", "load"), ("warmup_s", "warm-up")) if isinstance(find(health, key), (int, float))]
model = find(health, "model")
print(f"model: {model}" if model else "model: (not reported)")
print("cold start: " + (", ".join(parts) if parts else json.dumps(health)))
print(f"ready in {time.monotonic() - started:.1f} s: open {url} (API: POST {url}translate, health: GET {url}healthz); Ctrl+C stops")
PY
wait "$server"
