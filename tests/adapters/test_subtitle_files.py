"""Subtitle files (``.srt``, ``.vtt``) through every file path: S3 events (moto) and Cloud Storage events (the
emulator), the fan-out of a large file across parts (both stores), and the CLI. Each output must keep every
structural element of its source (``tests/subtitle_samples.check_translation``: numbers, timings, settings, headers,
NOTE/STYLE/REGION blocks byte for byte, the same cues, none empty); a corrupt file is refused with a clear error and
nothing is written. These run on the tests' tiny random model, whose output is not English; that no Chinese is left
in cue text is checked on the shipped model (``tests/runtime_text/test_subtitles.py``)."""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from handler.coldstart import Startup
from handler.errors import InvalidRequestError
from handler.formats import translate_file
from handler.storage.bulk import translate_in_parts
from handler.storage.dispatch import handle_object_event
from handler.storage.object_store import GcsStore, ObjectRef, S3Store
from tests.adapters.fan_out_platform import WORK_PREFIX
from tests.adapters.test_cli import run_cli
from tests.adapters.test_file_events import GcsBackend, S3Backend
from tests.subtitle_samples import SAMPLES, check_translation, crlf, long_srt, shape

pytestmark = pytest.mark.slow

PART_CHARS = 1_000
VARIANTS = {
    "lf": lambda text: text.encode("utf-8"),
    "crlf": lambda text: crlf(text).encode("utf-8"),
    "bom": lambda text: b"\xef\xbb\xbf" + text.encode("utf-8"),
    "gb18030": lambda text: text.encode("gb18030"),
}
CORRUPT = {
    "bad timing": (b"1\n00:00:01,000 --> 00:00:02,000\n\xe4\xbd\xa0\xe5\xa5\xbd\n\n2\n00:00:03 -> 4\nx\n", "line 6"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "looks binary"),
}


@pytest.fixture(params=["s3", "gs"])
def backend(request: pytest.FixtureRequest, entry_modules: dict[str, Any]) -> Any:
    if request.param == "s3":
        return S3Backend(request.getfixturevalue("s3_client"), entry_modules)
    return GcsBackend(request.getfixturevalue("gcs_client"), entry_modules)


def expected(startup: Startup, data: bytes, name: str, fmt: str) -> bytes:
    assert name.endswith(f".{fmt}")
    return translate_file(data, name, startup.require_service()).data


def translated_text(service: Any, text: str, fmt: str) -> str:
    return translate_file(text.encode("utf-8"), f"x.{fmt}", service).data.decode("utf-8")


@pytest.mark.parametrize("name", list(SAMPLES))
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_subtitle_upload_is_translated_with_its_structure(
    backend: Any, startup: Startup, name: str, variant: str
) -> None:
    # GIVEN an .srt or .vtt upload (LF, CRLF, with a BOM, in GB18030)
    text, fmt = SAMPLES[name]
    data = VARIANTS[variant](text)
    bucket = backend.bucket()
    backend.put(bucket, f"films/{name}", data)
    # WHEN its event arrives
    result = backend.deliver(backend.adapter(startup), bucket, f"films/{name}")
    # THEN the translation keeps every structural element, cue for cue
    assert result["status"] == "translated"
    stored = backend.get(bucket, f"translated/films/{name}").data
    source = crlf(text) if variant == "crlf" else text
    assert check_translation(source, stored.decode("utf-8"), fmt, english=False) == []
    assert stored == expected(startup, data, name, fmt)
    assert len(shape(stored.decode("utf-8"), fmt).cues) == len(shape(text, fmt).cues)


@pytest.mark.parametrize("name", list(SAMPLES))
@pytest.mark.parametrize("case", list(CORRUPT))
def test_a_corrupt_subtitle_file_is_refused_and_nothing_written(
    backend: Any, startup: Startup, name: str, case: str
) -> None:
    data, pattern = CORRUPT[case]
    if name.endswith(".vtt") and case == "bad timing":
        data, pattern = b"WEBVTT\n\n00:01.000 --> 00:02.000\nok\n\n00:03.000 -> 00:04.000\nx\n", "line 6"
    bucket = backend.bucket()
    backend.put(bucket, name, data)
    with pytest.raises(InvalidRequestError, match=pattern):
        backend.deliver(backend.adapter(startup), bucket, name)
    assert backend.keys(bucket) == [name]


# --- the fan-out: a large file cut between sentences --------------------------------------------------------------
def _fan_out(store: Any, bucket: str, key: str, startup: Startup) -> dict[str, Any]:
    config = startup.config.with_overrides(part_chars=PART_CHARS)
    service = startup.require_service()
    plan = handle_object_event(store, ObjectRef(store_scheme(store), bucket, key), service, config)
    assert plan["status"] == "planned" and plan["parts"] >= 4, plan
    parts = [name for name in store.list_keys(bucket, WORK_PREFIX) if "/parts/" in name]
    random.Random(5).shuffle(parts)
    statuses = [handle_object_event(store, ObjectRef(store_scheme(store), bucket, p), service, config) for p in parts]
    assert [s.get("assembly") for s in statuses].count("assembled") == 1
    return plan


def store_scheme(store: Any) -> str:
    return "s3" if isinstance(store, S3Store) else "gs"


@pytest.mark.parametrize("scheme", ["s3", "gs"])
def test_a_large_srt_fans_out_in_parts_between_sentences(
    scheme: str, startup: Startup, request: pytest.FixtureRequest
) -> None:
    text = crlf(long_srt(240))  # ~7,000 characters: at least 4 parts of at most 1,000
    bucket = f"subs-{uuid.uuid4().hex[:10]}"
    if scheme == "s3":
        client = request.getfixturevalue("s3_client")
        client.create_bucket(Bucket=bucket)
        client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        client.put_object(Bucket=bucket, Key="film.srt", Body=text.encode("utf-8"))
        store: Any = S3Store(client)
    else:
        client = request.getfixturevalue("gcs_client")
        client.create_bucket(bucket)
        client.bucket(bucket).blob("film.srt").upload_from_string(text.encode("utf-8"), content_type="text/plain")
        store = GcsStore(client)
    _fan_out(store, bucket, "film.srt", startup)
    written = store.read(ObjectRef(scheme, bucket, "translated/film.srt")).decode("utf-8")
    service = startup.require_service()
    # the parts' translation is the whole file's: no part boundary fell inside a cue or a sentence
    assert written == translate_in_parts(service, text, PART_CHARS, "srt")
    assert written == translated_text(service, text, "srt")
    assert check_translation(text, written, "srt", english=False) == []


def test_a_large_vtt_fans_out_and_parts_after_the_first_have_no_header(startup: Startup, s3_client: Any) -> None:
    body = long_srt(200).replace(",", ".")
    cues = "\n".join(block.split("\n", 1)[1] for block in body.split("\n\n"))  # no numbers: WebVTT cues
    text = "WEBVTT\n\nNOTE 字幕\n\n" + cues.replace("\n0", "\n\n0").lstrip("\n")
    assert len(shape(text, "vtt").cues) == 200
    bucket = f"vtt-{uuid.uuid4().hex[:10]}"
    s3_client.create_bucket(Bucket=bucket)
    s3_client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3_client.put_object(Bucket=bucket, Key="film.vtt", Body=text.encode("utf-8"))
    store = S3Store(s3_client)
    _fan_out(store, bucket, "film.vtt", startup)
    written = store.read(ObjectRef("s3", bucket, "translated/film.vtt")).decode("utf-8")
    assert written == translated_text(startup.require_service(), text, "vtt")
    assert check_translation(text, written, "vtt", english=False) == []


def test_a_large_corrupt_srt_plans_nothing(startup: Startup, s3_client: Any) -> None:
    text = long_srt(240).replace("00:00:30,000 -->", "00:00:30 -->", 1)
    bucket = f"bad-{uuid.uuid4().hex[:10]}"
    s3_client.create_bucket(Bucket=bucket)
    s3_client.put_object(Bucket=bucket, Key="film.srt", Body=text.encode("utf-8"))
    config = startup.config.with_overrides(part_chars=PART_CHARS)
    with pytest.raises(InvalidRequestError, match="should be a timing line"):
        handle_object_event(S3Store(s3_client), ObjectRef("s3", bucket, "film.srt"), startup.require_service(), config)
    assert [o["Key"] for o in s3_client.list_objects_v2(Bucket=bucket)["Contents"]] == ["film.srt"]


# --- the CLI ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(SAMPLES))
def test_cli_translates_a_subtitle_file_to_stdout(
    tmp_path: Path, adapter_env: dict[str, str], startup: Startup, name: str
) -> None:
    text, fmt = SAMPLES[name]
    source = tmp_path / name
    source.write_bytes(crlf(text).encode("utf-8"))
    result = run_cli(["translate", str(source)], adapter_env)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == expected(startup, crlf(text).encode("utf-8"), name, fmt)
    assert check_translation(crlf(text), result.stdout.decode("utf-8"), fmt, english=False) == []


def test_cli_refuses_a_corrupt_subtitle_file_with_one_line(tmp_path: Path, adapter_env: dict[str, str]) -> None:
    source = tmp_path / "bad.srt"
    source.write_bytes(CORRUPT["bad timing"][0])
    result = run_cli(["translate", str(source)], adapter_env)
    assert result.returncode == 1 and result.stdout == b""
    assert b"line 6 should be a timing line" in result.stderr and b"Traceback" not in result.stderr
