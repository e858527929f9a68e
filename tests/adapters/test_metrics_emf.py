"""The metrics on AWS Lambda (``handler.metrics``): CloudWatch embedded metric format (EMF) records on standard output,
read from the real runtime interface client (``python -m awslambdaric handler.adapters.aws_lambda.lambda_handler``
against the loopback Runtime API, S3 on moto's server) and validated against the EMF specification: Amazon
CloudWatch's "Specification: Embedded metric format" (its JSON schema, below, and the rules the schema cannot state:
every referenced target on the root node, metric targets numeric, dimension targets strings of at most 1,024
characters, at most 100 metrics a directive and 30 dimensions a set).

One record per HTTP request, per S3 object event and per fan-out part, each with the figures of that request or event;
the process's first record also carries its cold start, and no other does.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from handler.metrics import DIMENSIONS, FIGURES, NAMESPACE, REFUSAL_DIMENSIONS
from tests.adapters.conftest import AWS_TEST_ENV, RicFunction, http_event, start_ric_function, stop_ric_function
from tests.adapters.fan_out_platform import WORK_PREFIX, part_events, s3_event
from tests.events import FUNCTION_URL

pytestmark = pytest.mark.slow

PART_CHARS = 1_000  # the smallest TRANSLATE_PART_CHARS allows
SENTENCE = "今天天气很好，我们去公园散步。"

# The specification's JSON schema (its "Embedded metric format example and JSON schema" section), as JSON Schema
EMF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Root Node",
    "required": ["_aws"],
    "properties": {
        "_aws": {
            "type": "object",
            "title": "Metadata",
            "required": ["Timestamp", "CloudWatchMetrics"],
            "properties": {
                "Timestamp": {"type": "integer"},
                "CloudWatchMetrics": {
                    "type": "array",
                    "title": "MetricDirectives",
                    "items": {
                        "type": "object",
                        "title": "MetricDirective",
                        "required": ["Namespace", "Dimensions", "Metrics"],
                        "properties": {
                            "Namespace": {"type": "string", "pattern": "^(.*)$", "minLength": 1, "maxLength": 1024},
                            "Dimensions": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "array",
                                    "title": "DimensionSet",
                                    "minItems": 0,
                                    "maxItems": 30,
                                    "items": {"type": "string", "pattern": "^(.*)$", "minLength": 1, "maxLength": 250},
                                },
                            },
                            "Metrics": {
                                "type": "array",
                                "title": "MetricDefinitions",
                                "maxItems": 100,  # the text: "MUST NOT contain more than 100 MetricDefinition objects"
                                "items": {
                                    "type": "object",
                                    "title": "MetricDefinition",
                                    "required": ["Name"],
                                    "properties": {
                                        "Name": {
                                            "type": "string",
                                            "pattern": "^(.*)$",
                                            "minLength": 1,
                                            "maxLength": 1024,
                                        },
                                        "Unit": {
                                            "type": "string",
                                            "pattern": "^(Seconds|Microseconds|Milliseconds|Bytes|Kilobytes|Megabytes"
                                            "|Gigabytes|Terabytes|Bits|Kilobits|Megabits|Gigabits|Terabits|Percent"
                                            "|Count|Bytes\\/Second|Kilobytes\\/Second|Megabytes\\/Second"
                                            "|Gigabytes\\/Second|Terabytes\\/Second|Bits\\/Second|Kilobits\\/Second"
                                            "|Megabits\\/Second|Gigabits\\/Second|Terabits\\/Second|Count\\/Second"
                                            "|None)$",
                                        },
                                        "StorageResolution": {"type": "integer"},
                                    },
                                },
                            },
                        },
                    },
                },
            },
        }
    },
}


def emf_problems(document: dict[str, Any]) -> list[str]:
    """Where ``document`` breaks the EMF specification: its JSON schema, then the rules the schema cannot state."""
    problems = [error.message for error in jsonschema.Draft7Validator(EMF_SCHEMA).iter_errors(document)]
    if problems:
        return problems
    for directive in document["_aws"]["CloudWatchMetrics"]:
        for dimension_set in directive["Dimensions"]:
            for key in dimension_set:
                value = document.get(key)
                if not isinstance(value, str) or len(value) > 1024:
                    problems.append(f"dimension target {key!r} is {value!r}: a string of at most 1024 characters")
        for metric in directive["Metrics"]:
            value = document.get(metric["Name"])
            numbers = value if isinstance(value, list) else [value]
            if (
                not numbers
                or len(numbers) > 100
                or not all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers)
            ):
                problems.append(f"metric target {metric['Name']!r} is {value!r}: a number or at most 100 numbers")
            if metric.get("StorageResolution", 60) not in (1, 60):
                problems.append(f"{metric['Name']}: StorageResolution is 1 or 60")
    return problems


def test_the_validation_catches_what_the_specification_forbids() -> None:
    good = {
        "_aws": {
            "Timestamp": 1574109732004,
            "CloudWatchMetrics": [
                {
                    "Namespace": "n",
                    "Dimensions": [["functionVersion"]],
                    "Metrics": [{"Name": "time", "Unit": "Milliseconds"}],
                }
            ],
        },
        "functionVersion": "$LATEST",
        "time": 100,
    }
    assert emf_problems(good) == []  # the specification's own example
    for broken in (
        {**good, "_aws": {"CloudWatchMetrics": good["_aws"]["CloudWatchMetrics"]}},  # no Timestamp
        {**good, "time": "100"},  # a metric that is not a number
        {k: v for k, v in good.items() if k != "functionVersion"},  # a dimension with no target
        {**good, "functionVersion": 3},  # a dimension that is not a string
        json.loads(json.dumps(good).replace('"Milliseconds"', '"Millis"')),  # no such unit
    ):
        assert emf_problems(broken), broken


# --- the records a real function process writes ------------------------------------------------------------
@pytest.fixture(scope="module")
def buckets(s3_client: Any) -> tuple[str, str]:
    upload, output = f"in-{uuid.uuid4().hex[:10]}", f"out-{uuid.uuid4().hex[:10]}"
    s3_client.create_bucket(Bucket=upload)
    s3_client.create_bucket(Bucket=output)
    return upload, output


@pytest.fixture(scope="module")
def function(
    adapter_env: dict[str, str],
    moto_endpoint: str,
    buckets: tuple[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RicFunction]:
    env = {
        **adapter_env,
        **AWS_TEST_ENV,
        "AWS_ENDPOINT_URL_S3": moto_endpoint,
        "AWS_LAMBDA_FUNCTION_NAME": "zh-en-translate",
        "TRANSLATE_OUTPUT_BUCKET": buckets[1],
        "TRANSLATE_PART_CHARS": str(PART_CHARS),
    }
    started = start_ric_function(env, tmp_path_factory.mktemp("emf"))
    yield started
    stop_ric_function(started)


def emf_records(function: RicFunction, count: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """The EMF documents the process has written to standard output, once there are at least ``count``."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = [json.loads(line) for line in function.server.log().splitlines() if line.startswith('{"_aws"')]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def invoke(function: RicFunction, event: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The invocation's answer and the one EMF record it wrote."""
    before = len(emf_records(function, 0))
    outcome, payload = function.api.invoke(event)
    assert outcome == "response", payload
    records = emf_records(function, before + 1)
    assert len(records) == before + 1, (
        f"{len(records) - before} records for one event:\n{function.server.log()[-3000:]}"
    )
    return payload, records[-1]


def metrics_of(record: dict[str, Any]) -> dict[str, float]:
    """The metric values a record carries, by metric name, after checking it against the specification."""
    assert emf_problems(record) == [], record
    directives = record["_aws"]["CloudWatchMetrics"]
    assert directives[0]["Namespace"] == NAMESPACE and directives[0]["Dimensions"] == [list(DIMENSIONS)]
    assert record["Function"] == "zh-en-translate" and record["Model"]
    return {metric["Name"]: record[metric["Name"]] for d in directives for metric in d["Metrics"]}


def test_http_requests_s3_events_and_fan_out_parts_write_valid_emf_records(
    function: RicFunction, s3_client: Any, buckets: tuple[str, str]
) -> None:
    upload, output = buckets
    # GIVEN the function's first request, a translation WHEN it is answered THEN one record with its figures
    body = json.dumps({"text": SENTENCE}).encode()
    event = http_event(FUNCTION_URL, "POST", "/translate", {"Content-Type": "application/json"}, body)
    payload, record = invoke(function, event)
    assert payload["statusCode"] == 200, payload
    first = metrics_of(record)
    assert record["Route"] == "/translate" and record["request_id"] == payload["headers"]["X-Request-Id"]
    assert first["Requests"] == 1 and first["Characters"] == len(SENTENCE) and first["Segments"] >= 1
    assert first["DecodeTime"] > 0 and first["QueueWait"] >= 0 and first["Duration"] >= first["DecodeTime"]
    assert first["BytesRead"] == len(body) and first["BytesWritten"] == len(payload["body"].encode())
    assert first["ColdStart"] == 1 and first["ColdStartTime"] > 0  # the process's first record only
    # the same text again is answered from the translation memory
    _, again = invoke(function, event)
    assert metrics_of(again)["SegmentsFromMemory"] == metrics_of(again)["Segments"] >= 1
    assert "ColdStart" not in again

    # a refusal: its error code as a dimension of its own metric
    refused = http_event(FUNCTION_URL, "POST", "/translate", {"Content-Type": "application/json"}, b'{"colour": 1}')
    payload, record = invoke(function, refused)
    assert payload["statusCode"] == 400
    assert metrics_of(record)["Refusals"] == 1 and record["ErrorCode"] == "invalid_request"
    assert record["_aws"]["CloudWatchMetrics"][1]["Dimensions"] == [list(REFUSAL_DIMENSIONS)]

    # AN S3 upload event: the file's characters and bytes
    note = "北京是中国的首都，也是一座古老的城市。\n"  # not in the translation memory yet: decoded
    data = note.encode()
    s3_client.put_object(Bucket=upload, Key="note.txt", Body=data)
    payload, record = invoke(function, s3_event(upload, "note.txt"))
    assert payload["results"][0]["status"] == "translated"
    figures = metrics_of(record)
    assert record["Route"] == "upload" and figures["Characters"] == len(note)
    assert figures["BytesRead"] == len(data) and figures["BytesWritten"] > 0 and figures["DecodeTime"] > 0

    # A large upload fans out: its event starts a job, each part's event translates a part, the last assembles
    book = "\n\n".join([SENTENCE * 8] * 12) + "\n"
    s3_client.put_object(Bucket=upload, Key="book.txt", Body=book.encode())
    payload, record = invoke(function, s3_event(upload, "book.txt"))
    assert payload["results"][0]["status"] == "planned"
    planned = metrics_of(record)
    assert planned["FanOutJobsStarted"] == 1 and planned["BytesWritten"] > 0
    parts = part_events(s3_client, output, WORK_PREFIX)
    assert len(parts) >= 2
    part_records = [invoke(function, part)[1] for _, part in parts]
    figures_of_parts = [metrics_of(record) for record in part_records]
    assert {record["Route"] for record in part_records} == {"part"}
    assert all(f["FanOutPartsStarted"] == f["FanOutPartsFinished"] == 1 for f in figures_of_parts)
    assert 0.9 * len(book) < sum(f["Characters"] for f in figures_of_parts) <= len(book)
    assert [f.get("FanOutJobsFinished", 0) for f in figures_of_parts] == [0] * (len(parts) - 1) + [1]

    # AND only the first record of the process told its cold start
    assert sum("ColdStart" in record for record in emf_records(function, 0)) == 1


def test_a_failed_event_is_a_refusal_with_its_code(function: RicFunction, buckets: tuple[str, str]) -> None:
    # an event for an object that does not exist fails (and Lambda retries it); its record names the failure
    outcome, _ = function.api.invoke(s3_event(buckets[0], f"missing-{uuid.uuid4().hex}.txt"))
    assert outcome == "error"
    record = emf_records(function, 1)[-1]
    assert metrics_of(record)["Refusals"] == 1 and record["Route"] == "upload" and record["ErrorCode"]


def test_every_figure_has_a_metric_name_and_unit_cloudwatch_takes() -> None:
    names = [figure.metric for figure in FIGURES]
    assert len(set(names)) == len(names) <= 100
    directive = {
        "Namespace": NAMESPACE,
        "Dimensions": [[]],
        "Metrics": [{"Name": f.metric, "Unit": f.unit} for f in FIGURES],
    }
    document = {"_aws": {"Timestamp": 0, "CloudWatchMetrics": [directive]}, **dict.fromkeys(names, 0)}
    assert emf_problems(document) == []
