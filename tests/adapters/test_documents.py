"""DeepL's document API and LibreTranslate's ``/translate_file``, driven by the clients people use, over real HTTP.

* the local server (``handler.adapters.local_server``, state in a temporary folder, the background worker): the
  unmodified ``deepl`` client's ``translate_document_from_filepath`` and ``translate_document`` for every format,
  and every refusal (wrong key, second download, missing key, unsupported suffix, too large, corrupt subtitle);
* AWS: an ``awslambdaric`` process behind a Function URL front for the HTTP side, moto's S3 server, and the S3 events
  of the documents (and of their fan-out parts) delivered to a second function process as the platform would;
* GCP: functions-framework's ``translate_http``, ``translate_storage_event`` and ``translate_part_event`` on the
  Cloud Storage emulator, the finalize events delivered as Eventarc would;
* LibreTranslate's ``/translate_file`` with ``requests`` (a real multipart client) and its ``/download_file`` URL.

Each translation must equal ``translate_file_bytes`` on the same bytes (the tiny model's English is gibberish, so
the tests compare with the function's own file translation rather than with wording).
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import deepl
import pytest
import requests
from lxml import etree

from handler.adapters.local_server import make_server
from handler.api.router import HttpApi
from handler.coldstart import Startup, start
from handler.errors import InvalidRequestError
from handler.formats import FILE_SUFFIXES, content_type_for, format_for, translate_file
from handler.formats.subtitles import parse_track
from handler.service import TranslateOptions
from tests.adapters.conftest import (
    AWS_TEST_ENV,
    MAX_FILE_BYTES,
    start_functions_framework,
    start_ric_function,
    stop_ric_function,
)
from tests.adapters.fan_out_platform import Workers, s3_event
from tests.adapters.test_compat_clients import _ric_invoke, _serve, lambda_front
from tests.adapters.test_entry_processes import post
from tests.events import FUNCTION_URL, GCS_OBJECT_FINALIZED, load_event
from tests.fixture_corpus import fixture_pairs
from tests.formats.samples import sample_documents, samples_for
from tests.subtitle_samples import SRT, VTT, check_translation
from tests.word_samples import TEXT_PART, sample_docx, shape, zip_parts

pytestmark = pytest.mark.slow

API_KEY = "documents-test-key"
HTML = "<!DOCTYPE html>\n<html><body><h1>第一章</h1>\n<p>今天天气很好，<b>我们</b>去公园散步吧。</p>\n</body></html>\n"
TEXT = "第一章\n\n今天天气很好。我们去公园散步吧。\n\n这个多少钱？\n"
# a document per format (name -> bytes); .docx joins with one line once translate_file_bytes reads it
DOCUMENTS: dict[str, bytes] = {
    "notes.txt": TEXT.encode("utf-8"),
    "page.html": HTML.encode("utf-8"),
    "film.srt": SRT.encode("utf-8"),
    "film.vtt": VTT.encode("utf-8"),
    "report.docx": sample_docx(),
    **sample_documents(),  # one per format with a samples module (tests/formats): .pptx, .xlsx, .xliff, .po...
}
CORRUPT_SRT = (
    b"1\n00:00:01,000 --> 00:00:02,000\n\xe4\xbd\xa0\xe5\xa5\xbd\n\n2\nnot a timing line\n\xe5\x86\x8d\xe8\xa7\x81\n"
)
PART_CHARS = 1_000


def book(characters: int) -> str:
    sentences = [pair.zh for pair in fixture_pairs()]
    paragraphs: list[str] = []
    index = 0
    while sum(len(p) + 2 for p in paragraphs) < characters:
        paragraphs.append("".join(sentences[(index + n) % len(sentences)] for n in range(3)))
        index += 3
    return "\n\n".join(paragraphs) + "\n"


def billed(name: str, data: bytes) -> int | None:
    """The characters a document bills: its text's (a structured file: the characters of its units)."""
    try:
        return format_for(name).read(data, name).characters
    except InvalidRequestError:
        return None


def expected(startup: Startup, name: str, data: bytes) -> bytes:
    return translate_file(data, name, startup.require_service()).data


def check_structure(name: str, source: bytes, translated: bytes) -> None:
    """Subtitles keep every cue, timing and header (``tests.subtitle_samples``); the others are translated."""
    if name.endswith((".srt", ".vtt")):
        fmt = name.rsplit(".", 1)[1]
        text = translated.decode("utf-8")
        assert len(parse_track(text, fmt).cues) == len(parse_track(source.decode("utf-8"), fmt).cues)
        assert check_translation(source.decode("utf-8"), text, fmt, english=False) == []
    if name.endswith(".docx"):  # every structural element of every text part as in the source
        before, after = zip_parts(source), zip_parts(translated)
        assert sorted(before) == sorted(after)
        for part in before:
            if TEXT_PART.fullmatch(part):
                assert shape(etree.fromstring(after[part])) == shape(etree.fromstring(before[part])), part
    samples = samples_for(name)
    if samples is not None:  # read with the library a user opens the file with
        assert samples.inspect(translated).structure == samples.inspect(source).structure
    assert translated != source


# --- the local server ------------------------------------------------------------------------------------------
@contextlib.contextmanager
def local_server(startup: Startup, state_dir: Path, **overrides: Any) -> Iterator[str]:
    configured = start(startup.config.with_overrides(state_dir=state_dir, **overrides))
    assert configured.error is None, configured.error
    server = make_server(HttpApi(configured), "127.0.0.1", 0)
    url = _serve(server)
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def local_url(startup: Startup, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with local_server(startup, tmp_path_factory.mktemp("state")) as url:
        yield url


@pytest.fixture(scope="module")
def keyed_url(startup: Startup, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with local_server(startup, tmp_path_factory.mktemp("keyed-state"), api_keys=(API_KEY,)) as url:
        yield url


def translator(base_url: str, key: str = API_KEY) -> deepl.Translator:
    return deepl.Translator(key, server_url=base_url.rstrip("/"))


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_deepl_client_translates_every_format_on_the_local_server(
    name: str, local_url: str, startup: Startup, tmp_path: Path
) -> None:
    # GIVEN a document on disk WHEN the unmodified deepl client translates it from its path
    source = tmp_path / name
    source.write_bytes(DOCUMENTS[name])
    output = tmp_path / f"en-{name}"
    status = translator(local_url).translate_document_from_filepath(source, output, target_lang="EN-US")
    # THEN the translation is the function's own file translation, with the structure kept and characters billed
    translated = output.read_bytes()
    assert translated == expected(startup, name, DOCUMENTS[name])
    check_structure(name, DOCUMENTS[name], translated)
    assert status.done and status.billed_characters == billed(name, DOCUMENTS[name])


@pytest.mark.parametrize("name", ["notes.srt", "notes.docx"])
def test_a_document_upload_applies_its_stored_glossary(
    name: str, keyed_url: str, startup: Startup, tmp_path: Path
) -> None:
    # GIVEN a glossary stored through DeepL's glossary API and a document that uses its term
    client = translator(keyed_url)
    glossary = client.create_glossary("cities", "ZH", "EN-US", {"北京": "Peking-Zq"})
    if name.endswith(".srt"):
        data = "1\n00:00:01,000 --> 00:00:03,000\n我明天去北京开会。\n".encode()
    else:
        import docx

        document = docx.Document()
        document.add_paragraph("我明天去北京开会。")
        buffer = io.BytesIO()
        document.save(buffer)
        data = buffer.getvalue()
    source, output = tmp_path / name, tmp_path / f"en-{name}"
    source.write_bytes(data)
    # WHEN the deepl client translates it naming the glossary THEN the English carries the glossary's term
    client.translate_document_from_filepath(source, output, source_lang="ZH", target_lang="EN-US", glossary=glossary)
    glossary_entries = TranslateOptions(glossary={"北京": "Peking-Zq"})
    assert output.read_bytes() == translate_file(data, name, startup.require_service(), glossary_entries).data
    assert b"Peking-Zq" in (
        output.read_bytes() if name.endswith(".srt") else zip_parts(output.read_bytes())["word/document.xml"]
    )
    # a glossary the caller does not have is 404, and one without source_lang is refused, before any upload
    with pytest.raises(deepl.DeepLException):
        translator(keyed_url).translate_document_upload(
            data, target_lang="EN-US", filename=name, glossary="00000000-0000-4000-8000-000000000000", source_lang="ZH"
        )


def test_deepl_client_translate_document_with_file_objects(local_url: str, startup: Startup, tmp_path: Path) -> None:
    source = tmp_path / "film.srt"
    source.write_bytes(DOCUMENTS["film.srt"])
    target = tmp_path / "film.en.srt"
    with source.open("rb") as reader, target.open("wb") as writer:
        translator(local_url).translate_document(reader, writer, source_lang="ZH", target_lang="EN-GB")
    assert target.read_bytes() == expected(startup, "film.srt", DOCUMENTS["film.srt"])


def test_a_document_downloads_once_and_only_with_its_key(keyed_url: str, startup: Startup) -> None:
    client = translator(keyed_url)
    handle = client.translate_document_upload(DOCUMENTS["notes.txt"], target_lang="EN-US", filename="notes.txt")
    assert len(handle.document_id) == 32 and len(handle.document_key) >= 40
    # a wrong key: 403, for the status and the result alike
    wrong = deepl.DocumentHandle(handle.document_id, "not-" + handle.document_key)
    with pytest.raises(deepl.AuthorizationException):
        client.translate_document_get_status(wrong)
    with pytest.raises(deepl.AuthorizationException):
        client.translate_document_download(wrong)
    assert client.translate_document_wait_until_done(handle).done
    first = client.translate_document_download(handle)
    assert first is not None and first.content == expected(startup, "notes.txt", DOCUMENTS["notes.txt"])
    assert first.headers["Content-Type"] == "text/plain; charset=utf-8"
    # THEN a second download finds nothing (404, as DeepL), and so does the status
    with pytest.raises(deepl.DeepLException) as again:
        client.translate_document_download(handle)
    assert again.value.http_status_code == 404
    raw = requests.post(
        f"{keyed_url}v2/document/{handle.document_id}/result",
        json={"document_key": handle.document_key},
        headers={"Authorization": f"DeepL-Auth-Key {API_KEY}"},
        timeout=30,
    )
    assert raw.status_code == 404 and "downloaded already" in raw.json()["message"]
    with pytest.raises(deepl.DeepLException) as status:
        client.translate_document_get_status(handle)
    assert status.value.http_status_code == 404
    # an id that was never issued: 404
    with pytest.raises(deepl.DeepLException) as unknown:
        client.translate_document_get_status(deepl.DocumentHandle("0" * 32, handle.document_key))
    assert unknown.value.http_status_code == 404


def test_document_routes_need_the_key_where_keys_are_configured(keyed_url: str) -> None:
    for key in ("", "wrong-key"):
        reply = requests.post(
            keyed_url + "v2/document",
            files={"file": ("notes.txt", DOCUMENTS["notes.txt"])},
            data={"target_lang": "EN-US"},
            headers={"Authorization": f"DeepL-Auth-Key {key}"} if key else {},
            timeout=30,
        )
        assert reply.status_code == 403 and "Authorization" in reply.json()["message"]
    with pytest.raises(deepl.AuthorizationException):
        translator(keyed_url, "wrong-key").translate_document_upload(b"x", target_lang="EN-US", filename="a.txt")


def test_an_unsupported_suffix_is_400_listing_the_supported_ones(local_url: str) -> None:
    with pytest.raises(deepl.DeepLException) as raised:
        translator(local_url).translate_document_upload(b"%PDF-1.7", target_lang="EN-US", filename="report.pdf")
    assert raised.value.http_status_code == 400
    assert all(suffix in str(raised.value) for suffix in FILE_SUFFIXES)


def test_a_file_over_the_limit_is_413(local_url: str) -> None:
    with pytest.raises(deepl.DeepLException) as raised:
        translator(local_url).translate_document_upload(
            "好" * (MAX_FILE_BYTES // 3 + 1), target_lang="EN-US", filename="big.txt"
        )
    assert "413" in str(raised.value) and f"{MAX_FILE_BYTES:,}" in str(raised.value)


def test_options_deepl_refuses_for_english_are_refused_and_the_rest_ignored(local_url: str) -> None:
    client = translator(local_url)
    for formality in ("more", "less"):
        with pytest.raises(deepl.DeepLException) as raised:
            client.translate_document_upload(b"x", target_lang="EN-US", filename="a.txt", formality=formality)
        assert raised.value.http_status_code == 400 and "formality" in str(raised.value)
    handle = client.translate_document_upload(
        DOCUMENTS["notes.txt"], target_lang="EN-US", filename="a.txt", formality="prefer_more"
    )
    assert client.translate_document_wait_until_done(handle).done
    with pytest.raises(deepl.DeepLException) as glossary:
        client.translate_document_upload(b"x", source_lang="ZH", target_lang="EN-US", filename="a.txt", glossary="g1")
    assert glossary.value.http_status_code == 400 and "'g1' is not a glossary ID" in str(glossary.value)
    with pytest.raises(deepl.DeepLException) as output_format:
        client.translate_document_upload(b"x", target_lang="EN-US", filename="a.txt", output_format="docx")
    assert output_format.value.http_status_code == 400 and "output_format" in str(output_format.value)


def test_a_corrupt_subtitle_ends_in_error_with_a_message_and_no_result(local_url: str, tmp_path: Path) -> None:
    source = tmp_path / "broken.srt"
    source.write_bytes(CORRUPT_SRT)
    output = tmp_path / "broken.en.srt"
    client = translator(local_url)
    with pytest.raises(deepl.DocumentTranslationException) as raised:
        client.translate_document_from_filepath(source, output, target_lang="EN-US")
    handle = raised.value.document_handle
    status = client.translate_document_get_status(handle)
    assert status.status == deepl.DocumentStatus.Status.ERROR
    assert "timing line" in str(status.error_message) and "line 6" in str(status.error_message)
    assert not output.exists()  # the client removes its output file; there was nothing to download
    with pytest.raises(deepl.DeepLException) as download:
        client.translate_document_download(handle)
    assert download.value.http_status_code == 404
    raw = requests.post(
        f"{local_url}v2/document/{handle.document_id}/result", json={"document_key": handle.document_key}, timeout=30
    )
    assert raw.status_code == 404 and "could not be translated" in raw.json()["message"]


def test_the_local_state_folder_holds_no_text_after_a_download(startup: Startup, tmp_path: Path) -> None:
    with local_server(startup, tmp_path / "state") as url:
        client = translator(url)
        handle = client.translate_document_upload(DOCUMENTS["film.vtt"], target_lang="EN-US", filename="film.vtt")
        assert client.translate_document_wait_until_done(handle).done
        client.translate_document_download(handle)
    files = [path for path in (tmp_path / "state").rglob("*") if path.is_file() and path.name != ".lock"]
    records = [path for path in files if path.suffix == ".json" and ".meta" not in path.parts]
    assert len(records) == 1 and all(".meta" in path.parts or path in records for path in files)
    record = json.loads(records[0].read_text(encoding="utf-8"))
    assert (
        record["status"] == "downloaded" and record["name"] == "" and handle.document_key not in records[0].read_text()
    )


# --- AWS: awslambdaric, moto's S3 server, the documents' S3 events -----------------------------------------------
class EventPump:
    """What S3 event notifications do for the template's triggers, on loopback: every new object under the
    document prefix of the input bucket, and every part object under the work prefix of the output bucket, is
    delivered once as an S3 event to ``deliver`` (a thread watching the buckets)."""

    def __init__(self, watch: Callable[[], list[tuple[str, str]]], deliver: Callable[[str, str], None]) -> None:
        self._watch = watch
        self._deliver = deliver
        self._seen: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> EventPump:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for item in self._watch():
                    if item not in self._seen:
                        self._seen.add(item)
                        self._deliver(*item)
            except BaseException as error:  # reported by the test
                self.errors.append(error)
            self._stop.wait(0.3)


def _s3_keys(s3: Any, bucket: str, prefix: str) -> list[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return sorted(item["Key"] for page in pages for item in page.get("Contents", []))


@pytest.fixture(scope="module")
def aws(adapter_env: dict[str, str], moto_endpoint: str, s3_client: Any, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    upload, output = f"in-{uuid.uuid4().hex[:10]}", f"out-{uuid.uuid4().hex[:10]}"
    s3_client.create_bucket(Bucket=upload)
    s3_client.create_bucket(Bucket=output)
    env = {
        **adapter_env,
        "TRANSLATE_OUTPUT_BUCKET": output,
        "TRANSLATE_DOCUMENT_BUCKET": upload,
        "TRANSLATE_PART_CHARS": str(PART_CHARS),
        "TRANSLATE_API_KEYS": API_KEY,
        **AWS_TEST_ENV,
        "AWS_ENDPOINT_URL_S3": moto_endpoint,
    }
    log_dir = tmp_path_factory.mktemp("documents-aws")
    http_function = start_ric_function(env, log_dir)
    events = Workers.start(2, env, log_dir)
    front = lambda_front(_ric_invoke(http_function), FUNCTION_URL)
    url = _serve(front)
    try:
        events.warm()
        yield url, upload, output, events
    finally:
        front.shutdown()
        front.server_close()
        events.stop()
        stop_ric_function(http_function)


def _aws_pump(s3: Any, upload: str, output: str, events: Workers) -> EventPump:
    def watch() -> list[tuple[str, str]]:
        found = [(upload, key) for key in _s3_keys(s3, upload, "_documents/")]
        return found + [(output, key) for key in _s3_keys(s3, output, "_bulk/") if "/parts/" in key]

    def deliver(bucket: str, key: str) -> None:
        for delivery in events.deliver([(key, s3_event(bucket, key))]):
            assert delivery.outcome == "response", delivery.payload

    return EventPump(watch, deliver)


@pytest.mark.parametrize("name", ["film.srt", "film.vtt", "page.html", "report.docx", *sample_documents()])
def test_deepl_client_on_lambda_translates_through_the_s3_event(
    aws: Any, s3_client: Any, startup: Startup, name: str, tmp_path: Path
) -> None:
    url, upload, output, events = aws
    source = tmp_path / name
    source.write_bytes(DOCUMENTS[name])
    target = tmp_path / f"en-{name}"
    with _aws_pump(s3_client, upload, output, events) as pump:
        translator(url).translate_document_from_filepath(source, target, target_lang="EN-US")
    assert pump.errors == []
    assert target.read_bytes() == expected(startup, name, DOCUMENTS[name])
    # the download removed the source and the translation from the buckets
    assert _s3_keys(s3_client, upload, "_documents/") == []
    assert [key for key in _s3_keys(s3_client, output, "translated/_documents/")] == []


def test_a_large_document_on_lambda_completes_through_the_fan_out(aws: Any, s3_client: Any, startup: Startup) -> None:
    url, upload, output, events = aws
    text = book(4_000)
    client = translator(url)
    with _aws_pump(s3_client, upload, output, events) as pump:
        handle = client.translate_document_upload(text.encode("utf-8"), target_lang="EN-US", filename="book.txt")
        seen: list[str] = []
        remaining: list[int] = []
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            status = client.translate_document_get_status(handle)
            seen.append(status.status.value)
            if status.seconds_remaining is not None and status.status.value == "translating":
                remaining.append(status.seconds_remaining)
            if status.done or not status.ok:
                break
            time.sleep(0.2)
        assert status.done, (seen, status.error_message)
        translated = client.translate_document_download(handle)
    assert pump.errors == []
    assert translated is not None
    from handler.storage.bulk import translate_in_parts

    assert translated.content.decode("utf-8") == translate_in_parts(
        startup.require_service(), text, PART_CHARS, options={"source": "auto"}
    )
    assert "translating" in seen and remaining and status.billed_characters == len(text)
    # the fan-out ran (its part events were delivered), and the download removed its objects too
    assert any("/parts/" in delivery.key for delivery in events.deliveries)
    assert _s3_keys(s3_client, output, "_bulk/") == []


def test_a_corrupt_document_on_lambda_ends_in_error_without_a_retry_or_output(aws: Any, s3_client: Any) -> None:
    url, upload, output, events = aws
    client = translator(url)
    with _aws_pump(s3_client, upload, output, events) as pump:
        handle = client.translate_document_upload(CORRUPT_SRT, target_lang="EN-US", filename="broken.srt")
        deadline = time.monotonic() + 60
        while (status := client.translate_document_get_status(handle)).ok and time.monotonic() < deadline:
            time.sleep(0.2)
    assert pump.errors == []
    assert not status.ok and "timing line" in str(status.error_message)
    assert _s3_keys(s3_client, output, f"translated/_documents/{handle.document_id}") == []
    # the source was deleted from the input bucket as the error was recorded, not kept for the retention
    assert _s3_keys(s3_client, upload, f"_documents/{handle.document_id}/") == []
    with pytest.raises(deepl.DeepLException) as download:
        client.translate_document_download(handle)
    assert download.value.http_status_code == 404


# --- GCP: functions-framework on the Cloud Storage emulator ------------------------------------------------------
def _cloud_event(bucket: str, name: str) -> bytes:
    event = load_event(GCS_OBJECT_FINALIZED)
    event["data"].update(bucket=bucket, name=name, id=f"{bucket}/{name}/1")
    event["subject"] = f"objects/{name}"
    return json.dumps(event).encode("utf-8")


def test_deepl_client_on_cloud_functions_translates_through_the_storage_events(
    adapter_env: dict[str, str], gcs_emulator_host: str, gcs_client: Any, startup: Startup, tmp_path: Path
) -> None:
    upload, output = f"up-{uuid.uuid4().hex[:10]}", f"out-{uuid.uuid4().hex[:10]}"
    gcs_client.create_bucket(upload)
    gcs_client.create_bucket(output)
    env = {
        **adapter_env,
        "STORAGE_EMULATOR_HOST": gcs_emulator_host,
        "GOOGLE_CLOUD_PROJECT": "test-project",
        "TRANSLATE_OUTPUT_BUCKET": output,
        "TRANSLATE_DOCUMENT_BUCKET": upload,
        "TRANSLATE_PART_CHARS": str(PART_CHARS),
    }
    servers = [
        start_functions_framework(target, env, tmp_path)
        for target in ("translate_http", "translate_storage_event", "translate_part_event")
    ]
    (_, http_url), (_, files_url), (_, parts_url) = servers
    structured = {"Content-Type": "application/cloudevents+json"}

    def watch() -> list[tuple[str, str]]:
        documents = [(upload, blob.name) for blob in gcs_client.list_blobs(upload, prefix="_documents/")]
        return documents + [(output, blob.name) for blob in gcs_client.list_blobs(output)]  # every finalize there

    def deliver(bucket: str, name: str) -> None:
        status = post(files_url if bucket == upload else parts_url, "/", structured, _cloud_event(bucket, name))[0]
        assert status == 200, (bucket, name)

    try:
        big = book(2_500).encode("utf-8")
        names = {
            "film.srt": DOCUMENTS["film.srt"],
            "notes.txt": DOCUMENTS["notes.txt"],
            "report.docx": DOCUMENTS["report.docx"],
            **sample_documents(),
            "book.txt": big,
        }
        with EventPump(watch, deliver) as pump:
            for name, data in names.items():
                source = tmp_path / name
                source.write_bytes(data)
                target = tmp_path / f"en-{name}"
                translator(http_url).translate_document_from_filepath(source, target, target_lang="EN-US")
                if name == "book.txt":
                    from handler.storage.bulk import translate_in_parts

                    want = translate_in_parts(
                        startup.require_service(), data.decode(), PART_CHARS, options={"source": "auto"}
                    )
                    assert target.read_text(encoding="utf-8") == want
                else:
                    assert target.read_bytes() == expected(startup, name, data)
        assert pump.errors == []
        assert list(gcs_client.list_blobs(upload, prefix="_documents/")) == []
    finally:
        for server, _ in servers:
            server.stop()


# --- LibreTranslate: /translate_file with requests ---------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_libretranslate_translate_file_and_its_download_url(name: str, local_url: str, startup: Startup) -> None:
    reply = requests.post(
        local_url + "translate_file",
        files={"file": (name, DOCUMENTS[name])},
        data={"source": "zh", "target": "en"},
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    url = reply.json()["translatedFileUrl"]
    assert url.startswith(local_url + "download_file/") and url.endswith("-" + name)
    token = url.rsplit("/", 1)[1].split("-", 1)[0]
    assert len(token) == 32 and int(token, 16) >= 0
    download = requests.get(url, timeout=30)
    assert download.status_code == 200 and download.content == expected(startup, name, DOCUMENTS[name])
    assert download.headers["Content-Type"] == content_type_for(name)
    # the same URL again gives the same file (as LibreTranslate's); another token gives 404 in LibreTranslate's shape
    assert requests.get(url, timeout=30).content == download.content
    other = url.replace(token, "0" * 32)
    missing = requests.get(other, timeout=30)
    assert missing.status_code == 404 and "error" in missing.json()


def test_libretranslate_translate_file_errors_in_its_shape(local_url: str, keyed_url: str) -> None:
    def upload(base: str, files: Any, **data: str) -> requests.Response:
        return requests.post(
            base + "translate_file", files=files, data={"source": "zh", "target": "en", **data}, timeout=60
        )

    unsupported = upload(local_url, {"file": ("report.pdf", b"%PDF-1.7")})
    assert unsupported.status_code == 400 and ".srt" in unsupported.json()["error"]
    damaged = upload(local_url, {"file": ("deck.pptx", b"PK\x03\x04")})
    assert damaged.status_code == 400 and "not a PowerPoint .pptx presentation" in damaged.json()["error"]
    missing = requests.post(local_url + "translate_file", data={"source": "zh", "target": "en"}, timeout=30)
    assert missing.status_code == 400 and "file" in missing.json()["error"]
    corrupt = upload(local_url, {"file": ("broken.srt", CORRUPT_SRT)})
    assert corrupt.status_code == 400 and "timing line" in corrupt.json()["error"]
    large = upload(local_url, {"file": ("big.txt", "好".encode() * (MAX_FILE_BYTES // 3 + 1))})
    assert large.status_code == 413 and f"{MAX_FILE_BYTES:,}" in large.json()["error"]
    wrong_target = upload(local_url, {"file": ("a.txt", b"x")}, target="de")
    assert wrong_target.status_code == 400 and wrong_target.json() == {"error": "de is not supported"}  # its words
    no_key = upload(keyed_url, {"file": ("a.txt", TEXT.encode())})
    assert no_key.status_code == 400 and "api_key" in no_key.json()["error"]  # LibreTranslate: no key 400
    no_source = requests.post(local_url + "translate_file", files={"file": ("a.txt", b"x")}, data={"target": "en"})
    assert no_source.status_code == 400 and no_source.json() == {"error": "Invalid request: missing source parameter"}
    keyed = upload(keyed_url, {"file": ("a.txt", TEXT.encode())}, api_key=API_KEY)
    assert keyed.status_code == 200


def test_libretranslate_frontend_settings_lists_the_file_formats(local_url: str) -> None:
    settings = requests.get(local_url + "frontend/settings", timeout=30).json()
    assert settings["filesTranslation"] is True and settings["supportedFilesFormat"] == list(FILE_SUFFIXES)


def test_translated_file_url_keeps_the_forwarded_scheme_host_and_stage(local_url: str) -> None:
    reply = requests.post(
        local_url + "translate_file",
        files={"file": ("a.txt", TEXT.encode())},
        data={"source": "zh", "target": "en"},
        headers={"X-Forwarded-Proto": "https", "X-Forwarded-Host": "api.example", "X-Forwarded-Prefix": "/prod"},
        timeout=60,
    )
    assert reply.json()["translatedFileUrl"].startswith("https://api.example/prod/download_file/")


# --- the event path applies each document's options (in process, a folder as both buckets) ----------------------
@pytest.mark.parametrize("characters", [0, 3_000])  # one invocation, and the fan-out
def test_the_upload_event_applies_the_documents_options(startup: Startup, tmp_path: Path, characters: int) -> None:
    from handler.storage.dispatch import handle_object_event
    from handler.storage.documents import BucketDocuments, DocumentUpload
    from handler.storage.folder_store import FolderStore
    from handler.storage.object_store import ObjectRef

    config = startup.config.with_overrides(output_bucket="out", document_bucket="in", part_chars=PART_CHARS)
    store = FolderStore(tmp_path)
    service = startup.require_service()
    jobs = BucketDocuments(config, lambda: service, lambda: store)
    text = ("人工智能正在改变世界。\n\n" + book(characters)) if characters else "人工智能正在改变世界。\n"
    glossary = {"人工智能": "Glossaryterm"}
    handle = jobs.create(DocumentUpload("ai.txt", text.encode("utf-8"), {"source": "auto", "glossary": glossary}))
    assert jobs.status(handle.document_id, handle.document_key).status == "queued"
    source = ObjectRef("file", "in", f"_documents/{handle.document_id}/document.txt")
    first = handle_object_event(store, source, service, config)
    for key in store.list_keys("out", "_bulk/"):
        if "/parts/" in key:
            assert jobs.status(handle.document_id, handle.document_key).status == "translating"
            handle_object_event(store, ObjectRef("file", "out", key), service, config)
    assert first["status"] == ("planned" if characters else "translated")
    status = jobs.status(handle.document_id, handle.document_key)
    assert status.status == "done" and status.billed_characters == len(text)
    translated = jobs.take_result(handle.document_id, handle.document_key).data.decode("utf-8")
    # THEN the record's glossary reached the translation of every paragraph that has the term, parts included
    assert translated.count("Glossaryterm") == text.count("人工智能") >= 1
    assert store.list_keys("in", "_documents/") == [] and store.list_keys("out", "_bulk/") == []
    assert store.list_keys("out", "translated/") == []


def test_a_document_no_event_translates_ends_in_error_after_the_retries_time(startup: Startup, tmp_path: Path) -> None:
    from handler.storage.documents import BucketDocuments, DocumentNotReadyError, DocumentUpload
    from handler.storage.folder_store import FolderStore

    # GIVEN event timeouts of 0.2 s: a document is stale 0.6 s (the first try and two retries) after its upload
    config = startup.config.with_overrides(
        output_bucket="out", document_bucket="in", event_timeout_s=0.2, deadline_margin_s=0.1
    )
    jobs = BucketDocuments(config, startup.require_service, lambda: FolderStore(tmp_path))
    handle = jobs.create(DocumentUpload("a.txt", TEXT.encode("utf-8")))
    assert jobs.status(handle.document_id, handle.document_key).status == "queued"
    with pytest.raises(DocumentNotReadyError):  # DeepL's 503: not translated yet
        jobs.take_result(handle.document_id, handle.document_key)
    time.sleep(0.7)
    # WHEN no upload event ever began it (a trigger missing, a function that could not start) THEN error, saying so
    status = jobs.status(handle.document_id, handle.document_key)
    assert status.status == "error" and "no upload event" in str(status.error_message)


# --- the local worker: a bounded queue, and documents a stopped server left behind ------------------------------
def test_the_local_queue_is_bounded_and_a_restart_queues_unfinished_documents_again(
    startup: Startup, tmp_path: Path
) -> None:
    from handler.storage.documents import DocumentQueueFullError, DocumentUpload, LocalDocuments
    from handler.storage.state import local_state

    config = startup.config.with_overrides(state_dir=tmp_path)
    release = threading.Event()

    def held_service() -> Any:  # the worker waits for the test; the uploads' own check does not
        if threading.current_thread().name == "document-worker":
            release.wait(60)
        return startup.require_service()

    # GIVEN a worker busy with a first document and a queue of one
    jobs = LocalDocuments(config, held_service, lambda: local_state(config), queue_size=1)
    upload = DocumentUpload("a.txt", TEXT.encode("utf-8"))
    first = jobs.create(upload)
    deadline = time.monotonic() + 30
    while jobs.status(first.document_id, first.document_key).status != "translating" and time.monotonic() < deadline:
        time.sleep(0.05)
    second = jobs.create(upload)
    # WHEN a third arrives THEN it is refused (429 in DeepL's API, which its clients retry), and nothing is kept of it
    with pytest.raises(DocumentQueueFullError):
        jobs.create(upload)
    assert jobs.status(second.document_id, second.document_key).status == "queued"
    # AND a new server on the same folder (a restart) queues what the first left unfinished once it starts working
    restarted = LocalDocuments(config, startup.require_service, lambda: local_state(config))
    third = restarted.create(upload)
    for handle in (first, second, third):
        deadline = time.monotonic() + 60
        while restarted.status(handle.document_id, handle.document_key).status != "done":
            assert time.monotonic() < deadline
            time.sleep(0.05)
    release.set()
    assert restarted.take_result(second.document_id, second.document_key).data == expected(
        startup, "a.txt", TEXT.encode("utf-8")
    )
    records = [key for key in local_state(config).keys("documents/") if key.count("/") == 1]
    assert len(records) == 3  # the refused upload left no record


# --- Lambda's HTTP side in process: /translate_file in the output bucket, a stage in its URL, binary answers -----
def test_translate_file_on_api_gateway_keeps_the_stage_and_uses_the_output_bucket(
    entry_modules: dict[str, Any], startup: Startup, s3_client: Any
) -> None:
    from handler.storage.object_store import S3Store
    from tests.adapters.conftest import http_event, reply_from_proxy_response
    from tests.events import API_GATEWAY_V1

    bucket = f"out-{uuid.uuid4().hex[:10]}"
    s3_client.create_bucket(Bucket=bucket)
    configured = start(startup.config.with_overrides(output_bucket=bucket, document_bucket="in"))
    adapter = entry_modules["handler.adapters.aws_lambda"].LambdaAdapter(configured, store=S3Store(s3_client))
    body = requests.Request(
        "POST", "http://x/", files={"file": ("film.srt", DOCUMENTS["film.srt"])}, data={"source": "zh", "target": "en"}
    ).prepare()
    headers = {"Content-Type": str(body.headers["Content-Type"]), "X-Forwarded-Proto": "https"}
    event = http_event(API_GATEWAY_V1, "POST", "/translate_file", headers, bytes(body.body or b""))
    reply = reply_from_proxy_response(adapter.handle(event, None))
    assert reply.status == 200, reply.text
    url = reply.json()["translatedFileUrl"]
    # THEN the URL names the stage API Gateway took off the path, and the file is kept in the output bucket
    assert url.startswith("https://id.execute-api.us-east-1.amazonaws.com/prod/download_file/")
    assert any(key.startswith("_state/files/") for key in _s3_keys(s3_client, bucket, "_state/"))
    path = "/" + url.split("/prod/", 1)[1]
    download = reply_from_proxy_response(adapter.handle(http_event(API_GATEWAY_V1, "GET", path, {}, b""), None))
    assert download.status == 200 and download.body == expected(startup, "film.srt", DOCUMENTS["film.srt"])
    assert download.headers["content-type"] == "application/x-subrip; charset=utf-8"


def test_a_binary_answer_goes_back_base64_encoded(entry_modules: dict[str, Any]) -> None:
    import base64

    from handler.api.messages import HttpResponse

    proxy = entry_modules["handler.adapters.aws_lambda"]._proxy_response
    docx = b"PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00\xdf\xa4\xd2lZ\x01"
    answer = proxy(HttpResponse(200, {"Content-Type": "application/octet-stream"}, docx))
    assert answer["isBase64Encoded"] is True and base64.b64decode(answer["body"]) == docx
    assert proxy(HttpResponse(200, {}, "译文".encode()))["isBase64Encoded"] is False
