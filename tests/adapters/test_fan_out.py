"""Bulk translation across invocations, end to end on loopback: moto's S3 server, several real function processes
(``awslambdaric`` running ``handler.adapters.aws_lambda.lambda_handler``) and a platform that delivers the parts'
events in random order, retries a failed invocation and delivers duplicates (``tests/adapters/fan_out_platform.py``).

The output must equal the single-process translation of the same parts byte for byte, be written exactly once
(the output bucket is versioned: one version), and the manifest must record every part as done.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from handler.coldstart import Startup
from handler.formats.plain_text import translate_text
from handler.service import TranslateOptions
from handler.storage.bulk import (
    MANIFEST_NAME,
    JobLayout,
    JobManifest,
    assemble,
    read_progress,
    translate_in_parts,
    translate_part,
)
from handler.storage.dispatch import handle_object_event
from handler.storage.object_store import GcsStore, ObjectRef, S3Store
from handler.text.parts import plan_parts
from tests.adapters.conftest import AWS_TEST_ENV, start_functions_framework
from tests.adapters.fan_out_platform import WORK_PREFIX, Workers, part_events, s3_event
from tests.adapters.test_entry_processes import post
from tests.events import GCS_OBJECT_FINALIZED, load_event
from tests.fixture_corpus import fixture_pairs

pytestmark = pytest.mark.slow

PART_CHARS = 1_000  # the smallest TRANSLATE_PART_CHARS allows: a 6,000-character file makes 7 parts
WORKERS = 3


def book(characters: int = 6_000) -> str:
    """Paragraphs of the fixture's Chinese sentences, with a title line, CRLF-free blank lines and a long one."""
    sentences = [pair.zh for pair in fixture_pairs()]
    paragraphs = ["第一章\n"]
    index = 0
    while sum(len(p) + 2 for p in paragraphs) < characters:
        size = 3 if len(paragraphs) % 4 else 12  # every fourth paragraph is long
        paragraphs.append("".join(sentences[(index + n) % len(sentences)] for n in range(size)))
        index += size
    return "\n\n".join(paragraphs) + "\n"


@pytest.fixture(scope="module")
def buckets(s3_client: Any) -> tuple[str, str]:
    upload, output = f"in-{uuid.uuid4().hex[:10]}", f"out-{uuid.uuid4().hex[:10]}"
    s3_client.create_bucket(Bucket=upload)
    s3_client.create_bucket(Bucket=output)
    s3_client.put_bucket_versioning(Bucket=output, VersioningConfiguration={"Status": "Enabled"})
    return upload, output


@pytest.fixture(scope="module")
def workers(
    adapter_env: dict[str, str],
    moto_endpoint: str,
    buckets: tuple[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Workers]:
    env = {
        **adapter_env,
        "TRANSLATE_PART_CHARS": str(PART_CHARS),
        "TRANSLATE_OUTPUT_BUCKET": buckets[1],
        **AWS_TEST_ENV,
        "AWS_ENDPOINT_URL_S3": moto_endpoint,
    }
    started = Workers.start(WORKERS, env, tmp_path_factory.mktemp("fan-out"))
    started.warm()
    yield started
    started.stop()


def _versions(s3: Any, bucket: str, key: str) -> list[dict[str, Any]]:
    return [v for v in s3.list_object_versions(Bucket=bucket, Prefix=key).get("Versions", []) if v["Key"] == key]


def test_large_file_fans_out_and_is_assembled_exactly_once(
    workers: Workers, s3_client: Any, buckets: tuple[str, str], startup: Startup
) -> None:
    upload, output = buckets
    text = book()
    s3_client.put_object(Bucket=upload, Key="books/long book.txt", Body=text.encode("utf-8"))

    # GIVEN the upload's event, delivered twice (S3 may do that) WHEN the function plans THEN one plan, parts once
    planned = workers.deliver([("upload", s3_event(upload, "books/long book.txt"))] * 2)
    results = [d.payload["results"][0] for d in planned]
    assert sorted(r["status"] for r in results) == ["already planned", "planned"], results
    parts = part_events(s3_client, output)
    expected_parts = len(plan_parts(text, PART_CHARS)[1])
    assert len(parts) == expected_parts >= 6
    assert sum(r["parts_written"] for r in results) == expected_parts  # the duplicate wrote no part

    # WHEN the parts' events arrive in random order, one of them twice, and one part's first invocation fails
    # (it starts with less time left than TRANSLATE_DEADLINE_MARGIN_S, so it stops before translating)
    shuffled = parts + [parts[2]]
    random.Random(14).shuffle(shuffled)
    failing = parts[4][0]
    deliveries = workers.deliver(
        shuffled, time_limit_s=lambda key, attempt: 2.0 if key == failing and attempt == 1 else 900.0
    )

    # THEN the failed invocation was retried once, and every part translated once (the duplicate found its result)
    failed = [d for d in deliveries if d.outcome == "error"]
    assert [(d.key, d.attempt) for d in failed] == [(failing, 1)]
    assert "deadline" in json.dumps(failed[0].payload)
    answers = [d.payload["results"][0] for d in deliveries if d.outcome == "response"]
    assert sorted(a["status"] for a in answers).count("translated") == expected_parts
    assert [a["status"] for a in answers].count("duplicate") == 1
    assert [a.get("assembly") for a in answers].count("assembled") == 1
    assert len({d.worker for d in deliveries}) > 1  # the parts really were spread over processes

    # AND the output equals the single-process translation of the same parts byte for byte, written once
    key = "translated/books/long book.txt"
    stored = s3_client.get_object(Bucket=output, Key=key)
    expected = translate_in_parts(startup.require_service(), text, PART_CHARS)
    assert stored["Body"].read().decode("utf-8") == expected
    assert len(_versions(s3_client, output, key)) == 1
    assert stored["Metadata"]["source-key"] == "books/long%20book.txt"
    assert stored["Metadata"]["bulk-parts"] == str(expected_parts)

    # AND the manifest says every part is done and the job complete
    manifest_key = next(
        k["Key"]
        for k in s3_client.list_objects_v2(Bucket=output, Prefix=WORK_PREFIX)["Contents"]
        if k["Key"].endswith(MANIFEST_NAME)
    )
    progress = read_progress(S3Store(s3_client), ObjectRef("s3", output, manifest_key))
    assert progress.complete and progress.done == tuple(range(expected_parts))

    # WHEN every part's event is delivered once more THEN nothing is translated or written again
    again = workers.deliver(part_events(s3_client, output))
    assert {d.payload["results"][0]["status"] for d in again} == {"duplicate"}
    assert len(_versions(s3_client, output, key)) == 1


def test_small_file_keeps_the_one_invocation_path(workers: Workers, s3_client: Any, buckets: tuple[str, str]) -> None:
    upload, output = buckets
    s3_client.put_object(Bucket=upload, Key="short.txt", Body="今天天气很好。\n".encode())
    [delivery] = workers.deliver([("short", s3_event(upload, "short.txt"))])
    assert delivery.payload["results"][0]["status"] == "translated"
    keys = [item["Key"] for item in s3_client.list_objects_v2(Bucket=output, Prefix=WORK_PREFIX).get("Contents", [])]
    assert not any("short" in k for k in keys)


@pytest.mark.parametrize("name", ["page.html", "page.xhtml", "notes.md"])
def test_a_large_markup_upload_is_translated_whole_with_its_markup(s3_client: Any, startup: Startup, name: str) -> None:
    # The fan-out cuts plain text at blank lines only; it kept its own list of markup suffixes, which lacked .xhtml,
    # so a large .xhtml upload was split into parts translated as plain text while a small one was HTML.
    bucket = f"markup-{uuid.uuid4().hex[:10]}"
    s3_client.create_bucket(Bucket=bucket)
    s3_client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    store, service = S3Store(s3_client), startup.require_service()
    config = startup.config.with_overrides(part_chars=PART_CHARS)
    paragraphs = [pair.zh for pair in fixture_pairs()][:80]
    if name.endswith("html"):
        text = "<html><body>\n" + "".join(f'<p title="{p}">{p}</p>\n\n' for p in paragraphs) + "</body></html>\n"
    else:
        text = "".join(f"## {p}\n\n**{p}**\n\n" for p in paragraphs)
    assert len(text) > 2 * PART_CHARS
    s3_client.put_object(Bucket=bucket, Key=name, Body=text.encode("utf-8"))
    # WHEN its event arrives THEN it is translated in this invocation as markup, and no part is planned
    result = handle_object_event(store, ObjectRef("s3", bucket, name), service, config)
    assert result["status"] == "translated"
    assert not s3_client.list_objects_v2(Bucket=bucket, Prefix=WORK_PREFIX).get("Contents")
    written = s3_client.get_object(Bucket=bucket, Key=f"translated/{name}")["Body"].read().decode("utf-8")
    expected_format = "markdown" if name.endswith(".md") else "html"
    assert written == translate_text(service, text, TranslateOptions(format=expected_format))
    assert written.count("<p title=") == len(paragraphs) or written.count("**") == 2 * len(paragraphs)


# --- Cloud Storage: the same path through the GCP adapter ---------------------------------------------------------
def test_gcs_fan_out_on_cloud_storage(gcs_client: Any, startup: Startup) -> None:
    """Plan, parts in random order and assembly on gcp-storage-emulator, input and output in one bucket (the
    emulator ignores preconditions, so exactly-once is the S3 test's; this one checks the Cloud Storage calls)."""
    bucket = f"gcs-{uuid.uuid4().hex[:10]}"
    gcs_client.create_bucket(bucket)
    config = startup.config.with_overrides(part_chars=PART_CHARS)
    store = GcsStore(gcs_client)
    text = book(3_000)
    gcs_client.bucket(bucket).blob("long.txt").upload_from_string(text.encode("utf-8"), content_type="text/plain")
    service = startup.require_service()
    plan = handle_object_event(store, ObjectRef("gs", bucket, "long.txt"), service, config)
    assert plan["status"] == "planned"
    parts = [name for name in store.list_keys(bucket, WORK_PREFIX) if "/parts/" in name]
    random.Random(3).shuffle(parts)
    statuses = [handle_object_event(store, ObjectRef("gs", bucket, name), service, config) for name in parts]
    assert [s.get("assembly") for s in statuses].count("assembled") == 1
    # the part results and the manifest live under the work prefix too: their events are ignored
    manifest = ObjectRef("gs", bucket, plan["manifest"].split(f"{bucket}/", 1)[1])
    ignored = handle_object_event(store, manifest, service, config)
    assert ignored["status"] == "ignored"
    written = gcs_client.bucket(bucket).get_blob("translated/long.txt")
    assert written.download_as_bytes().decode("utf-8") == translate_in_parts(service, text, PART_CHARS)
    assert written.metadata["bulk-parts"] == str(len(parts))


def test_two_invocations_assembling_at_once_write_the_output_once(s3_client: Any, startup: Startup) -> None:
    # GIVEN a job whose last two parts finished together: both invocations saw every part done
    bucket = f"race-{uuid.uuid4().hex[:10]}"
    s3_client.create_bucket(Bucket=bucket)
    s3_client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    store, service = S3Store(s3_client), startup.require_service()
    config = startup.config.with_overrides(part_chars=PART_CHARS)
    s3_client.put_object(Bucket=bucket, Key="race.txt", Body=book(2_500).encode("utf-8"))
    plan = handle_object_event(store, ObjectRef("s3", bucket, "race.txt"), service, config)
    layout = JobLayout.of("s3", bucket, WORK_PREFIX, plan["job"])
    for index in range(plan["parts"] - 1):
        translate_part(store, layout, index, service)
    stale = json.loads(s3_client.get_object(Bucket=bucket, Key=layout.manifest.key)["Body"].read())
    stale["done"] = list(range(plan["parts"]))  # what the second finisher read before the first completed

    # WHEN the first finishes (and assembles) and the second assembles from its snapshot
    first = translate_part(store, layout, plan["parts"] - 1, service)
    second = assemble(store, layout, JobManifest.from_json(json.dumps(stale).encode(), layout.manifest))

    # THEN the output was written once, and the second invocation knows it was
    assert (first["assembly"], second["status"]) == ("assembled", "already assembled")
    assert len(_versions(s3_client, bucket, "translated/race.txt")) == 1


# --- Cloud Functions: functions-framework processes, as deploy.sh deploys them ------------------------------------
def _cloud_event(bucket: str, name: str) -> bytes:
    event = load_event(GCS_OBJECT_FINALIZED)
    event["data"].update(bucket=bucket, name=name, id=f"{bucket}/{name}/1")
    event["subject"] = f"objects/{name}"
    return json.dumps(event).encode("utf-8")


def test_gcp_fan_out_across_functions_framework_processes(
    adapter_env: dict[str, str], gcs_emulator_host: str, gcs_client: Any, startup: Startup, tmp_path: Path
) -> None:
    # GIVEN the uploads function and two instances of the parts function (translate_part_event), on the emulator
    upload, output = f"up-{uuid.uuid4().hex[:10]}", f"out-{uuid.uuid4().hex[:10]}"
    gcs_client.create_bucket(upload)
    gcs_client.create_bucket(output)
    env = {
        **adapter_env,
        "STORAGE_EMULATOR_HOST": gcs_emulator_host,
        "GOOGLE_CLOUD_PROJECT": "test-project",
        "TRANSLATE_PART_CHARS": str(PART_CHARS),
        "TRANSLATE_OUTPUT_BUCKET": output,
    }
    servers = [start_functions_framework("translate_storage_event", env, tmp_path)]
    servers += [start_functions_framework("translate_part_event", env, tmp_path) for _ in range(2)]
    try:
        (_, files_url), part_urls = servers[0], [url for _, url in servers[1:]]
        text = book(3_000)
        gcs_client.bucket(upload).blob("long.txt").upload_from_string(text.encode("utf-8"), content_type="text/plain")
        structured = {"Content-Type": "application/cloudevents+json"}
        # WHEN Eventarc delivers the upload's event, then the parts' events (random order, spread over instances)
        assert post(files_url, "/", structured, _cloud_event(upload, "long.txt"))[0] == 200
        parts = [name for name in GcsStore(gcs_client).list_keys(output, WORK_PREFIX) if "/parts/" in name]
        random.Random(7).shuffle(parts)
        with ThreadPoolExecutor(len(part_urls)) as pool:
            statuses = list(
                pool.map(
                    lambda item: post(part_urls[item[0] % 2], "/", structured, _cloud_event(output, item[1]))[0],
                    enumerate(parts),
                )
            )
        # AND the translation's own finalize event reaches the parts function too: answered, nothing done
        ignored = post(part_urls[0], "/", structured, _cloud_event(output, "translated/long.txt"))[0]
    finally:
        for server, _ in servers:
            server.stop()
    # THEN every invocation succeeded and the output is the parts' translation
    assert statuses == [200] * len(parts) and len(parts) >= 3 and ignored == 200
    written = gcs_client.bucket(output).get_blob("translated/long.txt")
    assert written.download_as_bytes().decode("utf-8") == translate_in_parts(
        startup.require_service(), text, PART_CHARS
    )
