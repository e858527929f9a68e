"""Every format with a samples module (``tests/formats/<format>_samples.py``: PowerPoint, Excel, XLIFF, gettext,
OpenDocument, EPUB...) through every file path but the document APIs (``test_documents.py`` drives those with the
deepl client and LibreTranslate's form): S3 events (moto) and Cloud Storage events (the emulator), the fan-out of a
large file across parts (both stores: cut only where the format allows, assembled from the source), and the CLI.

Each output must open with the library a user opens the file with and keep its source's structure (the samples
module's ``inspect``), and equal the function's own whole-file translation (``translate_file``) byte for byte:
these run on the tests' tiny random model, whose output is not English, so that no Chinese is left is checked on
the shipped model in each format's own tests (``tests/formats/test_<format>.py``). A damaged file is refused with
a clear error and nothing is written.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from handler.coldstart import Startup
from handler.errors import InvalidRequestError
from handler.formats import FORMATS_BY_NAME, translate_file
from handler.formats.base import UnitsFormat
from handler.storage.dispatch import handle_object_event
from handler.storage.object_store import GcsStore, ObjectRef, S3Store
from tests.adapters.fan_out_platform import WORK_PREFIX
from tests.adapters.test_cli import run_cli
from tests.adapters.test_file_events import GcsBackend, S3Backend
from tests.fixture_corpus import fixture_pairs
from tests.formats.samples import FormatSamples, sample_modules

pytestmark = pytest.mark.slow

SAMPLES = sample_modules()
PART_CHARS = 1_000


@pytest.fixture(params=sorted(SAMPLES))
def samples(request: pytest.FixtureRequest) -> FormatSamples:
    return SAMPLES[request.param]


@pytest.fixture(params=["s3", "gs"])
def backend(request: pytest.FixtureRequest, entry_modules: dict[str, Any]) -> Any:
    if request.param == "s3":
        return S3Backend(request.getfixturevalue("s3_client"), entry_modules)
    return GcsBackend(request.getfixturevalue("gcs_client"), entry_modules)


def whole(startup: Startup, data: bytes, name: str) -> bytes:
    return translate_file(data, name, startup.require_service()).data


def assert_same_structure(samples: FormatSamples, source: bytes, translated: bytes) -> None:
    before, after = samples.inspect(source), samples.inspect(translated)
    assert after.structure == before.structure
    assert len(after.texts) == len(before.texts)


def long_file(samples: FormatSamples, characters: int) -> bytes:
    sentences = [pair.zh for pair in fixture_pairs()]
    chosen: list[str] = []
    while sum(len(s) for s in chosen) < characters:
        chosen.append(sentences[len(chosen) % len(sentences)])
    return samples.file_of(chosen)


def test_an_upload_is_translated_with_its_structure(backend: Any, samples: FormatSamples, startup: Startup) -> None:
    # GIVEN an upload of the format's sample (its awkward cases) under a key with spaces and Chinese
    data = samples.sample_file()
    key = f"files/年度 report{samples.SUFFIX}"
    bucket = backend.bucket()
    backend.put(bucket, key, data)
    # WHEN its event arrives
    result = backend.deliver(backend.adapter(startup), bucket, key)
    # THEN the translation is written in the same format, opens with the user's library and keeps the structure
    fmt = FORMATS_BY_NAME[samples.FORMAT]
    assert result["status"] == "translated", result
    stored = backend.get(bucket, f"translated/{key}")
    assert stored.data == whole(startup, data, key)
    assert_same_structure(samples, data, stored.data)
    assert stored.content_type.split(";")[0] == fmt.content_type.split(";")[0]
    assert backend.keys(bucket) == [key, f"translated/{key}"]


def test_a_damaged_upload_is_refused_and_nothing_written(
    backend: Any, samples: FormatSamples, startup: Startup
) -> None:
    bucket = backend.bucket()
    key = f"bad{samples.SUFFIX}"
    backend.put(bucket, key, damaged(samples))
    with pytest.raises(InvalidRequestError, match="bad"):
        backend.deliver(backend.adapter(startup), bucket, key)
    assert backend.keys(bucket) == [key]


def damaged(samples: FormatSamples) -> bytes:
    """The sample damaged: the module's own ``damaged_file()`` where cutting it in half could leave a valid file
    (a catalogue cut between entries), else its first half."""
    made = getattr(samples, "damaged_file", None)
    if made is not None:
        return bytes(made())
    data = samples.sample_file()
    return data[: len(data) // 2]


def _store(scheme: str, request: pytest.FixtureRequest, key: str, data: bytes) -> tuple[Any, str]:
    bucket = f"files-{uuid.uuid4().hex[:10]}"
    if scheme == "s3":
        client = request.getfixturevalue("s3_client")
        client.create_bucket(Bucket=bucket)
        client.put_object(Bucket=bucket, Key=key, Body=data)
        return S3Store(client), bucket
    client = request.getfixturevalue("gcs_client")
    client.create_bucket(bucket)
    client.bucket(bucket).blob(key).upload_from_string(data)
    return GcsStore(client), bucket


@pytest.mark.parametrize("scheme", ["s3", "gs"])
def test_a_large_file_fans_out_in_parts_cut_where_the_format_allows(
    scheme: str, samples: FormatSamples, startup: Startup, request: pytest.FixtureRequest
) -> None:
    # GIVEN a file of ~5,000 characters to translate: at least 4 parts of at most 1,000
    key = f"long{samples.SUFFIX}"
    data = long_file(samples, 5 * PART_CHARS)
    fmt = FORMATS_BY_NAME[samples.FORMAT]
    source = fmt.read(data, key)
    assert source.characters > 4 * PART_CHARS
    store, bucket = _store(scheme, request, key, data)
    config = startup.config.with_overrides(part_chars=PART_CHARS)
    service = startup.require_service()
    # WHEN its upload event plans the parts
    plan = handle_object_event(store, ObjectRef(scheme, bucket, key), service, config)
    assert plan["status"] == "planned" and plan["parts"] >= 4, plan
    parts = sorted(name for name in store.list_keys(bucket, WORK_PREFIX) if "/parts/" in name)
    if isinstance(fmt, UnitsFormat):  # every part is whole units (one a line): no boundary inside one
        lines = set(source.text.split("\n"))
        for part in parts:
            assert set(store.read(ObjectRef(scheme, bucket, part)).decode("utf-8").split("\n")) <= lines
    # AND the parts' events arrive in any order
    random.Random(7).shuffle(parts)
    statuses = [handle_object_event(store, ObjectRef(scheme, bucket, part), service, config) for part in parts]
    assert [status.get("assembly") for status in statuses].count("assembled") == 1
    # THEN the assembled file is the whole file's translation in one invocation, byte for byte
    written = store.read(ObjectRef(scheme, bucket, f"translated/{key}"))
    assert written == translate_file(data, key, service).data
    assert_same_structure(samples, data, written)


def test_cli_translates_to_a_file_and_from_stdin(
    samples: FormatSamples, tmp_path: Path, adapter_env: dict[str, str], startup: Startup
) -> None:
    data = samples.sample_file()
    source = tmp_path / f"report{samples.SUFFIX}"
    source.write_bytes(data)
    output = tmp_path / f"report.en{samples.SUFFIX}"
    result = run_cli(["translate", str(source), "-o", str(output)], adapter_env)
    assert result.returncode == 0 and result.stdout == b"", result.stderr.decode()
    assert output.read_bytes() == whole(startup, data, source.name)
    assert_same_structure(samples, data, output.read_bytes())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([source.name, output.name])  # no partial file
    piped = run_cli(["translate", "-", "--format", samples.FORMAT], adapter_env, stdin=data)
    assert piped.returncode == 0 and piped.stdout == output.read_bytes(), piped.stderr.decode()


def test_cli_refuses_a_damaged_file_with_one_line_and_writes_nothing(
    samples: FormatSamples, tmp_path: Path, adapter_env: dict[str, str]
) -> None:
    source = tmp_path / f"bad{samples.SUFFIX}"
    source.write_bytes(damaged(samples))
    output = tmp_path / f"bad.en{samples.SUFFIX}"
    result = run_cli(["translate", str(source), "-o", str(output)], adapter_env)
    assert result.returncode == 1 and result.stdout == b"", result.stderr.decode()
    assert b"bad" in result.stderr and b"Traceback" not in result.stderr
    assert result.stderr.count(b"\n") == 1 and not output.exists()
