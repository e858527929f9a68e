#!/usr/bin/env bash
# Deploys the translation function to Google Cloud: as Cloud Functions (2nd gen; PLATFORM=functions, the default,
# `make deploy-gcp`) from a staged source folder, or as Cloud Run services (PLATFORM=run, `make deploy-cloudrun`)
# from the Dockerfile's cloudrun image; either way the same three entry points, triggers and retries:
#   - $FUNCTION_NAME        HTTP trigger: POST /translate, GET /, GET /healthz (entry point translate_http)
#   - $FUNCTION_NAME-files  Cloud Storage "finalized" trigger on $INPUT_BUCKET: every uploaded file is
#                           translated in its format (handler.formats: by suffix, plain text for any other)
#                           into $OUTPUT_BUCKET (entry point translate_storage_event); a file over
#                           TRANSLATE_PART_CHARS characters (any format but HTML and Markdown) is split into
#                           parts under TRANSLATE_WORK_PREFIX in $OUTPUT_BUCKET instead
#   - $FUNCTION_NAME-parts  Cloud Storage "finalized" trigger on $OUTPUT_BUCKET, with retries: translates those
#                           parts concurrently and assembles the output once (entry point translate_part_event)
# On Cloud Run the three are services of one image (FUNCTION_TARGET chooses the entry point) and the two event ones
# get Eventarc triggers on the buckets; the image is built with `make image-gcp BUNDLE=...` and pushed to an
# Artifact Registry repository named $FUNCTION_NAME.
# All: 2 GiB memory, 1 vCPU, the runtime's settings from infra/gcp/env.yaml, and a dedicated service account
# that may read the input bucket and write the output bucket, and write and delete objects only under
# TRANSLATE_DOCUMENT_PREFIX of the input bucket, nothing else. DeepL's document API (POST /v2/document on the HTTP
# function) writes an uploaded document there; its finalize event reaches $FUNCTION_NAME-files, which translates it
# like any upload; the status and result routes read the output bucket (docs/documents.md).
# Failures: both event functions run with --retry and at most FILE_INSTANCES / PART_INSTANCES instances (which
# bounds cost); their Eventarc subscriptions redeliver a failed event with backoff (10 s to 10 min) up to
# MAX_DELIVERY_ATTEMPTS times within MAX_EVENT_AGE, then send it to the dead-letter topic $FUNCTION_NAME-failed-events
# (kept 7 days in its subscription $FUNCTION_NAME-failed-events-kept). The event functions' TRANSLATE_EVENT_TIMEOUT_S
# is their --timeout, so file work stops TRANSLATE_DEADLINE_MARGIN_S before Cloud Functions would stop it; the HTTP
# function's TRANSLATE_REQUEST_TIMEOUT_S is its --timeout, so a request that cannot finish in time is refused at once
# (streamed: ends with an error line) instead of being cut off by the platform.
# Alerts (Cloud Monitoring, docs/operations.md): a message waiting in $FUNCTION_NAME-failed-events-kept, any 5xx
# answer of the three services, and a request that took over 80 % of its --timeout; with ALERT_EMAIL, each mails it.
# Metrics (docs/operations.md): every request's and event's figures are fields of its JSON log line (handler.metrics;
# GOOGLE_CLOUD_PROJECT in the env files lets Cloud Logging tie the lines to their traces), read by log-based metrics
# named $FUNCTION_NAME-<figure> (created, or updated when they exist, from the files `deploy.sh log-metrics DIR` writes).
# Key quotas (USAGE_REDIS=1, docs/operations.md#key-quotas): a Memorystore Redis instance $FUNCTION_NAME-usage (basic
# tier, 1 GB, AUTH on) counts each API key's usage across instances (TRANSLATE_USAGE_STORE, the limits of
# TRANSLATE_API_KEYS' chars= and rate=); only the HTTP service reaches it, through the Serverless VPC Access connector
# $FUNCTION_NAME-usage (egress to private ranges only). Memorystore has no IAM on its data: the AUTH string is the grant.
#
# Usage:   infra/gcp/deploy.sh print        print the commands (what `make deploy-gcp` / `deploy-cloudrun` do)
#          infra/gcp/deploy.sh deploy       run them (`make deploy-gcp DEPLOY=1`)
#          infra/gcp/deploy.sh stage DIR    assemble the deployable Cloud Functions source in DIR (a printed command)
#          infra/gcp/deploy.sh env DIR      write the entry points' env files into DIR (a printed command)
#          infra/gcp/deploy.sh alerts DIR   write the alert policies (JSON) into DIR (a printed command)
#          infra/gcp/deploy.sh usage-store DIR URL   set the HTTP env file's TRANSLATE_USAGE_STORE in DIR (printed)
#          infra/gcp/deploy.sh log-metrics DIR   write the log-based metrics (JSON) into DIR (a printed command)
# `print` prints exactly the commands `deploy` runs (one list, infra/commands.sh): a header naming the variables
# they need (those not given show as <NAME>), the demo bundle's licence notice, then bash lines to run from the
# repository root: STAGE_DIR (given, or a new temporary folder), the staging of the source or the env files (with
# the buckets), the gcloud commands, a create only when describing the resource fails, and the values only Google
# Cloud knows (service agents, the triggers' subscriptions) read into shell variables by the lines that use them.
# Settings (environment variables):
#   BUNDLE                 the bundle to ship: model_artifacts/<name> (what `make model` writes; default: the shipped
#                          model_artifacts/default); a CSANMT bundle brings its tokenizer's requirements along
#   PLATFORM               functions (default) or run
#   GCP_PROJECT            project id (required by `deploy`)
#   GCP_REGION             region of the functions and of the buckets (default: us-central1)
#   INPUT_BUCKET           bucket whose uploads are translated (created when missing; required by `deploy`)
#   OUTPUT_BUCKET          bucket that receives the translations; must differ from INPUT_BUCKET
#   FUNCTION_NAME          default: zh-en-translate
#   ALLOW_UNAUTHENTICATED  1 = public HTTP endpoint; default: callers need roles/run.invoker (send an identity token)
#   PART_INSTANCES         most instances of the parts function, i.e. parts translated at once (default: 100)
#   FILE_INSTANCES         most instances of the file function, i.e. uploads translated at once (default: 100)
#   MAX_DELIVERY_ATTEMPTS  deliveries of a failing event before it goes to the dead-letter topic (5-100; default 5)
#   MAX_EVENT_AGE          how long a failing event is retried at most (10m-7d; default 6h, like the SAM template)
#   USAGE_REDIS            1 = key quotas: the Memorystore instance and connector above, and TRANSLATE_USAGE_STORE
#                          pointing the HTTP service at it; default 0 (keys without limits are counted per instance)
#   ALERT_EMAIL            an e-mail address the alert policies notify (a Cloud Monitoring e-mail channel); default:
#                          none, the policies open incidents in the console and mail no one
#   STAGE_DIR              where the commands assemble the source, env files and alert policies (default: a new
#                          temporary folder)
#   CONTAINER, BASE_IMAGE  (Cloud Run) the engine and base image of `make image-gcp`, carried into the printed lines
# Needs the Google Cloud CLI (gcloud), logged in with rights to create functions, buckets, IAM bindings and alert
# policies (and notification channels, with ALERT_EMAIL).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DOCUMENT_PREFIX="$(sed -n 's/^TRANSLATE_DOCUMENT_PREFIX: "\(.*\)"$/\1/p' "$REPO_ROOT/infra/gcp/env.yaml")"
# shellcheck source=../bundle.sh
source "$REPO_ROOT/infra/bundle.sh"
# shellcheck source=../commands.sh
source "$REPO_ROOT/infra/commands.sh"
MODE="${1:-print}"
PLATFORM="${PLATFORM:-functions}"

PROJECT="${GCP_PROJECT:-}"
REGION="${GCP_REGION:-us-central1}"
INPUT="${INPUT_BUCKET:-}"
OUTPUT="${OUTPUT_BUCKET:-}"
NAME="${FUNCTION_NAME:-zh-en-translate}"
RUNTIME="python311"            # the Python of requirements/runtime-gcp.txt
MEMORY="2Gi"
CPU="1"
HTTP_TIMEOUT="300s"
# requests one HTTP instance serves at once, and gunicorn's threads to hold them: the process's one decoder batches
# them together; past this the platform starts another instance instead of queueing (docs/deployment.md, measured)
HTTP_CONCURRENCY="${HTTP_CONCURRENCY:-16}"
FILES_TIMEOUT_S=540            # the longest a 2nd gen event-driven function may run
FILES_TIMEOUT="${FILES_TIMEOUT_S}s"
FINALIZED="google.cloud.storage.object.v1.finalized"
PART_INSTANCES="${PART_INSTANCES:-100}"  # the fan-out's concurrency: parts translated at once, at most
FILE_INSTANCES="${FILE_INSTANCES:-100}"
MAX_DELIVERY_ATTEMPTS="${MAX_DELIVERY_ATTEMPTS:-5}"
MAX_EVENT_AGE="${MAX_EVENT_AGE:-6h}"
DEAD_LETTERS="$NAME-failed-events"
EMAIL="${ALERT_EMAIL:-}"
TIMEOUT_ALERT_PERCENT=80       # a request that took longer than this share of its --timeout opens an incident
USAGE_REDIS="${USAGE_REDIS:-0}"
USAGE_NAME="${NAME:0:19}-usage"  # the Memorystore instance and the VPC connector (a connector's name: 25 at most)

die() { echo "deploy.sh: $*" >&2; exit 2; }
[[ "$PLATFORM" == functions || "$PLATFORM" == run ]] || die "PLATFORM must be functions (Cloud Functions) or run (Cloud Run); got '$PLATFORM'"
SHIPPED="$(bundle_path "${BUNDLE:-}")" || exit 2
FAMILY="$(bundle_family "$SHIPPED")" || exit 2
[[ "$MAX_DELIVERY_ATTEMPTS" =~ ^[0-9]+$ ]] && (( MAX_DELIVERY_ATTEMPTS >= 5 && MAX_DELIVERY_ATTEMPTS <= 100 )) \
    || die "MAX_DELIVERY_ATTEMPTS must be a number from 5 to 100 (Pub/Sub's dead-letter limits); got '$MAX_DELIVERY_ATTEMPTS'"
[[ "$MAX_EVENT_AGE" =~ ^[0-9]+[smhd]$ ]] || die "MAX_EVENT_AGE must be a duration such as 6h, 30m or 7d; got '$MAX_EVENT_AGE'"
[[ "$FILE_INSTANCES" =~ ^[1-9][0-9]*$ && "$PART_INSTANCES" =~ ^[1-9][0-9]*$ ]] \
    || die "FILE_INSTANCES and PART_INSTANCES must be positive numbers"
[[ "$HTTP_CONCURRENCY" =~ ^[1-9][0-9]*$ ]] && (( HTTP_CONCURRENCY <= 1000 )) \
    || die "HTTP_CONCURRENCY must be a number from 1 to 1000 (Cloud Run's and Cloud Functions' limits); got '$HTTP_CONCURRENCY'"
[[ "$USAGE_REDIS" == 0 || "$USAGE_REDIS" == 1 ]] || die "USAGE_REDIS must be 0 or 1; got '$USAGE_REDIS'"
[[ -z "$EMAIL" || "$EMAIL" =~ ^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]+$ ]] \
    || die "ALERT_EMAIL must be one e-mail address; got '$EMAIL'"

requirements() {  # the runtime's lock file, plus the family's own (CSANMT's tokenizer) without repeating a pin
    python3 - "$REPO_ROOT/requirements/runtime-gcp.txt" \
        $([[ "$FAMILY" == csanmt ]] && echo "$REPO_ROOT/requirements/csanmt.txt") <<'PY'
import re, sys
seen = set()
for path in sys.argv[1:]:
    keep = True
    for line in open(path, encoding="utf-8").read().splitlines():
        pin = re.match(r"([A-Za-z0-9_.-]+)==", line)
        if pin:
            name = pin.group(1).lower().replace("_", "-")
            keep = name not in seen  # the same package in both lock files: pinned alike (checked by the tests)
            seen.add(name)
        elif not line.startswith(" "):
            keep = True
        if keep:
            print(line)
PY
}

env_files() {  # DIR: the runtime settings of the HTTP entry point and of the two event entry points
    local dir="$1"
    mkdir -p "$dir"
    {
        cat "$REPO_ROOT/infra/gcp/env.yaml"
        printf 'GOOGLE_CLOUD_PROJECT: "%s"\n' "$PROJECT"  # the access lines' trace field names the project
        printf 'TRANSLATE_OUTPUT_BUCKET: "%s"\n' "$OUTPUT"  # document records and translations
        printf 'TRANSLATE_DOCUMENT_BUCKET: "%s"\n' "$INPUT"  # uploaded documents, translated by the files function
        printf 'TRANSLATE_EVENT_TIMEOUT_S: "%s"\n' "${HTTP_TIMEOUT%s}"  # /translate_file's time: the --timeout
        printf 'TRANSLATE_REQUEST_TIMEOUT_S: "%s"\n' "${HTTP_TIMEOUT%s}"  # every request's deadline: the --timeout
        printf 'THREADS: "%s"\n' "$HTTP_CONCURRENCY"  # functions-framework's gunicorn threads: one per request at once
    } > "$dir/env-http.yaml"
    {
        cat "$REPO_ROOT/infra/gcp/env.yaml"
        printf 'GOOGLE_CLOUD_PROJECT: "%s"\n' "$PROJECT"
        printf 'TRANSLATE_OUTPUT_BUCKET: "%s"\n' "$OUTPUT"
        printf 'TRANSLATE_DOCUMENT_BUCKET: "%s"\n' "$INPUT"  # its documents' uploads get their records' options
        printf 'TRANSLATE_EVENT_TIMEOUT_S: "%s"\n' "$FILES_TIMEOUT_S"  # the event functions' --timeout
    } > "$dir/env-files.yaml"
    if [[ "$PLATFORM" == run ]]; then  # one image, three services: FUNCTION_TARGET chooses the entry point
        local target
        for target in http files parts; do
            cp "$dir/env-$([[ $target == http ]] && echo http || echo files).yaml" "$dir/env-run-$target.yaml"
        done
        printf 'FUNCTION_TARGET: "translate_http"\n' >> "$dir/env-run-http.yaml"
        printf 'FUNCTION_TARGET: "translate_storage_event"\n' >> "$dir/env-run-files.yaml"
        printf 'FUNCTION_TARGET: "translate_part_event"\n' >> "$dir/env-run-parts.yaml"
    fi
}

alert_policies() {  # DIR: the alert policies as Cloud Monitoring's AlertPolicy JSON, labelled deployment=$NAME
    local dir="$1"
    mkdir -p "$dir"
    python3 - "$dir" "$NAME" "$DEAD_LETTERS-kept" "${HTTP_TIMEOUT%s}" "$FILES_TIMEOUT_S" "$TIMEOUT_ALERT_PERCENT" <<'PY'
import json, sys
folder, name, kept, http_timeout, event_timeout, percent = sys.argv[1:]
services = {"http": [name], "events": [f"{name}-files", f"{name}-parts"]}

def runs(names):  # Cloud Functions (2nd gen) report their requests as the Cloud Run service of the same name
    return 'resource.type = "cloud_run_revision" AND resource.label.service_name = one_of({})'.format(
        ", ".join(json.dumps(n) for n in names))

guide = "What to do: docs/operations.md#{} in the repository.".format

def threshold(display, filter_, value, aggregation):
    return {"displayName": display, "conditionThreshold": {
        "filter": filter_, "aggregations": [aggregation], "comparison": "COMPARISON_GT",
        "thresholdValue": value, "duration": "0s", "trigger": {"count": 1}}}

def policy(display, conditions, text):
    return {"displayName": f"{name}: {display}", "userLabels": {"deployment": name}, "combiner": "OR",
            "conditions": conditions, "documentation": {"content": text, "mimeType": "text/markdown"}}

def latency(service_names, timeout_s):
    limit_ms = int(timeout_s) * int(percent) * 10  # percent of the --timeout, in milliseconds
    return threshold(
        f"{' and '.join(service_names)}: 99th percentile latency over {percent} % of the {timeout_s} s timeout",
        runs(service_names) + ' AND metric.type = "run.googleapis.com/request_latencies"', limit_ms,
        {"alignmentPeriod": "300s", "perSeriesAligner": "ALIGN_PERCENTILE_99"})

policies = {
    "alert-failed-events.json": policy("failed events waiting", [threshold(
        f"undelivered messages in {kept}",
        f'resource.type = "pubsub_subscription" AND resource.label.subscription_id = "{kept}" AND '
        'metric.type = "pubsub.googleapis.com/subscription/num_undelivered_messages"', 0,
        {"alignmentPeriod": "60s", "perSeriesAligner": "ALIGN_MAX"})],
        f"Work was lost: an upload's or a fan-out part's event failed every delivery (or grew older than "
        f"MAX_EVENT_AGE) and was dead-lettered; it waits in the subscription `{kept}` for 7 days, then is gone. "
        f"Pull it, read which object it names, fix the cause (the files and parts functions' logs say what failed), "
        f"upload the object again, then acknowledge the message. The incident closes when the subscription is "
        f"empty. {guide('failed-events-waiting')}"),
    "alert-errors.json": policy("server errors", [threshold(
        "5xx answers per service",
        runs(services["http"] + services["events"])
        + ' AND metric.type = "run.googleapis.com/request_count" AND metric.label.response_code_class = "5xx"', 0,
        {"alignmentPeriod": "300s", "perSeriesAligner": "ALIGN_SUM", "crossSeriesReducer": "REDUCE_SUM",
         "groupByFields": ["resource.label.service_name"]})],
        "A service answered a request or an event with a server error (5xx): an event that failed (it is retried, "
        "and dead-lettered if it keeps failing), or an HTTP request refused with 503 (deadline_exceeded, bundle_invalid) or failed with "
        f"500. The service's log holds the error code under the request id. {guide('function-errors-and-server-errors')}"),
    "alert-timeout.json": policy("near the timeout", [
        latency(services["http"], http_timeout), latency(services["events"], event_timeout)],
        f"Requests or events took more than {percent} % of their service's --timeout: files, parts or requests are "
        "close to failing with deadline_exceeded. Lower TRANSLATE_PART_CHARS (smaller fan-out parts) or ask "
        f"callers to stream long texts. {guide('near-the-timeout')}"),
}
for file_name, body in policies.items():
    with open(f"{folder}/{file_name}", "w", encoding="utf-8") as out:
        json.dump(body, out, indent=2)
        out.write("\n")
PY
}

log_metrics() {  # names | files DIR: the log-based metrics' names, or each as Cloud Logging's LogMetric JSON in DIR
    python3 - "$NAME" "$@" <<'PY'
import json, sys
name, mode, folder = sys.argv[1], sys.argv[2], (sys.argv[3:] or [""])[0]
services = " OR ".join(json.dumps(s) for s in (name, f"{name}-files", f"{name}-parts"))
# the JSON lines that carry a request's or an event's figures (handler.metrics): access lines and event lines
lines = (f'resource.type="cloud_run_revision" AND resource.labels.service_name=({services}) AND '
         'jsonPayload.logger=("handler.access" OR "handler.metrics")')
route = {"route": "EXTRACT(jsonPayload.route)"}
# suffix: (field, what it counts or sums, unit, labels); summed figures are distributions of the field's values
summed = {
    "characters": ("characters", "characters of the texts and files translated", "1"),
    "segments": ("segments", "segments translated (decoded or from the translation memory)", "1"),
    "segments-from-memory": ("segments_from_memory", "segments answered by the translation memory", "1"),
    "queue-wait": ("queue_wait_ms", "time waiting in the decoder's queue", "ms"),
    "decode-time": ("decode_ms", "time from the first batch to the last answer", "ms"),
    "bytes-read": ("bytes_read", "bytes read: request bodies, uploaded objects, parts", "By"),
    "bytes-written": ("bytes_written", "bytes written: response bodies, translations, parts", "By"),
    "cold-start-time": ("cold_start_ms", "time from the process's start to its first answer's readiness", "ms"),
}
counted = {
    "requests": ("", "requests and events", route),
    "refusals": ("error_code", "answers with an error code: refusals and failures",
                 {"error_code": "EXTRACT(jsonPayload.error_code)"}),
    "cold-starts": ("cold_start", "cold starts", {}),
    **{field.replace("_", "-"): (field, field.replace("_", " "), {}) for field in (
        "documents_started", "documents_finished", "documents_failed", "fan_out_jobs_started",
        "fan_out_jobs_finished", "fan_out_parts_started", "fan_out_parts_finished", "fan_out_parts_failed")},
}

def descriptor(kind, unit, labels):
    return {"metricKind": "DELTA", "valueType": kind, "unit": unit,
            "labels": [{"key": key, "valueType": "STRING"} for key in labels]}

metrics = {}
for suffix, (field, what, unit) in summed.items():
    metrics[f"{name}-{suffix}"] = {
        "description": f"{name}: {what} (the field {field}), per request or event",
        "filter": f"{lines} AND jsonPayload.{field}>0", "valueExtractor": f"EXTRACT(jsonPayload.{field})",
        "labelExtractors": route, "metricDescriptor": descriptor("DISTRIBUTION", unit, route),
        "bucketOptions": {"exponentialBuckets": {"numFiniteBuckets": 64, "growthFactor": 2, "scale": 1}}}
for suffix, (field, what, labels) in counted.items():
    where = f'{lines} AND jsonPayload.{field}:*' if field == "error_code" else (
        f"{lines} AND jsonPayload.{field}>0" if field else lines)
    metrics[f"{name}-{suffix}"] = {
        "description": f"{name}: {what}", "filter": where, "labelExtractors": labels,
        "metricDescriptor": descriptor("INT64", "1", labels)}
for metric, body in metrics.items():
    if mode == "names":
        print(metric)
    else:
        with open(f"{folder}/log-metric-{metric}.json", "w", encoding="utf-8") as out:
            json.dump({"name": metric, **body}, out, indent=2)
            out.write("\n")
PY
}

usage_store() {  # DIR URL: the HTTP service's env file(s) in DIR count the keys' usage in URL (TRANSLATE_USAGE_STORE)
    local file
    for file in "$1/env-http.yaml" "$1/env-run-http.yaml"; do
        [[ -f "$file" ]] || continue
        grep -v '^TRANSLATE_USAGE_STORE:' "$file" > "$file.new"
        printf 'TRANSLATE_USAGE_STORE: "%s"\n' "$2" >> "$file.new"
        mv "$file.new" "$file"
    done
}

stage() {  # the same files the Dockerfile's `cloudrun` image holds, plus requirements.txt for the buildpack
    local dir="$1" source
    source="$dir/source"
    rm -rf "$source"
    mkdir -p "$source/model_artifacts"
    cp "$REPO_ROOT/main.py" "$source/"
    cp -r "$REPO_ROOT/handler" "$source/handler"
    find "$source/handler" -name __pycache__ -prune -exec rm -rf {} +
    cp -r "$REPO_ROOT/$SHIPPED" "$source/model_artifacts/default"  # where the runtime looks by default
    requirements > "$source/requirements.txt"
    printf '%s\n' '__pycache__/' '*.pyc' > "$source/.gcloudignore"
    env_files "$dir"
}

if [[ "$MODE" == "env" ]]; then
    [[ $# -eq 2 ]] || die "usage: deploy.sh env DIR"
    env_files "$2"
    echo "wrote the $PLATFORM services' env files in $2"
    exit 0
fi
if [[ "$MODE" == "alerts" ]]; then
    [[ $# -eq 2 ]] || die "usage: deploy.sh alerts DIR"
    alert_policies "$2"
    echo "wrote the alert policies of $NAME in $2"
    exit 0
fi
if [[ "$MODE" == "log-metrics" ]]; then
    [[ $# -eq 2 ]] || die "usage: deploy.sh log-metrics DIR"
    mkdir -p "$2"
    log_metrics files "$2"
    echo "wrote the log-based metrics of $NAME in $2"
    exit 0
fi
if [[ "$MODE" == "usage-store" ]]; then
    [[ $# -eq 3 && "$3" =~ ^rediss?:// ]] || die "usage: deploy.sh usage-store DIR redis://[:AUTH@]HOST:PORT/DB"
    usage_store "$2" "$3"
    echo "the HTTP service's env file in $2 counts the keys' usage in its Redis"
    exit 0
fi
if [[ "$MODE" == "stage" ]]; then
    [[ $# -eq 2 ]] || die "usage: deploy.sh stage DIR"
    stage "$2"
    echo "staged the function's source in $2/source ($FAMILY bundle $SHIPPED)"
    exit 0
fi
[[ "$MODE" == "print" || "$MODE" == "deploy" ]] || die "unknown mode '$MODE'; use print, stage DIR, env DIR, alerts DIR, log-metrics DIR or deploy"

if [[ "$MODE" == "deploy" ]]; then
    [[ -n "$PROJECT" ]] || die "set GCP_PROJECT to your project id"
    [[ -n "$INPUT" && -n "$OUTPUT" ]] || die "set INPUT_BUCKET and OUTPUT_BUCKET (two different new or existing buckets)"
    command -v gcloud >/dev/null || die "gcloud not found: install the Google Cloud CLI and run 'gcloud auth login'"
else
    PROJECT="${PROJECT:-<GCP_PROJECT>}"
    INPUT="${INPUT:-<INPUT_BUCKET>}"
    OUTPUT="${OUTPUT:-<OUTPUT_BUCKET>}"
fi
[[ "$INPUT" != "$OUTPUT" ]] || die "INPUT_BUCKET and OUTPUT_BUCKET must differ: each translation would trigger another"
NOTICE="$(bundle_notice "$SHIPPED")" || exit 2
STAGE_GIVEN="${STAGE_DIR:-}"
[[ -z "$STAGE_GIVEN" || "$STAGE_GIVEN" == /* ]] || STAGE_GIVEN="$PWD/$STAGE_GIVEN"  # the commands run elsewhere

SA_NAME="${NAME}-fn"
SA="${SA_NAME:0:30}@${PROJECT}.iam.gserviceaccount.com"
PUBLIC_FLAG="--no-allow-unauthenticated"
[[ "${ALLOW_UNAUTHENTICATED:-0}" == "1" ]] && PUBLIC_FLAG="--allow-unauthenticated"
IMAGE_URI="${IMAGE_URI:-$REGION-docker.pkg.dev/$PROJECT/$NAME/$NAME:cloudrun}"

# The commands: one list (infra/commands.sh), printed as it is (print) or run from the repository root (deploy).
# A resource that may exist already is described first and created only when that fails; the values only Google
# Cloud knows (its service agents, the triggers' subscriptions) are read into shell variables by the lines that
# use them; the staging folder is the variable STAGE_DIR.
note() { command_note "$@"; }
run() { command_add "$@"; }
unless_exists() {  # DESCRIBE-WORDS -- CREATE-WORDS: the create command, run only when describing the resource fails
    local describe=() create=() word line
    while [[ "$1" != -- ]]; do describe+=("$1"); shift; done
    shift
    create=("$@")
    line=""
    for word in "${describe[@]}"; do line+="$(command_quote "$word") "; done
    line+=">/dev/null 2>&1 ||"
    for word in "${create[@]}"; do line+=" $(command_quote "$word")"; done
    command_raw "$line"
}
if [[ "$PLATFORM" == functions ]]; then TARGET=deploy-gcp; else TARGET=deploy-cloudrun; fi
note "Google Cloud ($([[ "$PLATFORM" == functions ]] && echo "Cloud Functions" || echo "Cloud Run"), make $TARGET): needs the Google Cloud CLI (gcloud), logged in with rights to create" \
    "$([[ "$PLATFORM" == run ]] && echo "services, repositories" || echo "functions"), buckets, IAM bindings and alert policies$([[ "$PLATFORM" == run ]] && echo ", and a container engine for make image-gcp"); run these from the repository root in bash."
note "needs GCP_PROJECT, INPUT_BUCKET and OUTPUT_BUCKET ([GCP_REGION=$REGION] [FUNCTION_NAME=$NAME] [STAGE_DIR=...] [ALERT_EMAIL=...]); those not given show as <NAME>:"
note "  make $TARGET GCP_PROJECT=... INPUT_BUCKET=... OUTPUT_BUCKET=... prints them filled in, and DEPLOY=1 runs them"
[[ -z "$NOTICE" ]] || note "$NOTICE"
if [[ -n "$STAGE_GIVEN" ]]; then
    command_raw "STAGE_DIR=$(command_quote "$STAGE_GIVEN")"
    run mkdir -p '$STAGE_DIR'
else
    command_raw 'STAGE_DIR="$(mktemp -d)"'
fi

note "1. APIs"
run gcloud services enable cloudfunctions.googleapis.com run.googleapis.com cloudbuild.googleapis.com \
    artifactregistry.googleapis.com eventarc.googleapis.com pubsub.googleapis.com storage.googleapis.com \
    monitoring.googleapis.com logging.googleapis.com --project "$PROJECT"

note "2. a service account for the functions: read the input bucket, write the output bucket"
unless_exists gcloud iam service-accounts describe "$SA" --project "$PROJECT" \
    -- gcloud iam service-accounts create "${SA_NAME:0:30}" --project "$PROJECT" \
        --display-name "Chinese-English translation function"

note "3. the buckets (in the functions' region) and their permissions"
unless_exists gcloud storage buckets describe "gs://$INPUT" \
    -- gcloud storage buckets create "gs://$INPUT" --project "$PROJECT" --location "$REGION" --uniform-bucket-level-access
unless_exists gcloud storage buckets describe "gs://$OUTPUT" \
    -- gcloud storage buckets create "gs://$OUTPUT" --project "$PROJECT" --location "$REGION" --uniform-bucket-level-access
run gcloud storage buckets add-iam-policy-binding "gs://$INPUT" --member "serviceAccount:$SA" --role roles/storage.objectViewer
note "DeepL's document API: write uploaded documents and delete them once downloaded, only under the document prefix"
run gcloud storage buckets add-iam-policy-binding "gs://$INPUT" --member "serviceAccount:$SA" --role roles/storage.objectUser \
    --condition "expression=resource.name.startsWith('projects/_/buckets/$INPUT/objects/$DOCUMENT_PREFIX'),title=documents-only"
note "objectUser, not objectCreator: replacing an earlier translation of the same file also needs objects.delete"
run gcloud storage buckets add-iam-policy-binding "gs://$OUTPUT" --member "serviceAccount:$SA" --role roles/storage.objectUser

note "4. Eventarc: Cloud Storage publishes the finalize events; the account receives them"
command_raw "SERVICE_AGENT=\"\$(gcloud storage service-agent --project $(command_quote "$PROJECT"))\""
run gcloud projects add-iam-policy-binding "$PROJECT" --member 'serviceAccount:$SERVICE_AGENT' --role roles/pubsub.publisher
run gcloud projects add-iam-policy-binding "$PROJECT" --member "serviceAccount:$SA" --role roles/eventarc.eventReceiver

event_service() {  # SUFFIX BUCKET INSTANCES: a Cloud Run event service, who may invoke it, its Eventarc trigger
    local service="$NAME-$1"
    run gcloud run deploy "$service" --project "$PROJECT" --region "$REGION" --image "$IMAGE_URI" --no-allow-unauthenticated \
        --memory "$MEMORY" --cpu "$CPU" --timeout "$FILES_TIMEOUT" --max-instances "$3" --concurrency 1 \
        --service-account "$SA" --env-vars-file "\$STAGE_DIR/env-run-$1.yaml"
    run gcloud run services add-iam-policy-binding "$service" --project "$PROJECT" --region "$REGION" \
        --member "serviceAccount:$SA" --role roles/run.invoker
    run gcloud eventarc triggers create "$service" --project "$PROJECT" --location "$REGION" \
        --destination-run-service "$service" --destination-run-region "$REGION" \
        --event-filters "type=$FINALIZED" --event-filters "bucket=$2" --service-account "$SA"
}

USAGE_FLAGS=()  # the HTTP service's way to the usage store (USAGE_REDIS=1)
if [[ "$USAGE_REDIS" == 1 ]]; then
    note "4b. key quotas: a Memorystore Redis instance counts each API key's usage across instances; the HTTP service alone reaches it through a VPC connector"
    run gcloud services enable redis.googleapis.com vpcaccess.googleapis.com --project "$PROJECT"
    unless_exists gcloud redis instances describe "$USAGE_NAME" --project "$PROJECT" --region "$REGION" \
        -- gcloud redis instances create "$USAGE_NAME" --project "$PROJECT" --region "$REGION" --tier basic --size 1 \
            --network default --redis-version redis_7_0 --enable-auth
    unless_exists gcloud compute networks vpc-access connectors describe "$USAGE_NAME" --project "$PROJECT" --region "$REGION" \
        -- gcloud compute networks vpc-access connectors create "$USAGE_NAME" --project "$PROJECT" --region "$REGION" \
            --network default --range 10.8.0.0/28
    P_="$(command_quote "$PROJECT")" R_="$(command_quote "$REGION")" U_="$(command_quote "$USAGE_NAME")"
    command_raw "REDIS_HOST=\"\$(gcloud redis instances describe $U_ --project $P_ --region $R_ --format 'value(host)')\""
    command_raw "REDIS_AUTH=\"\$(gcloud redis instances get-auth-string $U_ --project $P_ --region $R_ --format 'value(authString)')\""
    if [[ "$PLATFORM" == functions ]]; then
        USAGE_FLAGS=(--vpc-connector "$USAGE_NAME" --egress-settings private-ranges-only)
    else
        USAGE_FLAGS=(--vpc-connector "$USAGE_NAME" --vpc-egress private-ranges-only)
    fi
fi
usage_store_env() {  # after the env files are written: the HTTP one names the Redis instance
    [[ "$USAGE_REDIS" == 1 ]] || return 0
    note "   the HTTP service counts the keys' usage in it (TRANSLATE_USAGE_STORE in its env file)"
    run bash infra/gcp/deploy.sh usage-store '$STAGE_DIR' 'redis://:$REDIS_AUTH@$REDIS_HOST:6379/0'
}

if [[ "$PLATFORM" == functions ]]; then
note "0. the functions' source in \$STAGE_DIR/source: main.py, handler/, requirements.txt, and the $FAMILY bundle $SHIPPED"
run "BUNDLE=$SHIPPED" "GCP_PROJECT=$PROJECT" "INPUT_BUCKET=$INPUT" "OUTPUT_BUCKET=$OUTPUT" bash infra/gcp/deploy.sh stage '$STAGE_DIR'
usage_store_env
note "5. the HTTP function (source: main.py, handler/, model_artifacts/default/, requirements.txt)"
run gcloud functions deploy "$NAME" --gen2 --project "$PROJECT" --region "$REGION" --runtime "$RUNTIME" \
    --source '$STAGE_DIR/source' --entry-point translate_http --trigger-http "$PUBLIC_FLAG" \
    --memory "$MEMORY" --cpu "$CPU" --timeout "$HTTP_TIMEOUT" --concurrency "$HTTP_CONCURRENCY" \
    --service-account "$SA" --env-vars-file '$STAGE_DIR/env-http.yaml' "${USAGE_FLAGS[@]}"

note "6. the file function: uploads to gs://$INPUT are translated into gs://$OUTPUT"
run gcloud functions deploy "$NAME-files" --gen2 --project "$PROJECT" --region "$REGION" --runtime "$RUNTIME" \
    --source '$STAGE_DIR/source' --entry-point translate_storage_event \
    --trigger-event-filters "type=$FINALIZED" --trigger-event-filters "bucket=$INPUT" --trigger-location "$REGION" \
    --trigger-service-account "$SA" --retry \
    --memory "$MEMORY" --cpu "$CPU" --timeout "$FILES_TIMEOUT" --max-instances "$FILE_INSTANCES" --concurrency 1 \
    --service-account "$SA" --env-vars-file '$STAGE_DIR/env-files.yaml'
run gcloud functions add-invoker-policy-binding "$NAME-files" --project "$PROJECT" --region "$REGION" \
    --member "serviceAccount:$SA"

note "7. the parts function: the fan-out's parts in gs://$OUTPUT, retried when an invocation fails"
run gcloud functions deploy "$NAME-parts" --gen2 --project "$PROJECT" --region "$REGION" --runtime "$RUNTIME" \
    --source '$STAGE_DIR/source' --entry-point translate_part_event \
    --trigger-event-filters "type=$FINALIZED" --trigger-event-filters "bucket=$OUTPUT" --trigger-location "$REGION" \
    --trigger-service-account "$SA" --retry \
    --memory "$MEMORY" --cpu "$CPU" --timeout "$FILES_TIMEOUT" --max-instances "$PART_INSTANCES" --concurrency 1 \
    --service-account "$SA" --env-vars-file '$STAGE_DIR/env-files.yaml'
run gcloud functions add-invoker-policy-binding "$NAME-parts" --project "$PROJECT" --region "$REGION" \
    --member "serviceAccount:$SA"

else
note "0. the image: the Dockerfile's cloudrun target baking the $FAMILY bundle $SHIPPED, in Artifact Registry"
unless_exists gcloud artifacts repositories describe "$NAME" --project "$PROJECT" --location "$REGION" \
    -- gcloud artifacts repositories create "$NAME" --project "$PROJECT" --location "$REGION" --repository-format docker
note "   registry credentials for docker (podman/buildah: gcloud auth print-access-token | podman login -u oauth2accesstoken --password-stdin $REGION-docker.pkg.dev)"
run gcloud auth configure-docker "$REGION-docker.pkg.dev" --quiet
ENGINE=()  # the container engine and base image given to make, carried into the lines that build and push
[[ -z "${CONTAINER:-}" ]] || ENGINE+=("CONTAINER=$CONTAINER")
[[ -z "${BASE_IMAGE:-}" ]] || BASE=("BASE_IMAGE=$BASE_IMAGE")
run make image-gcp "BUNDLE=$SHIPPED" "IMAGE=${IMAGE_URI%:cloudrun}" "${ENGINE[@]}" "${BASE[@]}"
run "${ENGINE[@]}" bash infra/container/image.sh push "$IMAGE_URI" "$IMAGE_URI"
note "   each service's settings: infra/gcp/env.yaml with FUNCTION_TARGET, the buckets and the timeout, in \$STAGE_DIR/env-run-{http,files,parts}.yaml"
run "PLATFORM=run" "GCP_PROJECT=$PROJECT" "INPUT_BUCKET=$INPUT" "OUTPUT_BUCKET=$OUTPUT" bash infra/gcp/deploy.sh env '$STAGE_DIR'

usage_store_env
note "5. the HTTP service (FUNCTION_TARGET=translate_http)"
run gcloud run deploy "$NAME" --project "$PROJECT" --region "$REGION" --image "$IMAGE_URI" "$PUBLIC_FLAG" \
    --memory "$MEMORY" --cpu "$CPU" --timeout "$HTTP_TIMEOUT" --concurrency "$HTTP_CONCURRENCY" \
    --service-account "$SA" --env-vars-file '$STAGE_DIR/env-run-http.yaml' "${USAGE_FLAGS[@]}"

note "6. the file service: uploads to gs://$INPUT are translated into gs://$OUTPUT (FUNCTION_TARGET=translate_storage_event)"
event_service files "$INPUT" "$FILE_INSTANCES"

note "7. the parts service: the fan-out's parts in gs://$OUTPUT, translated concurrently and assembled once (FUNCTION_TARGET=translate_part_event)"
event_service parts "$OUTPUT" "$PART_INSTANCES"
fi

note "8. failed events: retried with backoff, then kept in the dead-letter topic $DEAD_LETTERS"
unless_exists gcloud pubsub topics describe "$DEAD_LETTERS" --project "$PROJECT" \
    -- gcloud pubsub topics create "$DEAD_LETTERS" --project "$PROJECT"
unless_exists gcloud pubsub subscriptions describe "$DEAD_LETTERS-kept" --project "$PROJECT" \
    -- gcloud pubsub subscriptions create "$DEAD_LETTERS-kept" --project "$PROJECT" --topic "$DEAD_LETTERS" \
        --message-retention-duration 7d --expiration-period never
P="$(command_quote "$PROJECT")"
R="$(command_quote "$REGION")"
command_raw "PUBSUB_AGENT=\"service-\$(gcloud projects describe $P --format 'value(projectNumber)')@gcp-sa-pubsub.iam.gserviceaccount.com\""
run gcloud pubsub topics add-iam-policy-binding "$DEAD_LETTERS" --project "$PROJECT" \
    --member 'serviceAccount:$PUBSUB_AGENT' --role roles/pubsub.publisher
for FUNCTION in "$NAME-files" "$NAME-parts"; do
    F="$(command_quote "$FUNCTION")"
    note "$FUNCTION's Eventarc subscription: backoff, at most $MAX_DELIVERY_ATTEMPTS deliveries within $MAX_EVENT_AGE, then the dead-letter topic"
    if [[ "$PLATFORM" == run ]]; then  # the trigger is named after its service
        command_raw "SUBSCRIPTION=\"\$(gcloud eventarc triggers describe $F --project $P --location $R --format 'value(transport.pubsub.subscription)')\""
    else  # the function's trigger, by its full resource name
        command_raw "TRIGGER=\"\$(gcloud functions describe $F --gen2 --project $P --region $R --format 'value(eventTrigger.trigger)')\""
        command_raw "SUBSCRIPTION=\"\$(gcloud eventarc triggers describe \"\$TRIGGER\" --format 'value(transport.pubsub.subscription)')\""
    fi
    run gcloud pubsub subscriptions update '$SUBSCRIPTION' --project "$PROJECT" \
        --dead-letter-topic "$DEAD_LETTERS" --max-delivery-attempts "$MAX_DELIVERY_ATTEMPTS" \
        --message-retention-duration "$MAX_EVENT_AGE" --min-retry-delay 10s --max-retry-delay 600s
    run gcloud pubsub subscriptions add-iam-policy-binding '$SUBSCRIPTION' --project "$PROJECT" \
        --member 'serviceAccount:$PUBSUB_AGENT' --role roles/pubsub.subscriber
done

note "9. alerts (docs/operations.md): failed events waiting in $DEAD_LETTERS-kept, 5xx answers, requests over $TIMEOUT_ALERT_PERCENT % of their --timeout"
run "FUNCTION_NAME=$NAME" bash infra/gcp/deploy.sh alerts '$STAGE_DIR'
LABEL="deployment=$NAME"
# this deployment's policies and channels, by their label: replaced on every deploy, removed by the teardown
POLICIES_DELETE="gcloud monitoring policies list --project $P --filter $(command_quote "userLabels.$LABEL") --format 'value(name)' | xargs -r -n1 gcloud monitoring policies delete --project $P --quiet"
CHANNELS_DELETE="gcloud beta monitoring channels list --project $P --filter $(command_quote "userLabels.$LABEL") --format 'value(name)' | xargs -r -n1 gcloud beta monitoring channels delete --project $P --force --quiet"
NOTIFY=()
if [[ -n "$EMAIL" ]]; then
    note "   their e-mail channel to $EMAIL (the one an earlier deploy made, or a new one)"
    CHANNEL_NAME="$NAME alerts to $EMAIL"
    command_raw "CHANNEL=\"\$(gcloud beta monitoring channels list --project $P --filter $(command_quote "userLabels.$LABEL AND displayName=\"$CHANNEL_NAME\"") --format 'value(name)' --limit 1)\""
    command_raw "[[ -n \"\$CHANNEL\" ]] || CHANNEL=\"\$(gcloud beta monitoring channels create --project $P --type email --display-name $(command_quote "$CHANNEL_NAME") --channel-labels $(command_quote "email_address=$EMAIL") --user-labels $(command_quote "$LABEL") --format 'value(name)')\""
    NOTIFY=(--notification-channels '$CHANNEL')
else
    note "   ALERT_EMAIL=... would mail them; without it they open incidents in the console (Monitoring > Alerting)"
fi
note "   the policies replace those an earlier deploy made (labelled $LABEL)"
command_raw "$POLICIES_DELETE"
for POLICY in failed-events errors timeout; do
    run gcloud monitoring policies create --project "$PROJECT" --policy-from-file "\$STAGE_DIR/alert-$POLICY.json" "${NOTIFY[@]}"
done

note "10. log-based metrics (docs/operations.md): the figures of every request's and event's JSON line, by route"
run "FUNCTION_NAME=$NAME" bash infra/gcp/deploy.sh log-metrics '$STAGE_DIR'
mapfile -t LOG_METRICS < <(log_metrics names)
for METRIC in "${LOG_METRICS[@]}"; do
    M="$(command_quote "$METRIC")"
    FILE="\"\$STAGE_DIR/log-metric-$METRIC.json\""
    command_raw "if gcloud logging metrics describe $M --project $P >/dev/null 2>&1; then gcloud logging metrics update $M --project $P --config-from-file $FILE; else gcloud logging metrics create $M --project $P --config-from-file $FILE; fi"
done

if [[ "$PLATFORM" == functions ]]; then
    note "done: the URL is in 'gcloud functions describe $NAME --gen2 --region $REGION --format value(serviceConfig.uri)'"
    note "teardown (empty the buckets first; the functions' images stay in Artifact Registry's gcf-artifacts):"
    for FUNCTION in "$NAME" "$NAME-files" "$NAME-parts"; do
        note "  gcloud functions delete $FUNCTION --gen2 --project $PROJECT --region $REGION --quiet"
    done
else
    note "done: the URL is in 'gcloud run services describe $NAME --region $REGION --format value(status.url)'"
    note "teardown (empty the buckets first):"
    note "  gcloud eventarc triggers delete $NAME-files --project $PROJECT --location $REGION --quiet"
    note "  gcloud eventarc triggers delete $NAME-parts --project $PROJECT --location $REGION --quiet"
    for FUNCTION in "$NAME" "$NAME-files" "$NAME-parts"; do
        note "  gcloud run services delete $FUNCTION --project $PROJECT --region $REGION --quiet"
    done
    note "  gcloud artifacts repositories delete $NAME --project $PROJECT --location $REGION --quiet"
fi
note "  $POLICIES_DELETE"
note "  $CHANNELS_DELETE"
for METRIC in "${LOG_METRICS[@]}"; do
    note "  gcloud logging metrics delete $METRIC --project $PROJECT --quiet"
done
note "  gcloud pubsub subscriptions delete $DEAD_LETTERS-kept --project $PROJECT --quiet"
note "  gcloud pubsub topics delete $DEAD_LETTERS --project $PROJECT --quiet"
note "  gcloud storage rm --recursive gs://$INPUT/** gs://$OUTPUT/** && gcloud storage buckets delete gs://$INPUT gs://$OUTPUT"
if [[ "$USAGE_REDIS" == 1 ]]; then
    note "  gcloud redis instances delete $USAGE_NAME --project $PROJECT --region $REGION --quiet"
    note "  gcloud compute networks vpc-access connectors delete $USAGE_NAME --project $PROJECT --region $REGION --quiet"
fi
note "  gcloud iam service-accounts delete $SA --project $PROJECT --quiet"

if [[ "$MODE" == "deploy" ]]; then
    commands_run "$REPO_ROOT" BUNDLE PLATFORM GCP_PROJECT GCP_REGION INPUT_BUCKET OUTPUT_BUCKET FUNCTION_NAME \
        ALLOW_UNAUTHENTICATED PART_INSTANCES FILE_INSTANCES MAX_DELIVERY_ATTEMPTS MAX_EVENT_AGE STAGE_DIR IMAGE_URI \
        CONTAINER BASE_IMAGE IMAGE MODEL ALERT_EMAIL USAGE_REDIS
else
    commands_print
fi
