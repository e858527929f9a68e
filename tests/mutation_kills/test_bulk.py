"""The fan-out of a large plain-text upload: planning, translating each part, assembling once, and the faults.

The store is an in-memory ``VersionedStore`` with the semantics S3 and Cloud Storage give the fan-out (versions,
create-only and compare-and-swap writes, listings); the translations come from the shipped bundle
(``tests/fuzz/shipped.py``) through a service that records each document it is asked to translate. The texts are
mostly Latin lines, which the service passes through unchanged, so each check runs in milliseconds; the
recorded calls say which parts were translated, with which deadline.
"""

from __future__ import annotations

import calendar
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from handler.config import RuntimeConfig
from handler.errors import DeadlineExceededError, InvalidRequestError, RequestTooLargeError
from handler.formats import SourceFile
from handler.formats.plain_text import PLAIN_TEXT
from handler.service import TranslateOptions, TranslationService
from handler.storage import bulk
from handler.storage.bulk import (
    MAX_SWAP_ATTEMPTS,
    BulkError,
    JobLayout,
    JobManifest,
    Progress,
    job_id,
    read_progress,
    translate_in_parts,
    translate_part,
)
from handler.storage.dispatch import handle_object_event
from handler.storage.files import Upload, plan_output
from handler.storage.object_store import OUTPUT_CONTENT_TYPE, ObjectRef, VersionedObject
from handler.text.parts import plan_parts
from tests.fuzz.shipped import NEEDS_SHIPPED_BUNDLE, shipped_config, shipped_model

pytestmark = NEEDS_SHIPPED_BUNDLE

PART_CHARS = 1_000
WORK = "_bulk/"


class MemoryStore:
    """Objects with versions; ``write_if`` creates (version None) or swaps (the current version) atomically."""

    def __init__(self, scheme: str = "s3") -> None:
        self.scheme = scheme
        self.objects: dict[ObjectRef, VersionedObject] = {}
        self.content_types: dict[ObjectRef, str] = {}
        self.counter = 0
        self.writes: list[ObjectRef] = []
        self.reads: list[ObjectRef] = []
        self.write_attempts: list[ObjectRef] = []
        self.before_write_if: Callable[[ObjectRef], None] | None = None

    def _store(self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str], content_type: str) -> None:
        self.counter += 1
        self.objects[ref] = VersionedObject(bytes(data), f"v{self.counter}", dict(metadata))
        self.content_types[ref] = content_type
        self.writes.append(ref)

    def put(self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str] | None = None) -> None:
        self._store(ref, data, metadata or {}, "text/plain")

    def size(self, ref: ObjectRef) -> int:
        return len(self.objects[ref].data)

    def read(self, ref: ObjectRef) -> bytes:
        self.reads.append(ref)
        return self.objects[ref].data

    def write(
        self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str], content_type: str = OUTPUT_CONTENT_TYPE
    ) -> None:
        self._store(ref, data, metadata, content_type)

    def version(self, ref: ObjectRef) -> str | None:
        found = self.objects.get(ref)
        return None if found is None else found.version

    def read_versioned(self, ref: ObjectRef) -> VersionedObject | None:
        self.reads.append(ref)  # an upload is read with its metadata (handler.storage.files.read_upload)
        return self.objects.get(ref)

    def write_if(
        self,
        ref: ObjectRef,
        data: bytes,
        metadata: Mapping[str, str],
        version: str | None,
        content_type: str = OUTPUT_CONTENT_TYPE,
    ) -> bool:
        self.write_attempts.append(ref)
        if self.before_write_if is not None:
            self.before_write_if(ref)
        if self.version(ref) != version:
            return False
        self._store(ref, data, metadata, content_type)
        return True

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        if not isinstance(bucket, str) or not isinstance(prefix, str):  # as boto3's parameter validation
            raise TypeError(f"list_keys({bucket!r}, {prefix!r})")
        return sorted(r.key for r in self.objects if r.bucket == bucket and r.key.startswith(prefix))

    def text(self, ref: ObjectRef) -> str:
        return self.objects[ref].data.decode("utf-8")

    def json(self, ref: ObjectRef) -> Any:
        return json.loads(self.objects[ref].data)


class RecordingService(TranslationService):
    """The shipped service, recording every document it translates and the deadline it was given."""

    def __init__(self) -> None:
        settings = shipped_config()
        super().__init__(shipped_model(), settings)
        self.documents: list[tuple[str, float | None]] = []

    def translate_document(
        self,
        text: str,
        options: TranslateOptions | None = None,
        *,
        deadline: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> str:
        self.documents.append((text, deadline))
        return super().translate_document(text, options, deadline=deadline, progress=progress)


def paragraph(number: int, lines: int = 4) -> str:
    return "\n".join(f"Paragraph {number} line {line}: plain words that stay as they are." for line in range(lines))


def book(paragraphs: int = 12) -> str:
    """About 2,600 characters of Latin paragraphs: three parts of at most 1,000 characters."""
    return "\n\n".join(paragraph(n) for n in range(paragraphs)) + "\n"


def config(**overrides: object) -> RuntimeConfig:
    return RuntimeConfig(**{"part_chars": PART_CHARS, "work_prefix": WORK, **overrides})  # type: ignore[arg-type]


def start_job(
    store: MemoryStore,
    source: ObjectRef,
    data: bytes,
    text: str,
    encoding: str,
    service: TranslationService,
    settings: RuntimeConfig,
) -> dict[str, Any]:
    """The fan-out's planning of a plain-text upload already read (``bulk.start_job``)."""
    read = Upload(
        source, plan_output(source, settings), PLAIN_TEXT, SourceFile(str(source), data, text, encoding, len(text))
    )
    cut = PLAIN_TEXT.cut(text, settings.part_chars, str(source))
    assert cut is not None
    return dict(bulk.start_job(store, read, cut, service, settings))


def assemble(store: MemoryStore, layout: JobLayout, manifest: dict[str, Any]) -> dict[str, Any]:
    """``bulk.assemble`` of a manifest given as its JSON values."""
    return dict(bulk.assemble(store, layout, JobManifest.from_json(json.dumps(manifest).encode(), layout.manifest)))


def upload(store: MemoryStore, text: str, key: str = "books/long book.txt", bucket: str = "in") -> ObjectRef:
    ref = ObjectRef(store.scheme, bucket, key)
    store.put(ref, text.encode("utf-8"))
    return ref


def plan(store: MemoryStore, service: RecordingService, text: str, **overrides: object) -> dict[str, Any]:
    return handle_object_event(store, upload(store, text), service, config(**overrides))


def layout_of(result: dict[str, Any], store: MemoryStore, bucket: str = "in") -> JobLayout:
    return JobLayout.of(store.scheme, bucket, WORK, result["job"])


def translate_all(store: MemoryStore, service: RecordingService, layout: JobLayout, count: int) -> list[dict[str, Any]]:
    return [handle_object_event(store, layout.part(index), service, config(), deadline=None) for index in range(count)]


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def service() -> RecordingService:
    return RecordingService()


# --- the layout and the job id ----------------------------------------------------------------------------------


def test_the_job_layout_names_every_object() -> None:
    layout = JobLayout.of("gs", "out", "_work/", "0123456789abcdef0123")
    assert layout == JobLayout("out", "gs", "_work/0123456789abcdef0123/")
    assert layout.ref("k") == ObjectRef("gs", "out", "k")
    assert layout.manifest == ObjectRef("gs", "out", "_work/0123456789abcdef0123/manifest.json")
    assert layout.part(7) == ObjectRef("gs", "out", "_work/0123456789abcdef0123/parts/00007.txt")
    assert layout.done(12345) == ObjectRef("gs", "out", "_work/0123456789abcdef0123/done/12345.en")


def test_the_job_id_depends_on_the_source_its_bytes_the_bundle_and_the_part_size() -> None:
    source = ObjectRef("s3", "in", "a.txt")
    base = job_id(source, b"data", "hash", 1000)
    assert len(base) == 20 and all(c in "0123456789abcdef" for c in base)
    assert job_id(source, b"data", "hash", 1000) == base
    others = {
        job_id(ObjectRef("s3", "in", "b.txt"), b"data", "hash", 1000),
        job_id(ObjectRef("gs", "in", "a.txt"), b"data", "hash", 1000),
        job_id(source, b"date", "hash", 1000),
        job_id(source, b"data", "hasH", 1000),
        job_id(source, b"data", "hash", 1001),
        # the fields are kept apart: "hash1" + "000" is not "hash" + "1000"
        job_id(source, b"data", "hash1", 0),
        job_id(source, b"data", "hash1", 100),
    }
    assert base not in others and len(others) == 7


# --- translate_in_parts: what the fan-out must equal ------------------------------------------------------------


def test_translate_in_parts_translates_each_part_and_keeps_the_lead_and_separators(service: RecordingService) -> None:
    text = "\n\n  " + book(12)
    lead, parts = plan_parts(text, PART_CHARS)
    assert lead == "\n\n  " and len(parts) == 3
    assert translate_in_parts(service, text, PART_CHARS) == text
    assert [document for document, _ in service.documents] == [part.text for part in parts]


def test_translate_in_parts_leaves_a_blank_part_untranslated(service: RecordingService) -> None:
    text = "a" * 10 + "\n\n" + "\u3000" * 1200 + "\n\nx"  # ideographic spaces: parts of blank text
    assert [part.text.strip() for part in plan_parts(text, PART_CHARS)[1]] == ["a" * 10, "", "", "x"]
    assert translate_in_parts(service, text, PART_CHARS) == text
    assert [document for document, _ in service.documents] == ["a" * 10, "x"]


# --- which path an upload takes -------------------------------------------------------------------------------


def test_a_large_plain_text_upload_is_planned_into_parts(store: MemoryStore, service: RecordingService) -> None:
    text = book()
    result = plan(store, service, text)
    layout = layout_of(result, store)
    lead, parts = plan_parts(text, PART_CHARS)
    assert result == {
        "source": "s3://in/books/long book.txt",
        "status": "planned",
        "job": result["job"],
        "parts": 3,
        "parts_written": 3,
        "manifest": str(layout.manifest),
        "output": "s3://in/translated/books/long book.txt",
    }
    assert result["job"] == job_id(
        ObjectRef("s3", "in", "books/long book.txt"), text.encode(), str(service.info()["bundle_hash"]), PART_CHARS
    )
    assert service.documents == []  # planning translates nothing
    manifest = store.json(layout.manifest)
    assert store.content_types[layout.manifest] == "application/json"
    assert time.strptime(manifest.pop("created"), "%Y-%m-%dT%H:%M:%SZ")
    assert manifest == {
        "format": 1,
        "job": result["job"],
        "status": "translating",
        "source": {"bucket": "in", "key": "books/long book.txt", "encoding": "UTF-8", "bytes": len(text.encode())},
        "output": {"bucket": "in", "key": "translated/books/long book.txt", "version_at_start": None},
        "model": service.info()["model"],
        "bundle_hash": service.info()["bundle_hash"],
        "part_chars": PART_CHARS,
        "lead": lead,
        "parts": [
            {
                "index": index,
                "key": layout.part(index).key,
                "sha256": __import__("hashlib").sha256(part.text.encode()).hexdigest(),
                "characters": len(part.text),
                "separator": part.separator,
            }
            for index, part in enumerate(parts)
        ],
        "done": [],
    }
    assert "\n " in store.text(layout.manifest)  # indented JSON, readable by an operator
    for index, part in enumerate(parts):
        stored = store.objects[layout.part(index)]
        assert stored.data.decode("utf-8") == part.text
        assert stored.metadata == {"bulk-job": result["job"], "bulk-part": str(index)}
    assert store.list_keys("in", layout.prefix) == sorted(
        [layout.manifest.key, *(layout.part(index).key for index in range(3))]
    )


def test_the_creation_time_is_utc_whatever_the_local_zone(
    store: MemoryStore, service: RecordingService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    try:
        layout = layout_of(plan(store, service, book()), store)
    finally:
        monkeypatch.undo()
        time.tzset()
    created = store.json(layout.manifest)["created"]
    assert abs(calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ")) - time.time()) < 120


def test_non_ascii_names_in_the_manifest_are_stored_as_utf8(store: MemoryStore, service: RecordingService) -> None:
    result = handle_object_event(store, upload(store, book(), "书/长书.txt"), service, config())
    raw = store.objects[layout_of(result, store).manifest].data
    assert "书/长书.txt".encode() in raw and b"\\u" not in raw  # ensure_ascii=False: no \\u escapes
    assert json.loads(raw)["output"]["key"] == "translated/书/长书.txt"


def test_the_output_bucket_holds_the_job_when_one_is_configured(store: MemoryStore, service: RecordingService) -> None:
    result = plan(store, service, book(), output_bucket="out")
    layout = layout_of(result, store, bucket="out")
    assert result["manifest"] == str(layout.manifest)
    assert result["output"] == "s3://out/translated/books/long book.txt"
    assert store.json(layout.manifest)["output"]["bucket"] == "out"
    assert store.list_keys("in", WORK) == []


def test_the_manifest_records_the_outputs_version_at_planning_time(
    store: MemoryStore, service: RecordingService
) -> None:
    output = ObjectRef("s3", "in", "translated/books/long book.txt")
    store.put(output, b"an older translation")
    version = store.version(output)
    layout = layout_of(plan(store, service, book()), store)
    assert store.json(layout.manifest)["output"]["version_at_start"] == version


def test_a_redelivered_upload_event_keeps_the_plan_and_writes_only_missing_parts(
    store: MemoryStore, service: RecordingService, caplog: pytest.LogCaptureFixture
) -> None:
    text = book()
    first = plan(store, service, text)
    layout = layout_of(first, store)
    planned = store.json(layout.manifest)
    del store.objects[layout.part(1)]
    with caplog.at_level(logging.INFO, logger="handler.storage.bulk"):
        again = handle_object_event(store, ObjectRef("s3", "in", "books/long book.txt"), service, config())
    assert again["status"] == "already planned"
    assert again["parts_written"] == 1 and again["parts"] == 3 and again["job"] == first["job"]
    assert store.json(layout.manifest) == planned  # the first plan, its creation time included
    assert store.text(layout.part(1)) == plan_parts(text, PART_CHARS)[1][1].text
    part_attempts = [ref for ref in store.write_attempts if "/parts/" in ref.key]
    assert part_attempts == [layout.part(0), layout.part(1), layout.part(2), layout.part(1)]  # only the missing one
    message = caplog.records[-1].getMessage()
    assert message == (
        f"s3://in/books/long book.txt: {len(text):,} characters in 3 parts (job {first['job']}, manifest "
        f"{layout.manifest}); 1 part objects written"
    )
    third = handle_object_event(store, ObjectRef("s3", "in", "books/long book.txt"), service, config())
    assert third["parts_written"] == 0


def test_a_replanned_job_whose_source_no_longer_cuts_the_same_is_refused(
    store: MemoryStore, service: RecordingService
) -> None:
    text = book()
    first = plan(store, service, text)
    layout = layout_of(first, store)
    manifest = store.json(layout.manifest)
    manifest["parts"][0]["sha256"] = "0" * 64
    store.put(layout.manifest, json.dumps(manifest).encode())
    source = ObjectRef("s3", "in", "books/long book.txt")
    with pytest.raises(BulkError) as caught:
        start_job(store, source, text.encode(), text, "UTF-8", service, config())
    assert str(caught.value) == (f"job {first['job']}: the source no longer cuts into the parts its manifest records")
    manifest = store.json(layout.manifest)
    manifest["lead"] = "  "
    store.put(layout.manifest, json.dumps(manifest).encode())
    with pytest.raises(BulkError):
        start_job(store, source, text.encode(), text, "UTF-8", service, config())


def test_an_existing_manifest_is_cut_again_with_its_own_part_size(
    store: MemoryStore, service: RecordingService
) -> None:
    text = book()
    first = plan(store, service, text)
    layout = layout_of(first, store)
    manifest = store.json(layout.manifest)
    manifest["part_chars"] = 2000
    _, parts = plan_parts(text, 2000)
    manifest["parts"] = [
        {
            "index": index,
            "key": layout.part(index).key,
            "sha256": __import__("hashlib").sha256(part.text.encode()).hexdigest(),
            "characters": len(part.text),
            "separator": part.separator,
        }
        for index, part in enumerate(parts)
    ]
    store.put(layout.manifest, json.dumps(manifest).encode())
    for index in range(3):
        del store.objects[layout.part(index)]
    result = start_job(
        store, ObjectRef("s3", "in", "books/long book.txt"), text.encode(), text, "UTF-8", service, config()
    )
    assert result["parts"] == 2 and result["parts_written"] == 2


@pytest.mark.parametrize(
    ("key", "overrides"),
    [
        ("books/long.md", {}),  # markup keeps the one-invocation path
        ("books/long.html", {}),
        ("books/long.txt", {"part_chars": 0}),  # fan-out off
        ("books/long.txt", {"part_chars": 3000}),  # not over the part size
    ],
)
def test_other_uploads_take_the_one_invocation_path(
    store: MemoryStore, service: RecordingService, key: str, overrides: dict[str, object]
) -> None:
    text = book()
    result = handle_object_event(store, upload(store, text, key), service, config(**overrides))
    assert result["status"] == "translated"
    assert result["output"] == f"s3://in/translated/{key}"
    assert store.list_keys("in", WORK) == []
    assert [document for document, _ in service.documents] == [text]


def test_a_small_upload_gets_the_invocations_deadline(store: MemoryStore, service: RecordingService) -> None:
    source = upload(store, "short text\n", "s.txt")
    with pytest.raises(DeadlineExceededError, match=r"no time left to translate s3://in/s\.txt"):
        handle_object_event(store, source, service, config(), deadline=time.monotonic() - 1)
    deadline = time.monotonic() + 600
    assert handle_object_event(store, source, service, config(), deadline=deadline)["status"] == "translated"
    assert service.documents == [("short text\n", deadline)]


def test_the_part_size_boundaries(store: MemoryStore, service: RecordingService) -> None:
    exactly = "x" * (PART_CHARS - 1) + "\n"
    assert handle_object_event(store, upload(store, exactly, "a.txt"), service, config())["status"] == "translated"
    over = "x" * 600 + "\n\n" + "y" * 399
    assert len(over) == PART_CHARS + 1
    assert handle_object_event(store, upload(store, over, "b.txt"), service, config())["status"] == "planned"


def test_a_file_of_exactly_the_part_size_in_bytes_is_read_once(store: MemoryStore, service: RecordingService) -> None:
    source = upload(store, "x" * (PART_CHARS - 1) + "\n", "a.txt")
    assert handle_object_event(store, source, service, config())["status"] == "translated"
    # by the one-invocation path only: it cannot hold more than part_chars characters
    assert [read for read in store.reads if read == source] == [source]


def test_exactly_the_part_size_in_characters_but_more_bytes_is_one_invocation(
    store: MemoryStore, service: RecordingService
) -> None:
    text = "x" * (PART_CHARS - 2) + "é\n"  # 1,000 characters, 1,001 bytes
    assert len(text) == PART_CHARS < len(text.encode())
    assert handle_object_event(store, upload(store, text, "c.txt"), service, config())["status"] == "translated"
    assert store.list_keys("in", WORK) == []


def test_more_bytes_than_the_part_size_but_not_more_characters_is_one_invocation(
    store: MemoryStore, service: RecordingService
) -> None:
    text = "é" * 900 + "\n"  # 1,801 bytes, 901 characters
    assert len(text.encode()) > PART_CHARS >= len(text)
    assert handle_object_event(store, upload(store, text, "c.txt"), service, config())["status"] == "translated"
    assert store.list_keys("in", WORK) == []


def test_the_file_size_limit_applies_to_a_large_upload(store: MemoryStore, service: RecordingService) -> None:
    text = book()
    size = len(text.encode())
    assert (
        handle_object_event(store, upload(store, text, "d.txt"), service, config(max_file_bytes=size))["status"]
        == "planned"
    )
    with pytest.raises(RequestTooLargeError, match=r"the limit is"):
        handle_object_event(store, upload(store, text, "e.txt"), service, config(max_file_bytes=size - 1))
    assert store.list_keys("in", "translated/") == []


def test_an_upload_replaced_by_a_larger_one_between_size_and_read_is_refused(
    store: MemoryStore, service: RecordingService, caplog: pytest.LogCaptureFixture
) -> None:
    text = book()
    source = upload(store, text, "f.txt")
    limit = len(text.encode()) + 10

    class Replacing(MemoryStore):
        def read(self, ref: ObjectRef) -> bytes:
            return super().read(ref) + b"y" * 20

        def read_versioned(self, ref: ObjectRef) -> VersionedObject | None:
            found = super().read_versioned(ref)
            return None if found is None else VersionedObject(found.data + b"y" * 20, found.version, found.metadata)

    replacing = Replacing()
    replacing.objects = store.objects
    with caplog.at_level(logging.ERROR, logger="handler.storage"), pytest.raises(RequestTooLargeError) as caught:
        handle_object_event(replacing, source, service, config(max_file_bytes=limit))
    size = len(text.encode()) + 20
    assert str(caught.value) == (
        f"{source} is {size:,} bytes; the limit is {limit:,} (TRANSLATE_MAX_FILE_BYTES); nothing was written"
    )
    assert caplog.records[-1].getMessage() == (
        f"could not translate {source}, nothing was written: RequestTooLargeError: {caught.value}"
    )
    assert caplog.records[-1].levelno == logging.ERROR


def test_a_refused_large_upload_is_reported_not_fanned_out(store: MemoryStore, service: RecordingService) -> None:
    result = handle_object_event(store, upload(store, book(), "translated/x.txt"), service, config())
    assert result["status"] == "refused"
    assert "under the output prefix" in result["reason"]
    assert store.list_keys("in", WORK) == []


def test_a_large_upload_that_is_not_text_is_refused_by_the_decoder(
    store: MemoryStore, service: RecordingService
) -> None:
    source = ObjectRef("s3", "in", "g.txt")
    store.put(source, b"\x00\x01" * 800)
    with pytest.raises(InvalidRequestError) as caught:
        handle_object_event(store, source, service, config())
    assert str(caught.value).startswith("s3://in/g.txt looks binary")


def test_a_gb18030_upload_records_its_encoding(store: MemoryStore, service: RecordingService) -> None:
    text = "中" + book()
    source = ObjectRef("s3", "in", "h.txt")
    store.put(source, text.encode("gb18030"))
    result = start_job(store, source, text.encode("gb18030"), text, "GB18030", service, config())
    manifest = store.json(JobLayout.of("s3", "in", WORK, result["job"]).manifest)
    assert manifest["source"]["encoding"] == "GB18030"
    assert manifest["source"]["bytes"] == len(text.encode("gb18030"))


# --- objects under the work prefix --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "_bulk/0123456789abcdef0123/manifest.json",
        "_bulk/0123456789abcdef0123/done/00000.en",
        "_bulk/0123456789abcdef0123/parts/0000.txt",
        "_bulk/0123456789abcdef0123/parts/00000.txt.bak",
        "_bulk/0123456789abcdef012/parts/00000.txt",
        "_bulk/x/0123456789abcdef0123/parts/00000.txt",
        "_bulk/0123456789ABCDEF0123/parts/00000.txt",
    ],
)
def test_fan_out_objects_other_than_parts_are_ignored(store: MemoryStore, service: RecordingService, key: str) -> None:
    source = ObjectRef("s3", "in", key)
    assert handle_object_event(store, source, service, config()) == {
        "source": f"s3://in/{key}",
        "status": "ignored",
        "reason": "a fan-out object that is not a part",
    }
    assert store.writes == [] and service.documents == []


# --- translating the parts and assembling -----------------------------------------------------------------------


def test_every_part_is_translated_once_and_the_last_assembles_the_output(
    store: MemoryStore, service: RecordingService, caplog: pytest.LogCaptureFixture
) -> None:
    text = "\n " + book()
    planned = plan(store, service, text)
    layout = layout_of(planned, store)
    lead, parts = plan_parts(text, PART_CHARS)
    deadline = time.monotonic() + 600
    with caplog.at_level(logging.INFO, logger="handler.storage.bulk"):
        results = [
            handle_object_event(store, layout.part(index), service, config(), deadline=deadline) for index in (2, 0, 1)
        ]
    job = planned["job"]
    assert results[0] == {"source": str(layout.part(2)), "status": "translated", "job": job, "done": 1, "parts": 3}
    assert results[1] == {"source": str(layout.part(0)), "status": "translated", "job": job, "done": 2, "parts": 3}
    assert results[2] == {
        "source": str(layout.part(1)),
        "status": "translated",
        "job": job,
        "done": 3,
        "parts": 3,
        "assembly": "assembled",
    }
    assert service.documents == [(parts[2].text, deadline), (parts[0].text, deadline), (parts[1].text, deadline)]
    for index in range(3):
        done = store.objects[layout.done(index)]
        assert done.data.decode() == parts[index].text
        assert done.metadata == {"bulk-job": job, "bulk-part": str(index)}
    output = ObjectRef("s3", "in", "translated/books/long book.txt")
    assert store.text(output) == translate_in_parts(service, text, PART_CHARS) == text
    assert store.objects[output].metadata == {
        "source-bucket": "in",
        "source-key": "books/long%20book.txt",
        "source-encoding": "UTF-8",
        "model": str(service.info()["model"]),
        "bundle-hash": str(service.info()["bundle_hash"]),
        "bulk-job": job,
        "bulk-parts": "3",
    }
    assert store.content_types[output] == OUTPUT_CONTENT_TYPE
    manifest = store.json(layout.manifest)
    assert manifest["done"] == [0, 1, 2] and manifest["status"] == "complete"
    assert store.content_types[layout.manifest] == "application/json"  # still, after the updates
    characters = sum(entry["characters"] for entry in manifest["parts"])
    assert read_progress(store, layout.manifest) == Progress(
        job, 3, (0, 1, 2), "complete", "s3://in/translated/books/long book.txt", characters, characters
    )
    messages = [record.getMessage() for record in caplog.records]
    assert any(
        m.startswith(f"job {job} part 3/3: {len(parts[2].text):,} characters in ") and m.endswith(" s (translated)")
        for m in messages
    ), messages
    part_lines = [m for m in messages if m.startswith(f"job {job} part ")]  # not the planning line ("... in 3 parts")
    durations = [float(m.split(" characters in ")[1].split(" s ")[0]) for m in part_lines]
    assert len(durations) == 3 and all(0 <= seconds < 60 for seconds in durations)
    assert f"job {job}: wrote {output} ({len(text.encode()):,} bytes, 3 parts)" in messages


def test_progress_while_translating(store: MemoryStore, service: RecordingService) -> None:
    planned = plan(store, service, book(), output_bucket="out")
    layout = layout_of(planned, store, bucket="out")
    translate_part(store, layout, 1, service)
    progress = read_progress(store, layout.manifest)
    parts = store.json(layout.manifest)["parts"]
    expected = Progress(
        planned["job"],
        3,
        (1,),
        "translating",
        "s3://out/translated/books/long book.txt",
        parts[1]["characters"],
        sum(entry["characters"] for entry in parts),
    )
    assert progress == expected and 0 < expected.characters_done < expected.characters
    assert progress.complete is False
    assert Progress("j", 1, (0,), "complete", "x").complete is True
    assert Progress("j", 1, (0,), "superseded", "x").complete is False


def test_a_duplicate_part_event_translates_nothing(store: MemoryStore, service: RecordingService) -> None:
    layout = layout_of(plan(store, service, book()), store)
    translate_part(store, layout, 0, service)
    writes = len(store.writes)
    again = translate_part(store, layout, 0, service)
    assert again["status"] == "duplicate" and again["done"] == 1
    assert len(service.documents) == 1 and len(store.writes) == writes


def test_a_result_written_but_not_recorded_is_recorded_without_translating_again(
    store: MemoryStore, service: RecordingService
) -> None:
    layout = layout_of(plan(store, service, book()), store)
    store.put(layout.done(1), b"translated before the manifest update was lost")
    result = translate_part(store, layout, 1, service)
    assert result["status"] == "duplicate" and result["done"] == 1
    assert service.documents == []
    assert store.json(layout.manifest)["done"] == [1]


def test_a_result_written_concurrently_makes_this_one_a_duplicate(
    store: MemoryStore, service: RecordingService
) -> None:
    layout = layout_of(plan(store, service, book()), store)

    def racing(ref: ObjectRef) -> None:
        if ref == layout.done(0) and store.version(ref) is None:
            store.put(ref, b"the other invocation's")

    store.before_write_if = racing
    result = translate_part(store, layout, 0, service)
    assert result["status"] == "duplicate"
    assert store.text(layout.done(0)) == "the other invocation's"
    assert store.json(layout.manifest)["done"] == [0]


def test_a_completed_job_does_not_assemble_again(store: MemoryStore, service: RecordingService) -> None:
    layout = layout_of(plan(store, service, book()), store)
    translate_all(store, service, layout, 3)
    output = ObjectRef("s3", "in", "translated/books/long book.txt")
    writes = store.writes.count(output)
    again = translate_part(store, layout, 2, service)
    assert "assembly" not in again and again["status"] == "duplicate" and again["done"] == 3
    assert store.writes.count(output) == writes == 1


def test_the_part_deadline_reaches_the_translation(store: MemoryStore, service: RecordingService) -> None:
    text = "今天天气很好。\n\n" + book()
    layout = layout_of(plan(store, service, text), store)
    with pytest.raises(DeadlineExceededError):
        translate_part(store, layout, 0, service, deadline=time.monotonic() - 1)
    assert store.version(layout.done(0)) is None
    assert store.json(layout.manifest)["done"] == []


def test_a_part_index_outside_the_manifest_is_a_bulk_error(store: MemoryStore, service: RecordingService) -> None:
    layout = layout_of(plan(store, service, book()), store)
    with pytest.raises(BulkError) as caught:
        translate_part(store, layout, 3, service)
    assert str(caught.value) == f"{layout.part(3)}: the manifest has 3 parts"
    with pytest.raises(BulkError):
        translate_part(store, layout, -1, service)
    assert translate_part(store, layout, 2, service)["status"] == "translated"


def test_a_missing_part_object_is_a_bulk_error(store: MemoryStore, service: RecordingService) -> None:
    layout = layout_of(plan(store, service, book()), store)
    del store.objects[layout.part(1)]
    with pytest.raises(BulkError) as caught:
        translate_part(store, layout, 1, service)
    assert str(caught.value) == f"{layout.part(1)} does not exist, though its event was delivered"


def test_a_part_changed_after_planning_is_a_bulk_error(store: MemoryStore, service: RecordingService) -> None:
    layout = layout_of(plan(store, service, book()), store)
    store.put(layout.part(0), b"something else")
    with pytest.raises(BulkError) as caught:
        translate_part(store, layout, 0, service)
    assert str(caught.value) == f"{layout.part(0)} does not match the sha256 its manifest records"
    assert service.documents == []


def test_a_part_event_without_a_manifest_or_with_another_format_is_a_bulk_error(
    store: MemoryStore, service: RecordingService
) -> None:
    layout = JobLayout.of("s3", "in", WORK, "0123456789abcdef0123")
    with pytest.raises(BulkError) as caught:
        handle_object_event(store, layout.part(0), service, config())
    assert (
        str(caught.value) == f"the manifest {layout.manifest} does not exist; the part's event will fail until it does"
    )
    store.put(layout.manifest, json.dumps({"format": 2}).encode())
    with pytest.raises(BulkError) as caught:
        translate_part(store, layout, 0, service)
    assert str(caught.value) == f"{layout.manifest} has manifest format 2; this runtime reads 1"
    store.put(layout.manifest, json.dumps({"job": "x"}).encode())
    with pytest.raises(BulkError, match=r"has manifest format None; this runtime reads 1"):
        read_progress(store, layout.manifest)


def test_the_manifest_update_retries_a_concurrent_change(store: MemoryStore, service: RecordingService) -> None:
    layout = layout_of(plan(store, service, book()), store)
    translate_part(store, layout, 0, service)
    bumps = {"left": 3}

    def concurrent(ref: ObjectRef) -> None:  # another invocation records part 2 just before each swap
        if ref == layout.manifest and bumps["left"]:
            bumps["left"] -= 1
            store.put(layout.done(2), store.objects[layout.part(2)].data)
            manifest = store.json(ref)
            manifest["done"] = sorted({*manifest["done"], 2})
            store.put(ref, json.dumps(manifest).encode())

    store.before_write_if = concurrent
    result = translate_part(store, layout, 1, service)
    assert bumps["left"] == 0
    assert store.json(layout.manifest)["done"] == [0, 1, 2]
    assert result["done"] == 3 and result["assembly"] == "assembled"


def test_a_manifest_that_keeps_changing_is_a_bulk_error_after_the_attempts(
    store: MemoryStore, service: RecordingService
) -> None:
    layout = layout_of(plan(store, service, book()), store)
    attempts = {"count": 0}

    def always(ref: ObjectRef) -> None:
        if ref == layout.manifest:
            attempts["count"] += 1
            store.put(ref, store.objects[ref].data)  # a new version each time

    store.before_write_if = always
    with pytest.raises(BulkError) as caught:
        translate_part(store, layout, 0, service)
    assert str(caught.value) == f"{layout.manifest} changed 50 times while this invocation tried to update it"
    assert attempts["count"] == MAX_SWAP_ATTEMPTS == 50


def test_an_output_changed_since_planning_is_not_overwritten(
    store: MemoryStore, service: RecordingService, caplog: pytest.LogCaptureFixture
) -> None:
    planned = plan(store, service, book())
    layout = layout_of(planned, store)
    output = ObjectRef("s3", "in", "translated/books/long book.txt")
    store.put(output, b"a newer upload's translation")
    with caplog.at_level(logging.WARNING, logger="handler.storage.bulk"):
        results = translate_all(store, service, layout, 3)
    assert results[-1]["assembly"] == "superseded"
    assert store.text(output) == "a newer upload's translation"
    assert store.json(layout.manifest)["status"] == "superseded"
    assert read_progress(store, layout.manifest).complete is False
    assert caplog.records[-1].levelno == logging.WARNING
    assert caplog.records[-1].getMessage() == (
        f"job {planned['job']}: {output} changed since the job was planned (another upload of the same key?); "
        "not overwritten"
    )


def test_an_output_another_invocation_assembled_is_already_assembled(
    store: MemoryStore, service: RecordingService
) -> None:
    planned = plan(store, service, book())
    layout = layout_of(planned, store)
    translate_all(store, service, layout, 2)
    output = ObjectRef("s3", "in", "translated/books/long book.txt")
    store.put(output, b"assembled by the other one", {"bulk-job": planned["job"]})
    result = translate_part(store, layout, 2, service)
    assert result["assembly"] == "already assembled"
    assert store.text(output) == "assembled by the other one"
    assert store.json(layout.manifest)["status"] == "complete"


def test_assemble_names_a_missing_part_result(store: MemoryStore, service: RecordingService) -> None:
    layout = layout_of(plan(store, service, book()), store)
    translate_all(store, service, layout, 2)
    manifest = store.json(layout.manifest)
    with pytest.raises(BulkError) as caught:
        assemble(store, layout, manifest)
    assert str(caught.value) == f"{layout.done(2)} is missing though the manifest lists it as done"


def test_assembly_on_another_scheme_and_with_odd_names(service: RecordingService) -> None:
    store = MemoryStore("gs")
    text = book()
    source = upload(store, text, "dir/a b%/c.txt", bucket="in")
    result = handle_object_event(store, source, service, config())
    layout = layout_of(result, store)
    assert layout.manifest.scheme == "gs"
    results = translate_all(store, service, layout, result["parts"])
    assert results[-1]["assembly"] == "assembled"
    output = ObjectRef("gs", "in", "translated/dir/a b%/c.txt")
    assert store.text(output) == text
    assert store.objects[output].metadata["source-key"] == "dir/a%20b%25/c.txt"
    manifest = store.json(layout.manifest)
    manifest["model"] = "a model/with slash"
    manifest["bundle_hash"] = None
    store.put(output, b"x", {})
    done = assemble(
        store, layout, {**manifest, "output": {**manifest["output"], "version_at_start": store.version(output)}}
    )
    assert done == {"status": "assembled", "output": str(output), "job": result["job"]}
    assert store.objects[output].metadata["model"] == "a%20model%2Fwith%20slash"
    assert store.objects[output].metadata["bundle-hash"] == ""
    store.put(output, b"y", {})
    unnamed = {**manifest, "model": None, "output": {**manifest["output"], "version_at_start": store.version(output)}}
    assert assemble(store, layout, unnamed)["status"] == "assembled"
    assert store.objects[output].metadata["model"] == ""


def test_a_late_second_assembly_leaves_the_completed_manifest_alone(
    store: MemoryStore, service: RecordingService
) -> None:
    layout = layout_of(plan(store, service, book()), store)
    translate_all(store, service, layout, 3)
    stale = store.json(layout.manifest)
    stale["status"] = "translating"  # what the other invocation read before this one completed the job
    version = store.version(layout.manifest)
    assert assemble(store, layout, stale)["status"] == "already assembled"
    assert store.version(layout.manifest) == version  # not written again
    assert store.json(layout.manifest)["status"] == "complete"


def test_a_job_planned_with_no_parts_is_assembled_at_once(store: MemoryStore, service: RecordingService) -> None:
    source = upload(store, "  \n", "blank.txt")
    result = start_job(store, source, b"  \n", "  \n", "UTF-8", service, config())
    assert result == {"status": "assembled", "output": "s3://in/translated/blank.txt", "job": result["job"]}
    assert store.text(ObjectRef("s3", "in", "translated/blank.txt")) == "  \n"
    assert store.json(JobLayout.of("s3", "in", WORK, result["job"]).manifest)["status"] == "complete"
