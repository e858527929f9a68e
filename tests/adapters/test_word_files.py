"""Word documents (``.docx``) through every file path: S3 events (moto) and Cloud Storage events (the emulator), the
fan-out of a large document across parts (both stores: cut only between paragraphs, rebuilt from the source), and
the CLI. Each output must open as a Word document and keep every structural element of its source
(``tests/word_samples.check_translation``: parts without text byte for byte, the image included; paragraphs,
tables, cells, headers, footers, notes, fields, bookmarks in number and order); a corrupt file is refused with a
clear error and nothing is written. These run on the tests' tiny random model, whose output is not English; that
no Chinese is left in text nodes is checked on the shipped model (``tests/runtime_text/test_word_documents.py``)."""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from handler.coldstart import Startup
from handler.errors import InvalidRequestError
from handler.formats import translate_file
from handler.formats.word import read_word_file
from handler.formats.word_format import DOCX_CONTENT_TYPE, WORD_ENCODING
from handler.storage.bulk import BulkError
from handler.storage.dispatch import handle_object_event
from handler.storage.object_store import GcsStore, ObjectRef, S3Store
from tests.adapters.fan_out_platform import WORK_PREFIX
from tests.adapters.test_cli import run_cli
from tests.adapters.test_file_events import GcsBackend, S3Backend
from tests.word_samples import BOLD_PARAGRAPH, check_translation, long_docx, paragraph_runs, sample_docx

pytestmark = pytest.mark.slow

PART_CHARS = 1_000
CORRUPT = {
    "text": "这不是一个Word文档。\n".encode(),
    "truncated": sample_docx()[:20_000],
    "other zip": b"PK\x05\x06" + b"\x00" * 18,  # an empty zip archive
}


@pytest.fixture(params=["s3", "gs"])
def backend(request: pytest.FixtureRequest, entry_modules: dict[str, Any]) -> Any:
    if request.param == "s3":
        return S3Backend(request.getfixturevalue("s3_client"), entry_modules)
    return GcsBackend(request.getfixturevalue("gcs_client"), entry_modules)


def expected(startup: Startup, data: bytes, name: str) -> bytes:
    return translate_file(data, name, startup.require_service()).data


def test_a_docx_upload_is_translated_with_its_structure(backend: Any, startup: Startup) -> None:
    # GIVEN a .docx upload with a bold word, a hyperlink, a table, headers, footers, notes, a comment, an image
    data = sample_docx()
    bucket = backend.bucket()
    backend.put(bucket, "reports/年度 report.docx", data)
    # WHEN its event arrives
    result = backend.deliver(backend.adapter(startup), bucket, "reports/年度 report.docx")
    # THEN the translation is a Word document with every structural element of the source
    assert result["status"] == "translated" and result["encoding"] == WORD_ENCODING
    stored = backend.get(bucket, "translated/reports/年度 report.docx")
    check_translation(data, stored.data, english=False)
    assert stored.data == expected(startup, data, "report.docx")
    assert stored.content_type == DOCX_CONTENT_TYPE
    assert stored.metadata["source-encoding"] == WORD_ENCODING
    assert any(bold and text for text, bold, _ in paragraph_runs(stored.data, BOLD_PARAGRAPH))
    assert backend.keys(bucket) == ["reports/年度 report.docx", "translated/reports/年度 report.docx"]


@pytest.mark.parametrize("case", list(CORRUPT))
def test_a_corrupt_docx_is_refused_and_nothing_written(backend: Any, startup: Startup, case: str) -> None:
    bucket = backend.bucket()
    backend.put(bucket, "bad.docx", CORRUPT[case])
    with pytest.raises(InvalidRequestError, match="not a Word .docx document: .*bad.docx"):
        backend.deliver(backend.adapter(startup), bucket, "bad.docx")
    assert backend.keys(bucket) == ["bad.docx"]


# --- the fan-out: a large document cut between paragraphs ---------------------------------------------------------
def _store(scheme: str, request: pytest.FixtureRequest, data: bytes) -> tuple[Any, str]:
    bucket = f"docs-{uuid.uuid4().hex[:10]}"
    if scheme == "s3":
        client = request.getfixturevalue("s3_client")
        client.create_bucket(Bucket=bucket)
        client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        client.put_object(Bucket=bucket, Key="long.docx", Body=data)
        return S3Store(client), bucket
    client = request.getfixturevalue("gcs_client")
    client.create_bucket(bucket)
    client.bucket(bucket).blob("long.docx").upload_from_string(data, content_type=DOCX_CONTENT_TYPE)
    return GcsStore(client), bucket


@pytest.mark.parametrize("scheme", ["s3", "gs"])
def test_a_large_docx_fans_out_in_parts_between_paragraphs(
    scheme: str, startup: Startup, request: pytest.FixtureRequest
) -> None:
    data = long_docx(120)  # ~5,000 characters to translate: at least 4 parts of at most 1,000
    document = read_word_file(data)
    assert document.characters > 4 * PART_CHARS
    store, bucket = _store(scheme, request, data)
    config = startup.config.with_overrides(part_chars=PART_CHARS)
    service = startup.require_service()
    plan = handle_object_event(store, ObjectRef(scheme, bucket, "long.docx"), service, config)
    assert plan["status"] == "planned" and plan["parts"] >= 4, plan
    parts = sorted(name for name in store.list_keys(bucket, WORK_PREFIX) if "/parts/" in name)
    lines = set(document.lines)
    for key in parts:  # every part is whole paragraphs: no boundary inside one
        part = store.read(ObjectRef(scheme, bucket, key)).decode("utf-8")
        assert set(part.split("\n")) <= lines
    random.Random(7).shuffle(parts)
    statuses = [handle_object_event(store, ObjectRef(scheme, bucket, p), service, config) for p in parts]
    assert [s.get("assembly") for s in statuses].count("assembled") == 1
    written = store.read(ObjectRef(scheme, bucket, "translated/long.docx"))
    # the parts' translation is the whole document's, in one invocation
    assert written == translate_file(data, "long.docx", service).data
    check_translation(data, written, english=False)


def test_a_docx_replaced_while_its_parts_translate_is_not_assembled(startup: Startup, s3_client: Any) -> None:
    data = long_docx(60)
    bucket = f"docs-{uuid.uuid4().hex[:10]}"
    s3_client.create_bucket(Bucket=bucket)
    s3_client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3_client.put_object(Bucket=bucket, Key="long.docx", Body=data)
    store = S3Store(s3_client)
    config = startup.config.with_overrides(part_chars=PART_CHARS)
    service = startup.require_service()
    plan = handle_object_event(store, ObjectRef("s3", bucket, "long.docx"), service, config)
    assert plan["status"] == "planned"
    s3_client.put_object(Bucket=bucket, Key="long.docx", Body=long_docx(61))  # a new upload of the same key
    parts = sorted(name for name in store.list_keys(bucket, WORK_PREFIX) if "/parts/" in name)
    for key in parts[:-1]:
        handle_object_event(store, ObjectRef("s3", bucket, key), service, config)
    with pytest.raises(BulkError, match="changed since the job was planned"):
        handle_object_event(store, ObjectRef("s3", bucket, parts[-1]), service, config)
    assert store.version(ObjectRef("s3", bucket, "translated/long.docx")) is None


def test_a_large_corrupt_docx_plans_nothing(startup: Startup, s3_client: Any) -> None:
    bucket = f"bad-{uuid.uuid4().hex[:10]}"
    s3_client.create_bucket(Bucket=bucket)
    s3_client.put_object(Bucket=bucket, Key="long.docx", Body=long_docx(120)[:-200])
    config = startup.config.with_overrides(part_chars=PART_CHARS)
    with pytest.raises(InvalidRequestError, match="not a Word .docx document"):
        handle_object_event(S3Store(s3_client), ObjectRef("s3", bucket, "long.docx"), startup.require_service(), config)
    assert [o["Key"] for o in s3_client.list_objects_v2(Bucket=bucket)["Contents"]] == ["long.docx"]


# --- the CLI ---------------------------------------------------------------------------------------------------------
def test_cli_translates_a_docx_to_stdout_and_to_a_file(
    tmp_path: Path, adapter_env: dict[str, str], startup: Startup
) -> None:
    data = sample_docx()
    source = tmp_path / "report.docx"
    source.write_bytes(data)
    result = run_cli(["translate", str(source)], adapter_env)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == expected(startup, data, "report.docx")
    check_translation(data, result.stdout, english=False)
    output = tmp_path / "report.en.docx"
    result = run_cli(["translate", str(source), "-o", str(output)], adapter_env)
    assert result.returncode == 0 and result.stdout == b"", result.stderr.decode()
    assert output.read_bytes() == expected(startup, data, "report.docx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.docx", "report.en.docx"]  # no partial file left
    piped = run_cli(["translate", "-", "--format", "docx"], adapter_env, stdin=data)
    assert piped.returncode == 0 and piped.stdout == output.read_bytes()


def test_cli_refuses_a_corrupt_docx_with_one_line_and_writes_nothing(
    tmp_path: Path, adapter_env: dict[str, str]
) -> None:
    source = tmp_path / "bad.docx"
    source.write_bytes(CORRUPT["truncated"])
    output = tmp_path / "bad.en.docx"
    result = run_cli(["translate", str(source), "-o", str(output)], adapter_env)
    assert result.returncode == 1 and result.stdout == b""
    assert b"not a Word .docx document" in result.stderr and b"Traceback" not in result.stderr
    assert result.stderr.count(b"\n") == 1 and not output.exists()


def test_cli_refuses_to_write_a_docx_to_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    from handler.adapters import cli

    class Terminal(io.TextIOWrapper):
        def isatty(self) -> bool:
            return True

    source = tmp_path / "report.docx"
    source.write_bytes(sample_docx())
    terminal = Terminal(io.BytesIO())
    monkeypatch.setattr(sys, "stdout", terminal)
    assert cli.main(["translate", str(source)]) == 1
    assert terminal.buffer.getvalue() == b""  # type: ignore[attr-defined]
    assert "refusing to write a binary docx file to the terminal" in capsys.readouterr().err
